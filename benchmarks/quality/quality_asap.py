"""Audio-to-score alignment of real performances of long pieces: the ASAP development subset, beat by beat.

Usage: ``python -m benchmarks.quality.quality_asap [--quick | --longest N] [--data DIR] [--no-librosa]
[--soundfont fluidr3|timgm6mb|musescore] [--room]``

The 36 real performances of 21 pieces in ``alignment/asap_dev`` (Disklavier MIDI of piano competitions, 1 to
about 10 minutes, tempi often far from the score file's; ASAP, Foscarin et al. 2020) are rendered with fluidsynth
+ FluidR3 GM (cached in ``benchmarks/results/renders_asap/``), and each score (``midi_score.mid``) is aligned to
its render by ``marginalia-cli align``'s aligner (untrained, no anchors). Each annotated beat is scored by
interpolating the aligner's score-time → audio-time map (its event onsets) at the beat's score time, minus the
renderer's lag, against the beat's performed time (``<perf>_beat_alignment.csv``). Reference in the same run:
librosa chroma DTW (``quality_alignment.librosa_dtw``), on the performances up to 5 minutes (its cost matrix
needs about 3 GB at 5 minutes).

``--soundfont`` renders with another of the alignment grid's pianos (TimGM6mb, MuseScore General; cached in
``renders_asap/<soundfont>/``, the renderer's lag measured for that soundfont) and ``--room`` plays the render in
the grid's reverberant room (``sox reverb 80 50 100``): the long real performances under the grid's conditions.

Prints, per performance and over all beats: median error, share within 50 and 250 ms, worst error, and the
speed (seconds of audio per second of CPU, features included); writes ``benchmarks/results/quality_asap.json``.
These performances are for development: the held-out set the team is scored on is another.
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import time
from pathlib import Path

import numpy as np

from benchmarks._common import ROOT  # noqa: E402
from benchmarks.quality.alignment_grid import FONT_NAMES, FONTS, ROOM  # noqa: E402
from benchmarks.quality.quality_alignment_tools.conditions import sox_room  # noqa: E402
from benchmarks.quality.quality_alignment_tools.render import SR, ensure_fluidsynth, measure_lag, render  # noqa: E402

RESULTS = ROOT / "benchmarks" / "results"
RENDERS = RESULTS / "renders_asap"
#: librosa chroma DTW is run on performances up to this long (s): its full cost matrix grows with the square
LIBROSA_MAX_S = 300.0


def log(msg):
    print(msg, flush=True)


def performances(root: Path) -> list:
    """``[(name, score MIDI, performance MIDI, beat table)]`` from ``metadata.csv``."""
    out = []
    with open(root / "metadata.csv", newline="") as fh:
        for row in csv.DictReader(fh):
            perf = root / row["midi_performance"]
            beats = perf.with_name(perf.stem + "_beat_alignment.csv")
            out.append((f"{row['title']}/{perf.stem}", root / row["folder"] / "midi_score.mid", perf, beats))
    return out


def read_beats(path: Path) -> tuple:
    """``(score_time_s, performed_time_s)`` of every annotated beat."""
    with open(path, newline="") as fh:
        rows = list(csv.DictReader(fh))
    return (np.array([float(r["score_time_sec"]) for r in rows]),
            np.array([float(r["perf_time_sec"]) for r in rows]))


def beat_times(score, event_times_s, beat_score_s) -> np.ndarray:
    """Audio time of every beat: the aligner's score → audio map (its event onsets) interpolated at the beats."""
    on = np.asarray(score.event_onsets_s, dtype=np.float64)
    return np.interp(beat_score_s, on, np.asarray(event_times_s, dtype=np.float64))


