"""Max-margin interval regression of the change penalty (Hocking, Rigaill, Vert, Bach 2013).

Each training sequence ``i`` comes with an interval ``[lower_i, upper_i]`` of
log-penalties whose penalized segmentation has the fewest label errors (see
:mod:`marginalia.cgh.penalty_path`). A linear function ``f(x) = wᵀx + b`` of
sequence features (log length, log noise level...) is fitted so that
``f(x_i)`` falls inside its interval with a margin, by minimising::

    Σ_i  φ(lower_i + margin - f(x_i)) + φ(f(x_i) - upper_i + margin)  +  alpha ‖w‖²

with ``φ(u) = max(0, u)²`` (squared hinge, ``loss="squared_hinge"``) or
``max(0, u)`` (hinge); infinite bounds contribute nothing.
"""

from __future__ import annotations

import math

import numpy as np
from scipy.optimize import minimize

from ..checks import check_choice, check_scalar, check_signal
from ..exceptions import NotFittedError, ParameterError

__all__ = ["PenaltyIntervalRegression", "sequence_features"]


def sequence_features(x) -> np.ndarray:
    """Features of one 1-d sequence for predicting its log-penalty.

    Parameters
    ----------
    x : array_like, shape (T,) or (T, 1)

    Returns
    -------
    features : ndarray, shape (3,)
        ``[log log T, log σ̂², log var(x)]``: ``σ̂`` is the robust noise level from
        first differences (MAD / √2), ``var`` the total variance (large when the
        sequence holds big changes). ``log log T`` because the classical penalties grow
        as ``σ² log T``.
    """
    arr = check_signal(x, "x", min_length=3)
    d = np.diff(arr)
    sigma = 1.4826 * float(np.median(np.abs(d - np.median(d)))) / math.sqrt(2.0)
    var = float(arr.var())
    tiny = 1e-12
    if sigma <= tiny:
        sigma = math.sqrt(max(var, tiny))
    return np.array([math.log(math.log(max(arr.shape[0], 3))), math.log(sigma ** 2), math.log(max(var, tiny))])


class PenaltyIntervalRegression:
    """Linear model of the log-penalty learned from target intervals.

    Parameters
    ----------
    alpha : float, default 1e-2
        Weight of ``‖w‖²`` (features are standardised first; the intercept is free).
    margin : float, default 0.5
        Required distance (in log-penalty units) from ``f(x)`` to each finite bound.
    loss : {"squared_hinge", "hinge"}

    Attributes
    ----------
    coef_ : ndarray, shape (d,)
        Slopes on the raw (unstandardised) features.
    intercept_ : float
    n_features_in_ : int
    """

    def __init__(self, alpha=1e-2, margin=0.5, loss="squared_hinge"):
        self.alpha = alpha
        self.margin = margin
        self.loss = loss

    def _check_params(self):
        check_scalar(self.alpha, "alpha", float, min_val=0)
        check_scalar(self.margin, "margin", float, min_val=0)
        check_choice(self.loss, "loss", ("squared_hinge", "hinge"))

    @staticmethod
    def _check_F(F, name="F") -> np.ndarray:
        arr = np.asarray(F, dtype=np.float64)
        if arr.ndim != 2 or arr.shape[0] < 1 or arr.shape[1] < 1:
            raise ParameterError(f"{name}: expected a 2-d array (n_sequences, n_features), got shape {arr.shape}")
        if not np.all(np.isfinite(arr)):
            raise ParameterError(f"{name}: contains NaN or inf; expected finite features")
        return arr

    def fit(self, F, intervals) -> "PenaltyIntervalRegression":
        """Fit on features ``F`` (n, d) and target intervals (n, 2) of log-penalties.

        Rows whose interval is ``(-inf, inf)`` carry no information and are ignored.
        """
        self._check_params()
        F = self._check_F(F)
        iv = np.asarray(intervals, dtype=np.float64)
        if iv.shape != (F.shape[0], 2):
            raise ParameterError(f"intervals: expected shape ({F.shape[0]}, 2) (one [lower, upper] per row of F), "
                                 f"got {iv.shape}")
        if np.any(np.isnan(iv)) or np.any(iv[:, 0] > iv[:, 1]):
            raise ParameterError("intervals: expected lower <= upper without NaN in every row")
        informative = np.isfinite(iv).any(axis=1)
        if not np.any(informative):
            raise ParameterError("intervals: every interval is (-inf, inf); nothing to learn from")
        F, iv = F[informative], iv[informative]
        self.mean_ = F.mean(axis=0)
        scale = F.std(axis=0)
        self.scale_ = np.where(scale > 1e-12, scale, 1.0)
        Z = (F - self.mean_) / self.scale_
        lo = np.where(np.isfinite(iv[:, 0]), iv[:, 0] + self.margin, -np.inf)
        hi = np.where(np.isfinite(iv[:, 1]), iv[:, 1] - self.margin, np.inf)
        has_lo, has_hi = np.isfinite(lo), np.isfinite(hi)
        lo_f, hi_f = np.where(has_lo, lo, 0.0), np.where(has_hi, hi, 0.0)
        squared = self.loss == "squared_hinge"
        n = Z.shape[0]
        alpha = float(self.alpha)

        def objective(theta):
            w, b = theta[:-1], theta[-1]
            f = Z @ w + b
            u_lo = np.where(has_lo, lo_f - f, 0.0)
            u_hi = np.where(has_hi, f - hi_f, 0.0)
            a_lo, a_hi = np.maximum(u_lo, 0.0), np.maximum(u_hi, 0.0)
            if squared:
                val = (a_lo ** 2).sum() + (a_hi ** 2).sum()
                g_f = -2 * a_lo + 2 * a_hi
            else:  # hinge: subgradient; L-BFGS copes on these small problems
                val = a_lo.sum() + a_hi.sum()
                g_f = -(u_lo > 0).astype(float) + (u_hi > 0).astype(float)
            val = val / n + alpha * float(w @ w)
            grad = np.append(Z.T @ g_f / n + 2 * alpha * w, g_f.sum() / n)
            return val, grad

        finite = np.concatenate([lo[has_lo], hi[has_hi]])
        theta0 = np.zeros(Z.shape[1] + 1)
        theta0[-1] = float(np.median(finite))
        res = minimize(objective, theta0, jac=True, method="L-BFGS-B")
        w, b = res.x[:-1], res.x[-1]
        self.coef_ = w / self.scale_
        self.intercept_ = float(b - self.coef_ @ self.mean_)
        self.n_features_in_ = F.shape[1]
        self.objective_ = float(res.fun)
        return self

    def predict(self, F) -> np.ndarray:
        """Predicted log-penalties, shape (n,)."""
        if not hasattr(self, "coef_"):
            raise NotFittedError("PenaltyIntervalRegression: call fit before predict")
        F = self._check_F(F)
        if F.shape[1] != self.n_features_in_:
            raise ParameterError(f"F: expected {self.n_features_in_} features per row, got {F.shape[1]}")
        return F @ self.coef_ + self.intercept_
