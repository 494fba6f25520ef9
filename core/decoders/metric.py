"""Features under a decoder metric (the one rule the segmentation and warping decoders share)."""

from __future__ import annotations

import numpy as np

from ..exceptions import ParameterError

__all__ = ["metric_transform"]


def metric_transform(X, metric) -> np.ndarray:
    """``X`` under a decoder metric: ``X * L`` for per-feature weights, ``X @ L.T`` for a map, ``X`` for None.

    Parameters
    ----------
    X : array_like, shape (T, p) or (T,)
    metric : None, array_like of shape (p,) or (q, p)

    Returns
    -------
    ndarray, shape (T, p') -- a feature of weight 0 adds 0 to every cost, so it is left out (``p' <= p``), which
    makes the prefix sums and kernels cheaper (the aCGH recipe's plain-logratio laws keep 1 of 6 features) and
    changes no result; ``(T, q)`` for a map.

    Raises
    ------
    ParameterError
        A metric that is not finite numbers of one of those shapes.
    """
    X = np.asarray(X, dtype=np.float64)
    if X.ndim == 1:
        X = X[:, None]
    p = X.shape[1]
    if metric is None:
        return X
    try:
        L = np.asarray(metric, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise ParameterError(f"metric: cannot convert to a float array ({exc})") from None
    if not np.all(np.isfinite(L)):
        raise ParameterError("metric: contains NaN or infinite values")
    if L.ndim == 1 and L.shape == (p,):
        used = np.flatnonzero(L)
        return X[:, used] * L[used] if 0 < used.size < p else X * L
    if L.ndim == 2 and L.shape[1] == p and L.shape[0] >= 1:
        return X @ L.T
    raise ParameterError(f"metric: expected None, weights of shape ({p},) (one per feature) or a matrix (q, {p}) "
                         f"(B = L^T L), got shape {L.shape}")
