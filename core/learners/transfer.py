"""Transfer between datasets: one parameter vector per dataset, pulled towards their mean (Lou et al. 2014, §1.5).

Objective (datasets ``d = 1..D``, sums over items)::

    min_{w_1..w_D ∈ 𝒲, w}  Σ_d ‖w_d‖² / (2C) + Σ_j ρ_j/2 Σ_d (w_dj - w_j)² + Σ_d Σ_{n ∈ d} H_n(w_d)

with ``H_n`` the margin-rescaled hinge of item ``n`` (as in
:class:`~marginalia.learners.ssvm.SSVM`), ``𝒲`` the model's parameter cone and
``ρ_j = rho`` except for the ``uncoupled`` coordinates (``ρ_j = 0``: each
dataset keeps its own value, e.g. its own change penalty). Minimising over
the shared ``w`` gives ``w = mean_d w_d``; the regulariser is then
``Σ_j ½ θ_jᵀ K_j θ_j`` with ``K_j = I/C + ρ_j (I - 11ᵀ/D)``
(:mod:`~marginalia.learners.transfer_coupling`). The dual (Lou et al. 2014, eq. 1.10 in this
parametrisation) is solved by block-coordinate Frank–Wolfe as for one
dataset: the primal vectors are the maximiser of ``⟨Θ, U⟩ - R(Θ)`` over the
cone (closed form for a non-negative orthant), and the step along a block's
Frank–Wolfe direction is an exact line search.

* ``ρ = 0``: independent SSVMs, one per dataset (each with ``C``);
* ``ρ → ∞``: one SSVM on the union of the datasets with ``C / D``.

For a model whose cone is not an orthant (full PSD metric) the dual is
solved without the cone and each ``w_d`` is projected at the end
(``w_raw_`` keeps the unprojected solution); that is exact when the
unconstrained optimum lies inside the cone.
"""

from __future__ import annotations

import numpy as np

from ..checks import check_int, check_scalar
from ..exceptions import NotFittedError, ParameterError
from .ssvm import _feature_stats, _orthant_projection, check_training_set
from .transfer_coupling import coupled_argmax, coupled_penalty, coupling_strengths

__all__ = ["TransferSSVM"]


