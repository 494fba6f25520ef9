"""Lagrangian bounds that let the fixed-K decoder skip prefixes that cannot be optimal.

For any ``lam >= 0`` and any segmentation of ``[t, T)`` into ``j`` segments,
``cost >= P_lam(t) - lam * j`` where ``P_lam(t)`` is the optimal *penalized* cost of ``[t, T)``
(labels dropped: a relaxation). ``P_lam`` for every ``t`` is one run of the fast penalized decoder
on the reversed sequence. A prefix ``(k, t)`` with ``F[k, t] + P_lam(t) - lam (K - k)`` above a
known upper bound of the optimum cannot lie on an optimal path. The multiplier is searched so
that the penalized solution has about ``K`` segments; when it has exactly ``K`` and satisfies the
labels it *is* an optimal K-segmentation and the DP is not needed.
"""

from __future__ import annotations

import numpy as np

from ..types import Segmentation
from . import _segmentation_kernels as _k

_MAX_ROUNDS = 8
_MAX_GREEDY = 400


def _cost(S, Q, ends):
    t = np.asarray(ends, dtype=np.int64)
    s = np.concatenate(([0], t[:-1]))
    d = S[t] - S[s]
    return float(np.sum((Q[t] - Q[s]) - np.einsum("ij,ij->i", d, d) / (t - s)))


def _seg_cost(S, Q, s, t):
    d = S[t] - S[s]
    return float(Q[t] - Q[s] - d @ d / (t - s))


def _feasible(ends, pb) -> bool:
    ends = np.asarray(ends, dtype=np.int64)
    starts = np.concatenate(([0], ends[:-1]))
    if np.any(ends - starts < pb.m):
        return False
    if pb.cons.is_empty:
        return True
    return pb.cons.is_satisfied_by(Segmentation(ends, pb.T))


def _to_k(ends, K, pb):
    """Greedy merges or splits of a feasible segmentation down/up to K segments (None on failure)."""
    ends = list(int(e) for e in ends)
    S, Q = pb.S, pb.Q
    if abs(len(ends) - K) > _MAX_GREEDY:
        return None
    while len(ends) > K:
        starts = [0] + ends[:-1]
        order = []
        for i in range(len(ends) - 1):
            inc = _seg_cost(S, Q, starts[i], ends[i + 1]) - _seg_cost(S, Q, starts[i], ends[i]) \
                - _seg_cost(S, Q, ends[i], ends[i + 1])
            order.append((inc, i))
        order.sort()
        for _, i in order:
            trial = ends[:i] + ends[i + 1:]
            if _feasible(trial, pb):
                ends = trial
                break
        else:
            return None
    while len(ends) < K:
        starts = [0] + ends[:-1]
        cands = []
        for a, b in zip(starts, ends):
            if b - a < 2 * pb.m:
                continue
            c = np.arange(a + pb.m, b - pb.m + 1)
            c = c[pb.end_ok[c]]
            if c.size == 0:
                continue
            dl = S[c] - S[a]
            dr = S[b] - S[c]
            gain = np.einsum("ij,ij->i", dl, dl) / (c - a) + np.einsum("ij,ij->i", dr, dr) / (b - c)
            for j in np.argsort(-gain)[:8]:
                cands.append((-gain[j], int(c[j])))
        cands.sort()
        for _, c in cands:
            trial = sorted(ends + [c])
            if _feasible(trial, pb):
                ends = trial
                break
        else:
            return None
    return ends


def _neighbour(ends, pb):
    """The cheapest feasible segmentation with one change of ``ends`` moved by one sample, or None.

    The cheapest, not the first found: it is the upper bound of the second best that decides how
    many prefixes the fixed-K programme keeps (a change moved where it costs little is the usual
    runner-up).
    """
    S, Q = pb.S, pb.Q
    found = []
    for i in range(len(ends) - 1):
        a = ends[i - 1] if i else 0
        b = ends[i + 1]
        here = _seg_cost(S, Q, a, ends[i]) + _seg_cost(S, Q, ends[i], b)
        for d in (-1, 1):
            c = ends[i] + d
            if c <= a or c >= b:
                continue
            found.append((_seg_cost(S, Q, a, c) + _seg_cost(S, Q, c, b) - here, i, d))
    for _, i, d in sorted(found):
        trial = list(ends)
        trial[i] += d
        if _feasible(trial, pb):
            return trial
    return None


def fixed_k_bounds(pb, K: int, second: bool, run_penalized):
    """Future bound, multiplier and upper bound for :func:`_segmentation_kernels._fixed_k`.

    Parameters
    ----------
    pb : segmentation._Problem
    K : int
    second : bool
        Bound the second best instead of the best.
    run_penalized : callable
        ``run_penalized(S, Q, lam) -> (F1, bp1, bp2, bp2r)`` on unconstrained prefix sums.

    Returns
    -------
    future : ndarray, shape (T+1,)
    lam : float
    ub : float
        ``inf`` when no upper bound was found.
    direct : list of int or None
        An optimal K-segmentation when the penalized solution already is one (only when not ``second``).
    """
    T = pb.T
    S_r, Q_r = _k._prefix_sums(np.ascontiguousarray(pb.Z[::-1]), np.zeros(pb.Z.shape[1]))
    if T > 1:
        dz = np.diff(pb.Z, axis=0)
        noise = 0.5 * float(np.median(np.einsum("ij,ij->i", dz, dz)))
    else:
        noise = 0.0
    lam = 2.0 * np.log(max(T, 2)) * noise if noise > 0 else 1.0
    lam_lo, lam_hi = 0.0, np.inf
    lam_run = lam
    F1 = ends = None
    for _ in range(_MAX_ROUNDS):
        lam_run = lam
        F1, bp1, bp2, bp2r = run_penalized(S_r, Q_r, lam_run)
        rev = _k._backtrack(bp1, bp2, bp2r, T, 1)
        ends = (T - rev[:-1][::-1]).tolist() + [T]
        if len(ends) == K:
            break
        if len(ends) > K:
            lam_lo = lam_run
            lam = lam_run * 4.0 if lam_hi == np.inf else np.sqrt(lam_lo * lam_hi)
        else:
            lam_hi = lam_run
            lam = lam_run / 4.0 if lam_lo == 0.0 else np.sqrt(lam_lo * lam_hi)
        if not (lam > 0 and np.isfinite(lam)):
            break
    future = F1[T - np.arange(T + 1)]
    direct = None
    ub = np.inf
    if _feasible(ends, pb) and len(ends) == K and not second:
        direct = ends
    fk = ends if _feasible(ends, pb) else None
    if fk is not None:
        fk = _to_k(fk, K, pb)
    if fk is not None:
        ub = _cost(pb.S, pb.Q, fk)
        if second:
            other = _neighbour(fk, pb)
            ub = max(ub, _cost(pb.S, pb.Q, other)) if other is not None else np.inf
    return future, lam_run, ub, direct
