"""aCGH label error under nested cross-validation: every design choice made inside the training profiles.

``quality_cgh.py`` scores the recipe on one 5-fold split of the profiles, the split on which most of the recipe's
choices were once measured; a figure read there is partly fitted to it. This benchmark is the protocol a
claim rests on:

* **outer folds by profile**, repeated over several splits drawn with seeds that no earlier choice was measured
  on (default 100, 101, 102);
* **every choice inside the outer training profiles.** The recipe's own choices (each law's margin, ridge and
  metric, each pruner's candidates and threshold) are cross-validated inside :meth:`CghSegmenter.fit` on the
  training sequences alone. The design choices between recipes -- whether a learned metric and whether a change
  pruner pay for themselves -- are made here, per outer fold, by the fewest label errors over inner folds of that
  fold's training profiles (ties go to the simpler recipe); the chosen recipe is refitted on the whole outer
  training set and scored once on the outer test profiles;
* **both cohorts**: ``small`` (chromosomes of at most 5,000 probes) and ``all`` (adds the high-density arrays'
  chromosomes of up to 97,260 probes);
* figures per split (mean of the folds' error rates), then mean ± standard deviation over splits, per array
  platform too. Each fixed recipe's outer figures are printed beside the nested one: they describe the recipes,
  and choosing among them by reading that table would be the mistake this benchmark exists to avoid.

Usage: ``python -m benchmarks.quality.quality_cgh_nested [--cohort small|all] [--splits 100,101,102]
[--folds 5] [--inner-folds 4] [--jobs 1] [--quick]``. With ``--inner-folds 0`` no choice is made and only the
fixed recipes are scored (a fifth of the cost: what the ``all`` cohort's long chromosomes allow on 2 cores).
Writes ``benchmarks/results/quality_cgh_nested_<cohort>.json`` (every fold's errors per recipe and platform,
the inner choice and its inner errors) and prints the table.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import time
from pathlib import Path

import numpy as np

from benchmarks._common import ROOT, cgh_data_missing
from benchmarks.quality.quality_cgh import folds_by_profile, load
from marginalia.cgh.recipe import CghSegmenter, density_class
from marginalia.metrics import region_errors

#: the recipes compared, simplest first (a tie in the inner folds goes to the earlier one)
RECIPES = (
    "law (logratio)",             # per-platform penalty law on the plain logratio in noise units
    "law (logratio) + pruning",   # ... followed by the learned change pruner
    "law (auto metric)",          # each law on the learned metric or the logratio, by its own CV
    "recipe (shipped default)",   # ... followed by the pruner: CghSegmenter() as the CLI and the app fit it
)
PLATFORMS = ("low", "high")

_ITEMS: list = []


def _sum(a, b):
    return [x + y for x, y in zip(a, b)]


def recipe_errors(train, test, seed=0) -> dict:
    """Label errors of every recipe of :data:`RECIPES`, fitted on ``train`` and scored on ``test``.

    Parameters
    ----------
    train, test : list of (Sequence, list of Label)
        Labelled sequences; no profile in both.
    seed : int
        The SSVM's seed.

    Returns
    -------
    dict
        Recipe name -> platform (``"low"``, ``"high"``) -> ``[fp, fn, n_labels]``.

    The four recipes share their fits: one recipe with automatic law metrics and pruning gives the pruned
    and the unpruned segmentations (its laws do not depend on its pruners), one with logratio laws (the same
    metric kept, unused) gives the two others.
    """
    seqs, labs = [s for s, _ in train], [l for _, l in train]
    auto = CghSegmenter(random_state=seed).fit(seqs, labs)
    plain = CghSegmenter(random_state=seed, law_metric="logratio").fit(seqs, labs, previous=auto, metric="keep")
    out = {r: {p: [0, 0, 0] for p in PLATFORMS} for r in RECIPES}
    for s, y in test:
        p = density_class(s)
        for fitted, unpruned, pruned in ((plain, RECIPES[0], RECIPES[1]), (auto, RECIPES[2], RECIPES[3])):
            law = fitted.law_segment(s)
            for name, seg in ((unpruned, law), (pruned, fitted.pruned(s, law))):
                e = region_errors(y, seg)
                out[name][p] = _sum(out[name][p], [e.fp, e.fn, e.n_labels])
    return out


def _errors(by_platform: dict) -> int:
    return sum(v[0] + v[1] for v in by_platform.values())


def _labels(by_platform: dict) -> int:
    return sum(v[2] for v in by_platform.values())


def choose(inner: list) -> tuple:
    """The recipe with the fewest label errors summed over inner folds (the simplest on ties), and those sums."""
    totals = {r: sum(_errors(fold[r]) for fold in inner) for r in RECIPES}
    best = min(totals.values())
    return next(r for r in RECIPES if totals[r] == best), totals


def outer_fold(task) -> dict:
    """One outer fold of one split: inner choice, then every recipe's outer test errors."""
    split, fold_index, n_folds, n_inner = task
    items = _ITEMS
    fold = folds_by_profile(items, n_folds, seed=split)
    train = [items[i] for i in np.flatnonzero(fold != fold_index)]
    test = [items[i] for i in np.flatnonzero(fold == fold_index)]
    t0 = time.perf_counter()
    inner = []
    if n_inner:
        inner_fold = folds_by_profile(train, n_inner, seed=1000 * split + fold_index)
        for k in range(n_inner):
            tr = [train[i] for i in np.flatnonzero(inner_fold != k)]
            te = [train[i] for i in np.flatnonzero(inner_fold == k)]
            inner.append(recipe_errors(tr, te))
    chosen, inner_totals = choose(inner) if inner else (None, {})
    outer = recipe_errors(train, test)
    return {"split": split, "fold": fold_index, "chosen": chosen, "inner_errors": inner_totals,
            "inner_labels": sum(_labels(f[RECIPES[0]]) for f in inner), "outer": outer,
            "seconds": time.perf_counter() - t0}


