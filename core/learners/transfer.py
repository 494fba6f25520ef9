"""Transfer between datasets: one parameter vector per dataset, pulled towards their mean (Lou et al. §1.5).

Objective (datasets ``d = 1..D``, sums over items)::

    min_{w_1..w_D, w}  Σ_d ‖w_d‖² / (2C) + ρ/2 Σ_d ‖w_d - w‖² + Σ_d Σ_{n ∈ d} H_n(w_d)

with ``H_n`` the margin-rescaled hinge of item ``n`` (as in
:class:`~core.learners.ssvm.SSVM`). Minimising over the shared ``w`` gives
``w = mean_d w_d``; the regulariser is then ``½ θᵀ (K ⊗ I) θ`` with
``K = I/C + ρ (I - 11ᵀ/D)``, whose inverse is explicit. The dual is solved
by block-coordinate Frank–Wolfe exactly as for one dataset, with
``w_d = Σ_d' K⁻¹_{dd'} u_d'`` (Lou eq. 1.10 in this parametrisation) and the
closed-form line search with curvature ``K⁻¹_{dd} ‖δ‖²``.

* ``ρ = 0``: independent SSVMs, one per dataset (each with ``C``);
* ``ρ → ∞``: one SSVM on the union of the datasets with ``C / D``.

The parameter cone of the model (non-negative metric, penalty) is applied
by projecting each ``w_d`` after optimisation (``w_raw_`` keeps the
unprojected solution); when the unconstrained optimum lies inside the cone
this is exact.
"""

from __future__ import annotations

import numpy as np

from ..exceptions import NotFittedError, ParameterError
from .ssvm import check_training_set

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
        As in :class:`~core.learners.ssvm.SSVM`.

    Attributes
    ----------
    w_ : ndarray, shape (n_params,)
        Shared component (mean of the per-dataset vectors), projected.
    w_datasets_ : dict
        Dataset key → projected parameter vector.
    gap_curve_ : list of float
    n_iter_ : int
    """

    def __init__(self, model, rho=1.0, C=1.0, max_iter=100, tol=1e-3, random_state=None, callback=None,
                 should_stop=None):
        self.model = model
        self.rho = rho
        self.C = C
        self.max_iter = max_iter
        self.tol = tol
        self.random_state = random_state
        self.callback = callback
        self.should_stop = should_stop

    def fit(self, Xs, Ys, datasets):
        """Learn from items ``Xs, Ys`` where ``datasets[i]`` names the dataset of item ``i``. Returns self."""
        rho = float(self.rho)
        if not (rho >= 0):
            raise ParameterError(f"rho: expected a number >= 0 (or inf), got {self.rho!r}")
        if not (np.isfinite(self.C) and self.C > 0):
            raise ParameterError(f"C: expected a positive finite number, got {self.C!r}")
        Xs, Ys = check_training_set(self.model, Xs, Ys, learner=type(self).__name__)
        datasets = list(datasets)
        if len(datasets) != len(Xs):
            raise ParameterError(f"datasets: expected {len(Xs)} dataset keys (one per item), got {len(datasets)}")
        keys = list(dict.fromkeys(datasets))
        D = len(keys)
        didx = np.array([keys.index(k) for k in datasets])
        model = self.model
        w0 = model.initial_w(Xs, Ys)
        targets = [model.make_target(X, Y, w0) for X, Y in zip(Xs, Ys)]
        phi_true = [model.joint_feature(X, tg) for X, tg in zip(Xs, targets)]
        d = phi_true[0].shape[0]
        C = float(self.C)
        P1 = np.full((D, D), 1.0 / D)
        if np.isinf(rho):
            Kinv = C * P1
        else:
            Kinv = C * P1 + (np.eye(D) - P1) / (1.0 / C + rho)
        n = len(Xs)
        u_blocks = np.zeros((n, d))
        l_blocks = np.zeros(n)
        U = np.zeros((D, d))
        W = Kinv @ U
        rng = np.random.default_rng(self.random_state)
        self.gap_curve_ = []
        self.n_iter_ = 0
        self.stopped_early_ = False
        for it in range(int(self.max_iter)):
            gap = 0.0
            for i in rng.permutation(n):
                if self.should_stop is not None and self.should_stop():
                    self.stopped_early_ = True
                    break
                k = didx[i]
                wk = W[k]
                y_hat = model.loss_augmented_decode(Xs[i], targets[i], model.project(wk))
                L = float(model.loss(targets[i], y_hat))
                psi = phi_true[i] - model.joint_feature(Xs[i], y_hat)
                delta = psi - u_blocks[i]
                g = (L - l_blocks[i]) - float(wk @ delta)
                gap += g
                curv = Kinv[k, k] * float(delta @ delta)
                if g <= 0 or curv <= 0:
                    continue
                gamma = min(1.0, g / curv)
                u_blocks[i] += gamma * delta
                l_blocks[i] += gamma * (L - l_blocks[i])
                U[k] += gamma * delta
                W += np.outer(Kinv[:, k], gamma * delta)
            self.gap_curve_.append(gap)
            self.n_iter_ = it + 1
            if self.callback is not None:
                self.callback(self, it)
            if self.stopped_early_ or gap <= float(self.tol) * max(1.0, abs(float(l_blocks.sum()))):
                break
        self.w_raw_ = {key: W[j].copy() for j, key in enumerate(keys)}
        self.w_datasets_ = {key: model.project(W[j]) for j, key in enumerate(keys)}
        self.w_ = model.project(W.mean(axis=0))
        return self

    def predict(self, Xs, datasets=None):
        """Decode each item with its dataset's parameters (the shared ones for unknown datasets)."""
        if not hasattr(self, "w_"):
            raise NotFittedError(f"{type(self).__name__}: call fit() before predict()")
        datasets = [None] * len(Xs) if datasets is None else list(datasets)
        return [self.model.decode(X, self.w_datasets_.get(k, self.w_)) for X, k in zip(Xs, datasets)]
