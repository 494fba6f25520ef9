"""Anchors on a few windows, the whole performance re-aligned: the active loop for one recording.

With :class:`marginalia.align.ScoreAligner` an untrained alignment is already
accurate on most events, so the question for active learning is no longer
"which labels teach the scorers" but "which window should a person anchor so
that the constrained re-alignment fixes the most errors, there and elsewhere
in the same performance". :class:`RealignAdapter` is the
:class:`~benchmarks.research.active_loop.LoopAdapter` of that loop:

* an item is one performance, :class:`Performance` (features, score, and the
  aligner's frame × state scores computed once);
* the *update* is the re-alignment of the performance under every anchor
  given so far (no parameter is learned: ``perceptron_step`` re-aligns,
  ``refit`` does the same);
* a part is a window of score events; its scores are those the app's
  queue uses (:meth:`marginalia.align.aligner.OnsetMoves.span`): the objective of
  ``ScoreAligner``'s own decoder (frame scores, onset gains, duration prior)
  over the window under the current (anchored) alignment, and what its
  closest call loses -- the best move of one unanchored event's onset, every
  other onset kept -- with the largest such loss as the worst-case proxy.
  ``scale`` is the spread (standard deviation) of the performance's frame ×
  state scores, so margins compare across performances; the margin is not
  divided by the window's length (the runner-up differs from the best by one
  local decision).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

import numpy as np

from ..checks import check_scalar
from ..exceptions import ParameterError
from ..types import AnchorLabel, MidiScore
from .parts import Part
from .uncertainty import PartScores

__all__ = ["Performance", "RealignAdapter", "span_part_scores", "within_tolerance"]


def within_tolerance(times_s, truth_s, tolerance_s: float = 0.05, *, events=None) -> float:
    """Share of events whose onset lies within ``tolerance_s`` of the truth (NaN truth: not counted).

    Parameters
    ----------
    times_s, truth_s : array_like, shape (E,)
    tolerance_s : float, > 0
    events : array_like of int, optional
        Only these events.

    Returns
    -------
    share : float in [0, 1], NaN when no event is counted
    """
    t = np.asarray(times_s, dtype=np.float64).reshape(-1)
    g = np.asarray(truth_s, dtype=np.float64).reshape(-1)
    if t.shape != g.shape:
        raise ParameterError(f"times_s, truth_s: expected the same shape, got {t.shape} and {g.shape}")
    check_scalar(tolerance_s, "tolerance_s", float, min_val=0, include_boundaries="neither")
    keep = np.isfinite(g)
    if events is not None:
        mask = np.zeros_like(keep)
        mask[np.asarray(events, dtype=np.int64)] = True
        keep &= mask
    if not keep.any():
        return float("nan")
    return float(np.mean(np.abs(t[keep] - g[keep]) <= tolerance_s))


@dataclass(eq=False)
class Performance:
    """One recording of a score, ready for repeated constrained re-alignment.

    Parameters
    ----------
    aligner : ScoreAligner
    features : AlignmentFeatures
        ``aligner.features(y, sr)`` of the recording.
    score : MidiScore

    Attributes
    ----------
    scores : ndarray, shape (T, E + 2)
        The aligner's frame × (rest, events, rest) scores.
    scale : float
        Standard deviation of ``scores`` (> 0).
    """

    aligner: object
    features: object
    score: MidiScore
    scores: np.ndarray = field(init=False, repr=False)
    scale: float = field(init=False)

    def __post_init__(self):
        if not isinstance(self.score, MidiScore):
            raise ParameterError(f"score: expected a marginalia.types.MidiScore, got {type(self.score).__name__}")
        for name in ("align", "_score_matrix", "_W"):
            if not callable(getattr(self.aligner, name, None)):
                raise ParameterError(f"aligner: expected a marginalia.align.ScoreAligner, got "
                                     f"{type(self.aligner).__name__}")
        # ScoreAligner offers no public accessor for its frame x state scores; they do not depend on anchors
        S = np.asarray(self.aligner._score_matrix(self.features, self.score, self.aligner._W()), dtype=np.float64)
        self.scores = S
        spread = float(S.std())
        self.scale = spread if np.isfinite(spread) and spread > 0 else 1.0

    @property
    def n_events(self) -> int:
        return int(self.score.n_events)


def span_part_scores(rival, scale: float = 1.0) -> PartScores:
    """A phrase against its closest call (:class:`marginalia.align.aligner.SpanRival`) as a part's scores: its objective,
    that minus its margin (runner-up) and minus its largest single-move loss (the worst-case proxy)."""
    second = rival.value - rival.margin if np.isfinite(rival.margin) else None
    worst = rival.value - rival.worst_margin if np.isfinite(rival.worst_margin) else None
    return PartScores(best=rival.value, second=second, worst=worst, size=rival.n_frames, scale=scale)


def _anchors(labels) -> list:
    out = []
    for lab in labels:
        if not isinstance(lab, AnchorLabel):
            raise ParameterError(f"labels: expected AnchorLabel items, got {type(lab).__name__}")
        out.append(lab)
    return out


class RealignAdapter:
    """Constrained re-alignment of performances under anchors, as the active loop needs it.

    Attributes
    ----------
    w_ : ndarray, shape (0,)
        No learned parameters (the loop's protocol asks for the attribute).
    n_alignments_ : int
        Decodings run (the cache spares the others).
    """

    def __init__(self):
        self._cache: dict = {}
        self.n_alignments_ = 0
        self.w_ = np.zeros(0)

    def initialize(self, items: Mapping[str, object]) -> None:
        """Check the items and forget cached alignments."""
        if not items:
            raise ParameterError("items: expected at least one performance")
        for k, v in items.items():
            if not isinstance(v, Performance):
                raise ParameterError(f"items[{k!r}]: expected a Performance, got {type(v).__name__}")
        self._cache = {}
        self._labels: dict = {}

    def align(self, data: Performance, labels=()):
        """``ScoreAligner.align`` output of a performance under its anchors (cached by anchor ids)."""
        anchors = _anchors(labels)
        key = (id(data), tuple(sorted(a.id for a in anchors)))
        hit = self._cache.get(key)
        if hit is not None and hit[0] is data:
            return hit[1]
        fixed = sorted({a.event for a in anchors})
        out = data.aligner.align(None, data.features.sr, data.score, anchors=anchors, features=data.features,
                                 fixed_events=fixed)
        self.n_alignments_ += 1
        if len(self._cache) > 64:
            self._cache = {}
        self._cache[key] = (data, out)
        return out

    def check_labels(self, item_id: str, data, labels: list) -> None:
        """Raise InfeasibleLabelsError when the anchors are out of score order or outside the recording."""
        if not isinstance(data, Performance):
            raise ParameterError(f"data of {item_id!r}: expected a Performance, got {type(data).__name__}")
        anchors = _anchors(labels)
        for a in anchors:
            if not 0 <= a.event < data.n_events:
                raise ParameterError(f"labels of {item_id!r}: anchor {a.id} names event {a.event}, expected an "
                                     f"event in [0, {data.n_events - 1}]")
        data.aligner._constraints(anchors, data.features, data.n_events)

    def part_scores(self, data, part: Part, labels: list) -> PartScores:
        """The window's objective under the current (anchored) alignment against its closest call: the best
        move of one of its unanchored events' onsets, all else kept (:meth:`marginalia.align.aligner.OnsetMoves.span`)."""
        if not isinstance(part, Part) or part.axis != "events" or part.stop > data.n_events:
            raise ParameterError(f"part: expected a Part over the performance's {data.n_events} events "
                                 f"(axis 'events'), got {part!r}")
        return span_part_scores(self.align(data, labels).moves.span(part.start, part.stop), data.scale)

    def clear_cache(self) -> None:
        self._cache = {}

    def perceptron_step(self, data, labels: list) -> None:
        """Re-align the performance under its anchors (nothing is learned)."""
        self.align(data, labels)

    def refit(self, data: list, labels: list) -> None:
        """Re-align every labelled performance (nothing is learned)."""
        for d, lab in zip(data, labels):
            self.align(d, lab)

    def predict_times(self, data, labels=()) -> np.ndarray:
        """Onset time (s) of every event under the anchors, shape (E,)."""
        return np.asarray(self.align(data, labels).event_times_s, dtype=np.float64)

    def evaluate(self, held_out) -> float:
        """Share of events farther than 50 ms from the truth (1 - within 50 ms), over ``held_out``.

        Parameters
        ----------
        held_out : list of (Performance, truth_s, labels)
            ``truth_s`` shape (E,), NaN unknown; ``labels`` the anchors to align under.
        """
        hits = n = 0
        for data, truth, labels in held_out:
            t = self.predict_times(data, labels)
            g = np.asarray(truth, dtype=np.float64)
            keep = np.isfinite(g)
            hits += int(np.sum(np.abs(t[keep] - g[keep]) <= 0.05))
            n += int(keep.sum())
        if n == 0:
            raise ParameterError("held_out: no event with a known time")
        return 1.0 - hits / n
