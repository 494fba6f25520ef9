"""Private kernel: penalised segmentation minus a loss on partial labels.

Solves, exactly, ``min_y cost(y) + penalty * n_segments(y) - scale * loss(y)``
where the loss sums, over the region labels, a function of the number ``c``
of changes inside the label, plus the boundary labels whose change is
missing. With ``counts=False`` a region label costs 1 when ``c`` falls
outside ``[lo, hi]`` (violations); with ``counts=True`` it costs the number
of wrong change decisions, ``max(lo - c, 0) + max(c - hi, 0)`` (``hi``
unbounded: only the missing change). The labels must be pairwise disjoint in
change indices (checked by the caller). Labels are processed by a DP over the
last change whose state is ``k = min(2, number of changes so far inside the
label containing that change)``: both losses depend on ``c`` through
``min(c, 2)`` plus, for counts, one unit per change beyond the second when
``hi`` is bounded.
"""

from __future__ import annotations

import numba
import numpy as np

_INF = np.inf


@numba.njit(cache=True, nogil=True)
def _viol(lo, hi, k):
    # k is min(count, 2); hi < 0 means unbounded
    if k < lo:
        return 1.0
    if hi >= 0 and k > hi:
        return 1.0
    return 0.0


@numba.njit(cache=True, nogil=True)
def _label_loss(lo, hi, k, counts):
    # loss of a label holding min(count, 2) = k changes; the count loss past 2 is added per extra change
    if not counts:
        return _viol(lo, hi, k)
    v = 0.0
    if k < lo:
        v += lo - k
    if hi >= 0 and k > hi:
        v += k - hi
    return v


@numba.njit(cache=True, nogil=True)
def _segment_cost(S1, S2, s, t):
    n = t - s
    c = 0.0
    for j in range(S1.shape[1]):
        a = S1[t, j] - S1[s, j]
        c += (S2[t, j] - S2[s, j]) - a * a / n
    return c


@numba.njit(cache=True, nogil=True)
def violation_dp(Z, penalty, min_size, rid, lab_lo, lab_hi, lab_start, lab_stop, boundary_gain, scale,
                 counts=False):
    """Return (changes array ending with T, objective).

    Z : (T, q) transformed features (metric already applied)
    rid : (T+1,) label index of change index c (start < c < stop), -1 if none
    lab_* : (R,) labels sorted by start, disjoint; lo/hi change-count bounds (hi=-1 unbounded)
    boundary_gain : (T+1,) 1.0 where a boundary label sits (its violation vanishes if a change is placed there)
    counts : count wrong change decisions instead of violated labels (pruning is then switched off)
    """
    T, q = Z.shape
    R = lab_lo.shape[0]
    S1 = np.zeros((T + 1, q))
    S2 = np.zeros((T + 1, q))
    for t in range(T):
        for j in range(q):
            S1[t + 1, j] = S1[t, j] + Z[t, j]
            S2[t + 1, j] = S2[t, j] + Z[t, j] * Z[t, j]
    # zero-count violations: prefix sums over labels (sorted by start == sorted by stop when disjoint)
    zv = np.zeros(R + 1)
    for r in range(R):
        zv[r + 1] = zv[r] + _label_loss(lab_lo[r], lab_hi[r], 0, counts)
    # first label with start >= s ; number of labels with stop <= t
    first_ge = np.zeros(T + 1, dtype=np.int64)
    n_le = np.zeros(T + 1, dtype=np.int64)
    r = 0
    for s in range(T + 1):
        while r < R and lab_start[r] < s:
            r += 1
        first_ge[s] = r
    r = 0
    for t in range(T + 1):
        while r < R and lab_stop[r] <= t:
            r += 1
        n_le[t] = r
    total_boundaries = 0.0
    for c in range(T + 1):
        total_boundaries += boundary_gain[c]

    # slack of the pruning test: labels that can still change the loss after s
    n_after = np.zeros(T + 1)
    for s in range(T + 1):
        c = 0.0
        for r in range(R):
            if lab_stop[r] > s:
                c += 1.0
        n_after[s] = c
    tail = 0.0
    for c in range(T, -1, -1):
        n_after[c] += tail
        tail += boundary_gain[c]

    F = np.full((T + 1, 3), _INF)
    arg_s = np.full((T + 1, 3), -1, dtype=np.int64)
    arg_k = np.full((T + 1, 3), -1, dtype=np.int64)
    F[0, 0] = -scale * total_boundaries
    cand = np.empty(T + 1, dtype=np.int64)
    vals = np.empty(T + 1)
    n_cand = 1
    cand[0] = 0
    for t in range(min_size, T + 1):
        rt = rid[t] if t < T else -1
        for ci in range(n_cand):
            s = cand[ci]
            if s > t - min_size:
                vals[ci] = _INF
                continue
            rs = rid[s] if s > 0 else -1
            seg = _segment_cost(S1, S2, s, t)
            base = seg + penalty
            if t < T:
                base += scale * boundary_gain[t]
            fmin = _INF
            for k in range(3):
                f = F[s, k]
                if f == _INF:
                    continue
                if f < fmin:
                    fmin = f
                v = f + base
                if rt >= 0 and rt == rs:
                    nk = k + 1 if k < 2 else 2
                    if counts and k == 2 and lab_hi[rt] >= 0:
                        v -= scale      # a third (fourth, ...) change inside a bounded label: one more error
                else:
                    if rs >= 0:
                        v -= scale * _label_loss(lab_lo[rs], lab_hi[rs], k, counts)
                    a = first_ge[s]
                    b = n_le[t]
                    if b > a:
                        v -= scale * (zv[b] - zv[a])
                    nk = 1 if rt >= 0 else 0
                if v < F[t, nk]:
                    F[t, nk] = v
                    arg_s[t, nk] = s
                    arg_k[t, nk] = k
            vals[ci] = fmin + seg
        # PELT-style pruning: a start s whose best prefix plus the cost up to t already exceeds
        # the best value at t by more than a new change and every loss still to come can never win
        ft = min(F[t, 0], min(F[t, 1], F[t, 2]))
        kept = 0
        for ci in range(n_cand):
            s = cand[ci]
            # (the count loss has no such bound: a label can gain without limit, so nothing is pruned)
            if not counts and s <= t - min_size and \
                    vals[ci] > ft + penalty + scale * n_after[s] + 1e-9 * (1.0 + abs(ft)):
                continue
            cand[kept] = s
            kept += 1
        n_cand = kept
        if t < T and ft < _INF:
            cand[n_cand] = t
            n_cand += 1
    # backtrack from T (state 0: T is never inside a label)
    out = []
    t = T
    k = 0
    while t > 0:
        out.append(t)
        s = arg_s[t, k]
        k = arg_k[t, k]
        t = s
    res = np.empty(len(out), dtype=np.int64)
    for i in range(len(out)):
        res[i] = out[len(out) - 1 - i]
    return res, F[T, 0]
