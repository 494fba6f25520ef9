"""Which search of the penalized change-point decoder pays where: flat list, tree of bounded starts, functional pruning.

Times, in one process and alternately (best CPU time of ``--repeat`` runs, so that a shared machine's load
drifts through every variant alike), the variants of :func:`marginalia.decoders.segmentation._run_penalized`:

* ``tree``: the tree of bounded starts from the first end (the decoder before issue #45's last rows);
* ``flat``: the compact list of live starts, handed over to the tree past ``4 * leaf * fanout`` starts
  (the default for p > 1 or with labels);
* ``flat only``: the list to the end (PELT);
* ``functional``: functional pruning (FPOP), the default for one feature without labels;

and, for the second best, the runner-up search with bounds on leaves only or on nodes of every size after the
functional pruning. Inputs: the row of ``speed/decoders_segmentation.py`` (T = 10^4, p = 20, a change every
100), one feature with a change every 100 (T = 10^5) and without change at a small penalty (T = 2·10^4,
penalty 0.1: a change almost everywhere), and the five real aCGH chromosomes of ``speed/scaling.py``. Also the
prefix sums, numpy's (a centred copy, ``cumsum`` and ``einsum``) against the one-pass kernel.

Usage: ``python -m benchmarks.experiments.penalized_variants [--repeat 9] [--data DIR]``
"""

from __future__ import annotations

import argparse
import os
import time
from pathlib import Path

import numpy as np

from benchmarks._common import ROOT
from marginalia.decoders import _segmentation_kernels as kern
from marginalia.decoders import segmentation as seg


def best_times(fns: dict, repeat: int) -> dict:
    """Best CPU time of each function, the functions run in turn ``repeat`` times."""
    for f in fns.values():
        f()
    best = dict.fromkeys(fns, np.inf)
    for _ in range(repeat):
        for name, f in fns.items():
            t = time.process_time()
            f()
            best[name] = min(best[name], time.process_time() - t)
    return best


def piecewise(T, p, every, seed):
    rng = np.random.default_rng(seed)
    lab = np.arange(T) // every
    return rng.normal(scale=2.0, size=(lab[-1] + 1, p))[lab] + rng.normal(size=(T, p))


def bic(y):
    sigma = np.median(np.abs(np.diff(y.ravel()))) / 0.6745 / np.sqrt(2.0)
    return 2.0 * sigma ** 2 * np.log(len(y))


def second_best(X, beta, unbounded):
    """``segment_second_best``'s two passes, with the runner-up's node bounds on leaves only or on every node."""
    pb = seg._Problem(X, None, 1, None)
    kill_t = np.empty(pb.T + 1, np.int64)
    F1, _, bp1, bp2, bp2r, _ = seg._run_penalized(pb, beta, kill_t=kill_t)
    ends = kern._backtrack(bp1, bp2, bp2r, pb.T, 1)
    return seg._ru.runner_up_at_ends(pb.S, pb.Q, F1, bp1, kill_t, ends, pb.lo, pb.hi, seg.LEAF, seg._RU_FANOUT,
                                     pb.T + 1 if unbounded else seg.LEAF, seg._TOL)


def numpy_prefix(X):
    Z = X - X.mean(axis=0)
    S = np.zeros((Z.shape[0] + 1, Z.shape[1]))
    np.cumsum(Z, axis=0, out=S[1:])
    Q = np.zeros(Z.shape[0] + 1)
    np.cumsum(np.einsum("ij,ij->i", Z, Z), out=Q[1:])
    return S, Q


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=9)
    ap.add_argument("--data", default=str(ROOT.parent / "shared" / "data"))
    args = ap.parse_args(argv)
    print(f"load average {'%.2f %.2f %.2f' % os.getloadavg()}; best CPU time of {args.repeat}, variants alternated")
    X20 = piecewise(10_000, 20, 100, 0)
    b20 = 2.0 * 20 * np.log(10_000)
    mu = X20.mean(axis=0)
    t = best_times({"numpy": lambda: numpy_prefix(X20), "kernel": lambda: kern._prefix_sums(X20, mu)}, args.repeat)
    print(f"prefix sums, T=1e4 p=20: numpy {t['numpy'] * 1e3:.2f} ms, one-pass kernel {t['kernel'] * 1e3:.2f} ms")
    inputs = [("T=1e4 p=20, a change every 100", X20, b20),
              ("T=1e5 p=1, a change every 100", piecewise(100_000, 1, 100, 3), 2.0 * np.log(100_000)),
              ("T=2e4 p=1, no change, penalty 0.1", np.random.default_rng(1).normal(size=(20_000, 1)), 0.1)]
    from benchmarks.speed.decoders_segmentation import read_longest_cgh
    path = Path(args.data) / "cgh" / "neuroblastoma" / "profiles_all.csv.gz"
    if path.exists():
        by_len = sorted(read_longest_cgh(path, 400), key=lambda s: len(s[1]))
        for target in (1_000, 3_000, 10_000, 30_000, 100_000):
            name, y = min(by_len, key=lambda s: abs(len(s[1]) - target))
            inputs.append((f"aCGH {name}, T={len(y)}", np.asarray(y, float)[:, None], bic(y)))
    print(f"{'input':<44} {'variant':<11} {'ms':>9} {'evals/end':>10}")
    for name, X, beta in inputs:
        pb = seg._Problem(X, None, 1, None)
        variants = {"tree": dict(functional=False, max_live=0), "flat": dict(functional=False),
                    "flat only": dict(functional=False, max_live=10 ** 9)}
        if seg._functional_applies(pb, 0.0, False, True, True):
            variants["functional"] = {}
        t = best_times({v: (lambda kw=kw: seg._run_penalized(pb, beta, **kw)) for v, kw in variants.items()},
                       args.repeat)
        for v, kw in variants.items():
            n = seg._run_penalized(pb, beta, **kw)[-1] / pb.T
            print(f"{name:<44} {v:<11} {t[v] * 1e3:9.2f} {n:10.1f}")
        if X.shape[1] == 1:
            t = best_times({"leaves": lambda: second_best(X, beta, False),
                            "all nodes": lambda: second_best(X, beta, True)}, args.repeat)
            print(f"{name:<44} second best, bounds on leaves {t['leaves'] * 1e3:.2f} ms, "
                  f"on every node {t['all nodes'] * 1e3:.2f} ms")
    print(f"load average now {'%.2f %.2f %.2f' % os.getloadavg()}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
