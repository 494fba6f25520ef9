"""Frank–Wolfe on the relaxed dual of the warping SSVM (Lajugie 2015, §5.4.3, eq. 5.13).

Primal (``n`` training pairs, ``λ = 1 / (C n)``, ``𝒲`` the cone of the model's
``project``, ``f_i`` the loss extended to the convex hull ``conv 𝒴_i`` of the
warpings of pair ``i``: linear for Hamming, concave for the area loss)::

    min_{w ∈ 𝒲}  λ/2 ‖w‖² + 1/n Σ_i max_{Z ∈ conv 𝒴_i} [ f_i(Z) - ⟨w, φ_i(Y_i) - φ_i(Z)⟩ ]

Swapping min and max (the inner objective is concave in ``Z``) gives the dual

    max_{Z_i ∈ conv 𝒴_i}  D(Z) = -‖P_𝒲(s)‖² / (2λ) + 1/n Σ_i f_i(Z_i),
    s = 1/n Σ_i ψ_i,  ψ_i = φ_i(Y_i) - φ_i(Z_i),  w = P_𝒲(s) / λ,

a concave maximisation over a product of polytopes. Its gradient in block
``i`` is ``(∇f_i(Z_i) - C_i(w)) / n`` with ``C_i(w)`` the DTW cell costs, so
the linear maximisation over ``conv 𝒴_i`` is one DTW with shifted costs (the
model's ``linear_oracle`` with the loss gradient at ``Z_i``, i.e.
``loss_augmented_decode(..., at=Z_i)``). Block-coordinate steps use
the exact line search (``D`` is quadratic along a segment when the projection
is inactive, a 1-d monotone root find otherwise) and the summed block gaps
give the duality-gap stopping rule. With the Hamming loss ``f_i`` is linear
and the blocks keep only ``ψ_i`` and ``f_i(Z_i)``; with the area loss they
also keep ``Z_i`` (TA × TB floats).
"""

from __future__ import annotations

import warnings

import numpy as np

from ..checks import check_int, check_scalar
from ..exceptions import ParameterError
from ..learners.ssvm import check_training_set, decode_each, unit_step_root
from .model import warping_matrix

__all__ = ["WarpingFrankWolfe"]


class _Block:
    """Dual state of one training pair: ``ψ_i``, ``f_i(Z_i)`` and (area loss) ``Z_i``."""

    __slots__ = ("psi", "f", "Z")

    def __init__(self, d, Z=None):
        self.psi = np.zeros(d)
        self.f = 0.0
        self.Z = Z


