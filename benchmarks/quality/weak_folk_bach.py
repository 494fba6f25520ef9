"""Weak supervision on synthesized performances with exact timing: Finnish folk tunes and Bach chorales.

usage: python -m benchmarks.quality.weak_folk_bach [--quick] [--data DIR] [--seed 0]

The thesis-style experiment (ch.6): every score (50 Finnish folk tunes of the MIDI Toolbox sample,
``scores/folk/finnish_miditoolbox/midi``; the 10 Bach10 chorales, ``alignment/bach_chorales/midi_score``)
is performed with a seeded tempo warp -- rubato (a smooth random tempo curve, about +-25 %), fermatas
(a few long notes held 2-3 times longer), a final ritardando and 10 ms onset jitter -- written as MIDI
and rendered with fluidsynth + FluidR3_GM at 22.05 kHz (cached under ``benchmarks/results/renders_weak/``).
The warp gives every event's exact onset; the renderer's lag is measured and subtracted.

Methods, same files, same run:

* ``score-only timing`` -- the score's own onsets stretched to the sounding part of the recording;
* ``plain chroma DTW`` -- librosa CQT chroma vs the score's piano roll (as in quality_alignment.py);
* ``ours (a) untrained`` -- :class:`marginalia.align.ScoreAligner` as shipped;
* ``ours (a) quadratic prior`` -- the same with the symmetric quadratic duration prior (thesis Alg. 9);
* ``ours (b) weak`` -- scorers learned from the other half of the tunes (audio + score, no timing),
  two folds.

Prints the mean onset delay (the thesis' measure), median, share within 50 ms, worst, per corpus and
overall; writes ``benchmarks/results/weak_folk_bach.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path

import numpy as np

from benchmarks._common import ROOT  # noqa: E402
from benchmarks.quality.quality_alignment_tools.render import SR, ensure_fluidsynth, measure_lag, render  # noqa: E402

RESULTS = ROOT / "benchmarks" / "results"
RENDERS = RESULTS / "renders_weak"


def log(msg):
    print(msg, flush=True)


def warp(score, rng):
    """Performed onset (s) of every event: rubato, fermatas, final ritardando, jitter; shape (E,)."""
    on = np.asarray(score.event_onsets_s, dtype=np.float64)
    E = on.shape[0]
    ioi = np.diff(np.append(on, max(score.duration_s, on[-1] + 0.5)))
    ioi = np.maximum(ioi, 0.05)
    # smooth log-tempo: AR(1) noise, about +-25 %
    r = np.zeros(E)
    for e in range(1, E):
        r[e] = 0.9 * r[e - 1] + 0.1 * rng.standard_normal()
    r *= 0.22 / max(float(np.std(r)), 1e-9)
    stretch = np.exp(r)
    # fermatas on a few long notes (never the last: that one gets the ritardando)
    long_notes = np.flatnonzero(ioi[:-1] >= np.median(ioi))
    n_ferm = max(1, E // 16)
    for e in rng.choice(long_notes, size=min(n_ferm, long_notes.shape[0]), replace=False):
        stretch[e] *= rng.uniform(2.0, 3.0)
    k = min(4, E)
    stretch[E - k:] *= 1.0 + 0.2 * np.arange(1, k + 1)
    t = 0.5 + np.concatenate([[0.0], np.cumsum(ioi * stretch)[:-1]])
    t += np.clip(rng.normal(0.0, 0.01, E), -0.02, 0.02)
    for e in range(1, E):  # jitter may not reorder events
        t[e] = max(t[e], t[e - 1] + 0.03)
    return t


def score_only_times(score, feats):
    """The score's onsets stretched (affinely) onto the sounding part of the recording."""
    loud = np.flatnonzero(feats.quiet < 0.5)
    a = float(feats.frame_boundary_s(loud[0])) if loud.size else 0.0
    b = float(feats.frame_boundary_s(loud[-1] + 1)) if loud.size else feats.duration_s
    on = np.asarray(score.event_onsets_s, dtype=np.float64)
    span = max(float(score.duration_s) - on[0], 1e-9)
    return a + (on - on[0]) * (b - a) / span


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="10 folk tunes and 2 chorales, one training round")
    ap.add_argument("--data", default=str(ROOT.parent / "shared" / "data"), help="the shared data folder")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args(argv)
    from benchmarks.quality.quality_alignment import librosa_dtw
    from marginalia.align import ScoreAligner
    from marginalia.io.audio import load_audio
    from marginalia.io.midi import read_midi, write_midi

    t_start = time.time()
    data = Path(args.data)
    if not ensure_fluidsynth(log):
        raise SystemExit("fluidsynth + FluidR3_GM are needed to render the performances")
    RENDERS.mkdir(parents=True, exist_ok=True)
    lag = measure_lag(RESULTS / "renders", SR)
    log(f"renderer lag: {1000 * lag:.2f} ms (measured)")
    folk = sorted((data / "scores" / "folk" / "finnish_miditoolbox" / "midi").glob("*.mid"))
    bach = sorted((data / "alignment" / "bach_chorales" / "midi_score").glob("*.mid"))
    if args.quick:
        folk, bach = folk[:10], bach[:2]
    rng = np.random.default_rng(args.seed)
    items = []
    for corpus, paths in (("folk", folk), ("bach", bach)):
        for path in paths:
            score = read_midi(path)
            truth = warp(score, rng)
            mid = RENDERS / f"{corpus}_{path.stem}_s{args.seed}.mid"
            wav = mid.with_suffix(".wav")
            write_midi(mid, score, times_s=truth)
            if wav.exists() and wav.stat().st_mtime < mid.stat().st_mtime:
                wav.unlink()
            render(mid, wav, SR)
            y, sr = load_audio(wav, sr=SR)
            items.append({"corpus": corpus, "name": path.stem, "score": score, "truth": truth + lag,
                          "y": np.asarray(y, dtype=np.float32), "sr": sr, "audio_s": len(y) / sr})
    log(f"{len(items)} performances ({sum(i['corpus'] == 'folk' for i in items)} folk, "
        f"{sum(i['corpus'] == 'bach' for i in items)} Bach), {sum(i['audio_s'] for i in items) / 60:.1f} min of "
        f"audio ({time.time() - t_start:.0f} s to warp/render/load)")

    results = {}  # method -> list of (corpus, abs errors, audio_s, cpu_s)

    def record(method, it, times, cpu):
        results.setdefault(method, []).append((it["corpus"], np.abs(np.asarray(times) - it["truth"]),
                                               it["audio_s"], cpu))

    base = ScoreAligner()
    quad = ScoreAligner(prior_shape="quadratic", prior_weight=10.0)  # the previous shipped setting
    for it in items:
        c0 = time.process_time()
        it["feats"] = base.features(it["y"], it["sr"])
        it["feat_cpu"] = time.process_time() - c0
        record("score-only timing", it, score_only_times(it["score"], it["feats"]), it["feat_cpu"])
        for name, al in (("ours (a) untrained", base), ("ours (a) quadratic prior", quad)):
            c0 = time.process_time()
            out = al.align(it["y"], it["sr"], it["score"], features=it["feats"])
            record(name, it, out.event_times_s, it["feat_cpu"] + time.process_time() - c0)
        c0 = time.process_time()
        record("plain chroma DTW", it, librosa_dtw(it["y"], it["sr"], it["score"]), time.process_time() - c0)
    log(f"references and ours (a) done ({time.time() - t_start:.0f} s)")

    for fold in (0, 1):
        train = [it for k, it in enumerate(items) if k % 2 != fold]
        test = [it for k, it in enumerate(items) if k % 2 == fold]
        al = ScoreAligner(n_iter=1 if args.quick else 3).fit([(it["feats"], it["score"]) for it in train])
        for it in test:
            c0 = time.process_time()
            out = al.align(it["y"], it["sr"], it["score"], features=it["feats"])
            record("ours (b) weak", it, out.event_times_s, it["feat_cpu"] + time.process_time() - c0)
    log(f"ours (b) done ({time.time() - t_start:.0f} s)")

    cols = ["mean onset delay", "median", "within 50 ms", "within 250 ms", "max", "real-time factor"]
    units = {"mean onset delay": "ms", "median": "ms", "within 50 ms": "%", "within 250 ms": "%", "max": "s",
             "real-time factor": "x"}
    better = {"mean onset delay": "lower", "median": "lower", "within 50 ms": "higher", "within 250 ms": "higher",
              "max": "lower", "real-time factor": "higher"}
    load = os.getloadavg()
    log("")
    log(f"Synthesized performances with rubato + fermatas + final ritardando (seed {args.seed}), renderer lag "
        f"{1000 * lag:.2f} ms subtracted; load average {load[0]:.1f} {load[1]:.1f} {load[2]:.1f} on "
        f"{os.cpu_count()} cores; real-time factor = audio s / CPU s")
    rows_json = []
    for corpus in ("folk", "bach", "all"):
        log("")
        log(f"{corpus}")
        log(f"{'method':28s}{'mean ms':>10s}{'median':>10s}{'<=50ms %':>10s}{'<=250ms %':>10s}{'max s':>8s}"
            f"{'x RT':>8s}{'events':>8s}")
        table = {}
        for method, rows in results.items():
            rows = [r for r in rows if corpus in ("all", r[0])]
            if not rows:
                continue
            err = np.concatenate([r[1] for r in rows])
            cpu = sum(r[3] for r in rows)
            s = {"mean onset delay": 1000 * float(err.mean()), "median": 1000 * float(np.median(err)),
                 "within 50 ms": 100 * float(np.mean(err <= 0.05)), "within 250 ms": 100 * float(np.mean(err <= 0.25)),
                 "max": float(err.max()), "real-time factor": sum(r[2] for r in rows) / cpu if cpu > 0 else 0.0}
            table[method] = s
            log(f"{method:28s}{s['mean onset delay']:10.1f}{s['median']:10.1f}{s['within 50 ms']:10.1f}"
                f"{s['within 250 ms']:10.1f}{s['max']:8.2f}{s['real-time factor']:8.1f}{err.shape[0]:8d}")
        for method, s in table.items():
            for c in cols:
                ref = table.get("plain chroma DTW", {}).get(c)
                rows_json.append({"case": f"{corpus}: {method}: {c}", "value": float(s[c]), "unit": units[c],
                                  "target": None, "better": better[c],
                                  "reference": None if method == "plain chroma DTW" or ref is None else
                                  {"name": "plain chroma DTW", "value": float(ref)}, "meets_target": None})
    out_path = RESULTS / "weak_folk_bach.json"
    json.dump(rows_json, open(out_path, "w"), indent=1)
    log(f"\nTotal {time.time() - t_start:.0f} s; wrote {out_path}")


if __name__ == "__main__":
    main()
