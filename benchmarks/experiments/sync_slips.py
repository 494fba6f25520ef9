"""What the sync aligner's errors beyond 250 ms are, on the development pairs only (issue #44), and what the
best-vs-second question buys when a person answers it.

Usage: ``python -m benchmarks.experiments.sync_slips [--data DIR] [--part slips|step|both] [--questions 1,3,5]``

Vienna 4x22 renders as in :mod:`benchmarks.quality.quality_sync` (reference FluidR3_GM, target TimGM6mb), pairs
p01 : p02 and p03 : p04, the learned metric (fit on p03 : p04's other three pieces, leave one piece out) and the
Euclidean cost. For every note carried more than 250 ms off it prints the piece, its reference time, its error
refined and on the path alone, and what kind of error it is:

* ``no monotone map``: another note of the pair lies in the other order (or at the same reference time) more
  than 500 ms away in the target, so no increasing map carries both within 250 ms;
* otherwise the path's exact optimum is wrong, and ``forced`` says by how much the cost of the path made to pass
  through the note's true target time exceeds the free optimum's (relative to the free path's cost): the whole
  grid is decoded exactly on these excerpts, so a free path off the truth is the cost's (the model's) choice,
  and a small excess means the cost can hardly tell the two.

Then the question loop: ask :meth:`SyncAligner.question`, answer it with the truth (the target time of the
question's reference time, interpolated between the matched notes), decode through the answers, and count the
notes beyond 250 ms and 50 ms after 0, 1, 3 and 5 answers per recording pair.

``--part step``: the aligner's ``step_cost`` (a cost per path cell, ``c`` times the pair's median cell cost),
which makes a path of fewer diagonal steps (a detour that slips a chord: a run along one recording, then along
the other) cost more; notes beyond 250 ms and 50 ms for several ``c``. ``--step-cost`` sets it for the other
part (0: the plain DTW cost).

Never run on the five held-out pairs.
"""

from __future__ import annotations

import argparse
import dataclasses
from pathlib import Path

import numpy as np

from benchmarks._common import ROOT
from benchmarks.quality.quality_sync import FONTS, PIECES, load, matched, render


def unreachable(m: np.ndarray, far: float = 0.5) -> np.ndarray:
    """Notes that no increasing map carries within ``far / 2`` together with some other note, shape (N,) bool."""
    r, t = m[:, 0], m[:, 1]
    later_ref = r[None, :] >= r[:, None]            # [i, k]: note k no earlier than note i in the reference
    earlier_ref = r[None, :] <= r[:, None]
    np.fill_diagonal(later_ref, False)
    np.fill_diagonal(earlier_ref, False)
    return ((later_ref & (t[None, :] < t[:, None] - far)).any(axis=1)
            | (earlier_ref & (t[None, :] > t[:, None] + far)).any(axis=1))


def truth_at(m: np.ndarray, ref_s: float) -> float:
    """The target time of a reference time: interpolated between the matched notes (made increasing)."""
    order = np.argsort(m[:, 0], kind="stable")
    r, t = m[order, 0], np.maximum.accumulate(m[order, 1])
    return float(np.interp(ref_s, r, t))


