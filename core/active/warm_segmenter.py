"""Follow the best segmentation of many parts cheaply while the parameters move by small steps.

Scoring a pool after every label needs the best segmentation of every part
under the new parameters. An exact decode of a 5,000-probe chromosome costs
tens of milliseconds, far too much for 25 of them after each click, while a
perceptron step moves the metric and penalty only a little, so the new optimum
is almost always the old one or a few local moves away.

:class:`WarmSegmenter` keeps, per part, the last best segmentation and the
parameters of the last *exact* decode. A call

* decodes exactly (:func:`marginalia.decoders.segmentation.segment_penalized`) the first
  time, when the part's labels changed, or when the metric ``B`` or the penalty
  has drifted by more than the part's limit (relative) since the last exact
  decode (limits are spread over ``[refresh/2, refresh)`` so that, under a
  steady drift, the parts of a pool are not all decoded exactly on the same call);
* otherwise improves the previous best by local moves
  (:func:`marginalia.active.count_runner_up.refine_segmentation`: move a change,
  add one, remove one), ``O(T q)`` per pass;
* returns the stored result when the parameters are exactly the same.

The local search can stop at a local optimum that the exact decoder would
beat; the drift bound limits how far from an exact decode it wanders. On a
synthetic 25 x 5,000-probe aCGH project followed through 16 passive-aggressive
perceptron steps (``benchmarks/quality/active.py --scoring-only``) it matched the exact
decoder on every part even with no refresh at all; the default ``refresh=1``
(a doubling of the metric or penalty) is a safety net, not a tuned value.
"""

from __future__ import annotations

import threading
import weakref
from collections.abc import Hashable
from typing import Optional

import numpy as np

from ..checks import check_int, check_scalar
from ..decoders.seg_constraints import SegmentConstraints
from ..decoders.segmentation import SegmentationResult, segment_penalized
from ..exceptions import ParameterError
from .count_runner_up import PAIR_WIDTH, count_runner_up, refine_with_runner_up

__all__ = ["WarmSegmenter", "constraints_key"]


def constraints_key(constraints: Optional[SegmentConstraints]) -> tuple:
    """A hashable summary of what the constraints allow (label ids left out)."""
    if constraints is None:
        return ()
    return (tuple((r.start, r.stop, r.min_changes, r.max_changes) for r in constraints.regions),
            tuple(b.index for b in constraints.boundaries))


def _metric_matrix(metric) -> np.ndarray:
    m = np.asarray(metric, dtype=np.float64)
    return m * m if m.ndim == 1 else m.T @ m


def _drift(a: np.ndarray, b: np.ndarray) -> float:
    return float(np.abs(a - b).max() / max(float(np.abs(b).max()), 1e-300)) if a.shape == b.shape else np.inf


class _Entry:
    __slots__ = ("ref", "T", "ckey", "B0", "pen0", "limit", "metric_bytes", "pen", "result", "runner_up")


