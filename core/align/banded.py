"""Multi-resolution decoding of :func:`marginalia.align.dp.align_with_duration_costs`, in time and memory that grow
with the recording rather than with events × frames (only the coarse pass is ``E × T / factor``).

The full decoder visits every (event, frame) pair, and the aligner built the (frames × events) score, onset-gain,
prefix-sum, back-pointer and duration-cost tables before it: about ``E × T`` work and memory (1.6 GB and 38 s
for the 10-minute recording of ``benchmarks.speed.scaling``, ``E`` = 1045 states, ``T`` = 25,840 frames; 5 GB
for a 14-minute ASAP performance). Here no ``T × E`` table is ever made:

1. The scores come factored, ``S = A Bᵀ`` and ``gain = C Dᵀ`` (``K`` ≈ 100 columns: a frame descriptor against
   an event template), which is exact for the aligner's scores.
2. A **coarse decode** runs the same dynamic programme on frames pooled ``factor`` at a time (scores summed,
   which is exact for a factored score; onset gains max-pooled; an event may take no coarse frame, because
   fast passages have more events than coarse frames; each coarse duration costs the least of the fine
   durations it stands for), forward and backward: every event gets its best coarse onset and the span of
   coarse onsets through which some coarse alignment scores within ``slack`` of the best (max-marginals:
   wide where the coarse decode is uncertain). Its tables are ``E × T / factor`` (single precision).
3. A **fine decode** then runs at full resolution inside a *band*: every event's onset may only lie between
   the coarse onsets of the events before and after it (the distinct ones around a group that shares a coarse
   onset) and through its near-best span, widened by ``radius`` frames. Its tables hold the band's cells only
   (about ``T + E × band``).
4. The band must then hold every alignment within ``radius`` frames of the fine path (``2 × margin`` coarse
   frames, 1.5 s in the aligner). Where it does not, the windows grow to hold them; where the fine path sits on
   the band's edge (an onset equal to a window bound that is not one of the caller's own), the band was binding,
   so the windows of those events and their neighbours also widen, twice as wide each round; and the fine decode
   runs again, until the band holds the path's whole neighbourhood. Windows only grow, so this ends (after
   ``_MAX_ROUNDS`` rounds the events still growing get the caller's whole windows).

What is guaranteed (and what is not). The result is the *exact* optimum over all alignments whose onsets lie in
the final band, and that band holds every alignment whose onsets are each within ``radius`` frames of the
result's: no alignment that close scores higher (a local certificate with a stated radius). The result
therefore equals the full decoder's optimum whenever that optimum lies inside the final band — in particular
whenever it lies within ``radius`` of the result everywhere. It is not a global certificate: an alignment that
differs from the result by more than ``radius`` somewhere and lies outside the band there is never compared,
so a coarse decode that reads a passage completely wrongly is not repaired. A path strictly inside its band
is not enough on its own: on a 10-minute recording a first band (``margin`` 4, no radius) held a path 27
frames from the full optimum, in a near-tie (0.003 in the objective) inside a silence; the radius check found
the full optimum there. Measured against the full decoder (``docs/research/alignment.md``): equal on random
problems whose band holds the optimum, on the Vienna 4x22 excerpts and on the 10-minute scaling recording; of
equal objective on the Mephisto Waltz (ASAP DANILO03: two events one frame apart, an exact tie); far below it on
Liszt's Ballade 2 (dense fast passages that the coarse
decode misreads), where the band has to widen for every event and the aligner uses the full decoder instead.
"""

from __future__ import annotations

import math

import numba
import numpy as np

from ..exceptions import ParameterError
from .dp import checked_duration_inputs, infeasible_alignment, log_ratio_cost

__all__ = ["duration_cost_rows", "align_multiresolution", "align_in_band", "onset_moves_factored"]

#: events on either side of an edge-touching onset whose windows widen with it
_WIDEN_NEIGHBOURS = 8
#: rounds of widening before the touched events' windows open to the caller's own
_MAX_ROUNDS = 12


