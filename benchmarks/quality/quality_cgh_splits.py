"""aCGH quality over several cross-validation splits: how much of a figure is the split's luck.

``benchmarks/quality/quality_cgh.py`` scores everything on one split of the profiles into 5 folds
(``folds_by_profile(..., seed=0)``). This script repeats the protocol on other splits (same cohort,
same folds function, other seeds) for the references and for the recipe with the CLI's defaults
(``CghSegmenter(prune=True)``), optionally with several SSVM seeds, and prints per split the mean of
the folds' error rates and the summed label errors, then the mean and spread over splits. Each fold's line
also names every pruner's candidate set (the law's changes or their union with an over-segmentation's) with the
cross-validated errors that chose it.

Usage: ``python -m benchmarks.quality.quality_cgh_splits [--splits 0,1,2] [--ssvm-seeds 0] [--jobs 2] [--data DIR]``
Writes ``benchmarks/results/quality_cgh_splits.json``.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import sys
import time
from pathlib import Path

import numpy as np

from benchmarks._common import ROOT  # noqa: E402
from benchmarks.quality.quality_cgh import (  # noqa: E402
    PathTable,
    folds_by_profile,
    load,
    model_errors_of,
    score_log_penalties,
    tune_constant,
)
from marginalia.cgh.penalty_regression import PenaltyIntervalRegression  # noqa: E402
from marginalia.cgh.recipe import CghSegmenter  # noqa: E402

N_FOLDS = 5
RECIPE = "recipe (CLI default: metric + penalty law + pruning)"
_ITEMS: list = []


def _recipe_fold(task):
    """Test ``(fp, fn, n)`` of the recipe on one fold of one split, with one SSVM seed."""
    split, ssvm_seed, f = task
    fold = folds_by_profile(_ITEMS, N_FOLDS, seed=split)
    tr = [_ITEMS[i] for i in np.flatnonzero(fold != f)]
    te = [_ITEMS[i] for i in np.flatnonzero(fold == f)]
    t = time.perf_counter()
    seg = CghSegmenter(max_iter=5, prune=True, random_state=ssvm_seed).fit([s for s, _ in tr], [l for _, l in tr])
    return task, model_errors_of(seg, te), time.perf_counter() - t, _candidate_choices(seg)


def _candidate_choices(seg) -> dict:
    """Each pruner's candidate set and, where compared, the cross-validated errors of both sets."""
    cv = getattr(seg, "pruner_cv_errors_", {})
    return {k: {"candidates": mode, "cv_errors": {m: int(v) for m, v in cv.get(k, {}).items()}}
            for k, mode in sorted(getattr(seg, "pruner_candidates_", {}).items())}


def _choices_text(choices) -> str:
    parts = []
    for k, c in choices.items():
        cv = c["cv_errors"]
        parts.append(f"{k} {c['candidates']}" + (f" (CV law {cv['law']} / union {cv['union']})" if len(cv) == 2 else ""))
    return "; ".join(parts)


def _reference_rows(table, fold) -> dict:
    rows = {"tuned penalty (reference)": [], "interval regression (reference)": [], "per-sequence best penalty "
            "(oracle bound)": []}
    for f in range(N_FOLDS):
        tr, te = np.flatnonzero(fold != f), np.flatnonzero(fold == f)
        c = tune_constant(table, tr)
        rows["tuned penalty (reference)"].append(
            score_log_penalties(table, te, table.feats[te, 1] + table.feats[te, 0] + c))
        reg = PenaltyIntervalRegression(alpha=1e-2, margin=0.5).fit(table.feats[tr], table.intervals[tr])
        rows["interval regression (reference)"].append(score_log_penalties(table, te, reg.predict(table.feats[te])))
        fp = fn = n = 0
        for i in te:
            a, b = table.oracle(i)
            fp, fn, n = fp + a, fn + b, n + table.n[i]
        rows["per-sequence best penalty (oracle bound)"].append((fp, fn, n))
    return rows


