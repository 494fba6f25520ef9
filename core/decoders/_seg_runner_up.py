"""Numba kernel of the penalized second best, read off the plain decoder's prefix values.

Notation as in :mod:`marginalia.decoders._segmentation_kernels`. The penalized decoder is a shortest
path from 0 to ``T`` over ends, with an edge ``(s, t)`` per allowed segment ``[s, t)`` (the labels only
remove edges: ``lo``, ``hi``, ``end_ok``). Any segmentation ``y`` other than the best one ``y*`` has a
*last* segment ``[s, u)`` that is not a segment of ``y*``; every later segment is one of ``y*``, so ``u``
is an end of ``y*``, and the cheapest ``y`` with that last deviation is the best prefix of ``[0, s)``
(value ``F[s]``) followed by ``[s, u)`` and the rest of ``y*``. Hence

    second = best + min over ends u of y*, starts s != bp[u] of  F[s] + cost(s, u) - (F[bp[u]] + cost(bp[u], u)),

a search over the starts of the (few) ends of ``y*`` only. A second-best recursion over every end
(two values per prefix) costs more than the plain decoder on a sequence without change, where the
runner-up of every end is a near-tie between all starts and the tree's bounds separate few of them;
here only the last end is searched. A start the plain decoder removed at an end ``t`` has
``F[s] + cost(s, u) > F[t] + cost(t, u)`` for every later ``u`` (cost is super-additive), so it is
skipped when ``t`` is an allowed start of ``u`` other than ``bp[u]``: ``t`` is a better candidate. The
search reuses the static tree of
:mod:`marginalia.decoders._start_tree`, built once over every start with its final ``F`` (no start
is pruned: a start the plain decoder dropped may still be a runner-up), and skips a node whose
lower bound exceeds the best gap found so far.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from . import _start_tree as tree
from ._segmentation_kernels import _FM, _INF, _group_affine, _sqdist


@njit(cache=True, nogil=True, fastmath=_FM)
def _value(S, Q, F, inv, s, t):
    """``F[s] + scatter(s, t)``: the value of end ``t`` through the start ``s``."""
    return F[s] + Q[t] - Q[s] - _sqdist(S, t, s) * inv[t - s]


@njit(cache=True, nogil=True, fastmath=_FM)
def runner_up_at_ends(S, Q, F, bp, kill_t, ends, lo, hi, leaf, fanout, max_bounded, tol):
    """The cheapest deviation from the best segmentation at one of its ends.

    Parameters
    ----------
    S, Q : prefix sums, shapes (T+1, q) and (T+1,)
    F : (T+1,) final prefix values of the plain penalized decoder (``inf``: unreachable)
    bp : (T+1,) best start of the last segment of every end
    kill_t : (T+1,) the end whose test removed each start in the plain decoder (``_NEVER``: none)
    ends : (K,) ascending segment ends of the best segmentation (the last is ``T``)
    lo, hi : (T+1,) allowed starts of every end (inclusive; ``hi`` already holds ``t - min_size``)
    leaf, fanout : tree shape
    max_bounded : nodes of more starts get no bound (they span many changes: building it costs more
        than it saves)
    tol : relative slack of a bound test

    Returns
    -------
    gap : float
        ``second - best`` (``inf`` when no other segmentation exists).
    u, s : int
        The end of ``y*`` and the other start of the deviation (``-1`` when none).
    """
    T = S.shape[0] - 1
    inv = np.empty(T + 1)
    inv[0] = 0.0
    for d in range(1, T + 1):
        inv[d] = 1.0 / d
    B = max(fanout, 2)
    lv_size, lv_off, n_level, n_first, n_last, n_kids, n_hoff = tree.tree_layout(T, leaf, fanout)
    n_levels = lv_size.shape[0]
    n_nodes = lv_off[n_levels]
    q = S.shape[1]
    geo = tree.new_node_geometry(n_nodes, q)
    n_h = np.zeros(n_nodes, np.int64)
    n_built = np.zeros(n_nodes, np.bool_)
    hulls, members, tmp_d, tmp_w, stack = tree.new_scratch(T, n_levels, B, np.int64(1))
    hd = hulls[0]
    hw = hulls[1]
    # the range of the removal ends of every node's starts
    n_kmin = np.empty(n_nodes, np.int64)
    n_kmax = np.empty(n_nodes, np.int64)
    for nd in range(lv_off[1]):
        lo_k = kill_t[n_first[nd]]
        hi_k = lo_k
        for s in range(n_first[nd] + 1, n_last[nd] + 1):
            lo_k = min(lo_k, kill_t[s])
            hi_k = max(hi_k, kill_t[s])
        n_kmin[nd] = lo_k
        n_kmax[nd] = hi_k
    for lvl in range(1, n_levels):
        for nd in range(lv_off[lvl], lv_off[lvl + 1]):
            k0 = lv_off[lvl - 1] + (nd - lv_off[lvl]) * B
            lo_k = n_kmin[k0]
            hi_k = n_kmax[k0]
            for j in range(1, n_kids[nd]):
                lo_k = min(lo_k, n_kmin[k0 + j])
                hi_k = max(hi_k, n_kmax[k0 + j])
            n_kmin[nd] = lo_k
            n_kmax[nd] = hi_k
    # nodes are built lazily: only those a search reaches and can bound (every start < the end)
    gap = _INF
    gu = -1
    gs = -1
    root = n_nodes - 1
    # seed the gap with the usual runners-up, so that every search starts with a tight threshold:
    # a change moved by one sample, or merged with the previous one
    best_at = np.full(ends.shape[0], _INF)  # the best value of each end (inf: no other start allowed)
    for e in range(ends.shape[0]):
        u = ends[e]
        s1 = bp[u]
        a = lo[u]
        b = min(hi[u], u - 1)
        if s1 < 0 or b < a:
            continue
        best = best_at[e] = _value(S, Q, F, inv, s1, u)
        for s in (s1 - 1, s1 + 1, bp[s1] if s1 > 0 else -1):
            if s >= a and s <= b and s != s1 and F[s] < _INF:
                g = _value(S, Q, F, inv, s, u) - best
                if g < gap:
                    gap = g
                    gu = u
                    gs = s
    for e in range(ends.shape[0]):
        best = best_at[e]
        if best == _INF:
            continue
        u = ends[e]
        s1 = bp[u]
        a = lo[u]
        b = min(hi[u], u - 1)
        Qt = Q[u]
        sp = 1
        stack[0] = root
        while sp > 0:
            sp, nd, first, last = tree.pop_node(stack, sp, n_first, n_last, a, b)
            # no allowed start, or every start removed by an end t that is itself an allowed start of u
            # other than the best one: beaten by that candidate, so not the runner-up
            if nd < 0 or (n_kmax[nd] <= b and n_kmin[nd] >= a and (s1 < n_kmin[nd] or s1 > n_kmax[nd])):
                continue
            lvl = n_level[nd]
            if last < u and gap < _INF and last - first < max_bounded:
                if not n_built[nd]:
                    n_built[nd] = True
                    n = np.int64(0)
                    for s in range(first, last + 1):
                        if F[s] < _INF:
                            members[n] = s
                            n += 1
                    if n == 0:
                        n_h[nd] = -1
                    else:
                        n_h[nd] = max(tree.build_node(S, Q, F, members, n, nd, lvl, geo, n_hoff[nd], hd, hw,
                                                      tmp_d, tmp_w), 0)
                if n_h[nd] < 0:
                    continue  # no reachable start
                if n_h[nd] > 0:
                    cur = best + gap
                    n_c, n_m, n_rho, n_E, n_dmin, n_dmax = geo
                    base, slope, mag = _group_affine(S, u, n_c[nd], n_m[nd], n_rho[nd], n_E[nd], n_dmin[nd], n_dmax[nd])
                    lb = Qt + base + tree.hull_min_sorted(hd, hw, n_hoff[nd], n_h[nd], slope)
                    if lb > cur + tol * (abs(cur) + Qt + mag + 1.0):
                        continue
            if lvl > 0:
                sp = tree.push_children(stack, sp, nd, lvl, lv_off, n_kids, B)
                continue
            for s in range(max(first, a), min(last, b) + 1):
                kt = kill_t[s]
                if s == s1 or F[s] == _INF or (kt >= a and kt <= b and kt != s1):
                    continue
                g = _value(S, Q, F, inv, s, u) - best
                if g < gap:
                    gap = g
                    gu = u
                    gs = s
    return gap, gu, gs
