"""Does cutting long chromosomes into training windows cost accuracy? Exact vs windowed metric step.

The aCGH recipe learns its metric on windows of at most 6,000 probes cut around the labels of longer
chromosomes (:mod:`marginalia.cgh.training_windows`), to bound the cost of the loss-augmented decodings
of the metric step on long chromosomes. This benchmark measures what that approximation costs on the
labelled high-density chromosomes of ``profiles_all`` of at most ``--max-probes`` (default 30,000):
cross-validation split by profile, the same recipe trained with ``metric_window=6000`` (the default)
and with ``metric_window=None`` (whole chromosomes), label errors on the held-out profiles, and the fit
times.

Measured (3 folds, 70 chromosomes of 870-30,000 probes, 15 of them windowed, 286 labels): windows 75
test errors of 286 (per fold 33/17/25), exact 72 (27/21/24), the same within a fold's noise; the windowed
fits took 73 s against 161 s. (Before the partial-label decoder searched a tree of bounded starts, one
exact loss-augmented decoding of a 97,260-probe chromosome took 42 s; it now takes about 1 s.)

Usage: ``python -m benchmarks.speed.training_windows [--folds 3] [--max-probes 30000] [--data DIR]``
Writes ``benchmarks/results/training_windows.json``.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
import warnings

import numpy as np

from benchmarks._common import (
    ROOT,  # noqa: E402
    result_row,  # noqa: E402
)
from benchmarks.quality.quality_cgh import folds_by_profile, load  # noqa: E402
from marginalia.cgh.recipe import CghSegmenter, density_class  # noqa: E402
from marginalia.cgh.training_windows import MAX_WINDOW  # noqa: E402
from marginalia.metrics import RegionErrors, region_errors  # noqa: E402

RESULTS = ROOT / "benchmarks" / "results" / "training_windows.json"


def errors(recipe, items) -> tuple:
    """(label errors, labelled regions) of ``items`` under ``recipe``."""
    total = sum((region_errors(labels, recipe.segment(seq)) for seq, labels in items), RegionErrors())
    return total.errors, total.n_labels


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--data", default=str(ROOT.parent / "shared" / "data"))
    ap.add_argument("--folds", type=int, default=3)
    ap.add_argument("--max-probes", type=int, default=30_000)
    args = ap.parse_args(argv)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        items = [(s, y) for s, y in load(args.data, "all")
                 if density_class(s) == "high" and s.n_samples <= args.max_probes]
    long = sum(s.n_samples > MAX_WINDOW for s, _ in items)
    print(f"{len(items)} labelled high-density chromosomes of at most {args.max_probes} probes "
          f"({long} longer than {MAX_WINDOW}), {sum(len(y) for _, y in items)} labels, {args.folds} folds by profile")
    fold = folds_by_profile(items, args.folds)
    totals = {"windows": [0, 0, 0.0], "exact": [0, 0, 0.0]}
    for f in range(args.folds):
        train = [items[i] for i in np.flatnonzero(fold != f)]
        test = [items[i] for i in np.flatnonzero(fold == f)]
        line = []
        for name, window in (("windows", MAX_WINDOW), ("exact", None)):
            t0 = time.perf_counter()
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", UserWarning)
                recipe = CghSegmenter(prune=True, metric_window=window, min_class_sequences=4).fit(
                    [s for s, _ in train], [y for _, y in train])
            seconds = time.perf_counter() - t0
            wrong, n = errors(recipe, test)
            totals[name][0] += wrong
            totals[name][1] += n
            totals[name][2] += seconds
            line.append(f"{name} {wrong}/{n} errors, fit {seconds:.0f} s")
        print(f"fold {f + 1}: " + "; ".join(line), flush=True)
    rows = []
    for name, (wrong, n, seconds) in totals.items():
        print(f"{name:8s} {wrong}/{n} = {100 * wrong / n:.2f} % test error, fits {seconds:.0f} s in all")
        rows.append(result_row(f"test label error, metric on {name}", wrong / n, "fraction"))
        rows.append(result_row(f"fit time, metric on {name}", seconds, "s"))
    speed = totals["exact"][2] / totals["windows"][2]
    print(f"windowed fits {speed:.1f}x faster than exact ones")
    rows.append(result_row("fit speed-up of windows over the exact metric step", speed, "x", better="higher"))
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps(rows, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
