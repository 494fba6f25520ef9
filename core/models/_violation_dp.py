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

from ..decoders import _start_tree as tree
from ..decoders._segmentation_kernels import _group_affine
from ..decoders._start_tree import BOUND_TOL as TOL
from ..decoders._start_tree import FANOUT, LEAF

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
def _from_start(S1, S2, s, t, T, F, inside, rid, lab_lo, lab_hi, zv, first_ge, n_le, penalty, boundary_gain, scale,
                counts):
    """Best path into ``t`` whose last segment is ``[s, t)``: ``(value, state at s)``, ``(inf, -1)`` if none.

    The arithmetic, and the first-state-wins tie rule, are those of a textbook DP scanning every start.
    """
    if F[s, 0] == _INF and F[s, 1] == _INF and F[s, 2] == _INF:
        return _INF, -1
    base = _segment_cost(S1, S2, s, t) + penalty
    if t < T:
        base += scale * boundary_gain[t]
    rs = rid[s] if s > 0 else -1
    best = _INF
    arg = -1
    for k in range(3):
        f = F[s, k]
        if f == _INF:
            continue
        v = f + base
        if inside:
            if counts and k == 2 and lab_hi[rs] >= 0:
                v -= scale      # a third (fourth, ...) change inside a bounded label: one more error
        else:
            if rs >= 0:
                v -= scale * _label_loss(lab_lo[rs], lab_hi[rs], k, counts)
            a = first_ge[s]
            b = n_le[t]
            if b > a:
                v -= scale * (zv[b] - zv[a])
        if v < best:
            best = v
            arg = k
    return best, arg


@numba.njit(cache=True, nogil=True)
def _best_start(S1, S2, Q, inv, t, a, b, inside, hint, W, F, rid, lab_lo, lab_hi, zv, first_ge, n_le, penalty,
                boundary_gain, scale, counts, bound, lv_off, n_level, n_first, n_last, n_kids, n_built, geo, n_hoff,
                n_h, hd, hw, stack, near, near_v):
    """Best path into ``t`` whose last segment starts in ``[a, b]``: ``(value, start, state)``.

    Two passes. The search values every start by ``W(s) + scatter(s, t) + c(t)`` (one product per
    start; ``W`` from :func:`_start_values`), skips the tree's nodes whose bound exceeds the best
    such value, and keeps the starts within the rounding tolerance of the best. Those few are then
    valued as a textbook DP would (:func:`_from_start`), exact ties going to the smallest (start,
    state): the result is that DP's, bit for bit, whatever the search order.
    """
    T = Q.shape[0] - 1
    q = S1.shape[1]
    Qt = Q[t]
    c_t = penalty + (scale * boundary_gain[t] if t < T else 0.0)
    if not inside:
        c_t -= scale * zv[n_le[t]]
    best = _INF
    near_thr = _INF
    n_near = 0
    stack[0] = n_level.shape[0] - 1
    sp = 1
    if a <= hint <= b and W[hint] < _INF:
        stack[1] = -1 - hint  # popped first, so that the bounds bite early
        sp = 2
    while sp > 0:
        sp -= 1
        nd = stack[sp]
        if nd < 0:
            first = last = -1 - nd
        else:
            first = n_first[nd]
            last = n_last[nd]
            if last < a or first > b:
                continue
            if bound and n_built[nd]:
                h = n_h[nd]
                if h == 0:
                    continue
                if best < _INF:
                    n_c, n_m, n_rho, n_E, n_dmin, n_dmax = geo
                    base, slope, mag = _group_affine(S1, t, n_c[nd], n_m[nd], n_rho[nd], n_E[nd], n_dmin[nd], n_dmax[nd])
                    lb = Qt + base + tree.hull_min_sorted(hd, hw, n_hoff[nd], h, slope) + c_t
                    if lb > best + TOL * (abs(best) + Qt + mag + abs(c_t) + 1.0):
                        continue
            lvl = n_level[nd]
            if lvl > 0:
                sp = tree.push_children(stack, sp, nd, lvl, lv_off, n_kids, FANOUT)
                continue
        for s in range(min(last, b), max(first, a) - 1, -1):
            ws = W[s]
            if ws == _INF:
                continue
            acc = 0.0
            for j in range(q):
                d = S1[t, j] - S1[s, j]
                acc += d * d
            v = ws + (Qt - Q[s] - acc * inv[t - s]) + c_t
            if v < best:
                best = v
                near_thr = best + TOL * (abs(best) + Qt + abs(c_t) + 1.0)
            if v <= near_thr:
                near[n_near] = s
                near_v[n_near] = v
                n_near += 1
    # the textbook values of the starts that may hold the optimum
    thr = near_thr
    best = _INF
    arg = -1
    argk = -1
    for i in range(n_near):
        if near_v[i] > thr:
            continue
        s = near[i]
        v, k = _from_start(S1, S2, s, t, T, F, inside, rid, lab_lo, lab_hi, zv, first_ge, n_le, penalty,
                           boundary_gain, scale, counts)
        if v < best or (v == best and k >= 0 and (s < arg or (s == arg and k < argk))):
            best = v
            arg = s
            argk = k
    return best, arg, argk


