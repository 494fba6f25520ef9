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
# reassociation lets LLVM vectorise the sums over features; no 'nnan'/'ninf': infinities mark
# infeasible prefixes
_FM = {"reassoc", "contract", "nsz", "arcp"}


@njit(cache=True, nogil=True)
def _reachable(lo, hi, end_ok):
    """Whether ``T`` can be reached from 0 by allowed segments (prefix counts of reachable ends)."""
    T = lo.shape[0] - 1
    count = np.zeros(T + 2, np.int64)  # count[i] = number of reachable ends < i
    count[1] = 1
    for t in range(1, T + 1):
        a = lo[t]
        b = min(hi[t], t - 1)
        ok = end_ok[t] and b >= a and b >= 0 and count[b + 1] - count[max(a, 0)] > 0
        count[t + 1] = count[t] + (1 if ok else 0)
    return count[T + 1] > count[T]


@njit(cache=True, nogil=True, fastmath=_FM)
def _group_geometry(S, members, n, c, mg_out):
    """Drift and spread of a group of starts around its centre ``c``.

    Writes the least-squares drift ``m`` of ``e_s = S[s] - S[c]`` against ``s - c`` into
    ``mg_out`` and returns ``(rho, E)``: ``rho = max ||e_s - (s - c) m||`` and ``E = max ||e_s||^2``.
    """
    q = S.shape[1]
    den = 0.0
    for k in range(q):
        mg_out[k] = 0.0
    for i in range(n):
        d = members[i] - c
        den += d * d
        for k in range(q):
            mg_out[k] += d * (S[members[i], k] - S[c, k])
    if den > 0.0:
        for k in range(q):
            mg_out[k] /= den
    rho2 = 0.0
    E = 0.0
    for i in range(n):
        d = members[i] - c
        a = 0.0
        b = 0.0
        for k in range(q):
            e = S[members[i], k] - S[c, k]
            a += e * e
            r = e - d * mg_out[k]
            b += r * r
        E = max(E, a)
        rho2 = max(rho2, b)
    return np.sqrt(rho2) * (1.0 + 1e-9) + 1e-300, E * (1.0 + 1e-9)


@njit(cache=True, nogil=True)
def _lower_hull(dx, w, n, hd, hw):
    """Lower convex hull of points ``(dx[i], w[i])`` sorted by ``dx``; infinite ``w`` are ignored."""
    h = 0
    for i in range(n):
        if w[i] == _INF:
            continue
        x = dx[i]
        y = w[i]
        while h >= 2:
            # drop the last vertex if it lies on or above the segment from h-2 to the new point
            x1 = hd[h - 2]
            y1 = hw[h - 2]
            x2 = hd[h - 1]
            y2 = hw[h - 1]
            if (y2 - y1) * (x - x1) >= (y - y1) * (x2 - x1):
                h -= 1
            else:
                break
        hd[h] = x
        hw[h] = y
        h += 1
    return h


@njit(cache=True, nogil=True, fastmath=_FM)
def _group_affine(S, t, c, mg, rho, E, dmin, dmax):
    """Affine lower bound ``base + lam * (s - c)`` of ``-||S[t] - S[s]||^2 / (t - s)`` over a group.

    With ``D = S[t] - S[c]`` and ``e_s = (s - c) m + eps_s`` (``||eps_s|| <= rho``),
    ``||D - e_s||^2 <= A - 2 (s - c) beta`` where ``A = ||D||^2 + 2 ||D|| rho + E`` and
    ``beta = D . m``; dividing by ``t - s = tau - delta`` gives ``2 beta + K / (tau - delta)``,
    ``K = A - 2 beta tau``, whose negative is bounded below by a tangent (convex case, K <= 0) or
    a chord (concave case, K > 0) on ``[dmin, dmax]``.
    """
    q = S.shape[1]
    nD2 = 0.0
    beta = 0.0
    for k in range(q):
        d = S[t, k] - S[c, k]
        nD2 += d * d
        beta += d * mg[k]
    A = nD2 + 2.0 * np.sqrt(nD2) * rho + E
    tau = t - c
    K = A - 2.0 * beta * tau
    if K <= 0.0:
        d0 = 0.5 * (dmin + dmax)
        u = 1.0 / (tau - d0)
        lam = -K * u * u
        a = -K * u - lam * d0
    else:
        pmin = -K / (tau - dmin)
        pmax = -K / (tau - dmax)
        lam = (pmax - pmin) / (dmax - dmin) if dmax > dmin else 0.0
        a = pmin - lam * dmin
    return a - 2.0 * beta, lam, A / (tau - dmax)


