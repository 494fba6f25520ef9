"""A per-sequence penalty law on top of a learned segmentation metric.

A :class:`~marginalia.models.segmentation.SegmentationModel` with parameters ``w``
(metric ``B`` and penalty ``λ``) applies one penalty law to every sequence,
but the number of changes an expert sees varies far more between sequences
than any single law allows. :class:`PenaltyLaw` keeps ``B`` and multiplies
the penalty of each sequence by ``exp(δ)`` with

    δ(x) = θᵀ f(x) + b,

``f`` = caller-given sequence features (log log T, log noise variance, ...)
followed by *change-count thresholds*: for each count ``m`` in ``counts``,
the smallest offset of the grid at which the sequence's own decoding keeps at
most ``m`` changes. These summarise how strong the sequence's strongest
changes are in the learned metric (the exact analogue, on a grid, of where the
penalty path loses its last changes). ``θ, b`` are fitted by max-margin
interval regression (Hocking et al. 2013) on, for every training sequence,
the widest interval of offsets with the fewest label errors; the ridge
strength and the margin are chosen by cross-validation on the training
sequences only (a wider margin aims the law at the middle of wide intervals).

The number of changes of a penalised decoding never increases with the
penalty, so the thresholds of a new sequence are found by bisection on the
grid (a few decodings per count), and equal those read from the full grid.
"""

from __future__ import annotations

import hashlib
import threading
from collections import OrderedDict

import numpy as np

from ..exceptions import CancelledError, NotFittedError, ParameterError
from ..metrics import region_errors
from .penalty_path import min_error_interval
from .penalty_regression import PenaltyIntervalRegression

__all__ = ["PenaltyLaw", "check_margins", "count_thresholds", "group_folds", "clear_grid_cache"]

DEFAULT_OFFSETS = np.arange(-6.0, 6.01, 0.25)
DEFAULT_COUNTS = (0, 1, 3, 10, 30)

#: penalty grids remembered by content (model settings, parameters, grid, input): a retrain whose labels
#: changed on a few chromosomes, or laws fitted on overlapping training sets, decode each grid once
GRID_CACHE_SIZE = 1024
_GRID_CACHE: OrderedDict = OrderedDict()
_GRID_CACHE_LOCK = threading.Lock()


def clear_grid_cache() -> None:
    """Forget every remembered grid decoding (:meth:`PenaltyLaw.decode_grid`); for tests and memory."""
    with _GRID_CACHE_LOCK:
        _GRID_CACHE.clear()


def _check_grid(offsets) -> np.ndarray:
    g = np.asarray(offsets, dtype=np.float64)
    if g.ndim != 1 or g.size < 2 or not np.all(np.isfinite(g)) or np.any(np.diff(g) <= 0):
        raise ParameterError(f"offsets: expected an increasing 1-d grid of at least 2 finite values, got {offsets!r}")
    return g


def _check_counts(counts) -> tuple:
    try:
        c = tuple(int(m) for m in counts)
    except (TypeError, ValueError):
        raise ParameterError(f"counts: expected a sequence of integers >= 0, got {counts!r}") from None
    if not c or any(m < 0 for m in c) or any(b <= a for a, b in zip(c, c[1:])):
        raise ParameterError(f"counts: expected increasing integers >= 0, got {counts!r}")
    return c


def check_margins(margin) -> list:
    """The interval-regression margin(s) to try, as a non-empty list of finite floats >= 0."""
    try:
        margins = [float(m) for m in np.atleast_1d(np.asarray(margin, dtype=np.float64))]
    except (TypeError, ValueError):
        margins = []
    if not margins or any(not (np.isfinite(m) and m >= 0) for m in margins):
        raise ParameterError(f"margin: expected one or more finite numbers >= 0, got {margin!r}")
    return margins


def _digest(X) -> bytes:
    """Content key of a model input (shape and values)."""
    X = np.ascontiguousarray(X, dtype=np.float64)
    return hashlib.blake2b(X.tobytes(), digest_size=16, person=repr(X.shape).encode()[:16]).digest()


def _thresholds_from_counts(grid, n_changes, counts) -> np.ndarray:
    """Smallest grid offset with at most ``m`` changes, for each ``m`` (one past the grid when never)."""
    beyond = grid[-1] + (grid[-1] - grid[-2])
    out = np.empty(len(counts))
    for k, m in enumerate(counts):
        j = np.flatnonzero(np.asarray(n_changes) <= m)
        out[k] = grid[j[0]] if j.size else beyond
    return out