def _init(items):
    global _ITEMS
    _ITEMS = items


def summarise(folds: list) -> dict:
    """Per recipe (and ``"nested"``): per split the mean of the folds' rates, overall and per platform."""
    splits = sorted({f["split"] for f in folds})
    rows = {}
    nested = ("nested",) if all(f["chosen"] for f in folds) else ()
    for name in nested + RECIPES:
        per_split = {p: [] for p in ("all",) + PLATFORMS}
        errors = {p: 0 for p in ("all",) + PLATFORMS}
        labels = {p: 0 for p in ("all",) + PLATFORMS}
        for s in splits:
            mine = [f for f in folds if f["split"] == s]
            rates = {p: [] for p in per_split}
            for f in mine:
                r = f["outer"][f["chosen"] if name == "nested" else name]
                for p in PLATFORMS:
                    e, n = r[p][0] + r[p][1], r[p][2]
                    errors[p] += e
                    labels[p] += n
                    if n:
                        rates[p].append(e / n)
                e, n = _errors(r), _labels(r)
                errors["all"] += e
                labels["all"] += n
                rates["all"].append(e / max(n, 1))
            for p in per_split:
                per_split[p].append(float(np.mean(rates[p])) if rates[p] else float("nan"))
        rows[name] = {"per_split": per_split, "errors": errors, "labels": labels}
    return rows