def summary(err: np.ndarray) -> dict:
    return {"median_ms": 1000 * float(np.median(err)), "within_50ms": 100 * float(np.mean(err <= 0.05)),
            "within_250ms": 100 * float(np.mean(err <= 0.25)), "max_s": float(err.max()), "beats": int(err.size)}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="the 6 shortest performances")
    ap.add_argument("--data", default=str(ROOT.parent / "shared" / "data"), help="the shared data folder")
    ap.add_argument("--no-librosa", action="store_true", help="skip the librosa chroma DTW reference")
    ap.add_argument("--longest", type=int, default=0, metavar="N",
                    help="only the N longest performances (the aligner's cost on long recordings)")
    ap.add_argument("--soundfont", choices=sorted(FONTS), default="fluidr3", help="the piano to render with")
    ap.add_argument("--room", action="store_true", help="the render played in the alignment grid's room")
    args = ap.parse_args(argv)
    from benchmarks.quality.quality_alignment import librosa_dtw
    from marginalia.align import ScoreAligner
    from marginalia.io.audio import load_audio
    from marginalia.io.midi import read_midi

    if not ensure_fluidsynth(log):
        raise SystemExit("fluidsynth + FluidR3_GM are needed to render the performances")
    t_start, load_start = time.time(), "%.2f %.2f %.2f" % os.getloadavg()
    lag = measure_lag(RESULTS / "renders", SR, FONTS[args.soundfont])
    items = performances(Path(args.data) / "alignment" / "asap_dev")
    dry_dir = RENDERS if args.soundfont == "fluidr3" else RENDERS / args.soundfont
    dry_dir.mkdir(parents=True, exist_ok=True)
    wavs = {}
    for name, _, perf, _ in items:
        wavs[name] = render(perf, dry_dir / f"{name.replace('/', '__')}.wav", SR, FONTS[args.soundfont])
    if args.room:
        for name, dry in wavs.items():
            wet = RENDERS / f"{args.soundfont}_room" / dry.name
            if not (wet.is_file() and wet.stat().st_mtime >= dry.stat().st_mtime):
                wet.parent.mkdir(parents=True, exist_ok=True)
                sox_room(dry, wet, ROOM)
            wavs[name] = wet
    durations = {name: float(len(load_audio(w, sr=SR)[0])) / SR for name, w in wavs.items()}
    if args.quick:
        items = sorted(items, key=lambda it: durations[it[0]])[:6]
    if args.longest > 0:
        items = sorted(items, key=lambda it: durations[it[0]])[-args.longest:]
    log(f"{FONT_NAMES[args.soundfont]}{' in the room' if args.room else ', dry'}: "
        f"{len(items)} performances, {sum(durations[it[0]] for it in items) / 60:.1f} min of audio "
        f"(rendered in {time.time() - t_start:.0f} s); renderer lag {1000 * lag:.2f} ms")
    aligner = ScoreAligner()
    rows, errs = [], {"ours": [], "librosa chroma DTW": []}
    for name, score_path, _, beats_path in sorted(items, key=lambda it: durations[it[0]]):
        score = read_midi(score_path)
        beat_score, beat_perf = read_beats(beats_path)
        y, sr = load_audio(wavs[name], sr=SR)
        c0 = time.process_time()
        times = aligner.align(y, sr, score).event_times_s
        cpu = time.process_time() - c0
        err = np.abs(beat_times(score, times, beat_score) - lag - beat_perf)
        errs["ours"].append(err)
        row = {"performance": name, "duration_s": round(durations[name], 1), "events": int(score.n_events),
               "ours": dict(summary(err), x_real_time=durations[name] / max(cpu, 1e-9))}
        line = (f"{name:<48} {durations[name] / 60:5.1f} min  ours: median {row['ours']['median_ms']:6.1f} ms, "
                f"{row['ours']['within_50ms']:5.1f} % <= 50 ms, {row['ours']['within_250ms']:5.1f} % <= 250 ms, "
                f"worst {row['ours']['max_s']:5.2f} s, {row['ours']['x_real_time']:5.1f}x")
        if not args.no_librosa and durations[name] <= LIBROSA_MAX_S:
            c0 = time.process_time()
            try:
                ref = librosa_dtw(y, sr, score)
            except Exception as exc:  # noqa: BLE001 - a reference that fails is reported, not fatal
                row["librosa chroma DTW"] = {"failed": f"{type(exc).__name__}: {exc}"}
                line += f" | librosa failed ({exc})"
            else:
                cpu_ref = time.process_time() - c0
                err_ref = np.abs(beat_times(score, ref, beat_score) - lag - beat_perf)
                errs["librosa chroma DTW"].append(err_ref)
                row["librosa chroma DTW"] = dict(summary(err_ref), x_real_time=durations[name] / max(cpu_ref, 1e-9))
                line += f" | librosa {row['librosa chroma DTW']['within_50ms']:5.1f} % <= 50 ms"
        rows.append(row)
        log(line)
    log("")
    totals = {}
    for method, parts in errs.items():
        if not parts:
            continue
        totals[method] = summary(np.concatenate(parts))
        n = len(parts)
        t = totals[method]
        log(f"{method:<20} {n:2d} performances, {t['beats']} beats: median {t['median_ms']:.1f} ms, "
            f"{t['within_50ms']:.1f} % within 50 ms, {t['within_250ms']:.1f} % within 250 ms, worst {t['max_s']:.2f} s")
    scored = [i for i, r in enumerate(rows) if "within_50ms" in r.get("librosa chroma DTW", {})]
    same = [rows[i] for i in scored]
    if same and len(same) < len(rows):
        ours_same = summary(np.concatenate([errs["ours"][i] for i in scored]))
        totals["ours, on librosa's performances"] = ours_same
        log(f"ours on the same {len(same)} performances as librosa: median {ours_same['median_ms']:.1f} ms, "
            f"{ours_same['within_50ms']:.1f} % within 50 ms, {ours_same['within_250ms']:.1f} % within 250 ms")
    log(f"total {time.time() - t_start:.0f} s; load average at start {load_start}, at end "
        f"{'%.2f %.2f %.2f' % os.getloadavg()}")
    RESULTS.mkdir(parents=True, exist_ok=True)
    condition = "" if args.soundfont == "fluidr3" else f"_{args.soundfont}"
    out = RESULTS / f"quality_asap{condition}{'_room' if args.room else ''}.json"
    out.write_text(json.dumps({"rows": rows, "totals": totals, "lag_s": lag, "soundfont": args.soundfont,
                               "room": bool(args.room)}, indent=1))
    log(f"wrote {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
