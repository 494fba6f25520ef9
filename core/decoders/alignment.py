"""Exact template alignment: every frame of a performance gets one score event.

An alignment of ``T`` frames onto ``E`` events (in score order) is given by the
onset frame of every event (:class:`marginalia.types.Alignment`): event 0 starts at
frame 0, onsets strictly increase, event ``e`` holds frames
``[onsets[e], onsets[e+1])`` and the last event runs to ``T``. The decoders
maximise ``sum_t S[t, event(t)]`` for a score matrix ``S`` of shape (T, E)
(higher is better) by dynamic programming (Lajugie 2015, Alg. 6) in ``O(T E)`` time and
``T E / 8`` bytes of decisions, optionally

* with a minimal number of frames per event (``min_frames``),
* under partial labels (:class:`AlignmentConstraints`: allowed onset windows),
* augmented by a loss that is linear for a fixed reference (Hamming, onset/area),
* returning the best alignment *different* from the best one (second best),
* with a quadratic duration prior (Lajugie 2015, Alg. 9, :func:`align_with_duration_prior`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Optional

import numpy as np

from ..checks import check_choice, check_int, check_matrix, check_scalar
from ..exceptions import InfeasibleLabelsError, ParameterError
from ..types import Alignment, AnchorLabel, EventSpanLabel
from . import _alignment_kernels as _k

__all__ = [
    "AlignmentConstraints",
    "AlignmentResult",
    "LossAugmentedAlignmentResult",
    "alignment_constraints_from_labels",
    "align",
    "align_loss_augmented",
    "align_second_best",
    "align_with_duration_prior",
    "alignment_score",
    "alignment_hamming",
    "alignment_onset_loss",
]

#: memory allowed for the checkpoints that make second-best decoding cheap
_CHECKPOINT_BYTES = 8 * 2**20
_LOSSES = {"hamming": _k.LOSS_HAMMING, "onset": _k.LOSS_ONSET}


# ----------------------------------------------------------------- results


@dataclass(frozen=True)
class AlignmentResult:
    """An alignment and its score ``sum_t S[t, event(t)]``."""

    alignment: Alignment
    score: float


@dataclass(frozen=True)
class LossAugmentedAlignmentResult:
    """The alignment maximising ``score + loss_scale * loss``.

    Attributes
    ----------
    alignment : Alignment
    score : float
        ``sum_t S[t, event(t)]``.
    loss : float
        Loss of ``alignment`` against the reference (unscaled).
    objective : float
        ``score + loss_scale * loss`` (the maximised value).
    """

    alignment: Alignment
    score: float
    loss: float
    objective: float


# ------------------------------------------------------------- constraints


@dataclass(frozen=True, eq=False)
class AlignmentConstraints:
    """Allowed onset window of every event, from partial labels.

    Parameters
    ----------
    onset_min, onset_max : array_like of int, shape (E,)
        Event ``e`` must start in frames ``[onset_min[e], onset_max[e]]``.
    min_label, max_label : tuple of str, shape (E,), optional
        Id of the label that set each bound (``""`` when none); used in error
        messages about infeasible labels.
    """

    onset_min: np.ndarray
    onset_max: np.ndarray
    min_label: tuple = ()
    max_label: tuple = ()

    def __post_init__(self):
        lo = np.array(self.onset_min, dtype=np.int64, copy=True)
        hi = np.array(self.onset_max, dtype=np.int64, copy=True)
        if lo.ndim != 1 or lo.shape != hi.shape or lo.shape[0] == 0:
            raise ParameterError(f"AlignmentConstraints: onset_min and onset_max must be 1-d of the same "
                                 f"length E >= 1, got shapes {lo.shape} and {hi.shape}")
        E = lo.shape[0]
        for name in ("min_label", "max_label"):
            ids = tuple(getattr(self, name)) or ("",) * E
            if len(ids) != E:
                raise ParameterError(f"AlignmentConstraints.{name}: expected {E} ids, got {len(ids)}")
            object.__setattr__(self, name, ids)
        lo.setflags(write=False)
        hi.setflags(write=False)
        object.__setattr__(self, "onset_min", lo)
        object.__setattr__(self, "onset_max", hi)

    @property
    def n_events(self) -> int:
        return int(self.onset_min.shape[0])

    @classmethod
    def unconstrained(cls, n_frames: int, n_events: int) -> "AlignmentConstraints":
        """No label: every onset in ``[0, n_frames - 1]``."""
        return cls(np.zeros(n_events, np.int64), np.full(n_events, n_frames - 1, np.int64))

    def is_satisfied_by(self, alignment: Alignment) -> bool:
        """True when every onset of ``alignment`` lies in its window."""
        on = alignment.onsets
        return on.shape == self.onset_min.shape and bool(np.all((on >= self.onset_min) & (on <= self.onset_max)))


def alignment_constraints_from_labels(labels, n_frames: int, n_events: int, frame_rate: float,
                                      *, min_frames: int = 1) -> AlignmentConstraints:
    """Turn anchor and event-span labels into onset windows.

    Parameters
    ----------
    labels : iterable of AnchorLabel or EventSpanLabel
        An :class:`AnchorLabel` says event ``e`` starts at frame
        ``round(time_s * frame_rate)`` within ``ceil(tolerance_s * frame_rate)``
        frames; an :class:`EventSpanLabel` says events ``first..last`` start in
        frames ``[round(t0_s * frame_rate), round(t1_s * frame_rate)]``.
    n_frames, n_events : int
        ``T`` and ``E``.
    frame_rate : float
        Frames per second (> 0).
    min_frames : int
        Minimal frames per event, used to check that the labels are compatible.

    Returns
    -------
    AlignmentConstraints

    Raises
    ------
    ParameterError
        A label names an event ``>= E`` or a time after the last frame.
    InfeasibleLabelsError
        Labels that no alignment can satisfy together (e.g. a later event
        anchored before an earlier one); ``label_ids`` names them.
    """
    T = check_int(n_frames, "n_frames", min_val=1)
    E = check_int(n_events, "n_events", min_val=1)
    m = check_int(min_frames, "min_frames", min_val=1)
    check_scalar(frame_rate, "frame_rate", float, min_val=0, include_boundaries="neither",
                 what="a finite number of frames per second")
    lo = np.zeros(E, np.int64)
    hi = np.full(E, T - 1, np.int64)
    lo_id = [""] * E
    hi_id = [""] * E

    def tighten(e, a, b, lid):
        if a > lo[e]:
            lo[e] = a
            lo_id[e] = lid
        if b < hi[e]:
            hi[e] = b
            hi_id[e] = lid

    for lab in labels:
        if isinstance(lab, AnchorLabel):
            if lab.event >= E:
                raise ParameterError(f"AnchorLabel {lab.id}: event {lab.event} does not exist, "
                                     f"expected an event in [0, {E - 1}]")
            f = int(round(lab.time_s * frame_rate))
            tol = int(math.ceil(lab.tolerance_s * frame_rate - 1e-9))
            if f - tol > T - 1:
                raise ParameterError(f"AnchorLabel {lab.id}: time {lab.time_s} s is frame {f}, after the last "
                                     f"frame {T - 1} (n_frames={T}, frame_rate={frame_rate})")
            tighten(lab.event, f - tol, f + tol, lab.id)
        elif isinstance(lab, EventSpanLabel):
            if lab.last >= E:
                raise ParameterError(f"EventSpanLabel {lab.id}: events {lab.first}..{lab.last} do not exist, "
                                     f"expected events in [0, {E - 1}]")
            a = int(round(lab.t0_s * frame_rate))
            b = int(round(lab.t1_s * frame_rate))
            if a > T - 1:
                raise ParameterError(f"EventSpanLabel {lab.id}: start {lab.t0_s} s is frame {a}, after the last "
                                     f"frame {T - 1} (n_frames={T}, frame_rate={frame_rate})")
            for e in range(int(lab.first), int(lab.last) + 1):
                tighten(e, a, b, lab.id)
        else:
            raise ParameterError(f"labels: expected AnchorLabel or EventSpanLabel, got {type(lab).__name__}")
    cons = AlignmentConstraints(lo, hi, tuple(lo_id), tuple(hi_id))
    _tightened_windows(cons, T, m)  # raises on labels that contradict each other
    return cons


def _tightened_windows(cons: AlignmentConstraints, T: int, m: int):
    """Propagate order and duration limits through the windows; raise when empty.

    Returns ``(lo, hi)`` int64 arrays such that every onset sequence inside the
    windows with gaps ``>= m`` is feasible and ``lo`` itself is one.
    """
    E = cons.n_events
    lo = cons.onset_min.copy()
    hi = cons.onset_max.copy()
    if lo[0] > 0:
        raise InfeasibleLabelsError(f"labels: event 0 must start at frame 0 but label {cons.min_label[0]!r} makes "
                                    f"it start at frame >= {int(lo[0])}", [cons.min_label[0]])
    hi_ids = list(cons.max_label)
    hi_ids[0] = ""  # event 0 starts at frame 0 by definition, not because of a label
    lo[0] = hi[0] = 0
    if hi[E - 1] > T - m:
        hi[E - 1] = T - m  # the last event needs m frames
        hi_ids[E - 1] = ""
    # onsets[e] >= onsets[e'] + (e - e') m and onsets[e] <= onsets[e''] - (e'' - e) m
    steps = np.arange(E, dtype=np.int64) * m
    lo_key = lo - steps
    lo_run = np.maximum.accumulate(lo_key)
    hi_key = (hi - steps)[::-1]
    hi_run = np.minimum.accumulate(hi_key)
    lo_src_idx = np.maximum.accumulate(np.where(lo_key == lo_run, np.arange(E), 0))
    hi_src_idx = (E - 1 - np.maximum.accumulate(np.where(hi_key == hi_run, np.arange(E), 0)))[::-1]
    lo = lo_run + steps
    hi = hi_run[::-1] + steps
    bad = np.flatnonzero(lo > hi)
    if bad.size:
        e = int(bad[0])
        ids = [i for i in dict.fromkeys((cons.min_label[lo_src_idx[e]], hi_ids[hi_src_idx[e]])) if i]
        raise InfeasibleLabelsError(
            f"labels: no alignment of {E} events over {T} frames with >= {m} frame(s) per event satisfies "
            f"labels {ids} (event {e} would have to start in frames [{int(lo[e])}, {int(hi[e])}])", ids)
    return lo, hi


# -------------------------------------------------------------- validation


def _check_scores(S, check_finite=True) -> np.ndarray:
    S = check_matrix(S, "S", shape="2-d (T frames, E events)", allow_1d=False, finite=check_finite,
                     axes=("frame", "event"), fix="scores must be finite")
    return np.ascontiguousarray(S)


def _check_problem(S, min_frames, constraints):
    S = _check_scores(S, check_finite=False)  # checked row by row by the forward pass
    T, E = S.shape
    m = check_int(min_frames, "min_frames", min_val=1)
    if E * m > T:
        raise ParameterError(f"S: {E} events need at least {E * m} frames with min_frames={m}, "
                             f"but S has only T={T} frames (shape {S.shape})")
    if constraints is None:
        constraints = AlignmentConstraints.unconstrained(T, E)
    elif not isinstance(constraints, AlignmentConstraints):
        raise ParameterError(f"constraints: expected AlignmentConstraints or None, got {type(constraints).__name__}")
    elif constraints.n_events != E:
        raise ParameterError(f"constraints: made for {constraints.n_events} events, but S has E={E} columns")
    lo, hi = _tightened_windows(constraints, T, m)
    return S, m, lo, hi


def _frame_events(onsets, T) -> np.ndarray:
    """Event of every frame, shape (T,), for onsets starting at frame 0."""
    E = onsets.shape[0]
    return np.repeat(np.arange(E, dtype=np.int64), np.diff(np.append(onsets, T)))


def _check_alignment(name, a, T=None, E=None) -> Alignment:
    if not isinstance(a, Alignment):
        raise ParameterError(f"{name}: expected an Alignment, got {type(a).__name__}")
    if T is not None and (a.n_frames != T or a.n_events != E):
        raise ParameterError(f"{name}: aligns {a.n_events} events over {a.n_frames} frames, "
                             f"expected {E} events over {T} frames (the shape of S)")
    if a.onsets[0] != 0:
        raise ParameterError(f"{name}: event 0 must start at frame 0, got onset {int(a.onsets[0])}")
    return a


# ---------------------------------------------------------------- decoding


class _Decoder:
    """One forward pass with packed decisions; optional checkpoints for the runner-up."""

    def __init__(self, S, m, lo, hi, truth=None, mode=_k.LOSS_NONE, scale=0.0, checkpoints=False):
        T, E = S.shape
        self.S, self.m, self.lo, self.hi = S, m, lo, hi
        self.truth = np.zeros(T, np.int64) if truth is None else truth
        self.mode, self.scale = mode, float(scale)
        self.bits = np.zeros((T, (E + 7) // 8), np.uint8)
        if checkpoints:
            per_row = (m + (m > 1)) * E * 8
            self.k = max(32, m, -(-T * per_row // _CHECKPOINT_BYTES))
        else:
            self.k = 0
        nck = T // self.k if self.k else 0
        self.ck_ring = np.empty((nck, m, E))
        self.ck_win = np.empty((nck, E if m > 1 else 0))
        ring, win = self._fresh()
        bad = self._run(ring, win, 0, T, 0, E - 1, True, self.k, _EMPTY_I, _EMPTY_I, _EMPTY_F, _EMPTY_F, True)
        if bad >= 0:
            raise ParameterError(f"S: row {bad} contains NaN or infinite values; scores must be finite")
        self.value = float(ring[(T - 1) % (m + 1), E - 1])

    def _fresh(self):
        E = self.S.shape[1]
        return np.full((self.m + 1, E), -np.inf), np.zeros(E)

    def _run(self, ring, win, t0, t1, ea, eb, store, ck_every, path_ev, path_on, rec_c, rec_s, check=False):
        E = self.S.shape[1]
        return _k.align_rows(self.S, self.m, self.lo, self.hi, self.truth, self.mode, self.scale,
                      ring, win, np.empty(E), np.empty(E), np.zeros(E + 8, np.uint8),
                      t0, t1, ea, eb, self.bits, store, ck_every, self.ck_ring, self.ck_win,
                      path_ev, path_on, rec_c, rec_s, check)

    def backtrack(self, e, t, onsets):
        _k.backtrack(self.bits, self.m, e, t, onsets)
        return onsets

    def best_onsets(self):
        T, E = self.S.shape
        return self.backtrack(E - 1, T - 1, np.zeros(E, np.int64))

    def path_candidates(self, onsets):
        """Both incoming candidate values at every state of the path ``onsets``.

        Recomputes, from the checkpoints, only a cone of events around the path.
        """
        T, E = self.S.shape
        m, k = self.m, self.k
        ev = _frame_events(onsets, T)
        rec_c = np.full(T, -np.inf)
        rec_s = np.full(T, -np.inf)
        _k.path_candidates(self.S, m, self.lo, self.hi, self.truth, self.mode, self.scale, k,
                           self.ck_ring, self.ck_win, ev, onsets, rec_c, rec_s)
        return ev, rec_c, rec_s


_EMPTY_I = np.zeros(0, np.int64)
_EMPTY_F = np.zeros(0, np.float64)


def _infeasible(T, E, m):
    return InfeasibleLabelsError(f"constraints: no alignment of {E} events over {T} frames with >= {m} frame(s) "
                                 f"per event satisfies the onset windows")


def align(S, *, min_frames: int = 1, constraints: Optional[AlignmentConstraints] = None) -> AlignmentResult:
    """Best monotone alignment of ``T`` frames onto ``E`` events.

    Parameters
    ----------
    S : array_like, shape (T, E)
        Score of frame ``t`` belonging to event ``e`` (higher is better), finite.
    min_frames : int
        Minimal number of frames of every event (>= 1, ``E * min_frames <= T``).
    constraints : AlignmentConstraints, optional
        Onset windows from partial labels; the result satisfies all of them.

    Returns
    -------
    AlignmentResult
        ``alignment`` maximising ``sum_t S[t, event(t)]`` and that ``score``.

    Notes
    -----
    ``O(T E)`` time, ``T E / 8`` bytes of decisions plus ``O(min_frames E)`` floats.
    """
    S, m, lo, hi = _check_problem(S, min_frames, constraints)
    dec = _Decoder(S, m, lo, hi)
    T, E = S.shape
    if not np.isfinite(dec.value):
        raise _infeasible(T, E, m)
    onsets = dec.best_onsets()
    return AlignmentResult(Alignment(onsets, T), dec.value)


def align_loss_augmented(S, truth: Alignment, *, loss: str = "hamming", loss_scale: float = 1.0,
                         min_frames: int = 1, constraints: Optional[AlignmentConstraints] = None
                         ) -> LossAugmentedAlignmentResult:
    """Alignment maximising ``score + loss_scale * loss(alignment, truth)``.

    Parameters
    ----------
    S : array_like, shape (T, E)
    truth : Alignment
        The reference, over the same ``T`` frames and ``E`` events.
    loss : {"hamming", "onset"}
        ``"hamming"``: number of frames given to another event than in
        ``truth``; ``"onset"``: area between the two event-index step functions,
        ``sum_t |e(t) - e*(t)|`` (Lajugie 2015, §5.3.1). Both are linear in the
        alignment for a fixed truth, so decoding stays exact and ``O(T E)``.
    loss_scale : float
        Finite, >= 0.
    min_frames, constraints
        As in :func:`align`.

    Returns
    -------
    LossAugmentedAlignmentResult
    """
    S, m, lo, hi = _check_problem(S, min_frames, constraints)
    T, E = S.shape
    truth = _check_alignment("truth", truth, T, E)
    check_choice(loss, "loss", tuple(_LOSSES))
    c = check_scalar(loss_scale, "loss_scale", float, min_val=0)
    ev = _frame_events(truth.onsets, T)
    mode = _LOSSES[loss]
    # Hamming is sum_t [e(t) != e*(t)] = T - sum_t [e(t) == e*(t)]: subtract c on the truth cells, add c T.
    dec = _Decoder(S, m, lo, hi, ev, mode, c)
    if not np.isfinite(dec.value):
        raise _infeasible(T, E, m)
    a = Alignment(dec.best_onsets(), T)
    score = float(_k.alignment_value(S, a.onsets))
    value = alignment_hamming(a, truth) if loss == "hamming" else alignment_onset_loss(a, truth)
    return LossAugmentedAlignmentResult(a, score, float(value), score + c * value)



def align_second_best(S, *, min_frames: int = 1, constraints: Optional[AlignmentConstraints] = None):
    """The best alignment and the best one different from it.

    Every other alignment leaves the best path for the last time at one of its
    states, entering it through the edge the forward pass rejected; so the
    runner-up score is ``best - min over path states of (winning - losing
    candidate)``. The losing candidates are recomputed from row checkpoints on
    a narrow cone of events around the best path (a few % of the forward work).

    Returns
    -------
    best : AlignmentResult
    second : AlignmentResult or None
        ``None`` when the constraints leave a single alignment.
    """
    S, m, lo, hi = _check_problem(S, min_frames, constraints)
    T, E = S.shape
    dec = _Decoder(S, m, lo, hi, checkpoints=True)
    if not np.isfinite(dec.value):
        raise _infeasible(T, E, m)
    onsets = dec.best_onsets()
    best = AlignmentResult(Alignment(onsets, T), dec.value)
    ev, cand_c, cand_s = dec.path_candidates(onsets)
    both = np.isfinite(cand_c) & np.isfinite(cand_s)
    gap = np.full(T, np.inf)
    gap[both] = np.abs(cand_c[both] - cand_s[both])
    if not np.isfinite(gap).any():
        return best, None
    t = int(np.argmin(gap))
    e = int(ev[t])
    second = onsets.copy()
    took_start = onsets[e] == t - m + 1
    if took_start:  # the runner-up continues event e through frame t
        dec.backtrack(e, t - 1, second)
    else:  # the runner-up starts event e at frame t - m + 1
        second[e] = t - m + 1
        if e > 0:
            dec.backtrack(e - 1, t - m, second)
    a2 = Alignment(second, T)
    return best, AlignmentResult(a2, float(_k.alignment_value(S, second)))


def align_with_duration_prior(S, expected_durations, *, weight: float, min_frames: int = 1,
                              max_frames: Optional[int] = None,
                              constraints: Optional[AlignmentConstraints] = None) -> AlignmentResult:
    """Alignment maximising ``score - weight * sum_e (d_e - expected_e)^2`` (Lajugie 2015, Alg. 9).

    Parameters
    ----------
    S : array_like, shape (T, E)
    expected_durations : array_like, shape (E,)
        Expected duration of every event in frames (finite, >= 0).
    weight : float
        Strength of the prior (finite, >= 0).
    min_frames : int
    max_frames : int, optional
        Longest allowed event (frames). Defaults to the longest feasible one,
        ``T - (E - 1) * min_frames``, which keeps the decoder exact but costs
        more; give a bound such as ``3 * max(expected)`` for long sequences.
    constraints : AlignmentConstraints, optional

    Returns
    -------
    AlignmentResult
        ``score`` is the penalised objective; the plain score is
        :func:`alignment_score` of the alignment.

    Notes
    -----
    Exact DP over (event, onset): ``O(E T (max_frames - min_frames + 1))``
    time, ``O(T E)`` floats for the cumulative scores and ``O(T E)`` integers
    for the back-pointers.
    """
    S, m, lo, hi = _check_problem(S, min_frames, constraints)
    T, E = S.shape
    if not _k.all_finite(S):
        raise ParameterError("S: contains NaN or infinite values; scores must be finite")
    try:
        d = np.asarray(expected_durations, dtype=np.float64)
    except (TypeError, ValueError):
        raise ParameterError(f"expected_durations: expected {E} numbers, got {expected_durations!r}") from None
    if d.shape != (E,) or not np.all(np.isfinite(d)) or np.any(d < 0):
        raise ParameterError(f"expected_durations: expected shape ({E},) of finite frame counts >= 0, "
                             f"got shape {d.shape}")
    w = check_scalar(weight, "weight", float, min_val=0)
    longest = T - (E - 1) * m
    if max_frames is None:
        dmax = longest
    else:
        dmax = check_int(max_frames, "max_frames", min_val=1)
        if dmax < m:
            raise ParameterError(f"max_frames: expected >= min_frames={m}, got {dmax}")
        if dmax * E < T:
            raise ParameterError(f"max_frames: {E} events of at most {dmax} frames cannot cover T={T} frames; "
                                 f"expected max_frames >= {-(-T // E)}")
        dmax = min(dmax, longest)
    cum = np.zeros((T + 1, E))
    np.cumsum(S, axis=0, out=cum[1:])
    back = np.zeros((E, T + 1), np.int32 if dmax > 65535 else np.uint16)
    value = _k.duration_prior_dp(cum, m, dmax, lo, hi, d, w, back)
    if not np.isfinite(value):
        raise _infeasible(T, E, m)
    onsets = np.zeros(E, np.int64)
    onsets[E - 1] = T - int(back[0, 0])
    for e in range(E - 1, 0, -1):
        onsets[e - 1] = onsets[e] - int(back[e, onsets[e]])
    return AlignmentResult(Alignment(onsets, T), float(value))



# ------------------------------------------------------------------ scores


def alignment_score(S, alignment: Alignment) -> float:
    """``sum_t S[t, event(t)]`` of an alignment (S of shape (T, E))."""
    S = _check_scores(S)
    T, E = S.shape
    a = _check_alignment("alignment", alignment, T, E)
    return float(_k.alignment_value(S, a.onsets))


def alignment_hamming(a: Alignment, b: Alignment) -> int:
    """Number of frames assigned to different events by ``a`` and ``b``."""
    a, b = _same_shape(a, b)
    return int(np.count_nonzero(_frame_events(a.onsets, a.n_frames) != _frame_events(b.onsets, b.n_frames)))


def alignment_onset_loss(a: Alignment, b: Alignment) -> int:
    """Area between the event-index step functions: ``sum_t |e_a(t) - e_b(t)|`` (Lajugie 2015, §5.3.1)."""
    a, b = _same_shape(a, b)
    return int(np.abs(_frame_events(a.onsets, a.n_frames) - _frame_events(b.onsets, b.n_frames)).sum())


def _same_shape(a, b):
    a = _check_alignment("a", a)
    b = _check_alignment("b", b)
    if a.n_frames != b.n_frames or a.n_events != b.n_events:
        raise ParameterError(f"b: aligns {b.n_events} events over {b.n_frames} frames, expected the shape of a "
                             f"({a.n_events} events over {a.n_frames} frames)")
    return a, b