@numba.njit(cache=True, nogil=True)
def _start_values(s, F, rid, lab_lo, lab_hi, zv, first_ge, scale, counts, W_out, W_in):
    """The start terms of the bounds: every path's value through the final start ``s`` is at least
    ``W(s) + scatter(s, t) + c(t)``.

    ``W_out[s]``: ``[s, t)`` leaves the label of ``s`` (closed with its count) and skips every
    label starting at or after ``s`` (the ones ending by ``t`` are closed with no change; ``c(t)``
    holds their prefix sum at ``t``). ``W_in[s]``: ``t`` lies in the label of ``s``, whose count
    goes on (a start inside a label has state 1 or 2, never 0).
    """
    rs = rid[s] if s > 0 else -1
    best = _INF
    for k in range(3):
        f = F[s, k]
        if f == _INF:
            continue
        if rs >= 0:
            f -= scale * _label_loss(lab_lo[rs], lab_hi[rs], k, counts)
        best = min(best, f)
    if best < _INF:
        W_out[s] = best + scale * zv[first_ge[s]]
    if rs < 0:
        return
    for k in range(1, 3):
        f = F[s, k]
        if f == _INF:
            continue
        if counts and k == 2 and lab_hi[rs] >= 0:
            f -= scale
        W_in[s] = min(W_in[s], f)


