"""Numba kernel of the penalized segmentation decoder: optimal partitioning over a tree of bounded starts.

Notation as in :mod:`core.decoders._segmentation_kernels`. The candidate starts ``0..T`` of the last
segment are the leaves of a static tree: ``leaf`` consecutive starts per leaf node, ``fanout``
children per inner node. Once every start of a node has its prefix value ``F(s)``, the node stores a
centre, a least-squares drift of ``S`` and the residual radius around it, and the lower convex hull of
``(s - c, F(s) - Q[s])``, from which :func:`_group_affine` gives a lower bound of every member's value
for any later end. For each end the tree is searched depth first from the newest starts, and a node
whose bound exceeds the best value found so far is skipped whole. On a long sequence with few
changes, where pruning removes almost nothing, an end then costs a few dozen node tests instead of a
pass over ``sqrt(live starts)`` flat groups and one whole group.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from ._segmentation_kernels import _FM, _INF, _NEVER, _frob_overlap, _group_affine, _group_geometry, \
    _lower_hull, _sqdist

# a leaf with fewer usable starts gets no bound: testing it would cost about as much as evaluating them
_MIN_BOUNDED_LEAF = 4


@njit(cache=True, nogil=True)
def _hull_min_sorted(hd, hw, off, h, lam):
    """``min_i hw[i] + lam * hd[i]`` over a lower convex hull stored at ``off`` (binary search on slopes)."""
    lo = 0
    hi = h - 1
    while lo < hi:
        mid = (lo + hi) // 2
        # the value still decreases along edge mid -> mid + 1 iff its slope is below -lam
        if (hw[off + mid + 1] - hw[off + mid]) + lam * (hd[off + mid + 1] - hd[off + mid]) < 0.0:
            lo = mid + 1
        else:
            hi = mid
    return hw[off + lo] + lam * hd[off + lo]


@njit(cache=True, nogil=True, fastmath=_FM)
def _build_node(S, Q, F1, death, t, first, stop, nd, n_min, members, tmp_d, tmp_w, n_c, n_m, n_rho, n_E, n_dmin,
                n_dmax, n_hoff, n_h, hd, hw):
    """Bound data of the node holding starts ``first..stop-1``, over those still usable after end ``t``.

    Returns their number (a start pruned by then never serves again, so the bound may ignore it); with
    fewer than ``n_min`` the bound is not built.
    """
    n = 0
    for s in range(first, stop):
        if F1[s] < _INF and death[s] > t:
            members[n] = s
            n += 1
    n_h[nd] = 0
    if n == 0 or n < n_min:
        return n
    c = members[n // 2]
    rho, E = _group_geometry(S, members, n, c, n_m[nd])
    for i in range(n):
        tmp_d[i] = members[i] - c
        tmp_w[i] = F1[members[i]] - Q[members[i]]
    off = n_hoff[nd]
    n_h[nd] = _lower_hull(tmp_d, tmp_w, n, hd[off:], hw[off:])
    n_c[nd] = c
    n_rho[nd] = rho
    n_E[nd] = E
    n_dmin[nd] = members[0] - c
    n_dmax[nd] = members[n - 1] - c
    return n


@njit(cache=True, nogil=True, fastmath=_FM)
def _penalized(S, Q, beta, m, lo, hi, end_ok, one_a, one_b, end_term,
               tid, tstart, tstop, frob_w, slack, second, prune, bound, leaf, fanout, tol):
    """Optimal partitioning with PELT-style pruning and a tree of bounded starts.

    Minimises ``sum_k [scatter_k + frob_w * overlap_k / n_k + beta] + sum_{t in changes} end_term[t]``
    (``frob_w = 0`` and ``end_term = 0`` for the plain decoder).

    Two exact accelerations, each can be switched off for testing:

    * ``prune``: a start ``s`` with ``F(s) + cost(s, t) > F(t) + slack`` can never start the last
      segment of a solution ending at ``u >= t + m`` (``slack`` bounds the sub-additivity of the
      cost; 0 for the plain scatter). Its removal is delayed past the "exactly one change" region
      around ``t`` when it starts before that region. A node whose bound already fails the test is
      removed whole; a node whose starts are all removed is skipped from then on.
    * ``bound``: the tree of nodes of the module docstring; ``leaf`` (>= 1) starts per leaf node,
      ``fanout`` (>= 2) children per inner node. A node's bound covers only the starts not yet
      pruned when it is built; a leaf with fewer than ``_MIN_BOUNDED_LEAF`` of them gets none.

    Returns
    -------
    F1, F2 : (T+1,) best and second-best values of ``[0, t)``
    bp1 : (T+1,) start of the last segment of the best
    bp2, bp2r : (T+1,) start of the last segment of the second best and the rank (1 or 2)
        of the prefix it extends
    n_evals : int, number of (start, end) pairs evaluated exactly
    """
    T = S.shape[0] - 1
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
    G = max(leaf, 1)
    B = max(fanout, 2)

    # ---- the static tree: level 0 holds leaves of G starts, level l nodes of G * B**l starts
    n_levels = 1
    size = G
    while (T + size) // size > 1:
        size *= B
        n_levels += 1
    lv_size = np.empty(n_levels, np.int64)
    lv_count = np.empty(n_levels, np.int64)
    lv_off = np.empty(n_levels + 1, np.int64)
    size = G
    lv_off[0] = 0
    for lvl in range(n_levels):
        lv_size[lvl] = size
        lv_count[lvl] = (T + size) // size  # ceil((T + 1) / size)
        lv_off[lvl + 1] = lv_off[lvl] + lv_count[lvl]
        size *= B
    n_nodes = lv_off[n_levels]
    q = S.shape[1]
    n_level = np.empty(n_nodes, np.int64)
    n_first = np.empty(n_nodes, np.int64)
    n_last = np.empty(n_nodes, np.int64)
    n_kids = np.zeros(n_nodes, np.int64)
    n_dead_kids = np.zeros(n_nodes, np.int64)
    n_counted = np.zeros(n_nodes, np.bool_)
    n_built = np.zeros(n_nodes, np.bool_)
    n_death = np.full(n_nodes, _NEVER)
    n_c = np.zeros(n_nodes, np.int64)
    n_m = np.zeros((n_nodes, q))
    n_rho = np.zeros(n_nodes)
    n_E = np.zeros(n_nodes)
    n_dmin = np.zeros(n_nodes)
    n_dmax = np.zeros(n_nodes)
    n_hoff = np.empty(n_nodes, np.int64)
    n_h = np.zeros(n_nodes, np.int64)
    for lvl in range(n_levels):
        for k in range(lv_count[lvl]):
            nd = lv_off[lvl] + k
            n_level[nd] = lvl
            n_first[nd] = k * lv_size[lvl]
            n_last[nd] = min((k + 1) * lv_size[lvl], T + 1) - 1
            n_hoff[nd] = lvl * (T + 1) + n_first[nd]  # a hull has at most as many vertices as starts
            if lvl > 0:
                n_kids[nd] = min((k + 1) * B, lv_count[lvl - 1]) - k * B
    hd = np.empty(n_levels * (T + 1))
    hw = np.empty(n_levels * (T + 1))
    members = np.empty(T + 1, np.int64)
    tmp_d = np.empty(T + 1)
    tmp_w = np.empty(T + 1)
    stack = np.empty(n_levels * B + 1, np.int64)
    sk_nd = np.empty(n_nodes, np.int64)
    sk_lb = np.empty(n_nodes)

    death = np.full(T + 1, _NEVER)  # per start: first end it may no longer serve
    vals = np.empty(T + 1)
    evald = np.empty(T + 1, np.int64)
    n_evals = 0
    root = n_nodes - 1
    for t in range(0, T + 1):
        # ---------------- the best (and second-best) last segment ending at t
        a = lo[t]
        b = min(hi[t], t - 1)
        if t > 0 and end_ok[t] and b >= a:
            best = _INF
            bi = -1
            sec = _INF
            si = -1
            sr = 0
            Qt = Q[t]
            # a value we know is reachable, to skip nodes before the search finds it
            thr = _INF
            h = bp1[t - 1] if t > 1 else 0
            if bound and h >= a and h <= b and F1[h] < _INF:
                c = Qt - Q[h] - _sqdist(S, t, h) * inv[t - h]
                if frob:
                    c += frob_w * _frob_overlap(h, t, tid, tstart, tstop) * inv[t - h]
                thr = F2[h] + c if second else F1[h] + c
            ne = 0
            nsk = 0
            sp = 1
            stack[0] = root
            while sp > 0:
                sp -= 1
                nd = stack[sp]
                first = n_first[nd]
                last = n_last[nd]
                if last < a or first > b:
                    continue
                if n_death[nd] <= t:
                    if not n_counted[nd] and nd != root:
                        # the parent is skipped once all its children are
                        n_counted[nd] = True
                        lvl = n_level[nd]
                        par = lv_off[lvl + 1] + (nd - lv_off[lvl]) // B
                        n_dead_kids[par] += 1
                        if n_dead_kids[par] == n_kids[par]:
                            n_death[par] = t
                    continue
                lvl = n_level[nd]
                if bound and n_built[nd]:
                    cur = sec if second else best
                    if cur > thr:
                        cur = thr
                    if cur < _INF:
                        cg = n_c[nd]
                        base, slope, mag = _group_affine(S, t, cg, n_m[nd], n_rho[nd], n_E[nd],
                                                         n_dmin[nd], n_dmax[nd])
                        lb = Qt + base + _hull_min_sorted(hd, hw, n_hoff[nd], n_h[nd], slope)
                        if lb > cur + tol * (abs(cur) + Qt + mag + 1.0):
                            sk_nd[nsk] = nd
                            sk_lb[nsk] = lb
                            nsk += 1
                            continue
                if lvl > 0:
                    k0 = (nd - lv_off[lvl]) * B
                    for j in range(n_kids[nd]):  # pushed oldest first: the newest is searched first
                        stack[sp] = lv_off[lvl - 1] + k0 + j
                        sp += 1
                    continue
                n_alive = 0
                for s in range(max(first, a), min(last, b) + 1):
                    fs = F1[s]
                    if fs == _INF or death[s] <= t:
                        continue
                    n_alive += 1
                    c = Qt - Q[s] - _sqdist(S, t, s) * inv[t - s]
                    if frob:
                        c += frob_w * _frob_overlap(s, t, tid, tstart, tstop) * inv[t - s]
                    v = fs + c
                    vals[s] = v
                    evald[ne] = s
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
                if n_alive == 0 and a <= first and last <= b:  # a complete leaf whose starts are all gone
                    n_death[nd] = t
            n_evals += ne
            if bi >= 0:
                extra = beta + end_term[t]
                F1[t] = best + extra
                bp1[t] = bi
                if second and si >= 0 and sec < _INF:
                    F2[t] = sec + extra
                    bp2[t] = si
                    bp2r[t] = sr
                ref = F2[t] if second else F1[t]
                if prune and ref < _INF:
                    thr_p = ref + slack + tol * (abs(ref) + 1.0)
                    kill = t + m
                    late = one_b[t] if one_b[t] > kill else kill
                    oa = one_a[t]
                    for e in range(ne):
                        s = evald[e]
                        if vals[s] > thr_p:
                            # an end inside an "exactly one" region around t may still need a start
                            # at or before that region's start
                            when = late if s <= oa else kill
                            if when < death[s]:
                                death[s] = when
                    # a skipped node whose bound already fails the test goes as a whole
                    for e in range(nsk):
                        if sk_lb[e] > thr_p:
                            nd = sk_nd[e]
                            if n_last[nd] <= oa:
                                n_death[nd] = min(n_death[nd], late)
                            elif n_first[nd] > oa:
                                n_death[nd] = min(n_death[nd], kill)
                            else:
                                for s in range(n_first[nd], n_last[nd] + 1):
                                    when = late if s <= oa else kill
                                    if when < death[s]:
                                        death[s] = when
        # ---------------- start t now has its final F: complete the nodes it closes
        if bound and t < T:
            lvl = 0
            while lvl < n_levels and (t + 1) % lv_size[lvl] == 0:
                nd = lv_off[lvl] + (t + 1) // lv_size[lvl] - 1
                n_min = _MIN_BOUNDED_LEAF if lvl == 0 else 1
                cnt = _build_node(S, Q, F1, death, t, n_first[nd], t + 1, nd, n_min, members, tmp_d, tmp_w, n_c,
                                  n_m, n_rho, n_E, n_dmin, n_dmax, n_hoff, n_h, hd, hw)
                if cnt == 0:
                    n_death[nd] = 0
                n_built[nd] = cnt >= n_min
                lvl += 1
    return F1, F2, bp1, bp2, bp2r, n_evals
