"""Audio-to-score alignment quality on real piano performances (Vienna 4x22, rendered with fluidsynth).

usage: python -m benchmarks.quality.quality_alignment [--quick] [--data DIR] [--no-synctoolbox | --synctoolbox]
                                             [--no-librosa] [--pianists p01,p08,...] [--dev-pianists p01,p02,p03]
                                             [--test-pianists p01,... --save-errors E.json] [--merge E1.json,E2.json]

On a loaded machine two processes can share the work: ``--test-pianists p01,...,p07 --save-errors A.json``
and ``--test-pianists p08,...,p14 --save-errors B.json``, then ``--merge A.json,B.json`` prints the tables
of all of them and writes the JSON. Tables: all performances, the pianists other than ``--dev-pianists``
(those on which the aligner's settings were chosen), and every piece.

Every performance MIDI (``alignment/vienna4x22/midi``) is rendered to audio at 22.05 kHz with
fluidsynth + FluidR3_GM (cached under ``benchmarks/results/renders/``; ``--quick`` uses only the 4
pre-rendered files) and aligned to the piece's deadpan score MIDI. Every distinct score onset is an
event; its true audio time is the median performed onset of its matched notes (also reported: the
earliest note of the chord) plus the renderer's lag, measured here on isolated notes.

Methods (same files, same run):

* ``ours (a) untrained`` -- :class:`marginalia.align.ScoreAligner` as shipped;
* ``ours (b) weak`` -- its scorers learned from score/audio pairs without timing, trained on other
  pieces played by other pianists (quick: other pieces, same pianist, one align/refit round);
* ``ours (c) anchors k %`` -- (b) with k % of the events anchored by a simulated annotator (uniformly
  spread, true time, 20 ms tolerance);
* ``sync toolbox`` -- chroma + DLNCO, ``sync_via_mrmsdtw``, as-is and with the score stretched to the
  audio length (run in its own venv, ``benchmarks/results/venv_synctoolbox``; skipped by ``--quick``
  unless ``--synctoolbox``);
* ``librosa chroma DTW`` -- CQT chroma vs the score's piano-roll chroma, ``librosa.sequence.dtw``.

Writes ``benchmarks/results/quality_alignment.json`` (rows: case, value, unit, target, better, reference,
meets_target).
"""

from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path

import numpy as np

from benchmarks._common import ROOT  # noqa: E402
from benchmarks.quality.quality_alignment_tools import sync_toolbox_process as synctoolbox  # noqa: E402
from benchmarks.quality.quality_alignment_tools.render import SR, ensure_fluidsynth, measure_lag, render  # noqa: E402
from benchmarks.quality.quality_alignment_tools.vienna import performances  # noqa: E402

RESULTS = ROOT / "benchmarks" / "results"
PIANIST_GROUPS = ([f"p{k:02d}" for k in range(1, 8)], [f"p{k:02d}" for k in range(8, 15)])
TARGETS = {"median": 15.0, "within 50 ms": 95.0, "within 250 ms": 99.0, "max": 1.0, "real-time factor": 20.0}


def log(msg):
    print(msg, flush=True)


# ------------------------------------------------------------------ metrics


def errors(times, truth, lag):
    ok = np.isfinite(truth)
    return np.abs(np.asarray(times, dtype=np.float64)[ok] - lag - truth[ok])


def summary(err, audio_s, cpu_s):
    return {"median": 1000 * float(np.median(err)), "mean": 1000 * float(np.mean(err)),
            "within 50 ms": 100 * float(np.mean(err <= 0.05)), "within 100 ms": 100 * float(np.mean(err <= 0.1)),
            "within 250 ms": 100 * float(np.mean(err <= 0.25)), "max": float(np.max(err)),
            "real-time factor": float(audio_s / cpu_s) if cpu_s > 0 else float("nan")}


UNITS = {"median": "ms", "mean": "ms", "within 50 ms": "%", "within 100 ms": "%", "within 250 ms": "%", "max": "s",
         "real-time factor": "x"}
