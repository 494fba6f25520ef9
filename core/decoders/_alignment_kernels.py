"""Private numba kernels of the template-alignment decoders.

State ``(e, t)`` means "frame ``t`` belongs to event ``e`` and event ``e``
already holds at least ``m`` frames" (``m`` = minimal duration). A state has
two incoming edges:

* *continue*: from ``(e, t-1)``, adding ``S[t, e]``;
* *start*: event ``e`` starts at frame ``s = t - m + 1`` coming from
  ``(e-1, t-m)``, adding the ``m`` values ``S[s:t+1, e]``.

Rows ``t`` are processed in order with a ring of ``m + 1`` rows of values and a
packed bit per state telling which edge won (1 = start), so memory is
``T * E / 8`` bytes plus ``O(m E)`` floats. The callers in
:mod:`marginalia.decoders.alignment` validate every argument.
"""

from __future__ import annotations

import numba
import numpy as np

NEG = -np.inf

#: loss modes understood by the kernels
LOSS_NONE = 0
LOSS_HAMMING = 1
LOSS_ONSET = 2


@numba.njit(cache=True, nogil=True)
def all_finite(S):
    """True when every entry of the 2-d array is finite (early exit)."""
    T, E = S.shape
    for t in range(T):
        acc = 0.0
        for e in range(E):
            acc += S[t, e] * 0.0
        if acc != 0.0:
            return False
    return True


@numba.njit(cache=True, nogil=True)
def _fill_row(S, t, truth, mode, c, buf):
    """Row ``t`` of the score plus the linear onset loss ``c |e - e*(t)|``."""
    E = S.shape[1]
    if mode == LOSS_ONSET:
        et = truth[t]
        St = S[t]
        for e in range(E):
            buf[e] = St[e] + c * abs(e - et)
        return buf
    return S[t]


@numba.njit(cache=True, nogil=True)
def _band(t, T, E, m):
    """Events that can hold a state at frame ``t`` (inclusive bounds)."""
    lo = E - 1 - (T - 1 - t) // m
    hi = (t + 1) // m - 1
    if lo < 0:
        lo = 0
    if hi > E - 1:
        hi = E - 1
    return lo, hi