def print_table(rows: dict, folds: list, cohort: str, load_avg: str) -> None:
    splits = sorted({f["split"] for f in folds})
    n_folds = len({f["fold"] for f in folds})
    print(f"\naCGH label error, nested CV, cohort {cohort!r}: {n_folds} outer folds by profile x splits {splits}; "
          f"load {load_avg}")
    print("per split: mean of the outer folds' error rates; then mean ± sd over splits; errors / labels summed")
    head = f"{'recipe':<28} {'per split (%)':<24} {'mean ± sd':>14} {'errors':>11}"
    print(head + "".join(f" {p + '-density':>26}" for p in PLATFORMS))
    for name, r in rows.items():
        ps = r["per_split"]
        cells = " ".join(f"{100 * v:5.2f}" for v in ps["all"])
        a = np.array(ps["all"])
        line = (f"{name:<28} {cells:<24} {100 * a.mean():6.2f} ± {100 * a.std():4.2f} "
                f"{r['errors']['all']:>4d}/{r['labels']['all']:<5d}")
        for p in PLATFORMS:
            b = np.array(ps[p])
            line += f" {100 * np.nanmean(b):6.2f} ± {100 * np.nanstd(b):4.2f} ({r['errors'][p]:>3d}/{r['labels'][p]:<4d})"
        print(line)
    if "nested" not in rows:
        print("no inner folds (--inner-folds 0): fixed recipes only, no choice made")
        return
    counts = {}
    for f in folds:
        counts[f["chosen"]] = counts.get(f["chosen"], 0) + 1
    print("inner choices: " + ", ".join(f"{k}: {v} of {len(folds)} folds" for k, v in sorted(counts.items())))
    print("rows below 'nested' are fixed recipes, shown to describe them: choosing one by this table would fit "
          "the choice to these outer folds")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--cohort", choices=("small", "all"), default="small")
    ap.add_argument("--splits", default="100,101,102", help="seeds of the outer splits (comma-separated)")
    ap.add_argument("--folds", type=int, default=5)
    ap.add_argument("--inner-folds", type=int, default=4,
                    help="inner folds of the choice between recipes (0: no choice, the fixed recipes only)")
    ap.add_argument("--jobs", type=int, default=1, help="outer folds run in parallel processes")
    ap.add_argument("--quick", action="store_true", help="24 profiles, chromosomes of at most 1,500 probes")
    ap.add_argument("--data", default=str(ROOT.parent / "shared" / "data"))
    ap.add_argument("--out", default=None)
    args = ap.parse_args(argv)
    if cgh_data_missing(args.data):
        return 0
    items = load(args.data, args.cohort)
    if args.quick:
        profiles = sorted({s.meta["profile_id"] for s, _ in items}, key=str)
        keep = set(np.random.default_rng(1).choice(profiles, size=min(24, len(profiles)), replace=False))
        items = [it for it in items if it[0].meta["profile_id"] in keep and it[0].n_samples <= 1500]
    splits = [int(s) for s in args.splits.split(",") if s.strip()]
    print(f"{len(items)} labelled sequences ({sum(len(l) for _, l in items)} labels, "
          f"{sum(s.n_samples for s, _ in items):,} probes), {len({s.meta['profile_id'] for s, _ in items})} profiles",
          flush=True)
    tasks = [(s, f, args.folds, args.inner_folds) for s in splits for f in range(args.folds)]
    t0 = time.perf_counter()
    folds = []
    if args.jobs > 1:
        with multiprocessing.get_context("fork").Pool(args.jobs, initializer=_init, initargs=(items,)) as pool:
            for r in pool.imap_unordered(outer_fold, tasks):
                folds.append(r)
                _report(r)
    else:
        _init(items)
        for task in tasks:
            r = outer_fold(task)
            folds.append(r)
            _report(r)
    folds.sort(key=lambda f: (f["split"], f["fold"]))
    rows = summarise(folds)
    load_avg = "%.1f" % os.getloadavg()[0]
    print_table(rows, folds, args.cohort, load_avg)
    print(f"{time.perf_counter() - t0:.0f} s in all")
    out = Path(args.out or ROOT / "benchmarks" / "results" / f"quality_cgh_nested_{args.cohort}.json")
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps({"cohort": args.cohort, "splits": splits, "folds": folds, "summary": rows,
                               "recipes": RECIPES, "load": load_avg, "quick": args.quick}, indent=1))
    print(f"wrote {out}")
    return 0


def _report(r: dict) -> None:
    outer = ", ".join(f"{name}: {_errors(v)}" for name, v in r["outer"].items())
    inner = (f"chose {r['chosen']!r} (inner errors " + ", ".join(f"{v}" for v in r["inner_errors"].values())
             + f" of {r['inner_labels']}); ") if r["chosen"] else ""
    print(f"split {r['split']} fold {r['fold']}: {inner}outer errors {outer}; {r['seconds']:.0f} s", flush=True)


if __name__ == "__main__":
    raise SystemExit(main())
