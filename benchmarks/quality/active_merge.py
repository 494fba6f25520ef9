"""Merge the per-run learning curves of several ``benchmarks/quality/active.py`` runs (e.g. seed blocks run apart).

Usage: ``python -m benchmarks.quality.active_merge CURVES.json [CURVES.json ...]``

Each file is a ``*_curves.json`` written by ``benchmarks/quality/active.py``; its ``runs`` hold every run's raw
curve. The runs of all files are put on the same 0.5 % grid, averaged per strategy, and the fraction of
the pool where each mean curve first comes within 10 % (relative) of the mean full-label error is
printed, with the ratio random / best-vs-2nd -- the same figures ``active.py`` prints for one run.
"""

from __future__ import annotations

import argparse
import json

import numpy as np


def main(paths) -> None:
    grid = np.round(np.arange(0.0, 0.5 + 1e-9, 0.005), 6)
    runs = []
    for path in paths:
        runs += json.load(open(path))["runs"]
    seeds = sorted({r["seed"] for r in runs})
    full = {r["seed"]: r["full_label_error"] for r in runs}
    level = 1.1 * float(np.mean([full[s] for s in seeds]))
    reach = {}
    at20 = int(np.argmin(np.abs(grid - 0.2)))
    for strategy in sorted({r["strategy"] for r in runs}):
        curves = np.array([np.interp(grid, r["fraction"], r["error"]) for r in runs if r["strategy"] == strategy])
        mean = curves.mean(axis=0)
        hit = np.flatnonzero(mean <= level + 1e-12)
        reach[strategy] = None if hit.size == 0 else float(grid[hit[0]])
        print(f"{strategy:>12}: {len(curves)} runs, within 10 % of the full-label error at {reach[strategy]} of "
              f"the pool; error at 20 %: {mean[at20]:.3f} ± {curves[:, at20].std():.3f}")
    print(f"seeds {seeds[0]}..{seeds[-1]} ({len(seeds)}), mean full-label error {level / 1.1:.3f}")
    r, b = reach.get("random"), reach.get("best-vs-2nd")
    if r and b:
        print(f"labels needed random / best-vs-2nd: {r / b:.2f}")


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("curves", nargs="+", metavar="CURVES.json", help="*_curves.json files written by active.py")
    main(ap.parse_args().curves)
