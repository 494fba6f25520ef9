"""Development chorales: the eight Bach10 chorales that the alignment grid does not play, on four instruments.

usage: python -m benchmarks.quality.chorale_dev [--data DIR] [--fonts fluidr3,musescore]

The alignment grid (``alignment_grid.py``) scores two synthetic chorale performances (BWV 255 and 296). To
develop on other material, this makes the same kind of performance of the other eight chorales of
``alignment/bach_chorales/midi_score`` (BWV 256, 273, 274, 297, 326, 327, 363, 385) with the data set's own
tool, ``alignment/bach_chorales/tools/warp_and_render.py`` (smooth random tempo curve, final ritardando, 15 ms
onset jitter, violin / clarinet / tenor sax / bassoon; seed = the BWV number; run with the Python of
``benchmarks/results/venv_synctoolbox``, which has music21 and pretty_midi; its own render step needs a script
the data folder lacks, so the performance MIDI is rendered here), renders each with FluidR3 GM and MuseScore
General, and aligns it to its score with the untrained aligner (``align_recording``). Truth and errors as in the
grid: each event's median performed onset, each note's instrument's render lag added. Prints, per soundfont,
the refined onsets and the decoded ones (decoding-frame boundaries, before refinement). Files under
``benchmarks/results/chorale_dev/``.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import soundfile as sf

from benchmarks._common import ROOT
from benchmarks.quality.alignment_grid import FONTS, bach_truth, part_lags, summary
from benchmarks.quality.quality_alignment_tools.render import SR, render

OUT = ROOT / "benchmarks" / "results" / "chorale_dev"
DEV = ("bwv256", "bwv273", "bwv274", "bwv297", "bwv326", "bwv327", "bwv363", "bwv385")
TOOL_PYTHON = ROOT / "benchmarks" / "results" / "venv_synctoolbox" / "bin" / "python"


def performance(root: Path, name: str) -> tuple:
    """``(perf MIDI, truth CSV)`` of one chorale, made once with the data set's warp tool."""
    perf, gt = OUT / f"{name}_perf.mid", OUT / f"{name}_gt.csv"
    if not (perf.is_file() and gt.is_file()):
        if not TOOL_PYTHON.is_file():
            raise SystemExit(f"{TOOL_PYTHON} is missing: make it as alignment_grid.py's docstring says "
                             "(it needs music21 and pretty_midi for the warp tool)")
        OUT.mkdir(parents=True, exist_ok=True)
        tool = root / "tools" / "warp_and_render.py"
        # the tool writes the MIDI and truth, then fails on its render step (a script outside the data set)
        subprocess.run([str(TOOL_PYTHON), str(tool), str(root / "midi_score" / f"{name}.mid"), str(OUT / name),
                        "--seed", name[3:]], cwd=tool.parent, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        if not (perf.is_file() and gt.is_file()):
            raise SystemExit(f"{tool} made no performance of {name}")
    return perf, gt


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", default=str(ROOT.parent / "shared" / "data"), help="the shared data folder")
    ap.add_argument("--fonts", default="fluidr3,musescore", help="comma-separated soundfonts: fluidr3, musescore")
    args = ap.parse_args(argv)
    from marginalia.align import ScoreAligner, align_recording
    from marginalia.io.midi import read_midi
    root = Path(args.data) / "alignment" / "bach_chorales"
    coarse = ScoreAligner().coarse  # fine frames per decoding frame
    for font in args.fonts.split(","):
        if font not in FONTS:
            raise SystemExit(f"--fonts: unknown {font!r}; expected some of {sorted(FONTS)}")
        refined, decoded, audio_s, cpu_s = [], [], 0.0, 0.0
        for name in DEV:
            perf, gt = performance(root, name)
            wav = render(perf, OUT / font / f"{name}.wav", SR, FONTS[font])
            score = read_midi(root / "midi_score" / f"{name}.mid")
            truth = bach_truth(score, gt, part_lags(perf, gt, font))
            t0 = time.process_time()
            out = align_recording(wav, score)
            cpu_s += time.process_time() - t0
            audio_s += sf.info(wav).duration
            frame_s = 1.0 / out.frame_rate
            ok = np.isfinite(truth)
            refined.append(np.abs(out.event_times_s - truth)[ok])
            # the decoded onset: the boundary before its decoding frame (AlignmentFeatures.frame_boundary_s)
            decoded.append(np.abs((out.frame_alignment.onsets - 0.5 / coarse) * frame_s - truth)[ok])
        for what, errs in (("refined", refined), ("decoded", decoded)):
            s = summary(np.concatenate(errs), audio_s, cpu_s)
            print(f"{font:9s} {what}: {s['events']} events, median {s['median']:.1f} ms, {s['within 50 ms']:.1f} % "
                  f"<= 50 ms, {s['within 250 ms']:.1f} % <= 250 ms, worst {s['max']:.2f} s"
                  + (f", {s['real-time factor']:.0f}x real time" if what == "refined" else ""), flush=True)


if __name__ == "__main__":
    sys.exit(main())
