"""Transfer between aCGH platforms as users meet it: the full recipe (issue #4, Lou et al. eq. 1.9).

The recipe (:class:`~marginalia.cgh.recipe.CghSegmenter`: SSVM metric on point-wise Hermite features,
per-sequence penalty law and change pruner per platform) is trained on

1. ``target-only``: the revealed high-density (oligo) sequences alone;
2. ``union``: every labelled low-density (BAC) sequence + the revealed target, one metric shared by the
   platforms (``learner="ssvm"``);
3. ``transfer rho=R``: the same items, one metric per platform coupled by ``rho`` (``learner="transfer"``,
   :class:`~marginalia.learners.transfer.TransferSSVM`; 1 is the recipe's default, fixed before the run).

In 2 and 3 the high-density penalty law and pruner are learned on the revealed target sequences only
(``min_class_sequences=2``, ``min_class_profiles=1``); ``union, pooled law`` keeps the recipe's default (a
platform with fewer than 4 labelled sequences, or with sequences of fewer than 4 profiles, uses the law of all
sequences, i.e. mostly the source's, with a pruner of its own; same for ``transfer rho=R, pooled law``). Splits
and reveal order are those of ``benchmarks/experiments/transfer_cgh.py`` (by profile, nested fractions, same seeds). Scored on the
target-test labelled regions: label error = (FP + FN) / labelled regions, mean ± sd over splits, and the
per-split paired difference to target-only (points). No setting is chosen on the test splits.

Usage: ``python -m benchmarks.quality.transfer_recipe_cgh [--quick] [--data DIR] [--splits 6] [--fractions 0.1,0.2,0.5]
[--rhos 1] [--max-iter 5] [--out FILE]``. Writes ``benchmarks/results/transfer_recipe_cgh.json`` (or ``--out``).
"""

from __future__ import annotations

import argparse
import os
import sys
import time
import warnings
from pathlib import Path

import numpy as np

from benchmarks._common import (  # noqa: E402
    ROOT,  # noqa: E402
    cgh_data_missing,  # noqa: E402
    reference,
    result_row,
    save_rows,
)
from benchmarks.experiments.transfer_cgh import (  # noqa: E402
    paired,
    parse_fractions,
    parse_rhos,
    platforms,
    print_ratios,
    ratio,
    revealed,
    tally,
    target_splits,
    wins_ties_losses,
)
from benchmarks.quality.quality_cgh import load, model_errors_of  # noqa: E402
from marginalia.cgh.recipe import CghSegmenter  # noqa: E402

HEADLINE_FRACTION = 0.2
RECIPE = "recipe"     # the treatment key of the error table shared with transfer_cgh.paired


def methods(rhos):
    """Method name → (CghSegmenter parameters, uses the source)."""
    own_law = {"min_class_sequences": 2, "min_class_profiles": 1}    # the target's law from 2 chromosomes
    out = {"target-only": ({}, False),
           "union": ({"learner": "ssvm", **own_law}, True),
           "union, pooled law": ({"learner": "ssvm"}, True)}
    for r in rhos:
        out[f"transfer rho={r:g}"] = ({"learner": "transfer", "rho": r, **own_law}, True)
        out[f"transfer rho={r:g}, pooled law"] = ({"learner": "transfer", "rho": r}, True)
    return out


def run(args):
    source, target = platforms(load(args.data))
    print(f"source: {len(source)} low-density sequences; target: {len(target)} high-density sequences of "
          f"{len({s.meta['profile_id'] for s, _ in target})} profiles", flush=True)
    meths = methods(args.rhos)
    errs, cpu, wall, fpfn = {}, {}, {}, {}
    for si, (pool, test) in enumerate(target_splits(target, args.splits)):
        te = [target[i] for i in test]
        for frac in args.fractions:
            rv = [target[i] for i in revealed(pool, frac)]
            for m, (params, with_source) in meths.items():
                tr = (source + rv) if with_source else rv
                t0, c0 = time.perf_counter(), time.process_time()
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    seg = CghSegmenter(prune=True, max_iter=args.max_iter, **params).fit(
                        [s for s, _ in tr], [l for _, l in tr])
                cpu.setdefault((frac, m), []).append(time.process_time() - c0)
                wall.setdefault((frac, m), []).append(time.perf_counter() - t0)
                tally(errs, fpfn, (frac, m, RECIPE), *model_errors_of(seg, te))
            line = ", ".join(f"{m} {100 * errs[(frac, m, RECIPE)][-1]:.1f}%" for m in meths)
            print(f"split {si + 1}/{args.splits}, {100 * frac:.0f}% revealed ({len(rv)} of {len(pool)} pool sequences, "
                  f"{len(te)} test): {line}  [{time.process_time():.0f}s CPU so far]", flush=True)
    return list(meths), errs, cpu, wall, fpfn


