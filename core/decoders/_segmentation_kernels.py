"""Private numba kernels of the segmentation decoders (loops only, no validation).

Notation shared by every kernel
-------------------------------
``S`` (T+1, q) and ``Q`` (T+1,) are prefix sums of the transformed samples
``z_i`` and of ``||z_i||^2``; the scatter of segment ``[s, t)`` is
``Q[t] - Q[s] - ||S[t] - S[s]||^2 / (t - s)``. ``lo``, ``hi``, ``end_ok``,
``one_a``, ``one_b`` come from ``SegmentConstraints.transition_bounds``.
"""

from __future__ import annotations

import numpy as np
from numba import njit

_INF = np.inf
_NEVER = np.iinfo(np.int64).max


@njit(cache=True)
def _frob_overlap(s, t, tid, tstart, tstop):
    """``sum_l |[s,t) ∩ S*_l|^2 / |S*_l|`` for the true segments ``S*_l``."""
    l1 = tid[s]
    l2 = tid[t - 1]
    if l1 == l2:
        d = t - s
        return d * d / (tstop[l1] - tstart[l1])
    a = tstop[l1] - s
    b = t - tstart[l2]
    return (a * a / (tstop[l1] - tstart[l1]) + (tstart[l2] - tstop[l1])
            + b * b / (tstop[l2] - tstart[l2]))


@njit(cache=True)
def _penalized(S, Q, beta, m, lo, hi, end_ok, one_a, one_b, end_term,
               tid, tstart, tstop, frob_w, slack, second, prune, block, gemm_min, tol):
    """Optimal partitioning with PELT-style pruning, evaluated block by block.

    Minimises ``sum_k [scatter_k + frob_w * overlap_k / n_k + beta] + sum_{t in changes} end_term[t]``
    (``frob_w = 0`` and ``end_term = 0`` for the plain decoder). Candidate starts
    alive at the start of a block of ``block`` ends are gathered; when they are many
    the cross products ``S[t] . S[s]`` of the whole block come from one GEMM.

    Returns
    -------
    F1, F2 : (T+1,) best and second-best values of ``[0, t)``
    bp1 : (T+1,) start of the last segment of the best
    bp2, bp2r : (T+1,) start of the last segment of the second best and the rank (1 or 2)
        of the prefix it extends
    n_evals : int, number of (start, end) pairs evaluated
    """
    T = S.shape[0] - 1
    q = S.shape[1]
    F1 = np.full(T + 1, _INF)
    F2 = np.full(T + 1, _INF)
    bp1 = np.full(T + 1, -1, np.int64)
    bp2 = np.full(T + 1, -1, np.int64)
    bp2r = np.zeros(T + 1, np.int64)
    F1[0] = 0.0
    nn = np.empty(T + 1)
    for t in range(T + 1):
        acc = 0.0
        for k in range(q):
            acc += S[t, k] * S[t, k]
        nn[t] = acc
    inv = np.empty(T + 1)
    inv[0] = 0.0
    for d in range(1, T + 1):
        inv[d] = 1.0 / d
    frob = frob_w != 0.0
    pos = np.empty(T + 1 + block, np.int64)
    death = np.empty(T + 1 + block, np.int64)
    vals = np.empty(T + 1 + block)
    npos = 1
    pos[0] = 0
    death[0] = _NEVER
    n_evals = 0
    t0 = 1
    while t0 <= T:
        t1 = min(t0 + block, T + 1)
        # keep the live candidates, then append this block's ends (their F is filled in as we go)
        n = 0
        for i in range(npos):
            s = pos[i]
            if death[i] > t0 and s >= lo[t0] and F1[s] < _INF:
                pos[n] = s
                death[n] = death[i]
                n += 1
        for t in range(t0, t1):
            pos[n] = t
            death[n] = _NEVER
            n += 1
        npos = n
        use_gemm = q >= 2 and npos >= gemm_min
        if use_gemm:
            P = np.empty((npos, q))
            for i in range(npos):
                for k in range(q):
                    P[i, k] = S[pos[i], k]
            cross = np.dot(S[t0:t1], P.T)
        else:
            cross = np.empty((0, 0))
        for t in range(t0, t1):
            if not end_ok[t]:
                continue
            a = lo[t]
            b = hi[t]
            if b < a:
                continue
            i_lo = np.searchsorted(pos[:npos], a)
            i_hi = np.searchsorted(pos[:npos], b, side="right")
            j = t - t0
            best = _INF
            bi = -1
            sec = _INF
            si = -1
            sr = 0
            Qt = Q[t]
            for i in range(i_lo, i_hi):
                s = pos[i]
                fs = F1[s]
                if fs == _INF:
                    vals[i] = _INF
                    continue
                if use_gemm:
                    sq = nn[t] + nn[s] - 2.0 * cross[j, i]
                else:
                    sq = 0.0
                    for k in range(q):
                        d = S[t, k] - S[s, k]
                        sq += d * d
                c = Qt - Q[s] - sq * inv[t - s]
                if frob:
                    c += frob_w * _frob_overlap(s, t, tid, tstart, tstop) * inv[t - s]
                v = fs + c
                vals[i] = v
                if v < best:
                    sec = best
                    si = bi
                    sr = 1
                    best = v
                    bi = s
                elif second and v < sec:
                    sec = v
                    si = s
                    sr = 1
                if second:
                    v2 = F2[s] + c
                    if v2 < sec:
                        sec = v2
                        si = s
                        sr = 2
            n_evals += i_hi - i_lo
            if bi < 0:
                continue
            extra = beta + end_term[t]
            F1[t] = best + extra
            bp1[t] = bi
            if second and si >= 0 and sec < _INF:
                F2[t] = sec + extra
                bp2[t] = si
                bp2r[t] = sr
            if prune:
                ref = F2[t] if second else F1[t]
                if ref < _INF:
                    thr = ref + slack + tol * (abs(ref) + 1.0)
                    kill = t + m
                    late = one_b[t] if one_b[t] > kill else kill
                    for i in range(i_lo, i_hi):
                        if vals[i] > thr:
                            # a later end inside an "exactly one" region around t may still need
                            # a start at or before that region's start
                            when = late if pos[i] <= one_a[t] else kill
                            if when < death[i]:
                                death[i] = when
            # starts below lo[t] are never allowed again (lo is non-decreasing)
        t0 = t1
    return F1, F2, bp1, bp2, bp2r, n_evals