def count_thresholds(n_changes_at, offsets, counts=DEFAULT_COUNTS) -> np.ndarray:
    """Change-count thresholds of one sequence by bisection.

    Parameters
    ----------
    n_changes_at : callable
        ``n_changes_at(j)`` → number of changes of the decoding at ``offsets[j]``;
        must be non-increasing in ``j`` (true of penalised decoding).
    offsets : array_like, shape (m,)
        Increasing grid of log-penalty offsets.
    counts : sequence of int
        Increasing change counts.

    Returns
    -------
    thresholds : ndarray, shape (len(counts),)
        For each count ``c``, the smallest offset with at most ``c`` changes
        (``offsets[-1]`` plus one grid step when even the largest has more).
    """
    grid = _check_grid(offsets)
    counts = _check_counts(counts)
    memo: dict = {}

    def k(j):
        if j not in memo:
            memo[j] = int(n_changes_at(j))
        return memo[j]

    out = np.empty(len(counts))
    beyond = grid[-1] + (grid[-1] - grid[-2])
    for i, m in enumerate(counts):
        if k(grid.size - 1) > m:
            out[i] = beyond
            continue
        if k(0) <= m:
            out[i] = grid[0]
            continue
        # the tightest bracket k(lo) > m >= k(hi) that the decodings so far give (every count shares them)
        lo = max(j for j, c in memo.items() if c > m)
        hi = min(j for j, c in memo.items() if c <= m)
        while hi - lo > 1:
            mid = (lo + hi) // 2
            if k(mid) <= m:
                hi = mid
            else:
                lo = mid
        out[i] = grid[hi]
    return out


def group_folds(n: int, groups, n_folds: int) -> np.ndarray:
    """Cross-validation fold of each of ``n`` sequences, keeping each group whole, shape (n,).

    Groups are dealt to ``max(2, min(n_folds, number of groups))`` folds in a fixed
    shuffled order (seed 0), so two fits on the same groups use the same folds.
    ``groups=None`` makes every sequence its own group.
    """
    keys = np.arange(n) if groups is None else np.asarray(groups)
    if keys.shape != (n,):
        raise ParameterError(f"groups: expected one group per sequence ({n}), got shape {keys.shape}")
    uniq = sorted(set(keys.tolist()), key=str)
    order = np.random.default_rng(0).permutation(len(uniq))
    k = max(2, min(int(n_folds), len(uniq)))
    fold_of = {uniq[o]: i % k for i, o in enumerate(order)}
    return np.array([fold_of[g] for g in keys.tolist()], dtype=np.int64)


