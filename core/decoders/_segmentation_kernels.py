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
def _prefix_sums(Z, shift):
    """Prefix sums ``S`` (T+1, q) and ``Q`` (T+1,) of the samples ``z_i = Z[i] - shift`` in one pass.

    Centring on the fly spares a copy of ``Z`` (its pages cost as much as the sums on a long sequence).
    """
    T, q = Z.shape
    S = np.empty((T + 1, q))
    Q = np.empty(T + 1)
    for k in range(q):
        S[0, k] = 0.0
    Q[0] = 0.0
    for i in range(T):
        acc = 0.0
        for k in range(q):
            z = Z[i, k] - shift[k]
            S[i + 1, k] = S[i, k] + z
            acc += z * z
        Q[i + 1] = Q[i] + acc
    return S, Q


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
def _frob_term(s, t, tid, tstart, tstop, wl, w):
    """``w * sum_l |[s,t) ∩ S*_l|^2 / |S*_l|`` for the true segments ``S*_l``, with ``wl[l] = w / |S*_l|``."""
    l1 = tid[s]
    l2 = tid[t - 1]
    if l1 == l2:
        d = t - s
        return d * d * wl[l1]
    a = tstop[l1] - s
    b = t - tstart[l2]
    return a * a * wl[l1] + w * (tstart[l2] - tstop[l1]) + b * b * wl[l2]


@njit(cache=True, nogil=True, fastmath=_FM)
def _sqdist(S, t, s):
    q = S.shape[1]
    acc = 0.0
    for k in range(q):
        d = S[t, k] - S[s, k]
        acc += d * d
    return acc


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
    path and is dropped (``ub = inf`` disables this); the search of ``(k, t)`` skips every group whose
    bound already exceeds ``ub - future[t] + lam (K - k)``, and the starts outside the first and last
    finite prefix of layer ``k - 1``, so a tight ``ub`` leaves only the prefixes near optimal paths.

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
    # first and last finite prefix of every layer: the starts worth searching
    live_lo = np.full(K + 1, T + 1, np.int64)
    live_hi = np.full(K + 1, -1, np.int64)
    live_lo[0] = 0
    live_hi[0] = 0
    live_min = np.full(K + 1, _INF)  # smallest finite prefix value of every layer
    live_min[0] = 0.0
    lim = ub + tol * (abs(ub) + 1.0)
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
            a = max(a, live_lo[k - 1])
            b = min(b, live_hi[k - 1])
            if b < a:
                continue
            Fp = F1[k - 1]
            Gp = F2[k - 1]
            # a value above cap is dropped below: no need to search for it
            rest = future[t] - lam * (K - k)
            cap = lim - rest
            if bound and cap < _INF:
                # every start s <= b has F[k-1, s] >= live_min and cost(s, t) >= cost(b, t)
                if live_min[k - 1] + Qt - Q[b] - _sqdist(S, t, b) * inv[t - b] > cap:
                    continue
            thr = cap if bound else _INF
            h = arg[k, t - 1]
            if bound and h >= a and h <= b and Fp[h] < _INF:
                c = Qt - Q[h] - _sqdist(S, t, h) * inv[t - h]
                thr = min(thr, Gp[h] + c if second else Fp[h] + c)
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
            if best + rest > lim:
                best = _INF
                bi = -1
            if sec + rest > lim:
                sec = _INF
            F1[k, t] = best
            arg[k, t] = bi
            if best < _INF:
                live_lo[k] = min(live_lo[k], t)
                live_hi[k] = t
                live_min[k] = min(live_min[k], best)
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
            if F1[k - 1, s] == _INF:  # then F2 too: no path through s
                continue
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