class WarpingFrankWolfe:
    """Learn a :class:`marginalia.sync.model.WarpingModel` metric by block-coordinate Frank–Wolfe.

    Parameters
    ----------
    model : WarpingModel
    C : float, default 1.0
        Trade-off: ``λ = 1 / (C n)``.
    max_iter : int, default 50
        Maximum number of passes over the pairs.
    tol : float, default 1e-3
        Stop when the duality gap of a pass is below ``tol · max(1, |primal bound|)``.
    averaging : bool, default False
        Return the weighted average ``w̄_k = k/(k+2) w̄_{k-1} + 2/(k+2) w_k`` of the iterates.
    random_state : int or Generator, optional
        Order of the blocks.
    callback : callable, optional
        ``callback(learner, iteration)`` after every pass.
    should_stop : callable, optional
        Checked before every block; when True the fit ends with the current ``w``.
    warm_start : bool, default False
        Keep the dual state of the previous :meth:`fit` (same pairs and targets)
        and continue from it; otherwise start from ``Z_i = Y_i`` (``w = 0``).

    Attributes
    ----------
    w_ : ndarray, shape (n_params,)
    loss_curve_ : list of float
        Upper bound on the optimal primal objective after each pass (dual + gap).
    dual_curve_ : list of float
        Dual objective ``D(Z)`` after each pass (a lower bound, non-decreasing).
    gap_curve_ : list of float
        Duality gap summed over the blocks of each pass.
    n_iter_ : int
    stopped_early_ : bool
    targets_ : list of Warping
    """

    def __init__(self, model, C=1.0, max_iter=50, tol=1e-3, averaging=False, random_state=None, callback=None,
                 should_stop=None, warm_start=False):
        self.model = model
        self.C = C
        self.max_iter = max_iter
        self.tol = tol
        self.averaging = averaging
        self.random_state = random_state
        self.callback = callback
        self.should_stop = should_stop
        self.warm_start = warm_start

    # ------------------------------------------------------------------ API
    def _check_params(self):
        for name in ("loss_gradient", "loss_curvature", "linear_oracle", "loss_augmented_decode", "joint_feature"):
            if not callable(getattr(self.model, name, None)):
                raise ParameterError(f"model: expected a WarpingModel-like object with {name}(), "
                                     f"got {type(self.model).__name__}")
        check_scalar(self.C, "C", float, min_val=0, include_boundaries="neither")
        check_int(self.max_iter, "max_iter", min_val=1)
        check_scalar(self.tol, "tol", float, min_val=0)

    def fit(self, Xs, Ys):
        """Learn ``w_`` from pairs ``Xs = [(A, B), ...]`` and their true warpings ``Ys``.

        ``Ys`` items may also be lists of :class:`marginalia.types.WarpAnchorLabel`,
        completed once by a DTW through the anchors (Euclidean, or the
        previous ``w_`` when warm starting). With few anchors the bridge loss
        of :class:`marginalia.learners.partial.PartialLabelSSVM` (the model's
        ``partial_loss="violations"``) learns better than these completions.

        Returns
        -------
        self
        """
        self._check_params()
        Xs, Ys = check_training_set(self.model, Xs, Ys, learner=type(self).__name__)
        model = self.model
        model.initial_w(Xs, Ys)  # validates the pairs and fixes n_features_
        w_prev = self.w_ if self.warm_start and hasattr(self, "w_") else None
        targets = [model.make_target(X, Y, w_prev) for X, Y in zip(Xs, Ys)]
        targets = [getattr(t, "completion", t) for t in targets]
        resume = (self.warm_start and getattr(self, "_blocks", None) is not None
                  and len(self._blocks) == len(Xs) and getattr(self, "targets_", None) == targets
                  and self._blocks[0].psi.shape[0] == model.n_params())
        if not resume:
            self._blocks = [_Block(model.n_params(), None if model.loss_is_linear else warping_matrix(t))
                            for t in targets]
        self.targets_ = targets
        self._solve(Xs, targets)
        return self

    def predict(self, Xs, constraints=None):
        """Decode every pair with ``w_`` (``constraints``: one per pair or None)."""
        return decode_each(self, Xs, constraints)

    # ------------------------------------------------------------ internals
    def _solve(self, Xs, targets):
        model = self.model
        n = len(Xs)
        lam = 1.0 / (float(self.C) * n)
        rng = np.random.default_rng(self.random_state)
        phi_true = [model.joint_feature(X, Y) for X, Y in zip(Xs, targets)]
        blocks = self._blocks
        s = sum(b.psi for b in blocks) / n
        w = model.project(s) / lam
        w_avg = w.copy()
        k = 0
        self.loss_curve_, self.dual_curve_, self.gap_curve_ = [], [], []
        self.stopped_early_ = False
        self.n_iter_ = 0
        for it in range(int(self.max_iter)):
            gap = 0.0
            for i in rng.permutation(n):
                if self.should_stop is not None and self.should_stop():
                    self.stopped_early_ = True
                    break
                b = blocks[i]
                Z = b.Z
                if Z is None:                       # linear loss: ⟨∇f, S - Z⟩ = f(S) - f(Z)
                    S = model.loss_augmented_decode(Xs[i], targets[i], w)
                    slope_f, curv, Delta = model.loss(targets[i], S) - b.f, 0.0, None
                else:                               # the loss-augmented DTW linearised at Z
                    G = model.loss_gradient(targets[i], Z)
                    S = model.linear_oracle(Xs[i], w, G)
                    Delta = warping_matrix(S)
                    Delta -= Z
                    slope_f = float(np.einsum("ij,ij->", G, Delta))  # not BLAS: threaded ddot stalls under load
                    curv = model.loss_curvature(Delta)
                psi_S = phi_true[i] - model.joint_feature(Xs[i], S)
                dpsi = psi_S - b.psi
                ds = dpsi / n
                g_i = (slope_f - float(w @ dpsi)) / n      # ⟨∇_i D, S - Z_i⟩ ≥ 0
                gap += g_i
                gamma = self._line_search(model, s, ds, lam, g_i, curv / n)
                if gamma > 0:
                    b.psi += gamma * dpsi
                    b.f += gamma * slope_f + 0.5 * gamma * gamma * curv
                    if Delta is not None:
                        Z += gamma * Delta
                    s = s + gamma * ds
                    w = model.project(s) / lam
                k += 1
                w_avg = (k / (k + 2.0)) * w_avg + (2.0 / (k + 2.0)) * w
            if self.stopped_early_ and k == 0:
                break
            ps = model.project(s)
            dual = -float(ps @ ps) / (2.0 * lam) + sum(b.f for b in blocks) / n
            if not (np.isfinite(dual) and np.all(np.isfinite(w))):
                raise ParameterError(f"{type(self).__name__}: the optimisation produced non-finite parameters; "
                                     "check the features for huge values")
            self.dual_curve_.append(dual)
            self.gap_curve_.append(gap)
            self.loss_curve_.append(dual + gap)
            self.n_iter_ = it + 1
            self.w_ = model.project(w_avg) if self.averaging else w.copy()
            if self.callback is not None:
                self.callback(self, it)
            if self.stopped_early_ or gap <= float(self.tol) * max(1.0, abs(dual + gap)):
                break
        if not hasattr(self, "w_") or self.n_iter_ == 0:
            self.w_ = w.copy()
        if not np.any(self.w_):
            warnings.warn(f"{type(self).__name__}.fit: the learned metric is zero (every path costs the same); the "
                          "features do not tell the true warpings apart (constant features?) or C is too small",
                          UserWarning, stacklevel=3)
        return self

    @staticmethod
    def _line_search(model, s, ds, lam, g0, curv) -> float:
        """Maximise ``D`` along the block's segment, ``γ ∈ [0, 1]``.

        ``D'(γ) = g0 - ⟨P(s + γ ds) - P(s), ds⟩ / λ + γ curv`` is non-increasing;
        when the projection is inactive it is affine and the root is closed form.
        """
        if g0 <= 0:
            return 0.0
        dd = float(ds @ ds) / lam - curv
        if dd <= 0:
            return 1.0
        p0 = model.project(s)

        def deriv(gamma):
            return g0 - float((model.project(s + gamma * ds) - p0) @ ds) / lam + gamma * curv

        return unit_step_root(deriv, min(1.0, g0 / dd), g0, bisections=50)