BETTER = {"median": "lower", "mean": "lower", "within 50 ms": "higher", "within 100 ms": "higher",
          "within 250 ms": "higher", "max": "lower", "real-time factor": "higher"}


# ---------------------------------------------------------------- references


def librosa_dtw(y, sr, score):
    """Chroma DTW: CQT chroma of the audio vs the score's piano-roll chroma at the same frame rate."""
    import librosa
    hop = 512
    C = librosa.feature.chroma_cqt(y=y, sr=sr, hop_length=hop)
    rate = sr / hop
    n = int(np.ceil(score.duration_s * rate)) + 1
    R = np.zeros((12, n))
    for p, a, b in zip(score.pitches, score.onsets_s, score.offsets_s):
        R[p % 12, int(a * rate):max(int(b * rate), int(a * rate) + 1)] += 1.0
    R += 1e-3
    _, wp = librosa.sequence.dtw(X=R, Y=C, metric="cosine")
    wp = wp[::-1]
    # first audio frame reached by each score frame
    first = {}
    for i, j in wp:
        first.setdefault(int(i), int(j))
    sf_ = np.array(sorted(first))
    af = np.array([first[i] for i in sf_])
    return np.interp(score.event_onsets_s * rate, sf_, af) / rate


# ---------------------------------------------------------------------- main


