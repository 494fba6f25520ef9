"""Region questions against chromosome questions: labels each needs to reach random's error at 40 % of the pool.

A chromosome question (``benchmarks/quality/active.py``) reveals every expert label of the chromosome asked
about (2.9 region labels on average in ``small``). A region question is what the app asks on copy number
(:func:`marginalia.active.questions.segmentation_question`): under the current model, the part's best
segmentation and its count runner-up (:func:`marginalia.active.segmentation_adapter.segmentation_part_pair`,
decoded under the chromosome's labels so far) disagree on one place, and the annotator says whether that place
holds a change. The replay's oracle knows only the experts' region labels, so it answers a region question
with the one expert label whose region holds every change the two segmentations do not share (the unit an
expert gives: one region, "0 changes" or "exactly 1"). When no unrevealed expert label holds them, the
question is unanswerable: it is counted and the replay moves on to the next-closest call (the next
chromosome in margin order). A chromosome that got an answer is asked again only after every other
chromosome has been tried in that batch, so one batch spreads over chromosomes as the app's queue does.

Strategies (every one starts from the same labels: the first chromosomes of a seeded random order holding
``fractions[0]`` of random's labels at 40 % of the pool, and the same refit):

* ``random``: whole chromosomes in that random order (the reference);
* ``best-vs-2nd``: whole unlabelled chromosomes in increasing best-vs-2nd margin (what ``ActiveLoop`` asks);
* ``best-vs-2nd regions``: one region label per question, as above;
* ``random regions``: expert region labels of the pool drawn one at a time in a seeded random order (the same
  unit as region questions without their order).

The learner is the replay's (:class:`benchmarks.research.recipe_adapter.RecipeAdapter`: the app's aCGH recipe),
refitted only at the checkpoints: at ``f * L40`` labels for each ``f`` of ``--fractions``, where ``L40`` is the
number of expert labels random holds at 40 % of the pool. Between checkpoints a strategy chooses its questions
from the last refit (batches of about ``L40 / 6`` labels with the default fractions; the app refits every 8
answers, so these questions are less adaptive than the app's). A chromosome strategy stops adding chromosomes
once the label count reaches the checkpoint, so it may hold a few labels more (reported). The level is random's
test error at 40 % of the pool (its last checkpoint); "labels needed" is the label count at the first checkpoint
where a strategy's test error is at most that level (censored above ``L40`` when it never is). Ratios are per
seed (paired: same split, same start), with a bootstrap over seeds for their mean.

Usage: ``python -m benchmarks.experiments.active_regions [--seeds 10] [--first-seed 0]
[--fractions 0.17,0.33,0.5,0.667,0.83,1.0] [--strategies ...] [--out JSON] [--data PATH]``. Writes
``benchmarks/results/active_regions[_S<first seed>].json`` (or ``--out``) after every seed; ``--merge A.json B.json``
prints the summary of runs made in separate processes together (other seeds, or other strategies of the same seeds).
"""

from __future__ import annotations

import argparse
import json
import os
import pathlib
import time
import warnings

import numpy as np

from benchmarks._common import ROOT
from benchmarks.quality.active import load_cgh, split
from benchmarks.research.recipe_adapter import RecipeAdapter
from marginalia.active.parts import Part
from marginalia.active.segmentation_adapter import segmentation_part_pair

RESULTS = ROOT / "benchmarks" / "results"
STRATEGIES = ("random", "best-vs-2nd", "best-vs-2nd regions", "random regions")


def fitted(pool, labels: dict) -> RecipeAdapter:
    """The replay's model refitted on ``labels`` (``{chromosome: [RegionLabel]}``), in sorted order."""
    task = RecipeAdapter()
    task.initialize(pool)
    names = sorted(n for n in labels if labels[n])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # small label sets warn about platforms without their own law
        task.refit([pool[n] for n in names], [sorted(labels[n], key=lambda lab: lab.start) for n in names])
    return task


def pair(task: RecipeAdapter, data, labels) -> tuple:
    """``(best changes, runner-up changes or None, margin)`` of a whole chromosome under the task's ``w_``."""
    T = task.features_of(data).shape[0]
    part = Part("x", 0, T)
    return segmentation_part_pair(task.model, task.item_w(data, task.w_), task.features_of(data), part,
                                  list(labels))


def covering_label(expert, revealed, differ):
    """The unrevealed expert label whose region holds every change in ``differ`` (``start < c < stop``), or None."""
    for lab in expert:
        if lab in revealed:
            continue
        if all(lab.start < c < lab.stop for c in differ):
            return lab
    return None


