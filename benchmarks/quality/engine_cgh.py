"""What the desktop app's engine redraws on real aCGH profiles after a retrain, with and without the recipe.

A project holds ``--profiles`` neuroblastoma profiles (drawn at random, seed ``--seed``); the expert
region labels of half of them are added as a user would, the engine retrains (``Engine.retrain``),
and the labelled-region error of its redraws on the other half is measured (FP for a change in a
``0breakpoints`` region, FN for none in a ``1breakpoint`` one, FP for two or more there). The
reference is the same engine with the recipe switched off (a warm-started SSVM on one metric and
one penalty, what a retrain did before), run in the same process on the same project. It also times
the query queue's first refresh after the retrain (every chromosome's best-vs-2nd, decoded afresh) on
one and on two threads.

Usage: ``python -m benchmarks.quality.engine_cgh [--quick] [--data DIR] [--profiles N] [--seed S]``.
Prints a table and writes ``benchmarks/results/engine_cgh.json``.
"""

from __future__ import annotations

import argparse
import csv
import gzip
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from benchmarks._common import (  # noqa: E402
    ROOT,  # noqa: E402
    format_row,
    reference,
    result_row,
    save_rows,
)
from marginalia.engine import Engine  # noqa: E402
from marginalia.metrics import region_errors  # noqa: E402
from marginalia.tasks import segmentation as segmentation_task  # noqa: E402
from marginalia.types import RegionKind, RegionLabel  # noqa: E402


def write_project_profiles(data: Path, out: Path, n_profiles: int, seed: int) -> tuple:
    """Copy ``n_profiles`` random profiles to ``out``; returns (train profile ids, test profile ids)."""
    with gzip.open(data / "profiles_small.csv.gz", "rt") as f:
        rows = list(csv.reader(f))
    header, body = rows[0], rows[1:]
    ids = sorted({r[0] for r in body}, key=int)
    picked = [str(p) for p in np.random.default_rng(seed).choice(ids, n_profiles, replace=False)]
    keep = set(picked)
    with open(out, "w") as f:
        f.write(",".join(header) + "\n")
        f.writelines(",".join(r) + "\n" for r in body if r[0] in keep)
    half = n_profiles // 2
    return set(picked[:half]), set(picked[half:])


def expert_labels(data: Path, eng: Engine) -> dict:
    """Item name → region labels of the expert annotations (sample ranges on the item)."""
    items = {i.name: i.id for i in eng.items()}
    out: dict = {}
    with open(data / "annotations_small.csv") as f:
        for a in csv.DictReader(f):
            name = f"{a['profile.id']}:{a['chromosome']}"
            if name not in items:
                continue
            pos = np.asarray(eng.sequence(items[name]).positions)
            lo = int(np.searchsorted(pos, float(a["min"])))
            hi = int(np.searchsorted(pos, float(a["max"]), side="right"))
            if hi - lo < 2:
                continue
            kind = RegionKind.ZERO if a["annotation"] == "0breakpoints" else RegionKind.ONE
            out.setdefault(name, []).append(RegionLabel(item_id=items[name], start=lo, stop=hi, kind=kind))
    return out


def time_queries(eng: Engine, threads: int) -> tuple:
    """Wall and process CPU of the query queue's first refresh after a retrain (best-vs-2nd of every
    chromosome with its labels, and of the labelled ones without them for the stopping signal) on
    ``threads`` threads: the penalty factors and warm segmentations are dropped first, as a retrain does."""
    from marginalia.active.segmentation_adapter import _WARM
    from marginalia.tasks import base
    saved = base.QUERY_THREADS
    task = next(t for t in eng._tasks.all() if t.item_ids())
    base.QUERY_THREADS = threads
    try:
        task._factors, task._last_round = {}, None
        _WARM.clear()
        t0, c0 = time.perf_counter(), time.process_time()
        eng.next_queries(10)
        return time.perf_counter() - t0, time.process_time() - c0
    finally:
        base.QUERY_THREADS = saved


