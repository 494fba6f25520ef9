"""Change-point model with a learned Mahalanobis metric and penalty (Lajugie 2015, ch.4).

Cost of a segmentation ``y`` of ``X`` (T × p) under ``w = (B, λ)``::

    cost(X, y; w) = Σ_segments Σ_{i in seg} (x_i - mean_seg)ᵀ B (x_i - mean_seg) + λ · n_segments(y)
                  = ⟨B, S(X, y)⟩ + λ K(y)

with ``S`` the within-segment scatter matrix. The score to maximise is
``⟨w, φ(X, y)⟩ = -cost`` with the joint feature map ``φ = -(S, K)`` — the
``W = Diag(B, -1)`` form of Lajugie 2015, eq. 4.9 with the penalty kept as a free
parameter. ``metric="diagonal"`` learns ``B = Diag(b)``, ``b ≥ 0``
(``φ`` holds the per-feature scatter ``S_jj``); ``metric="full"`` learns a
PSD ``B`` (``φ`` holds ``vec(S)``). The parameter vector is
``w = [b_1..b_p, λ]`` or ``[vec(B), λ]``.

Targets are either a full :class:`~marginalia.types.Segmentation` or a list of
partial labels (:class:`~marginalia.types.RegionLabel` / :class:`~marginalia.types.BoundaryLabel`),
wrapped by :meth:`SegmentationModel.make_target` into a :class:`PartialTarget`
that carries the labels and a completion (the best segmentation respecting them).
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass
from typing import Optional

import numpy as np

from ..checks import check_choice
from ..exceptions import ParameterError
from ..features.standardize import check_features
from ..types import BoundaryLabel, RegionLabel, Segmentation
from ._params import check_param_vector, n_features_of
from ._violation_dp import violation_dp

__all__ = ["SegmentationModel", "PenaltyScaledModel", "PartialTarget", "label_violations", "label_change_errors",
           "within_segment_scatter"]


# ----------------------------------------------------------------- helpers


def within_segment_scatter(X, seg: Segmentation, *, full=False) -> np.ndarray:
    """Within-segment scatter of ``X`` for segmentation ``seg``.

    Parameters
    ----------
    X : ndarray, shape (T, p)
    seg : Segmentation with ``n_samples == T``
    full : bool
        Return the (p, p) scatter matrix instead of its diagonal.

    Returns
    -------
    S : ndarray, shape (p,) or (p, p)
    """
    X = np.asarray(X, dtype=np.float64)
    starts = np.concatenate([[0], seg.changes[:-1]]).astype(np.int64)
    sizes = (seg.changes - starts).astype(np.float64)
    mu = X.mean(axis=0)
    Xc = X - mu  # centring keeps the sum-of-squares difference well conditioned
    sums = np.add.reduceat(Xc, starts, axis=0)           # (K, p)
    if full:
        return Xc.T @ Xc - (sums / sizes[:, None]).T @ sums
    return np.einsum("ij,ij->j", Xc, Xc) - np.einsum("kj,kj->j", sums, sums / sizes[:, None])


def _check_labels(labels, n_samples: int, name="labels") -> list:
    try:
        labels = list(labels)
    except TypeError:
        raise ParameterError(f"{name}: expected a list of RegionLabel/BoundaryLabel, got {type(labels).__name__}") from None
    for lab in labels:
        if isinstance(lab, RegionLabel):
            if lab.stop > n_samples:
                raise ParameterError(f"{name}: region [{lab.start}, {lab.stop}) of label {lab.id} ends after the "
                                     f"last sample (T={n_samples})")
        elif isinstance(lab, BoundaryLabel):
            if lab.index >= n_samples:
                raise ParameterError(f"{name}: boundary {lab.index} of label {lab.id} must be < T={n_samples}")
        else:
            raise ParameterError(f"{name}: expected RegionLabel or BoundaryLabel items, got {type(lab).__name__}")
    return labels


def _label_shortfalls(labels, seg: Segmentation):
    """``(missing, extra)`` changes of ``seg`` per partial label (a boundary label misses its change or not)."""
    bp = set(int(c) for c in seg.breakpoints)
    for lab in labels:
        if isinstance(lab, RegionLabel):
            yield lab.kind.shortfall(seg.changes_inside(lab.start, lab.stop))
        elif isinstance(lab, BoundaryLabel):
            yield int(lab.index not in bp), 0


def label_violations(labels, seg: Segmentation) -> int:
    """Number of partial labels that ``seg`` contradicts.

    A region label is violated when the number of changes strictly inside it
    falls outside the kind's bounds; a boundary label when its change is absent.
    """
    return sum(1 for missing, extra in _label_shortfalls(labels, seg) if missing or extra)


def label_change_errors(labels, seg: Segmentation) -> int:
    """Wrong change decisions of ``seg`` on what partial labels determine.

    A region label holding ``c`` changes contributes ``max(lo - c, 0) +
    max(c - hi, 0)`` (every change in a ZERO region, every change past the
    first in a ONE region, 1 for a ONE or AT_LEAST_ONE region without change);
    a boundary label contributes 1 when its change is absent.
    """
    return sum(missing + extra for missing, extra in _label_shortfalls(labels, seg))


@dataclass(frozen=True, eq=False)
class _FeatureStats:
    """Cumulative sums of the scaled, centred features of one sequence (see ``feature_stats``)."""

    c1: np.ndarray
    c2: np.ndarray
    n_samples: int
    scale: np.ndarray


@dataclass(frozen=True, eq=False)
class PartialTarget:
    """Partial labels of one sequence and their current completion."""

    labels: tuple
    completion: Segmentation
    n_samples: int


def _decoders():
    # imported lazily: the decoders are developed alongside and must not be
    # needed to import the model (persistence, provenance)
    from ..decoders import segmentation as segdec
    return segdec


def _unwrap(res) -> Segmentation:
    if isinstance(res, Segmentation):
        return res
    if hasattr(res, "segmentation"):
        return res.segmentation
    return res[0]


# ------------------------------------------------------------------- model


class SegmentationModel:
    """Joint feature map, losses and decoders of penalised change-point detection.

    Parameters
    ----------
    metric : {"diagonal", "full"}
        Learn a non-negative diagonal ``B`` (feature weights) or a PSD matrix.
    loss : {"frobenius", "hamming"}
        Loss against a *full* target segmentation (Lajugie 2015, eq. 4.13, or the
        number of change indices on which the two disagree).
    partial_loss : {"violations", "counts", "completion"}
        Loss against *partial* labels: ``"violations"`` counts the violated
        labels (exact loss-augmented decoding by a dedicated DP, O(T²p));
        ``"counts"`` counts wrong change decisions inside the labels (every
        change in a ZERO region, every change past the first in a ONE region,
        a missing change in a ONE or AT_LEAST_ONE region or at a boundary
        label — the Hamming loss on what the labels determine; same DP,
        without pruning);
        ``"completion"`` uses ``loss`` against the labels' completion (fast
        decoders, but it also penalises disagreements outside the labels).
    min_size : int, default 1
        Minimal segment length.

    Attributes
    ----------
    n_features_ : int
        ``p``, set by :meth:`initial_w` or the first :meth:`joint_feature`.
    """

    task = "segmentation"

    def __init__(self, metric="diagonal", loss="frobenius", partial_loss="violations", min_size=1,
                 penalty_per="log_length"):
        check_choice(metric, "metric", ("diagonal", "full"))
        check_choice(loss, "loss", ("frobenius", "hamming"))
        check_choice(partial_loss, "partial_loss", ("violations", "counts", "completion"))
        if int(min_size) < 1 or int(min_size) != min_size:
            raise ParameterError(f"min_size: expected a positive integer, got {min_size!r}")
        check_choice(penalty_per, "penalty_per", ("log_length", "constant"))
        self.penalty_per = penalty_per
        self.metric = metric
        self.loss_name = loss
        self.partial_loss = partial_loss
        self.min_size = int(min_size)

    # ------------------------------------------------------------ sizes
    def get_params(self) -> dict:
        return dict(metric=self.metric, loss=self.loss_name, partial_loss=self.partial_loss, min_size=self.min_size,
                    penalty_per=self.penalty_per)

    def get_state(self) -> dict:
        """Learned units (arrays) needed to reuse ``w``: see :meth:`fit_scales`."""
        self._p()   # refuses a model whose units were never set
        return {"feature_scale": self._feature_scale().copy(),
                "penalty_scale": np.array([self._penalty_scale()])}

    def set_state(self, state: dict, n_features: int) -> "SegmentationModel":
        """Restore :meth:`get_state` output for ``n_features`` features."""
        fs = np.asarray(state["feature_scale"], dtype=np.float64)
        if fs.shape != (int(n_features),) or not np.all(np.isfinite(fs)) or np.any(fs < 0):
            raise ParameterError(f"feature_scale: expected {int(n_features)} finite non-negative values, got {fs.shape}")
        self.n_features_ = int(n_features)
        self.feature_scale_ = fs
        self.penalty_scale_ = float(np.asarray(state["penalty_scale"]).reshape(-1)[0])
        return self

    def n_params(self, n_features: Optional[int] = None) -> int:
        """Length of ``w`` for ``p`` features: ``p + 1`` (diagonal) or ``p² + 1`` (full)."""
        p = self._p(n_features)
        return p + 1 if self.metric == "diagonal" else p * p + 1

    def _p(self, n_features=None) -> int:
        return n_features_of(self, n_features)

    def _check_X(self, X, name="X") -> np.ndarray:
        X = check_features(X, name)
        if hasattr(self, "n_features_") and X.shape[1] != self.n_features_:
            raise ParameterError(f"{name}: expected {self.n_features_} features (as the model), got {X.shape[1]}")
        self.n_features_ = X.shape[1]
        if X.shape[0] < self.min_size:
            raise ParameterError(f"{name}: {X.shape[0]} samples is fewer than min_size={self.min_size}")
        return X

    def check_w(self, w, name="w") -> np.ndarray:
        return check_param_vector(w, self.n_params(), name)

    # ------------------------------------------------------------ parameters
    def split_w(self, w) -> tuple:
        """``(B, penalty)`` from ``w``; ``B`` is (p,) for diagonal, (p, p) for full."""
        w = self.check_w(w)
        p = self._p()
        if self.metric == "diagonal":
            return w[:p].copy(), float(w[p])
        return w[:p * p].reshape(p, p).copy(), float(w[-1])

    def join_w(self, B, penalty) -> np.ndarray:
        """Parameter vector from a metric ``B`` ((p,) or (p, p)) and a penalty."""
        B = np.asarray(B, dtype=np.float64)
        return np.concatenate([B.reshape(-1), [float(penalty)]])

    def scale_penalty(self, w, factor: float) -> np.ndarray:
        """``w`` with its penalty multiplied by ``factor`` (the metric unchanged); ``w`` itself when ``factor == 1``."""
        if factor == 1.0:
            return w
        B, pen = self.split_w(w)
        return self.join_w(B, pen * float(factor))

    def projection_is_orthant(self) -> bool:
        """True when :meth:`project` is ``max(w, 0)`` (diagonal metric): learners then line-search exactly."""
        return self.metric == "diagonal"

    def project(self, w) -> np.ndarray:
        """Euclidean projection onto the allowed set: ``b ≥ 0`` (or ``B`` PSD) and ``λ ≥ 0``."""
        w = np.array(w, dtype=np.float64)
        p = self._p()
        if self.metric == "diagonal":
            return np.maximum(w, 0.0)
        B = w[:p * p].reshape(p, p)
        B = 0.5 * (B + B.T)
        vals, vecs = np.linalg.eigh(B)
        B = (vecs * np.maximum(vals, 0.0)) @ vecs.T
        return np.concatenate([B.reshape(-1), [max(w[-1], 0.0)]])

    def decoder_metric(self, w, n_samples=None):
        """``(metric, penalty)`` in the decoders' convention (1-d column scales or (q, p) matrix ``L``).

        ``w`` is expressed on the model's internal scale (see :meth:`fit_scales`).
        """
        B, pen = self.split_w(w)
        fs = self._feature_scale()
        pen = max(pen, 0.0) * self._penalty_scale(n_samples)
        if self.metric == "diagonal":
            return fs * np.sqrt(np.maximum(B, 0.0)), pen
        vals, vecs = np.linalg.eigh(0.5 * (B + B.T))
        keep = vals > 1e-12 * max(1.0, float(np.abs(vals).max()))
        if not np.any(keep):
            return np.zeros((1, B.shape[0])), pen
        L = (vecs[:, keep] * np.sqrt(vals[keep])).T * fs[None, :]
        return L, pen

    def metric_matrix(self, w) -> np.ndarray:
        """The Mahalanobis matrix ``B`` acting on the raw features, shape (p, p)."""
        metric, _ = self.decoder_metric(w)
        return np.diag(metric ** 2) if metric.ndim == 1 else metric.T @ metric

    def penalty(self, w, n_samples=None) -> float:
        """The change penalty ``λ`` in raw cost units (for a sequence of ``n_samples``)."""
        return self.decoder_metric(w, n_samples)[1]

    def transform(self, X, w) -> np.ndarray:
        """``X`` mapped so that the Euclidean cost equals the model's metric: (T, p) or (T, q)."""
        metric, _ = self.decoder_metric(w)
        return X * metric if metric.ndim == 1 else X @ metric.T

    def _feature_scale(self) -> np.ndarray:
        fs = getattr(self, "feature_scale_", None)
        return np.ones(self._p()) if fs is None else fs

    def _penalty_scale(self, n_samples=None) -> float:
        if self.penalty_per == "log_length" and n_samples is not None:
            return 2.0 * self._p() * math.log(max(int(n_samples), 2))
        return float(getattr(self, "penalty_scale_", 1.0))

    def fit_scales(self, Xs) -> "SegmentationModel":
        """Choose the internal units: features in noise units, penalty in BIC units.

        Sets ``feature_scale_[j] = 1 / σ_j`` (``σ_j`` the robust noise level
        of feature ``j`` from first differences; 0 for constant features, which
        are then ignored, with a warning) and ``penalty_scale_ = 2 p · log(T̄)``.
        With ``penalty_per="log_length"`` (default) the penalty unit of a
        sequence of ``T`` samples is ``2 p · log(T)`` instead (longer
        sequences need a larger penalty for the same false-alarm rate).
        In these units ``w = 1`` is the Euclidean metric on noise-scaled
        features with a BIC-like penalty, and the learners' ``‖w‖²``
        regulariser treats every coordinate alike.
        """
        Xs = self._check_Xs(Xs)
        p = Xs[0].shape[1]
        diffs = np.vstack([np.diff(X, axis=0) for X in Xs if X.shape[0] > 1] or [np.zeros((1, p))])
        sigma = 1.4826 * np.median(np.abs(diffs - np.median(diffs, axis=0)), axis=0) / math.sqrt(2)
        fallback = np.concatenate(Xs).std(axis=0)
        sigma = np.where(sigma > 1e-12 * (1 + fallback), sigma, fallback)
        constant = np.flatnonzero(sigma <= 1e-12)
        if constant.size == p:
            raise ParameterError("Xs: every feature is constant over the training data; nothing can be learned")
        if constant.size:
            warnings.warn(f"SegmentationModel: feature(s) {constant.tolist()} are constant over the training data "
                          "and are ignored", UserWarning, stacklevel=2)
        self.feature_scale_ = np.where(sigma > 1e-12, 1.0 / np.maximum(sigma, 1e-300), 0.0)
        T_mean = float(np.mean([X.shape[0] for X in Xs]))
        self.penalty_scale_ = 2.0 * p * math.log(max(T_mean, 2.0))
        return self

    def default_w(self, Xs=None) -> np.ndarray:
        """``w = 1`` in the current units (fitting the units on ``Xs`` if not yet done)."""
        if not hasattr(self, "feature_scale_"):
            if Xs is None:
                raise ParameterError("SegmentationModel: units unknown; call fit_scales(Xs) or initial_w(Xs) first")
            self.fit_scales(Xs)
        p = self._p()
        return self.join_w(np.ones(p) if self.metric == "diagonal" else np.eye(p), 1.0)

    def initial_w(self, Xs, Ys=None, *, grid=None, n_jobs=1) -> np.ndarray:
        """A starting point: Euclidean metric in noise units and a BIC-like penalty.

        Calls :meth:`fit_scales` then returns ``w = 1`` (every feature
        weighted by its inverse noise variance, ``λ = 2 p · log(T̄)``). With
        targets ``Ys``, the penalty factor is tuned on them over ``2^k``,
        ``k = -4..4`` (``grid`` overrides the factors).

        The optimal segmentation is piecewise constant in the penalty: when
        two factors give the same segmentation, every factor between them
        does too, so the grid is scanned by bisection and most factors cost
        no decoding.

        Parameters
        ----------
        Xs : list of ndarray, each (T_i, p)
        Ys : list of Segmentation or label lists, optional
        grid : array_like of float, optional
        n_jobs : int, default 1
            Threads decoding the sequences (the decoders release the GIL).

        Returns
        -------
        w : ndarray, shape (n_params,)
        """
        self.fit_scales(Xs)
        Xs = self._check_Xs(Xs)
        p = Xs[0].shape[1]
        B = np.ones(p) if self.metric == "diagonal" else np.eye(p)
        w = self.join_w(B, 1.0)
        if Ys is None:
            return w
        Ys = list(Ys)
        if len(Ys) != len(Xs):
            raise ParameterError(f"Ys: expected {len(Xs)} targets (one per sequence), got {len(Ys)}")
        factors = np.exp2(np.arange(-4, 5)) if grid is None else np.asarray(grid, dtype=float).reshape(-1)
        if factors.size == 0 or not np.all(np.isfinite(factors)) or np.any(factors < 0):
            raise ParameterError(f"grid: expected non-negative finite penalty factors, got {factors!r}")
        order = np.argsort(factors, kind="stable")
        cands = [self.join_w(B, f) for f in factors[order]]

        def losses(X, Y):
            return _grid_losses(lambda j: self.decode(X, cands[j]), lambda y: self.loss(Y, y), len(cands))

        items = list(zip(Xs, Ys))
        if int(n_jobs) > 1 and len(items) > 1:
            from concurrent.futures import ThreadPoolExecutor
            with ThreadPoolExecutor(max_workers=int(n_jobs)) as pool:
                per_item = list(pool.map(lambda it: losses(*it), items))
        else:
            per_item = [losses(X, Y) for X, Y in items]
        total = np.zeros(len(cands))
        for row in per_item:       # summed in item order: the same floats as a plain loop
            total += row
        best_sorted = np.flatnonzero(total <= total.min() + 1e-12)
        # ties go to the factor listed first in the grid, as a plain scan would
        first = min(order[j] for j in best_sorted)
        return self.join_w(B, factors[first])

    def _check_Xs(self, Xs) -> list:
        if isinstance(Xs, np.ndarray):
            Xs = [Xs]
        Xs = [self._check_X(X, f"Xs[{i}]") for i, X in enumerate(Xs)]
        if not Xs:
            raise ParameterError("Xs: expected at least one sequence, got none")
        return Xs

    # ------------------------------------------------------------ feature map
    def joint_feature(self, X, y: Segmentation, *, stats=None) -> np.ndarray:
        """``φ(X, y) = -(S(X, y), K(y))``, shape (n_params,).

        ``stats`` (from :meth:`feature_stats` on this ``X``) gives the same
        result in O(K p) from cumulative sums, without re-validating ``X``.
        """
        if stats is not None:
            fs = self._feature_scale()
            if not isinstance(stats, _FeatureStats) or (stats.scale is not fs and not np.array_equal(stats.scale, fs)):
                raise ParameterError("stats: expected feature_stats(X) computed with the model's current units")
            y = self._seg(y, stats.n_samples)
            ends = y.changes
            starts = np.concatenate(([0], ends[:-1]))
            sums = stats.c1[ends] - stats.c1[starts]
            S = np.sum(stats.c2[ends] - stats.c2[starts], axis=0) - np.einsum(
                "kj,kj->j", sums, sums / (ends - starts)[:, None])
            return -np.concatenate([S, [float(y.n_segments) * self._penalty_scale(stats.n_samples)]])
        X = self._check_X(X)
        y = self._seg(y, X.shape[0])
        S = within_segment_scatter(X * self._feature_scale(), y, full=self.metric == "full")
        return -np.concatenate([S.reshape(-1), [float(y.n_segments) * self._penalty_scale(X.shape[0])]])

    def feature_stats(self, X):
        """Cumulative sums of ``X`` for repeated :meth:`joint_feature` calls (``None`` for the full metric).

        Valid while the units (:meth:`fit_scales`) stay the same; learners
        compute them once per item and fit.
        """
        if self.metric != "diagonal":
            return None
        X = self._check_X(X)
        scale = self._feature_scale()
        Z = X * scale
        Z = Z - Z.mean(axis=0)     # centring keeps the differences of cumulative sums well conditioned
        T, p = Z.shape
        c1 = np.zeros((T + 1, p))
        c2 = np.zeros((T + 1, p))
        np.cumsum(Z, axis=0, out=c1[1:])
        np.cumsum(Z * Z, axis=0, out=c2[1:])
        return _FeatureStats(c1, c2, T, scale)

    def score(self, X, y, w) -> float:
        """``⟨w, φ(X, y)⟩`` = minus the penalised cost (higher is better)."""
        return float(self.check_w(w) @ self.joint_feature(X, y))

    @staticmethod
    def _seg(y, T) -> Segmentation:
        if isinstance(y, PartialTarget):
            y = y.completion
        if not isinstance(y, Segmentation):
            raise ParameterError(f"y: expected a Segmentation, got {type(y).__name__}")
        if y.n_samples != T:
            raise ParameterError(f"y: segmentation of {y.n_samples} samples for a sequence of {T}")
        return y

    # ------------------------------------------------------------ targets
    def constraints(self, labels, n_samples):
        """Decoder constraints from partial labels (``None`` when there are none)."""
        labels = list(labels) if labels is not None else []
        if not labels:
            return None
        from ..decoders.seg_constraints import constraints_from_labels
        return constraints_from_labels(labels, n_samples)

    def complete(self, X, labels, w) -> Segmentation:
        """Best segmentation under ``w`` that respects every label (Lajugie 2015, §4.4.2 completion)."""
        X = self._check_X(X)
        labels = _check_labels(labels, X.shape[0])
        return self.decode(X, w, constraints=self.constraints(labels, X.shape[0]))

    def make_target(self, X, y, w=None):
        """Normalise a target: a Segmentation stays; labels become a :class:`PartialTarget`.

        The completion uses ``w`` (or :meth:`default_w` when ``None``).
        """
        X = self._check_X(X)
        if isinstance(y, Segmentation):
            return self._seg(y, X.shape[0])
        if isinstance(y, PartialTarget):
            if w is None:
                return y
            labels = y.labels
        else:
            labels = tuple(_check_labels(y, X.shape[0], "y"))
        if w is None:
            w = self.default_w([X])
        return PartialTarget(tuple(labels), self.complete(X, labels, w), X.shape[0])

    # ------------------------------------------------------------ decoding
    def decode(self, X, w, constraints=None) -> Segmentation:
        """Highest-scoring segmentation (respecting ``constraints``)."""
        X = self._check_X(X)
        metric, pen = self.decoder_metric(w, X.shape[0])
        res = _decoders().segment_penalized(X, pen, metric=metric, min_size=self.min_size, constraints=constraints)
        return _unwrap(res)

    def second_best(self, X, w, constraints=None) -> tuple:
        """``(best, second)`` segmentations; ``second`` is None when only one exists."""
        X = self._check_X(X)
        metric, pen = self.decoder_metric(w, X.shape[0])
        best, second = _decoders().segment_second_best(X, pen, metric=metric, min_size=self.min_size,
                                                       constraints=constraints)
        return _unwrap(best), (None if second is None else _unwrap(second))

    def loss_augmented_decode(self, X, target, w, *, loss_scale=1.0) -> Segmentation:
        """``argmax_y loss(target, y) + ⟨w, φ(X, y)⟩``."""
        X = self._check_X(X)
        T = X.shape[0]
        metric, pen = self.decoder_metric(w, X.shape[0])
        if isinstance(target, PartialTarget) and self.partial_loss in ("violations", "counts"):
            return self._violation_decode(X, target.labels, w, loss_scale)
        truth = self._seg(target, T)
        res = _decoders().segment_loss_augmented(X, pen, truth, loss=self.loss_name, loss_scale=float(loss_scale),
                                                 metric=metric, min_size=self.min_size)
        return _unwrap(res)

    def _violation_decode(self, X, labels, w, scale) -> Segmentation:
        T = X.shape[0]
        Z = np.ascontiguousarray(self.transform(X, w))
        _, pen = self.decoder_metric(w, T)
        regions, bounds = _disjoint_labels(labels)
        rid = np.full(T + 1, -1, dtype=np.int64)
        lo = np.zeros(len(regions), dtype=np.int64)
        hi = np.zeros(len(regions), dtype=np.int64)
        st = np.zeros(len(regions), dtype=np.int64)
        sp = np.zeros(len(regions), dtype=np.int64)
        for r, lab in enumerate(regions):
            lo[r], h = lab.kind.bounds
            hi[r] = -1 if h is None else h
            st[r], sp[r] = lab.start, lab.stop
            rid[lab.start + 1:lab.stop] = r
        gain = np.zeros(T + 1)
        for b in bounds:
            gain[b.index] = 1.0
        changes, _ = violation_dp(Z, pen, self.min_size, rid, lo, hi, st, sp, gain, float(scale),
                                  self.partial_loss == "counts")
        return Segmentation(changes, T)

    def violations(self, labels, y: Segmentation) -> int:
        """Number of partial labels ``y`` contradicts (see :func:`label_violations`)."""
        return label_violations(list(labels), y)

    # ------------------------------------------------------------ losses
    def loss(self, target, y_hat: Segmentation) -> float:
        """Loss of ``y_hat`` against a full segmentation or partial labels (see class doc)."""
        if isinstance(target, PartialTarget):
            if self.partial_loss == "violations":
                return float(label_violations(target.labels, y_hat))
            if self.partial_loss == "counts":
                return float(label_change_errors(target.labels, y_hat))
            target = target.completion
        elif not isinstance(target, Segmentation):
            labels = list(target)
            if self.partial_loss == "counts":
                return float(label_change_errors(labels, y_hat))
            return float(label_violations(labels, y_hat))
        if target.n_samples != y_hat.n_samples:
            raise ParameterError(f"y_hat: {y_hat.n_samples} samples, target has {target.n_samples}")
        dec = _decoders()
        if self.loss_name == "frobenius":
            return float(dec.frobenius_loss(target, y_hat))
        return float(dec.hamming_loss(target, y_hat))