class TransferSSVM:
    """Multi-dataset structured SVM with coupling ``rho``.

    Parameters
    ----------
    model : object
        Shared model (feature map, losses, decoders).
    rho : float, default 1.0
        Coupling strength (``0``: independent, ``inf``: union).
    C : float, default 1.0
    max_iter, tol, random_state, callback, should_stop
        As in :class:`~marginalia.learners.ssvm.SSVM`.
    averaging : bool, default True
        Return the weighted average ``w̄_k = k/(k+2) w̄_{k-1} + 2/(k+2) w_k``
        of the iterates, as :class:`~marginalia.learners.ssvm.SSVM` does by default
        (after a few passes the last iterate still jumps between vertices).
    uncoupled : sequence of int, optional
        Coordinates of ``w`` that are not coupled (``ρ_j = 0``): each dataset
        learns its own, e.g. ``[-1]`` for the change penalty of a
        :class:`~marginalia.models.segmentation.SegmentationModel`.

    Attributes
    ----------
    w_ : ndarray, shape (n_params,)
        Shared component (mean of the per-dataset vectors), projected.
    w_datasets_ : dict
        Dataset key → projected parameter vector.
    w_raw_ : dict
        Dataset key → the vector before the final projection (equal to
        ``w_datasets_`` when the cone is handled during optimisation).
    loss_curve_ : list of float
        Primal objective estimated during each pass.
    gap_curve_ : list of float
        Duality gap estimated during each pass.
    n_iter_ : int
    """

    def __init__(self, model, rho=1.0, C=1.0, max_iter=100, tol=1e-3, random_state=None, callback=None,
                 should_stop=None, averaging=True, uncoupled=None):
        self.model = model
        self.rho = rho
        self.C = C
        self.max_iter = max_iter
        self.tol = tol
        self.random_state = random_state
        self.callback = callback
        self.should_stop = should_stop
        self.averaging = averaging
        self.uncoupled = uncoupled

    def _check_params(self):
        try:
            rho = float(self.rho)
        except (TypeError, ValueError):
            rho = float("nan")
        if not (rho >= 0):
            raise ParameterError(f"rho: expected a number >= 0 (or inf), got {self.rho!r}")
        check_scalar(self.C, "C", float, min_val=0, include_boundaries="neither")
        check_int(self.max_iter, "max_iter", min_val=1)
        check_scalar(self.tol, "tol", float, min_val=0)
        return rho

    def fit(self, Xs, Ys, datasets, *, w_init=None):
        """Learn from items ``Xs, Ys`` where ``datasets[i]`` names the dataset of item ``i``. Returns self.

        Parameters
        ----------
        Xs : list of ndarray
            Item inputs (e.g. (T_i, p) feature matrices).
        Ys : list
            Targets (full structures or partial label lists).
        datasets : sequence of hashable, length len(Xs)
        w_init : ndarray, shape (n_params,), optional
            Parameters that complete partial targets. By default the model's
            ``initial_w(Xs, Ys)`` (which also fits its units); when given, the
            model's units are kept as they are (several fits on the same
            units share one ``initial_w``, e.g. a grid of ``rho``).
        """
        rho = self._check_params()
        Xs, Ys = check_training_set(self.model, Xs, Ys, learner=type(self).__name__)
        datasets = list(datasets)
        if len(datasets) != len(Xs):
            raise ParameterError(f"datasets: expected {len(Xs)} dataset keys (one per item), got {len(datasets)}")
        keys = list(dict.fromkeys(datasets))
        didx = np.array([keys.index(k) for k in datasets])
        model = self.model
        w0 = model.initial_w(Xs, Ys) if w_init is None else model.check_w(w_init, "w_init")
        targets = [model.make_target(X, Y, w0) for X, Y in zip(Xs, Ys)]
        phi_true = [model.joint_feature(X, tg) for X, tg in zip(Xs, targets)]
        rhos = coupling_strengths(rho, phi_true[0].shape[0], self.uncoupled)
        nonneg = _orthant_projection(model)
        Theta, W = self._solve(Xs, targets, phi_true, didx, len(keys), rhos, nonneg)
        self.w_raw_ = {key: W[j].copy() for j, key in enumerate(keys)}
        self.w_datasets_ = {key: model.project(W[j]) for j, key in enumerate(keys)}
        self.w_ = model.project(W.mean(axis=0))
        return self

    def _solve(self, Xs, targets, phi_true, didx, D, rhos, nonneg):
        """Block-coordinate Frank–Wolfe on the dual; returns the last and the returned iterate (D, P)."""
        model = self.model
        C = float(self.C)
        n, P = len(Xs), phi_true[0].shape[0]
        stats = [_feature_stats(model, X) for X in Xs]
        u_blocks = np.zeros((n, P))
        l_blocks = np.zeros(n)
        U = np.zeros((D, P))
        Theta = coupled_argmax(U, C, rhos, nonneg)
        avg = Theta.copy()
        steps = 0
        rng = np.random.default_rng(self.random_state)
        self.loss_curve_, self.gap_curve_ = [], []
        self.n_iter_ = 0
        self.stopped_early_ = False
        for it in range(int(self.max_iter)):
            gap = hinge = 0.0
            for i in rng.permutation(n):
                if self.should_stop is not None and self.should_stop():
                    self.stopped_early_ = True
                    break
                k = didx[i]
                wk = Theta[k]
                y_hat = model.loss_augmented_decode(Xs[i], targets[i], model.project(wk))
                L = float(model.loss(targets[i], y_hat))
                phi = model.joint_feature(Xs[i], y_hat) if stats[i] is None else \
                    model.joint_feature(Xs[i], y_hat, stats=stats[i])
                psi = phi_true[i] - phi
                hinge += max(0.0, L - float(wk @ psi))
                delta = psi - u_blocks[i]
                dl = L - l_blocks[i]
                g = dl - float(wk @ delta)
                gap += g
                gamma = _line_search(U, k, delta, dl, g, C, rhos, nonneg)
                if gamma > 0:
                    u_blocks[i] += gamma * delta
                    l_blocks[i] += gamma * dl
                    U[k] += gamma * delta
                    Theta = coupled_argmax(U, C, rhos, nonneg)
                steps += 1
                avg = (steps / (steps + 2.0)) * avg + (2.0 / (steps + 2.0)) * Theta
            primal = coupled_penalty(Theta, C, rhos) + hinge
            if not (np.isfinite(primal) and np.all(np.isfinite(Theta))):
                raise ParameterError(f"{type(self).__name__}: the optimisation produced non-finite parameters; "
                                     "check the features for huge values")
            self.loss_curve_.append(primal)
            self.gap_curve_.append(gap)
            self.n_iter_ = it + 1
            if self.callback is not None:
                self.callback(self, it)
            if self.stopped_early_ or gap <= float(self.tol) * max(1.0, primal):
                break
        return Theta, (avg if self.averaging else Theta)

    def predict(self, Xs, datasets=None):
        """Decode each item with its dataset's parameters (the shared ones for unknown datasets)."""
        if not hasattr(self, "w_"):
            raise NotFittedError(f"{type(self).__name__}: call fit() before predict()")
        datasets = [None] * len(Xs) if datasets is None else list(datasets)
        return [self.model.decode(X, self.w_datasets_.get(k, self.w_)) for X, k in zip(Xs, datasets)]


