"""How much the aCGH recipes' test error depends on which few chromosomes were labelled.

A person labels a few chromosomes and retrains; a steady learner gives about the same test error whichever
chromosomes they were. For each seed the profiles are split into a pool (2/3) and a test set (1/3), as in
``benchmarks/quality/active.py``; from the pool, ``--subsets`` random sets of 16, 32 and 64 labelled chromosomes
are drawn, every recipe of :data:`benchmarks.quality.quality_cgh_nested.RECIPES` is fitted on each and scored on
the test profiles' labels. Printed per size and recipe: the mean test error, and the spread over subsets
(standard deviation of the test error between the subsets of one seed, averaged over seeds) -- the figure a
steadier learner lowers.

Usage: ``python -m benchmarks.experiments.recipe_subset_spread [--seeds 3] [--subsets 8] [--sizes 16,32,64]
[--jobs 1] [--data DIR]``. Writes ``benchmarks/results/recipe_subset_spread.json``.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import time

import numpy as np

from benchmarks._common import ROOT, cgh_data_missing
from benchmarks.quality.quality_cgh import load
from benchmarks.quality.quality_cgh_nested import RECIPES, recipe_errors

_ITEMS: list = []


def split_pool_test(items, seed):
    """Indices of the pool (2/3 of the profiles) and of the test set (the rest), by profile."""
    profiles = sorted({s.meta["profile_id"] for s, _ in items}, key=str)
    rng = np.random.default_rng(seed)
    rng.shuffle(profiles)
    test = set(profiles[: len(profiles) // 3])
    is_test = np.array([s.meta["profile_id"] in test for s, _ in items])
    return np.flatnonzero(~is_test), np.flatnonzero(is_test)


def one_fit(task) -> dict:
    seed, size, draw = task
    pool, test = split_pool_test(_ITEMS, seed)
    rng = np.random.default_rng([seed, size, draw])
    chosen = rng.choice(pool, size=size, replace=False)
    errors = recipe_errors([_ITEMS[i] for i in chosen], [_ITEMS[i] for i in test])
    rates = {}
    for name, by_platform in errors.items():
        e = sum(v[0] + v[1] for v in by_platform.values())
        n = sum(v[2] for v in by_platform.values())
        rates[name] = e / n
    return {"seed": seed, "size": size, "draw": draw, "rates": rates}


def _init(items):
    global _ITEMS
    _ITEMS = items


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument("--subsets", type=int, default=8)
    ap.add_argument("--sizes", default="16,32,64")
    ap.add_argument("--jobs", type=int, default=1)
    ap.add_argument("--data", default=str(ROOT.parent / "shared" / "data"))
    args = ap.parse_args(argv)
    if cgh_data_missing(args.data):
        return 0
    items = load(args.data, "small")
    sizes = [int(v) for v in args.sizes.split(",")]
    tasks = [(seed, size, draw) for seed in range(args.seeds) for size in sizes for draw in range(args.subsets)]
    t0 = time.perf_counter()
    if args.jobs > 1:
        with multiprocessing.get_context("fork").Pool(args.jobs, initializer=_init, initargs=(items,)) as pool:
            fits = list(pool.imap_unordered(one_fit, tasks))
    else:
        _init(items)
        fits = [one_fit(t) for t in tasks]
    print(f"aCGH recipes refitted on random label subsets: {args.seeds} pool/test splits x {args.subsets} subsets "
          f"per size; load {os.getloadavg()[0]:.1f}; {time.perf_counter() - t0:.0f} s")
    print(f"{'chromosomes':>11} {'recipe':<28} {'test error, mean':>17} {'spread over subsets (sd)':>25}")
    summary = {}
    for size in sizes:
        for name in RECIPES:
            by_seed = [[f["rates"][name] for f in fits if f["size"] == size and f["seed"] == s]
                       for s in range(args.seeds)]
            mean = float(np.mean([np.mean(v) for v in by_seed]))
            spread = float(np.mean([np.std(v) for v in by_seed]))
            summary[f"{size} {name}"] = {"mean": mean, "spread": spread}
            print(f"{size:>11} {name:<28} {100 * mean:>16.2f}% {100 * spread:>24.2f}")
    out = ROOT / "benchmarks" / "results" / "recipe_subset_spread.json"
    out.write_text(json.dumps({"fits": fits, "summary": summary}, indent=1))
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
