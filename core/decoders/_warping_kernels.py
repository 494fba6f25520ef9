"""Private numba kernels of the DTW decoders.

``D[i, j] = cost[i, j] + min(D[i-1, j-1], D[i-1, j], D[i, j-1])`` over the
cells ``lo[i] <= j <= hi[i]`` of every row (a band), with the path starting at
``(0, 0)``. Only five rows of ``D`` live in memory, computed as a staircase (four
independent add-min chains); the winning step of every
cell is kept as a 2-bit code (0 diagonal, 1 from the row above, 2 from the
left), row ``i`` starting at byte ``dir_off[i]``.

Optional checkpoints (rows and columns every ``k``) let the second-best
decoder recompute ``D`` exactly on the few ``k x k`` tiles the best path
crosses. The callers in :mod:`marginalia.decoders.warping` validate every argument.
"""

from __future__ import annotations

import numba
import numpy as np

INF = np.inf


@numba.njit(cache=True, nogil=True, fastmath={"contract"})
def cost_block(Af, Bt, na, nb, r0, r1, cmin, cmax, out):
    """Squared distances ``|a_r - b_j|^2`` for rows ``[r0, r1)`` and columns ``[cmin, cmax]``.

    Expanded as ``|a|^2 + |b|^2 - 2 a.b`` (clamped at 0) with ``Bt`` of shape
    (p, TB), in column tiles that stay in cache, two rows at a time so every
    loaded slice of ``Bt`` serves twice. ``out`` has shape (>= r1 - r0, >= width).
    Releases the GIL, so a thread can fill the next block during the recursion.
    """
    p = Af.shape[1]
    w = cmax - cmin + 1
    tile = 512
    spare = np.empty(tile)  # stands for the missing partner of an odd last row
    for c0 in range(0, w, tile):
        c1 = min(w, c0 + tile)
        n = c1 - c0
        nbt = nb[cmin + c0:cmin + c1]
        for r in range(r0, r1, 2):
            r2 = r + 1 if r + 1 < r1 else r
            o0 = out[r - r0, c0:c1]
            o1 = out[r2 - r0, c0:c1] if r2 != r else spare[:n]
            x0 = na[r]
            x1 = na[r2]
            for t in range(n):
                o0[t] = x0 + nbt[t]
                o1[t] = x1 + nbt[t]
            q = 0
            # four features per pass: each pass loads and stores the output once
            while q + 4 <= p:
                a0 = -2.0 * Af[r, q]
                a1 = -2.0 * Af[r, q + 1]
                a2 = -2.0 * Af[r, q + 2]
                a3 = -2.0 * Af[r, q + 3]
                e0 = -2.0 * Af[r2, q]
                e1 = -2.0 * Af[r2, q + 1]
                e2 = -2.0 * Af[r2, q + 2]
                e3 = -2.0 * Af[r2, q + 3]
                b0 = Bt[q, cmin + c0:cmin + c1]
                b1 = Bt[q + 1, cmin + c0:cmin + c1]
                b2 = Bt[q + 2, cmin + c0:cmin + c1]
                b3 = Bt[q + 3, cmin + c0:cmin + c1]
                for t in range(n):
                    u0 = b0[t]
                    u1 = b1[t]
                    u2 = b2[t]
                    u3 = b3[t]
                    o0[t] += (a0 * u0 + a1 * u1) + (a2 * u2 + a3 * u3)
                    o1[t] += (e0 * u0 + e1 * u1) + (e2 * u2 + e3 * u3)
                q += 4
            while q + 2 <= p:
                a0 = -2.0 * Af[r, q]
                a1 = -2.0 * Af[r, q + 1]
                e0 = -2.0 * Af[r2, q]
                e1 = -2.0 * Af[r2, q + 1]
                b0 = Bt[q, cmin + c0:cmin + c1]
                b1 = Bt[q + 1, cmin + c0:cmin + c1]
                for t in range(n):
                    u = b0[t]
                    v = b1[t]
                    o0[t] += a0 * u + a1 * v
                    o1[t] += e0 * u + e1 * v
                q += 2
            if q < p:
                a0 = -2.0 * Af[r, q]
                e0 = -2.0 * Af[r2, q]
                b0 = Bt[q, cmin + c0:cmin + c1]
                for t in range(n):
                    o0[t] += a0 * b0[t]
                    o1[t] += e0 * b0[t]
            for t in range(n):
                o0[t] = max(o0[t], 0.0)
                o1[t] = max(o1[t], 0.0)