def run_once(data: Path, work: Path, n_profiles: int, seed: int, recipe: bool) -> dict:
    """Build the project, label the training half, retrain, score the redraws of the test half."""
    saved = segmentation_task.RECIPE_MIN_ITEMS
    if not recipe:
        segmentation_task.RECIPE_MIN_ITEMS = 10 ** 9
    try:
        work.mkdir(parents=True)
        train, _test = write_project_profiles(data, work / "profiles.csv", n_profiles, seed)
        with Engine.create(work / "p.marginalia") as eng:
            eng.import_files([work / "profiles.csv"])
            labels = expert_labels(data, eng)
            eng.add_labels([lab for name, labs in labels.items() if name.split(":")[0] in train for lab in labs])
            t0, c0 = time.perf_counter(), time.process_time()
            eng.retrain()
            fit_wall, fit_cpu = time.perf_counter() - t0, time.process_time() - c0
            queries = {n: time_queries(eng, n) for n in (1, 2)}
            errors = regions = 0
            times = []
            items = {i.name: i.id for i in eng.items()}
            for name, labs in labels.items():
                if name.split(":")[0] in train:
                    continue
                t0 = time.perf_counter()
                pred = eng.predict(items[name])
                times.append(time.perf_counter() - t0)
                err = region_errors(labs, pred.structure)
                errors += err.errors
                regions += err.n_labels
        return {"error": errors / max(regions, 1), "regions": regions, "fit_wall": fit_wall, "fit_cpu": fit_cpu,
                "queries": queries, "n_items": len(items),
                "predict_p50": float(np.median(times)), "predict_max": float(np.max(times))}
    finally:
        segmentation_task.RECIPE_MIN_ITEMS = saved


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", default=str(ROOT.parent / "shared" / "data" / "cgh" / "neuroblastoma"))
    ap.add_argument("--profiles", type=int, default=30, help="profiles in the project (half labelled)")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--quick", action="store_true", help="10 profiles")
    args = ap.parse_args(argv)
    data = Path(args.data)
    if data.name != "neuroblastoma" and (data / "cgh" / "neuroblastoma").is_dir():
        data = data / "cgh" / "neuroblastoma"
    n = 10 if args.quick else args.profiles
    with tempfile.TemporaryDirectory() as tmp:
        plain = run_once(data, Path(tmp) / "plain", n, args.seed, recipe=False)
        ours = run_once(data, Path(tmp) / "recipe", n, args.seed, recipe=True)
    rows = [
        result_row(f"engine redraw error after a retrain, recipe ({ours['regions']} held-out regions)",
                   ours["error"], "error", None, "lower", reference("one metric, one penalty", plain["error"]),
                   beat_reference=True),
        result_row("engine retrain, recipe: wall", ours["fit_wall"], "s", None, "lower",
                   reference("one metric, one penalty", plain["fit_wall"])),
        result_row("engine retrain, recipe: process CPU", ours["fit_cpu"], "s", None, "lower",
                   reference("one metric, one penalty", plain["fit_cpu"])),
        result_row(f"engine query queue after the retrain ({ours['n_items']} chromosomes), 2 threads: wall",
                   ours["queries"][2][0], "s", None, "lower", reference("1 thread", ours["queries"][1][0])),
        result_row(f"engine query queue after the retrain ({ours['n_items']} chromosomes), 2 threads: process CPU",
                   ours["queries"][2][1], "s", None, "lower", reference("1 thread", ours["queries"][1][1])),
        result_row("engine first redraw of a chromosome after the retrain: median", ours["predict_p50"], "s", None,
                   "lower", reference("one metric, one penalty", plain["predict_p50"])),
        result_row("engine first redraw of a chromosome after the retrain: max", ours["predict_max"], "s", None,
                   "lower", reference("one metric, one penalty", plain["predict_max"])),
    ]
    for r in rows:
        print(format_row(r, width=72))
    save_rows(ROOT / "benchmarks" / "results" / "engine_cgh.json", rows)
    return 0


if __name__ == "__main__":
    sys.exit(main())