def report(args, meths, errs, cpu, wall, fpfn, load_avg):
    print(f"\nRecipe (metric + per-platform law + pruner), target-test label error, {args.splits} splits by profile; "
          f"SSVM passes {args.max_iter}; load at start {load_avg}")
    print(f"{'revealed':>8} {'method':<22} {'error':>16} {'FP':>4} {'FN':>4} {'- target-only (pts)':>20} "
          f"{'wins/ties/losses':>16} {'wall s':>7} {'CPU s':>7}")
    out = []
    for frac in args.fractions:
        tag = f"{100 * frac:.0f} %"
        base = float(np.mean(errs[(frac, "target-only", RECIPE)]))
        for m in meths:
            e = np.array(errs[(frac, m, RECIPE)])
            fp, fn, n = fpfn[(frac, m, RECIPE)]
            dm, ds = paired(errs, frac, m, RECIPE)
            wtl = wins_ties_losses(e - np.array(errs[(frac, "target-only", RECIPE)]))
            print(f"{100 * frac:>7.0f}% {m:<22} {100 * e.mean():>7.2f} ± {100 * e.std():<5.2f}% {fp:>4d} {fn:>4d} "
                  f"{dm:>+9.2f} ± {ds:<8.2f} {wtl:>16} {np.mean(wall[(frac, m)]):>7.1f} {np.mean(cpu[(frac, m)]):>7.1f}")
            ref = None if m == "target-only" else reference("recipe target-only error %", 100 * base)
            r = result_row(f"recipe target-test label error, {m}, {tag} revealed", 100 * float(e.mean()), "%",
                           better="lower", reference=ref)
            r.update(sd=100 * float(e.std()), per_split=[100 * float(x) for x in e],
                     train_cpu_s=float(np.mean(cpu[(frac, m)])))
            if m != "target-only":
                r["minus_target_only_mean_sd"] = [dm, ds]
                rr = result_row(f"recipe {m} / target-only error ratio at {tag}", ratio(float(e.mean()), base), "ratio",
                                target=1.0 if frac == HEADLINE_FRACTION else None, better="lower",
                                reference=reference("recipe target-only error %", 100 * base))
                rr["minus_target_only_mean_sd"] = [dm, ds]
                out.append(rr)
            out.append(r)
        print()
    print_ratios(out, 58)
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="1 split, 20 %% revealed")
    ap.add_argument("--data", default=str(ROOT.parent / "shared" / "data"))
    ap.add_argument("--splits", type=int, default=None, help="random splits by profile (default 6; quick 1)")
    ap.add_argument("--fractions", default=None, help="revealed fractions of the target pool (default 0.1,0.2,0.5)")
    ap.add_argument("--rhos", default="1", help="couplings of the transfer rows (default 1, the recipe's)")
    ap.add_argument("--max-iter", type=int, default=5, help="SSVM passes (default 5, the recipe's)")
    ap.add_argument("--out", default=None, help="results file (default benchmarks/results/transfer_recipe_cgh.json)")
    args = ap.parse_args(argv)
    args.splits = args.splits or (1 if args.quick else 6)
    args.fractions = parse_fractions(args.fractions, args.quick)
    args.rhos = parse_rhos(args.rhos)
    if args.splits < 1 or any(not 0 < f <= 1 for f in args.fractions) or any(r < 0 for r in args.rhos):
        ap.error(f"expected --splits >= 1, fractions in (0, 1], rhos >= 0; got {args.splits}, {args.fractions}, "
                 f"{args.rhos}")
    if cgh_data_missing(args.data):
        return 1
    load_avg = "%.2f %.2f %.2f" % os.getloadavg()
    t0, c0 = time.perf_counter(), time.process_time()
    meths, errs, cpu, wall, fpfn = run(args)
    out = report(args, meths, errs, cpu, wall, fpfn, load_avg)
    print(f"total {time.perf_counter() - t0:.0f}s wall, {time.process_time() - c0:.0f}s CPU; "
          f"load at end {'%.2f %.2f %.2f' % os.getloadavg()}")
    save_rows(Path(args.out) if args.out else ROOT / "benchmarks" / "results" / "transfer_recipe_cgh.json", out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
