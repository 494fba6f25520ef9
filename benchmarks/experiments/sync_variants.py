"""Variants of the sync aligner on the development pairs only (issue #44): refinement window and search, metric options.

Usage: ``python -m benchmarks.experiments.sync_variants [--data DIR] [--part refine|metric|both]``

Vienna 4x22 renders as in :mod:`benchmarks.quality.quality_sync` (reference FluidR3_GM, target TimGM6mb).

* ``refine``: notes carried more than 50 ms off, and the median, on p01 : p02 and p03 : p04 for the learned
  metric (fit on p03 : p04's other three pieces, leave one piece out) and the Euclidean cost, for several
  ``refine_s`` / ``refine_window_s`` (``refine_s`` 0: the path alone).
* ``metric``: the metric learned on one development pair (leave one piece out) and tested on the other, both
  ways, for the Hamming loss at several C and the symmetric-area loss.

Never run on the five held-out pairs: that is ``benchmarks.quality.quality_sync_pairs``, once, after the choices.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np

from benchmarks._common import ROOT
from benchmarks.quality.quality_sync import FONTS, PIECES, load, matched, render

REFINE = [{"refine_s": 0.0}, {}, {"refine_window_s": 0.02}, {"refine_window_s": 0.05}, {"refine_window_s": 0.07},
          {"refine_s": 0.04, "refine_window_s": 0.05}, {"refine_s": 0.09, "refine_window_s": 0.05}]
METRIC = [{}, {"C": 0.1}, {"C": 0.3}, {"C": 10.0}, {"loss": "area"}]


def main(argv=None):
    from marginalia.sync import SyncAligner
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", default=str(ROOT.parent / "shared" / "data"), help="the shared data folder")
    ap.add_argument("--part", default="both", choices=("refine", "metric", "both"))
    args = ap.parse_args(argv)
    root = Path(args.data) / "alignment" / "vienna4x22"
    base = SyncAligner()
    pairs = (("p01", "p02"), ("p03", "p04"))
    feats = {(q, p, side): base.compute_features(*load(render(root / "midi" / f"{q}_{p}.mid", FONTS[side])))
             for q in PIECES for a, b in pairs for p, side in ((a, "ref"), (b, "tgt"))}

    def learn(pair, piece, **kw):
        a, b = pair
        return SyncAligner(**kw).fit([(feats[(q, a, "ref")], feats[(q, b, "tgt")], matched(root, q, a, b))
                                      for q in PIECES if q != piece]).w_

    def count(pair, aligners):
        a, b = pair
        e = np.abs(np.concatenate([aligners[q].predict(feats[(q, a, "ref")], feats[(q, b, "tgt")], runner_up=False)
                                   .map_times(matched(root, q, a, b)[:, 0]) - matched(root, q, a, b)[:, 1]
                                   for q in PIECES]))
        return f"{int(np.sum(e > 0.05))} beyond 50 ms, median {1000 * np.median(e):.1f} ms, worst {e.max():.2f} s"

    if args.part in ("refine", "both"):
        w = {q: learn(pairs[1], q) for q in PIECES}
        for kw in REFINE:
            for pair in pairs:
                learned = {q: SyncAligner(**kw).with_metric_weights(w[q]) for q in PIECES}
                euclid = {q: SyncAligner(**kw) for q in PIECES}
                print(f"{kw or 'shipped'} {pair[0]}:{pair[1]}: learned {count(pair, learned)}; "
                      f"Euclidean {count(pair, euclid)}", flush=True)
    if args.part in ("metric", "both"):
        for kw in METRIC:
            for train, test in ((pairs[1], pairs[0]), (pairs[0], pairs[1])):
                learned = {q: SyncAligner().with_metric_weights(learn(train, q, **kw)) for q in PIECES}
                print(f"{kw or 'shipped'} learned on {train[0]}:{train[1]}, tested on {test[0]}:{test[1]}: "
                      f"{count(test, learned)}; Euclidean {count(test, {q: SyncAligner() for q in PIECES})}",
                      flush=True)


if __name__ == "__main__":
    main()