@njit(cache=True, nogil=True)
def _hull_min(hd, hw, h, lam):
    best = _INF
    for i in range(h):
        v = hw[i] + lam * hd[i]
        if v < best:
            best = v
    return best


@njit(cache=True, nogil=True)
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


@njit(cache=True, nogil=True, fastmath=_FM)
def _sqdist(S, t, s):
    q = S.shape[1]
    acc = 0.0
    for k in range(q):
        d = S[t, k] - S[s, k]
        acc += d * d
    return acc


@njit(cache=True, nogil=True, fastmath=_FM)
def _penalized(S, Q, beta, m, lo, hi, end_ok, one_a, one_b, end_term,
               tid, tstart, tstop, frob_w, slack, second, prune, bound, block, group, tol):
    """Optimal partitioning with PELT-style pruning and bounded groups of candidates.

    Minimises ``sum_k [scatter_k + frob_w * overlap_k / n_k + beta] + sum_{t in changes} end_term[t]``
    (``frob_w = 0`` and ``end_term = 0`` for the plain decoder).

    Two exact accelerations, each can be switched off for testing:

    * ``prune``: a start ``s`` with ``F(s) + cost(s, t) > F(t) + slack`` can never start the last
      segment of a solution ending at ``u >= t + m`` (``slack`` bounds the sub-additivity of the
      cost; 0 for the plain scatter). Its removal is delayed past the "exactly one change" region
      around ``t`` when it starts before that region. The live starts are compacted every ``block`` ends.
    * ``bound``: live starts are split in groups of ``max(group, sqrt(n_live))`` consecutive starts
      with a centre ``c``, a least-squares drift of ``S`` and the residual radius around it, and the
      lower convex hull of ``(s - c, F(s) - Q[s])``; :func:`_group_affine` turns these into a lower
      bound of every member's value for end ``t`` in O(q + hull). A group whose bound exceeds the
      best (second-best) value found so far is skipped without evaluating its members, and dropped
      for good when the bound already passes the pruning test. This keeps sequences without any
      change, where pruning removes nothing, fast.

    Returns
    -------
    F1, F2 : (T+1,) best and second-best values of ``[0, t)``
    bp1 : (T+1,) start of the last segment of the best
    bp2, bp2r : (T+1,) start of the last segment of the second best and the rank (1 or 2)
        of the prefix it extends
    n_evals : int, number of (start, end) pairs evaluated exactly
    """
    T = S.shape[0] - 1
    q = S.shape[1]
    F1 = np.full(T + 1, _INF)
    F2 = np.full(T + 1, _INF)
    bp1 = np.full(T + 1, -1, np.int64)
    bp2 = np.full(T + 1, -1, np.int64)
    bp2r = np.zeros(T + 1, np.int64)
    F1[0] = 0.0
    inv = np.empty(T + 1)
    inv[0] = 0.0
    for d in range(1, T + 1):
        inv[d] = 1.0 / d
    frob = frob_w != 0.0
    cap = T + 2 + block
    pos = np.empty(cap, np.int64)
    death = np.empty(cap, np.int64)
    vals = np.empty(cap)
    evald = np.empty(cap, np.int64)
    gmax = max(group, int(np.sqrt(cap)) + 1)
    ngmax = cap // group + 2
    g_first = np.empty(ngmax, np.int64)
    g_last = np.empty(ngmax, np.int64)
    g_c = np.empty(ngmax, np.int64)
    g_rho = np.empty(ngmax)
    g_E = np.empty(ngmax)
    g_m = np.empty((ngmax, q))
    g_hd = np.empty((ngmax, gmax))
    g_hw = np.empty((ngmax, gmax))
    g_h = np.empty(ngmax, np.int64)
    tmp_d = np.empty(gmax)
    tmp_w = np.empty(gmax)
    sk_g = np.empty(ngmax, np.int64)
    sk_lb = np.empty(ngmax)
    npos = 1
    pos[0] = 0
    death[0] = _NEVER
    n_evals = 0
    t0 = 1
    while t0 <= T:
        # keep the live starts (compacted once per block of ends), group them, then append this
        # block's ends (their F is filled in as we go)
        n = 0
        for i in range(npos):
            s = pos[i]
            if death[i] > t0 and s >= lo[t0] and F1[s] < _INF:
                pos[n] = s
                death[n] = death[i]
                n += 1
        n_old = n
        ng = 0
        # groups of about sqrt(n) starts: few group tests per end when many starts are live
        gsize = max(group, int(np.sqrt(n_old)))
        t1 = min(t0 + max(block, 2 * gsize), T + 1)
        for g0 in range(0, n_old, gsize):
            g1 = min(g0 + gsize, n_old)
            gn = g1 - g0
            c = pos[(g0 + g1) // 2]
            rho, E = _group_geometry(S, pos[g0:g1], gn, c, g_m[ng])
            for i in range(gn):
                tmp_d[i] = pos[g0 + i] - c
                tmp_w[i] = F1[pos[g0 + i]] - Q[pos[g0 + i]]
            g_h[ng] = _lower_hull(tmp_d, tmp_w, gn, g_hd[ng], g_hw[ng])
            g_first[ng] = g0
            g_last[ng] = g1 - 1
            g_c[ng] = c
            g_rho[ng] = rho
            g_E[ng] = E
            ng += 1
        for t in range(t0, t1):
            pos[n] = t
            death[n] = _NEVER
            n += 1
        npos = n
        for t in range(t0, t1):
            if not end_ok[t]:
                continue
            a = lo[t]
            b = hi[t]
            if b < a:
                continue
            i_lo = np.searchsorted(pos[:npos], a)
            i_hi = np.searchsorted(pos[:npos], b, side="right")
            if i_hi <= i_lo:
                continue
            best = _INF
            bi = -1
            sec = _INF
            si = -1
            sr = 0
            Qt = Q[t]
            # a value we know is reachable, to skip groups before the real scan finds it
            thr = _INF
            h = bp1[t - 1] if t > 1 else 0
            if bound and h >= a and h <= b and F1[h] < _INF:
                c = Qt - Q[h] - _sqdist(S, t, h) * inv[t - h]
                if frob:
                    c += frob_w * _frob_overlap(h, t, tid, tstart, tstop) * inv[t - h]
                thr = F2[h] + c if second else F1[h] + c
            ne = 0
            nsk = 0
            # the newest starts first (this block's), then the groups from the newest
            gi = ng
            j_start = max(i_lo, n_old)
            j_stop = i_hi
            while True:
                for i in range(j_start, j_stop):
                    s = pos[i]
                    fs = F1[s]
                    if fs == _INF:
                        continue
                    c = Qt - Q[s] - _sqdist(S, t, s) * inv[t - s]
                    if frob:
                        c += frob_w * _frob_overlap(s, t, tid, tstart, tstop) * inv[t - s]
                    v = fs + c
                    vals[i] = v
                    evald[ne] = i
                    ne += 1
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
                # next group that overlaps [i_lo, i_hi) and whose bound does not rule it out
                j_start = -1
                while gi > 0:
                    gi -= 1
                    if g_first[gi] >= i_hi or g_last[gi] < i_lo:
                        continue
                    if bound:
                        cur = sec if second else best
                        if cur > thr:
                            cur = thr
                        if cur < _INF and g_h[gi] > 0:
                            cg = g_c[gi]
                            base, slope, mag = _group_affine(S, t, cg, g_m[gi], g_rho[gi], g_E[gi],
                                                             float(pos[g_first[gi]] - cg),
                                                             float(pos[g_last[gi]] - cg))
                            lb = Qt + base + _hull_min(g_hd[gi], g_hw[gi], g_h[gi], slope)
                            if lb > cur + tol * (abs(cur) + Qt + mag + 1.0):
                                sk_g[nsk] = gi
                                sk_lb[nsk] = lb
                                nsk += 1
                                continue
                    j_start = max(g_first[gi], i_lo)
                    j_stop = min(g_last[gi] + 1, i_hi)
                    break
                if j_start < 0:
                    break
            n_evals += ne
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
                    thr_p = ref + slack + tol * (abs(ref) + 1.0)
                    kill = t + m
                    late = one_b[t] if one_b[t] > kill else kill
                    for e in range(ne):
                        i = evald[e]
                        if vals[i] > thr_p:
                            # an end inside an "exactly one" region around t may still need a start
                            # at or before that region's start
                            when = late if pos[i] <= one_a[t] else kill
                            if when < death[i]:
                                death[i] = when
                    # a skipped group whose bound already fails the test goes as a whole
                    for e in range(nsk):
                        if sk_lb[e] > thr_p:
                            gi = sk_g[e]
                            for i in range(g_first[gi], g_last[gi] + 1):
                                when = late if pos[i] <= one_a[t] else kill
                                if when < death[i]:
                                    death[i] = when
        t0 = t1
    return F1, F2, bp1, bp2, bp2r, n_evals


@njit(cache=True, nogil=True)
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


@njit(cache=True, nogil=True, fastmath=_FM)
def _fixed_k(S, Q, K, m, lo, hi, end_ok, group, second, bound, tol, future, lam, ub):
    """Best (and second-best) value of ``[0, t)`` with exactly ``k`` segments, for all k <= K.

    Starts are split in static groups of ``group`` consecutive indices with the geometry of
    :func:`_group_geometry` and, per layer, the lower hull of ``(s - c, F[k-1, s] - Q[s])``; a group
    whose lower bound (:func:`_group_affine`) exceeds the best value found so far for ``(k, t)`` is
    skipped (``bound=False`` evaluates all).
    The previous end's optimal start is evaluated first so that the bound bites early.

    ``future[t]`` is a lower bound of ``cost([t, T)) + lam * n_segments`` (a penalized decoding of
    the rest, without labels) and ``ub`` an upper bound of the optimum (of the second best when
    ``second``): a prefix with ``F[k, t] + future[t] - lam (K - k) > ub`` cannot lie on an optimal
    path and is dropped (``ub = inf`` disables this).

    Returns
    -------
    F1, F2 : (K+1, T+1)
    n_evals : int
    """
    T = S.shape[0] - 1
    F1 = np.full((K + 1, T + 1), _INF)
    F2 = np.full((K + 1, T + 1), _INF)
    arg = np.full((K + 1, T + 1), -1, np.int64)
    F1[0, 0] = 0.0
    inv = np.empty(T + 1)
    inv[0] = 0.0
    for d in range(1, T + 1):
        inv[d] = 1.0 / d
    G = group
    ngr = (T + 1 + G - 1) // G
    q = S.shape[1]
    g_c = np.empty(ngr, np.int64)
    g_rho = np.empty(ngr)
    g_E = np.empty(ngr)
    g_m = np.empty((ngr, q))
    g_hd = np.empty((ngr, K + 1, G))
    g_hw = np.empty((ngr, K + 1, G))
    g_h = np.zeros((ngr, K + 1), np.int64)
    aff_t = np.full(ngr, -1, np.int64)
    aff_base = np.empty(ngr)
    aff_lam = np.empty(ngr)
    aff_mag = np.empty(ngr)
    members = np.empty(G, np.int64)
    tmp_d = np.empty(G)
    tmp_w = np.empty(G)
    complete = 0
    n_evals = 0
    for t in range(1, T + 1):
        while (complete + 1) * G <= t:
            g = complete
            s0 = g * G
            c = s0 + G // 2
            for i in range(G):
                members[i] = s0 + i
                tmp_d[i] = i - G // 2
            rho, E = _group_geometry(S, members, G, c, g_m[g])
            for k in range(K + 1):
                for i in range(G):
                    tmp_w[i] = F1[k, s0 + i] - Q[s0 + i]
                g_h[g, k] = _lower_hull(tmp_d, tmp_w, G, g_hd[g, k], g_hw[g, k])
            g_c[g] = c
            g_rho[g] = rho
            g_E[g] = E
            complete += 1
        if not end_ok[t]:
            continue
        Qt = Q[t]
        first_open = complete * G
        for k in range(1, K + 1):
            if t < k * m or t > T - (K - k) * m or (k == K and t != T):
                continue
            a = max(lo[t], (k - 1) * m)
            b = hi[t]
            if k == 1:
                b = min(b, 0)
            if b < a:
                continue
            Fp = F1[k - 1]
            Gp = F2[k - 1]
            thr = _INF
            h = arg[k, t - 1]
            if bound and h >= a and h <= b and Fp[h] < _INF:
                c = Qt - Q[h] - _sqdist(S, t, h) * inv[t - h]
                thr = Gp[h] + c if second else Fp[h] + c
            best = _INF
            bi = -1
            sec = _INF
            j_start = max(a, first_open)
            j_stop = b + 1
            gi = min(complete, b // G + 1)
            g_min = a // G
            while True:
                for s in range(j_start, j_stop):
                    fs = Fp[s]
                    if fs == _INF:
                        continue
                    c = Qt - Q[s] - _sqdist(S, t, s) * inv[t - s]
                    v = fs + c
                    if v < best:
                        sec = best
                        best = v
                        bi = s
                    elif v < sec:
                        sec = v
                    if second:
                        v2 = Gp[s] + c
                        if v2 < sec:
                            sec = v2
                n_evals += max(0, j_stop - j_start)
                j_start = -1
                while gi > g_min:
                    gi -= 1
                    if bound:
                        if g_h[gi, k - 1] == 0:
                            continue
                        cur = sec if second else best
                        if cur > thr:
                            cur = thr
                        if cur < _INF:
                            if aff_t[gi] != t:
                                base, slope, mag = _group_affine(S, t, g_c[gi], g_m[gi], g_rho[gi], g_E[gi],
                                                                 float(-(G // 2)), float(G - 1 - G // 2))
                                aff_base[gi] = base
                                aff_lam[gi] = slope
                                aff_mag[gi] = mag
                                aff_t[gi] = t
                            lb = Qt + aff_base[gi] + _hull_min(g_hd[gi, k - 1], g_hw[gi, k - 1], g_h[gi, k - 1],
                                                               aff_lam[gi])
                            if lb > cur + tol * (abs(cur) + Qt + aff_mag[gi] + 1.0):
                                continue
                    j_start = max(gi * G, a)
                    j_stop = min(gi * G + G, b + 1)
                    break
                if j_start < 0:
                    break
            rest = future[t] - lam * (K - k)
            lim = ub + tol * (abs(ub) + 1.0)
            if best + rest > lim:
                best = _INF
                bi = -1
            if sec + rest > lim:
                sec = _INF
            F1[k, t] = best
            arg[k, t] = bi
            if second:
                F2[k, t] = sec
    return F1, F2, n_evals


@njit(cache=True, nogil=True, fastmath=_FM)
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