@numba.njit(cache=True, nogil=True)
def _prepare_costs(g, a, b, i, shift, tlo, thi, bonus, use_truth):
    """Add the loss terms of row ``i`` to its private cost slice ``g`` (columns ``a..b``)."""
    if shift != 0.0:
        for t in range(b - a + 1):
            g[t] += shift
    if use_truth:
        for j in range(max(tlo[i], a), min(thi[i], b) + 1):
            g[j - a] += bonus


@numba.njit(cache=True, nogil=True)
def _cell(diag, up, run, cost):
    """One cell of the recurrence: ``(code, D)`` from its three predecessors and its cost.

    Parameters
    ----------
    diag, up, run : float
        ``D`` of the cells ``(i-1, j-1)``, ``(i-1, j)`` and ``(i, j-1)`` (``run``: the
        row's running value).
    cost : float
        The cost of cell ``(i, j)``.

    Returns
    -------
    code : uint8
        The winning step: 0 diagonal, 1 from the row above, 2 from the left; ties go
        to the diagonal, then to the row above.
    D : float
        ``cost + min(diag, up, run)``.

    Written with selects, not branches (a branch would be mispredicted often); LLVM
    inlines it into the row loops.
    """
    f = up < diag
    m = up if f else diag
    h = run < m
    m = run if h else m
    return (np.uint8(2) if h else np.uint8(f)), m + cost


@numba.njit(cache=True, nogil=True)
def _one_row(g, prev, cur, a, b, cd):
    """Row on columns ``a..b``: one fused pass of :func:`_cell`."""
    n = b - a + 1
    up = prev[a + 1:b + 2]
    dg = prev[a:b + 1]
    cc = cur[a + 1:b + 2]
    run = INF
    for t in range(n):
        cd[t], run = _cell(dg[t], up[t], run, g[t])
        cc[t] = run


@numba.njit(cache=True, nogil=True)
def _row_span(g, a, prev, cur, c_from, c_to, cd, run):
    """Cells of one row on columns ``c_from..c_to`` (its band starts at ``a``: ``g`` and ``cd`` are indexed
    by ``c - a``), continuing from the running value ``run``; returns the new running value."""
    for c in range(c_from, c_to + 1):
        code, run = _cell(prev[c], prev[c + 1], run, g[c - a])
        cd[c - a] = code
        cur[c + 1] = run
    return run