def _summary(per_fold) -> dict:
    """Mean of the folds' error rates and summed errors of a list of per-fold ``(fp, fn, n)``."""
    rates = [(fp + fn) / max(n, 1) for fp, fn, n in per_fold]
    return {"error": float(np.mean(rates)), "errors": int(sum(fp + fn for fp, fn, _ in per_fold)),
            "fp": int(sum(p[0] for p in per_fold)), "fn": int(sum(p[1] for p in per_fold)),
            "labels": int(sum(p[2] for p in per_fold))}


def run(args) -> tuple:
    """The rows ``{method: {split key: summary}}`` and each fold's candidate choices (:func:`_candidate_choices`)."""
    global _ITEMS
    _ITEMS = load(args.data)
    splits = [int(s) for s in args.splits.split(",")]
    seeds = [int(s) for s in args.ssvm_seeds.split(",")]
    t0 = time.perf_counter()
    table = PathTable(_ITEMS)
    print(f"{len(_ITEMS)} sequences, {sum(len(l) for _, l in _ITEMS)} labels; penalty paths in "
          f"{time.perf_counter() - t0:.0f}s", flush=True)
    out: dict = {}
    for split in splits:
        for name, per_fold in _reference_rows(table, folds_by_profile(_ITEMS, N_FOLDS, seed=split)).items():
            out.setdefault(name, {})[f"split {split}"] = _summary(per_fold)
    tasks = [(split, seed, f) for split in splits for seed in seeds for f in range(N_FOLDS)]
    done: dict = {}
    choices: dict = {}
    with multiprocessing.get_context("fork").Pool(args.jobs) as pool:
        for task, counts, secs, chosen in pool.imap_unordered(_recipe_fold, tasks):
            done[task] = counts
            choices[f"split {task[0]} seed {task[1]} fold {task[2]}"] = chosen
            # the law-vs-union choice is what moves most between splits and seeds (docs/research/)
            print(f"  split {task[0]} SSVM seed {task[1]} fold {task[2]}: {sum(counts[:2])} errors of {counts[2]} "
                  f"({secs:.0f}s); candidates {_choices_text(chosen)}", flush=True)
    for split in splits:
        for seed in seeds:
            key = f"split {split}" + (f" seed {seed}" if len(seeds) > 1 else "")
            out.setdefault(RECIPE, {})[key] = _summary([done[(split, seed, f)] for f in range(N_FOLDS)])
    print(f"\n{'method':52s} " + " ".join(f"{k:>16s}" for k in out[RECIPE]) + "   mean ± sd (errors)")
    for name, by in out.items():
        cells = []
        for k in out[RECIPE]:
            r = by.get(k) or by.get(k.split(" seed")[0])
            cells.append(f"{100 * r['error']:6.2f} % ({r['errors']:3d})")
        rates = [100 * r["error"] for r in by.values()]
        errs = [r["errors"] for r in by.values()]
        print(f"{name:52s} " + " ".join(f"{c:>16s}" for c in cells) +
              f"   {np.mean(rates):.2f} ± {np.std(rates):.2f} % ({np.mean(errs):.1f})")
    return out, choices


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--splits", default="0,1,2", help="seeds of folds_by_profile (0 is quality_cgh.py's split)")
    ap.add_argument("--ssvm-seeds", default="0", help="random_state of the recipe's SSVM")
    ap.add_argument("--jobs", type=int, default=2, help="processes fitting folds in parallel")
    ap.add_argument("--data", default=str(ROOT.parent / "shared" / "data"))
    ap.add_argument("--out", default=str(ROOT / "benchmarks" / "results" / "quality_cgh_splits.json"))
    args = ap.parse_args(argv)
    out, choices = run(args)
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps({"splits": args.splits, "ssvm_seeds": args.ssvm_seeds, "rows": out,
                                          "candidate_choices": choices}, indent=1))
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