@numba.njit(cache=True, nogil=True)
def violation_dp(Z, penalty, min_size, rid, lab_lo, lab_hi, lab_start, lab_stop, boundary_gain, scale,
                 counts=False, bound=True):
    """Return (changes array ending with T, objective).

    Z : (T, q) transformed features (metric already applied)
    rid : (T+1,) label index of change index c (start < c < stop), -1 if none
    lab_* : (R,) labels sorted by start, disjoint; lo/hi change-count bounds (hi=-1 unbounded)
    boundary_gain : (T+1,) 1.0 where a boundary label sits (its violation vanishes if a change is placed there)
    counts : count wrong change decisions instead of violated labels
    bound : skip starts by the lower bounds of a tree of starts (exact; off for testing)

    The last segment ``[s, t)`` of a prefix ending inside a label ``r`` either starts inside ``r``
    (``start_r < s``: state 2, nothing closed) or at or before ``start_r`` (state 1; the label of
    ``s`` and every label skipped over are closed); outside labels only the second kind exists
    (state 0). Either way its value is at least ``W(s) + scatter(s, t) + c(t)`` with ``W`` depending
    on the start only (:func:`_start_values`), so each state is a range minimum over a tree of
    bounded starts (:mod:`marginalia.decoders._start_tree`), as in the penalized decoder.
    """
    T, q = Z.shape
    R = lab_lo.shape[0]
    S1 = np.zeros((T + 1, q))
    S2 = np.zeros((T + 1, q))
    Q = np.zeros(T + 1)
    for t in range(T):
        acc = 0.0
        for j in range(q):
            S1[t + 1, j] = S1[t, j] + Z[t, j]
            S2[t + 1, j] = S2[t, j] + Z[t, j] * Z[t, j]
            acc += Z[t, j] * Z[t, j]
        Q[t + 1] = Q[t] + acc
    # zero-count violations: prefix sums over labels (sorted by start == sorted by stop when disjoint)
    zv = np.zeros(R + 1)
    no_change = np.int64(0)
    for r in range(R):
        zv[r + 1] = zv[r] + _label_loss(lab_lo[r], lab_hi[r], no_change, counts)
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

    F = np.full((T + 1, 3), _INF)
    arg_s = np.full((T + 1, 3), -1, dtype=np.int64)
    arg_k = np.full((T + 1, 3), -1, dtype=np.int64)
    F[0, 0] = -scale * total_boundaries
    W_out = np.full(T + 1, _INF)
    W_in = np.full(T + 1, _INF)

    lv_size, lv_off, n_level, n_first, n_last, n_kids, n_hoff = tree.tree_layout(T, np.int64(LEAF), np.int64(FANOUT))
    n_levels = lv_size.shape[0]
    n_nodes = lv_off[n_levels]
    n_built = np.zeros(n_nodes, np.bool_)
    geo = tree.new_node_geometry(n_nodes, q)
    h_out = np.zeros(n_nodes, np.int64)
    h_in = np.zeros(n_nodes, np.int64)
    hulls, members, tmp_d, tmp_w, stack = tree.new_scratch(T, n_levels, np.int64(FANOUT), np.int64(2))
    hd_out, hw_out, hd_in, hw_in = hulls[0], hulls[1], hulls[2], hulls[3]
    near = np.empty(T + 2, np.int64)  # starts within rounding of the best, and their values
    near_v = np.empty(T + 2)
    inv = np.zeros(T + 1)
    for d in range(1, T + 1):
        inv[d] = 1.0 / d
    # typed, not the literal -1: a literal first hint would compile _best_start twice more (the literal
    # 0 and True/False below are kept: they specialise the searches outside and inside a label)
    hint_out = np.int64(-1)
    hint_in = np.int64(-1)
    for t in range(T + 1):
        if t >= min_size and t > 0:
            rt = rid[t] if t < T else -1
            b = t - min_size
            # starts at or before the start of t's label (all starts when t is in none)
            b_out = min(b, lab_start[rt]) if rt >= 0 else b
            if b_out >= 0:
                v, s, k = _best_start(S1, S2, Q, inv, t, 0, b_out, False, hint_out, W_out, F, rid, lab_lo, lab_hi,
                                      zv, first_ge, n_le, penalty, boundary_gain, scale, counts, bound, lv_off,
                                      n_level, n_first, n_last, n_kids, n_built, geo, n_hoff, h_out, hd_out, hw_out, stack, near,
                                      near_v)
                if s >= 0:
                    nk = 1 if rt >= 0 else 0
                    F[t, nk] = v
                    arg_s[t, nk] = s
                    arg_k[t, nk] = k
                    hint_out = s
            # starts inside t's label
            if rt >= 0 and lab_start[rt] + 1 <= b:
                v, s, k = _best_start(S1, S2, Q, inv, t, lab_start[rt] + 1, b, True, hint_in, W_in, F, rid, lab_lo,
                                      lab_hi, zv, first_ge, n_le, penalty, boundary_gain, scale, counts, bound, lv_off,
                                      n_level, n_first, n_last, n_kids, n_built, geo, n_hoff, h_in, hd_in, hw_in, stack, near,
                                      near_v)
                if s >= 0:
                    F[t, 2] = v
                    arg_s[t, 2] = s
                    arg_k[t, 2] = k
                    hint_in = s
        if t == T:
            break
        _start_values(t, F, rid, lab_lo, lab_hi, zv, first_ge, scale, counts, W_out, W_in)
        if not bound:
            continue
        # start t is final: complete the nodes it closes
        lvl = np.int64(0)
        while lvl < n_levels and (t + 1) % lv_size[lvl] == 0:
            nd = lv_off[lvl] + (t + 1) // lv_size[lvl] - 1
            n = np.int64(0)
            for s in range(n_first[nd], t + 1):
                if W_out[s] < _INF or W_in[s] < _INF:
                    members[n] = s
                    n += 1
            if n == 0:
                n_built[nd] = True  # empty hulls: skipped by every search
            else:
                h = tree.build_node(S1, Q, W_out, members, n, nd, lvl, geo, n_hoff[nd], hd_out, hw_out, tmp_d, tmp_w)
                if h >= 0:
                    h_out[nd] = h
                    h_in[nd] = tree.node_hull(Q, W_in, members, n, geo[0][nd], n_hoff[nd], hd_in, hw_in, tmp_d, tmp_w)
                    n_built[nd] = True
            lvl += 1
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