@numba.njit(cache=True, nogil=True)
def _four_rows(g0, g1, g2, g3, p, r0, r1, r2, r3, a0, b0, a1, b1, a2, b2, a3, b3, cd0, cd1, cd2, cd3):
    """Rows ``i..i+3`` (into ``r0..r3``) from row ``i - 1`` (``p``) as a staircase: row ``i + r`` at column
    ``j - r`` for every ``j``.

    Four independent add-min chains (each waits on its own left neighbour) keep the core busy where one
    or two leave it waiting on the chain's latency. Row ``i + r`` reads row ``i + r - 1`` at columns its
    chain has already passed. Returns False (nothing done) when the band moves too fast for a common
    stretch of columns.
    """
    J0 = max(max(a0, a1 + 1), max(a2 + 2, a3 + 3))
    J1 = min(min(b0, b1 + 1), min(b2 + 2, b3 + 3))
    if J0 > J1:
        return False
    x0 = _row_span(g0, a0, p, r0, a0, J0 - 1, cd0, INF)
    x1 = _row_span(g1, a1, r0, r1, a1, J0 - 2, cd1, INF)
    x2 = _row_span(g2, a2, r1, r2, a2, J0 - 3, cd2, INF)
    x3 = _row_span(g3, a3, r2, r3, a3, J0 - 4, cd3, INF)
    # 0-based views (row r at column j - r for j = J0 + t) let LLVM drop the negative-index checks
    n = J1 - J0 + 1
    dg0 = p[J0:J1 + 1]
    up0 = p[J0 + 1:J1 + 2]
    gg0 = g0[J0 - a0:J1 - a0 + 1]
    cc0 = r0[J0 + 1:J1 + 2]
    kk0 = cd0[J0 - a0:J1 - a0 + 1]
    dg1 = r0[J0 - 1:J1]
    up1 = r0[J0:J1 + 1]
    gg1 = g1[J0 - 1 - a1:J1 - a1]
    cc1 = r1[J0:J1 + 1]
    kk1 = cd1[J0 - 1 - a1:J1 - a1]
    dg2 = r1[J0 - 2:J1 - 1]
    up2 = r1[J0 - 1:J1]
    gg2 = g2[J0 - 2 - a2:J1 - 1 - a2]
    cc2 = r2[J0 - 1:J1]
    kk2 = cd2[J0 - 2 - a2:J1 - 1 - a2]
    dg3 = r2[J0 - 3:J1 - 2]
    up3 = r2[J0 - 2:J1 - 1]
    gg3 = g3[J0 - 3 - a3:J1 - 2 - a3]
    cc3 = r3[J0 - 2:J1 - 1]
    kk3 = cd3[J0 - 3 - a3:J1 - 2 - a3]
    for t in range(n):
        k0, x0 = _cell(dg0[t], up0[t], x0, gg0[t])
        k1, x1 = _cell(dg1[t], up1[t], x1, gg1[t])
        k2, x2 = _cell(dg2[t], up2[t], x2, gg2[t])
        k3, x3 = _cell(dg3[t], up3[t], x3, gg3[t])
        kk0[t] = k0
        cc0[t] = x0
        kk1[t] = k1
        cc1[t] = x1
        kk2[t] = k2
        cc2[t] = x2
        kk3[t] = k3
        cc3[t] = x3
    _row_span(g0, a0, p, r0, J1 + 1, b0, cd0, x0)
    _row_span(g1, a1, r0, r1, J1, b1, cd1, x1)
    _row_span(g2, a2, r1, r2, J1 - 1, b2, cd2, x2)
    _row_span(g3, a3, r2, r3, J1 - 2, b3, cd3, x3)
    return True


