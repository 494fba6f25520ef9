"""Robust per-feature standardisation: subtract the median, divide by the MAD.

Constant (or almost constant) features would be divided by zero; they are
centred and left with scale 1 and a :class:`UserWarning` names them, so a
learner downstream sees a zero column rather than NaNs.
"""

from __future__ import annotations

import warnings

import numpy as np

from ..checks import check_features
from ..exceptions import NotFittedError, ParameterError

__all__ = ["RobustStandardizer", "robust_standardize", "check_features"]

_MAD_TO_STD = 1.4826


class RobustStandardizer:
    """Median / MAD scaling fitted on one or several sequences.

    Parameters
    ----------
    min_scale : float, default 1e-12
        Features whose robust scale (and standard deviation) is below this
        are treated as constant: centred, scale 1, and reported.

    Attributes
    ----------
    center_ : ndarray, shape (p,)
    scale_ : ndarray, shape (p,)
    constant_features_ : ndarray of int
        Indices of the features found constant.
    """

    def __init__(self, min_scale=1e-12):
        self.min_scale = min_scale

    def fit(self, Xs):
        """Fit on a matrix ``(T, p)`` or a list of matrices with the same ``p``."""
        mats = _as_list(Xs)
        stacked = np.vstack(mats)
        center = np.median(stacked, axis=0)
        scale = _MAD_TO_STD * np.median(np.abs(stacked - center), axis=0)
        # a feature that is constant on more than half of the samples has MAD 0
        # but may still vary: fall back to the standard deviation
        std = stacked.std(axis=0)
        scale = np.where(scale > self.min_scale, scale, std)
        constant = np.flatnonzero(scale <= self.min_scale)
        if constant.size:
            warnings.warn(f"RobustStandardizer: feature(s) {constant.tolist()} are constant; "
                          "they carry no information and are left at 0", UserWarning, stacklevel=2)
        scale = np.where(scale > self.min_scale, scale, 1.0)
        self.center_ = center
        self.scale_ = scale
        self.constant_features_ = constant
        return self

    def transform(self, X) -> np.ndarray:
        """Standardise one matrix ``(T, p)`` with the fitted center and scale."""
        if not hasattr(self, "scale_"):
            raise NotFittedError("RobustStandardizer: call fit() before transform()")
        arr = check_features(X)
        if arr.shape[1] != self.scale_.shape[0]:
            raise ParameterError(f"X: expected {self.scale_.shape[0]} features (as in fit), got {arr.shape[1]}")
        return (arr - self.center_) / self.scale_

    def fit_transform(self, X) -> np.ndarray:
        return self.fit(X).transform(X)


def _as_list(Xs) -> list:
    if isinstance(Xs, np.ndarray) and Xs.ndim <= 2:
        mats = [check_features(Xs)]
    else:
        mats = [check_features(X, f"Xs[{i}]") for i, X in enumerate(Xs)]
    if not mats:
        raise ParameterError("Xs: expected at least one feature matrix, got none")
    p = mats[0].shape[1]
    for i, m in enumerate(mats):
        if m.shape[1] != p:
            raise ParameterError(f"Xs[{i}]: expected {p} features like Xs[0], got {m.shape[1]}")
    return mats


def robust_standardize(X, *, min_scale=1e-12) -> np.ndarray:
    """Median/MAD-standardise the columns of one matrix.

    Parameters
    ----------
    X : array_like, shape (T, p)

    Returns
    -------
    Z : ndarray, shape (T, p)
        ``(X - median) / (1.4826 * MAD)``; constant columns become 0 (with a warning).
    """
    return RobustStandardizer(min_scale=min_scale).fit_transform(X)
