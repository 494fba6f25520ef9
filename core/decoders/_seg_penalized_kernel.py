"""Numba kernel of the penalized segmentation decoder: optimal partitioning, a flat list then a tree of starts.

Notation as in :mod:`marginalia.decoders._segmentation_kernels`. The decoding starts with the live
starts in one compact list (:func:`_flat_phase`): while pruning keeps it short (a sequence with
regular changes), a pass over it is the cheapest search. Once it grows past ``max_live`` starts (few
changes: pruning removes almost nothing), the rest of the sequence is searched in the tree of
bounded starts of :mod:`marginalia.decoders._start_tree` (with ``W = F``), depth first from the newest
starts (:func:`_tree_phase`): an end then costs a few dozen node tests. One feature without labels
(the aCGH case) is decoded instead with functional pruning (:func:`_functional_phase`, FPOP of
Maidstone et al. 2017), which keeps a few dozen starts even where PELT keeps them all.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from . import _start_tree as tree
from ._segmentation_kernels import _FM, _INF, _NEVER, _frob_term, _group_affine, _sqdist


@njit(cache=True, nogil=True)
def _inverses(T):
    """``1 / d`` for ``d = 0..T`` (0 for 0): a multiplication per evaluated pair instead of a division."""
    inv = np.empty(T + 1)
    inv[0] = 0.0
    for d in range(1, T + 1):
        inv[d] = 1.0 / d
    return inv


@njit(cache=True, nogil=True, inline="always")
def _prune_rule(ref, slack, tol, t, m, one_a, one_b):
    """The pruning test at end ``t`` of value ``ref``: its threshold and the removal ends it sets.

    A start valued above the threshold is removed from the end ``kill = t + m`` on; inside an
    "exactly one" region around ``t`` (starting at ``one_a[t]``) an end may still need a start at or
    before the region's start, so those are removed only from ``late``, past the region.
    Returns ``(threshold, kill, late, one_a[t])``.
    """
    kill = t + m
    late = one_b[t] if one_b[t] > kill else kill
    return ref + slack + tol * (abs(ref) + 1.0), kill, late, one_a[t]


@njit(cache=True, nogil=True)
def _prune_evaluated(starts, vals, n, thr_p, t, kill, late, oa, record, kill_t, death):
    """Remove each of the ``n`` starts ``starts[i]`` whose value ``vals[i]`` fails the test at ``t``.

    Sets their ``death`` (``kill`` or, at or before ``oa``, ``late``) and records ``t`` in ``kill_t``.
    """
    for i in range(n):
        if vals[i] > thr_p:
            s = starts[i]
            if record and kill_t[s] == _NEVER:
                kill_t[s] = t
            when = late if s <= oa else kill
            if when < death[s]:
                death[s] = when


@njit(cache=True, nogil=True, fastmath=_FM)
def _flat_phase(S, Q, beta, m, lo, hi, end_ok, one_a, one_b, end_term, tid, tstart, tstop, wl, frob_w, slack,
                prune, tol, kill_t, max_live, F1, bp1, death):
    """Optimal partitioning over one compact, ascending list of the live starts, while it stays short.

    The same values and pruning as :func:`_tree_phase` (without second best): a start joins the list
    once it can start a segment (``s <= t - m``, ``F1[s]`` finite) and leaves it, at the pruning pass,
    once it falls below ``lo`` or its ``death`` has come; starts above ``hi[t]`` (inside an "exactly
    one" region) wait in it. Stops before the first end at which the list holds more than
    ``max_live`` starts.

    Returns
    -------
    t0 : int
        The first end not decoded (``T + 1`` when all are).
    n_evals : int
        Number of (start, end) pairs evaluated exactly.
    """
    T = S.shape[0] - 1
    inv = _inverses(T)
    frob = frob_w != 0.0
    record = kill_t.shape[0] == T + 1
    live = np.empty(T + 1, np.int64)
    vals = np.empty(T + 1)
    n = np.int64(0)  # typed, not a literal: _prune_evaluated compiles once for both phases
    nxt = 0  # the next start to join the list
    n_evals = 0
    for t in range(1, T + 1):
        while nxt <= t - m:
            if F1[nxt] < _INF:
                live[n] = nxt
                n += 1
            nxt += 1
        if n > max_live:
            return t, n_evals
        a = lo[t]
        b = min(hi[t], t - 1)
        if not end_ok[t] or b < a:
            continue
        best = _INF
        bi = -1
        Qt = Q[t]
        for i in range(n):
            s = live[i]
            if s < a or s > b or death[s] <= t:
                vals[i] = -_INF  # not evaluated: never pruned here
                continue
            c = Qt - Q[s] - _sqdist(S, t, s) * inv[t - s]
            if frob:
                c += _frob_term(s, t, tid, tstart, tstop, wl, frob_w) * inv[t - s]
            v = F1[s] + c
            vals[i] = v
            n_evals += 1
            if v < best:
                best = v
                bi = s
        if bi < 0:
            continue
        F1[t] = best + beta + end_term[t]
        bp1[t] = bi
        if prune:
            thr_p, kill, late, oa = _prune_rule(F1[t], slack, tol, t, m, one_a, one_b)
            _prune_evaluated(live, vals, n, thr_p, t, kill, late, oa, record, kill_t, death)
            # keep the starts that may serve a later end (lo never decreases)
            k = 0
            for i in range(n):
                s = live[i]
                if s >= a and death[s] > t + 1:
                    live[k] = s
                    k += 1
            n = k
    return T + 1, n_evals


@njit(cache=True, nogil=True)
def _functional_phase(S, Q, beta, end_term, tol, kill_t, F1, bp1):
    """Optimal partitioning of a single feature without labels (``min_size = 1``), pruned functionally (FPOP).

    Seen as a function of the last segment's mean ``mu``, the start ``s`` costs
    ``q_s(mu) = F(s) + sum_{i in [s, t)} (z_i - mu)^2``; two starts' functions differ by a constant
    function of ``mu`` as ``t`` grows, so ``s`` can never again be the best at a ``mu`` where a later
    start ``r`` beat it once: ``q_s(mu) > F(r)`` at ``t = r``, i.e. ``mu`` outside
    ``I_s(r) = [mean(s, r) -+ sqrt((F(r) - F(s) - scatter(s, r)) / (r - s))]``. The line of means is
    cut in pieces, each with one start that may still be best there; at each end every piece keeps
    its start on ``I_s(t)`` and gives the rest to the new start ``t``, and a start without a piece is
    dropped (PELT drops it only when ``I_s(t)`` is empty: on a long stretch without change it keeps
    them all, this keeps a few dozen). Ends are still decoded by the exact value of every kept start.

    Rounding: a start keeps ``I_s`` widened by the tolerance of the pruning test and ``t`` takes the
    complement of ``I_s`` narrowed by it, so pieces may overlap but each start's pieces cover every
    mean where it may still be best: no start that can serve is dropped.

    ``kill_t`` (when it has ``T + 1`` entries) receives, as in :func:`_flat_phase`, the end whose PELT
    test (an empty ``I_s(t)``) removed a start; a start dropped earlier by its pieces keeps ``_NEVER``.
    Returns the number of (start, end) pairs evaluated exactly.
    """
    T = S.shape[0] - 1
    inv = _inverses(T)
    record = kill_t.shape[0] == T + 1
    live = np.empty(T + 1, np.int64)
    vals = np.empty(T + 1)
    keep_lo = np.empty(T + 1)  # per start: I_s(t) widened ...
    keep_hi = np.empty(T + 1)
    give_lo = np.empty(T + 1)  # ... and narrowed
    give_hi = np.empty(T + 1)
    n_pieces = np.zeros(T + 1, np.int64)
    # the pieces of this end and of the next one (swapped after each end)
    p_lo = np.empty(64)
    p_hi = np.empty(64)
    p_own = np.empty(64, np.int64)
    q_lo = np.empty(64)
    q_hi = np.empty(64)
    q_own = np.empty(64, np.int64)
    live[0] = 0
    n = 1
    p_lo[0] = -_INF
    p_hi[0] = _INF
    p_own[0] = 0
    K = 1
    n_evals = 0
    for t in range(1, T + 1):
        best = _INF
        bi = -1
        St = S[t, 0]
        Qt = Q[t]
        for i in range(n):
            s = live[i]
            d = St - S[s, 0]
            v = F1[s] + (Qt - Q[s] - d * d * inv[t - s])
            vals[i] = v
            if v < best:
                best = v
                bi = s
        n_evals += n
        F1[t] = best + beta + end_term[t]
        bp1[t] = bi
        if t == T:
            break
        e = tol * (abs(F1[t]) + 1.0)
        for i in range(n):
            s = live[i]
            gap = F1[t] - vals[i]
            c = (St - S[s, 0]) * inv[t - s]
            n_pieces[s] = 0
            if gap + e < 0.0:
                keep_lo[s] = _INF
                keep_hi[s] = -_INF
                if record and kill_t[s] == _NEVER:
                    kill_t[s] = t
            else:
                r = np.sqrt((gap + e) * inv[t - s]) * (1.0 + 1e-9) + 1e-12 * abs(c)
                keep_lo[s] = c - r
                keep_hi[s] = c + r
            if gap - e > 0.0:
                r = np.sqrt((gap - e) * inv[t - s]) * (1.0 - 1e-9) - 1e-12 * abs(c)
                give_lo[s] = c - r
                give_hi[s] = c + r
            else:
                give_lo[s] = _INF
                give_hi[s] = -_INF
        # the new pieces, in the order of their left ends: [t | s | t] from each old piece of s
        if q_lo.shape[0] < 3 * K:  # their old content is not needed
            q_lo = np.empty(6 * K)
            q_hi = np.empty(6 * K)
            q_own = np.empty(6 * K, np.int64)
        k = 0
        lt = -1  # t's last piece: pieces keep the order of their left ends
        for j in range(K):
            lo = p_lo[j]
            hi = p_hi[j]
            s = p_own[j]
            g_lo = give_lo[s]
            g_hi = give_hi[s]
            if g_lo > g_hi or g_hi <= lo or g_lo >= hi:  # t may be best on the whole piece
                k, lt = _add_piece(q_lo, q_hi, q_own, k, lt, lo, hi, t)
            elif lo < g_lo:
                k, lt = _add_piece(q_lo, q_hi, q_own, k, lt, lo, g_lo, t)
            a = max(lo, keep_lo[s])
            b = min(hi, keep_hi[s])
            if a <= b:
                q_lo[k] = a
                q_hi[k] = b
                q_own[k] = s
                k += 1
                n_pieces[s] += 1
            if g_lo <= g_hi and g_lo < hi and lo < g_hi < hi:
                k, lt = _add_piece(q_lo, q_hi, q_own, k, lt, g_hi, hi, t)
        p_lo, q_lo = q_lo, p_lo
        p_hi, q_hi = q_hi, p_hi
        p_own, q_own = q_own, p_own
        K = k
        m = 0
        for i in range(n):
            if n_pieces[live[i]] > 0:
                live[m] = live[i]
                m += 1
        if lt >= 0:
            live[m] = t
            m += 1
        n = m
    return n_evals


@njit(cache=True, nogil=True, inline="always")
def _add_piece(q_lo, q_hi, q_own, k, lt, lo, hi, t):
    """Give ``[lo, hi]`` to the new start ``t``: extend its last piece ``lt`` if they touch, else append.

    Returns the new number of pieces and the index of ``t``'s last piece.
    """
    if lt >= 0 and q_hi[lt] >= lo:
        if hi > q_hi[lt]:
            q_hi[lt] = hi
        return k, lt
    q_lo[k] = lo
    q_hi[k] = hi
    q_own[k] = t
    return k + 1, k


@njit(cache=True, nogil=True)
def _penalized(S, Q, beta, m, lo, hi, end_ok, one_a, one_b, end_term,
               tid, tstart, tstop, frob_w, slack, second, prune, bound, leaf, fanout, tol, kill_t, max_live,
               functional):
    """Optimal partitioning: :func:`_flat_phase` while its list is short, then :func:`_tree_phase`.

    Minimises ``sum_k [scatter_k + frob_w * overlap_k / n_k + beta] + sum_{t in changes} end_term[t]``
    (``frob_w = 0`` and ``end_term = 0`` for the plain decoder).

    Parameters
    ----------
    S, Q : prefix sums, shapes (T+1, q) and (T+1,)
    beta : penalty per segment
    m : minimum segment size
    lo, hi, end_ok, one_a, one_b : (T+1,) allowed transitions (``SegmentConstraints.transition_bounds``)
    end_term : (T+1,) term added per segment end
    tid, tstart, tstop : the true segments of the Frobenius term (unused when ``frob_w = 0``)
    frob_w, slack : weight of the overlap term and the sub-additivity slack of the pruning test
    second : also the second best (two values per prefix; the tree phase only)
    prune, bound, leaf, fanout : as in :func:`_tree_phase`
    tol : relative slack of the pruning and bound tests
    kill_t : (T+1,) or (0,); when it has ``T + 1`` entries, ``kill_t[s]`` receives the first end ``t``
        whose test removed the start ``s`` (``_NEVER`` if none): ``F(s) + cost(s, u) > F(t) + cost(t, u)``
        for every later end ``u`` (with ``slack = 0``), which :mod:`marginalia.decoders._seg_runner_up`
        uses to skip starts
    max_live : longest list of the flat phase (0: the tree from the first end; without ``bound`` the
        flat phase decodes everything)
    functional : decode with :func:`_functional_phase` instead (the caller checks that it applies: one
        feature, no labels, ``m = 1``, no overlap term, no second best)

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
    death = np.full(T + 1, _NEVER)  # per start: first end it may no longer serve
    wl = frob_w / (tstop - tstart)
    if kill_t.shape[0] == T + 1:
        kill_t[:] = _NEVER
    if functional:
        return F1, F2, bp1, bp2, bp2r, _functional_phase(S, Q, beta, end_term, tol, kill_t, F1, bp1)
    t0 = 0
    n_evals = 0
    if not second:
        t0, n_evals = _flat_phase(S, Q, beta, m, lo, hi, end_ok, one_a, one_b, end_term, tid, tstart, tstop,
                                  wl, frob_w, slack, prune, tol, kill_t, max_live if bound else T + 1, F1, bp1,
                                  death)
    if t0 <= T:
        n_evals += _tree_phase(S, Q, beta, m, lo, hi, end_ok, one_a, one_b, end_term, tid, tstart, tstop,
                               wl, frob_w, slack, second, prune, bound, leaf, fanout, tol, kill_t, t0, F1, F2,
                               bp1, bp2, bp2r, death)
    return F1, F2, bp1, bp2, bp2r, n_evals


@njit(cache=True, nogil=True, fastmath=_FM)
def _tree_phase(S, Q, beta, m, lo, hi, end_ok, one_a, one_b, end_term, tid, tstart, tstop, wl, frob_w, slack,
                second, prune, bound, leaf, fanout, tol, kill_t, t0, F1, F2, bp1, bp2, bp2r, death):
    """Optimal partitioning of the ends ``t >= t0`` with PELT-style pruning and a tree of bounded starts.

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
      pruned when it is built; a leaf with fewer than ``_start_tree.MIN_BOUNDED_LEAF`` of them gets none.

    The ends before ``t0`` are already decoded (by :func:`_flat_phase`): ``F1``, ``F2``, ``bp1``,
    ``bp2``, ``bp2r``, ``death`` and ``kill_t`` hold their state, and are completed in place for the
    others. Returns the number of (start, end) pairs evaluated exactly.
    """
    T = S.shape[0] - 1
    inv = _inverses(T)
    frob = frob_w != 0.0
    record = kill_t.shape[0] == T + 1
    B = max(fanout, 2)
    lv_size, lv_off, n_level, n_first, n_last, n_kids, n_hoff = tree.tree_layout(T, leaf, fanout)
    n_levels = lv_size.shape[0]
    n_nodes = lv_off[n_levels]
    q = S.shape[1]
    n_dead_kids = np.zeros(n_nodes, np.int64)
    n_counted = np.zeros(n_nodes, np.bool_)
    n_built = np.zeros(n_nodes, np.bool_)
    n_death = np.full(n_nodes, _NEVER)
    geo = tree.new_node_geometry(n_nodes, q)
    n_h = np.zeros(n_nodes, np.int64)
    hulls, members, tmp_d, tmp_w, stack = tree.new_scratch(T, n_levels, B, np.int64(1))
    hd = hulls[0]
    hw = hulls[1]
    sk_nd = np.empty(n_nodes, np.int64)
    sk_lb = np.empty(n_nodes)

    vals = np.empty(T + 1)
    evald = np.empty(T + 1, np.int64)
    n_evals = 0
    root = n_nodes - 1
    for t in range(0, T + 1):
        # ---------------- the best (and second-best) last segment ending at t
        a = lo[t]
        b = min(hi[t], t - 1)
        if t >= t0 and t > 0 and end_ok[t] and b >= a:
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
                    c += _frob_term(h, t, tid, tstart, tstop, wl, frob_w) * inv[t - h]
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
                                c2 += _frob_term(h2, t, tid, tstart, tstop, wl, frob_w) * inv[t - h2]
                            v2 = f2 + c2
                            v1 = F1[h] + c
                            cand = v2 if v2 > v1 else v1
                            if cand < thr:
                                thr = cand
            ne = np.int64(0)
            nsk = 0
            sp = 1
            stack[0] = root
            while sp > 0:
                sp, nd, first, last = tree.pop_node(stack, sp, n_first, n_last, a, b)
                if nd < 0:
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
                        n_c, n_m, n_rho, n_E, n_dmin, n_dmax = geo
                        base, slope, mag = _group_affine(S, t, n_c[nd], n_m[nd], n_rho[nd], n_E[nd],
                                                         n_dmin[nd], n_dmax[nd])
                        lb = Qt + base + tree.hull_min_sorted(hd, hw, n_hoff[nd], n_h[nd], slope)
                        if lb > cur + tol * (abs(cur) + Qt + mag + 1.0):
                            sk_nd[nsk] = nd
                            sk_lb[nsk] = lb
                            nsk += 1
                            continue
                if lvl > 0:
                    sp = tree.push_children(stack, sp, nd, lvl, lv_off, n_kids, B)
                    continue
                n_alive = 0
                for s in range(max(first, a), min(last, b) + 1):
                    fs = F1[s]
                    if fs == _INF or death[s] <= t:
                        continue
                    n_alive += 1
                    c = Qt - Q[s] - _sqdist(S, t, s) * inv[t - s]
                    if frob:
                        c += _frob_term(s, t, tid, tstart, tstop, wl, frob_w) * inv[t - s]
                    v = fs + c
                    vals[ne] = v
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
                    thr_p, kill, late, oa = _prune_rule(ref, slack, tol, t, m, one_a, one_b)
                    _prune_evaluated(evald, vals, ne, thr_p, t, kill, late, oa, record, kill_t, death)
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
            lvl = np.int64(0)
            while lvl < n_levels and (t + 1) % lv_size[lvl] == 0:
                nd = lv_off[lvl] + (t + 1) // lv_size[lvl] - 1
                # the bound covers the starts not pruned by now: a pruned start never serves again
                n = np.int64(0)  # typed, not a literal: build_node compiles once for every caller
                for s in range(n_first[nd], t + 1):
                    if F1[s] < _INF and death[s] > t:
                        members[n] = s
                        n += 1
                if n == 0:
                    n_death[nd] = 0
                else:
                    h = tree.build_node(S, Q, F1, members, n, nd, lvl, geo, n_hoff[nd], hd, hw, tmp_d, tmp_w)
                    if h >= 0:
                        n_h[nd] = h
                        n_built[nd] = True
                lvl += 1
    return n_evals
