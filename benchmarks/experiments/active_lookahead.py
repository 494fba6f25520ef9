"""Is the next batch best-vs-2nd asks for worth more than a random one? A paired, one-step look-ahead.

``benchmarks/quality/active.py`` compares whole learning curves, in which every refit also changes every later
question; the curves of two strategies then differ by chance as much as by their questions. This
benchmark isolates one step. For each seed: the pool/test split of ``benchmarks/quality/active.py``; ``k``
chromosomes of the pool labelled at random (k = 16, 24, 32, 40 by default); the replay's model
(:class:`benchmarks.research.recipe_adapter.RecipeAdapter`, the recipe refitted on those labels); then two batches of
``B`` more chromosomes, the next ``B`` of the random order, and the ``B`` unlabelled chromosomes with the
largest best-vs-2nd uncertainty under that model (what ``ActiveLoop`` asks with ``batch_size=B``).
Each batch is added to the same ``k`` labels, the recipe refitted, and its label error measured on the
test profiles. Reported: the mean test error before and after each batch, the paired difference
best-vs-2nd minus random (mean, spread, wins / losses) and the mean size of one batch's effect
|after - before| of the random batch, the scale a strategy's gain has to stand out against.

Usage: ``python -m benchmarks.experiments.active_lookahead [--seeds 5] [--labels 16,24,32,40] [--batch 8] [--data PATH]``
(about 2-3 minutes per seed on two cores). Writes ``benchmarks/results/active_lookahead.json``.
"""

from __future__ import annotations

import argparse
import pathlib
import time
import warnings

import numpy as np

from benchmarks._common import (  # noqa: E402
    ROOT,  # noqa: E402
    reference,
    result_row,
    write_rows,
)
from benchmarks.quality.active import load_cgh, split  # noqa: E402
from benchmarks.research.recipe_adapter import RecipeAdapter  # noqa: E402
from marginalia.active.parts import parts_for_items  # noqa: E402
from marginalia.active.uncertainty import uncertainty_from_scores  # noqa: E402

RESULTS = ROOT / "benchmarks" / "results"


def fitted_task(pool, by_item, labelled) -> RecipeAdapter:
    """The replay's model with the recipe refitted on the chromosomes ``labelled`` (names in ``pool``)."""
    task = RecipeAdapter()
    task.initialize(pool)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")     # small label sets warn about platforms without their own law
        task.refit([pool[n] for n in labelled], [by_item[n] for n in labelled])
    return task


def best_vs_2nd_batch(task, pool, labelled, size) -> list:
    """The ``size`` unlabelled chromosomes of largest best-vs-2nd uncertainty (ties: pool order)."""
    done = set(labelled)
    parts = [p for p in parts_for_items(pool) if p.item_id not in done]
    q = np.array([uncertainty_from_scores(task.part_scores(pool[p.item_id], p, []), "best-vs-2nd") for p in parts])
    return [parts[i].item_id for i in np.argsort(-q, kind="stable")[:size]]


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", type=int, default=5)
    ap.add_argument("--labels", default="16,24,32,40", help="labelled chromosomes before the batch (comma-separated)")
    ap.add_argument("--batch", type=int, default=8, help="chromosomes added by each strategy")
    ap.add_argument("--data", type=pathlib.Path, default=ROOT.parent / "shared" / "data")
    args = ap.parse_args(argv)
    ks = [int(k) for k in args.labels.split(",")]
    seqs, by_item, _ = load_cgh(args.data)
    X = {s.name: s for s in seqs}
    cases = []
    t0 = time.perf_counter()
    for seed in range(args.seeds):
        pool, test = split(seqs, by_item, X, seed)
        names = sorted(pool)
        order = [names[i] for i in np.random.default_rng(100 + seed).permutation(len(names))]
        for k in ks:
            labelled = order[:k]
            task = fitted_task(pool, by_item, labelled)
            before = task.evaluate(test)
            batches = {"random": order[k:k + args.batch],
                       "best-vs-2nd": best_vs_2nd_batch(task, pool, labelled, args.batch)}
            after = {s: fitted_task(pool, by_item, labelled + b).evaluate(test) for s, b in batches.items()}
            cases.append({"seed": seed, "labels": k, "before": before, "after": after})
            print(f"seed {seed}, {k} labels: {before:.1%} -> random {after['random']:.1%}, best-vs-2nd "
                  f"{after['best-vs-2nd']:.1%} ({time.perf_counter() - t0:.0f} s)", flush=True)
    before = np.array([c["before"] for c in cases])
    rnd = np.array([c["after"]["random"] for c in cases])
    bv2 = np.array([c["after"]["best-vs-2nd"] for c in cases])
    diff = bv2 - rnd
    print(f"\n{len(cases)} cases ({args.seeds} seeds x {len(ks)} label counts), batches of {args.batch}:")
    print(f"  test error before {before.mean():.2%}; after random {rnd.mean():.2%}, after best-vs-2nd {bv2.mean():.2%}")
    print(f"  best-vs-2nd - random: mean {diff.mean():+.2%} (sd {diff.std(ddof=1):.2%}); best-vs-2nd lower on "
          f"{int((diff < 0).sum())}, higher on {int((diff > 0).sum())}, equal on {int((diff == 0).sum())}")
    print(f"  one random batch moves the error by {np.abs(rnd - before).mean():.2%} on average "
          f"(mean change {np.mean(rnd - before):+.2%})")
    ref = reference("after a random batch", rnd.mean())
    rows = [result_row("aCGH look-ahead: test error after a best-vs-2nd batch", bv2.mean(), "fraction",
                       reference=ref, beat_reference=True),
            result_row("aCGH look-ahead: cases where best-vs-2nd's batch beats random's", float((diff < 0).mean()),
                       "fraction of cases", better="higher"),
            result_row("aCGH look-ahead: mean |change| of the error from one random batch",
                       float(np.abs(rnd - before).mean()), "fraction",
                       reference=reference("mean change", float(np.mean(rnd - before))))]
    write_rows(RESULTS / "active_lookahead.json",
               {"seeds": args.seeds, "labels": ks, "batch": args.batch, "cases": cases, "rows": rows})


if __name__ == "__main__":
    main()
