"""Does the best-vs-2nd margin rank first the chromosomes the model gets wrong, and should it be length-normalised?

The aCGH parts of ``benchmarks/quality/active.py`` range from ~20 probes (low-density chromosomes) to 5,000
(high-density ones). :mod:`marginalia.active.uncertainty` does *not* divide the best-vs-2nd margin by the part
length: the runner-up differs from the best by one local decision, so the margin is the price of the
closest call. Longer parts hold more close calls, so their smallest margin is smaller, which could
favour them for the wrong reason. This benchmark checks the choice on real labels.

For each seed: the pool/test split of ``benchmarks/quality/active.py``; ``k`` chromosomes of the pool labelled
at random (k = 0, 16, 32); the replay's model (:class:`benchmarks.research.recipe_adapter.RecipeAdapter`: perceptron
steps, then the recipe refit); then, for every unlabelled pool chromosome, its best-vs-2nd margin ``m``
(in units of its change penalty), its length ``T``, and whether the current prediction has a label error
on it (the oracle's labels, used only for scoring the ranking). A ranking is good when it puts the
chromosomes the model gets wrong first: reported are the ROC AUC of "wrong" against the ranking
(0.5 = chance) and the share of wrong chromosomes among the top 10, for the margin as shipped and
multiplied by ``log T``, ``sqrt T`` and ``T``, and for "longest first".

Usage: ``python -m benchmarks.experiments.active_margin_units [--seeds 6] [--labels 0,16,32] [--data PATH]``
(about 2 minutes per seed on one core). Writes ``benchmarks/results/active_margin_units.json``.
"""

from __future__ import annotations

import argparse
import pathlib
import time

import numpy as np

from benchmarks._common import (  # noqa: E402
    ROOT,  # noqa: E402
    result_row,
    write_rows,
)
from benchmarks.quality.active import load_cgh, split  # noqa: E402
from benchmarks.research.recipe_adapter import RecipeAdapter  # noqa: E402
from marginalia.active.parts import parts_for_items  # noqa: E402
from marginalia.metrics import region_errors  # noqa: E402

RESULTS = ROOT / "benchmarks" / "results"

#: margin m of a part of length T -> the value ranked ascending (smallest first = asked first)
RANKINGS = {
    "margin as shipped": lambda m, T: m,
    "margin x log T": lambda m, T: m * np.log(T),
    "margin x sqrt T": lambda m, T: m * np.sqrt(T),
    "margin x T": lambda m, T: m * T,
    "longest first": lambda m, T: -T.astype(np.float64),
}


def roc_auc(rank_value, wrong) -> float:
    """P(a wrong part ranks before a right one), ties counted half; NaN when one class is empty.

    Parameters
    ----------
    rank_value : ndarray, shape (n,)
        Smaller = asked first.
    wrong : ndarray of bool, shape (n,)
    """
    pos, neg = rank_value[wrong], rank_value[~wrong]
    if pos.size == 0 or neg.size == 0:
        return float("nan")
    before = (pos[:, None] < neg[None, :]).mean()
    ties = (pos[:, None] == neg[None, :]).mean()
    return float(before + 0.5 * ties)


def score_pool(pool, by_item, labelled):
    """Margin, length and "prediction wrong" of every unlabelled pool chromosome after learning from ``labelled``."""
    task = RecipeAdapter()
    task.initialize(pool)
    for name in labelled:
        task.perceptron_step(pool[name], by_item[name])
    if labelled:
        task.refit([pool[n] for n in labelled], [by_item[n] for n in labelled])
    done = set(labelled)
    m, T, wrong = [], [], []
    for part in parts_for_items(pool):
        if part.item_id in done:
            continue
        seq = pool[part.item_id]
        s = task.part_scores(seq, part, [])
        m.append(np.inf if s.second is None else (s.best - s.second) / s.scale)
        T.append(seq.n_samples)
        wrong.append(region_errors(by_item[part.item_id], task.predict(seq)).errors > 0)
    return np.array(m), np.array(T), np.array(wrong)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", type=int, default=6)
    ap.add_argument("--labels", default="0,16,32", help="labelled chromosomes before scoring (comma-separated)")
    ap.add_argument("--data", type=pathlib.Path, default=ROOT.parent / "shared" / "data")
    args = ap.parse_args(argv)
    ks = [int(k) for k in args.labels.split(",")]
    seqs, by_item, _ = load_cgh(args.data)
    X = {s.name: s for s in seqs}
    table = {(k, name): {"auc": [], "top10": []} for k in ks for name in RANKINGS}
    base = {k: [] for k in ks}
    t0 = time.perf_counter()
    for seed in range(args.seeds):
        pool, _ = split(seqs, by_item, X, seed)
        names = sorted(pool)
        order = np.random.default_rng(100 + seed).permutation(len(names))
        for k in ks:
            m, T, wrong = score_pool(pool, by_item, [names[i] for i in order[:k]])
            base[k].append(float(wrong.mean()))
            for name, f in RANKINGS.items():
                v = f(m, T)
                v = np.where(np.isfinite(v), v, np.inf)
                top = np.argsort(v, kind="stable")[:10]
                table[k, name]["auc"].append(roc_auc(v, wrong))
                table[k, name]["top10"].append(float(wrong[top].mean()))
        print(f"seed {seed} done ({time.perf_counter() - t0:.0f} s)", flush=True)
    rows = []
    print(f"\n{args.seeds} seeds; AUC = P(a chromosome the model gets wrong is asked before a right one)")
    for k in ks:
        print(f"\n{k} random labels: {np.mean(base[k]):.1%} of the unlabelled chromosomes have a label error")
        for name in RANKINGS:
            auc, top = np.nanmean(table[k, name]["auc"]), np.mean(table[k, name]["top10"])
            ref = {"name": "share wrong in the pool", "value": float(np.mean(base[k]))}
            rows.append(result_row(f"aCGH, {k} labels: ROC AUC of {name}", auc, "auc", better="higher"))
            rows.append(result_row(f"aCGH, {k} labels: share wrong among the top 10 by {name}", top, "fraction",
                                   better="higher", reference=ref))
            print(f"  {name:<18} AUC {auc:.3f}   wrong among the top 10: {top:.0%}")
    write_rows(RESULTS / "active_margin_units.json", {"seeds": args.seeds, "labels": ks, "rows": rows})


if __name__ == "__main__":
    main()