class PenaltyScaledModel:
    """A segmentation model as one sequence sees it: its penalty multiplied by ``factor``.

    The parameters stay the shared ones; the sequence decodes with the scaled
    penalty, and its joint feature's penalty coordinate is scaled by the same
    factor, so ``<w, phi>`` is that sequence's score and a learner's step in ``w``
    is exact for it. Everything else is the wrapped model's. Used for
    perceptron steps on one chromosome under the aCGH recipe's per-sequence
    penalty law.

    Parameters
    ----------
    model : SegmentationModel
    factor : float
        Positive multiplier of the penalty.
    """

    def __init__(self, model, factor: float):
        factor = float(factor)
        if not (np.isfinite(factor) and factor > 0):
            raise ParameterError(f"factor: expected a finite penalty multiplier > 0, got {factor!r}")
        self._model = model
        self._factor = factor

    def __getattr__(self, name):
        return getattr(self._model, name)

    def _item(self, w):
        return self._model.scale_penalty(w, self._factor)

    def decode(self, X, w, constraints=None):
        return self._model.decode(X, self._item(w), constraints=constraints)

    def make_target(self, X, y, w=None):
        return self._model.make_target(X, y, None if w is None else self._item(w))

    def loss_augmented_decode(self, X, target, w, **kwargs):
        return self._model.loss_augmented_decode(X, target, self._item(w), **kwargs)

    def joint_feature(self, X, y, **kwargs):
        phi = np.array(self._model.joint_feature(X, y, **kwargs), dtype=np.float64)
        phi[-1] *= self._factor
        return phi


