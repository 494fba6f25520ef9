"""Active learning for change-point detection: the ``LoopAdapter`` of segmentation (benchmarks.research.active_loop).

It links the loop to :class:`marginalia.models.segmentation.SegmentationModel`
(scores ``<w, φ(X, y)> = -penalised cost``, decoders with label constraints and
second-best) and to a regularised learner for the combined strategy.

Scores of a part (for :mod:`marginalia.active.uncertainty`), all under the current ``w``:

* ``best``: the best segmentation of the part's samples that respects the
  labels lying inside the part (the part is decoded on its own, as Lou et al.
  (2014) do with patches);
* ``second``: the runner-up that a label would tell apart from the best: the
  cheapest segmentation with one change added or removed
  (:mod:`marginalia.active.count_runner_up`), keeping the part's labels. The
  unrestricted second best (``runner_up="any"``) is almost always the best
  with a change moved by one sample, so its margin is near zero for every part
  and ranks nothing;
* ``worst``: the decoders do not offer a worst segmentation, so the worse of the
  two extreme segmentations (one segment; one segment per sample) is used.
  Because every cost is at most ``scatter(one segment) + λT`` and the proxy is
  at least half of that, the proxy's cost is within a factor 2 of the true
  worst cost;
* ``scale``: the current penalty λ (the price of one change in score units),
  so uncertainties do not change when ``w`` is rescaled (the perceptron's
  decisions do not either). The best-vs-2nd margin is then the gain or loss
  of the closest add/remove decision as a fraction of the price of a change:
  ``0`` for a change that is exactly worth its price, about ``1`` for a flat
  stretch where the best extra change explains nothing, large for a clear
  change. It is not divided by the length (it is one local decision); a
  longer flat part gets a slightly smaller margin, because noise offers more
  places where a spurious change could pay for itself.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass

import numpy as np

from ..checks import check_choice
from ..decoders.segmentation import metric_transform
from ..exceptions import ParameterError
from ..metrics import RegionErrors, region_errors
from ..types import BoundaryLabel, RegionLabel, Segmentation, Sequence
from .count_runner_up import count_runner_up
from .parts import Part
from .uncertainty import PartScores
from .warm_segmenter import WarmSegmenter

__all__ = ["OutputPruning", "SegmentationAdapter", "shift_labels", "segmentation_part_scores", "segmentation_part_pair"]


def shift_labels(labels, part: Part) -> list:
    """The segmentation labels lying inside ``part``, re-indexed relative to ``part.start``.

    Parameters
    ----------
    labels : iterable of RegionLabel / BoundaryLabel
    part : Part

    Returns
    -------
    labels : list
        Copies with the same ids, so infeasibility errors still name the user's labels.
    """
    out = []
    for lab in labels:
        if not part.contains_label(lab):
            continue
        if isinstance(lab, RegionLabel):
            out.append(RegionLabel(item_id=lab.item_id, id=lab.id, author=lab.author, created=lab.created,
                                   start=lab.start - part.start, stop=lab.stop - part.start, kind=lab.kind))
        elif isinstance(lab, BoundaryLabel):
            out.append(BoundaryLabel(item_id=lab.item_id, id=lab.id, author=lab.author, created=lab.created,
                                     index=lab.index - part.start))
    return out


#: best segmentations of parts, followed between exact decodes (see segmentation_part_scores)
_WARM = WarmSegmenter()


def _as_array(data, features) -> np.ndarray:
    if features is not None:
        data = features(data)
    if isinstance(data, Sequence):
        data = data.values
    X = np.asarray(data, dtype=np.float64)
    if X.ndim == 1:
        X = X[:, None]
    if X.ndim != 2:
        raise ParameterError(f"item data: expected a Sequence or an array of shape (T, p), got shape {X.shape}")
    return X


@dataclass(frozen=True)
class OutputPruning:
    """The pruning rule that turns an item's best segmentation into its prediction, for output margins.

    It prunes the decoder's changes alone: a recipe whose pruner also chooses from an
    over-segmentation (``CghSegmenter.pruner_candidates_``) predicts from more candidates
    than this margin sees.

    Parameters
    ----------
    pruner : ChangePruner
        Fitted rule (:class:`marginalia.cgh.change_pruning.ChangePruner`).
    signal : ndarray, shape (T,)
        The whole item's 1-d signal the rule reads (the aCGH logratio).
    scale : float
        Its noise level (of the whole item, so a window is judged as the item is).
    """

    pruner: object
    signal: np.ndarray
    scale: float


def _pruned(rule, x, seg: Segmentation, scale: float) -> Segmentation:
    from ..cgh.change_pruning import prune_changes
    return prune_changes(x, seg, tau=rule.tau_, beta=rule.beta_, gamma=rule.gamma_, delta=rule.delta_, scale=scale,
                         spike=getattr(rule, "spike_", None))


def _output_margin(pruning: OutputPruning, part: Part, best: Segmentation, runner: Segmentation | None,
                   decoder_margin: float) -> float:
    """Margin of the pruned prediction, in the decoder margin's units (a fraction of one change's price).

    The prediction changes when the pruning rule's threshold crosses one of its
    decisions on the best segmentation, or when the decoder switches to the
    runner-up and that is still different after pruning. A pruning margin in
    log-score units counts twice (a change's gain grows as its jump squared), and
    a runner-up that prunes to the same prediction needs its own pruning decision
    to flip as well.
    """
    x = pruning.signal[part.start:part.stop]
    rule = pruning.pruner
    m_best = 2.0 * rule.decision_margin(x, best, scale=pruning.scale)
    if runner is None:
        return m_best
    if _pruned(rule, x, runner, pruning.scale) != _pruned(rule, x, best, pruning.scale):
        return min(m_best, decoder_margin)
    return min(m_best, decoder_margin + 2.0 * rule.decision_margin(x, runner, scale=pruning.scale))


def segmentation_part_scores(model, w, X, part: Part, labels, *, runner_up: str = "count",
                             warm: bool = True, pruning: OutputPruning | None = None) -> PartScores:
    """Best, runner-up and worst-proxy scores of ``part`` of an item under ``w`` (decoder costs negated).

    Parameters
    ----------
    model : SegmentationModel
    w : ndarray, shape (n_params,)
    X : ndarray, shape (T, p)
        The whole item's features; the part is ``X[part.start:part.stop]``.
    part : Part
    labels : list
        The item's labels (those inside the part constrain it).
    runner_up : {"count", "any"}
        ``"count"`` (default): the cheapest segmentation with one change (or two
        adjacent ones) more or fewer than the best, keeping the labels: what a
        region label decides (:func:`marginalia.active.count_runner_up.count_runner_up`); ``"any"``: the
        unrestricted second best (usually the best with a change shifted by a sample).
    warm : bool
        With ``runner_up="count"``: follow each part's best segmentation by local
        moves between exact decodes (:class:`~marginalia.active.warm_segmenter.WarmSegmenter`,
        shared by every caller, keyed by the identity of ``X``, the part and whether labels
        constrain it), so scoring a pool
        after a small parameter step costs ``O(T q)`` per part instead of a decode.
        ``False``: always decode exactly.
    pruning : OutputPruning, optional
        With ``runner_up="count"`` and no label inside the part: score the margin
        of the *prediction* (the best segmentation after this pruning rule),
        ``second = best - margin * scale`` (see :func:`_output_margin`), rather
        than the decoder's own margin.

    Notes
    -----
    The penalty is the whole item's (per-length units follow the item, not
    the part). The worst proxy is the worse of "one segment" and "every
    sample a segment", within a factor 2 of the true worst cost.
    """
    check_choice(runner_up, "runner_up", ("count", "any"))
    if runner_up == "count":
        best, r, Z, pen, inside = _part_count_runner_up(model, w, X, part, labels, warm)
        T = Z.shape[0]
        second_cost = None if r.segmentation is None else best.cost + max(r.delta, 0.0)
        if pruning is not None and not inside:
            margin = _output_margin(pruning, part, best.segmentation, r.segmentation,
                                    np.inf if r.segmentation is None else max(r.delta, 0.0) / pen)
            second_cost = None if not np.isfinite(margin) else best.cost + margin * pen
    else:
        from ..decoders.segmentation import segment_second_best
        _check_part(X, part)
        Xp = X[part.start:part.stop]
        T = Xp.shape[0]
        metric, pen = model.decoder_metric(w, X.shape[0])
        cons = model.constraints(shift_labels(labels, part), T)
        best, second = segment_second_best(Xp, pen, metric=metric, min_size=model.min_size, constraints=cons)
        second_cost = None if second is None else second.cost
        Z = metric_transform(Xp, metric)
    one_segment = float(((Z - Z.mean(axis=0)) ** 2).sum()) + pen
    worst_cost = max(one_segment, pen * (T // model.min_size), best.cost)
    return PartScores(best=-best.cost, second=None if second_cost is None else -second_cost, worst=-worst_cost,
                      size=T, scale=max(pen, 1e-12 * max(1.0, worst_cost)))


def _check_part(X, part: Part) -> None:
    if part.stop > X.shape[0]:
        raise ParameterError(f"part {part.item_id!r} [{part.start}, {part.stop}) ends after the item's "
                             f"{X.shape[0]} samples")


def _part_count_runner_up(model, w, X, part: Part, labels, warm: bool):
    """``(best, CountRunnerUp, Z, penalty, labels inside)`` of ``part`` decoded on its own (part's index)."""
    _check_part(X, part)
    Xp = X[part.start:part.stop]
    metric, pen = model.decoder_metric(w, X.shape[0])
    inside = shift_labels(labels, part)
    cons = model.constraints(inside, Xp.shape[0])
    Z = metric_transform(Xp, metric)
    if warm:
        # a part scored with and without its labels (queries vs. the fixed stopping set) is followed as
        # two parts, so alternating between them does not force an exact decode each time
        best, r = _WARM.best_and_runner_up((id(X), part.start, part.stop, bool(inside)), X, Z, pen,
                                           min_size=model.min_size, constraints=cons, drift_metric=metric)
    else:
        from ..decoders.segmentation import segment_penalized
        best = segment_penalized(Z, pen, min_size=model.min_size, constraints=cons)
        r = count_runner_up(Z, best.segmentation, pen, min_size=model.min_size, constraints=cons)
    return best, r, Z, pen, inside


def segmentation_part_pair(model, w, X, part: Part, labels, *, warm: bool = True) -> tuple:
    """The best segmentation of ``part`` and its count runner-up, as the part's score sees them.

    The same decode as :func:`segmentation_part_scores` with ``runner_up="count"`` (so a question
    about the part shows the margin its query was ranked by).

    Returns
    -------
    best_changes : ndarray of int
        Change indices of the best segmentation of the part, in the item's index.
    runner_changes : ndarray of int or None
        The runner-up's (None when no change can be added or removed).
    margin : float
        ``delta / penalty`` (``inf`` without a runner-up).
    """
    best, r, _, pen, _ = _part_count_runner_up(model, w, X, part, labels, warm)
    best_changes = best.segmentation.breakpoints + part.start
    if r.segmentation is None:
        return best_changes, None, float("inf")
    scale = max(pen, 1e-12)
    return best_changes, r.segmentation.breakpoints + part.start, max(r.delta, 0.0) / scale


class SegmentationAdapter:
    """Segmentation model + structured perceptron + optional SSVM, as the active loop needs them.

    Parameters
    ----------
    model : SegmentationModel, optional
        Defaults to ``SegmentationModel(metric="diagonal")``.
    features : callable, optional
        Maps an item's data (e.g. a Sequence) to its (T, p) feature array;
        applied once per item and cached. Default: the data's values.
    perceptron : callable, optional
        ``perceptron(model) -> learner`` with ``partial_fit(X, labels)`` and
        ``w_``. Default: ``marginalia.learners.perceptron.StructuredPerceptron(model,
        averaged=False)``: the plain perceptron of Lou et al. 2014, Alg. 1.2 with
        passive-aggressive steps, starting from the model's ``default_w`` (the
        Euclidean metric in noise units, BIC-like penalty). On the aCGH replay
        the averaged variant learns several times slower, because the average
        keeps the poor starting point for many visits.
    ssvm : callable, optional
        ``ssvm(model) -> learner`` with ``fit(Xs, label_lists)`` and ``w_``, for
        the combined strategy. Default: ``marginalia.learners.ssvm.SSVM(model,
        warm_start=True)``, warm-started from its previous fit.

    Attributes
    ----------
    w_ : ndarray
        Parameters that choose the queries: the perceptron's.
    model_w_ : ndarray
        Parameters that predict and are evaluated: the latest regularised fit
        when the combined strategy has made one, else ``w_`` (Lou et al. 2014, §1.4.2: the
        perceptron retrieves the data, max-margin learning gives the model).
    n_refits_ : int
    """

    def __init__(self, model=None, *, features: Callable | None = None, perceptron: Callable | None = None,
                 ssvm: Callable | None = None):
        if model is None:
            from ..models.segmentation import SegmentationModel
            model = SegmentationModel(metric="diagonal")
        for name in ("decode", "decoder_metric", "transform", "initial_w", "constraints", "min_size"):
            if getattr(model, name, None) is None:
                raise ParameterError(f"model: expected a SegmentationModel-like object with {name}, "
                                     f"got {type(model).__name__}")
        for name, value in (("features", features), ("perceptron", perceptron), ("ssvm", ssvm)):
            if value is not None and not callable(value):
                raise ParameterError(f"{name}: expected a callable or None, got {type(value).__name__}")
        self.model = model
        self.features = features
        self.perceptron = perceptron
        self.ssvm = ssvm
        self._X: dict = {}
        self._scores: dict = {}

    # -------------------------------------------------------------- data

    def features_of(self, data) -> np.ndarray:
        """Feature array of an item (cached by object identity)."""
        key = id(data)
        hit = self._X.get(key)
        if hit is None or hit[0] is not data:
            hit = (data, _as_array(data, self.features))
            self._X[key] = hit
        return hit[1]

    def initialize(self, items: Mapping[str, object]) -> None:
        """Fit the model's units on every item and start from its default parameters."""
        Xs = [self.features_of(d) for d in items.values()]
        if not Xs:
            raise ParameterError("items: expected at least one item to initialise the model")
        self.w_ = np.array(self.model.initial_w(Xs), dtype=np.float64)
        self.clear_cache()
        if self.perceptron is None:
            from ..learners.perceptron import StructuredPerceptron
            self._perceptron = StructuredPerceptron(self.model, averaged=False)
        else:
            self._perceptron = self.perceptron(self.model)
        self._ssvm = None
        self._ssvm_w = None
        self.n_refits_ = 0

    @property
    def model_w_(self) -> np.ndarray:
        return self.w_ if self._ssvm_w is None else self._ssvm_w

    def check_labels(self, item_id: str, data, labels: list) -> None:
        """Raise InfeasibleLabelsError when no segmentation respects every label of the item."""
        X = self.features_of(data)
        for lab in labels:
            if not isinstance(lab, (RegionLabel, BoundaryLabel)):
                raise ParameterError(f"labels of {item_id!r}: expected RegionLabel or BoundaryLabel, "
                                     f"got {type(lab).__name__}")
            end = lab.stop if isinstance(lab, RegionLabel) else lab.index + 1
            if end > X.shape[0]:
                raise ParameterError(f"labels of {item_id!r}: label {lab.id} reaches index {end - 1}, "
                                     f"past the last sample ({X.shape[0] - 1})")
        self.model.constraints(list(labels), X.shape[0])

    # ----------------------------------------------------------- scoring

    def part_scores(self, data, part: Part, labels: list) -> PartScores:
        """Best, runner-up and (proxy) worst scores of ``part`` under ``w_`` (see the module notes).

        Results are cached per part and reused while ``w_`` and the labels inside
        the part are unchanged (the plain perceptron leaves ``w_`` alone when it
        makes no mistake, which is most steps once it has converged).
        """
        X = self.features_of(data)
        key = (part, id(data))
        stamp = (self.w_.tobytes(), tuple(lab.id for lab in labels if part.contains_label(lab)))
        hit = self._scores.get(key)
        if hit is not None and hit[0] == stamp and hit[1] is data:
            return hit[2]
        scores = self._part_scores(X, part, labels)
        self._scores[key] = (stamp, data, scores)
        return scores

    def clear_cache(self) -> None:
        """Forget cached part scores (they are recomputed on the next call)."""
        self._scores = {}

    def _part_scores(self, X, part: Part, labels: list) -> PartScores:
        return segmentation_part_scores(self.model, self.w_, X, part, labels)

    def predict(self, data, labels=()) -> Segmentation:
        """Best segmentation of a whole item under ``model_w_``, respecting ``labels``."""
        X = self.features_of(data)
        return self.model.decode(X, self.model_w_, constraints=self.model.constraints(list(labels), X.shape[0]))

    # ---------------------------------------------------------- learning

    def perceptron_step(self, data, labels: list) -> None:
        """One perceptron update on an item with its partial labels."""
        X = self.features_of(data)
        self._perceptron.partial_fit(X, list(labels))
        w = np.asarray(self._perceptron.w_, dtype=np.float64)
        if not np.all(np.isfinite(w)):
            raise ParameterError("perceptron: produced non-finite parameters; check the features")
        self.w_ = w

    def refit(self, data: list, labels: list) -> None:
        """Regularised fit on every labelled item (the combined strategy), warm-started from the previous one."""
        Xs = [self.features_of(d) for d in data]
        if self._ssvm is None:
            if self.ssvm is None:
                from ..learners.ssvm import SSVM
                self._ssvm = SSVM(self.model, warm_start=True)
            else:
                self._ssvm = self.ssvm(self.model)
        self._ssvm.fit(Xs, [list(lab) for lab in labels])
        w = np.asarray(self._ssvm.w_, dtype=np.float64)
        if not np.all(np.isfinite(w)):
            raise ParameterError("refit: the regularised learner returned non-finite parameters")
        self._ssvm_w = w
        self.n_refits_ += 1

    # -------------------------------------------------------- evaluation

    def evaluate(self, held_out) -> float:
        """Labelled-region error rate ``(FP + FN) / n_regions`` of ``model_w_`` on ``held_out``.

        Parameters
        ----------
        held_out : list of (data, labels)
            Items with their expert region labels; the prediction is unconstrained.
        """
        total = sum((region_errors(labels, self.predict(data)) for data, labels in held_out), RegionErrors())
        if total.n_labels == 0:
            raise ParameterError("held_out: contains no region label to evaluate on")
        return total.rate