def anchors_for(truth, lag, fraction):
    from marginalia.types import AnchorLabel
    good = np.flatnonzero(np.isfinite(truth))
    n = max(1, int(round(fraction * truth.shape[0])))
    picks = good[np.unique(np.round(np.linspace(0, good.shape[0] - 1, n + 2)[1:-1]).astype(int))]
    return [AnchorLabel(item_id="bench", event=int(e), time_s=float(truth[e] + lag), tolerance_s=0.02)
            for e in picks]


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="only the 4 pre-rendered performances")
    ap.add_argument("--data", default=str(ROOT.parent / "shared" / "data"), help="the shared data folder")
    ap.add_argument("--no-synctoolbox", action="store_true", help="skip the Sync Toolbox reference")
    ap.add_argument("--synctoolbox", action="store_true",
                    help="run the Sync Toolbox reference even with --quick (about a minute more)")
    ap.add_argument("--pianists", default="", help="comma-separated subset of pianists (default: all)")
    ap.add_argument("--test-pianists", default="",
                    help="only these pianists are aligned and scored (the others may still train (b)); "
                         "with --save-errors, lets two processes share the work")
    ap.add_argument("--no-librosa", action="store_true", help="skip the librosa chroma DTW reference")
    ap.add_argument("--references-only", action="store_true",
                    help="skip ours (with --save-errors, a third process can run the references)")
    ap.add_argument("--save-errors", default="", help="also write every method's per-event errors to this JSON")
    ap.add_argument("--merge", default="",
                    help="comma-separated --save-errors files: print the tables of their union, compute nothing")
    ap.add_argument("--dev-pianists", default="p01,p02,p03",
                    help="pianists on which the aligner's settings were chosen: also reported without them")
    args = ap.parse_args(argv)
    from marginalia.align import ScoreAligner
    from marginalia.io.audio import load_audio
    from marginalia.io.midi import read_midi

    t_start = time.time()
    if args.merge:
        results, lag, n_items = {}, None, 0
        for path in args.merge.split(","):
            saved = json.load(open(path))
            lag = saved["lag"]
            n_items += saved["n_items"]
            for method, rows in saved["results"].items():
                results.setdefault(method, []).extend(
                    (r[0], r[1], np.array(r[2]), np.array(r[3]), r[4], r[5]) for r in rows)
        pieces = sorted({r[0] for rows in results.values() for r in rows})
        n_items = len({(r[0], r[1]) for rows in results.values() for r in rows})
        report(args, results, lag, n_items, pieces, t_start)
        return
    root = Path(args.data) / "alignment" / "vienna4x22"
    RESULTS.mkdir(parents=True, exist_ok=True)
    have_synth = ensure_fluidsynth(log)
    lag = measure_lag(RESULTS / "renders", SR) if have_synth else 0.0065
    log(f"renderer lag: {1000 * lag:.2f} ms ({'measured' if have_synth else 'documented value'})")
    pianists = None
    if args.quick:
        pianists = ["p01"]
    elif args.pianists:
        pianists = args.pianists.split(",")
    perfs = performances(root, pianists=pianists)
    if args.quick:
        perfs = [p for p in perfs if (root / "audio_rendered" / f"{p.piece}_{p.pianist}.wav").is_file()]
    items = []
    for p in perfs:
        pre = root / "audio_rendered" / f"{p.piece}_{p.pianist}.wav"
        if args.quick and pre.is_file():
            wav = pre
        else:
            if not have_synth:
                raise SystemExit("fluidsynth is needed to render the performances (or use --quick)")
            wav = render(p.midi, RESULTS / "renders" / f"{p.piece}_{p.pianist}.wav")
        y, sr = load_audio(wav, sr=SR)
        y = np.array(y, dtype=np.float32)
        items.append({"perf": p, "wav": wav, "y": y, "sr": sr, "score": read_midi(p.score_midi),
                      "audio_s": y.shape[0] / sr})
    log(f"{len(items)} performances, {sum(i['audio_s'] for i in items) / 60:.1f} min of audio "
        f"({time.time() - t_start:.0f} s to render/load)")

    sync_started = None
    if not args.no_synctoolbox and (args.synctoolbox or not args.quick):
        jobs = [synctoolbox.job(f"{k}:{int(stretch)}", it["wav"], it["score"], stretch)
                for k, it in enumerate(items) for stretch in (False, True)]
        sync_started = synctoolbox.start(synctoolbox.ensure_venv(log), jobs, "quality_alignment")
        log("sync toolbox started in its own process (CPU time measured inside it)")

    results = {}  # method -> list of (piece, pianist, err_median, err_first, audio_s, cpu_s)

    def record(method, it, times, cpu):
        p = it["perf"]
        results.setdefault(method, []).append((p.piece, p.pianist, errors(times, p.truth_median, lag),
                                               errors(times, p.truth_first, lag), it["audio_s"], cpu))

    tested = set(args.test_pianists.split(",")) if args.test_pianists else None

    def is_tested(it):
        return tested is None or it["perf"].pianist in tested

    # features once per file (they do not depend on the learned scorers), only for files that are used
    base = ScoreAligner()

    def ensure_features(it):
        if "feats" not in it:
            c0 = time.process_time()
            it["feats"] = base.features(it["y"], it["sr"])
            it["feat_cpu"] = time.process_time() - c0

    # ours (a)
    for it in items:
        if args.references_only or not is_tested(it):
            continue
        ensure_features(it)
        c0 = time.process_time()
        out = base.align(it["y"], it["sr"], it["score"], features=it["feats"])
        record("ours (a) untrained", it, out.event_times_s, it["feat_cpu"] + time.process_time() - c0)
    log(f"ours (a) done ({time.time() - t_start:.0f} s)")

    # ours (b) and (c): cross-validation over pieces and pianists
    pieces = sorted({it["perf"].piece for it in items})
    folds = []
    if args.quick:
        for piece in pieces:
            folds.append(([it for it in items if it["perf"].piece == piece],
                          [it for it in items if it["perf"].piece != piece]))
    else:
        for piece in pieces:
            for g, group in enumerate(PIANIST_GROUPS):
                test = [it for it in items if it["perf"].piece == piece and it["perf"].pianist in group
                        and is_tested(it)]
                other = PIANIST_GROUPS[1 - g]
                train = []
                for q in pieces:
                    if q != piece:
                        train += [it for it in items if it["perf"].piece == q and it["perf"].pianist in other][:2]
                if test and train:
                    folds.append((test, train))
    fit_cpu = []
    if args.references_only:
        folds = []
    for test, train in folds:
        for it in train:
            ensure_features(it)
        c0 = time.process_time()
        aligner = ScoreAligner(n_iter=1 if args.quick else 3).fit([(it["feats"], it["score"]) for it in train])
        fit_cpu.append(time.process_time() - c0)
        for it in test:
            c0 = time.process_time()
            out = aligner.align(it["y"], it["sr"], it["score"], features=it["feats"])
            record("ours (b) weak", it, out.event_times_s, it["feat_cpu"] + time.process_time() - c0)
            for frac in (0.01, 0.05, 0.10):
                anchors = anchors_for(it["perf"].truth_median, lag, frac)
                c0 = time.process_time()
                out = aligner.align(it["y"], it["sr"], it["score"], features=it["feats"], anchors=anchors)
                record(f"ours (c) anchors {int(frac * 100)} %", it, out.event_times_s,
                       it["feat_cpu"] + time.process_time() - c0)
        log(f"  fold {len(fit_cpu)}/{len(folds)} ({time.time() - t_start:.0f} s)")
    log(f"ours (b), (c) done: {len(folds)} folds, fit {np.mean(fit_cpu) if fit_cpu else 0.0:.1f} s CPU each "
        f"({time.time() - t_start:.0f} s)")
    for method, rows in results.items():  # running summary, in case the references take long
        err = np.concatenate([r[2] for r in rows])
        log(f"  so far {method}: median {1000 * np.median(err):.1f} ms, {100 * np.mean(err <= 0.05):.1f} % <= 50 ms, "
            f"{100 * np.mean(err <= 0.25):.1f} % <= 250 ms, max {err.max():.2f} s ({len(rows)} performances)")

    def save_errors():
        if args.save_errors:
            json.dump({"lag": lag, "n_items": sum(is_tested(it) for it in items),
                       "results": {m: [(r[0], r[1], r[2].tolist(), r[3].tolist(), r[4], r[5]) for r in rows]
                                   for m, rows in results.items()}}, open(args.save_errors, "w"))
            log(f"wrote {args.save_errors}")

    save_errors()  # ours so far, in case the references take long
    for it in items:
        if args.no_librosa or not is_tested(it):
            continue
        c0 = time.process_time()
        times = librosa_dtw(it["y"], it["sr"], it["score"])
        record("librosa chroma DTW", it, times, time.process_time() - c0)
    log(f"librosa done ({time.time() - t_start:.0f} s)")

    if sync_started is not None:
        try:
            out = synctoolbox.finish(sync_started)
        except synctoolbox.SyncToolboxFailed as exc:
            raise SystemExit(str(exc)) from None
        for k, it in enumerate(items):
            if not is_tested(it):
                continue
            for stretch, name in ((False, "sync toolbox as-is"), (True, "sync toolbox stretched")):
                r = out.get(f"{k}:{int(stretch)}", {"error": "missing"})
                if "error" in r:
                    log(f"sync toolbox failed on {it['wav'].name}: {r['error']}")
                    continue
                record(name, it, r["times"], r["cpu_s"])
        log(f"sync toolbox done ({time.time() - t_start:.0f} s)")

    save_errors()
    report(args, results, lag, sum(is_tested(it) for it in items), pieces, t_start)