# ------------------------------------------------------------------ duration costs, one row per event
def duration_cost_rows(expected, *, weight: float, max_frames, smoothing: float, long_knee: float,
                       free=()) -> tuple:
    """The cost table of :func:`marginalia.align.dp.duration_costs`, each event's row only as long as its limit.

    The dense table is ``E × (max(max_frames) + 1)``: with the rests and the final event allowed the whole
    recording that is ``E × T``. These rows hold ``sum(max_frames + 1)`` values.

    Parameters
    ----------
    expected, weight, max_frames, smoothing, long_knee, free
        As :func:`marginalia.align.dp.duration_costs`.

    Returns
    -------
    values : ndarray, shape (sum(max_frames + 1),)
        ``values[offsets[e] + d]`` is the cost of event ``e`` lasting ``d`` frames, ``0 <= d <= max_frames[e]``
        (``inf`` at ``d = 0``).
    offsets : ndarray of int64, shape (E,)
    """
    d_hat, dmax = checked_duration_inputs(expected, max_frames, weight, smoothing, long_knee)
    lengths = dmax + 1
    offsets = np.zeros(lengths.shape[0], np.int64)
    np.cumsum(lengths[:-1], out=offsets[1:])
    row = np.repeat(np.arange(lengths.shape[0]), lengths)
    d = (np.arange(int(lengths.sum())) - offsets[row]).astype(np.float64)
    values = log_ratio_cost(d, d_hat[row], weight=weight, smoothing=smoothing, long_knee=long_knee)
    for e in free:
        values[offsets[int(e)]:offsets[int(e)] + lengths[int(e)]] = 0.0
    values[offsets] = np.inf
    return values, offsets


@numba.njit(cache=True, nogil=True)
def _coarse_cost_rows(cval, coff, dmax, f, out, ooff, cmax):
    """Cost of every coarse duration: the least fine cost among the durations it stands for."""
    half = f // 2
    for e in range(dmax.shape[0]):
        for dc in range(cmax[e] + 1):
            a = max(1, dc * f - half)
            b = min(dmax[e], dc * f + (f - 1 - half))
            best = np.inf
            for d in range(a, b + 1):
                v = cval[coff[e] + d]
                if v < best:
                    best = v
            out[ooff[e] + dc] = best


# ------------------------------------------------------------------ kernels
@numba.njit(cache=True, nogil=True)
def _band_values(A, B, first, stop, off, out):
    """``out[off[e] + t - first[e]] = A[t] · B[e]`` for every event ``e`` and frame ``t`` in ``[first[e], stop[e])``."""
    K = A.shape[1]
    for e in range(first.shape[0]):
        o = off[e] - first[e]
        for t in range(first[e], stop[e]):
            v = 0.0
            for k in range(K):
                v += A[t, k] * B[e, k]
            out[o + t] = v


@numba.njit(cache=True, nogil=True)
def _dp_buffers(lo, hi, end_lo, end_hi):
    """Work rows of a banded pass, sized by the widest onset or end window (W) and onset-to-end reach (L).

    Returns ``(edge, cur, cum, base)``: ``edge`` (W,) is the boundary row, 0 at index 0 and -inf elsewhere;
    the others are uninitialised, shapes (W,), (L,), (W,).
    """
    W = 1
    L = 1
    for e in range(lo.shape[0]):
        W = max(W, hi[e] - lo[e] + 1, end_hi[e] - end_lo[e] + 1)
        L = max(L, end_hi[e] - lo[e] + 1)
    edge = np.full(W, -np.inf)
    edge[0] = 0.0
    return edge, np.empty(W), np.empty(L), np.empty(W)


@numba.njit(cache=True, nogil=True)
def _band_dp(sval, soff, gval, goff, cval, coff, dmax, lo, hi, end_lo, end_hi, dmin, back, boff):
    """Best objective over alignments whose onsets lie in ``[lo, hi]`` (ends in ``[end_lo, end_hi]``).

    ``sval[soff[e] + t - lo[e]]`` is event ``e``'s score in frame ``t`` (``lo[e] <= t < end_hi[e]``),
    ``gval[goff[e] + s - lo[e]]`` its onset gain at ``s`` (``lo[e] <= s <= hi[e]``), ``cval[coff[e] + d]`` the cost
    of lasting ``d`` frames (``dmin <= d <= dmax[e]``). Fills ``back[boff[e] + t - end_lo[e]]`` with the duration
    of ``e`` ending at ``t`` (-1 when none).
    """
    E = lo.shape[0]
    prev, cur, cum, base = _dp_buffers(lo, hi, end_lo, end_hi)
    for e in range(E):
        a = lo[e]
        so = soff[e]
        cum[0] = 0.0
        for j in range(end_hi[e] - a):
            cum[j + 1] = cum[j] + sval[so + j]
        go = goff[e]
        for j in range(hi[e] - a + 1):      # what a start at a + j brings, before the duration's cost
            base[j] = prev[j] - cum[j] + gval[go + j]
        for t in range(end_lo[e], end_hi[e] + 1):
            best = -np.inf
            arg = -1
            s_lo = max(a, t - dmax[e])
            s_hi = min(hi[e], t - dmin)
            ct = cum[t - a]
            ce = coff[e] + t - a
            for j in range(s_hi - a, s_lo - a - 1, -1):   # shortest first: ties go as in the full decoder
                v = base[j] - cval[ce - j]
                if v > best:
                    best = v
                    arg = t - a - j
            cur[t - end_lo[e]] = best + ct
            back[boff[e] + t - end_lo[e]] = arg
        for j in range(end_hi[e] - end_lo[e] + 1):
            prev[j] = cur[j]
    return prev[0]


