"""Private numba kernels of the DTW decoders.

``D[i, j] = cost[i, j] + min(D[i-1, j-1], D[i-1, j], D[i, j-1])`` over the
cells ``lo[i] <= j <= hi[i]`` of every row (a band), with the path starting at
``(0, 0)``. Only two rows of ``D`` live in memory; the winning step of every
cell is kept as a 2-bit code (0 diagonal, 1 from the row above, 2 from the
left), row ``i`` starting at byte ``dir_off[i]``.

Optional checkpoints (rows and columns every ``k``) let the second-best
decoder recompute ``D`` exactly on the few ``k x k`` tiles the best path
crosses. The callers in :mod:`core.decoders.warping` validate every argument.
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
def dtw_rows(G, cmin, i_start, i_stop, lo, hi, D,
             dirs, dir_off, shift, tlo, thi, bonus,
             k, row_ck, row_ck_off, col_ck, col_ck_off, code):
    """Forward DTW over rows ``[i_start, i_stop)`` whose costs are in ``G``.

    Parameters
    ----------
    G : ndarray, shape (rows, width)
        ``G[i - i_start, j - cmin]`` is the cost of cell ``(i, j)``; a private
        buffer (the loss bonus is added in place).
    lo, hi : ndarray of int64, shape (TA,)
        Columns allowed in every row (inclusive), non-decreasing.
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
    code : scratch, shape (TB + 4,) uint8.
    """
    use_truth = tlo.shape[0] > 0
    for i in range(i_start, i_stop):
        a = lo[i]
        b = hi[i]
        n = b - a + 1
        cur = D[i % 2]
        prev = D[(i - 1) % 2]
        g = G[i - i_start, a - cmin:b - cmin + 1]
        up = prev[a + 1:b + 2]
        dg = prev[a:b + 1]
        cd = code[:n]
        # G is a private buffer: the loss terms go straight into it
        if shift != 0.0:
            for t in range(n):
                g[t] += shift
        if use_truth:
            ta = max(tlo[i], a)
            tb = min(thi[i], b)
            for j in range(ta, tb + 1):
                g[j - a] += bonus
        cc = cur[a + 1:b + 2]
        # one fused pass with selects: a branch here would be mispredicted half the time
        run = INF
        for t in range(n):
            x = dg[t]
            y = up[t]
            f = y < x
            m = y if f else x
            h = run < m
            m = run if h else m
            cd[t] = 2 if h else np.uint8(f)
            run = m + g[t]
            cc[t] = run
        # bands never move left, so only the cell left of the band can be stale
        cur[a] = INF
        # pack four 2-bit codes per byte
        base = dir_off[i]
        for q in range((n + 3) >> 2):
            c4 = code[4 * q:4 * q + 4]
            dirs[base + q] = c4[0] | (c4[1] << 2) | (c4[2] << 4) | (c4[3] << 6)
        if k > 0:
            if i % k == k - 1:
                o = row_ck_off[i // k]
                row_ck[o:o + n] = cur[a + 1:b + 2]
            first = ((a + 1 + k - 1) // k) * k - 1  # first column with j % k == k - 1 and j >= a
            o = col_ck_off[i]
            for j in range(first, b + 1, k):
                col_ck[o + (j - first) // k] = cur[j + 1]


@numba.njit(cache=True)
def get_code(dirs, dir_off, lo, i, j):
    t = j - lo[i]
    return (dirs[dir_off[i] + (t >> 2)] >> (2 * (t & 3))) & 3


@numba.njit(cache=True)
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


@numba.njit(cache=True)
def cell_cost(mode, Af, Bf, na, nb, C, i, j):
    """Cost of cell (i, j): ``C[i, j]`` (mode 1) or ``|a_i - b_j|^2`` expanded as in the forward pass."""
    if mode == 1:
        return C[i, j]
    s = 0.0
    for q in range(Af.shape[1]):
        s += Af[i, q] * Bf[j, q]
    c = na[i] + nb[j] - 2.0 * s
    return c if c > 0.0 else 0.0


@numba.njit(cache=True)
def path_cost(mode, Af, Bf, na, nb, C, path):
    s = 0.0
    for t in range(path.shape[0]):
        s += cell_cost(mode, Af, Bf, na, nb, C, path[t, 0], path[t, 1])
    return s


@numba.njit(cache=True)
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
