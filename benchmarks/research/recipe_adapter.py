"""The desktop engine's aCGH model in the active loop: perceptron steps per label, the recipe every k labels.

:class:`RecipeAdapter` is a :class:`~benchmarks.research.active_loop.LoopAdapter` that learns the
way :class:`marginalia.tasks.segmentation.SegmentationTask` does for aCGH, so an
offline replay (``benchmarks/quality/active.py --model recipe``) measures the model the
app uses rather than a stand-in:

* items are aCGH :class:`~marginalia.types.Sequence` objects (one chromosome each);
  the metric's input is the logratio and its point-wise Hermite functions
  (:meth:`marginalia.cgh.recipe.CghSegmenter.model_input`, shape (T, 6));
* it starts, before any label, from optimal partitioning of the raw logratio
  with a BIC-like penalty (the Hermite columns at weight 0);
* ``perceptron_step``: an averaged passive-aggressive structured-perceptron step
  on one labelled chromosome, taken as that chromosome sees the model (its
  penalty scaled by its recipe law's offset once a recipe is fitted);
* ``refit`` (the combined strategy's regularised fit): with at least
  ``min_items`` labelled chromosomes the aCGH recipe
  (:class:`~marginalia.cgh.recipe.CghSegmenter`: SSVM metric, a penalty law
  per array platform, learned change pruning), else a warm-started SSVM; the
  perceptron then continues from the fit's parameters;
* part scores: best vs. the count runner-up
  (:func:`marginalia.active.segmentation_adapter.segmentation_part_scores`) under the
  perceptron's parameters with the chromosome's own penalty factor, exactly the
  engine's ``part_scores``;
* predictions and the held-out error: the latest regularised fit (Lou et al.
  2014, §1.4.2: the perceptron picks the data, max-margin learning gives the model),
  i.e. ``recipe.segment`` (pruned) once a recipe is fitted.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from marginalia.active.segmentation_adapter import OutputPruning, SegmentationAdapter, segmentation_part_scores
from marginalia.cgh.recipe import CghSegmenter, profile_groups
from marginalia.exceptions import ParameterError
from marginalia.features.hermite import robust_noise_scale
from marginalia.models.segmentation import PenaltyScaledModel, SegmentationModel
from marginalia.types import Segmentation, Sequence

__all__ = ["RecipeAdapter", "QUERY_MARGINS", "RETRAIN_POLICIES", "retrain_metric_mode"]

#: how retrains of a growing label set get their metric (:func:`retrain_metric_mode`)
RETRAIN_POLICIES = ("learn", "anchor", "keep-x1.5")

#: what a query's best-vs-2nd margin measures: the decoder's best segmentation, or the recipe's pruned prediction
QUERY_MARGINS = ("decoder", "output")


class RecipeAdapter(SegmentationAdapter):
    """The engine's aCGH learner (perceptron + recipe) as the active loop needs it.

    Parameters
    ----------
    min_items : int, default 8
        Labelled chromosomes from which :meth:`refit` fits the recipe (the
        engine's ``RECIPE_MIN_ITEMS``); fewer: a warm-started SSVM.
    recipe_params : dict, optional
        Extra parameters of :class:`~marginalia.cgh.recipe.CghSegmenter`
        (default: the engine's, ``min_size=3, prune=True``).
    query_margin : {"decoder", "output"}
        ``"decoder"``: part scores are the decoder's best vs. count runner-up;
        ``"output"``: once a pruning recipe is fitted, the margin of the pruned
        prediction (:class:`~marginalia.active.segmentation_adapter.OutputPruning`).
    metric_refit : {"learn", "anchor", "keep-x1.5"}
        How each recipe refit gets its metric from the previous recipe
        (:func:`retrain_metric_mode`).

    Attributes
    ----------
    w_ : ndarray, shape (7,)
        The perceptron's parameters (they choose the queries).
    model_w_ : ndarray, shape (7,)
        The latest regularised fit's (they predict), else ``w_``.
    recipe_ : CghSegmenter or None
    n_refits_ : int
    """

    def __init__(self, *, min_items: int = 8, recipe_params: dict | None = None, query_margin: str = "decoder",
                 metric_refit: str = "learn"):
        if isinstance(min_items, bool) or not isinstance(min_items, (int, np.integer)) or min_items < 2:
            raise ParameterError(f"min_items: expected an integer >= 2, got {min_items!r}")
        if query_margin not in QUERY_MARGINS:
            raise ParameterError(f"query_margin: expected one of {QUERY_MARGINS}, got {query_margin!r}")
        if metric_refit not in RETRAIN_POLICIES:
            raise ParameterError(f"metric_refit: expected one of {RETRAIN_POLICIES}, got {metric_refit!r}")
        self.query_margin = query_margin
        self.metric_refit = metric_refit
        model = SegmentationModel(metric="diagonal", loss="frobenius", partial_loss="completion", min_size=3)
        super().__init__(model, features=_model_input)
        self.min_items = int(min_items)
        self.recipe_params = dict(min_size=3, prune=True, **(recipe_params or {}))

    # -------------------------------------------------------------- state

    def initialize(self, items: Mapping[str, object]) -> None:
        """Fit the feature units on every item and start from the raw logratio with a BIC-like penalty."""
        from marginalia.learners.perceptron import StructuredPerceptron
        Xs = [self.features_of(d) for d in items.values()]
        if not Xs:
            raise ParameterError("items: expected at least one item to initialise the model")
        self.model.fit_scales(Xs)
        p = self.model._p()
        B = np.zeros(p)
        B[0] = 1.0
        self._perceptron = StructuredPerceptron(self.model, averaged=True, step="pa", C=1.0)
        self._perceptron._start(self.model.join_w(B, 1.0 / p))  # 2 log T per change, in noise units
        self.w_ = self._perceptron.w_.copy()
        self.recipe_ = None
        self._ssvm_w = None
        self._factors: dict = {}
        self._pruning: dict = {}
        self._eval: tuple | None = None
        self.n_refits_ = 0
        self.clear_cache()

    def penalty_factor(self, data) -> float:
        """The item's penalty factor under the fitted recipe (1.0 before one; cached per refit)."""
        if self.recipe_ is None or not isinstance(data, Sequence):
            return 1.0
        hit = self._factors.get(id(data))
        if hit is None or hit[0] is not data:
            hit = (data, self.recipe_.penalty_factor(data))
            self._factors[id(data)] = hit
        return hit[1]

    def own_law_w(self, data) -> "np.ndarray | None":
        """The parameters the fitted recipe decodes ``data`` with when not the shared ``w`` (``CghSegmenter.own_w``)."""
        return self.recipe_.own_w(data) if self.recipe_ is not None and isinstance(data, Sequence) else None

    def item_w(self, data, w) -> np.ndarray:
        """``w`` (or the item's law's own parameters) with its penalty times the item's :meth:`penalty_factor`."""
        own = self.own_law_w(data)
        return self.model.scale_penalty(w if own is None else own, self.penalty_factor(data))

    # ------------------------------------------------------------ scoring

    def part_scores(self, data, part, labels: list):
        """Best vs. count runner-up of ``part`` under ``w_`` with the item's own penalty (cached per step)."""
        X = self.features_of(data)
        key = (part, id(data))
        stamp = (self.n_refits_, self.w_.tobytes(), tuple(lab.id for lab in labels if part.contains_label(lab)))
        hit = self._scores.get(key)
        if hit is not None and hit[0] == stamp and hit[1] is data:
            return hit[2]
        scores = segmentation_part_scores(self.model, self.item_w(data, self.w_), X, part, labels,
                                          pruning=self._output_pruning(data))
        self._scores[key] = (stamp, data, scores)
        return scores

    def _output_pruning(self, data) -> OutputPruning | None:
        """The recipe's pruning rule for ``data`` when queries score the pruned prediction (cached per refit)."""
        if self.query_margin != "output" or self.recipe_ is None or not isinstance(data, Sequence):
            return None
        hit = self._pruning.get(id(data))
        if hit is None or hit[0] is not data:
            rule = self.recipe_.pruner_for(data)
            pruning = None
            if rule is not None and rule.tau_ is not None:
                x = np.asarray(data.values, dtype=np.float64)[:, 0]
                pruning = OutputPruning(rule, x, robust_noise_scale(x))
            hit = (data, pruning)
            self._pruning[id(data)] = hit
        return hit[1]

    def predict(self, data, labels=()) -> Segmentation:
        """The latest regularised fit's segmentation of a whole item (the recipe's, pruned, once fitted)."""
        if self.recipe_ is not None and not labels and isinstance(data, Sequence):
            return self.recipe_.segment(data)
        X = self.features_of(data)
        return self.model.decode(X, self.item_w(data, self.model_w_),
                                 constraints=self.model.constraints(list(labels), X.shape[0]))

    # ----------------------------------------------------------- learning

    def perceptron_step(self, data, labels: list) -> None:
        """One averaged passive-aggressive step, as the item sees the model (penalty times its factor).

        None for an item whose law decodes with its own parameters: a step on the shared ``w`` would not
        change how that item is drawn.
        """
        if self.own_law_w(data) is not None:
            return
        X = self.features_of(data)
        factor = self.penalty_factor(data)
        if factor != 1.0:
            self._perceptron.model = PenaltyScaledModel(self.model, factor)
        try:
            self._perceptron.partial_fit(X, list(labels))
        finally:
            self._perceptron.model = self.model
        w = np.asarray(self._perceptron.w_, dtype=np.float64)
        if not np.all(np.isfinite(w)):
            raise ParameterError("perceptron: produced non-finite parameters; check the features")
        self.w_ = w

    def refit(self, data: list, labels: list) -> None:
        """The recipe on every labelled chromosome (>= ``min_items``), else a warm SSVM; the perceptron restarts there."""
        if len(data) != len(labels):
            raise ParameterError(f"data, labels: expected the same number of items, got {len(data)} and "
                                 f"{len(labels)}")
        if not data:
            return
        if len(data) >= self.min_items and all(isinstance(d, Sequence) for d in data):
            groups = profile_groups(data, range(len(data)))  # as the engine: profiles kept together
            mode = retrain_metric_mode(self.metric_refit, self.recipe_, len(data))
            recipe = CghSegmenter(**self.recipe_params).fit(list(data), [list(y) for y in labels], groups=groups,
                                                            previous=self.recipe_, metric=mode)
            self.model.set_state(recipe.model_.get_state(), n_features=self.model._p())
            w = np.asarray(recipe.w_, dtype=np.float64)
            self.recipe_ = recipe
        else:
            from marginalia.learners.ssvm import SSVM
            ssvm = SSVM(self.model, C=1.0, max_iter=50, warm_start=True, random_state=0)
            ssvm.w_ = self._perceptron.w_.copy()
            ssvm.fit([self.features_of(d) for d in data], [list(y) for y in labels])
            w = np.asarray(ssvm.w_, dtype=np.float64)
            self.recipe_ = None
        if not np.all(np.isfinite(w)):
            raise ParameterError("refit: the regularised learner returned non-finite parameters")
        self._perceptron._start(w)
        self.w_ = self._perceptron.w_.copy()
        self._ssvm_w = w
        self._factors = {}
        self._pruning = {}
        self.n_refits_ += 1
        self.clear_cache()

    # --------------------------------------------------------- evaluation

    def evaluate(self, held_out) -> float:
        """Labelled-region error rate of :meth:`predict` on ``held_out`` (recomputed only when the model changed).

        Parameters
        ----------
        held_out : list of (Sequence, labels)
        """
        stamp = (id(held_out), self.n_refits_, self.model_w_.tobytes())
        if self._eval is None or self._eval[0] != stamp:
            self._eval = (stamp, super().evaluate(held_out))
        return self._eval[1]


def _model_input(data) -> np.ndarray:
    if not isinstance(data, Sequence):
        raise ParameterError(f"RecipeAdapter items: expected aCGH Sequence objects, got {type(data).__name__}")
    return CghSegmenter.model_input(data)


def retrain_metric_mode(policy: str, previous, n_sequences: int) -> str:
    """The ``metric`` argument of :meth:`CghSegmenter.fit` for a retrain on ``n_sequences`` labelled sequences.

    Parameters
    ----------
    policy : {"learn", "anchor", "keep-x1.5"}
        ``"learn"``: always from scratch. ``"anchor"``: anchored on the previous
        fit's metric. ``"keep-x1.5"``: keep the previous metric until the label
        set has grown by half since that metric was learned, then learn afresh.
    previous : CghSegmenter or None
        The last fit (None before the first).
    n_sequences : int
        Labelled sequences of the retrain.

    Returns
    -------
    str
        ``"learn"``, ``"anchor"`` or ``"keep"`` (always ``"learn"`` without a previous fit).
    """
    if policy not in RETRAIN_POLICIES:
        raise ParameterError(f"policy: expected one of {RETRAIN_POLICIES}, got {policy!r}")
    if previous is None or policy == "learn":
        return "learn"
    if policy == "anchor":
        return "anchor"
    learned_on = getattr(previous, "metric_n_items_", None)
    return "keep" if learned_on is not None and n_sequences < 1.5 * learned_on else "learn"