@numba.njit(cache=True, nogil=True)
def _backtrack(back, boff, end_lo, T, onsets):
    t = T
    for e in range(onsets.shape[0] - 1, -1, -1):
        d = back[boff[e] + t - end_lo[e]]
        onsets[e] = t - d
        t = onsets[e]


# ------------------------------------------------------------------ windows
def _strict_windows(lo, hi, T):
    """Onset windows narrowed by their neighbours: onsets strictly increase from frame 0, all below ``T``."""
    E = lo.shape[0]
    r = np.arange(E)
    lo = np.maximum.accumulate(np.maximum(lo, 0) - r) + r
    hi = np.minimum.accumulate((np.minimum(hi, T - 1) - r)[::-1])[::-1] + r
    lo[0], hi[0] = 0, 0
    return lo, hi


def _ends(lo, hi, T):
    """Frames every event may end at: the next one's onset window, ``T`` for the last."""
    return np.append(lo[1:], T), np.append(hi[1:], T)


def _decode(sval_fn, gval_fn, cval, coff, dmax, lo, hi, T, dmin):
    """Exact optimum over onsets in ``[lo, hi]``; ``(onsets or None, value)``."""
    E = lo.shape[0]
    end_lo, end_hi = _ends(lo, hi, T)
    if np.any(hi < lo) or np.any(end_hi < end_lo):
        return None, -math.inf
    sval, soff = sval_fn(lo, end_hi)
    gval, goff = gval_fn(lo, hi)
    sizes = end_hi - end_lo + 1
    boff = np.zeros(E, np.int64)
    np.cumsum(sizes[:-1], out=boff[1:])
    back = np.empty(int(sizes.sum()), np.int32)
    value = _band_dp(sval, soff, gval, goff, cval, coff, dmax, lo, hi, end_lo, end_hi, dmin, back, boff)
    if not np.isfinite(value):
        return None, value
    onsets = np.empty(E, np.int64)
    _backtrack(back, boff, end_lo, T, onsets)
    return onsets, float(value)


def _factored(A, B, first, stop):
    """``A Bᵀ`` over each event's frames ``[first, stop)``: flat values and offsets."""
    sizes = np.maximum(stop - first, 0)
    off = np.zeros(first.shape[0], np.int64)
    np.cumsum(sizes[:-1], out=off[1:])
    out = np.empty(max(int(sizes.sum()), 1))
    _band_values(A, B, first, np.maximum(stop, first), off, out)
    return out, off


def _check_factors(A, B, C, D):
    A = np.ascontiguousarray(A, dtype=np.float64)
    B = np.ascontiguousarray(B, dtype=np.float64)
    if A.ndim != 2 or B.ndim != 2 or A.shape[1] != B.shape[1] or not (np.all(np.isfinite(A))
                                                                     and np.all(np.isfinite(B))):
        raise ParameterError(f"A/B: expected finite factors of shapes (T, K) and (E, K), got "
                             f"{getattr(A, 'shape', None)} and {getattr(B, 'shape', None)}")
    T, E = A.shape[0], B.shape[0]
    if C is None:
        C, D = np.zeros((T, 1)), np.zeros((E, 1))
    C = np.ascontiguousarray(C, dtype=np.float64)
    D = np.ascontiguousarray(D, dtype=np.float64)
    if C.ndim != 2 or D.ndim != 2 or C.shape[0] != T or D.shape[0] != E or C.shape[1] != D.shape[1] \
            or not (np.all(np.isfinite(C)) and np.all(np.isfinite(D))):
        raise ParameterError(f"C/D: expected finite onset-gain factors of shapes ({T}, K') and ({E}, K'), got "
                             f"{C.shape} and {D.shape}")
    return A, B, C, D


