"""Warping model: a learned Mahalanobis cost for dynamic time warping (Lajugie 2015, ch. 5).

An item is a pair ``(A, B)`` of feature sequences (TA × p and TB × p); its
output is a :class:`marginalia.types.Warping`, encoded by the binary matrix ``Y``
(TA × TB) of the cells on the path. Matching ``a_i`` with ``b_j`` costs
``(a_i - b_j)ᵀ M (a_i - b_j)`` with ``M ⪰ 0`` (a non-negative diagonal or a
PSD matrix), so the score of a path is linear in ``M`` (Lajugie 2015, eq. 5.4)::

    φ(x, Y) = -Σ_{(i, j) ∈ Y} (a_i - b_j)(a_i - b_j)ᵀ      (squares only for a diagonal M)

and decoding is DTW with that cost.

Losses (``target`` the true path ``Y*``):

* ``"hamming"``: cells on exactly one path, linear in ``Y`` (eq. 5.5);
* ``"area"``: the symmetric area loss ``ℓ_S`` (eq. 5.7),
  ``½ (‖L_A (Y - Y*)‖² + ‖(Y - Y*) L_B‖²)`` with ``L_T`` the lower triangular
  matrix of ones. On binary matrices ``Y² = Y``, so subtracting
  ``½ Σ_ij (d_A + d_B) (Y_ij² - Y_ij)`` changes nothing there (eq. 5.8) but,
  with ``d_T = λ_max(L_Tᵀ L_T)``, makes the extension concave on the convex
  hull of the warpings. Its tangent at any point ``Z`` is linear in ``Y``,
  so the linearised loss-augmented problem is again a DTW, with the cell
  costs shifted by minus the gradient: the linear oracle of the Frank–Wolfe
  learner :class:`marginalia.sync.frank_wolfe.WarpingFrankWolfe`.

Parameter vector ``w``: the diagonal of ``M`` (``p``) or ``vec(M)`` (``p²``).
"""

from __future__ import annotations

import math

import numba
import numpy as np

from ..checks import check_choice, check_int, check_scalar
from ..exceptions import ParameterError
from ..features.standardize import check_features
from ..models._params import check_param_vector, n_features_of
from ..models.segmentation import PartialTarget
from ..types import WarpAnchorLabel, Warping

__all__ = ["WarpingModel", "warping_matrix", "area_curvature_bound"]


def _dec():
    from ..decoders import warping as wdec
    return wdec


def warping_matrix(y: Warping, dtype=np.float64) -> np.ndarray:
    """Binary matrix ``Y`` (TA, TB) of the cells on a warping path."""
    if not isinstance(y, Warping):
        raise ParameterError(f"y: expected a Warping, got {type(y).__name__}")
    Y = np.zeros(y.shape, dtype=dtype)
    Y[y.path[:, 0], y.path[:, 1]] = 1
    return Y


def area_curvature_bound(n: int) -> float:
    """``λ_max(Lᵀ L)`` for the ``n × n`` lower triangular matrix of ones ``L``.

    ``(Lᵀ L)⁻¹`` is the path-graph Laplacian with one free end, whose
    eigenvalues are ``2 - 2 cos((2k - 1) π / (2n + 1))``; the smallest gives
    ``λ_max = 1 / (4 sin²(π / (2 (2n + 1))))`` (≈ ``0.405 n²``).
    """
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 1:
        raise ParameterError(f"n: expected an integer >= 1, got {n!r}")
    return 1.0 / (4.0 * math.sin(math.pi / (2.0 * (2 * int(n) + 1))) ** 2)


@numba.njit(cache=True, nogil=True)
def _area_quadratic(E):
    """``||L_A E||_F^2 + ||E L_B||_F^2`` in one pass (column prefix sums, row suffix sums)."""
    TA, TB = E.shape
    col = np.zeros(TB)
    total = 0.0
    for i in range(TA):
        run = 0.0
        for j in range(TB - 1, -1, -1):
            run += E[i, j]
            total += run * run
        for j in range(TB):
            col[j] += E[i, j]
            total += col[j] * col[j]
    return total


