"""Numba kernel of the penalized segmentation decoder: optimal partitioning over a tree of bounded starts.

Notation as in :mod:`marginalia.decoders._segmentation_kernels`; the tree of candidate starts and its
bounds are those of :mod:`marginalia.decoders._start_tree`, with ``W = F``. For each end the tree is
searched depth first from the newest starts. On a long sequence with few changes, where pruning
removes almost nothing, an end then costs a few dozen node tests instead of a pass over
``sqrt(live starts)`` flat groups and one whole group.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from ._segmentation_kernels import _FM, _INF, _NEVER, _frob_overlap, _group_affine, _sqdist
from ._start_tree import (
    MIN_BOUNDED_LEAF,
    hull_min_sorted,
    new_node_geometry,
    node_hull,
    push_children,
    set_node_geometry,
    tree_layout,
)


@njit(cache=True, nogil=True, fastmath=_FM)
def _penalized(S, Q, beta, m, lo, hi, end_ok, one_a, one_b, end_term,
               tid, tstart, tstop, frob_w, slack, second, prune, bound, leaf, fanout, tol, kill_t):
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
      pruned when it is built; a leaf with fewer than ``MIN_BOUNDED_LEAF`` of them gets none.

    When ``kill_t`` has ``T + 1`` entries (else it is empty), ``kill_t[s]`` receives the first end ``t``
    whose test removed the start ``s`` (``_NEVER`` if none): ``F(s) + cost(s, u) > F(t) + cost(t, u)`` for
    every later end ``u`` (with ``slack = 0``), which :mod:`marginalia.decoders._seg_runner_up` uses to skip
    starts.

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
    record = kill_t.shape[0] == T + 1
    if record:
        kill_t[:] = _NEVER
    B = max(fanout, 2)
    lv_size, lv_off, n_level, n_first, n_last, n_kids, n_hoff = tree_layout(T, leaf, fanout)
    n_levels = lv_size.shape[0]
    n_nodes = lv_off[n_levels]
    q = S.shape[1]
    n_dead_kids = np.zeros(n_nodes, np.int64)
    n_counted = np.zeros(n_nodes, np.bool_)
    n_built = np.zeros(n_nodes, np.bool_)
    n_death = np.full(n_nodes, _NEVER)
    n_c, n_m, n_rho, n_E, n_dmin, n_dmax = new_node_geometry(n_nodes, q)
    n_h = np.zeros(n_nodes, np.int64)
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
                if second and t > 1:
                    # the last end's runner-up start, extended to t, and (h, rank 1) are two distinct
                    # candidates: the second best at t is at most the larger of them
                    h2 = bp2[t - 1]
                    if h2 >= a and h2 <= b and (h2 != h or bp2r[t - 1] != 1):
                        f2 = F1[h2] if bp2r[t - 1] == 1 else F2[h2]
                        if f2 < _INF:
                            c2 = Qt - Q[h2] - _sqdist(S, t, h2) * inv[t - h2]
                            if frob:
                                c2 += frob_w * _frob_overlap(h2, t, tid, tstart, tstop) * inv[t - h2]
                            v2 = f2 + c2
                            v1 = F1[h] + c
                            cand = v2 if v2 > v1 else v1
                            if cand < thr:
                                thr = cand
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
                        lb = Qt + base + hull_min_sorted(hd, hw, n_hoff[nd], n_h[nd], slope)
                        if lb > cur + tol * (abs(cur) + Qt + mag + 1.0):
                            sk_nd[nsk] = nd
                            sk_lb[nsk] = lb
                            nsk += 1
                            continue
                if lvl > 0:
                    sp = push_children(stack, sp, nd, lvl, lv_off, n_kids, B)
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
                            if record and kill_t[s] == _NEVER:
                                kill_t[s] = t
                            # an end inside an "exactly one" region around t may still need a start
                            # at or before that region's start
                            when = late if s <= oa else kill
                            if when < death[s]:
                                death[s] = when
                    # a skipped node whose bound already fails the test goes as a whole
                    for e in range(nsk):
                        if sk_lb[e] > thr_p:
                            nd = sk_nd[e]
                            if record and n_death[nd] == _NEVER:
                                for s in range(n_first[nd], n_last[nd] + 1):
                                    if kill_t[s] == _NEVER:
                                        kill_t[s] = t
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
                # the bound covers the starts not pruned by now: a pruned start never serves again
                n = np.int64(0)  # typed, not a literal: set_node_geometry compiles once for every caller
                for s in range(n_first[nd], t + 1):
                    if F1[s] < _INF and death[s] > t:
                        members[n] = s
                        n += 1
                if n == 0:
                    n_death[nd] = 0
                elif n >= (MIN_BOUNDED_LEAF if lvl == 0 else 1):
                    set_node_geometry(S, members, n, nd, n_c, n_m, n_rho, n_E, n_dmin, n_dmax)
                    n_h[nd] = node_hull(Q, F1, members, n, n_c[nd], n_hoff[nd], hd, hw, tmp_d, tmp_w)
                    n_built[nd] = True
                lvl += 1
    return F1, F2, bp1, bp2, bp2r, n_evals
