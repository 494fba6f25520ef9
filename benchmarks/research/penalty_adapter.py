"""Active learning of a per-sequence change penalty: a ``LoopAdapter`` (``.active_loop``) with room to learn.

Why this model. With one penalty law for every sequence, labelled-region error on
the neuroblastoma aCGH profiles plateaus near the tuned-penalty error (~0.18)
after a handful of labels, whatever the query strategy: the curve has no room
for labels to keep helping. Learning the *log-penalty of each sequence* from its
features (max-margin interval regression, Hocking et al. 2013) keeps improving
with labels (~0.13 with every label, the per-sequence oracle ~0.05), so the
choice of which chromosome to label matters.

Model. Each item is a 1-d signal ``x`` (T,). Its exact least-squares penalty
path (:func:`marginalia.cgh.penalty_path.penalty_path`, ``K <= k_max`` segments)
and its features ``F`` (:func:`marginalia.cgh.penalty_regression.sequence_features`
plus, with ``path_features``, the two largest log-penalties at which the path
loses a change) are computed once per item and cached. The model predicts
``log λ = θᵀ z(F) + b`` (``z``: features standardised with the pool's mean and
spread, an unsupervised choice made at :meth:`PenaltyPathAdapter.initialize`) and
segments the item with the path's optimum at that ``λ``. With no label it
starts from the BIC-like law ``λ = 2 σ̂² log T``.

Learning (Lou et al. 2014, §1.4.2, the combined strategy):

* ``perceptron_step``: a passive-aggressive step on one labelled item, taken
  only when its predicted ``log λ`` lies outside its target interval (the
  ``log λ`` pieces of the path with the fewest label errors) shrunk by
  ``margin``; the step puts the prediction on the nearer end;
* ``refit``: the regularised max-margin interval regression on every labelled
  item (:class:`marginalia.cgh.penalty_regression.PenaltyIntervalRegression`);
  the perceptron then continues from the refit's parameters.

Part scores (for :mod:`marginalia.active.uncertainty`; scores are minus penalised
costs ``c_K + λ (K - 1)``, ``c_K`` the best least-squares cost with ``K``
segments, ``K = 1..k_max``):

* ``best``: the optimum; ``second``: the best segmentation with a *different
  number of changes*. Region labels count changes, so a runner-up that only
  moves a change by a sample (the unrestricted second best, whose margin is
  noise) says nothing about the label error; a different count does;
* ``worst``: the worst of the per-``K`` optima (a proxy of the worst structure);
* ``scale = λ``: margins are measured in "prices of one change", so they
  compare across chromosomes of different length and noise level (and are
  invariant to rescaling the signal, which rescales ``c_K`` and ``λ`` alike).
  ``best-vs-2nd``'s margin ``(best - second) / λ`` is the relative distance of
  ``λ`` to the nearest end of its piece of the path: a chromosome whose
  predicted penalty sits next to a change in the number of changes is the
  closest call.

Labels inside a part do not constrain its scores: a part is labelled as a
whole and then leaves the pool.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

import numpy as np

from marginalia.active.parts import Part
from marginalia.active.uncertainty import PartScores
from marginalia.cgh.penalty_path import error_intervals, min_error_interval, penalty_path
from marginalia.cgh.penalty_regression import PenaltyIntervalRegression, sequence_features
from marginalia.checks import check_signal
from marginalia.exceptions import ParameterError
from marginalia.types import BoundaryLabel, RegionLabel, Segmentation, Sequence

__all__ = ["PenaltyPathAdapter", "signal_of"]


def signal_of(data) -> np.ndarray:
    """The 1-d signal of an item: a one-column :class:`~marginalia.types.Sequence` or a (T,) / (T, 1) array.

    Returns
    -------
    x : ndarray, shape (T,)
    """
    values = data.values if isinstance(data, Sequence) else data
    return check_signal(values, "item data (a one-column Sequence, or an array of shape (T,) or (T, 1))", min_length=3)


class _ItemPath:
    """Cached penalty path, features and penalised-cost table of one signal."""

    __slots__ = ("data", "path", "features", "n_changes", "costs", "n_samples")

    def __init__(self, data, x: np.ndarray, k_max: int, min_size: int, path_features: bool):
        self.data = data
        self.path = penalty_path(x, k_max=k_max, min_size=min_size)
        self.costs = np.asarray(self.path.costs, dtype=np.float64)  # cost of K = 1..k segments
        self.n_changes = np.arange(self.costs.shape[0], dtype=np.float64)
        self.n_samples = x.shape[0]
        F = sequence_features(x)
        if path_features:
            fin = self.path.log_lower[np.isfinite(self.path.log_lower)]
            last = fin[-1] if fin.size else F[1]
            before = fin[-2] if fin.size > 1 else last
            F = np.r_[F, last, before]
        self.features = F


class PenaltyPathAdapter:
    """Per-sequence penalty learned from partial labels, as the active loop needs it.

    Parameters
    ----------
    k_max : int
        Largest number of segments on each item's penalty path.
    min_size : int
        Minimal segment length.
    alpha, margin : float
        Regularisation and required margin (log-penalty units) of the interval
        regression (:meth:`refit`) and the margin of the perceptron step.
    path_features : bool
        Add the two path summaries to the sequence features.
    step : float in (0, 1]
        Fraction of the passive-aggressive correction taken by a perceptron step.

    Attributes
    ----------
    w_ : ndarray, shape (d + 1,)
        Query parameters ``[θ, b]`` on standardised features (the perceptron's).
    model_w_ : ndarray, shape (d + 1,)
        Predicting parameters: the latest refit, else ``w_``.
    n_refits_ : int
    """

    def __init__(self, *, k_max: int = 12, min_size: int = 1, alpha: float = 1e-2, margin: float = 1.0,
                 path_features: bool = True, step: float = 1.0):
        for name, value in (("k_max", k_max), ("min_size", min_size)):
            if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
                raise ParameterError(f"{name}: expected an integer >= 1, got {value!r}")
        for name, value in (("alpha", alpha), ("margin", margin)):
            if not (isinstance(value, (int, float, np.floating)) and np.isfinite(value) and value >= 0):
                raise ParameterError(f"{name}: expected a finite number >= 0, got {value!r}")
        if not (isinstance(step, (int, float, np.floating)) and 0 < step <= 1):
            raise ParameterError(f"step: expected a number in (0, 1], got {step!r}")
        self.k_max = int(k_max)
        self.min_size = int(min_size)
        self.alpha = float(alpha)
        self.margin = float(margin)
        self.path_features = bool(path_features)
        self.step = float(step)
        self._items: dict = {}
        self._targets: dict = {}

    # -------------------------------------------------------------- data

    def item_path(self, data) -> _ItemPath:
        """Penalty path and features of an item (computed once, cached by object identity)."""
        key = id(data)
        hit = self._items.get(key)
        if hit is None or hit.data is not data:
            hit = _ItemPath(data, signal_of(data), self.k_max, self.min_size, self.path_features)
            self._items[key] = hit
        return hit

    def precompute(self, items) -> None:
        """Compute the paths of many items ahead of time (e.g. a held-out set).

        Parameters
        ----------
        items : iterable of item data
        """
        for data in items:
            self.item_path(data)

    def initialize(self, items: Mapping[str, object]) -> None:
        """Standardise features on the pool and start from the law ``λ = 2 σ̂² log T``."""
        paths = [self.item_path(d) for d in items.values()]
        if not paths:
            raise ParameterError("items: expected at least one item to initialise the model")
        F = np.array([p.features for p in paths])
        self.mean_ = F.mean(axis=0)
        spread = F.std(axis=0)
        self.scale_ = np.where(spread > 1e-12, spread, 1.0)
        raw = np.zeros(F.shape[1])
        raw[0] = raw[1] = 1.0  # log log T + log σ̂²
        self.w_ = self._from_raw(raw, math.log(2.0))
        self._refit_w = None
        self.n_refits_ = 0

    def _from_raw(self, coef, intercept) -> np.ndarray:
        coef = np.asarray(coef, dtype=np.float64)
        return np.r_[coef * self.scale_, float(intercept) + float(coef @ self.mean_)]

    @property
    def model_w_(self) -> np.ndarray:
        return self.w_ if self._refit_w is None else self._refit_w

    def _z(self, entry: _ItemPath) -> np.ndarray:
        return (entry.features - self.mean_) / self.scale_

    def log_penalty(self, data, *, w=None) -> float:
        """Predicted ``log λ`` of an item under ``w`` (default ``model_w_``)."""
        w = self.model_w_ if w is None else np.asarray(w, dtype=np.float64)
        return float(self._z(self.item_path(data)) @ w[:-1] + w[-1])

    def check_labels(self, item_id: str, data, labels: list) -> None:
        """Raise ParameterError / InfeasibleLabelsError when the item's labels are invalid or contradict."""
        T = self.item_path(data).n_samples
        for lab in labels:
            if not isinstance(lab, (RegionLabel, BoundaryLabel)):
                raise ParameterError(f"labels of {item_id!r}: expected RegionLabel or BoundaryLabel, "
                                     f"got {type(lab).__name__}")
            end = lab.stop if isinstance(lab, RegionLabel) else lab.index + 1
            if end > T:
                raise ParameterError(f"labels of {item_id!r}: label {lab.id} reaches index {end - 1}, "
                                     f"past the last sample ({T - 1})")
        if labels:
            from marginalia.decoders.seg_constraints import constraints_from_labels
            constraints_from_labels(list(labels), T)

    # ----------------------------------------------------------- scoring

    def _part_path(self, data, part: Part) -> _ItemPath:
        entry = self.item_path(data)
        if part.stop > entry.n_samples:
            raise ParameterError(f"part {part.item_id!r} [{part.start}, {part.stop}) ends after the item's "
                                 f"{entry.n_samples} samples")
        if part.start == 0 and part.stop == entry.n_samples:
            return entry
        key = (id(data), part.start, part.stop)
        hit = self._items.get(key)
        if hit is None or hit.data is not data:
            x = signal_of(data)[part.start:part.stop]
            if x.shape[0] < 3:
                raise ParameterError(f"part {part.item_id!r} [{part.start}, {part.stop}): expected at least "
                                     f"3 samples, got {x.shape[0]}")
            hit = _ItemPath(data, x, self.k_max, self.min_size, False)
            self._items[key] = hit
        return hit

    def part_scores(self, data, part: Part, labels: list = ()) -> PartScores:
        """Best, runner-up (different number of changes) and worst-proxy scores of ``part`` under ``w_``.

        The penalty is the whole item's; a window of a long item uses its own
        penalty path. ``labels`` are not used (see the module notes).
        """
        entry = self._part_path(data, part)
        lam = math.exp(min(self.log_penalty(data, w=self.w_), 700.0))
        penalised = entry.costs + lam * entry.n_changes
        finite = np.isfinite(penalised)
        k_best = int(np.argmin(np.where(finite, penalised, np.inf)))
        best = float(penalised[k_best])
        others = np.where(finite, penalised, np.inf)
        others[k_best] = np.inf
        second = float(others.min()) if np.isfinite(others.min()) else None
        worst = float(penalised[finite].max())
        scale = max(lam, 1e-12 * max(1.0, abs(best)))
        return PartScores(best=-best, second=None if second is None else -second, worst=-worst,
                          size=part.size, scale=scale)

    def clear_cache(self) -> None:
        """Nothing to forget: part scores are recomputed from cached paths (microseconds each)."""

    def predict(self, data, labels=()) -> Segmentation:
        """Best segmentation of a whole item at its predicted penalty (``model_w_``).

        With labels, the penalised decoder at that penalty respecting them.
        """
        entry = self.item_path(data)
        log_pen = self.log_penalty(data)
        if not labels:
            return entry.path.segmentation_at(log_pen)
        from marginalia.decoders.seg_constraints import constraints_from_labels
        from marginalia.decoders.segmentation import segment_penalized
        x = signal_of(data)
        res = segment_penalized(x[:, None], math.exp(log_pen), min_size=self.min_size,
                                constraints=constraints_from_labels(list(labels), x.shape[0]))
        return res.segmentation

    # ---------------------------------------------------------- learning

    def target_interval(self, data, labels) -> tuple:
        """``(lower, upper)`` log-penalties whose path segmentation has the fewest label errors (cached)."""
        entry = self.item_path(data)
        key = (id(data), tuple(lab.id for lab in labels))
        hit = self._targets.get(key)
        if hit is None or hit[0] is not data:
            lo, fp, fn, _ = error_intervals(entry.path, list(labels))
            a, b, _ = min_error_interval(lo, fp + fn)
            hit = (data, (a, b), lo, fp + fn)
            self._targets[key] = hit
        return hit[1]

    def perceptron_step(self, data, labels: list) -> None:
        """Passive-aggressive step on one item when its predicted ``log λ`` misses its target interval."""
        a, b = self.target_interval(data, labels)
        if not (np.isfinite(a) or np.isfinite(b)):
            return
        z = np.r_[self._z(self.item_path(data)), 1.0]
        f = float(z @ self.w_)
        lo = a + self.margin if np.isfinite(a) else -np.inf
        hi = b - self.margin if np.isfinite(b) else np.inf
        if lo > hi:  # interval narrower than twice the margin: aim at its middle
            lo = hi = 0.5 * (a + b)
        eps = 1e-9 * max(1.0, abs(f))  # a prediction put on an end by the last step may miss it by a rounding
        if f < lo - eps:
            gap = lo - f
        elif f > hi + eps:
            gap = hi - f
        else:
            return
        self.w_ = self.w_ + self.step * gap / float(z @ z) * z

    def refit(self, data: list, labels: list) -> None:
        """Max-margin interval regression on every labelled item; the perceptron continues from it.

        Items whose labels are satisfied at every penalty carry no information;
        when no item carries any, the parameters are left unchanged.
        """
        if len(data) != len(labels):
            raise ParameterError(f"data, labels: expected the same number of items, got {len(data)} and "
                                 f"{len(labels)}")
        if not data:
            return
        F = np.array([self.item_path(d).features for d in data])
        iv = np.array([self.target_interval(d, lab) for d, lab in zip(data, labels)])
        if not np.isfinite(iv).any():
            return
        reg = PenaltyIntervalRegression(alpha=self.alpha, margin=self.margin).fit(F, iv)
        w = self._from_raw(reg.coef_, reg.intercept_)
        if not np.all(np.isfinite(w)):
            raise ParameterError("refit: the interval regression returned non-finite parameters")
        self._refit_w = w
        self.w_ = w.copy()
        self.n_refits_ += 1

    # -------------------------------------------------------- evaluation

    def label_errors(self, data, labels) -> tuple:
        """``(errors, n_regions)`` of ``model_w_``'s unconstrained prediction on an item's region labels."""
        self.target_interval(data, labels)
        _, _, lo, err = self._targets[(id(data), tuple(lab.id for lab in labels))]
        j = max(int(np.searchsorted(lo, self.log_penalty(data), side="right")) - 1, 0)
        n = sum(isinstance(lab, RegionLabel) for lab in labels)
        return int(err[j]), n

    def evaluate(self, held_out) -> float:
        """Labelled-region error rate ``(FP + FN) / n_regions`` of ``model_w_`` on ``held_out``.

        Parameters
        ----------
        held_out : list of (data, labels)
        """
        e = n = 0
        for data, labels in held_out:
            a, b = self.label_errors(data, labels)
            e, n = e + a, n + b
        if n == 0:
            raise ParameterError("held_out: contains no region label to evaluate on")
        return e / n
