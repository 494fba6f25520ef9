"""Numba helpers of a static tree of candidate segment starts with lower bounds (shared by the DP kernels).

A dynamic program over segmentations asks, for every end ``t``, for the start ``s`` minimising
``W(s) + scatter(s, t)`` (``W`` the best value of the prefix ending at ``s``, plus terms that
depend on ``s`` only). The starts ``0..T`` are the leaves of a static tree: ``leaf`` consecutive
starts per leaf node, ``fanout`` children per inner node. Once every start of a node has its final
``W``, the node stores a centre ``c``, a least-squares drift of the prefix sums ``S`` around it, the
residual radius, and the lower convex hull of ``(s - c, W(s) - Q[s])``;
:func:`marginalia.decoders._segmentation_kernels._group_affine` and :func:`hull_min_sorted` turn these
into a lower bound of every member's value for any later end, so a search skips whole nodes whose
bound exceeds the best value found. Notation of ``S`` and ``Q`` as in :mod:`marginalia.decoders._segmentation_kernels`.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from ._segmentation_kernels import _FM, _group_geometry, _lower_hull

LEAF = 16           # starts per leaf (timed against 8 and 32 on synthetic, cohort and long-chromosome decodings)
FANOUT = 4          # children per inner node (timed against 8)
BOUND_TOL = 1e-10   # relative slack of a bound test (rounding of prefix sums)
# a leaf with fewer usable starts gets no bound: testing it would cost about as much as evaluating them
MIN_BOUNDED_LEAF = 4


@njit(cache=True, nogil=True)
def tree_layout(T, leaf, fanout):
    """Levels and nodes of the tree over the starts ``0..T``.

    Returns
    -------
    lv_size : (L,) starts per node of each level (``leaf * fanout**l``)
    lv_off : (L+1,) index of each level's first node (the root is the last node)
    n_level, n_first, n_last : (N,) level, first and last start of each node
    n_kids : (N,) number of children (0 for leaves)
    n_hoff : (N,) offset of the node's hull in a flat array of ``L * (T + 1)`` vertices
    """
    G = max(leaf, 1)
    B = max(fanout, 2)
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
    n_level = np.empty(n_nodes, np.int64)
    n_first = np.empty(n_nodes, np.int64)
    n_last = np.empty(n_nodes, np.int64)
    n_kids = np.zeros(n_nodes, np.int64)
    n_hoff = np.empty(n_nodes, np.int64)
    for lvl in range(n_levels):
        for k in range(lv_count[lvl]):
            nd = lv_off[lvl] + k
            n_level[nd] = lvl
            n_first[nd] = k * lv_size[lvl]
            n_last[nd] = min((k + 1) * lv_size[lvl], T + 1) - 1
            n_hoff[nd] = lvl * (T + 1) + n_first[nd]  # a hull has at most as many vertices as starts
            if lvl > 0:
                n_kids[nd] = min((k + 1) * B, lv_count[lvl - 1]) - k * B
    return lv_size, lv_off, n_level, n_first, n_last, n_kids, n_hoff


@njit(cache=True, nogil=True)
def new_node_geometry(n_nodes, q):
    """Empty geometry arrays of ``n_nodes`` nodes: centre, drift (q), radius, spread, offset range."""
    return (np.zeros(n_nodes, np.int64), np.zeros((n_nodes, q)), np.zeros(n_nodes), np.zeros(n_nodes),
            np.zeros(n_nodes), np.zeros(n_nodes))


@njit(cache=True, nogil=True)
def new_scratch(T, n_levels, fanout, n_hulls):
    """Work arrays of a search and of node building over ``T + 1`` starts.

    Returns ``n_hulls`` flat hull stores ``(hd, hw)`` (``n_levels * (T + 1)`` vertices each, in one
    ``(2 * n_hulls, n_levels * (T + 1))`` array: rows ``2 i``, ``2 i + 1``), the ``members`` and
    ``tmp_d``, ``tmp_w`` arrays of :func:`build_node`, and a depth-first stack (with room for one
    extra entry besides the nodes).
    """
    hulls = np.empty((2 * n_hulls, n_levels * (T + 1)))
    return (hulls, np.empty(T + 1, np.int64), np.empty(T + 1), np.empty(T + 1),
            np.empty(n_levels * max(fanout, 2) + 2, np.int64))


@njit(cache=True, nogil=True, fastmath=_FM)
def set_node_geometry(S, members, n, nd, geo):
    """Centre, drift, radii and offset range of the node ``nd`` over its ``n >= 1`` sorted ``members``.

    ``geo`` is the tuple of :func:`new_node_geometry`.
    """
    n_c, n_m, n_rho, n_E, n_dmin, n_dmax = geo
    c = members[n // 2]
    rho, E = _group_geometry(S, members, n, c, n_m[nd])
    n_c[nd] = c
    n_rho[nd] = rho
    n_E[nd] = E
    n_dmin[nd] = members[0] - c
    n_dmax[nd] = members[n - 1] - c


@njit(cache=True, nogil=True)
def node_hull(Q, W, members, n, c, off, hd, hw, tmp_d, tmp_w):
    """Store the lower hull of ``(s - c, W[s] - Q[s])`` over ``members`` at ``off``; returns its size.

    Members with an infinite ``W`` are left out (the hull is empty if all are).
    """
    for i in range(n):
        tmp_d[i] = members[i] - c
        tmp_w[i] = W[members[i]] - Q[members[i]]
    return _lower_hull(tmp_d, tmp_w, n, hd[off:], hw[off:])


@njit(cache=True, nogil=True)
def build_node(S, Q, W, members, n, nd, lvl, geo, off, hd, hw, tmp_d, tmp_w):
    """Geometry of node ``nd`` (level ``lvl``) over its ``n >= 1`` sorted ``members`` and the hull of ``W`` at ``off``.

    Returns the hull's size, or -1 (nothing stored) for a leaf of fewer than ``MIN_BOUNDED_LEAF`` members.
    """
    if n < (MIN_BOUNDED_LEAF if lvl == 0 else 1):
        return -1
    set_node_geometry(S, members, n, nd, geo)
    return node_hull(Q, W, members, n, geo[0][nd], off, hd, hw, tmp_d, tmp_w)


@njit(cache=True, nogil=True)
def hull_min_sorted(hd, hw, off, h, lam):
    """``min_i hw[i] + lam * hd[i]`` over a lower convex hull of ``h >= 1`` vertices stored at ``off``."""
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


@njit(cache=True, nogil=True, inline="always")
def pop_node(stack, sp, n_first, n_last, a, b):
    """Pop the top of a depth-first ``stack`` of ``sp`` nodes: ``(sp, node, first, last)``.

    ``node`` is -1 when the node holds no start of ``[a, b]`` (nothing to search there).
    """
    sp -= 1
    nd = stack[sp]
    first = n_first[nd]
    last = n_last[nd]
    if last < a or first > b:
        nd = -1
    return sp, nd, first, last


@njit(cache=True, nogil=True, inline="always")
def push_children(stack, sp, nd, lvl, lv_off, n_kids, fanout):
    """Push the children of inner node ``nd`` (level ``lvl`` > 0) on ``stack`` from ``sp``; returns the new ``sp``.

    Oldest first, so that a depth-first search pops the newest starts first.
    """
    k0 = (nd - lv_off[lvl]) * fanout
    for j in range(n_kids[nd]):
        stack[sp] = lv_off[lvl - 1] + k0 + j
        sp += 1
    return sp
