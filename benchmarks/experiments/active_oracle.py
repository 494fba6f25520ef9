"""How low could a question order take the recipe's learning curve? A greedy look-ahead that knows the answers.

``benchmarks/quality/active.py`` compares best-vs-2nd with random questions; neither reaches the full-label
error within 10 % by 20 % of the pool. This benchmark asks whether any order of questions could, with
the same refits. For each seed (the pool/test split of ``benchmarks/quality/active.py``) the replay starts from
the first ``B`` chromosomes of a random order, then grows the label set greedily: at each step it
refits the recipe (:class:`benchmarks.research.recipe_adapter.RecipeAdapter`) on each of ``K`` candidate batches of
``B`` unlabelled chromosomes -- random's next ``B`` of its order, best-vs-2nd's ``B`` most uncertain, and
``K - 2`` more random draws -- and keeps the batch whose refit makes the fewest label errors on the rest
of the pool (the pool chromosomes that are neither labelled nor in any candidate batch: their expert
labels are known to the replay, never to a real strategy). The kept batch's test error is then an
optimistic bound for strategies choosing among such batches; random's and best-vs-2nd's candidates give a
paired comparison at every step.

Usage: ``python -m benchmarks.experiments.active_oracle [--seeds 5] [--first-seed 0] [--steps 4] [--batch 8]
[--candidates 6] [--data PATH]`` (6-15 minutes per seed on two cores). Writes
``benchmarks/results/active_oracle[_S<first seed>].json``; the full-label error of each split is measured too.
``--merge A.json B.json`` prints the table of runs made in separate processes together.
"""

from __future__ import annotations

import argparse
import json
import pathlib
import time

import numpy as np

from benchmarks._common import (  # noqa: E402
    ROOT,  # noqa: E402
    reference,
    result_row,
    write_rows,
)
from benchmarks.experiments.active_lookahead import best_vs_2nd_batch, fitted_task  # noqa: E402
from benchmarks.quality.active import load_cgh, split  # noqa: E402

RESULTS = ROOT / "benchmarks" / "results"


def candidate_batches(order, labelled, task, pool, size, n_candidates, rng) -> dict:
    """``{name: chromosomes}``: random's next ``size`` of ``order``, best-vs-2nd's, and extra random draws."""
    done = set(labelled)
    batches = {"random": [n for n in order if n not in done][:size],
               "best-vs-2nd": best_vs_2nd_batch(task, pool, labelled, size)}
    rest = sorted(n for n in pool if n not in done)
    for j in range(n_candidates - len(batches)):
        batches[f"draw {j}"] = [rest[i] for i in rng.choice(len(rest), size=size, replace=False)]
    return batches


def run_seed(seed, seqs, by_item, X, steps, size, n_candidates) -> dict:
    pool, test = split(seqs, by_item, X, seed)
    names = sorted(pool)
    order = [names[i] for i in np.random.default_rng(100 + seed).permutation(len(names))]
    rng = np.random.default_rng(200 + seed)
    full = fitted_task(pool, by_item, names).evaluate(test)
    labelled = order[:size]
    task = fitted_task(pool, by_item, labelled)
    path = [{"labels": len(labelled), "test": task.evaluate(test)}]
    for _ in range(steps):
        batches = candidate_batches(order, labelled, task, pool, size, n_candidates, rng)
        seen = set(labelled).union(*map(set, batches.values()))
        judge = [(pool[n], by_item[n]) for n in names if n not in seen]
        fits = {b: fitted_task(pool, by_item, labelled + chosen) for b, chosen in batches.items()}
        judged = {b: t.evaluate(judge) for b, t in fits.items()}
        tested = {b: t.evaluate(test) for b, t in fits.items()}
        best = min(judged, key=lambda b: (judged[b], b != "random"))
        labelled = labelled + batches[best]
        task = fits[best]
        path.append({"labels": len(labelled), "test": tested[best], "kept": best, "judge_size": len(judge),
                     "candidates_test": tested, "candidates_judge": judged})
    return {"seed": seed, "pool": len(pool), "full_label": full, "path": path}


def summarize(runs, steps) -> list:
    """Print the mean test errors per step over ``runs`` and return the result rows."""
    full = np.mean([r["full_label"] for r in runs])
    print(f"\n{len(runs)} seeds, full-label test error {full:.2%} (within 10 %: {1.1 * full:.2%})")
    print("labels (share of pool) | greedy path | random's batch | best-vs-2nd's batch | best candidate on test")
    rows = []
    for s in range(1, steps + 1):
        at = [r["path"][s] for r in runs]
        k = at[0]["labels"]
        share = k / np.mean([r["pool"] for r in runs])
        greedy = np.mean([p["test"] for p in at])
        rnd = np.mean([p["candidates_test"]["random"] for p in at])
        bv2 = np.mean([p["candidates_test"]["best-vs-2nd"] for p in at])
        best_test = np.mean([min(p["candidates_test"].values()) for p in at])
        print(f"  {k:>3} ({share:5.1%}) | {greedy:6.2%} | {rnd:6.2%} | {bv2:6.2%} | {best_test:6.2%}")
        rows.append(result_row(f"aCGH greedy look-ahead that knows the pool's labels: test error at {k} labels "
                               f"({share:.0%} of the pool)", greedy, "fraction",
                               reference=reference("full-label error", full)))
    return rows


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", type=int, default=5)
    ap.add_argument("--first-seed", type=int, default=0)
    ap.add_argument("--steps", type=int, default=4, help="greedy batches after the random start")
    ap.add_argument("--batch", type=int, default=8, help="chromosomes per batch")
    ap.add_argument("--candidates", type=int, default=6, help="batches compared at each step (at least 2)")
    ap.add_argument("--data", type=pathlib.Path, default=ROOT.parent / "shared" / "data")
    ap.add_argument("--merge", nargs="+", type=pathlib.Path, metavar="JSON",
                    help="print the table of earlier runs' result files together (seeds run in separate processes)")
    args = ap.parse_args(argv)
    if args.merge:
        runs = [r for f in args.merge for r in json.loads(f.read_text())["runs"]]
        summarize(runs, min(len(r["path"]) for r in runs) - 1)
        return
    if args.candidates < 2:
        ap.error("--candidates: at least 2 (random's and best-vs-2nd's batches)")
    seqs, by_item, _ = load_cgh(args.data)
    X = {s.name: s for s in seqs}
    runs = []
    t0 = time.perf_counter()
    for seed in range(args.first_seed, args.first_seed + args.seeds):
        run = run_seed(seed, seqs, by_item, X, args.steps, args.batch, args.candidates)
        runs.append(run)
        steps = ", ".join(f"{p['labels']}: {p['test']:.1%}" + (f" ({p['kept']})" if "kept" in p else "")
                          for p in run["path"])
        print(f"seed {seed} (pool {run['pool']}, full-label {run['full_label']:.1%}): {steps} "
              f"({time.perf_counter() - t0:.0f} s)", flush=True)
    rows = summarize(runs, args.steps)
    write_rows(RESULTS / f"active_oracle{'' if args.first_seed == 0 else f'_S{args.first_seed}'}.json",
               {"seeds": list(range(args.first_seed, args.first_seed + args.seeds)), "batch": args.batch,
                "candidates": args.candidates, "runs": runs, "rows": rows})


if __name__ == "__main__":
    main()
