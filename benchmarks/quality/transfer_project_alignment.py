"""A piano project's aligner carried into a project of other instruments, through the app's engine path
(issue 47, point 7: "a piano project's aligner → chorales").

Source: a project of Vienna 4x22 performances (``--source-pianists``, default p01–p03, the four pieces: 12
recordings rendered with fluidsynth + FluidR3 GM piano, as ``quality_alignment.py`` renders them), each with its
score, retrained by the engine (the aligner's weak supervision from the scores; no timing).

Target: the ten Bach10 chorales (``alignment/bach_chorales/midi_score``), each performed with a seeded tempo
warp (``weak_folk_bach.warp``: rubato of about ±25 %, fermatas, a final ritardando, 10 ms jitter; the warp gives
every event's onset) and rendered with the Bach10 line-up (violin, clarinet, tenor sax, bassoon on the four
voices), so the target differs from the source in instruments, texture and tempo. A draw is a target project
of ``--target-size`` chorales (chosen and warped with the draw's seed); for each draw:

1. ``untrained``: the new project's first predictions (the shipped, untrained scorers);
2. ``target-only``: a retrain of that project (weak supervision from its own recordings and scores);
3. ``prior``: a second project of the same recordings, Model ▸ Start from… the source project
   (:meth:`Engine.start_from`): the piano aligner's predictions;
4. ``prior + retrain``: that project retrained, its fit started from the piano scorers and pulled towards them
   (:meth:`marginalia.align.ScoreAligner.fit` with ``start``).

Each condition's prediction (:meth:`Engine.predict`, no anchors) is scored on every event of the draw's
recordings: mean onset error (the thesis' measure), median, share within 50 ms; mean ± sd over draws, and the
per-draw difference to ``target-only``. The renderer's onset lag is measured on piano notes and subtracted; the
bowed and blown attacks of the line-up start later, which every condition meets alike.

Usage: ``python -m benchmarks.quality.transfer_project_alignment [--quick] [--data DIR] [--draws 6]
[--target-size 3] [--source-pianists p01,p02,p03] [--out FILE]``. Needs ``fluidsynth`` and ``fluid-soundfont-gm``
(installed with apt-get when missing). Writes ``benchmarks/results/transfer_project_alignment.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import time
import warnings
from pathlib import Path

import numpy as np

from benchmarks._common import ROOT, reference, result_row  # noqa: E402
from benchmarks.quality.quality_alignment_tools.render import SR, ensure_fluidsynth, measure_lag, render  # noqa: E402
from benchmarks.quality.quality_alignment_tools.vienna import performances  # noqa: E402
from benchmarks.quality.weak_folk_bach import warp  # noqa: E402
from marginalia.engine import Engine  # noqa: E402

RESULTS = ROOT / "benchmarks" / "results"
RENDERS = RESULTS / "renders_transfer"
#: General MIDI programs of the Bach10 line-up, soprano to bass
BACH10_PROGRAMS = (40, 71, 65, 70)
CONDITIONS = ("untrained", "target-only", "prior", "prior + retrain")


def log(msg):
    print(msg, flush=True)


def ensemble_midi(score, times_s, path: Path) -> Path:
    """The warped performance of a four-voice score as MIDI, each voice on its own channel and instrument."""
    import mido

    from marginalia.io.midi import write_midi
    write_midi(path, score, times_s=times_s)
    midi = mido.MidiFile(path)
    voices = [t for t in midi.tracks if any(m.type == "note_on" for m in t)]
    for k, track in enumerate(voices):
        channel = k % 16
        program = BACH10_PROGRAMS[k % len(BACH10_PROGRAMS)]
        for i, msg in enumerate(track):
            if hasattr(msg, "channel"):
                track[i] = msg.copy(channel=channel, **({"program": program} if msg.type == "program_change" else {}))
        if not any(m.type == "program_change" for m in track):
            track.insert(0, mido.Message("program_change", channel=channel, program=program, time=0))
    midi.save(path)
    return path


def chorale_performance(score_midi: Path, seed: int, lag: float) -> dict:
    """One warped, rendered chorale: ``{"wav", "score_midi", "truth"}`` (truth: event onsets in s, lag added)."""
    from marginalia.io.midi import read_midi
    score = read_midi(score_midi)
    truth = warp(score, np.random.default_rng([seed, int(score_midi.stem.lstrip("bwv") or 0)]))
    mid = RENDERS / f"{score_midi.stem}_s{seed}.mid"
    RENDERS.mkdir(parents=True, exist_ok=True)
    ensemble_midi(score, truth, mid)
    return {"wav": render(mid, mid.with_suffix(".wav"), SR), "score_midi": score_midi, "truth": truth + lag,
            "name": mid.stem}


def make_project(path: Path, recordings) -> tuple:
    """A project of the recordings, each paired with its score; ``(engine, item id per recording name)``."""
    eng = Engine.create(path)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        eng.import_files([r["wav"] for r in recordings],
                         scores={str(r["wav"]): str(r["score_midi"]) for r in recordings})
    by_name = {info.name: info.id for info in eng.items()}
    return eng, {r["name"]: by_name[Path(r["wav"]).stem] for r in recordings}


def onset_errors(eng, ids, recordings) -> np.ndarray:
    """Absolute onset error (s) of every event of the recordings under the project's current model."""
    out = []
    for r in recordings:
        times = np.asarray(eng.predict(ids[r["name"]]).times_s, dtype=np.float64)
        out.append(np.abs(times - r["truth"]))
    return np.concatenate(out)