def _grid_losses(decode, loss, n) -> np.ndarray:
    """Losses of the decodings at ``n`` increasing penalties, decoding as few as possible.

    ``decode(j)`` is the optimal segmentation at the ``j``-th penalty. The
    optimal cost is the lower envelope of lines ``cost(y) + λ K(y)``, so a
    segmentation optimal at two penalties is optimal between them.
    """
    segs = [None] * n
    segs[0] = decode(0)
    segs[n - 1] = decode(n - 1) if n > 1 else segs[0]
    stack = [(0, n - 1)]
    while stack:
        a, b = stack.pop()
        if b - a < 2:
            continue
        if segs[a] == segs[b]:
            for j in range(a + 1, b):
                segs[j] = segs[a]
            continue
        m = (a + b) // 2
        segs[m] = decode(m)
        stack.extend(((a, m), (m, b)))
    cache = {}
    out = np.empty(n)
    for j, y in enumerate(segs):
        key = id(y)
        if key not in cache:
            cache[key] = float(loss(y))
        out[j] = cache[key]
    return out


def _disjoint_labels(labels) -> tuple:
    """Region labels (sorted, pairwise disjoint) and boundary labels outside them.

    Disjoint means no shared change index: ``[a, b)`` holds the change indices
    ``a+1 .. b-1``, so regions that share one sample (``[a, b)`` then
    ``[b-1, c)``, as revealed samples give) are disjoint. Overlapping labels
    are kept greedily by start; the dropped ones still constrain the
    completion, they are only left out of the augmented loss.
    """
    regions = sorted((l for l in labels if isinstance(l, RegionLabel)), key=lambda l: (l.start, l.stop))
    kept = []
    end = -1
    for lab in regions:
        if lab.start >= end - 1:
            kept.append(lab)
            end = lab.stop
    bounds = []
    for b in (l for l in labels if isinstance(l, BoundaryLabel)):
        if not any(r.start < b.index < r.stop for r in kept):
            bounds.append(b)
    return kept, bounds