def _holds(label, changes) -> bool:
    n = sum(1 for c in changes if label.start < c < label.stop)
    lo, hi = label.kind.bounds
    return n >= lo and (hi is None or n <= hi)


def n_labels(labels: dict) -> int:
    return sum(len(v) for v in labels.values())


def add_chromosomes(labels, ranked, by_item, target) -> None:
    """Reveal whole chromosomes of ``ranked`` (skipping labelled ones) until ``target`` labels are held."""
    for n in ranked:
        if n_labels(labels) >= target:
            return
        if not labels.get(n):
            labels[n] = list(by_item[n])


def add_regions(task, pool, labels, by_item, target, stats) -> None:
    """Best-vs-2nd region questions under ``task`` until ``target`` labels are held (see the module docstring)."""
    cache = {}
    unanswerable = set()

    def scored(n):
        key = tuple(sorted((lab.start, lab.stop) for lab in labels.get(n, [])))
        if cache.get(n, (None,))[0] != key:
            cache[n] = (key, pair(task, pool[n], labels.get(n, [])))
        return cache[n][1]

    while n_labels(labels) < target:
        asked, progress = set(), False      # one pass: each chromosome asked at most once
        while n_labels(labels) < target:
            lab = None
            for n in sorted((n for n in pool if n not in asked), key=lambda n: (scored(n)[2], n)):
                asked.add(n)
                best, runner, margin = scored(n)
                if runner is None or not np.isfinite(margin):
                    continue
                differ = frozenset(set(best.tolist()) ^ set(runner.tolist()))
                if (n, differ) in unanswerable:
                    continue
                lab = covering_label(by_item[n], labels.get(n, []), differ)
                if lab is None:
                    unanswerable.add((n, differ))
                    stats["unanswerable"] += 1
                    continue
                stats["answered"] += 1
                stats["agrees_best"] += int(_holds(lab, best))
                stats["agrees_runner"] += int(_holds(lab, runner))
                labels.setdefault(n, []).append(lab)
                break
            if lab is None:
                break
            progress = True
        if not progress:
            stats["stuck"] += 1     # no chromosome has an answerable question left under this model
            return


def add_random_regions(labels, draw, target) -> None:
    """Reveal expert labels in the order ``draw`` (``[(chromosome, label)]``) until ``target`` are held."""
    for n, lab in draw:
        if n_labels(labels) >= target:
            return
        held = labels.setdefault(n, [])
        if lab not in held:
            held.append(lab)


def run_seed(seed, seqs, by_item, X, fractions, strategies) -> dict:
    pool, test = split(seqs, by_item, X, seed)
    names = sorted(pool)
    order = [names[i] for i in np.random.default_rng(100 + seed).permutation(len(names))]
    n40 = int(round(0.4 * len(names)))
    L40 = sum(len(by_item[n]) for n in order[:n40])
    targets = [int(round(f * L40)) for f in fractions]
    draw_all = [(n, lab) for n in names for lab in by_item[n]]
    draw = [draw_all[i] for i in np.random.default_rng(300 + seed).permutation(len(draw_all))]
    start: dict = {}
    add_chromosomes(start, order, by_item, targets[0])
    t0 = time.perf_counter()
    task0 = fitted(pool, start)
    first = {"target": targets[0], "labels": n_labels(start), "chromosomes": len(start),
             "error": task0.evaluate(test)}
    out = {"seed": seed, "pool_chromosomes": len(names), "pool_labels": len(draw_all), "n40": n40, "L40": L40,
           "targets": targets, "paths": {}}
    for s in strategies:
        labels = {n: list(v) for n, v in start.items()}
        task = task0
        path = [dict(first)]
        stats = {"answered": 0, "unanswerable": 0, "agrees_best": 0, "agrees_runner": 0, "stuck": 0}
        for t in targets[1:]:
            if s == "random":
                add_chromosomes(labels, order, by_item, t)
            elif s == "best-vs-2nd":
                open_ = [n for n in names if not labels.get(n)]
                add_chromosomes(labels, sorted(open_, key=lambda n: (pair(task, pool[n], [])[2], n)), by_item, t)
            elif s == "best-vs-2nd regions":
                add_regions(task, pool, labels, by_item, t, stats)
            else:
                add_random_regions(labels, draw, t)
            task = fitted(pool, labels)
            path.append({"target": t, "labels": n_labels(labels),
                         "chromosomes": sum(1 for v in labels.values() if v), "error": task.evaluate(test)})
        out["paths"][s] = {"path": path, "questions": stats}
        print(f"  seed {seed} {s:>20}: " + ", ".join(f"{p['labels']}/{p['chromosomes']}ch {p['error']:.1%}"
                                                       for p in path)
              + (f"  (asked {stats['answered'] + stats['unanswerable']}, unanswerable {stats['unanswerable']})"
                 if s == "best-vs-2nd regions" else "") + f" ({time.perf_counter() - t0:.0f} s)", flush=True)
    return out


