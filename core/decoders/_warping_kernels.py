"""Private numba kernels of the DTW decoders.

``D[i, j] = cost[i, j] + min(D[i-1, j-1], D[i-1, j], D[i, j-1])`` over the
cells ``lo[i] <= j <= hi[i]`` of every row (a band), with the path starting at
``(0, 0)``. Only two rows of ``D`` live in memory; the winning step of every
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


@numba.njit(cache=True, nogil=True)
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
def _two_rows(g0, g1, prev, cur, a0, b0, a1, b1, cd0, cd1):
    """Rows ``i`` (into ``cur``) and ``i + 1`` (over ``prev``, one column behind).

    The two horizontal recurrences are independent chains, so interleaving them
    hides the latency of the add-min chain. Row ``i + 1`` overwrites cell
    ``j - 1`` of row ``i - 1`` only after row ``i`` has read it.
    """
    # row i alone up to column a1 (row i + 1 starts there) or to its end
    e0 = min(a1, b0)
    _one_row(g0, prev, cur, a0, e0, cd0)
    run0 = cur[e0 + 1]
    # both rows: row i at column j, row i + 1 at column j - 1, for j in a1+1..b0;
    # 0-based slices let LLVM drop the negative-index checks
    n = b0 - a1
    run1 = INF
    if n > 0:
        dg0 = prev[a1 + 1:b0 + 1]
        up0 = prev[a1 + 2:b0 + 2]
        cc0 = cur[a1 + 2:b0 + 2]
        gg0 = g0[a1 + 1 - a0:b0 + 1 - a0]
        cdd0 = cd0[a1 + 1 - a0:b0 + 1 - a0]
        dg1 = cur[a1:b0]
        up1 = cur[a1 + 1:b0 + 1]
        cc1 = prev[a1 + 1:b0 + 1]
        gg1 = g1[0:n]
        cdd1 = cd1[0:n]
        for t in range(n):
            cdd0[t], run0 = _cell(dg0[t], up0[t], run0, gg0[t])
            cc0[t] = run0
            cdd1[t], run1 = _cell(dg1[t], up1[t], run1, gg1[t])
            cc1[t] = run1
    # row i + 1 alone from column max(a1, b0) (row i has ended)
    s1 = max(a1, b0)
    if s1 <= b1:
        dg1 = cur[s1:b1 + 1]
        up1 = cur[s1 + 1:b1 + 2]
        cc1 = prev[s1 + 1:b1 + 2]
        gg1 = g1[s1 - a1:b1 - a1 + 1]
        cdd1 = cd1[s1 - a1:b1 - a1 + 1]
        for t in range(b1 - s1 + 1):
            cdd1[t], run1 = _cell(dg1[t], up1[t], run1, gg1[t])
            cc1[t] = run1


@numba.njit(cache=True, nogil=True)
def _finish_row(i, a, b, cur, cd, dirs, dir_off, k, row_ck, row_ck_off, col_ck, col_ck_off):
    """Pack the codes of row ``i`` and save its checkpoints."""
    n = b - a + 1
    base = dir_off[i]
    for q in range((n + 3) >> 2):
        c4 = cd[4 * q:4 * q + 4]
        dirs[base + q] = c4[0] | (c4[1] << 2) | (c4[2] << 4) | (c4[3] << 6)
    if k > 0:
        if i % k == k - 1:
            o = row_ck_off[i // k]
            row_ck[o:o + n] = cur[a + 1:b + 2]
        first = ((a + 1 + k - 1) // k) * k - 1  # first column with j % k == k - 1 and j >= a
        o = col_ck_off[i]
        for j in range(first, b + 1, k):
            col_ck[o + (j - first) // k] = cur[j + 1]


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
    D : ndarray, shape (2, TB + 1)
        Rows ``i % 2``; ``D[r, j + 1]`` holds cell ``j``, ``D[r, 0]`` is the
        column ``-1``. Cells outside the band must hold ``inf``.
    dirs, dir_off : packed 2-bit decisions and the first byte of every row.
    shift, tlo, thi, bonus :
        Loss augmentation: ``shift`` is added to every cell and ``bonus`` to
        the cells ``tlo[i] <= j <= thi[i]`` (skipped when ``tlo`` is empty).
    k, row_ck, row_ck_off, col_ck, col_ck_off :
        When ``k > 0``: ``D`` of rows ``i % k == k - 1`` is saved at
        ``row_ck[row_ck_off[i // k] + j - lo[i]]`` and of columns
        ``j % k == k - 1`` at ``col_ck[col_ck_off[i] + (j - first) // k]``.
    code : scratch, shape (2, TB + 4) uint8.
    """
    use_truth = tlo.shape[0] > 0
    i = i_start
    while i < i_stop:
        a0 = lo[i]
        b0 = hi[i]
        cur = D[i % 2]
        prev = D[(i - 1) % 2]
        g0 = G[i - i_start, a0 - cmin:b0 - cmin + 1]
        _prepare_costs(g0, a0, b0, i, shift, tlo, thi, bonus, use_truth)
        cur[a0] = INF  # the only stale cell left of the band that is ever read
        if i + 1 < i_stop:
            a1 = lo[i + 1]
            b1 = hi[i + 1]
            g1 = G[i + 1 - i_start, a1 - cmin:b1 - cmin + 1]
            _prepare_costs(g1, a1, b1, i + 1, shift, tlo, thi, bonus, use_truth)
            _two_rows(g0, g1, prev, cur, a0, b0, a1, b1, code[0], code[1])
            prev[a1] = INF
            _finish_row(i, a0, b0, cur, code[0], dirs, dir_off, k, row_ck, row_ck_off, col_ck, col_ck_off)
            _finish_row(i + 1, a1, b1, prev, code[1], dirs, dir_off, k, row_ck, row_ck_off, col_ck, col_ck_off)
            i += 2
        else:
            _one_row(g0, prev, cur, a0, b0, code[0])
            _finish_row(i, a0, b0, cur, code[0], dirs, dir_off, k, row_ck, row_ck_off, col_ck, col_ck_off)
            i += 1


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
def path_predecessors(mode, Af, Bf, na, nb, C, lo, hi, shift, tlo, thi, bonus,
                      k, row_ck, row_ck_off, col_ck, col_ck_off, path, preds):
    """``D`` of the three predecessors (diag, up, left) of every path cell.

    Recomputes ``D`` tile row by tile row (``k`` rows) from the checkpoints,
    only on the columns the path needs. ``preds`` has shape (L, 3).
    """
    L = path.shape[0]
    TA = lo.shape[0]
    use_truth = tlo.shape[0] > 0
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
        for r in range(r0 + 1, r1 + 1):
            rr = r - r0
            if c0 >= 0 and lo[r] <= c0 <= hi[r]:
                first = ((lo[r] + 1 + k - 1) // k) * k - 1
                Dl[rr, 0] = col_ck[col_ck_off[r] + (c0 - first) // k]
            for j in range(max(c0 + 1, lo[r]), min(jmax, hi[r]) + 1):
                c = cell_cost(mode, Af, Bf, na, nb, C, r, j) + shift
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