def _checked_problem(A, B, C, D, cost_rows, max_frames) -> tuple:
    """The validated inputs of a factored alignment: ``(A, B, C, D, cval, coff, dmax, T, E)``, ``dmax`` shape (E,)."""
    A, B, C, D = _check_factors(A, B, C, D)
    E = B.shape[0]
    cval, coff = _check_rows(cost_rows, E)
    dmax = np.asarray(max_frames, dtype=np.int64)
    if dmax.shape != (E,) or np.any(dmax < 1):
        raise ParameterError(f"max_frames: expected {E} limits >= 1, got shape {dmax.shape}")
    return A, B, C, D, cval, coff, dmax, A.shape[0], E


def _check_rows(cost_rows, E):
    try:
        cval, coff = cost_rows
    except (TypeError, ValueError):
        raise ParameterError("cost_rows: expected (values, offsets) from duration_cost_rows") from None
    cval = np.ascontiguousarray(cval, dtype=np.float64)
    coff = np.ascontiguousarray(coff, dtype=np.int64)
    if coff.shape != (E,):
        raise ParameterError(f"cost_rows: expected offsets of {E} events, got shape {coff.shape}")
    return cval, coff


def align_in_band(A, B, cost_rows, max_frames, onset_min, onset_max, *, C=None, D=None) -> tuple:
    """Exact best alignment among those whose every onset lies in its window, in memory of the windows' size.

    The objective is :func:`marginalia.align.dp.align_with_duration_costs`'s with ``S = A Bᵀ`` and
    ``onset_gain = C Dᵀ``; only the scores of frames an event can cover given the windows are computed.

    Parameters
    ----------
    A : ndarray, shape (T, K)
    B : ndarray, shape (E, K)
        Score factors: ``S[t, e] = A[t] · B[e]``.
    cost_rows : (ndarray, ndarray)
        From :func:`duration_cost_rows`.
    max_frames : array_like of int, shape (E,)
        Longest duration of every event (within its cost row).
    onset_min, onset_max : array_like of int, shape (E,)
        Onset windows (narrowed here by their neighbours; event 0 starts at frame 0).
    C : ndarray, shape (T, K'), optional
    D : ndarray, shape (E, K'), optional
        Onset-gain factors: ``gain[t, e] = C[t] · D[e]``.

    Returns
    -------
    onsets : ndarray of int64, shape (E,)
    value : float
        The objective of ``onsets``.

    Raises
    ------
    InfeasibleLabelsError
        No alignment obeys the windows and the duration limits.
    """
    A, B, C, D, cval, coff, dmax, T, E = _checked_problem(A, B, C, D, cost_rows, max_frames)
    lo, hi = _strict_windows(np.array(onset_min, dtype=np.int64), np.array(onset_max, dtype=np.int64), T)
    onsets, value = _decode(lambda a, b: _factored(A, B, a, b), lambda a, b: _factored(C, D, a, b + 1),
                            cval, coff, dmax, lo, hi, T, 1)
    if onsets is None:
        raise infeasible_alignment(E, T)
    return onsets, value