def summary(err: np.ndarray) -> dict:
    return {"mean_ms": 1000 * float(err.mean()), "median_ms": 1000 * float(np.median(err)),
            "within_50ms_pct": 100 * float(np.mean(err <= 0.05)), "n_events": int(err.size)}


def source_project(folder: Path, data: Path, pianists) -> Path:
    """The piano project: Vienna renders with their scores, retrained by the engine; its path."""
    perfs = performances(data / "alignment" / "vienna4x22", pianists=pianists)
    recordings = [{"wav": render(p.midi, RESULTS / "renders" / f"{p.piece}_{p.pianist}.wav"), "score_midi": p.score_midi,
                   "name": f"{p.piece}_{p.pianist}"} for p in perfs]
    eng, _ = make_project(folder / "piano.marginalia", recordings)
    try:
        eng.retrain(task_name="alignment")
        return Path(eng.path)
    finally:
        eng.close()


def run_draw(folder: Path, source: Path, recordings) -> dict:
    """The four conditions on one target draw: ``{condition: abs onset errors (s)}``."""
    out = {}
    eng, ids = make_project(folder / "target.marginalia", recordings)
    try:
        out["untrained"] = onset_errors(eng, ids, recordings)
        eng.retrain(task_name="alignment")
        out["target-only"] = onset_errors(eng, ids, recordings)
    finally:
        eng.close()
    eng, ids = make_project(folder / "with_prior.marginalia", recordings)
    try:
        eng.start_from(source, prefer="alignment/audio")
        out["prior"] = onset_errors(eng, ids, recordings)
        eng.retrain(task_name="alignment")
        out["prior + retrain"] = onset_errors(eng, ids, recordings)
    finally:
        eng.close()
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="2 draws of 2 chorales, source pianist p01 only")
    ap.add_argument("--data", default=str(ROOT.parent / "shared" / "data"), help="the shared data folder")
    ap.add_argument("--draws", type=int, default=6)
    ap.add_argument("--target-size", type=int, default=3, help="chorales in each target project")
    ap.add_argument("--source-pianists", default="p01,p02,p03")
    ap.add_argument("--out", default=None, help="results file (default benchmarks/results/transfer_project_alignment.json)")
    args = ap.parse_args(argv)
    if args.quick:
        args.draws, args.target_size, args.source_pianists = 2, 2, "p01"
    data = Path(args.data)
    if not ensure_fluidsynth(log):
        raise SystemExit("fluidsynth + FluidR3_GM are needed to render the performances")
    t0, load_start = time.time(), "%.2f %.2f %.2f" % os.getloadavg()
    lag = measure_lag(RESULTS / "renders", SR)
    chorales = sorted((data / "alignment" / "bach_chorales" / "midi_score").glob("*.mid"))
    per_draw = {c: [] for c in CONDITIONS}
    with tempfile.TemporaryDirectory(prefix="transfer-alignment-") as tmp:
        tmp = Path(tmp)
        source = source_project(tmp, data, args.source_pianists.split(","))
        log(f"source project: pianists {args.source_pianists}, retrained ({time.time() - t0:.0f} s)")
        for draw in range(args.draws):
            rng = np.random.default_rng(draw)
            picked = [chorales[i] for i in sorted(rng.choice(len(chorales), size=args.target_size, replace=False))]
            recordings = [chorale_performance(p, draw, lag) for p in picked]
            folder = tmp / f"draw{draw}"
            folder.mkdir()
            errs = run_draw(folder, source, recordings)
            for c in CONDITIONS:
                per_draw[c].append(summary(errs[c]))
            log(f"draw {draw} ({', '.join(p.stem for p in picked)}): " + "; ".join(
                f"{c} {per_draw[c][-1]['mean_ms']:.1f} ms / {per_draw[c][-1]['within_50ms_pct']:.1f} %"
                for c in CONDITIONS) + f" ({time.time() - t0:.0f} s)")
    rows = []
    base = np.array([d["mean_ms"] for d in per_draw["target-only"]])
    log("")
    log(f"{'condition':<18} {'mean onset error (ms)':>24} {'median (ms)':>12} {'within 50 ms':>14} "
        f"{'minus target-only, per draw':>28}")
    for c in CONDITIONS:
        mean = np.array([d["mean_ms"] for d in per_draw[c]])
        med = np.array([d["median_ms"] for d in per_draw[c]])
        within = np.array([d["within_50ms_pct"] for d in per_draw[c]])
        diff = mean - base
        log(f"{c:<18} {mean.mean():>14.1f} ± {mean.std(ddof=1) if len(mean) > 1 else 0:>6.1f} {med.mean():>12.1f} "
            f"{within.mean():>12.1f} % {diff.mean():>+16.1f} ± {diff.std(ddof=1) if len(diff) > 1 else 0:.1f}")
        ref = None if c == "target-only" else reference("target-only mean onset error ms", float(base.mean()))
        rows.append(result_row(f"alignment transfer piano -> Bach10 line-up, mean onset error, {c}",
                               float(mean.mean()), "ms", reference=ref, beat_reference=c.startswith("prior")))
    log(f"{args.draws} draws of {args.target_size} chorales, {time.time() - t0:.0f} s; load at start {load_start}, "
        f"at end {'%.2f %.2f %.2f' % os.getloadavg()}; renderer lag {1000 * lag:.2f} ms subtracted")
    path = Path(args.out) if args.out else RESULTS / "transfer_project_alignment.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"args": vars(args), "per_draw": per_draw, "rows": rows}, indent=1))
    log(f"wrote {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