def _line_search(U, k, delta, dl, g, C, rhos, nonneg) -> float:
    """Exact step ``γ ∈ [0, 1]`` maximising the dual along block direction ``delta`` of dataset ``k``.

    The derivative ``dl - ⟨Θ_k(U + γ δ e_k), δ⟩`` is non-increasing and
    piecewise linear in ``γ`` (linear without the cone): take the step of the
    current piece, and when the cone changes the free set on the way, find
    the root by bracketing secant steps.
    """
    if g <= 0:
        return 0.0
    D = U.shape[0]
    fin = np.isfinite(rhos)
    a = 1.0 / C + rhos[fin]
    slope = np.full(rhos.shape, C / D)               # ∂Θ_kj / ∂U_kj
    if nonneg:
        # on the current piece: 0 for a coordinate at the cone's face, else the free set's inverse diagonal
        Theta = coupled_argmax(U, C, rhos, True)
        m = np.count_nonzero(Theta > 0, axis=0)[fin]
        b = rhos[fin] / D
        slope[fin] = (1.0 + b / np.maximum(a - b * m, 1e-300)) / a
        slope[Theta[k] <= 0] = 0.0
    else:
        slope[fin] += (1.0 - 1.0 / D) / a
    curv = float(np.sum(slope * delta * delta))
    if curv <= 0:
        if not nonneg:
            return 0.0
        gamma = 1.0
    else:
        gamma = min(1.0, g / curv)
    if not nonneg:
        return gamma

    def deriv(t):
        V = U.copy()
        V[k] += t * delta
        return dl - float(coupled_argmax(V, C, rhos, True)[k] @ delta)

    h = deriv(gamma)
    tol = 1e-10 * (abs(g) + abs(dl) + 1e-300)
    if abs(h) <= tol or (gamma == 1.0 and h >= 0):
        return gamma
    h1 = h if gamma == 1.0 else deriv(1.0)
    if h1 >= 0:
        return 1.0
    lo, hi, hlo, hhi = 0.0, 1.0, g, h1
    if h > 0:
        lo, hlo = gamma, h
    else:
        hi, hhi = gamma, h
    side = 0
    for _ in range(60):
        # secant steps (exact once both ends lie on the root's linear piece), bisection after two on one side
        t = lo + (hi - lo) * hlo / (hlo - hhi) if abs(side) < 2 else 0.5 * (lo + hi)
        if not (lo < t < hi):
            t = 0.5 * (lo + hi)
        ht = deriv(t)
        if abs(ht) <= tol or hi - lo <= 1e-12:
            return t
        if ht > 0:
            lo, hlo, side = t, ht, (side + 1 if side >= 0 else 1)
        else:
            hi, hhi, side = t, ht, (side - 1 if side <= 0 else -1)
        if abs(side) > 2:
            side = 0
    return 0.5 * (lo + hi)
