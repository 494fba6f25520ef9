"""Monotone alignment with a per-event duration cost table (the decoder of :mod:`marginalia.align.aligner`).

:func:`marginalia.decoders.alignment.align_with_duration_prior` penalises every
event's duration by the same quadratic ``w (d - d̂)²`` in frames. Real
performances break that model in one direction: phrase ends, fermatas, rolled
chords and the final held chord last far *longer* than the score's tempo
says, while events seldom last much *shorter*. Here every event ``e`` has its
own cost ``C[e, d]`` of lasting ``d`` frames, so the prior can be asymmetric,
robust (growing slowly for long events) and absent for the rests and the final
chord; :func:`duration_costs` builds that table.
"""

from __future__ import annotations

import math

import numba
import numpy as np

from ..exceptions import InfeasibleLabelsError, ParameterError

__all__ = ["align_with_duration_costs", "duration_costs", "onset_moves"]


def infeasible_alignment(E: int, T: int) -> InfeasibleLabelsError:
    """The error of a decoder that finds no alignment of ``E`` events to ``T`` frames within its limits."""
    return InfeasibleLabelsError(f"no alignment of {E} events to {T} frames obeys the onset windows and the "
                                 f"duration limits", [])


def checked_duration_inputs(expected, max_frames, weight, smoothing, long_knee) -> tuple:
    """``(expected, max_frames)`` as float64 and int64 arrays of shape (E,), after checking every argument.

    The arguments are those of :func:`duration_costs`; a bad one raises :class:`ParameterError` naming it.
    """
    d_hat = np.asarray(expected, dtype=np.float64)
    dmax = np.asarray(max_frames, dtype=np.int64)
    if d_hat.ndim != 1 or dmax.shape != d_hat.shape or np.any(dmax < 1) or not np.all(np.isfinite(d_hat)) \
            or np.any(d_hat < 0):
        raise ParameterError(f"expected/max_frames: expected two arrays of shape (E,), finite durations >= 0 and "
                             f"limits >= 1, got shapes {d_hat.shape} and {dmax.shape}")
    for name, v in (("weight", weight), ("smoothing", smoothing), ("long_knee", long_knee)):
        if not math.isfinite(float(v)) or float(v) < 0 or (name != "weight" and float(v) == 0):
            raise ParameterError(f"{name}: expected a finite number {'>= 0' if name == 'weight' else '> 0'}, "
                                 f"got {v!r}")
    return d_hat, dmax


def log_ratio_cost(d, d_hat, *, weight: float, smoothing: float, long_knee: float) -> np.ndarray:
    """The cost of :func:`duration_costs` of lasting ``d`` frames when ``d_hat`` are expected (broadcast arrays).

    Durations 0 and past the limits are not special here: the callers forbid them.
    """
    x = np.log((d + smoothing) / (d_hat + smoothing))
    k = float(long_knee)
    return float(weight) * np.where(x <= k, x * x, k * (2.0 * x - k))


def duration_costs(expected, *, weight: float, max_frames, smoothing: float, long_knee: float,
                   free=()) -> np.ndarray:
    """Cost of every event lasting ``d`` frames, shape (E, max(max_frames) + 1).

    With ``x = log((d + s) / (d̂ + s))`` (``s`` = ``smoothing`` frames, so short
    events are judged on an absolute rather than a relative scale), the cost
    is ``weight · x²`` for ``x ≤ long_knee`` and grows linearly beyond it
    (``weight · κ (2x - κ)``, a Huber loss on the log ratio, for events far
    longer than expected). ``d = 0`` and ``d > max_frames[e]`` are forbidden
    (``inf``). Events in ``free`` cost nothing.

    Parameters
    ----------
    expected : array_like, shape (E,)
        Expected duration of every event in frames (>= 0).
    weight : float
        Strength (>= 0).
    max_frames : array_like of int, shape (E,)
        Longest allowed duration of every event (>= 1).
    smoothing : float
        ``s`` above (> 0).
    long_knee : float
        ``κ`` above (> 0).
    free : iterable of int
        Events without a duration prior.

    Returns
    -------
    ndarray, shape (E, D + 1), D = max(max_frames)
    """
    d_hat, dmax = checked_duration_inputs(expected, max_frames, weight, smoothing, long_knee)
    D = int(dmax.max())
    d = np.arange(D + 1, dtype=np.float64)[None, :]
    cost = log_ratio_cost(d, d_hat[:, None], weight=weight, smoothing=smoothing, long_knee=long_knee)
    for e in free:
        cost[int(e)] = 0.0
    cost[:, 0] = np.inf
    cost[d > dmax[:, None]] = np.inf
    return cost


