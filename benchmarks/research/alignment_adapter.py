"""Active learning for audio-to-score alignment: the ``LoopAdapter`` of alignment (``benchmarks.research.active_loop``).

It links the loop to the engine's alignment model (:mod:`marginalia.tasks.alignment`):
frame descriptors ``x_t`` (unit chroma damped by quietness, plus quietness),
event templates ``φ_e`` with a leading silence pseudo-event, and frame-event
scores ``S = X W Φᵀ`` (Lajugie 2015, eq. 6.1) with a 13 × 13 matrix ``W`` learned
from anchors. Parts are phrases of score events (:func:`marginalia.active.parts.phrase_parts`);
an annotator answers a part with one :class:`~marginalia.types.AnchorLabel` per event.

Scores of a part (for :mod:`marginalia.active.uncertainty`), under the current ``W``
and the item's labels:

* the whole item is decoded once (best alignment respecting every label);
* the part's *sub-problem* keeps every event outside the part where the best
  alignment puts it and frees the onsets of the part's events (still inside
  their labels' windows). It spans the frames from the onset of the event
  before the part to the onset of the event after it;
* ``best`` is the best alignment's score on those frames, ``second`` the best
  different alignment of the sub-problem (so it moves an event of the part),
  ``worst`` the lowest-scoring alignment of the sub-problem (exact: the
  decoder run on ``-S``). All three are exact on the sub-problem;
* ``size`` is the sub-problem's number of frames (scores are sums over frames),
  ``scale`` is ``‖W‖_F / √13`` (1 for the untrained identity), so the
  uncertainties do not change when ``W`` is rescaled.

Learning is a passive-aggressive structured perceptron with a margin: ``y*`` is
the best alignment respecting the anchors (a completion of the partial labels),
``ŷ`` the loss-augmented prediction (best of ``s(y) + loss_scale · ℓ(y, y*)``,
``ℓ`` the number of frames assigned differently, counted on frames whose
state has a labelled onset or end only). When ``ŷ ≠ y*``,
``W ← W + τ (Ψ(y*) - Ψ(ŷ))`` with ``Ψ(y) = Σ_t x_t φ_{y(t)}ᵀ`` and
``τ = min(max_step, (s(ŷ) - s(y*) + loss_scale · ℓ(ŷ, y*)) / ‖Ψ(y*) - Ψ(ŷ)‖²)``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from marginalia.active.parts import Part
from marginalia.active.uncertainty import PartScores
from marginalia.checks import check_bool, check_int
from marginalia.decoders.alignment import (
    AlignmentConstraints,
    align,
    align_second_best,
    alignment_constraints_from_labels,
)
from marginalia.exceptions import ParameterError
from marginalia.tasks.alignment import N_FEATURES, event_templates, frame_features
from marginalia.types import AnchorLabel, EventSpanLabel, MidiScore

__all__ = ["AlignmentItem", "AlignmentAdapter", "onset_errors"]


@dataclass(frozen=True, eq=False)
class AlignmentItem:
    """One recording with its score, as the alignment adapter needs it.

    Parameters
    ----------
    features : ndarray, shape (T, 13)
        Frame descriptors (:func:`marginalia.tasks.alignment.frame_features`).
    templates : ndarray, shape (E + 1, 13)
        Event descriptors with the silence pseudo-event first
        (:func:`marginalia.tasks.alignment.event_templates`).
    frame_rate : float
        Frames per second, > 0.
    time_offset_s : float
        Time (s) of the boundary before frame 0: frame ``f`` starts at
        ``time_offset_s + f / frame_rate``. For centred frames (librosa) it is
        ``-0.5 / frame_rate``.
    name : str
    """

    features: np.ndarray
    templates: np.ndarray
    frame_rate: float
    time_offset_s: float = 0.0
    name: str = ""

    def __post_init__(self):
        X = np.ascontiguousarray(self.features, dtype=np.float64)
        P = np.ascontiguousarray(self.templates, dtype=np.float64)
        if X.ndim != 2 or X.shape[1] != N_FEATURES or X.shape[0] < 2:
            raise ParameterError(f"AlignmentItem.features: expected shape (T >= 2, {N_FEATURES}), got {X.shape}")
        if P.ndim != 2 or P.shape[1] != N_FEATURES or P.shape[0] < 2:
            raise ParameterError(f"AlignmentItem.templates: expected shape (E + 1 >= 2, {N_FEATURES}), "
                                 f"got {P.shape}")
        if P.shape[0] > X.shape[0]:
            raise ParameterError(f"AlignmentItem: {P.shape[0] - 1} events (+ silence) need at least {P.shape[0]} "
                                 f"frames, got {X.shape[0]}")
        if not (np.all(np.isfinite(X)) and np.all(np.isfinite(P))):
            raise ParameterError("AlignmentItem: features and templates must be finite")
        fr = float(self.frame_rate)
        if not (np.isfinite(fr) and fr > 0):
            raise ParameterError(f"AlignmentItem.frame_rate: expected a finite number > 0, got {self.frame_rate!r}")
        off = float(self.time_offset_s)
        if not np.isfinite(off):
            raise ParameterError(f"AlignmentItem.time_offset_s: expected a finite number, got {self.time_offset_s!r}")
        for a in (X, P):
            a.setflags(write=False)
        object.__setattr__(self, "features", X)
        object.__setattr__(self, "templates", P)
        object.__setattr__(self, "frame_rate", fr)
        object.__setattr__(self, "time_offset_s", off)

    @classmethod
    def from_audio(cls, chroma, loudness_db, score: MidiScore, frame_rate: float, *, centred: bool = True,
                   name: str = "") -> "AlignmentItem":
        """Build an item from chroma, frame loudness and the score.

        Parameters
        ----------
        chroma : ndarray, shape (T, 12)
        loudness_db : ndarray, shape (T,)
            Frame loudness in dB relative to the loudest frame (<= 0).
        score : MidiScore
        frame_rate : float
        centred : bool
            Frames are centred on their times (librosa), so frame ``f`` starts
            half a frame before ``f / frame_rate``.
        """
        if not isinstance(score, MidiScore):
            raise ParameterError(f"score: expected a marginalia.types.MidiScore, got {type(score).__name__}")
        c = np.asarray(chroma, dtype=np.float64)
        loud = np.asarray(loudness_db, dtype=np.float64).reshape(-1)
        if c.ndim != 2 or c.shape[1] != 12 or loud.shape[0] != c.shape[0]:
            raise ParameterError(f"chroma, loudness_db: expected shapes (T, 12) and (T,), got {c.shape} and "
                                 f"{loud.shape}")
        fr = float(frame_rate)
        return cls(frame_features(c, loud), event_templates(score), fr,
                   -0.5 / fr if centred and fr > 0 else 0.0, name or score.name)

    @property
    def n_frames(self) -> int:
        return int(self.features.shape[0])

    @property
    def n_events(self) -> int:
        """Number of score events (without the silence pseudo-event)."""
        return int(self.templates.shape[0] - 1)

    def frame_to_time(self, frames) -> np.ndarray:
        """Start time (s) of frame(s) ``frames``."""
        return self.time_offset_s + np.asarray(frames, dtype=np.float64) / self.frame_rate


def onset_errors(predicted_s, true_s) -> np.ndarray:
    """Absolute onset errors (s) of the events with a known true onset.

    Parameters
    ----------
    predicted_s : array_like, shape (E,)
    true_s : array_like, shape (E,)
        ``NaN`` for events without ground truth (skipped).

    Returns
    -------
    errors : ndarray, shape (n_known,)
    """
    p = np.asarray(predicted_s, dtype=np.float64).reshape(-1)
    t = np.asarray(true_s, dtype=np.float64).reshape(-1)
    if p.shape != t.shape:
        raise ParameterError(f"true_s: expected {p.shape[0]} times (one per predicted event), got {t.shape[0]}")
    known = np.isfinite(t)
    return np.abs(p[known] - t[known])


def _check_item(data) -> AlignmentItem:
    if not isinstance(data, AlignmentItem):
        raise ParameterError(f"item data: expected an AlignmentItem, got {type(data).__name__}")
    return data


def _check_nonneg(name, value, *, positive=False):
    try:
        v = float(value)
    except (TypeError, ValueError):
        v = float("nan")
    if not np.isfinite(v) or v < 0 or (positive and v == 0):
        raise ParameterError(f"{name}: expected a finite number {'>' if positive else '>='} 0, got {value!r}")
    return v


class AlignmentAdapter:
    """Engine alignment model + passive-aggressive perceptron, as the active loop needs them.

    Parameters
    ----------
    loss_scale : float, default 0.05
        Margin asked per frame that ``ŷ`` assigns differently from ``y*``, in
        score units (a perfect chroma match scores 1 per frame).
    max_step : float, default 0.5
        Largest ``τ`` of one update (the aggressiveness cap of PA-I).
    refit_epochs : int, default 5
        Passes of :meth:`refit` over the labelled items; the refit's parameters
        are the average over its steps.
    learn_shift : bool, default True
        Also learn a time shift added to predicted onsets: the median of
        ``anchor time - predicted onset`` over the anchored events of the
        labelled items, predicted without their labels. Frame scores are
        chroma, which rises a little after a note's attack; the frame
        boundary the decoder picks is biased the same way in every piece.

    Attributes
    ----------
    w_ : ndarray, shape (169,)
        ``W`` (row-major) that chooses the queries: the perceptron's.
    model_w_ : ndarray, shape (169,)
        Parameters that predict and are evaluated: the latest :meth:`refit`
        when there is one, else ``w_``.
    n_updates_ : int
        Perceptron steps that changed ``w_``.
    last_evaluation_ : dict or None
        ``{"median_s", "within_50ms", "n"}`` of the latest :meth:`evaluate`.
    shift_s_ : float
        Time shift (s) added to the onsets predicted under ``model_w_`` (0 until
        an anchor is learned from, or with ``learn_shift=False``).
    """

    def __init__(self, *, loss_scale: float = 0.05, max_step: float = 0.5, refit_epochs: int = 5,
                 learn_shift: bool = True):
        self.loss_scale = loss_scale
        self.max_step = max_step
        self.refit_epochs = refit_epochs
        self.learn_shift = learn_shift

    # ------------------------------------------------------------ state
    def _check_params(self):
        _check_nonneg("loss_scale", self.loss_scale)
        _check_nonneg("max_step", self.max_step, positive=True)
        check_int(self.refit_epochs, "refit_epochs", min_val=1)
        check_bool(self.learn_shift, "learn_shift")

    def initialize(self, items: Mapping[str, object]) -> None:
        """Check the items and start from the untrained scorer ``W = I`` (plain chroma correlation)."""
        self._check_params()
        if not isinstance(items, Mapping) or not items:
            raise ParameterError("items: expected a non-empty mapping of item id to AlignmentItem")
        for item_id, data in items.items():
            if not isinstance(data, AlignmentItem):
                raise ParameterError(f"items[{item_id!r}]: expected an AlignmentItem, got {type(data).__name__}")
        self.w_ = np.eye(N_FEATURES).ravel()
        self._refit_w = None
        self._residuals: dict = {}
        self._refit_shift = 0.0
        self.n_updates_ = 0
        self.n_refits_ = 0
        self.last_evaluation_ = None
        self._decodes: dict = {}
        self._parts: dict = {}

    @property
    def model_w_(self) -> np.ndarray:
        """Parameters that predict: the latest refit, else the perceptron's ``w_``."""
        return self.w_ if self._refit_w is None else self._refit_w

    @property
    def shift_s_(self) -> float:
        """Time shift (s) added to predicted onsets (see ``learn_shift``)."""
        if not self.learn_shift:
            return 0.0
        if self._refit_w is not None:
            return self._refit_shift
        values = [r for _, r in self._residuals.values() if r.size]
        return float(np.median(np.concatenate(values))) if values else 0.0

    def _anchor_residuals(self, data: AlignmentItem, w, labels) -> np.ndarray:
        """``anchor time - predicted onset time`` (s) of the anchored events, predicted without labels."""
        anchors = [lab for lab in labels if isinstance(lab, AnchorLabel)]
        if not anchors:
            return np.zeros(0)
        _, _, on = self._best(data, w, [])
        ev = np.array([a.event for a in anchors])
        return np.array([a.time_s for a in anchors]) - data.frame_to_time(on[1:][ev])

    def _W(self, w=None) -> np.ndarray:
        if not hasattr(self, "w_"):
            raise ParameterError("AlignmentAdapter: call initialize(items) first")
        return np.asarray(self.w_ if w is None else w).reshape(N_FEATURES, N_FEATURES)

    # ----------------------------------------------------------- labels
    def constraints(self, data: AlignmentItem, labels) -> AlignmentConstraints | None:
        """Onset windows of the silence + event states from anchor / event-span labels (``None``: no label)."""
        data = _check_item(data)
        offset = -data.time_offset_s  # labels are in audio time, the decoder counts from frame 0's start
        shifted = []
        for lab in labels:
            if isinstance(lab, AnchorLabel):
                if lab.event >= data.n_events:
                    raise ParameterError(f"AnchorLabel {lab.id}: event {lab.event} does not exist, expected an "
                                         f"event in [0, {data.n_events - 1}]")
                shifted.append(AnchorLabel(item_id=lab.item_id, id=lab.id, event=lab.event + 1,
                                           time_s=max(lab.time_s + offset, 0.0), tolerance_s=lab.tolerance_s))
            elif isinstance(lab, EventSpanLabel):
                if lab.last >= data.n_events:
                    raise ParameterError(f"EventSpanLabel {lab.id}: events {lab.first}..{lab.last} do not exist, "
                                         f"expected events in [0, {data.n_events - 1}]")
                shifted.append(EventSpanLabel(item_id=lab.item_id, id=lab.id, first=lab.first + 1,
                                              last=lab.last + 1, t0_s=max(lab.t0_s + offset, 0.0),
                                              t1_s=max(lab.t1_s + offset, 0.0)))
            else:
                raise ParameterError(f"labels: expected AnchorLabel or EventSpanLabel, got {type(lab).__name__}")
        if not shifted:
            return None
        return alignment_constraints_from_labels(shifted, data.n_frames, data.n_events + 1, data.frame_rate)

    def check_labels(self, item_id: str, data, labels: list) -> None:
        """Raise ParameterError / InfeasibleLabelsError when no alignment respects every label of the item."""
        self.constraints(_check_item(data), list(labels))

    # --------------------------------------------------------- decoding
    def scores(self, data: AlignmentItem, w=None) -> np.ndarray:
        """Frame × (silence + events) scores ``S = X W Φᵀ``, shape (T, E + 1)."""
        data = _check_item(data)
        return data.features @ self._W(w) @ data.templates.T

    def _best(self, data: AlignmentItem, w, labels):
        """(S, cons, best onsets of the silence + event states), cached per item, parameters and labels."""
        key = id(data)
        stamp = (np.asarray(w).tobytes(), tuple(lab.id for lab in labels))
        hit = self._decodes.get(key)
        if hit is not None and hit[0] is data and hit[1] == stamp:
            return hit[2]
        S = self.scores(data, w)
        cons = self.constraints(data, labels)
        res = (S, cons, align(S, constraints=cons).alignment.onsets)
        if len(self._decodes) > 64:
            self._decodes.clear()
        self._decodes[key] = (data, stamp, res)
        return res

    def predict_onsets(self, data, labels=(), *, w=None) -> np.ndarray:
        """Onset frame of every score event (silence removed), shape (E,), under ``model_w_`` and ``labels``."""
        data = _check_item(data)
        _, _, on = self._best(data, self.model_w_ if w is None else w, list(labels))
        return on[1:].copy()

    def predict_times(self, data, labels=()) -> np.ndarray:
        """Onset time (s) of every score event, shape (E,)."""
        data = _check_item(data)
        return data.frame_to_time(self.predict_onsets(data, labels)) + self.shift_s_

    # ---------------------------------------------------------- scoring
    def part_scores(self, data, part: Part, labels: list) -> PartScores:
        """Best, runner-up and worst scores of the part's sub-problem under ``w_`` (see the module notes)."""
        data = _check_item(data)
        if not isinstance(part, Part):
            raise ParameterError(f"part: expected a Part, got {type(part).__name__}")
        if part.axis != "events" or part.stop > data.n_events:
            raise ParameterError(f"part {part.item_id!r} [{part.start}, {part.stop}): expected a part over the "
                                 f"item's {data.n_events} events (axis 'events'), got axis {part.axis!r}")
        labels = list(labels)
        key = (id(data), part)
        stamp = (self.w_.tobytes(), tuple(lab.id for lab in labels))
        hit = self._parts.get(key)
        if hit is not None and hit[0] is data and hit[1] == stamp:
            return hit[2]
        S, cons, on = self._best(data, self.w_, labels)
        scores = _sub_problem_scores(S, cons, on, part.start + 1, part.stop + 1,
                                     float(np.linalg.norm(self.w_)) / np.sqrt(N_FEATURES))
        self._parts[key] = (data, stamp, scores)
        return scores

    # --------------------------------------------------------- learning
    def _psi(self, data: AlignmentItem, onsets: np.ndarray) -> np.ndarray:
        ev = np.repeat(np.arange(onsets.shape[0]), np.diff(np.append(onsets, data.n_frames)))
        return (data.features.T @ data.templates[ev]).ravel()

    def _pa_step(self, data: AlignmentItem, w: np.ndarray, labels) -> np.ndarray | None:
        """The PA-I update of ``w`` on one item, or None when the labels are respected with margin."""
        S, cons, y_star = self._best(data, w, labels)
        if cons is None:
            return None
        T, E1 = S.shape
        ev_star = np.repeat(np.arange(E1), np.diff(np.append(y_star, T)))
        # the loss counts the frames whose state has a labelled onset or end (elsewhere y* is only a completion)
        labelled = np.array([bool(a or b) for a, b in zip(cons.min_label, cons.max_label)])
        known = labelled | np.append(labelled[1:], False)
        mask = known[ev_star]
        ls = float(self.loss_scale)
        if ls > 0 and mask.any():
            S_aug = S + ls * mask[:, None]
            S_aug[mask, ev_star[mask]] -= ls
            y_hat = align(S_aug).alignment.onsets
        else:
            _, _, y_hat = self._best(data, w, [])
        if np.array_equal(y_hat, y_star):
            return None
        ev_hat = np.repeat(np.arange(E1), np.diff(np.append(y_hat, T)))
        diff = ev_hat != ev_star
        d = (data.features[diff].T @ (data.templates[ev_star[diff]] - data.templates[ev_hat[diff]])).ravel()
        nrm = float(d @ d)
        idx = np.flatnonzero(diff)
        gap = float(S[idx, ev_hat[diff]].sum() - S[idx, ev_star[diff]].sum())
        excess = gap + ls * int((diff & mask).sum())
        if nrm <= 1e-12 or excess <= 0:
            return None
        return w + min(float(self.max_step), excess / nrm) * d

    def perceptron_step(self, data, labels: list) -> None:
        """One passive-aggressive update of ``w_`` on an item with its anchors (no change when respected)."""
        data = _check_item(data)
        new = self._pa_step(data, self.w_, list(labels))
        if new is None:
            if self.learn_shift:
                self._residuals[id(data)] = (data, self._anchor_residuals(data, self.w_, list(labels)))
            return
        if not np.all(np.isfinite(new)):
            raise ParameterError("perceptron: produced non-finite parameters; check the features")
        self.w_ = new
        self.n_updates_ += 1
        if self.learn_shift:
            self._residuals[id(data)] = (data, self._anchor_residuals(data, self.w_, list(labels)))

    def refit(self, data: list, labels: list) -> None:
        """Averaged PA passes over every labelled item from ``W = I``; sets ``model_w_``."""
        data = [_check_item(d) for d in data]
        if len(data) != len(labels):
            raise ParameterError(f"labels: expected one label list per item ({len(data)}), got {len(labels)}")
        w = np.eye(N_FEATURES).ravel()
        total = np.zeros_like(w)
        n = 0
        for _ in range(int(self.refit_epochs)):
            for d, lab in zip(data, labels):
                new = self._pa_step(d, w, list(lab))
                if new is not None:
                    w = new
                total += w
                n += 1
        self._refit_w = total / max(n, 1)
        self.n_refits_ += 1
        if self.learn_shift:
            res = np.concatenate([self._anchor_residuals(d, self._refit_w, list(lab)) for d, lab in zip(data, labels)]
                                 + [np.zeros(0)])
            self._refit_shift = float(np.median(res)) if res.size else 0.0

    # -------------------------------------------------------- evaluation
    def evaluate(self, held_out) -> float:
        """Median absolute onset error (s) of ``model_w_`` on held-out items, predicted without anchors.

        Parameters
        ----------
        held_out : list of (AlignmentItem, ndarray of shape (E,))
            Items with the true onset time (s) of every event (``NaN``: unknown).

        Returns
        -------
        median_s : float
            Also stored, with the share within 50 ms, in ``last_evaluation_``.
        """
        errs = []
        for pair in held_out:
            try:
                data, truth = pair
            except (TypeError, ValueError):
                raise ParameterError(f"held_out: expected (AlignmentItem, true onsets) pairs, "
                                     f"got {type(pair).__name__}") from None
            data = _check_item(data)
            truth = np.asarray(truth, dtype=np.float64).reshape(-1)
            if truth.shape[0] != data.n_events:
                raise ParameterError(f"held_out: expected {data.n_events} true onsets for {data.name!r}, "
                                     f"got {truth.shape[0]}")
            errs.append(onset_errors(self.predict_times(data), truth))
        e = np.concatenate(errs) if errs else np.zeros(0)
        if e.size == 0:
            raise ParameterError("held_out: contains no event with a known onset to evaluate on")
        self.last_evaluation_ = {"median_s": float(np.median(e)), "within_50ms": float(np.mean(e <= 0.05)),
                                 "n": int(e.size)}
        return self.last_evaluation_["median_s"]