@numba.njit(cache=True, nogil=True)
def align_rows(S, m, onset_lo, onset_hi, truth, mode, c,
               ring, win, buf_new, buf_old, flags,
               t_start, t_stop, ea, eb,
               bits, store_bits,
               ck_every, ck_ring, ck_win,
               path_ev, path_on, rec_cont, rec_start, check_finite):
    """Run the forward recursion over rows ``[t_start, t_stop)``.

    Parameters
    ----------
    S : ndarray, shape (T, E)
    m : int
        Minimal number of frames per event.
    onset_lo, onset_hi : ndarray of int64, shape (E,)
        Allowed onset window of every event (inclusive).
    truth : ndarray of int64, shape (T,)
        Event of every frame in the reference (used when ``mode != 0``).
    mode : int
        ``LOSS_NONE``, ``LOSS_HAMMING`` or ``LOSS_ONSET``.
    c : float
        Loss scale.
    ring : ndarray, shape (m + 1, E)
        Values of the last ``m + 1`` rows (slot ``t % (m + 1)``).
    win : ndarray, shape (E,)
        Sum of the (augmented) scores of the last ``m`` frames per event.
    buf_new, buf_old : ndarray, shape (E,)
        Scratch rows.
    flags : ndarray of uint8, shape (E + 8,)
        Scratch decisions of the current row.
    t_start, t_stop : int
    ea, eb : int
        Only events in ``[ea, eb]`` are computed (a cone for recomputation).
    bits : ndarray of uint8, shape (T, ceil(E / 8))
        Packed decisions; written when ``store_bits``.
    ck_every : int
        When > 0, after every row ``t`` with ``(t + 1) % ck_every == 0`` copy
        rows ``t - q`` (``q < m``) of the ring into ``ck_ring[j, q]`` and, when
        ``m > 1``, ``win`` into ``ck_win[j]`` (``j = (t + 1) // ck_every - 1``).
    path_ev, path_on : ndarray of int64
        When ``path_ev`` is not empty: the event of every frame and the onsets
        of a path whose two incoming candidates are recorded.
    rec_cont, rec_start : ndarray, shape (T,)
        Recorded "continue" and "start" candidate values (``-inf`` when absent).
    check_finite : bool
        Stop at the first row holding NaN or infinity.

    Returns
    -------
    int
        The first non-finite row when ``check_finite`` found one, else -1.
    """
    T, E = S.shape
    R = m + 1
    record = path_ev.shape[0] > 0
    fused_onset = mode == LOSS_ONSET and m == 1
    # ramp[E + d] = c |d|: the onset loss of a row is a contiguous slice of it
    ramp = np.abs(np.arange(-E, E + 1).astype(np.float64)) * c if fused_onset else np.zeros(1)
    for t in range(t_start, t_stop):
        if check_finite:
            # the row is read right after, so this check costs little extra memory traffic
            bad = False
            St = S[t]
            for e in range(E):
                bad |= (St[e] - St[e]) != 0.0
            if bad:
                return t
        if fused_onset:
            row = S[t]
        else:
            row = _fill_row(S, t, truth, mode, c, buf_new)
        et = truth[t] if mode == LOSS_HAMMING else -1
        if m > 1:
            if t >= m:
                old_row = _fill_row(S, t - m, truth, mode, c, buf_old)
                for e in range(ea, eb + 1):
                    win[e] += row[e] - old_row[e]
                if mode == LOSS_HAMMING:
                    eo = truth[t - m]
                    if ea <= eo <= eb:
                        win[eo] += c
            else:
                for e in range(ea, eb + 1):
                    win[e] += row[e]
            if mode == LOSS_HAMMING and ea <= et <= eb:
                win[et] -= c
        cur = ring[t % R]
        prev = ring[(t - 1) % R]
        old = ring[(t - m) % R]
        lo, hi = _band(t, T, E, m)
        if lo < ea:
            lo = ea
        if hi > eb:
            hi = eb
        s = t - m + 1
        first = lo if lo > 0 else 1
        n = hi + 1 - first
        if n > 0:
            # 0-based views let LLVM drop the negative-index checks and vectorise
            r = row[first:hi + 1]
            p0 = prev[first:hi + 1]
            p1 = old[first - 1:hi]
            cc = cur[first:hi + 1]
            fl = flags[first:hi + 1]
            wl = onset_lo[first:hi + 1]
            wh = onset_hi[first:hi + 1]
            w = win[first:hi + 1] if m > 1 else r
            if fused_onset:
                rp = ramp[E + first - truth[t]:E + first - truth[t] + n]
                for i in range(n):
                    v = r[i] + rp[i]
                    a = p0[i] + v
                    ok = (s >= wl[i]) & (s <= wh[i])
                    b = p1[i] + v if ok else NEG
                    f = b > a
                    cc[i] = b if f else a
                    fl[i] = f
            else:
                for i in range(n):
                    a = p0[i] + r[i]
                    ok = (s >= wl[i]) & (s <= wh[i])
                    b = p1[i] + w[i] if ok else NEG
                    f = b > a
                    cc[i] = b if f else a
                    fl[i] = f
        # event 0 and the Hamming correction are single cells: redo them exactly
        for e in (0, et):
            if e < lo or e > hi:
                continue
            v = row[e] - c if e == et else row[e]
            if fused_onset:
                v += c * abs(e - truth[t])
            a = prev[e] + v
            if e == 0:
                b = (win[0] if m > 1 else v) if s == 0 else NEG
            else:
                b = old[e - 1] + (win[e] if m > 1 else v)
                if s < onset_lo[e] or s > onset_hi[e]:
                    b = NEG
            if b > a:
                cur[e] = b
                flags[e] = 1
            else:
                cur[e] = a
                flags[e] = 0
        if hi + 1 < E:
            cur[hi + 1] = NEG
        if hi + 2 < E:
            cur[hi + 2] = NEG
        if store_bits and hi >= lo:
            # bits outside [lo, hi] are junk and never read back
            for byte in range(lo >> 3, (hi >> 3) + 1):
                f8 = flags[byte << 3:(byte << 3) + 8]
                bits[t, byte] = (f8[0] | (f8[1] << 1) | (f8[2] << 2) | (f8[3] << 3)
                                 | (f8[4] << 4) | (f8[5] << 5) | (f8[6] << 6) | (f8[7] << 7))
        if record:
            e = path_ev[t]
            rec_cont[t] = NEG
            rec_start[t] = NEG
            if t - path_on[e] >= m - 1 and lo <= e <= hi:
                v = row[e] - c if e == et else row[e]
                if fused_onset:
                    v += c * abs(e - truth[t])
                rec_cont[t] = prev[e] + v
                w = win[e] if m > 1 else v
                if e == 0:
                    if s == 0:
                        rec_start[t] = w
                elif onset_lo[e] <= s <= onset_hi[e]:
                    rec_start[t] = old[e - 1] + w
        if ck_every > 0 and (t + 1) % ck_every == 0:
            # the rows after t read only rows t-m+1..t and the window sums
            j = (t + 1) // ck_every - 1
            if j < ck_ring.shape[0]:
                for q in range(m):
                    ck_ring[j, q, :] = ring[(t - q) % R]
                if m > 1:
                    ck_win[j, :] = win
    return -1


@numba.njit(cache=True, nogil=True)
def get_bit(bits, t, e):
    return (bits[t, e >> 3] >> (e & 7)) & 1


@numba.njit(cache=True, nogil=True)
def backtrack(bits, m, e, t, onsets):
    """Fill ``onsets[:e+1]`` with the best prefix ending in state ``(e, t)``."""
    while True:
        if get_bit(bits, t, e):
            onsets[e] = t - m + 1
            if e == 0:
                return
            e -= 1
            t -= m
        else:
            t -= 1


@numba.njit(cache=True, nogil=True)
def alignment_value(S, onsets):
    """Sum of ``S[t, e(t)]`` for the alignment given by its onsets."""
    T, E = S.shape
    total = 0.0
    for e in range(E):
        stop = onsets[e + 1] if e + 1 < E else T
        for t in range(onsets[e], stop):
            total += S[t, e]
    return total