@numba.njit(cache=True, nogil=True)
def _costs_dp(cum, gain, cost, dmax, lo, hi, back):
    """Best ``sum S + sum gain - sum cost`` over alignments; fills ``back[e, t]`` = duration of e ending at t."""
    T = cum.shape[0] - 1
    E = cum.shape[1]
    prev = np.full(T + 1, -np.inf)
    prev[0] = 0.0
    cur = np.full(T + 1, -np.inf)
    for e in range(E):
        for t in range(T + 1):
            cur[t] = -np.inf
        # event e ends at t after starting in its window [lo, hi]: only those ends and durations are visited
        t_first = max(e + 1, lo[e] + 1)
        t_last = min(T - (E - 1 - e), hi[e] + dmax[e])
        for t in range(t_first, t_last + 1):
            best = -np.inf
            arg = 0
            d_lo = max(1, t - hi[e])
            d_hi = min(dmax[e], t - e, t - lo[e])
            for d in range(d_lo, d_hi + 1):
                s = t - d
                p = prev[s]
                if p == -np.inf:
                    continue
                v = p + cum[t, e] - cum[s, e] - cost[e, d] + gain[s, e]
                if v > best:
                    best = v
                    arg = d
            cur[t] = best
            back[e, t] = arg
        for t in range(T + 1):
            prev[t] = cur[t]
    return prev[T]


def align_with_duration_costs(S, cost, max_frames, onset_min=None, onset_max=None, onset_gain=None) -> np.ndarray:
    """Onsets maximising ``sum_t S[t, event(t)] + sum_e gain[onset_e, e] - sum_e cost[e, d_e]``.

    Parameters
    ----------
    S : ndarray, shape (T, E)
        Frame × event scores (finite).
    cost : ndarray, shape (E, D + 1)
        From :func:`duration_costs`.
    max_frames : array_like of int, shape (E,)
        Longest duration of every event (<= D).
    onset_min, onset_max : array_like of int, shape (E,), optional
        Window of every event's onset frame (event 0 starts at frame 0).
    onset_gain : ndarray, shape (T, E), optional
        Reward of event ``e`` starting at frame ``t`` (e.g. the onset strength
        of its pitches): unlike a per-frame score it does not cancel between
        two consecutive events with the same pitches (repeated notes).

    Returns
    -------
    ndarray of int64, shape (E,)
        Onset frame of every event.

    Raises
    ------
    InfeasibleLabelsError
        No alignment obeys the windows and the duration limits.
    """
    S = np.ascontiguousarray(S, dtype=np.float64)
    if S.ndim != 2 or not np.all(np.isfinite(S)):
        raise ParameterError(f"S: expected a finite (T, E) score matrix, got shape {getattr(S, 'shape', None)}")
    T, E = S.shape
    cost = np.ascontiguousarray(cost, dtype=np.float64)
    dmax = np.minimum(np.asarray(max_frames, dtype=np.int64), cost.shape[1] - 1)
    if cost.shape[0] != E or dmax.shape != (E,):
        raise ParameterError(f"cost/max_frames: expected {E} events, got {cost.shape[0]} and {dmax.shape}")
    lo = np.zeros(E, np.int64) if onset_min is None else np.array(onset_min, dtype=np.int64)
    hi = np.full(E, T - 1, np.int64) if onset_max is None else np.array(onset_max, dtype=np.int64)
    if lo.shape != (E,) or hi.shape != (E,):
        raise ParameterError(f"onset_min/onset_max: expected {E} onsets each, got shapes {lo.shape} and {hi.shape}")
    # onsets strictly increase, so each window also bounds its neighbours' (an anchored event in the middle
    # halves the frames every other event may start in); the decoder then visits only starts inside them
    lo = np.maximum.accumulate(np.maximum(lo, 0) - np.arange(E)) + np.arange(E)
    hi = np.minimum.accumulate((np.minimum(hi, T - 1) - np.arange(E))[::-1])[::-1] + np.arange(E)
    if onset_gain is None:
        gain = np.zeros((T, E))
    else:
        gain = np.ascontiguousarray(onset_gain, dtype=np.float64)
        if gain.shape != (T, E) or not np.all(np.isfinite(gain)):
            raise ParameterError(f"onset_gain: expected finite values of shape ({T}, {E}), got shape {gain.shape}")
    cum = np.zeros((T + 1, E))
    np.cumsum(S, axis=0, out=cum[1:])
    back = np.zeros((E, T + 1), np.int32)
    value = _costs_dp(cum, gain, cost, dmax, lo, hi, back)
    if not np.isfinite(value):
        raise infeasible_alignment(E, T)
    onsets = np.zeros(E, np.int64)
    t = T
    for e in range(E - 1, -1, -1):
        onsets[e] = t - int(back[e, t])
        t = onsets[e]
    return onsets