def _sub_problem_scores(S, cons, onsets, a: int, b: int, scale: float) -> PartScores:
    """Exact best / runner-up / worst of states ``a..b-1`` with every other onset held at ``onsets``.

    ``S`` has shape (T, E1); states ``a - 1`` and ``b`` (when ``b < E1``) keep
    their onsets and bound the frames the part may use.
    """
    T, E1 = S.shape
    first = a - 1
    f0 = int(onsets[first])
    if b < E1:
        f1 = int(onsets[b]) + 1  # includes the first frame of state b, pinned there
        last = b
    else:
        f1 = T
        last = E1 - 1
    L = f1 - f0
    sub = S[f0:f1, first:last + 1]
    n = last - first + 1
    lo = np.zeros(n, np.int64)
    hi = np.full(n, L - 1, np.int64)
    if cons is not None:
        lo = np.maximum(lo, cons.onset_min[first:last + 1] - f0)
        hi = np.minimum(hi, cons.onset_max[first:last + 1] - f0)
    lo[0] = hi[0] = 0
    if b < E1:
        lo[-1] = hi[-1] = L - 1
    box = AlignmentConstraints(lo, hi)
    best, second = align_second_best(sub, constraints=box)
    worst = align(-sub, constraints=box)
    return PartScores(best=float(best.score), second=None if second is None else float(second.score),
                      worst=-float(worst.score), size=L, scale=max(scale, 1e-12))
