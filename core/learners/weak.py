"""Weakly supervised audio-to-score alignment from the score alone (Lajugie 2015, ch.6).

Training data: audio features ``X_i`` (T_i × p), score templates ``Φ_i``
(E_i × K) and the *expected* alignment ``Ȳ_i`` (the score played strictly in
time). Neither the true alignments nor the per-class scorers are known. With
the square surrogate of the Hamming loss and ridge scorers ``W`` (p+1 × K, the
last row a bias on a constant column ``α``), eliminating ``W`` leaves a
convex quadratic in the assignments (Lajugie 2015, eq. 6.12, 6.18)::

    F(Y) = Tr(Zᵀ B Z) + 1/N Σ_i [ μ ‖Y_i L - Ȳ_i L‖² + ν/T_i ‖1ᵀ(Y_i - Ȳ_i)‖² ]
    Z = [Y_1 Φ_1; ...; Y_N Φ_N],   B = 1/N (I - X̃ (X̃ᵀX̃ + Nλ I)⁻¹ X̃ᵀ)

with the global (``μ``: area between event-index functions) and local
(``ν``: event durations) priors of §6.4.1. ``F`` is minimised over the convex
hull of the alignments by Frank–Wolfe: the linear oracle is the alignment
decoder on ``-∇F``, the step is the exact minimiser of the quadratic along the
direction. ``W`` is recovered from the relaxed solution by the normal
equations, and the relaxed ``Y`` rounded (§6.4.4): ``"decode"`` aligns with
the learned scorers (the most accurate in Lajugie 2015), ``"nearest"`` (default) takes the
alignment closest to ``Y*`` in L2, ``"classifiers"`` the alignment whose
template best matches ``X̃ W`` in least squares.
"""

from __future__ import annotations

import numpy as np

from ..exceptions import NotFittedError, ParameterError
from ..features.standardize import check_features
from ..types import Alignment

__all__ = ["WeakAlignment"]


def _align(S, min_frames):
    from ..decoders.alignment import align
    res = align(S, min_frames=min_frames)
    return res.alignment if hasattr(res, "alignment") else res[0]


def _assignment(y: Alignment) -> np.ndarray:
    Z = np.zeros((y.n_frames, y.n_events))
    ev = y.frame_events()
    rows = np.flatnonzero(ev >= 0)
    Z[rows, ev[rows]] = 1.0
    return Z


def _cum_from_right(Y):
    """``Y L_E``: column e holds Σ_{e' ≥ e} Y[:, e']."""
    return np.cumsum(Y[:, ::-1], axis=1)[:, ::-1]