def main(argv=None):
    from marginalia.sync import SyncAligner
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", default=str(ROOT.parent / "shared" / "data"), help="the shared data folder")
    ap.add_argument("--questions", default="1,3,5", help="numbers of answered questions to count after")
    ap.add_argument("--part", default="slips", choices=("slips", "step", "both"))
    ap.add_argument("--steps", default="0,0.1,0.25,0.5,1", help="cell costs c of --part step")
    ap.add_argument("--step-cost", type=float, default=SyncAligner().step_cost, help="the cell cost of --part slips")
    args = ap.parse_args(argv)
    steps = sorted({int(k) for k in args.questions.split(",")})
    root = Path(args.data) / "alignment" / "vienna4x22"
    base = SyncAligner()
    pairs = (("p01", "p02"), ("p03", "p04"))
    feats = {(q, p, side): base.compute_features(*load(render(root / "midi" / f"{q}_{p}.mid", FONTS[side])))
             for q in PIECES for a, b in pairs for p, side in ((a, "ref"), (b, "tgt"))}
    ta, tb = pairs[1]
    w = {q: SyncAligner().fit([(feats[(o, ta, "ref")], feats[(o, tb, "tgt")], matched(root, o, ta, tb))
                               for o in PIECES if o != q]).w_ for q in PIECES}
    if args.part in ("step", "both"):
        for c in map(float, args.steps.split(",")):
            for a, b in pairs:
                for name in ("learned", "Euclidean"):
                    e = []
                    for q in PIECES:
                        al = SyncAligner(step_cost=c)
                        al = al.with_metric_weights(w[q]) if name == "learned" else al
                        m, fa, fb = matched(root, q, a, b), feats[(q, a, "ref")], feats[(q, b, "tgt")]
                        e.append(np.abs(al.predict(fa, fb, runner_up=False).map_times(m[:, 0]) - m[:, 1]))
                    e = np.concatenate(e)
                    print(f"step c={c:g} {a}:{b} {name}: {int(np.sum(e > 0.25))} beyond 250 ms, "
                          f"{int(np.sum(e > 0.05))} beyond 50 ms, median {1000 * np.median(e):.1f} ms, "
                          f"worst {e.max():.2f} s", flush=True)
    for a, b in pairs if args.part in ("slips", "both") else ():
        for name in ("learned", "Euclidean"):
            counts = {k: [0, 0] for k in [0] + steps}
            for q in PIECES:
                al = SyncAligner(step_cost=args.step_cost)
                al = al.with_metric_weights(w[q]) if name == "learned" else al
                fa, fb, m = feats[(q, a, "ref")], feats[(q, b, "tgt")], matched(root, q, a, b)
                res = al.predict(fa, fb, runner_up=False)
                err = res.map_times(m[:, 0]) - m[:, 1]
                err_path = dataclasses.replace(res, refiner=None).map_times(m[:, 0]) - m[:, 1]
                bad = np.flatnonzero(np.abs(err) > 0.25)
                blocked = unreachable(m)
                for i in bad:
                    if blocked[i]:
                        kind = "no monotone map"
                    else:
                        forced = al.predict(fa, fb, anchors=[m[i]], runner_up=False)
                        kind = f"forced +{100 * (forced.cost - res.cost) / res.cost:.2f} %"
                    print(f"{a}:{b} {name} step {args.step_cost:g} {q} ref {m[i, 0]:7.2f} s: error {err[i]:+.2f} s "
                          f"(path {err_path[i]:+.2f} s) {kind}", flush=True)
                anchors = []
                for k in range(max(steps) + 1):
                    if k in counts:
                        e = np.abs((al.predict(fa, fb, anchors=anchors or None, runner_up=False).map_times(m[:, 0])
                                    if anchors else res.map_times(m[:, 0])) - m[:, 1])
                        counts[k][0] += int(np.sum(e > 0.25))
                        counts[k][1] += int(np.sum(e > 0.05))
                    if k == max(steps):
                        break
                    got = al.question(fa, fb, anchors=anchors or None)
                    if got is None:
                        continue
                    answer = (got.reference_s, truth_at(m, got.reference_s))
                    if any(abs(x[0] - answer[0]) < 1e-9 for x in anchors):
                        print(f"{a}:{b} {name} {q}: asked again at {answer[0]:.2f} s", flush=True)
                        continue
                    anchors = sorted(anchors + [answer])     # truth_at is increasing: they never cross
            print(f"{a}:{b} {name} step {args.step_cost:g}: notes beyond 250 ms / 50 ms after k answered questions "
                  "per recording pair: " + "; ".join(f"k={k}: {v[0]} / {v[1]}" for k, v in counts.items()), flush=True)


if __name__ == "__main__":
    main()
