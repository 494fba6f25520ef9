"""Per-sequence penalty on top of a learned segmentation metric.

A :class:`~marginalia.models.segmentation.SegmentationModel` with parameters ``w``
(metric ``B`` and penalty ``λ``) uses one penalty law for every sequence. This
wrapper keeps ``B`` and multiplies the penalty of each sequence by ``exp(δ)``,
with ``δ = f(features of the sequence)`` learned by max-margin interval
regression (:class:`~marginalia.cgh.penalty_regression.PenaltyIntervalRegression`)
on the intervals of offsets whose decoding has the fewest label errors, found
on a grid of offsets. With ``path_features=True`` the regression also sees
where the sequence's own decoding path loses its last change (the offset at
which the segmentation becomes constant) and how many changes it has at the
base penalty: unsupervised summaries of how strong the sequence's changes are.
"""

from __future__ import annotations

import numpy as np

from marginalia.cgh.penalty_law import _check_grid
from marginalia.cgh.penalty_path import min_error_interval
from marginalia.cgh.penalty_regression import PenaltyIntervalRegression
from marginalia.exceptions import NotFittedError, ParameterError
from marginalia.metrics import region_errors

__all__ = ["PenaltyCalibration"]


class PenaltyCalibration:
    """Learned per-sequence log-penalty offset for a fixed metric.

    Parameters
    ----------
    model : SegmentationModel
    w : ndarray, shape (n_params,)
        Parameters learned for ``model`` (metric and base penalty).
    offsets : array_like, shape (m,)
        Increasing grid of log-penalty offsets ``δ`` tried on the training sequences.
    alpha, margin : float
        Passed to :class:`PenaltyIntervalRegression`.
    path_features : bool, default True
        Append :meth:`grid_summary` to the caller's sequence features.

    Attributes
    ----------
    regression_ : PenaltyIntervalRegression
    intervals_ : ndarray, shape (n, 2)
        Training target intervals of ``δ``.
    errors_ : ndarray, shape (n, m)
        Label errors (FP + FN) of each training sequence at each offset.
    """

    def __init__(self, model, w, offsets=np.arange(-4.0, 4.01, 0.5),  # noqa: B008 - read only, never mutated
                 alpha=1e-2, margin=0.25, path_features=True):
        self.path_features = path_features
        self.model = model
        self.w = w
        self.offsets = offsets
        self.alpha = alpha
        self.margin = margin

    def _w_at(self, delta: float) -> np.ndarray:
        return self.model.scale_penalty(np.asarray(self.w, dtype=np.float64), float(np.exp(delta)))

    def decode_grid(self, X) -> list:
        """Segmentations of ``X`` (T, p) at every offset of the grid."""
        return [self.model.decode(X, self._w_at(d)) for d in self._grid()]

    def errors(self, X, labels, segs=None) -> np.ndarray:
        """FP + FN of ``labels`` for every offset of the grid, shape (m,)."""
        segs = self.decode_grid(X) if segs is None else segs
        return np.array([region_errors(labels, s).errors for s in segs], dtype=np.int64)

    def grid_summary(self, segs) -> np.ndarray:
        """``[first offset with no change, log(1 + changes at offset 0)]`` from the grid decodings, shape (2,)."""
        g = self._grid()
        n = np.array([s.n_segments - 1 for s in segs])
        none = np.flatnonzero(n == 0)
        first = g[none[0]] if none.size else g[-1] + (g[-1] - g[-2])
        k0 = int(np.argmin(np.abs(g)))
        return np.array([first, np.log1p(n[k0])])

    def _features(self, F, segs_list) -> np.ndarray:
        F = np.asarray(F, dtype=np.float64)
        if not self.path_features:
            return F
        return np.column_stack([F, np.array([self.grid_summary(s) for s in segs_list])])

    def _grid(self) -> np.ndarray:
        """The offsets, checked as :class:`~marginalia.cgh.penalty_law.PenaltyLaw` checks its grid, shape (m,)."""
        return _check_grid(self.offsets)

    def fit(self, Xs, Ys, F) -> "PenaltyCalibration":
        """Learn the offset law.

        Parameters
        ----------
        Xs : list of ndarray, each (T_i, p)
            Model inputs.
        Ys : list of label lists
        F : ndarray, shape (n, d)
            Sequence features (e.g. :func:`~marginalia.cgh.penalty_regression.sequence_features`).
        """
        g = self._grid()
        if not (len(Xs) == len(Ys) == len(F)):
            raise ParameterError(f"Xs, Ys, F: expected the same number of sequences, got {len(Xs)}, {len(Ys)}, "
                                 f"{len(F)}")
        # piece k of the grid covers [mid(k-1,k), mid(k,k+1)); the ends are open
        lower = np.r_[-np.inf, (g[1:] + g[:-1]) / 2]
        errs, iv, segs_list = [], [], []
        for X, labels in zip(Xs, Ys):
            segs = self.decode_grid(X)
            segs_list.append(segs)
            e = self.errors(X, labels, segs)
            a, b, _ = min_error_interval(lower, e)
            errs.append(e)
            iv.append((a, b))
        self.errors_ = np.array(errs)
        self.intervals_ = np.array(iv)
        self.regression_ = PenaltyIntervalRegression(alpha=self.alpha, margin=self.margin).fit(
            self._features(F, segs_list), self.intervals_)
        return self

    def predict_offset(self, X, features, segs=None) -> float:
        """Log-penalty offset ``δ`` for one sequence ``X`` (T, p) with sequence features (d,).

        ``segs`` may pass the :meth:`decode_grid` of ``X`` when already computed.
        """
        if not hasattr(self, "regression_"):
            raise NotFittedError("PenaltyCalibration: call fit before predicting")
        F = np.asarray(features, dtype=np.float64)[None, :]
        segs = [self.decode_grid(X) if segs is None else segs] if self.path_features else [None]
        return float(self.regression_.predict(self._features(F, segs))[0])

    def decode(self, X, features):
        """Segmentation of ``X`` (T, p) with the offset predicted for it."""
        return self.model.decode(X, self._w_at(self.predict_offset(X, features)))