class WeakAlignment:
    """Learn per-class scorers and alignments from scores and audio only.

    Parameters
    ----------
    lam : float, default 1e-3
        Ridge strength ``λ`` of the scorers.
    mu : float, default 0.0
        Weight of the global prior (distance to the expected alignment).
    nu : float, default 0.0
        Weight of the local prior (event durations).
    max_iter : int, default 200
    tol : float, default 1e-4
        Stop when the Frank–Wolfe gap is below ``tol · max(1, F)``.
    rounding : {"nearest", "decode", "classifiers"}, default "nearest"
        On our synthetic performances ``"nearest"`` is the most accurate (the
        relaxed solution carries the duration priors, the scorers alone do not).
    bias : float, default 1.0
        Value ``α`` of the constant column (affine scorers); 0 disables it.
    min_frames : int, default 1
    callback, should_stop
        ``callback(learner, iteration)``; ``should_stop()`` ends early.

    Attributes
    ----------
    W_ : ndarray, shape (p + 1, K)
        Scorers (last row: weights of the constant column).
    Y_ : list of ndarray (T_i, E_i)
        Relaxed assignments.
    alignments_ : list of Alignment
        Rounded training alignments.
    objective_curve_, gap_curve_ : list of float
    n_iter_ : int
    """

    def __init__(self, lam=1e-3, mu=0.0, nu=0.0, max_iter=200, tol=1e-4, rounding="nearest", bias=1.0,
                 min_frames=1, callback=None, should_stop=None):
        self.lam = lam
        self.mu = mu
        self.nu = nu
        self.max_iter = max_iter
        self.tol = tol
        self.rounding = rounding
        self.bias = bias
        self.min_frames = min_frames
        self.callback = callback
        self.should_stop = should_stop

    # ------------------------------------------------------------ checks
    def _check_params(self):
        for name in ("lam", "mu", "nu", "bias"):
            v = getattr(self, name)
            if not (np.isfinite(v) and v >= 0):
                raise ParameterError(f"{name}: expected a finite number >= 0, got {v!r}")
        if not self.lam > 0:
            raise ParameterError(f"lam: expected a positive ridge strength, got {self.lam!r}")
        if self.rounding not in ("decode", "nearest", "classifiers"):
            raise ParameterError(f"rounding: expected 'decode', 'nearest' or 'classifiers', got {self.rounding!r}")
        if int(self.max_iter) < 1:
            raise ParameterError(f"max_iter: expected a positive integer, got {self.max_iter!r}")

    def _augment(self, X):
        return np.column_stack([X, np.full(X.shape[0], float(self.bias))])

    def _check_data(self, items, expected):
        items = list(items)
        expected = list(expected)
        if not items:
            raise ParameterError("items: expected at least one (X, Phi) pair, got none")
        if len(items) != len(expected):
            raise ParameterError(f"expected: got {len(expected)} expected alignments for {len(items)} items")
        Xs, Phis, Ybars = [], [], []
        for i, (it, ex) in enumerate(zip(items, expected)):
            try:
                X, Phi = it
            except (TypeError, ValueError):
                raise ParameterError(f"items[{i}]: expected a pair (X, Phi)") from None
            X = check_features(X, f"items[{i}].X")
            Phi = np.asarray(Phi, dtype=np.float64)
            if Phi.ndim != 2 or not np.all(np.isfinite(Phi)):
                raise ParameterError(f"items[{i}].Phi: expected a finite (E, K) template, got shape {Phi.shape}")
            if Phis and Phi.shape[1] != Phis[0].shape[1]:
                raise ParameterError(f"items[{i}].Phi: {Phi.shape[1]} classes, items[0] has {Phis[0].shape[1]}")
            if Xs and X.shape[1] != Xs[0].shape[1]:
                raise ParameterError(f"items[{i}].X: {X.shape[1]} features, items[0] has {Xs[0].shape[1]}")
            y = ex if isinstance(ex, Alignment) else Alignment(np.asarray(ex, dtype=np.int64), X.shape[0])
            if y.n_frames != X.shape[0] or y.n_events != Phi.shape[0]:
                raise ParameterError(f"expected[{i}]: aligns {y.n_events} events over {y.n_frames} frames, "
                                     f"expected {Phi.shape[0]} events over {X.shape[0]} frames")
            Xs.append(X)
            Phis.append(Phi)
            Ybars.append(_assignment(y))
        return Xs, Phis, Ybars

    # ------------------------------------------------------------ objective
    def _BZ(self, Zs):
        Z = np.vstack(Zs)
        return (Z - self._Xt @ (self._M @ (self._Xt.T @ Z))) / self._N

    def _prior_grad(self, Y, Ybar):
        g = np.zeros_like(Y)
        if self.mu > 0:
            g += 2.0 * self.mu * np.cumsum(_cum_from_right(Y - Ybar), axis=1)
        if self.nu > 0:
            g += (2.0 * self.nu / Y.shape[0]) * (Y - Ybar).sum(axis=0)[None, :]
        return g / self._N

    def _prior_quad(self, D):
        q = 0.0
        if self.mu > 0:
            q += self.mu * float(np.sum(_cum_from_right(D) ** 2))
        if self.nu > 0:
            q += self.nu / D.shape[0] * float(np.sum(D.sum(axis=0) ** 2))
        return q / self._N

    def _objective(self, Ys, Phis, Ybars):
        Zs = [Y @ Phi for Y, Phi in zip(Ys, Phis)]
        Z = np.vstack(Zs)
        val = float(np.sum(Z * self._BZ(Zs)))
        return val + sum(self._prior_quad(Y - Yb) for Y, Yb in zip(Ys, Ybars))

    def fit(self, items, expected):
        """Learn from ``items`` = [(X_i, Φ_i)] and the expected alignments (Alignment or onset frames). Returns self."""
        self._check_params()
        Xs, Phis, Ybars = self._check_data(items, expected)
        self._N = len(Xs)
        Xt = self._augment(np.vstack(Xs))
        self._Xt = Xt
        self._M = np.linalg.inv(Xt.T @ Xt + self._N * float(self.lam) * np.eye(Xt.shape[1]))
        bounds = np.cumsum([0] + [X.shape[0] for X in Xs])
        m = int(self.min_frames)
        Ys = [Yb.copy() for Yb in Ybars]
        self.objective_curve_, self.gap_curve_ = [], []
        self.n_iter_ = 0
        self.stopped_early_ = False
        for it in range(int(self.max_iter)):
            if self.should_stop is not None and self.should_stop():
                self.stopped_early_ = True
                break
            Zs = [Y @ Phi for Y, Phi in zip(Ys, Phis)]
            BZ = self._BZ(Zs)
            grads = [2.0 * BZ[bounds[i]:bounds[i + 1]] @ Phis[i].T + self._prior_grad(Ys[i], Ybars[i])
                     for i in range(self._N)]
            Ds = [_assignment(_align(-g, m)) - Y for g, Y in zip(grads, Ys)]
            slope = sum(float(np.sum(g * D)) for g, D in zip(grads, Ds))
            gap = -slope
            F = self._objective(Ys, Phis, Ybars)
            self.objective_curve_.append(F)
            self.gap_curve_.append(gap)
            self.n_iter_ = it + 1
            if self.callback is not None:
                self.callback(self, it)
            if gap <= float(self.tol) * max(1.0, abs(F)):
                break
            ZD = [D @ Phi for D, Phi in zip(Ds, Phis)]
            quad = float(np.sum(np.vstack(ZD) * self._BZ(ZD))) + sum(self._prior_quad(D) for D in Ds)
            gamma = 1.0 if quad <= 0 else min(1.0, max(0.0, gap / (2.0 * quad)))
            if gamma == 0.0:
                break
            Ys = [Y + gamma * D for Y, D in zip(Ys, Ds)]
        Z = np.vstack([Y @ Phi for Y, Phi in zip(Ys, Phis)])
        self.W_ = self._M @ (Xt.T @ Z)
        self.Y_ = Ys
        self.n_features_ = Xs[0].shape[1]
        self.alignments_ = [self._round(X, Phi, Y) for X, Phi, Y in zip(Xs, Phis, Ys)]
        if not np.all(np.isfinite(self.W_)):
            raise ParameterError("WeakAlignment: non-finite scorers; check the features for huge values")
        return self

    # ------------------------------------------------------------ rounding / prediction
    def _round(self, X, Phi, Y):
        m = int(self.min_frames)
        if self.rounding == "nearest":
            return _align(Y, m)
        P = self._augment(X) @ self.W_
        if self.rounding == "classifiers":
            return _align(2.0 * P @ Phi.T - np.sum(Phi ** 2, axis=1)[None, :], m)
        return _align(P @ Phi.T, m)

    def predict(self, item) -> Alignment:
        """Align a new ``(X, Phi)`` with the learned scorers."""
        if not hasattr(self, "W_"):
            raise NotFittedError("WeakAlignment: call fit() before predict()")
        X, Phi = item
        X = check_features(X)
        if X.shape[1] != self.n_features_:
            raise ParameterError(f"X: expected {self.n_features_} features, got {X.shape[1]}")
        return _align(self._augment(X) @ self.W_ @ np.asarray(Phi, dtype=float).T, int(self.min_frames))

    def to_model_w(self, model) -> np.ndarray:
        """Parameters for :class:`marginalia.models.alignment.AlignmentModel` (``W`` and bias ``c = α W[-1]``)."""
        if not hasattr(self, "W_"):
            raise NotFittedError("WeakAlignment: call fit() before to_model_w()")
        model.n_features_ = self.n_features_
        return model.join_w(self.W_[:-1], float(self.bias) * self.W_[-1])