def labels_needed(path, level):
    """``(labels, chromosomes)`` at the first checkpoint whose error is at most ``level``, else None."""
    for p in path:
        if p["error"] <= level + 1e-12:
            return p["labels"], p["chromosomes"]
    return None


def bootstrap_mean(values, n_boot=10_000, seed=0) -> tuple:
    v = np.asarray(values, dtype=float)
    rng = np.random.default_rng(seed)
    means = v[rng.integers(0, len(v), size=(n_boot, len(v)))].mean(1)
    return float(v.mean()), float(np.percentile(means, 2.5)), float(np.percentile(means, 97.5))


def merge_runs(files) -> list:
    """One run per seed from several result files' ``runs``: the strategies of runs of the same seed joined.

    Runs of one seed must agree on the split and checkpoints (same ``L40`` and targets); a strategy present in two
    files is taken from the first.
    """
    by_seed: dict = {}
    for runs in files:
        for r in runs:
            have = by_seed.get(r["seed"])
            if have is None:
                by_seed[r["seed"]] = {**r, "paths": dict(r["paths"])}
                continue
            if (have["L40"], have["targets"]) != (r["L40"], r["targets"]):
                raise SystemExit(f"--merge: seed {r['seed']} was run with other checkpoints in two files")
            for s, v in r["paths"].items():
                have["paths"].setdefault(s, v)
    return [by_seed[k] for k in sorted(by_seed)]