@numba.njit(cache=True, nogil=True)
def _area_gradient(E, Z, d, out):
    """``out = L_Aᵀ L_A E + E L_B L_Bᵀ - d/2 (2 Z - 1)``, the gradient of the concave extension."""
    TA, TB = E.shape
    for j in range(TB):
        out[0, j] = E[0, j]
    for i in range(1, TA):                 # P = L_A E (prefix sums down the columns)
        for j in range(TB):
            out[i, j] = out[i - 1, j] + E[i, j]
    for i in range(TA - 2, -1, -1):        # L_Aᵀ P (suffix sums of P)
        for j in range(TB):
            out[i, j] += out[i + 1, j]
    row = np.empty(TB)
    for i in range(TA):
        run = 0.0
        for j in range(TB - 1, -1, -1):    # F = E L_B (row suffix sums)
            run += E[i, j]
            row[j] = run
        run = 0.0
        for j in range(TB):                # F L_Bᵀ (row prefix sums of F)
            run += row[j]
            out[i, j] += run - 0.5 * d * (2.0 * Z[i, j] - 1.0)


class WarpingModel:
    """Joint feature map, losses and decoders of metric learning for DTW.

    Parameters
    ----------
    metric : {"diagonal", "full"}
        Learn non-negative feature weights or a PSD matrix ``M``.
    loss : {"hamming", "area"}
        Hamming loss between binary warping matrices or the symmetric area
        loss (see the module docstring).
    band : None, float in (0, 1] or int
        Sakoe–Chiba band of every DTW (see :func:`marginalia.decoders.warping.band_limits`).
    partial_loss : {"violations", "completion"}
        Loss against a :class:`PartialTarget` (anchor labels): the number of
        anchor cells the path misses (linear in ``Y``, so the loss-augmented
        DTW is exact; what :class:`marginalia.learners.partial.PartialLabelSSVM`'s
        bridge loss needs), or ``loss`` against the labels' completion.

    Attributes
    ----------
    n_features_ : int
        ``p``, set by :meth:`initial_w` or the first item seen.
    """

    task = "warping"

    def __init__(self, metric="diagonal", loss="hamming", band=None, partial_loss="violations"):
        check_choice(metric, "metric", ("diagonal", "full"))
        check_choice(loss, "loss", ("hamming", "area"))
        if band is not None:
            _dec().band_limits(2, 2, band)  # validates the type and range of band
        check_choice(partial_loss, "partial_loss", ("violations", "completion"))
        self.metric = metric
        self.loss_name = loss
        self.band = band
        self.partial_loss = partial_loss

    # ------------------------------------------------------------ sizes
    def get_params(self) -> dict:
        return dict(metric=self.metric, loss=self.loss_name, band=self.band, partial_loss=self.partial_loss)

    def get_state(self) -> dict:
        return {}

    def set_state(self, state: dict, n_features: int) -> "WarpingModel":
        self.n_features_ = check_int(n_features, "n_features", min_val=1)
        return self

    @property
    def loss_is_linear(self) -> bool:
        """True when the loss is linear in ``Y`` (no relaxation needed)."""
        return self.loss_name == "hamming"

    def _p(self, n_features=None) -> int:
        return n_features_of(self, n_features, first="initial_w(items)")

    def n_params(self, n_features=None) -> int:
        """Length of ``w``: ``p`` (diagonal) or ``p²`` (full)."""
        p = self._p(n_features)
        return p if self.metric == "diagonal" else p * p

    def check_w(self, w, name="w") -> np.ndarray:
        return check_param_vector(w, self.n_params(), name)

    def _check_item(self, item, name="x") -> tuple:
        try:
            A, B = item
        except (TypeError, ValueError):
            raise ParameterError(f"{name}: expected a pair (A, B) of feature sequences (TA, p) and (TB, p)") from None
        A = check_features(A, f"{name}.A")
        B = check_features(B, f"{name}.B")
        if B.shape[1] != A.shape[1]:
            raise ParameterError(f"{name}.B: has {B.shape[1]} features per frame, expected {A.shape[1]} like A")
        if hasattr(self, "n_features_") and A.shape[1] != self.n_features_:
            raise ParameterError(f"{name}: expected {self.n_features_} features (as the model), got {A.shape[1]}")
        self.n_features_ = A.shape[1]
        return A, B

    # ------------------------------------------------------------ parameters
    def split_w(self, w) -> np.ndarray:
        """``M`` as weights (p,) (diagonal) or a matrix (p, p) (full)."""
        w = self.check_w(w)
        p = self._p()
        return w.copy() if self.metric == "diagonal" else w.reshape(p, p).copy()

    def join_w(self, M) -> np.ndarray:
        """Parameter vector from ``M`` ((p,) weights or a (p, p) matrix)."""
        M = np.asarray(M, dtype=np.float64)
        p = self._p()
        if self.metric == "diagonal":
            if M.shape == (p, p):
                M = np.diag(M)
            if M.shape != (p,):
                raise ParameterError(f"M: expected shape ({p},) or ({p}, {p}), got {M.shape}")
            return M.copy()
        if M.shape == (p,):
            M = np.diag(M)
        if M.shape != (p, p):
            raise ParameterError(f"M: expected shape ({p}, {p}) or ({p},), got {M.shape}")
        return M.reshape(-1).copy()

    def project(self, w) -> np.ndarray:
        """Euclidean projection onto ``M ⪰ 0``: clip the weights, or the eigenvalues of the symmetric part."""
        w = np.array(w, dtype=np.float64)
        if self.metric == "diagonal":
            return np.maximum(w, 0.0)
        p = self._p()
        M = w.reshape(p, p)
        M = 0.5 * (M + M.T)
        vals, vecs = np.linalg.eigh(M)
        return ((vecs * np.maximum(vals, 0.0)) @ vecs.T).reshape(-1)

    def metric_matrix(self, w) -> np.ndarray:
        """``M`` (p, p) (projected onto the PSD cone)."""
        M = self.split_w(self.project(self.check_w(w)))
        return np.diag(M) if self.metric == "diagonal" else M

    def normalized_metric(self, w) -> np.ndarray:
        """``M / trace(M)`` (zeros when ``M = 0``): the share of every coordinate on the diagonal."""
        M = self.metric_matrix(w)
        t = float(np.trace(M))
        return M / t if t > 0 else np.zeros_like(M)

    def decoder_metric(self, w):
        """The decoders' ``metric``: weights ``sqrt(m)`` (p,) or ``L`` (q, p) with ``LᵀL = M``."""
        M = self.split_w(self.project(self.check_w(w)))
        if self.metric == "diagonal":
            return np.sqrt(M)
        vals, vecs = np.linalg.eigh(M)
        keep = vals > 1e-12 * max(1.0, float(np.abs(vals).max()))
        if not np.any(keep):
            return np.zeros((1, M.shape[0]))
        return (vecs[:, keep] * np.sqrt(vals[keep])).T

    def initial_w(self, items, Ys=None) -> np.ndarray:
        """Euclidean DTW: ``M = I``."""
        self._check_items(items)
        return self.join_w(np.ones(self._p()))

    def _check_items(self, items) -> None:
        """At least one item, each a valid ``(A, B)`` pair (named ``items[i]`` in errors)."""
        items = list(items)
        if not items:
            raise ParameterError("items: expected at least one (A, B) pair, got none")
        for i, it in enumerate(items):
            self._check_item(it, f"items[{i}]")

    def default_w(self, items=None) -> np.ndarray:
        if not hasattr(self, "n_features_"):
            return self.initial_w(items or [])
        return self.join_w(np.ones(self._p()))

    # ------------------------------------------------------------ feature map
    def _warping(self, y, TA, TB) -> Warping:
        if isinstance(y, PartialTarget):
            y = y.completion
        if not isinstance(y, Warping):
            raise ParameterError(f"y: expected a Warping, got {type(y).__name__}")
        if y.shape != (TA, TB):
            raise ParameterError(f"y: warps a {y.shape[0]} x {y.shape[1]} grid, expected {TA} x {TB}")
        return y

    def joint_feature(self, item, y) -> np.ndarray:
        """``φ(x, y)`` for a path ``y`` (Warping), shape (n_params,)."""
        A, B = self._check_item(item)
        y = self._warping(y, A.shape[0], B.shape[0])
        D = A[y.path[:, 0]] - B[y.path[:, 1]]
        if self.metric == "diagonal":
            return -np.einsum("lk,lk->k", D, D)
        return -(D.T @ D).reshape(-1)

    def joint_feature_relaxed(self, item, Z) -> np.ndarray:
        """``φ`` extended linearly to any matrix ``Z`` (TA, TB), e.g. a point of the convex hull."""
        A, B = self._check_item(item)
        Z = self._check_Z(Z, A.shape[0], B.shape[0])
        ra, cb = Z.sum(axis=1), Z.sum(axis=0)
        cross = A.T @ (Z @ B)                              # Σ_ij Z_ij a_i b_jᵀ, (p, p)
        if self.metric == "diagonal":
            return -(ra @ (A * A) + cb @ (B * B) - 2.0 * np.diag(cross))
        return -((A.T * ra) @ A + (B.T * cb) @ B - cross - cross.T).reshape(-1)

    def score(self, item, y, w) -> float:
        """``⟨w, φ(x, y)⟩``: minus the cost of the path."""
        return float(self.check_w(w) @ self.joint_feature(item, y))

    def cost_matrix(self, item, w) -> np.ndarray:
        """Cell costs ``(a_i - b_j)ᵀ M (a_i - b_j)``, shape (TA, TB)."""
        A, B = self._check_item(item)
        return _dec().pairwise_cost(A, B, metric=self.decoder_metric(w))

    # ------------------------------------------------------------ targets
    def constraints(self, labels, n_a, n_b):
        """Anchor cells from :class:`WarpAnchorLabel` labels (``None`` when there are none)."""
        labels = list(labels or [])
        if not labels:
            return None
        return _dec().warping_constraints_from_labels(labels, n_a, n_b)

    def make_target(self, item, y, w=None):
        """A Warping stays; anchor labels become a :class:`PartialTarget` completed by a constrained DTW."""
        A, B = self._check_item(item)
        if isinstance(y, Warping):
            return self._warping(y, A.shape[0], B.shape[0])
        if isinstance(y, PartialTarget):
            if w is None:
                return y
            labels = y.labels
        else:
            labels = tuple(y)
            for lab in labels:
                if not isinstance(lab, WarpAnchorLabel):
                    raise ParameterError(f"y: expected a Warping or WarpAnchorLabel items, got {type(lab).__name__}")
        if w is None:
            w = self.default_w([item])
        comp = self.decode(item, w, constraints=self.constraints(labels, A.shape[0], B.shape[0]))
        return PartialTarget(tuple(labels), comp, A.shape[0])

    # ------------------------------------------------------------ decoding
    def decode(self, item, w, constraints=None) -> Warping:
        """Cheapest path under ``M`` (through the anchor cells of ``constraints``)."""
        A, B = self._check_item(item)
        return _dec().dtw(A, B, metric=self.decoder_metric(w), band=self.band, constraints=constraints).warping

    def second_best(self, item, w, constraints=None) -> tuple:
        """``(best, second)`` paths; ``second`` is None when only one path exists."""
        A, B = self._check_item(item)
        best, second = _dec().dtw_second_best(A, B, metric=self.decoder_metric(w), band=self.band,
                                              constraints=constraints)
        return best.warping, (None if second is None else second.warping)

    def linear_oracle(self, item, w, gain) -> Warping:
        """``argmax_Y ⟨w, φ(x, Y)⟩ + ⟨gain, Y⟩`` over paths: a DTW with costs ``C(M) - gain``.

        Parameters
        ----------
        gain : array_like, shape (TA, TB)
        """
        A, B = self._check_item(item)
        gain = self._check_Z(gain, A.shape[0], B.shape[0], "gain")
        return _dec().dtw_linear(A, B, -gain, metric=self.decoder_metric(w), band=self.band).warping

    def loss_augmented_decode(self, item, target, w, *, loss_scale=1.0, at=None) -> Warping:
        """``argmax_Y loss_scale · ℓ(Y) + ⟨w, φ(x, Y)⟩``.

        Exact for the Hamming loss. For the area loss:

        * ``at`` given (a (TA, TB) point of the convex hull): ``ℓ`` is the
          tangent of the concave extension at ``at``, an upper bound of the
          area loss on every path; one DTW (the Frank–Wolfe linear oracle).
          At the target itself the tangent is ``d/2 · Hamming``
          (``d = d_A + d_B``).
        * ``at=None``: the area loss itself. On paths it equals the convex
          quadratic ``q(Y - Y*)`` of eq. 5.7, so the objective is convex in
          ``Y`` and every linearisation bounds it from below: repeated DTWs
          on the linearised loss (DC / convex-maximisation ascent) climb to
          a local maximum. Two starts (the prediction and the Hamming-tangent
          path), the better kept; not guaranteed globally optimal.
        """
        A, B = self._check_item(item)
        c = check_scalar(loss_scale, "loss_scale", float, min_val=0)
        metric = self.decoder_metric(w)
        if isinstance(target, PartialTarget) and self.partial_loss == "violations":
            # cost - c · (missed anchors) = cost + c · (anchors on the path) - c K
            offset = np.zeros((A.shape[0], B.shape[0]))
            for ta, tb in self._anchor_cells(target.labels, A.shape[0], B.shape[0]):
                offset[ta, tb] = c
            return _dec().dtw_linear(A, B, offset, metric=metric, band=self.band).warping
        truth = self._warping(target, A.shape[0], B.shape[0])
        if self.loss_is_linear:
            return _dec().dtw_loss_augmented(A, B, truth, loss_scale=c, metric=metric, band=self.band).warping
        if at is not None:
            G = self.loss_gradient(truth, at)
            return _dec().dtw_linear(A, B, -c * G, metric=metric, band=self.band).warping
        return self._area_ascent(A, B, truth, metric, c)

    def _area_ascent(self, A, B, truth, metric, c, max_steps=20) -> Warping:
        """Local maximum of ``c · ℓ_S(Y, Y*) - cost(Y)`` by successive linearisations of the convex ``ℓ_S``."""
        dec = _dec()
        C = dec.pairwise_cost(A, B, metric=metric)
        Ys = warping_matrix(truth)

        def value(y):
            return c * dec.warping_area_loss(truth, y) - float(C[y.path[:, 0], y.path[:, 1]].sum())

        tangent = self.loss_gradient(truth, Ys) if c > 0 else np.zeros_like(C)  # d/2 Hamming at the truth
        # the tangent (d/2 Hamming) overshoots the area of a path near the truth (~(TA + TB)/4 per
        # cell off the truth); a milder Hamming start reaches other local maxima
        mild = tangent * ((C.shape[0] + C.shape[1]) / (2.0 * self._diag_curvature(C.shape)))
        starts = [dec.dtw_from_cost(C, band=self.band).warping,
                  dec.dtw_from_cost(C - c * tangent, band=self.band).warping,
                  dec.dtw_from_cost(C - c * mild, band=self.band).warping]
        best, best_v = None, -np.inf
        for y in starts:
            v = value(y)
            for _ in range(max_steps if c > 0 else 0):
                G = np.empty_like(C)
                _area_gradient(warping_matrix(y) - Ys, Ys, 0.0, G)  # d = 0: the gradient of q alone
                nxt = dec.dtw_from_cost(C - c * G, band=self.band).warping
                nv = value(nxt)
                if nv <= v + 1e-12 * max(1.0, abs(v)):
                    break
                y, v = nxt, nv
            if v > best_v:
                best, best_v = y, v
        return best

    # ------------------------------------------------------------ losses
    @staticmethod
    def _anchor_cells(labels, TA, TB) -> set:
        anchor_cell = _dec().anchor_cell
        return {anchor_cell(lab, TA, TB) for lab in labels}

    def violations(self, labels, y: Warping) -> int:
        """Number of distinct anchor cells of ``labels`` the path ``y`` misses."""
        TA, TB = y.shape
        on_path = {(int(i), int(j)) for i, j in y.path}
        return sum(cell not in on_path for cell in self._anchor_cells(labels, TA, TB))

    def loss(self, target, y_hat: Warping) -> float:
        """Hamming or symmetric area loss of the path ``y_hat`` against the target path.

        Against a :class:`PartialTarget` with ``partial_loss="violations"``:
        the number of anchor cells ``y_hat`` misses.
        """
        if isinstance(target, PartialTarget) and self.partial_loss == "violations":
            return float(self.violations(target.labels, y_hat))
        truth = target.completion if isinstance(target, PartialTarget) else target
        if not isinstance(truth, Warping):
            raise ParameterError(f"target: expected a Warping, got {type(truth).__name__}")
        y_hat = self._warping(y_hat, *truth.shape)
        if self.loss_name == "hamming":
            return float(_dec().warping_hamming(truth, y_hat))
        return float(_dec().warping_area_loss(truth, y_hat))

    @staticmethod
    def _check_Z(Z, TA, TB, name="Z") -> np.ndarray:
        try:
            Z = np.asarray(Z, dtype=np.float64)
        except (TypeError, ValueError) as exc:
            raise ParameterError(f"{name}: expected a ({TA}, {TB}) array of floats ({exc})") from None
        if Z.shape != (TA, TB):
            raise ParameterError(f"{name}: expected shape ({TA}, {TB}), got {Z.shape}")
        if not np.all(np.isfinite(Z)):
            raise ParameterError(f"{name}: contains NaN or inf")
        return Z

    def _truth_and_Z(self, target, Z):
        truth = target.completion if isinstance(target, PartialTarget) else target
        if not isinstance(truth, Warping):
            raise ParameterError(f"target: expected a Warping, got {type(truth).__name__}")
        return truth, self._check_Z(Z, *truth.shape)

    def _diag_curvature(self, shape) -> np.ndarray:
        """``d_A + d_B`` of the concave extension."""
        return area_curvature_bound(shape[0]) + area_curvature_bound(shape[1])

    def relaxed_loss(self, target, Z) -> float:
        """The loss extended to a matrix ``Z`` (TA, TB): linear (Hamming) or concave (area, eq. 5.8).

        Equals :meth:`loss` when ``Z`` is the matrix of a path.
        """
        truth, Z = self._truth_and_Z(target, Z)
        Ys = warping_matrix(truth)
        if self.loss_is_linear:
            return float(np.sum(Z * (1.0 - 2.0 * Ys)) + Ys.sum())
        quad = 0.5 * _area_quadratic(np.ascontiguousarray(Z - Ys))
        return float(quad - 0.5 * self._diag_curvature(Z.shape) * np.sum(Z * Z - Z))

    def loss_gradient(self, target, Z) -> np.ndarray:
        """Gradient of :meth:`relaxed_loss` at ``Z``, shape (TA, TB)."""
        truth, Z = self._truth_and_Z(target, Z)
        Ys = warping_matrix(truth)
        if self.loss_is_linear:
            return 1.0 - 2.0 * Ys
        Z = np.ascontiguousarray(Z)
        G = np.empty_like(Z)
        _area_gradient(Z - Ys, Z, self._diag_curvature(Z.shape), G)
        return G

    def loss_curvature(self, Delta) -> float:
        """Second derivative of :meth:`relaxed_loss` along ``Delta`` (TA, TB); ≤ 0 (0 for Hamming)."""
        Delta = np.asarray(Delta, dtype=np.float64)
        if Delta.ndim != 2:
            raise ParameterError(f"Delta: expected a (TA, TB) matrix, got shape {Delta.shape}")
        if self.loss_is_linear:
            return 0.0
        q = _area_quadratic(np.ascontiguousarray(Delta))
        return float(q - self._diag_curvature(Delta.shape) * np.sum(Delta * Delta))