def _pool(M, f, how):
    T = M.shape[0]
    n = -(-T // f)
    P = np.zeros((n * f, M.shape[1]))
    P[:T] = M
    P = P.reshape(n, f, M.shape[1])
    return P.sum(axis=1) if how == "sum" else P.max(axis=1)


@numba.njit(cache=True, nogil=True)
def _coarse_forward(Sc, Gc, cval, coff, dmax, lo, hi, end_lo, end_hi, fwd, foff):
    """The coarse decode's forward pass (events may last 0 frames); ``fwd[foff[e] + s - lo[e]]`` = best score of
    the events before ``e`` with ``e`` starting at ``s``. Returns the optimum."""
    E = lo.shape[0]
    prev, cur, cum, base = _dp_buffers(lo, hi, end_lo, end_hi)
    for e in range(E):
        a = lo[e]
        for j in range(hi[e] - a + 1):
            fwd[foff[e] + j] = prev[j]
        cum[0] = 0.0
        for j in range(end_hi[e] - a):
            cum[j + 1] = cum[j] + Sc[e, a + j]
        for j in range(hi[e] - a + 1):
            base[j] = prev[j] - cum[j] + Gc[e, a + j]
        for t in range(end_lo[e], end_hi[e] + 1):
            best = -np.inf
            ce = coff[e] + t - a
            for j in range(max(a, t - dmax[e]) - a, min(hi[e], t) - a + 1):
                v = base[j] - cval[ce - j]
                if v > best:
                    best = v
            cur[t - end_lo[e]] = best + cum[t - a]
        for j in range(end_hi[e] - end_lo[e] + 1):
            prev[j] = cur[j]
    return prev[0]


@numba.njit(cache=True, nogil=True)
def _coarse_backward(Sc, Gc, cval, coff, dmax, lo, hi, end_lo, end_hi, fwd, foff, floor, near_lo, near_hi, best_s):
    """The coarse decode's backward pass: for every event, the first and last onsets ``s`` through which some
    alignment scores at least ``floor`` (``near_lo``/``near_hi``, -1 when none), and the best one (``best_s``)."""
    E = lo.shape[0]
    nxt, cur, cum, base = _dp_buffers(lo, hi, end_lo, end_hi)   # nxt[0] = 0: after the last event, its end is the recording's
    for e in range(E - 1, -1, -1):
        a = lo[e]
        cum[0] = 0.0
        for j in range(end_hi[e] - a):
            cum[j + 1] = cum[j] + Sc[e, a + j]
        near_lo[e] = -1
        near_hi[e] = -1
        top = -np.inf
        b = end_lo[e]
        for k in range(end_hi[e] - b + 1):      # what an end at b + k brings, before the duration's cost
            base[k] = nxt[k] + cum[b + k - a]
        for s in range(a, hi[e] + 1):
            best = -np.inf
            cs = coff[e] + b - s
            for k in range(max(b, s) - b, min(end_hi[e], s + dmax[e]) - b + 1):
                v = base[k] - cval[cs + k]
                if v > best:
                    best = v
            best += Gc[e, s] - cum[s - a]
            cur[s - a] = best
            m = best + fwd[foff[e] + s - a]
            if m >= floor:
                if near_lo[e] < 0:
                    near_lo[e] = s
                near_hi[e] = s
            if m > top:
                top = m
                best_s[e] = s
        for j in range(hi[e] - a + 1):
            nxt[j] = cur[j]
    return 0


def _coarse_onsets(A, B, C, D, cval, coff, dmax, lo, hi, f, slack):
    """The decode on frames pooled ``f`` at a time: ``(onsets, first, last)`` in fine frames (multiples of ``f``):
    every event's best coarse onset, and the first and last coarse onsets of the alignments that score within
    ``slack`` of the coarse optimum (its max-marginals); None when no coarse alignment exists."""
    T, E = A.shape[0], B.shape[0]
    Tc = -(-T // f)
    Sc = np.zeros((E, Tc + 1), np.float32)     # coarse tables in single precision (sums in double)
    Sc[:, :Tc] = B @ _pool(A, f, "sum").T
    Gc = np.zeros((E, Tc + 1), np.float32)
    Gc[:, :Tc] = D @ _pool(C, f, "max").T
    cmax = np.minimum(-(-dmax // f), Tc)
    ooff = np.zeros(E, np.int64)
    np.cumsum(cmax[:-1] + 1, out=ooff[1:])
    crow = np.empty(int((cmax + 1).sum()))
    _coarse_cost_rows(cval, coff, dmax, f, crow, ooff, cmax)
    # boundaries at coarse frames: a fine onset o is near boundary round(o / f); onsets may share a boundary
    lo_c = np.maximum.accumulate(np.clip(lo // f, 0, Tc))
    hi_c = np.minimum.accumulate(np.clip(-(-hi // f), 0, Tc)[::-1])[::-1]
    lo_c[0] = hi_c[0] = 0
    end_lo, end_hi = _ends(lo_c, hi_c, Tc)
    if np.any(hi_c < lo_c):
        return None
    sizes = hi_c - lo_c + 1
    foff = np.zeros(E, np.int64)
    np.cumsum(sizes[:-1], out=foff[1:])
    fwd = np.empty(int(sizes.sum()), np.float32)
    opt = _coarse_forward(Sc, Gc, crow, ooff, cmax, lo_c, hi_c, end_lo, end_hi, fwd, foff)
    if not np.isfinite(opt):
        return None
    near_lo, near_hi, best = (np.zeros(E, np.int64) for _ in range(3))
    # the stored forward scores are single precision: a little tolerance keeps the best path inside
    floor = opt - float(slack) - 1e-5 * max(abs(opt), 1.0)
    _coarse_backward(Sc, Gc, crow, ooff, cmax, lo_c, hi_c, end_lo, end_hi, fwd, foff, floor, near_lo, near_hi, best)
    best = np.maximum.accumulate(best)
    near_lo = np.where(near_lo < 0, best, np.minimum(near_lo, best))
    near_hi = np.maximum(near_hi, best)
    return best * f, near_lo * f, near_hi * f


def _coarse_windows(centre, near_lo, near_hi, reach, lo0, hi0, T):
    """Onset windows around a coarse decode: every event between the coarse onsets of the events before and
    after it (the distinct ones around a group that shares a coarse onset: a fast passage), and through every
    onset of a near-best coarse alignment, ``reach`` frames wider on both sides, within ``[lo0, hi0]``."""
    E = centre.shape[0]
    first = np.searchsorted(centre, centre, side="left")
    stop = np.searchsorted(centre, centre, side="right")
    before = np.where(first > 0, centre[np.maximum(first - 1, 0)], 0)
    after = np.where(stop < E, centre[np.minimum(stop, E - 1)], T)
    before, after = np.minimum(before, near_lo), np.maximum(after, near_hi)
    return _strict_windows(np.maximum(lo0, before - reach), np.minimum(hi0, after + reach), T)


def align_multiresolution(A, B, cost_rows, max_frames, onset_min=None, onset_max=None, *, C=None, D=None,
                          factor=8, margin: int = 4, radius: int = None, slack: float = 0.0,
                          give_up: float = None, info: dict = None, band: tuple = None) -> np.ndarray:
    """The alignment of :func:`align_in_band` found coarse-to-fine: a coarse pass of ``E × T / factor`` cells,
    then about ``T + E × band`` at full resolution.

    A decode on frames pooled ``factor`` at a time gives every event a coarse onset; the exact decode then runs
    at full resolution with every onset between the coarse onsets of its neighbours, widened by ``margin``
    coarse frames, and again with wider windows until the band holds every alignment within ``radius`` frames
    of the fine path (widening faster where the path touched a window's edge). With several factors, each
    gives its coarse decode and the first band is the union of their bands: a passage that one resolution
    misreads (fast notes, more events than coarse frames) is searched where the other reads it. See the
    module's notes.

    Guarantee: the result is the exact optimum of the objective among alignments whose onsets lie in the final
    windows; those windows hold every alignment whose onsets are each within ``radius`` frames of the result's
    (within ``onset_min``/``onset_max``), so none of those scores higher; and the result equals the full
    decoder's optimum (:func:`marginalia.align.dp.align_with_duration_costs` on ``S = A Bᵀ``) whenever that
    optimum lies inside the final windows. It is not a global certificate: an optimum that differs from the
    result by more than ``radius`` frames somewhere, outside the windows there, is not found.

    Parameters
    ----------
    A, B, cost_rows, max_frames, C, D
        As :func:`align_in_band`.
    onset_min, onset_max : array_like of int, shape (E,), optional
        The caller's onset windows (anchors); the whole recording by default.
    factor : int or sequence of int, default 8
        Fine frames per coarse frame (>= 1; 1 decodes at full resolution with windows from ``margin``), or
        several such resolutions, whose bands are joined.
    margin : int, default 4
        The first fine windows reach this many coarse frames (of the largest factor), and at least ``radius``
        frames, beyond the neighbours' coarse onsets (>= 1).
    radius : int, optional
        The final windows hold every onset within this many frames of the result's (>= 1; default
        ``2 × margin × max(factor)``).
    slack : float, default 0
        The first windows also hold every coarse onset through which some coarse alignment scores within
        ``slack`` of the best coarse alignment (its max-marginals): wide where the coarse decode is uncertain.
    give_up : float, optional
        Stop and return None as soon as the windows of more than this share of the events had to widen after
        the first decode (the coarse decode is then a poor guide, and the widening would cost time and memory).
    band : (ndarray, ndarray) of int, shape (E,) each, optional
        Onset windows that the first band also holds (the final windows ``info`` gave for an earlier decode of
        the same scores with other duration costs: its readings need not be made again).
    info : dict, optional
        Filled with ``rounds`` (fine decodes), ``cells`` (score cells of the last), ``widened`` (events
        whose windows widened after the first decode), ``coarse`` (False with ``factor`` 1, or when no
        coarse decode found an alignment, and the caller's windows were used) and the final windows
        ``onset_min``/``onset_max``.

    Returns
    -------
    ndarray of int64, shape (E,) or None
        Onset frame of every event (None when it gave up, see ``give_up``).

    Raises
    ------
    InfeasibleLabelsError
        No alignment obeys the windows and the duration limits.
    """
    A, B, C, D, cval, coff, dmax, T, E = _checked_problem(A, B, C, D, cost_rows, max_frames)
    factors = sorted({int(x) for x in np.atleast_1d(factor)}, reverse=True)
    f, m = factors[0], int(margin)
    if factors[-1] < 1 or m < 1:
        raise ParameterError(f"factor/margin: expected integers >= 1, got {factor!r} and {margin!r}")
    radius = 2 * m * f if radius is None else int(radius)
    if radius < 1:
        raise ParameterError(f"radius: expected an integer >= 1, got {radius!r}")
    lo0 = np.zeros(E, np.int64) if onset_min is None else np.array(onset_min, dtype=np.int64)
    hi0 = np.full(E, T - 1, np.int64) if onset_max is None else np.array(onset_max, dtype=np.int64)
    if lo0.shape != (E,) or hi0.shape != (E,):
        raise ParameterError(f"onset_min/onset_max: expected {E} onsets each, got shapes {lo0.shape} and {hi0.shape}")
    lo0, hi0 = _strict_windows(lo0, hi0, T)
    infeasible = infeasible_alignment(E, T)
    if np.any(hi0 < lo0):
        raise infeasible
    sval_fn = lambda a, b: _factored(A, B, a, b)  # noqa: E731
    gval_fn = lambda a, b: _factored(C, D, a, b + 1)  # noqa: E731
    stats = {"rounds": 0, "cells": 0, "widened": 0, "coarse": False, "gave_up": False}
    half = np.full(E, max(m * f, radius), np.int64)
    lo, hi = lo0.copy(), hi0.copy()     # factor 1, or no coarse path: the caller's windows
    centre = lo0
    for g in (x for x in factors if x > 1):
        coarse = _coarse_onsets(A, B, C, D, cval, coff, dmax, lo0, hi0, g, slack)
        if coarse is None:
            continue
        g_lo, g_hi = _coarse_windows(*coarse, int(half[0]), lo0, hi0, T)
        if stats["coarse"]:
            lo, hi = np.minimum(lo, g_lo), np.maximum(hi, g_hi)
        else:
            centre, lo, hi = coarse[0], g_lo, g_hi
            stats["coarse"] = True
    if band is not None:
        b_lo, b_hi = (np.asarray(x, dtype=np.int64) for x in band)
        if b_lo.shape != (E,) or b_hi.shape != (E,):
            raise ParameterError(f"band: expected two windows of {E} onsets, got shapes {b_lo.shape} and {b_hi.shape}")
        lo, hi = _strict_windows(np.maximum(np.minimum(lo, b_lo), lo0), np.minimum(np.maximum(hi, b_hi), hi0), T)
    widened = np.zeros(E, bool)
    while True:
        stats["rounds"] += 1
        onsets, _ = _decode(sval_fn, gval_fn, cval, coff, dmax, lo, hi, T, 1)
        if onsets is None:
            if np.array_equal(lo, lo0) and np.array_equal(hi, hi0):
                raise infeasible
            # the band admits no alignment: open it twice as wide everywhere
            half = half * 2
            ref = centre
            grow = np.ones(E, bool)
        else:
            # the band must hold every alignment within `radius` of the path (the caller's windows aside)
            want_lo, want_hi = _strict_windows(np.maximum(lo0, onsets - radius), np.minimum(hi0, onsets + radius), T)
            short = (lo > want_lo) | (hi < want_hi)
            if not short.any():
                break
            # where the path sits on the band's edge the band binds: widen there and around, twice as wide
            touch = ((onsets == lo) & (lo > lo0)) | ((onsets == hi) & (hi < hi0))
            near = np.zeros(E, bool)
            for e in np.flatnonzero(touch):
                near[max(e - _WIDEN_NEIGHBOURS, 0):e + _WIDEN_NEIGHBOURS + 1] = True
            half = np.where(near, np.maximum(half * 2, radius), np.where(short, np.maximum(half, radius), half))
            grow = near | short
            ref = onsets
        widened |= grow
        if give_up is not None and widened.sum() > give_up * E:
            # the coarse decode is a poor guide here: the caller decodes another way
            stats.update(widened=int(widened.sum()), gave_up=True)
            if info is not None:
                info.update(stats)
            return None
        if stats["rounds"] >= _MAX_ROUNDS:
            new_lo, new_hi = np.where(grow, lo0, lo), np.where(grow, hi0, hi)
        else:
            new_lo = np.where(grow, np.minimum(lo, ref - half), lo)
            new_hi = np.where(grow, np.maximum(hi, ref + half), hi)
        lo, hi = _strict_windows(np.maximum(new_lo, lo0), np.minimum(new_hi, hi0), T)
    end_lo, end_hi = _ends(lo, hi, T)
    stats["cells"] = int((end_hi - lo).sum())
    stats["widened"] = int(widened.sum())
    if info is not None:
        info.update(stats)
        info["onset_min"], info["onset_max"] = lo, hi
    return onsets


# ------------------------------------------------------------------ the runner-up, from the factors
def onset_moves_factored(A, B, cost_rows, max_frames, onsets, onset_min=None, onset_max=None, *, C=None,
                         D=None) -> tuple:
    """:func:`marginalia.align.dp.onset_moves` with ``S = A Bᵀ`` and ``onset_gain = C Dᵀ``, computing only the
    scores of the frames the moves reach (each event's span and the moved onsets' windows).

    Parameters
    ----------
    A, B, cost_rows, max_frames, C, D
        As :func:`align_in_band`.
    onsets, onset_min, onset_max
        As :func:`marginalia.align.dp.onset_moves` (the windows bound the moved onsets).

    Returns
    -------
    loss, moved_to, own
        As :func:`marginalia.align.dp.onset_moves`.
    """
    from .dp import _onset_moves_core
    A, B, C, D, cval, coff, dmax, T, E = _checked_problem(A, B, C, D, cost_rows, max_frames)
    on = np.asarray(onsets, dtype=np.int64).reshape(-1)
    if on.shape != (E,) or on[0] != 0 or np.any(np.diff(on) <= 0) or on[-1] >= T:
        raise ParameterError(f"onsets: expected {E} strictly increasing frames from 0 below {T}, got {on!r}")
    lo = np.zeros(E, np.int64) if onset_min is None else np.asarray(onset_min, dtype=np.int64)
    hi = np.full(E, T - 1, np.int64) if onset_max is None else np.asarray(onset_max, dtype=np.int64)
    ends = np.r_[on[1:], T]
    # moves of event e reach frames of e - 1 up to the next onset; prefix sums of e from its first move
    lo_c = np.clip(np.minimum(lo, on), 0, T)
    hi_c = np.clip(np.maximum(hi, on), 0, T - 1)
    first = lo_c
    stop = np.maximum(ends, np.append(hi_c[1:], T))
    sval, soff = _factored(A, B, first, stop)
    # prefix sums per event, ragged: cum of e at t (first[e] <= t <= stop[e]) at soff[e] + e + t - first[e]
    sizes = stop - first
    cum = np.empty(int(sizes.sum()) + E)
    coff_s = soff + np.arange(E)
    for e in range(E):
        c = cum[coff_s[e]:coff_s[e] + sizes[e] + 1]
        c[0] = 0.0
        np.cumsum(sval[soff[e]:soff[e] + sizes[e]], out=c[1:])
    gval, goff = _factored(C, D, first, hi_c + 1)

    def cumf(t, e):
        return cum[coff_s[e] + t - first[e]]

    def gainf(t, e):
        return gval[goff[e] + t - first[e]]

    def costf(e, d):
        ok = (d >= 1) & (d <= dmax[e])
        return np.where(ok, cval[coff[e] + np.clip(d, 0, dmax[e])], np.inf)

    return _onset_moves_core(cumf, gainf, costf, on, T, lo, hi)