@numba.njit(cache=True, nogil=True)
def duration_prior_dp(S_cum, m, dmax, onset_lo, onset_hi, expected, weight, back):
    """Exact DP over (event, onset) with a quadratic duration penalty.

    ``S_cum[t, e]`` is the sum of ``S[:t, e]`` (shape (T + 1, E)).
    ``F[e, o]`` = best value of events ``< e`` when event ``e`` starts at
    ``o``; ``back[e, o]`` stores the chosen duration of event ``e - 1``.
    Returns the best total value (``-inf`` when infeasible).
    Cost: ``O(E * T * (dmax - m + 1))`` time, two rows of ``T`` floats plus
    ``back`` (E x T integers).
    """
    T1, E = S_cum.shape
    T = T1 - 1
    prev = np.full(T + 1, NEG)
    cur = np.full(T + 1, NEG)
    prev[0] = 0.0
    for e in range(1, E):
        for o in range(T + 1):
            cur[o] = NEG
        lo = max(onset_lo[e], e * m)
        hi = min(onset_hi[e], T - (E - e) * m)
        ep = e - 1
        for o in range(lo, hi + 1):
            cur[o], back[e, o] = _best_duration(prev, S_cum, o, ep, m, dmax, expected[ep], weight)
        prev, cur = cur, prev
    # last event runs to T
    best, back[0, 0] = _best_duration(prev, S_cum, T, E - 1, m, dmax, expected[E - 1], weight)
    return best


@numba.njit(cache=True, nogil=True)
def _best_duration(prev, S_cum, o, ep, m, dmax, expected_d, weight):
    """Best ``(value, duration)`` of event ``ep`` ending at frame ``o`` (``(-inf, 0)`` when none is feasible).

    ``prev[p]`` is the best value of the events before ``ep`` when ``ep`` starts at ``p``; a duration
    ``d`` in ``m..min(dmax, o)`` adds ``ep``'s scores over ``[o - d, o)`` minus ``weight * (d - expected_d)**2``.
    """
    best = NEG
    bd = 0
    for d in range(m, min(dmax, o) + 1):
        p = o - d
        pv = prev[p]
        if pv == NEG:
            continue
        diff = d - expected_d
        v = pv + S_cum[o, ep] - S_cum[p, ep] - weight * diff * diff
        if v > best:
            best = v
            bd = d
    return best, bd


@numba.njit(cache=True, nogil=True)
def path_candidates(S, m, onset_lo, onset_hi, truth, mode, c, k, ck_ring, ck_win,
                    path_ev, path_on, rec_cont, rec_start):
    """Both incoming candidates at every state of a path, recomputed from checkpoints.

    Segment ``j`` (rows ``[j k, (j+1) k)``) restarts from the checkpoint taken
    after row ``j k - 1`` and computes only the events
    ``[min(path) - 1 - k, max(path)]`` of the segment: wrong values entering at
    the lower edge climb at most one event per row, so they never reach the
    path's predecessors.
    """
    T, E = S.shape
    ring = np.full((m + 1, E), NEG)
    win = np.zeros(E)
    buf_new = np.empty(E)
    buf_old = np.empty(E)
    flags = np.zeros(E + 8, np.uint8)
    bits = np.zeros((1, 1), np.uint8)
    nseg = (T + k - 1) // k
    sink = np.zeros(1)
    for j in range(nseg):
        t0 = j * k
        t1 = min(T, t0 + k)
        emax = path_ev[t1 - 1]
        # wrong values entering below climb at most one event per row: row t0 + r is exact from
        # event ea + r, and the path's predecessors at that row start at event path_ev[t0 + r] - 1
        ea = emax
        for r in range(t1 - t0):
            ea = min(ea, path_ev[t0 + r] - 1 - r)
        ea = max(0, ea)
        # only the cone's columns (and the one below it, read by its first event, and the two above it,
        # cleared by every row) are restored: O(k) per segment, not O(E)
        c0 = max(0, ea - 1)
        c1 = min(E, emax + 3)
        # touch the segment's cone of S first: rows are a page apart, so each is a cache and TLB miss;
        # these loads do not depend on each other and overlap, the recursion's would not
        touch = 0.0
        for r in range(t0, t1):
            for e in range(c0, c1, 8):
                touch += S[r, e]
        sink[0] += touch
        ring[:, c0:c1] = NEG
        win[c0:c1] = 0.0
        if j > 0:
            last = t0 - 1
            for q in range(m):
                ring[(last - q) % (m + 1), c0:c1] = ck_ring[j - 1, q, c0:c1]
            if m > 1:
                win[c0:c1] = ck_win[j - 1, c0:c1]
        align_rows(S, m, onset_lo, onset_hi, truth, mode, c, ring, win, buf_new, buf_old, flags,
                   t0, t1, ea, emax, bits, False, 0, ck_ring, ck_win,
                   path_ev, path_on, rec_cont, rec_start, False)