@njit(cache=True)
def _backtrack(bp1, bp2, bp2r, T, rank):
    """Segment ends of the best (rank 1) or second-best (rank 2) path, ascending."""
    out = []
    t = T
    r = rank
    while t > 0:
        out.append(t)
        if r == 1:
            t = bp1[t]
        else:
            s = bp2[t]
            r = bp2r[t]
            t = s
    res = np.empty(len(out), np.int64)
    for i in range(len(out)):
        res[i] = out[len(out) - 1 - i]
    return res


@njit(cache=True)
def _fixed_k(S, Q, K, m, lo, hi, end_ok, block, second):
    """Best (and second-best) value of ``[0, t)`` with exactly ``k`` segments, for all k <= K.

    The scatter of a block of ends against every earlier start is computed once (one GEMM
    for the cross products) and shared by the ``K`` layers.

    Returns
    -------
    F1, F2 : (K+1, T+1)
    """
    T = S.shape[0] - 1
    q = S.shape[1]
    F1 = np.full((K + 1, T + 1), _INF)
    F2 = np.full((K + 1, T + 1), _INF)
    F1[0, 0] = 0.0
    nn = np.empty(T + 1)
    for t in range(T + 1):
        acc = 0.0
        for k in range(q):
            acc += S[t, k] * S[t, k]
        nn[t] = acc
    inv = np.empty(T + 1)
    inv[0] = 0.0
    for d in range(1, T + 1):
        inv[d] = 1.0 / d
    t0 = 1
    while t0 <= T:
        t1 = min(t0 + block, T + 1)
        ns = t1 - m  # starts 0 .. ns-1 can end inside the block
        if ns <= 0:
            t0 = t1
            continue
        nb = t1 - t0
        C = np.empty((nb, ns))
        if q >= 2:
            cross = np.dot(S[t0:t1], S[0:ns].T)
            for j in range(nb):
                t = t0 + j
                smax = min(ns, t - m + 1)
                for s in range(smax):
                    C[j, s] = Q[t] - Q[s] - (nn[t] + nn[s] - 2.0 * cross[j, s]) * inv[t - s]
        else:
            for j in range(nb):
                t = t0 + j
                smax = min(ns, t - m + 1)
                for s in range(smax):
                    d = S[t, 0] - S[s, 0]
                    C[j, s] = Q[t] - Q[s] - d * d * inv[t - s]
        for k in range(1, K + 1):
            Fp = F1[k - 1]
            Gp = F2[k - 1]
            for j in range(nb):
                t = t0 + j
                if not end_ok[t] or t < k * m or t > T - (K - k) * m:
                    continue
                if k == K and t != T:
                    continue
                a = max(lo[t], (k - 1) * m)
                b = hi[t]
                if k == 1:
                    b = min(b, 0)
                if b < a:
                    continue
                Cj = C[j]
                if not second:
                    best = _INF
                    for s in range(a, b + 1):
                        v = Fp[s] + Cj[s]
                        best = min(best, v)
                    F1[k, t] = best
                else:
                    best = _INF
                    sec = _INF
                    for s in range(a, b + 1):
                        v = Fp[s] + Cj[s]
                        if v < best:
                            sec = best
                            best = v
                        elif v < sec:
                            sec = v
                        v2 = Gp[s] + Cj[s]
                        if v2 < sec:
                            sec = v2
                    F1[k, t] = best
                    F2[k, t] = sec
        t0 = t1
    return F1, F2


@njit(cache=True)
def _fixed_k_backtrack(S, Q, F1, F2, K, m, lo, hi, rank):
    """Recover the segment ends of the rank-1 or rank-2 path of :func:`_fixed_k`.

    The argmin of each step is recomputed (O(T q) per segment) instead of stored.
    """
    T = S.shape[0] - 1
    q = S.shape[1]
    ends = np.empty(K, np.int64)
    t = T
    r = rank
    for k in range(K, 0, -1):
        ends[k - 1] = t
        a = max(lo[t], (k - 1) * m)
        b = hi[t]
        if k == 1:
            b = min(b, 0)
        best = _INF
        bs = -1
        sec = _INF
        ss = -1
        sr = 0
        for s in range(a, b + 1):
            sq = 0.0
            for kk in range(q):
                d = S[t, kk] - S[s, kk]
                sq += d * d
            c = Q[t] - Q[s] - sq / (t - s)
            v = F1[k - 1, s] + c
            if v < best:
                sec = best
                ss = bs
                sr = 1
                best = v
                bs = s
            elif v < sec:
                sec = v
                ss = s
                sr = 1
            v2 = F2[k - 1, s] + c
            if v2 < sec:
                sec = v2
                ss = s
                sr = 2
        if r == 1:
            t = bs
        else:
            t = ss
            r = sr
        if t < 0:
            ends[0] = -1
            return ends
    return ends