def onset_moves(S, cost, max_frames, onsets, onset_min=None, onset_max=None, onset_gain=None) -> tuple:
    """The best move of every state's onset alone, all other onsets kept, under the objective of
    :func:`align_with_duration_costs`.

    Moving the onset of state ``e`` from ``s`` to ``o`` changes only the frames
    between them (they change state), the durations of ``e - 1`` and ``e`` and
    the onset gain of ``e``, so every candidate costs O(1) from column prefix
    sums. State 0 starts at frame 0 and never moves.

    Parameters
    ----------
    S, cost, max_frames, onset_min, onset_max, onset_gain
        As :func:`align_with_duration_costs`; the windows bound the moved onsets.
    onsets : array_like of int, shape (E,)
        The alignment to move from (strictly increasing, from frame 0).

    Returns
    -------
    loss : ndarray, shape (E,)
        Objective of ``onsets`` minus that of its best one-onset move (negative
        when a move scores higher; ``inf`` when the state cannot move).
    moved_to : ndarray of int64, shape (E,)
        That move's onset (-1 when none).
    own : ndarray, shape (E,)
        Each state's term of the objective under ``onsets`` (its frames, its
        onset gain, its duration cost; ``-inf`` for a duration out of bounds).
    """
    S = np.ascontiguousarray(S, dtype=np.float64)
    if S.ndim != 2 or not np.all(np.isfinite(S)):
        raise ParameterError(f"S: expected a finite (T, E) score matrix, got shape {getattr(S, 'shape', None)}")
    T, E = S.shape
    cost = np.asarray(cost, dtype=np.float64)
    D = cost.shape[1] - 1
    dmax = np.minimum(np.asarray(max_frames, dtype=np.int64), D)
    if cost.shape[0] != E or dmax.shape != (E,):
        raise ParameterError(f"cost/max_frames: expected {E} events, got {cost.shape[0]} and {dmax.shape}")
    on = np.asarray(onsets, dtype=np.int64).reshape(-1)
    if on.shape != (E,) or on[0] != 0 or np.any(np.diff(on) <= 0) or on[-1] >= T:
        raise ParameterError(f"onsets: expected {E} strictly increasing frames from 0 below {T}, got {on!r}")
    lo = np.zeros(E, np.int64) if onset_min is None else np.asarray(onset_min, dtype=np.int64)
    hi = np.full(E, T - 1, np.int64) if onset_max is None else np.asarray(onset_max, dtype=np.int64)
    gain = np.zeros((T, E)) if onset_gain is None else np.asarray(onset_gain, dtype=np.float64)
    if gain.shape != (T, E):
        raise ParameterError(f"onset_gain: expected shape ({T}, {E}), got {gain.shape}")
    cum = np.zeros((T + 1, E))
    np.cumsum(S, axis=0, out=cum[1:])

    def duration_cost(e, d):
        ok = (d >= 1) & (d <= dmax[e])
        return np.where(ok, cost[e, np.clip(d, 0, D)], np.inf)

    return _onset_moves_core(lambda t, e: cum[t, e], lambda t, e: gain[t, e], duration_cost, on, T, lo, hi)


def _onset_moves_core(cumf, gainf, duration_cost, on, T, lo, hi) -> tuple:
    """:func:`onset_moves` over accessors: ``cumf(t, e)`` prefix sums of event ``e``'s scores up to frame
    ``t``, ``gainf(t, e)`` its onset gain, ``duration_cost(e, d)`` (``inf`` out of bounds); shared with
    :func:`marginalia.align.banded.onset_moves_factored`, which computes only the frames the moves reach."""
    E = on.shape[0]
    ends = np.r_[on[1:], T]
    states = np.arange(E)
    own = cumf(ends, states) - cumf(on, states) - duration_cost(states, ends - on) + gainf(on, states)
    loss = np.full(E, np.inf)
    moved_to = np.full(E, -1, np.int64)
    for e in range(1, E):
        p, s, n = on[e - 1], on[e], ends[e]
        o = np.arange(max(p + 1, lo[e]), min(n - 1, hi[e]) + 1)
        o = o[o != s]
        if o.size == 0:
            continue
        # the terms that depend on state e's onset: state e-1's frames and duration, state e's and its gain
        value = (cumf(o, e - 1) - cumf(p, e - 1) - duration_cost(e - 1, o - p) + cumf(n, e) - cumf(o, e)
                 - duration_cost(e, n - o) + gainf(o, e))
        j = int(np.argmax(value))
        if np.isfinite(value[j]):
            loss[e] = own[e - 1] - gainf(p, e - 1) + own[e] - value[j]
            moved_to[e] = o[j]
    return loss, moved_to, own
