"""``marginalia-cli sync --reference A.wav --target B.wav --out map.csv``: align two recordings of the same music.

Also ``train --task sync --pairs PAIRS.csv`` (:func:`train_sync_pairs`): learn the sync aligner's metric
from recordings whose note onsets are known in both.
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ..io.tables import listed_file, read_csv_table
from ._common import EXIT_OK, UsageError, check_output, info, require_file, write_text_output

__all__ = ["add_parser", "run", "read_sync_pairs", "read_time_pairs", "load_sync_aligner", "train_sync_pairs",
           "SyncPair"]

HELP = "align two recordings of the same music (a time map from the reference to the target)"
EPILOG = """\
output: one row per cell of the warping path (frames of 11.6 ms)
  reference_time_s,target_time_s

The recordings are compared frame by frame (chroma and onset chroma, by a metric --model learned with
`train --task sync`; without it, the Euclidean cost) and aligned by an exact dynamic time warping;
pairs longer than about 2 x 70 s are decoded at a coarse rate first, then exactly inside a corridor of
--corridor seconds around that path. --anchors (a CSV reference_time_s,target_time_s) gives times that
correspond: the path passes through every one. A second line says where the path is least sure, the
question a person can answer: the moment where the reference sounds (its lead-in, pauses and the ring of
its last notes are never asked about) at which the best path and the cheapest path at least 0.25 s away
from it part most, with both candidate target times and that path's margin (put the right one in
--anchors).

examples:
  marginalia-cli sync --reference take1.wav --target take2.wav --out take1_to_take2.csv
  marginalia-cli sync --reference take1.wav --target take2.wav --anchors fixes.csv --model piano_sync.model --out -