@numba.njit(cache=True, nogil=True)
def _finish_row(i, a, b, cur, cd, dirs, dir_off, k, row_ck, row_ck_off, col_ck, col_ck_off):
    """Pack the codes of row ``i`` and save its checkpoints."""
    n = b - a + 1
    base = dir_off[i]
    # four one-byte codes (each < 4) read as one little-endian word, packed into one byte
    w = cd.view(np.uint32)
    out = dirs[base:base + ((n + 3) >> 2)]
    for q in range(out.shape[0]):
        v = w[q]
        out[q] = np.uint8((v & 3) | ((v >> 6) & 12) | ((v >> 12) & 48) | ((v >> 18) & 192))
    if k > 0:
        if i % k == k - 1:
            o = row_ck_off[i // k]
            row_ck[o:o + n] = cur[a + 1:b + 2]
        first = ((a + 1 + k - 1) // k) * k - 1  # first column with j % k == k - 1 and j >= a
        o = col_ck_off[i]
        for j in range(first, b + 1, k):
            col_ck[o] = cur[j + 1]
            o += 1


@numba.njit(cache=True, nogil=True)
def dtw_rows(G, cmin, i_start, i_stop, lo, hi, D,
             dirs, dir_off, shift, tlo, thi, bonus,
             k, row_ck, row_ck_off, col_ck, col_ck_off, code):
    """Forward DTW over rows ``[i_start, i_stop)`` whose costs are in ``G``.

    Parameters
    ----------
    G : ndarray, shape (rows, width)
        ``G[i - i_start, j - cmin]`` is the cost of cell ``(i, j)``; a private
        buffer (the loss terms are added in place).
    lo, hi : ndarray of int64, shape (TA,)
        Columns allowed in every row (inclusive), non-decreasing, connected.
    D : ndarray, shape (5, TB + 1)
        Rows ``i % 5`` (the four rows of a group and the row above it); ``D[r, j + 1]`` holds cell ``j``, ``D[r, 0]`` is the
        column ``-1``. Cells outside the band must hold ``inf``.
    dirs, dir_off : packed 2-bit decisions and the first byte of every row.
    shift, tlo, thi, bonus :
        Loss augmentation: ``shift`` is added to every cell and ``bonus`` to
        the cells ``tlo[i] <= j <= thi[i]`` (skipped when ``tlo`` is empty).
    k, row_ck, row_ck_off, col_ck, col_ck_off :
        When ``k > 0``: ``D`` of rows ``i % k == k - 1`` is saved at
        ``row_ck[row_ck_off[i // k] + j - lo[i]]`` and of columns
        ``j % k == k - 1`` at ``col_ck[col_ck_off[i] + (j - first) // k]``.
    code : scratch, shape (4, >= TB + 4) uint8, rows a multiple of 4 bytes long.

    Rows go four at a time (:func:`_four_rows`), the last ``< 4`` of the block one at a time.
    """
    use_truth = tlo.shape[0] > 0
    i = i_start
    while i < i_stop:
        if i + 3 < i_stop:
            a0, b0 = lo[i], hi[i]
            a1, b1 = lo[i + 1], hi[i + 1]
            a2, b2 = lo[i + 2], hi[i + 2]
            a3, b3 = lo[i + 3], hi[i + 3]
            g0 = G[i - i_start, a0 - cmin:b0 - cmin + 1]
            g1 = G[i + 1 - i_start, a1 - cmin:b1 - cmin + 1]
            g2 = G[i + 2 - i_start, a2 - cmin:b2 - cmin + 1]
            g3 = G[i + 3 - i_start, a3 - cmin:b3 - cmin + 1]
            _prepare_costs(g0, a0, b0, i, shift, tlo, thi, bonus, use_truth)
            _prepare_costs(g1, a1, b1, i + 1, shift, tlo, thi, bonus, use_truth)
            _prepare_costs(g2, a2, b2, i + 2, shift, tlo, thi, bonus, use_truth)
            _prepare_costs(g3, a3, b3, i + 3, shift, tlo, thi, bonus, use_truth)
            p = D[(i - 1) % 5]
            r0 = D[i % 5]
            r1 = D[(i + 1) % 5]
            r2 = D[(i + 2) % 5]
            r3 = D[(i + 3) % 5]
            # the only stale cells left of the bands that are ever read
            r0[a0] = INF
            r1[a1] = INF
            r2[a2] = INF
            r3[a3] = INF
            if not _four_rows(g0, g1, g2, g3, p, r0, r1, r2, r3, a0, b0, a1, b1, a2, b2, a3, b3,
                              code[0], code[1], code[2], code[3]):
                _one_row(g0, p, r0, a0, b0, code[0])
                _one_row(g1, r0, r1, a1, b1, code[1])
                _one_row(g2, r1, r2, a2, b2, code[2])
                _one_row(g3, r2, r3, a3, b3, code[3])
            _finish_row(i, a0, b0, r0, code[0], dirs, dir_off, k, row_ck, row_ck_off, col_ck, col_ck_off)
            _finish_row(i + 1, a1, b1, r1, code[1], dirs, dir_off, k, row_ck, row_ck_off, col_ck, col_ck_off)
            _finish_row(i + 2, a2, b2, r2, code[2], dirs, dir_off, k, row_ck, row_ck_off, col_ck, col_ck_off)
            _finish_row(i + 3, a3, b3, r3, code[3], dirs, dir_off, k, row_ck, row_ck_off, col_ck, col_ck_off)
            i += 4
        else:
            a0 = lo[i]
            b0 = hi[i]
            cur = D[i % 5]
            g0 = G[i - i_start, a0 - cmin:b0 - cmin + 1]
            _prepare_costs(g0, a0, b0, i, shift, tlo, thi, bonus, use_truth)
            cur[a0] = INF
            _one_row(g0, D[(i - 1) % 5], cur, a0, b0, code[0])
            _finish_row(i, a0, b0, cur, code[0], dirs, dir_off, k, row_ck, row_ck_off, col_ck, col_ck_off)
            i += 1


@numba.njit(cache=True, nogil=True)
def dtw_blocks(Af, Bt, na, nb, starts, stops, lo, hi, D, dirs, dir_off, shift, tlo, thi, bonus,
               k, row_ck, row_ck_off, col_ck, col_ck_off, code, buf):
    """Every row block in turn: its costs by :func:`cost_block` into ``buf``, then :func:`dtw_rows`.

    One call for the whole forward pass (one thread): calling the two kernels from Python per block
    cost a dispatch of ~20 arguments each time, ~10 % of a 2,000 x 2,000 decoding.
    """
    for b in range(starts.shape[0]):
        r0 = starts[b]
        r1 = stops[b]
        cost_block(Af, Bt, na, nb, r0, r1, lo[r0], hi[r1 - 1], buf)
        dtw_rows(buf, lo[r0], r0, r1, lo, hi, D, dirs, dir_off, shift, tlo, thi, bonus,
                 k, row_ck, row_ck_off, col_ck, col_ck_off, code)


@numba.njit(cache=True, nogil=True)
def get_code(dirs, dir_off, lo, i, j):
    t = j - lo[i]
    return (dirs[dir_off[i] + (t >> 2)] >> (2 * (t & 3))) & 3


@numba.njit(cache=True, nogil=True)
def backtrack(dirs, dir_off, lo, i, j, out):
    """Cells of the best path from ``(0, 0)`` to ``(i, j)``, written into ``out``; returns their count."""
    n = 0
    while True:
        out[n, 0] = i
        out[n, 1] = j
        n += 1
        if i == 0 and j == 0:
            break
        c = get_code(dirs, dir_off, lo, i, j)
        if c == 0:
            i -= 1
            j -= 1
        elif c == 1:
            i -= 1
        else:
            j -= 1
    # reverse in place
    for t in range(n // 2):
        for d in range(2):
            tmp = out[t, d]
            out[t, d] = out[n - 1 - t, d]
            out[n - 1 - t, d] = tmp
    return n


@numba.njit(cache=True, nogil=True)
def cell_cost(mode, Af, Bf, na, nb, C, i, j):
    """Cost of cell (i, j): ``C[i, j]`` (mode 1) or ``|a_i - b_j|^2`` expanded as in the forward pass."""
    if mode == 1:
        return C[i, j]
    s = 0.0
    for q in range(Af.shape[1]):
        s += Af[i, q] * Bf[j, q]
    c = na[i] + nb[j] - 2.0 * s
    return c if c > 0.0 else 0.0


@numba.njit(cache=True, nogil=True)
def path_cost(mode, Af, Bf, na, nb, C, path):
    s = 0.0
    for t in range(path.shape[0]):
        s += cell_cost(mode, Af, Bf, na, nb, C, path[t, 0], path[t, 1])
    return s


@numba.njit(cache=True, nogil=True)
def path_predecessors(mode, Af, Bt, na, nb, C, lo, hi, shift, tlo, thi, bonus,
                      k, row_ck, row_ck_off, col_ck, col_ck_off, path, preds):
    """``D`` of the three predecessors (diag, up, left) of every path cell.

    Recomputes ``D`` tile row by tile row (``k`` rows) from the checkpoints,
    only on the columns the path needs. ``preds`` has shape (L, 3). With
    features (mode 0, ``Bt`` of shape (p, TB)) the tile's costs come from
    :func:`cost_block`, as in the forward pass, so they are the same numbers.
    """
    L = path.shape[0]
    TA = lo.shape[0]
    use_truth = tlo.shape[0] > 0
    Cb = np.empty((k + 1, 64))
    p = 0
    while p < L:
        i0 = path[p, 0]
        r0 = (i0 // k) * k - 1          # checkpoint row above the tile row (-1: virtual row)
        r1 = min(r0 + k, TA - 1)
        q = p
        jmin = path[p, 1]
        jmax = path[p, 1]
        while q < L and path[q, 0] <= r1:
            jmax = max(jmax, path[q, 1])
            q += 1
        c0 = (jmin // k) * k - 1  # last checkpoint column <= jmin - 1 (-1: virtual column)
        width = jmax - c0 + 1
        # Dl[r - r0, j - c0] for rows r0..r1, columns c0..jmax
        Dl = np.full((r1 - r0 + 1, width), INF)
        if r0 < 0:
            if c0 < 0:
                Dl[0, 0] = 0.0  # virtual predecessor of (0, 0)
        else:
            a = lo[r0]
            o = row_ck_off[r0 // k]
            for j in range(max(c0, a), min(jmax, hi[r0]) + 1):
                Dl[0, j - c0] = row_ck[o + j - a]
        if mode == 0 and jmax > c0:
            if Cb.shape[1] < width:
                Cb = np.empty((k + 1, 2 * width))
            cost_block(Af, Bt, na, nb, r0 + 1, r1 + 1, c0 + 1, jmax, Cb)
        for r in range(r0 + 1, r1 + 1):
            rr = r - r0
            if c0 >= 0 and lo[r] <= c0 <= hi[r]:
                first = ((lo[r] + 1 + k - 1) // k) * k - 1
                Dl[rr, 0] = col_ck[col_ck_off[r] + (c0 - first) // k]
            for j in range(max(c0 + 1, lo[r]), min(jmax, hi[r]) + 1):
                c = (C[r, j] if mode == 1 else Cb[rr - 1, j - c0 - 1]) + shift
                if use_truth and tlo[r] <= j <= thi[r]:
                    c += bonus
                x = Dl[rr - 1, j - 1 - c0]
                y = Dl[rr - 1, j - c0]
                z = Dl[rr, j - 1 - c0]
                m = x
                if y < m:
                    m = y
                if z < m:
                    m = z
                Dl[rr, j - c0] = m + c
        for t in range(p, q):
            i = path[t, 0]
            j = path[t, 1]
            rr = i - r0
            jj = j - c0
            preds[t, 0] = Dl[rr - 1, jj - 1]
            preds[t, 1] = Dl[rr - 1, jj]
            preds[t, 2] = Dl[rr, jj - 1]
        p = q


@numba.njit(cache=True, nogil=True)
def ramp_sq_diff(s1, e1, s2, e2, n):
    """``sum_c sum_i (r1_c(i) - r2_c(i))^2`` over columns ``c``, ``0 <= i < n``.

    ``r_c(i) = clip(i - s_c + 1, 0, e_c - s_c + 1)`` counts the path cells of
    column ``c`` in rows ``<= i`` (one column of ``L Y`` with ``L`` the lower
    triangular matrix of ones). Both ramps are constant from ``max(e1, e2)``
    on, so each column costs the length of its two runs only.
    """
    total = 0.0
    for c in range(s1.shape[0]):
        a0, a1, b0, b1 = s1[c], e1[c], s2[c], e2[c]
        first = min(a0, b0)
        last = max(a1, b1)
        for i in range(first, last + 1):
            ra = min(max(i - a0 + 1, 0), a1 - a0 + 1)
            rb = min(max(i - b0 + 1, 0), b1 - b0 + 1)
            d = ra - rb
            total += d * d
        d = (a1 - a0) - (b1 - b0)
        total += float(d * d) * (n - 1 - last)
    return total