def report(args, results, lag, n_items, pieces, t_start):
    """Print the tables (all, held-out pianists, per piece) and write the JSON rows."""
    UNITS.update({"median vs earliest note": "ms", "within 50 ms vs earliest note": "%",
                  "within 250 ms vs earliest note": "%", "max vs earliest note": "s"})
    BETTER.update({"median vs earliest note": "lower", "within 50 ms vs earliest note": "higher",
                   "within 250 ms vs earliest note": "higher", "max vs earliest note": "lower"})
    cols = ["median", "mean", "within 50 ms", "within 100 ms", "within 250 ms", "max", "real-time factor",
            "median vs earliest note", "within 50 ms vs earliest note", "within 250 ms vs earliest note",
            "max vs earliest note"]
    short = ["median", "mean", "<=50ms", "<=100ms", "<=250ms", "max s", "x RT", "med 1st", "<=50 1st",
             "<=250 1st", "max 1st"]

    def table_for(keep):
        table = {}
        for method, rows in results.items():
            rows = [r for r in rows if keep(r[0], r[1])]
            if not rows:
                continue
            err = np.concatenate([r[2] for r in rows])
            err_first = np.concatenate([r[3] for r in rows])
            s = summary(err, sum(r[4] for r in rows), sum(r[5] for r in rows))
            s["median vs earliest note"] = 1000 * float(np.median(err_first))
            s["within 50 ms vs earliest note"] = 100 * float(np.mean(err_first <= 0.05))
            s["within 250 ms vs earliest note"] = 100 * float(np.mean(err_first <= 0.25))
            s["max vs earliest note"] = float(np.max(err_first))
            s["n events"] = int(err.shape[0])
            s["n performances"] = len(rows)
            table[method] = s
        return table

    def print_table(title, table):
        log("")
        log(title)
        log(f"{'method':26s}" + "".join(f"{c:>9s}" for c in short) + f"{'events':>7s}{'perfs':>6s}")
        for method, s in table.items():
            line = f"{method:26s}"
            for c in cols:
                v = s[c]
                line += f"{v:9.2f}" if c.startswith("max") else f"{v:9.1f}"
            log(line + f"{s['n events']:7d}{s['n performances']:6d}")

    dev = set(args.dev_pianists.split(",")) if args.dev_pianists else set()
    scopes = [("", "all performances", lambda piece, pianist: True)]
    if dev:
        scopes.append(("held-out pianists: ", f"held-out pianists (not {','.join(sorted(dev))}, on which the "
                                              f"aligner's settings were chosen)",
                       lambda piece, pianist: pianist not in dev))
    for piece in pieces:
        scopes.append((f"{piece}: ", f"piece {piece} (all pianists)", lambda q, pianist, piece=piece: q == piece))
    load = os.getloadavg()
    log("")
    log(f"Vienna 4x22 rendered, {n_items} performances, renderer lag {1000 * lag:.2f} ms subtracted; "
        f"load average {load[0]:.1f} {load[1]:.1f} {load[2]:.1f} on {os.cpu_count()} cores; real-time factor = "
        f"audio seconds / CPU seconds (features + alignment); errors vs the median performed onset of each "
        f"score event, '1st' columns vs its earliest note")
    rows_json = []
    ref_name = "sync toolbox stretched" if "sync toolbox stretched" in results else "librosa chroma DTW"
    for prefix, title, keep in scopes:
        table = table_for(keep)
        print_table(title, table)
        for method, s in table.items():
            for c in cols:
                target = TARGETS.get(c) if method.startswith("ours (b)") else None
                ref = table.get(ref_name, {}).get(c)
                meets = None
                if target is not None:
                    meets = bool(s[c] <= target) if BETTER[c] == "lower" else bool(s[c] >= target)
                rows_json.append({"case": f"{prefix}{method}: {c}", "value": float(s[c]), "unit": UNITS[c],
                                  "target": target, "better": BETTER[c],
                                  "reference": None if ref is None or method == ref_name else
                                  {"name": ref_name, "value": float(ref)},
                                  "meets_target": meets})
    log(f"\nTargets (ours (b)): median <= 15 ms, >= 95 % within 50 ms, >= 99 % within 250 ms, max <= 1 s, "
        f">= 20x real time. Total {time.time() - t_start:.0f} s.")
    out_path = RESULTS / "quality_alignment.json"
    json.dump(rows_json, open(out_path, "w"), indent=1)
    log(f"wrote {out_path}")


if __name__ == "__main__":
    main()