"""


def add_parser(sub, parents) -> None:
    p = sub.add_parser("sync", help=HELP, description=HELP + ".", epilog=EPILOG, parents=parents,
                       formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--reference", metavar="A.wav", required=True, help="the reference recording")
    p.add_argument("--target", metavar="B.wav", required=True, help="the recording to map onto")
    p.add_argument("--model", metavar="MODEL", help="a sync aligner trained by `train --task sync` (optional)")
    p.add_argument("--anchors", metavar="CSV", help="times that correspond: columns reference_time_s,target_time_s")
    p.add_argument("--corridor", type=float, default=None, metavar="SECONDS",
                   help="half-width of the corridor of long pairs around the coarse path (default 1)")
    p.add_argument("--out", metavar="map.csv", required=True, help="the time map to write ('-': standard output)")
    # the question is always asked now; the flag stays for the scripts that give it
    p.add_argument("--question", action="store_true", help=argparse.SUPPRESS)
    p.set_defaults(run=run)


def load_sync_aligner(model_path):
    """The aligner of a sync model file, or the default (Euclidean) aligner when ``model_path`` is None."""
    from ..sync import SyncAligner
    if model_path is None:
        return SyncAligner()
    from ..models.files import load_model
    return load_model(model_path, task="sync").sync_aligner()


def _time(value, path, line, column) -> float:
    from ..exceptions import DataFormatError
    try:
        t = float((value or "").strip())
    except ValueError:
        t = float("nan")
    if not (np.isfinite(t) and t >= 0):
        raise DataFormatError(f"column {column!r}: expected a time in seconds >= 0, got {value!r}", path=str(path),
                              where=f"line {line}")
    return t


def read_time_pairs(path, *, with_lines: bool = False):
    """A CSV ``reference_time_s,target_time_s`` as an array of shape (N, 2).

    With ``with_lines``: also the file line of every row, a list of N ints.
    """
    from ..exceptions import DataFormatError
    p, header, rows = read_csv_table(path)
    cols = ("reference_time_s", "target_time_s")
    if not all(c in header for c in cols):
        raise DataFormatError(f"expected the columns reference_time_s,target_time_s; found {header}", path=str(p))
    times = np.array([[_time(row[c], p, line, c) for c in cols] for line, row in rows], dtype=np.float64)
    times = times.reshape(-1, 2)
    return (times, [line for line, _ in rows]) if with_lines else times


#: columns an onset table may hold its times in (the first found is read; `align` writes audio_time_s)
TIME_COLUMNS = ("onset_s", "audio_time_s", "time_s")
#: columns that name a note or event, matching rows of the two tables of a pair
KEY_COLUMNS = ("event", "id", "note")


def _onsets(path: Path) -> tuple:
    from ..exceptions import DataFormatError
    path, header, rows = read_csv_table(path)
    col = next((c for c in TIME_COLUMNS if c in header), None)
    if col is None:
        raise DataFormatError(f"expected a time column ({', '.join(TIME_COLUMNS)}); found {header}", path=str(path))
    key = next((c for c in KEY_COLUMNS if c in header), None)
    times = [_time(row[col], path, line, col) for line, row in rows]
    keys = [(row[key] or "").strip() for _, row in rows] if key else None
    if keys is not None and len(set(keys)) != len(keys):
        raise DataFormatError(f"column {key!r}: names a note twice; each row must be one note", path=str(path))
    return key, keys, np.array(times, dtype=np.float64)


@dataclass(frozen=True)
class SyncPair:
    """One row of a sync PAIRS.csv: two recordings and the matched times of the same notes in both."""

    reference: Path
    target: Path
    matched: np.ndarray


def read_sync_pairs(path) -> list:
    """Read ``reference,target,reference_onsets,target_onsets`` rows; paths are relative to PAIRS.csv.

    Each onset table is a CSV with the notes' times in a column ``onset_s``, ``audio_time_s`` (what
    ``marginalia-cli align`` writes) or ``time_s``; when both tables have a column ``event``, ``id`` or
    ``note``, rows are matched by it, otherwise row by row (same number of rows).

    Raises
    ------
    DataFormatError
        Missing columns or files, bad times, tables that cannot be matched (naming the file and line).
    """
    from ..exceptions import DataFormatError
    p = require_file("--pairs", path)
    p, header, rows = read_csv_table(p)
    need = ("reference", "target", "reference_onsets", "target_onsets")
    if not all(c in header for c in need):
        raise DataFormatError(f"expected the columns {','.join(need)}; found {header}", path=str(p))
    pairs = []
    for line, row in rows:
        files = {}
        for column in need:
            q = listed_file(p, line, row, column)
            if q is None:
                raise DataFormatError(f"column {column!r} is empty; every row needs all four files", path=str(p),
                                      where=f"line {line}")
            files[column] = q
        ka, keys_a, ta = _onsets(files["reference_onsets"])
        kb, keys_b, tb = _onsets(files["target_onsets"])
        if keys_a is not None and keys_b is not None:
            index_b = {k: i for i, k in enumerate(keys_b)}
            both = [(i, index_b[k]) for i, k in enumerate(keys_a) if k in index_b]
            matched = np.array([[ta[i], tb[j]] for i, j in both], dtype=np.float64).reshape(-1, 2)
        elif ta.size != tb.size:
            raise DataFormatError(f"the onset tables have {ta.size} and {tb.size} rows and no column naming the notes "
                                  f"({', '.join(KEY_COLUMNS)}); give both the same notes in the same order, or a "
                                  "key column", path=str(p), where=f"line {line}")
        else:
            matched = np.column_stack([ta, tb])
        if matched.shape[0] < 2:
            raise DataFormatError("fewer than 2 notes are in both onset tables; a pair needs matched notes",
                                  path=str(p), where=f"line {line}")
        pairs.append(SyncPair(files["reference"], files["target"], matched))
    if not pairs:
        raise DataFormatError("no pairs (the table has a header but no rows)", path=str(p))
    return pairs


def _load(path):
    from ..io.audio import load_audio
    return load_audio(path, sr=22050)


def run(args) -> int:
    for flag, value in (("--reference", args.reference), ("--target", args.target)):
        require_file(flag, value, "audio file", stdin=False)
    anchors = None
    if args.anchors:
        anchors = read_time_pairs(require_file("--anchors", args.anchors, "CSV file", stdin=False))
    if args.corridor is not None and not (np.isfinite(args.corridor) and args.corridor > 0):
        raise UsageError(f"--corridor: expected a positive number of seconds, got {args.corridor}")
    check_output("--out", args.out, "file")
    aligner = load_sync_aligner(args.model)
    if args.corridor is not None:
        aligner.corridor_s = float(args.corridor)
    info(args, f"sync: reading {args.reference} and {args.target}")
    ref, tgt = _load(args.reference), _load(args.target)
    fa, fb = aligner.compute_features(*ref), aligner.compute_features(*tgt)
    # the decoder's exact runner-up is not asked for: in silence every path costs the same, so it
    # leaves the best path in a lead-in with a margin of 0, which tells a person nothing
    result = aligner.predict(fa, fb, anchors=anchors, runner_up=False)
    lines = ["reference_time_s,target_time_s"] + [f"{a:.4f},{b:.4f}" for a, b in result.table()]
    write_text_output(args.out, "\n".join(lines) + "\n")
    info(args, f"sync: {len(lines) - 1} path cells over {ref[0].shape[0] / ref[1]:.1f} s and "
               f"{tgt[0].shape[0] / tgt[1]:.1f} s; wrote {args.out}")
    q = aligner.question(fa, fb, anchors=anchors)
    if q is None:
        info(args, "sync: nothing to ask: no path strays 0.25 s from this one where the reference sounds")
    else:
        info(args, f"sync: least sure at {q.reference_s:.2f} s of the reference: {q.best_target_s:.2f} s of the "
                   f"target, or {q.alternative_target_s:.2f} s (margin {q.margin:.3g}); put the right one in --anchors")
    return EXIT_OK


def train_sync_pairs(args) -> int:
    """``train --task sync --pairs PAIRS.csv``: learn the sync aligner's metric from aligned recordings."""
    from ..models.files import TrainedModel, save_model
    from ..sync import SyncAligner
    from ._common import make_progress
    pairs = read_sync_pairs(args.pairs)
    options = {"C": float(args.C)}
    if args.max_iter is not None:
        options["max_iter"] = int(args.max_iter)
    aligner = SyncAligner(**options)
    data = []
    progress = make_progress(args, len(pairs), "train: reading", unit="pairs")
    with progress:
        for pair in pairs:
            fa = aligner.compute_features(*_load(pair.reference))
            fb = aligner.compute_features(*_load(pair.target))
            data.append((fa, fb, pair.matched))
            progress.advance(message=pair.target.name)
    n_notes = sum(p.matched.shape[0] for p in pairs)
    info(args, f"train: {len(pairs)} recording pairs, {n_notes} matched notes, sync aligner")
    progress = make_progress(args, int(aligner.max_iter), "train", unit="passes")
    with progress:
        aligner.fit(data, callback=lambda _learner, _it: progress.advance())
    prov = {"learner": {"class": "WarpingFrankWolfe", "C": aligner.C, "loss": aligner.loss,
                        "max_iter": aligner.max_iter},
            "trained_on": [{"reference": str(p.reference.resolve()), "target": str(p.target.resolve())}
                           for p in pairs],
            "n_pairs": len(pairs), "n_matched": n_notes}
    save_model(args.out, TrainedModel("sync", f"sync-{aligner.features}", aligner, aligner.metric_weights(), prov))
    info(args, f"train: wrote {args.out}")
    return EXIT_OK


def train_project_sync(args) -> int:
    """``train PROJECT --task sync``: learn the project's sync metric (stored as a new version) and write it."""
    from ..engine import Engine
    from ..sync.anchors import sync_model_writer
    from ._common import make_progress
    require_file("PROJECT", args.project, "project file", stdin=False)
    check_output("--out", args.out, "file", stdout=False)   # before the learning, not after it
    options = {"C": float(args.C)}
    if args.max_iter is not None:
        options["max_iter"] = int(args.max_iter)
    bars = []      # made at the first step, when the number of steps is known (none when nothing to learn from)

    def progress(done, total, message):
        if not bars:
            bars.append(make_progress(args, total, "train", unit="steps"))
        bars[0].callback()(done, total, message)

    with Engine.open(args.project) as eng:
        try:
            report = eng.learn_sync_metric(progress=progress, options=options)
        finally:
            for bar in bars:
                bar.close()
        info(args, f"train: {report.summary()}")
        sync_model_writer(eng)(args.out)
    info(args, f"train: stored the sync metric as {report.model_id} in {args.project} and wrote {args.out}")
    return EXIT_OK