class PenaltyLaw:
    """Learned per-sequence log-penalty offset for a fixed segmentation metric.

    Parameters
    ----------
    model : SegmentationModel
        Fitted model (units set).
    w : ndarray, shape (n_params,)
        Its parameters (metric and base penalty).
    offsets : array_like, shape (m,), default -6..6 by 0.25
        Increasing grid of log-penalty offsets ``δ``.
    counts : sequence of int, default (0, 1, 3, 10, 30)
        Change counts whose thresholds become features (``()`` for none).
    alphas : sequence of float, default (1e-3, 1e-2, 1e-1, 1)
        Ridge strengths tried; the best by ``cv``-fold cross-validated label error
        on the training sequences is kept (a single value skips the search).
    margin : float or sequence of float, default 0.25
        Margin of the interval regression (log-penalty units); with several, the
        best by ``cv``-fold cross-validated label error is kept together with the
        ridge (ties: the widest margin, which aims at the middle of the intervals).
    cv : int, default 4
        Folds of the ridge search (split by ``groups`` when given to :meth:`fit`).

    Attributes
    ----------
    regression_ : PenaltyIntervalRegression
    alpha_ : float
        The chosen ridge strength.
    margin_ : float
        The chosen margin.
    intervals_ : ndarray, shape (n, 2)
        Training target intervals of ``δ``.
    errors_ : ndarray of int, shape (n, m)
        FP + FN of each training sequence at each offset.
    cv_errors_ : dict
        ``(margin, alpha)`` → cross-validated training label errors, for every pair
        tried (empty when the training sequences form a single group).
    known_thresholds_ : dict
        Content digest of each training input → its change-count thresholds (not saved
        by :meth:`to_dict`; a law read from a file bisects).
    """

    def __init__(self, model, w, offsets=DEFAULT_OFFSETS, counts=DEFAULT_COUNTS, alphas=(1e-3, 1e-2, 1e-1, 1.0),
                 margin=0.25, cv=4):
        self.model = model
        self.w = w
        self.offsets = offsets
        self.counts = counts
        self.alphas = alphas
        self.margin = margin
        self.cv = cv

    # ------------------------------------------------------------ decoding
    def w_at(self, delta: float) -> np.ndarray:
        """Parameters with the penalty multiplied by ``exp(delta)``."""
        if not np.isfinite(delta):
            raise ParameterError(f"delta: expected a finite log-penalty offset, got {delta!r}")
        return self.model.scale_penalty(np.array(self.w, dtype=np.float64), float(np.exp(delta)))

    def decode_grid(self, X, *, should_stop=None) -> list:
        """Segmentations of ``X`` (T, p) at every offset of the grid.

        ``should_stop()`` is polled before each decoding (a long chromosome takes a second per
        decoding); when it returns True, :class:`~marginalia.exceptions.CancelledError` is raised.

        Decodes the two ends of the grid, then recursively the middle of any stretch whose two
        ends differ. A stretch whose ends decode to the same changes is filled without decoding:
        the objective of every segmentation is affine in the penalty, so one that is optimal at
        two penalties is optimal at every penalty between them. On a long chromosome the upper
        half of the grid (one segment or a few, the slowest decodings) then costs two decodings.

        The last :data:`GRID_CACHE_SIZE` grids are remembered by content (model settings, ``w``, grid and
        ``X``; labels play no part), so refitting a law after a few labels changed, or fitting laws on
        overlapping training sets, decodes each sequence's grid once.
        """
        grid = _check_grid(self.offsets)
        key = self._grid_key(X, grid)
        with _GRID_CACHE_LOCK:
            known = _GRID_CACHE.get(key)
            if known is not None:
                _GRID_CACHE.move_to_end(key)
                return list(known)
        segs = self._decode_grid(X, grid, should_stop)
        with _GRID_CACHE_LOCK:
            _GRID_CACHE[key] = tuple(segs)
            while len(_GRID_CACHE) > GRID_CACHE_SIZE:
                _GRID_CACHE.popitem(last=False)
        return segs

    def _grid_key(self, X, grid) -> bytes:
        """Content key of a grid decoding: what the segmentations depend on, and nothing else."""
        h = hashlib.blake2b(digest_size=20)
        h.update(_digest(X))
        h.update(repr(sorted(vars(self.model).items())).encode())
        h.update(np.ascontiguousarray(self.w, dtype=np.float64).tobytes())
        h.update(grid.tobytes())
        return h.digest()

    def _decode_grid(self, X, grid, should_stop) -> list:
        segs = [None] * grid.size

        def at(j):
            if segs[j] is None:
                if should_stop is not None and should_stop():
                    raise CancelledError("decoding the penalty grid was cancelled")
                segs[j] = self.model.decode(X, self.w_at(grid[j]))
            return segs[j]

        stack = [(0, grid.size - 1)]
        while stack:
            lo, hi = stack.pop()
            if hi - lo < 2:
                at(lo), at(hi)
                continue
            if np.array_equal(at(lo).changes, at(hi).changes):
                for j in range(lo + 1, hi):
                    segs[j] = segs[lo]
                continue
            mid = (lo + hi) // 2
            stack += [(lo, mid), (mid, hi)]
        return segs

    def thresholds(self, X) -> np.ndarray:
        """Change-count thresholds of ``X`` (T, p) by bisection, shape (len(counts),).

        A training sequence's are read from :meth:`fit` instead (the same values: the fit
        read them from the full grid): on a 97,000-probe chromosome the bisection takes a
        dozen decodings of a second each, which an app redrawing its labelled chromosomes
        after every retrain would otherwise pay again.
        """
        grid = _check_grid(self.offsets)
        counts = _check_counts(self.counts) if len(self.counts) else ()
        if not counts:
            return np.empty(0)
        known = getattr(self, "known_thresholds_", {}).get(_digest(X))
        if known is not None:
            return known.copy()
        return count_thresholds(lambda j: self.model.decode(X, self.w_at(grid[j])).n_segments - 1, grid, counts)

    def grid_summary(self, X, labels, *, should_stop=None) -> tuple:
        """``(errors, n_changes)`` of ``X`` (T, p) at every grid offset, each shape (m,).

        ``errors`` are the label errors (FP + FN) of ``labels``; what :meth:`fit` needs of a
        training sequence, so laws on overlapping training sets can share one decoding of it.
        ``should_stop``: see :meth:`decode_grid`.
        """
        segs = self.decode_grid(X, should_stop=should_stop)
        return (np.array([region_errors(labels, s).errors for s in segs], dtype=np.int64),
                np.array([s.n_segments - 1 for s in segs], dtype=np.int64))

    def _design(self, F, T) -> np.ndarray:
        F = np.asarray(F, dtype=np.float64)
        if F.ndim == 1:
            F = F[None, :]
        return np.column_stack([F, T]) if T.size else F

    # ------------------------------------------------------------ fitting
    def fit(self, Xs, Ys, F, groups=None, *, summaries=None) -> "PenaltyLaw":
        """Learn the offset law.

        Parameters
        ----------
        Xs : list of ndarray, each (T_i, p)
            Model inputs.
        Ys : list of label lists
        F : array_like, shape (n, d)
            Sequence features (``d`` may be 0).
        groups : array_like, shape (n,), optional
            Group of each sequence (e.g. the profile): cross-validation folds keep groups whole.
        summaries : list of (errors, n_changes), optional
            :meth:`grid_summary` of each sequence under this law's model, ``w`` and grid,
            when already computed (the sequences are then not decoded again).
        """
        grid = _check_grid(self.offsets)
        counts = _check_counts(self.counts) if len(self.counts) else ()
        F = np.asarray(F, dtype=np.float64).reshape(len(Xs), -1) if len(Xs) else np.zeros((0, 0))
        if not (len(Xs) == len(Ys) == F.shape[0]) or len(Xs) == 0:
            raise ParameterError(f"Xs, Ys, F: expected the same non-zero number of sequences, got {len(Xs)}, "
                                 f"{len(Ys)}, {F.shape[0]}")
        lower = np.r_[-np.inf, (grid[1:] + grid[:-1]) / 2]   # piece j of the grid covers [mid(j-1,j), mid(j,j+1))
        if summaries is None:
            summaries = [self.grid_summary(X, labels) for X, labels in zip(Xs, Ys)]
        elif len(summaries) != len(Xs) or any(len(e) != grid.size or len(k) != grid.size for e, k in summaries):
            raise ParameterError(f"summaries: expected one (errors, n_changes) pair of {grid.size} values per "
                                 f"sequence ({len(Xs)})")
        errs, ivs, thr = [], [], []
        for e, n_changes in summaries:
            a, b, _ = min_error_interval(lower, e)
            errs.append(e)
            ivs.append((a, b))
            thr.append(_thresholds_from_counts(grid, n_changes, counts) if counts else np.empty(0))
        self.errors_ = np.array(errs)
        self.intervals_ = np.array(ivs)
        self.known_thresholds_ = {_digest(X): np.array(t) for X, t in zip(Xs, thr)} if counts else {}
        self.design_ = self._design(F, np.array(thr))
        if self.design_.shape[1] == 0:
            raise ParameterError("F, counts: no feature at all; give sequence features or change counts")
        alphas = [float(a) for a in np.atleast_1d(self.alphas)]
        if not alphas or any(not (np.isfinite(a) and a >= 0) for a in alphas):
            raise ParameterError(f"alphas: expected finite values >= 0, got {self.alphas!r}")
        margins = check_margins(self.margin)
        self.cv_errors_ = {}
        folds = self.folds_ = self._folds(groups)
        if np.unique(folds).size > 1:
            # also for a single pair: the cross-validated error then compares laws on other metrics
            for m in margins:
                for a in alphas:
                    self.cv_errors_[(m, a)] = self._cv_error(m, a, folds, lower)
        if (len(alphas) > 1 or len(margins) > 1) and self.cv_errors_:
            best = min(self.cv_errors_.values())
            # ties: the widest margin, then the strongest ridge (a law aimed at the middle, smoother)
            self.margin_, self.alpha_ = max(k for k, e in self.cv_errors_.items() if e == best)
        else:
            self.margin_, self.alpha_ = margins[0], alphas[0]
        self.regression_ = self._regress(self.margin_, self.alpha_, np.arange(len(Xs)))
        return self

    def _regress(self, margin, alpha, idx):
        if not np.isfinite(self.intervals_[idx]).any():
            # no offset changes any label error (e.g. a learned penalty of 0): a constant law at the best offset
            total = self.errors_[idx].sum(axis=0)
            best = np.flatnonzero(total == total.min())
            reg = PenaltyIntervalRegression(alpha=alpha, margin=margin)
            reg.coef_ = np.zeros(self.design_.shape[1])
            reg.intercept_ = float(_check_grid(self.offsets)[best[len(best) // 2]])
            reg.n_features_in_ = self.design_.shape[1]
            return reg
        return PenaltyIntervalRegression(alpha=alpha, margin=margin).fit(self.design_[idx], self.intervals_[idx])

    def _folds(self, groups) -> np.ndarray:
        return group_folds(self.errors_.shape[0], groups, self.cv)

    def _cv_error(self, margin, alpha, folds, lower) -> int:
        total = 0
        for f in np.unique(folds):
            tr, te = np.flatnonzero(folds != f), np.flatnonzero(folds == f)
            pred = self._regress(margin, alpha, tr).predict(self.design_[te])
            j = np.clip(np.searchsorted(lower, pred, side="right") - 1, 0, lower.size - 1)
            total += int(self.errors_[te, j].sum())
        return total

    def out_of_fold_offsets(self) -> np.ndarray:
        """Offset of each training sequence predicted by the law refitted without its cross-validation fold.

        What the law would predict for those sequences had it not seen them: a training sequence's own
        offset fits its labels better than a new sequence's will. With a single fold, the fitted law's.

        Returns
        -------
        ndarray, shape (n_training_sequences,)
        """
        if not hasattr(self, "folds_"):
            raise NotFittedError("PenaltyLaw: call fit before out_of_fold_offsets")
        out = self.regression_.predict(self.design_)
        folds = self.folds_
        if np.unique(folds).size > 1:
            for f in np.unique(folds):
                tr, te = np.flatnonzero(folds != f), np.flatnonzero(folds == f)
                out[te] = self._regress(self.margin_, self.alpha_, tr).predict(self.design_[te])
        return np.asarray(out, dtype=np.float64)

    # ------------------------------------------------------------ prediction
    def predict_offset(self, X, features) -> float:
        """Log-penalty offset ``δ`` of one sequence ``X`` (T, p) with sequence features (d,)."""
        if not hasattr(self, "regression_"):
            raise NotFittedError("PenaltyLaw: call fit before predicting")
        return float(self.regression_.predict(self._design(features, self.thresholds(X)[None, :]))[0])

    def decode(self, X, features):
        """Segmentation of ``X`` (T, p) with the offset predicted for it."""
        return self.model.decode(X, self.w_at(self.predict_offset(X, features)))

    # ------------------------------------------------------------ files
    def to_dict(self) -> dict:
        """JSON-ready description of the fitted law (not of the model or ``w``)."""
        if not hasattr(self, "regression_"):
            raise NotFittedError("PenaltyLaw: call fit before saving")
        r = self.regression_
        return {"offsets": [float(g) for g in _check_grid(self.offsets)], "counts": list(_check_counts(self.counts))
                if len(self.counts) else [], "margin": float(self.margin_), "alpha": float(self.alpha_),
                "coef": [float(c) for c in r.coef_], "intercept": float(r.intercept_)}

    @classmethod
    def from_dict(cls, model, w, d: dict) -> "PenaltyLaw":
        """Inverse of :meth:`to_dict` for ``model`` and ``w``."""
        try:
            law = cls(model, w, offsets=np.asarray(d["offsets"], dtype=np.float64), counts=tuple(d["counts"]),
                      alphas=(float(d["alpha"]),), margin=float(d["margin"]))
            coef = np.asarray(d["coef"], dtype=np.float64)
            intercept = float(d["intercept"])
        except (KeyError, TypeError, ValueError) as exc:
            raise ParameterError(f"penalty law: incomplete description ({exc!r})") from None
        if coef.ndim != 1 or not np.all(np.isfinite(coef)) or not np.isfinite(intercept):
            raise ParameterError("penalty law: coefficients must be finite numbers")
        reg = PenaltyIntervalRegression(alpha=law.alphas[0], margin=law.margin)
        reg.coef_, reg.intercept_, reg.n_features_in_ = coef, intercept, coef.size
        law.regression_, law.alpha_, law.margin_ = reg, law.alphas[0], law.margin
        return law