class WarmSegmenter:
    """Best segmentations of keyed parts, exact from time to time and locally followed in between.

    Parameters
    ----------
    refresh : float
        Largest relative drift of the metric ``B`` (max-norm) or of the penalty since
        the last exact decode for which a local refinement is trusted (each part
        gets its own limit in ``[refresh/2, refresh)``).
    max_entries : int
        Parts remembered; the memory is cleared when it would grow past this.
    move_reach : int or None
        How far (samples) a local refinement looks when it moves a change
        (None: anywhere between its neighbours). Small parameter steps move
        changes little; the add/remove scan still covers every position.

    Attributes
    ----------
    n_exact_, n_refined_, n_reused_ : int
        Calls answered by an exact decode, a local refinement, or the stored result.
    """

    def __init__(self, refresh: float = 1.0, max_entries: int = 4096, move_reach: Optional[int] = 64):
        check_scalar(refresh, "refresh", float, min_val=0)
        check_int(max_entries, "max_entries", min_val=1)
        if move_reach is not None:
            check_int(move_reach, "move_reach", min_val=1, what="None or an integer")
        self.refresh = float(refresh)
        self.max_entries = int(max_entries)
        self.move_reach = None if move_reach is None else int(move_reach)
        self._entries: dict = {}
        self._lock = threading.Lock()
        self.n_exact_ = self.n_refined_ = self.n_reused_ = 0
        self._n_fresh = 0

    def clear(self) -> None:
        """Forget every part (the next call of each decodes exactly)."""
        with self._lock:
            self._entries = {}

    def decode(self, key: Hashable, owner, X, penalty: float, *, metric=None, min_size: int = 1,
               constraints: Optional[SegmentConstraints] = None) -> SegmentationResult:
        """Best segmentation of ``X``: the first half of :meth:`best_and_runner_up`."""
        return self.best_and_runner_up(key, owner, X, penalty, metric=metric, min_size=min_size,
                                       constraints=constraints)[0]

    def best_and_runner_up(self, key: Hashable, owner, X, penalty: float, *, metric=None, min_size: int = 1,
                           constraints: Optional[SegmentConstraints] = None, pair_width: int = PAIR_WIDTH,
                           drift_metric=None):
        """Best segmentation of ``X`` (see the module notes for when it is exact) and its count runner-up.

        Parameters
        ----------
        key : hashable
            Names the part (e.g. ``(item_id, start, stop)``).
        owner : object supporting weak references
            The object the part's samples come from (e.g. the item's feature
            array); a stored best is reused only while the same ``owner`` is alive.
        X, penalty, metric, min_size, constraints
            As in :func:`marginalia.decoders.segmentation.segment_penalized`.
        pair_width : int
            As in :func:`marginalia.active.count_runner_up.count_runner_up`.
        drift_metric : None, array (p,) or array (q, p)
            The metric whose drift decides when to decode exactly, when ``X``
            is already transformed (``metric=None``); default ``metric``.

        Returns
        -------
        best : SegmentationResult
        runner_up : CountRunnerUp
        """
        X = np.asarray(X, dtype=np.float64)
        T = X.shape[0]
        ckey = (constraints_key(constraints), int(min_size), int(pair_width))
        ref_metric = metric if drift_metric is None else drift_metric
        B = _metric_matrix(ref_metric) if ref_metric is not None else None
        mbytes = None if ref_metric is None else np.asarray(ref_metric, dtype=np.float64).tobytes()
        with self._lock:
            e = self._entries.get(key)
        if e is not None and (e.ref() is not owner or e.T != T or e.ckey != ckey):
            e = None
        if e is not None and e.metric_bytes == mbytes and e.pen == float(penalty):
            self.n_reused_ += 1
            return e.result, e.runner_up
        fresh = e is None or (B is None) != (e.B0 is None) or \
            (B is not None and _drift(B, e.B0) > e.limit) or \
            abs(float(penalty) - e.pen0) > e.limit * max(e.pen0, 1e-300)
        if fresh:
            result = segment_penalized(X, penalty, metric=metric, min_size=min_size, constraints=constraints)
            runner_up = count_runner_up(X, result.segmentation, penalty, metric=metric, min_size=min_size,
                                        constraints=constraints, pair_width=pair_width)
            self.n_exact_ += 1
        else:
            result, runner_up = refine_with_runner_up(X, e.result.segmentation, penalty, metric=metric,
                                                      min_size=min_size, constraints=constraints,
                                                      pair_width=pair_width, move_reach=self.move_reach)
            self.n_refined_ += 1
        new = _Entry()
        try:
            new.ref = weakref.ref(owner)
        except TypeError:
            raise ParameterError(f"owner: expected an object that supports weak references, "
                                 f"got {type(owner).__name__}") from None
        new.T, new.ckey = T, ckey
        if fresh:
            # parts get drift limits spread over [refresh/2, refresh) (golden-ratio sequence), so that
            # under a steady drift their exact decodes fall on different calls, not all on one
            self._n_fresh += 1
            new.B0, new.pen0 = B, float(penalty)
            new.limit = self.refresh * (0.5 + 0.5 * ((self._n_fresh * 0.6180339887498949) % 1.0))
        else:
            new.B0, new.pen0, new.limit = e.B0, e.pen0, e.limit
        new.metric_bytes, new.pen, new.result, new.runner_up = mbytes, float(penalty), result, runner_up
        with self._lock:
            if len(self._entries) >= self.max_entries and key not in self._entries:
                self._entries = {}
            self._entries[key] = new
        return result, runner_up