def summarize(runs) -> dict:
    """Print and return the per-strategy summary over ``runs`` (see the module docstring)."""
    strategies = [s for s in STRATEGIES if all(s in r["paths"] for r in runs)]
    fr = [t / runs[0]["L40"] for t in runs[0]["targets"]]
    print(f"\n{len(runs)} seeds; checkpoints at {', '.join(f'{f:.2f}' for f in fr)} x L40 "
          f"(L40 = random's labels at 40 % of the pool: {np.mean([r['L40'] for r in runs]):.0f} on average, "
          f"of {np.mean([r['pool_labels'] for r in runs]):.0f} pool labels)")
    print("mean test error at each checkpoint (labels held / chromosomes touched, means over seeds):")
    summary = {"seeds": [r["seed"] for r in runs], "strategies": {}}
    for s in strategies:
        paths = [r["paths"][s]["path"] for r in runs]
        cells = []
        for j in range(len(paths[0])):
            err = np.mean([p[j]["error"] for p in paths])
            lab = np.mean([p[j]["labels"] for p in paths])
            ch = np.mean([p[j]["chromosomes"] for p in paths])
            cells.append({"error": float(err), "labels": float(lab), "chromosomes": float(ch)})
        summary["strategies"][s] = {"checkpoints": cells}
        print(f"  {s:>20}: " + " | ".join(f"{c['error']:.2%} ({c['labels']:.0f}/{c['chromosomes']:.0f})"
                                          for c in cells))
    print("labels needed to reach random's error at 40 % of the pool, over random's labels there (paired per seed; "
          "a strategy that never reaches it counts as its last count or random's, whichever is larger (a lower bound); "
          "random's own row is its first checkpoint at or below its 40 % error, the chance level of this measure):")
    own = {}
    for s in strategies:
        ratios, ch_ratios, censored = [], [], 0
        for r in runs:
            rand_last = r["paths"]["random"]["path"][-1]
            got = labels_needed(r["paths"][s]["path"], rand_last["error"])
            if got is None:     # not reached: at least its last count, and at least random's (a lower bound)
                censored += 1
                last = r["paths"][s]["path"][-1]
                got = (max(last["labels"], rand_last["labels"]), max(last["chromosomes"], rand_last["chromosomes"]))
            ratios.append(got[0] / rand_last["labels"])
            ch_ratios.append(got[1] / rand_last["chromosomes"])
        own[s] = ratios
        m, lo, hi = bootstrap_mean(ratios)
        mc, loc, hic = bootstrap_mean(ch_ratios)
        within = int(sum(x <= 2 / 3 + 1e-9 for x in ratios))
        entry = summary["strategies"][s]
        entry.update({"label_ratio": ratios, "label_ratio_mean": m, "label_ratio_ci95": [lo, hi],
                      "chromosome_ratio": ch_ratios, "chromosome_ratio_mean": mc,
                      "chromosome_ratio_ci95": [loc, hic], "censored": censored, "seeds_within_two_thirds": within})
        line = (f"  {s:>20}: labels {m:.2f} [{lo:.2f}, {hi:.2f}] (median {np.median(ratios):.2f}; <= 2/3 on {within} of "
                f"{len(runs)} seeds; not reached on {censored}); chromosomes touched {mc:.2f} [{loc:.2f}, {hic:.2f}]")
        if s != "random":
            d, dlo, dhi = bootstrap_mean(np.array(ratios) - np.array(own["random"]))
            entry["label_ratio_minus_random"] = [d, dlo, dhi]
            line += f"; minus random's own ratio {d:+.2f} [{dlo:+.2f}, {dhi:+.2f}]"
            diffs = np.array([[p["error"] - q["error"] for p, q in zip(r["paths"][s]["path"], r["paths"]["random"]["path"])]
                              for r in runs])
            entry["error_minus_random"] = [list(bootstrap_mean(diffs[:, j])) for j in range(diffs.shape[1])]
            line += "\n" + " " * 24 + "test error minus random's at each checkpoint: " + ", ".join(
                f"{d0:+.2%} [{d1:+.2%}, {d2:+.2%}]" for d0, d1, d2 in entry["error_minus_random"][1:])
        q = [r["paths"][s]["questions"] for r in runs]
        if s.endswith("regions") and s.startswith("best"):
            asked = sum(x["answered"] + x["unanswerable"] for x in q)
            ans = sum(x["answered"] for x in q)
            entry["questions"] = {k: int(sum(x[k] for x in q)) for k in q[0]}
            line += (f"\n{' ' * 24}{asked} questions asked, {asked - ans} unanswerable (skipped), {ans} answered: the "
                     f"expert label agrees with the best on {sum(x['agrees_best'] for x in q)} and with the runner-up "
                     f"on {sum(x['agrees_runner'] for x in q)}; out of answerable questions on "
                     f"{sum(x['stuck'] > 0 for x in q)} of {len(runs)} seeds")
        print(line)
    return summary


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", type=int, default=10)
    ap.add_argument("--first-seed", type=int, default=0)
    ap.add_argument("--fractions", default="0.17,0.33,0.5,0.667,0.83,1.0",
                    help="checkpoints as shares of random's labels at 40 %% of the pool (the last must be 1.0)")
    ap.add_argument("--strategies", default=",".join(STRATEGIES))
    ap.add_argument("--data", type=pathlib.Path, default=ROOT.parent / "shared" / "data")
    ap.add_argument("--merge", nargs="+", type=pathlib.Path, metavar="JSON",
                    help="summarize result files together (seeds, or strategies of the same seeds, run apart)")
    ap.add_argument("--out", type=pathlib.Path, help="result file (default: benchmarks/results/active_regions...)")
    args = ap.parse_args(argv)
    if args.merge:
        summarize(merge_runs([json.loads(f.read_text())["runs"] for f in args.merge]))
        return
    fractions = [float(f) for f in args.fractions.split(",")]
    if fractions[-1] != 1.0 or sorted(fractions) != fractions:
        ap.error("--fractions: increasing, ending at 1.0 (random's 40 %-of-pool point)")
    strategies = [s.strip() for s in args.strategies.split(",")]
    bad = [s for s in strategies if s not in STRATEGIES]
    if bad:
        ap.error(f"--strategies: expected any of {STRATEGIES}, got {bad}")
    seqs, by_item, _ = load_cgh(args.data)
    X = {s.name: s for s in seqs}
    out = args.out or RESULTS / f"active_regions{'' if args.first_seed == 0 else f'_S{args.first_seed}'}.json"
    runs = []
    t0 = time.perf_counter()
    print(f"load {os.getloadavg()}", flush=True)
    for seed in range(args.first_seed, args.first_seed + args.seeds):
        runs.append(run_seed(seed, seqs, by_item, X, fractions, strategies))
        RESULTS.mkdir(parents=True, exist_ok=True)
        out.write_text(json.dumps({"fractions": fractions, "runs": runs}, indent=1))
        print(f"seed {seed} done ({time.perf_counter() - t0:.0f} s, load {os.getloadavg()})", flush=True)
    if "random" not in strategies:
        print(f"no 'random' strategy here: summarize with --merge {out} and a file that has it")
        return
    summary = summarize(runs)
    out.write_text(json.dumps({"fractions": fractions, "runs": runs, "summary": summary,
                               "total_s": time.perf_counter() - t0, "load_end": os.getloadavg()}, indent=1))


if __name__ == "__main__":
    main()
