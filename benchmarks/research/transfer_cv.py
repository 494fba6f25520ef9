"""Choosing the coupling ``rho`` of :class:`~marginalia.learners.transfer.TransferSSVM` by cross-validation.

Only the *target* dataset's labels judge: its items are split into folds by
group (e.g. by profile, so the chromosomes of one patient stay together);
every other dataset stays whole in every training fold. The grid should
hold ``0`` (the target learns alone) and ``inf`` (one model for the union),
so the choice can fall back to either; ties go to the value listed first.

With a handful of target labels the held-out errors are noisy and the plain
minimum often picks a coupling by chance. ``rule="1se"`` (the one-standard-
error rule of Hastie, Tibshirani & Friedman, paired by item) keeps the first
listed value unless another one beats it by more than the standard error of
their per-item difference.
"""

from __future__ import annotations

import copy
import math

import numpy as np

from marginalia.exceptions import NotFittedError, ParameterError
from marginalia.learners.ssvm import SSVM
from marginalia.learners.transfer import TransferSSVM

__all__ = ["TransferRhoCV", "group_folds", "select_rho"]

DEFAULT_RHOS = (0.0, 1.0, 10.0, 100.0, math.inf)


def group_folds(groups, n_folds: int, random_state=None) -> np.ndarray:
    """Fold index (0..k-1) of every item, whole groups per fold, ``k = min(n_folds, number of groups)``.

    Parameters
    ----------
    groups : sequence of hashable, length n
    n_folds : int, >= 2
    random_state : int or Generator, optional
        Order in which the groups are dealt to the folds.

    Returns
    -------
    folds : ndarray of int, shape (n,)
    """
    groups = [str(g) for g in groups]
    uniq = sorted(set(groups))
    if int(n_folds) < 2:
        raise ParameterError(f"cv: expected at least 2 folds, got {n_folds!r}")
    if len(uniq) < 2:
        raise ParameterError(f"groups: cross-validation needs items of at least 2 groups, got {len(uniq)} "
                             f"({uniq[:1]})")
    rng = np.random.default_rng(random_state)
    order = rng.permutation(len(uniq))
    k = min(int(n_folds), len(uniq))
    fold_of = {uniq[j]: r % k for r, j in enumerate(order)}
    return np.array([fold_of[g] for g in groups], dtype=np.int64)


def select_rho(item_errors: dict, rule: str = "min") -> float:
    """The chosen ``rho`` from held-out errors.

    Parameters
    ----------
    item_errors : dict
        ``rho`` → ndarray (n_items,) of the held-out errors of the same
        items, in order of preference (the first wins ties).
    rule : {"min", "1se"}
        ``"min"``: the smallest total. ``"1se"``: the first ``rho`` whose total
        exceeds the smallest total by at most the standard error of the sum of
        their per-item differences (``sd · √n``).
    """
    if rule not in ("min", "1se"):
        raise ParameterError(f"rule: expected 'min' or '1se', got {rule!r}")
    rhos = list(item_errors)
    if not rhos:
        raise ParameterError("item_errors: expected at least one rho, got none")
    totals = {r: float(np.sum(item_errors[r])) for r in rhos}
    best = min(totals.values())
    r_best = next(r for r in rhos if totals[r] <= best)
    if rule == "min":
        return r_best
    for r in rhos:
        d = np.asarray(item_errors[r], dtype=np.float64) - np.asarray(item_errors[r_best], dtype=np.float64)
        se = float(np.std(d, ddof=1) * np.sqrt(d.size)) if d.size > 1 else 0.0
        if totals[r] - best <= se:
            return r
    return r_best


class TransferRhoCV:
    """:class:`TransferSSVM` whose ``rho`` is chosen by cross-validation on the target dataset.

    Parameters
    ----------
    model : object
        Shared model; each inner fit works on a copy.
    rhos : sequence of float, default (0, 1, 10, 100, inf)
        Candidate couplings, the preferred one first (it wins ties).
    target : hashable, optional
        The dataset whose labels judge (default: the dataset with the fewest items).
    cv : int, default 3
        Folds over the target's groups.
    rule : {"min", "1se"}, default "min"
        How the held-out errors choose (see :func:`select_rho`).
    C, max_iter, tol, averaging, uncoupled, random_state
        Passed to every :class:`TransferSSVM`.
    refine : callable, optional
        ``refine(model, w, Xs, Ys) -> w``: adjusts the target's fitted vector
        on the target's training items (e.g. a penalty calibration), in the
        folds and in the final fit alike.
    error : callable, optional
        ``error(model, w, X, Y) -> float``, the error of one held-out item
        (default: ``model.loss`` of ``model.decode(X, w)`` against ``Y``).
    initial_w : callable, optional
        ``initial_w(model, Xs, Ys) -> w``: fits the model's units and the
        parameters completing partial targets, once per fold for the whole
        grid (default: ``model.initial_w(Xs, Ys)``).

    Attributes
    ----------
    cv_errors_ : dict
        ``rho`` → summed held-out error over the folds.
    cv_item_errors_ : dict
        ``rho`` → ndarray (n_target_items,): held-out error of every target item.
    rho_ : float
        The chosen coupling.
    estimator_ : TransferSSVM or SSVM
        Refitted on every item with ``rho_`` (an SSVM on the target's items alone when ``rho_ = 0``);
        ``estimator_.w_datasets_`` maps the dataset keys to their vectors.
    w_fitted_ : ndarray, shape (n_params,)
        The target's vector of that fit, before ``refine``.
    w_ : ndarray, shape (n_params,)
        The target's vector (after ``refine``).
    w_datasets_ : dict
        Dataset key → vector (the target's after ``refine``; only the target's when ``rho_ = 0``).
    target_ : hashable
    """

    def __init__(self, model, rhos=DEFAULT_RHOS, target=None, cv=3, rule="min", C=1.0, max_iter=100, tol=1e-3,
                 averaging=True, uncoupled=None, random_state=None, refine=None, error=None, initial_w=None):
        self.model = model
        self.rhos = rhos
        self.target = target
        self.cv = cv
        self.rule = rule
        self.C = C
        self.max_iter = max_iter
        self.tol = tol
        self.averaging = averaging
        self.uncoupled = uncoupled
        self.random_state = random_state
        self.refine = refine
        self.error = error
        self.initial_w = initial_w

    def _learner(self, model, rho) -> TransferSSVM:
        return TransferSSVM(model, rho=rho, C=self.C, max_iter=self.max_iter, tol=self.tol,
                            random_state=self.random_state, averaging=self.averaging, uncoupled=self.uncoupled)

    def _start(self, model, Xs, Ys):
        return model.initial_w(Xs, Ys) if self.initial_w is None else self.initial_w(model, Xs, Ys)

    def _fit_one(self, model, rho, Xs, Ys, datasets, target_idx, w0):
        """``(model, estimator, target vector)``; ``rho = 0`` is a plain SSVM on the target's items.

        With ``rho = 0`` the objective separates by dataset, so the target's
        vector only depends on its own items: the plain
        :class:`~marginalia.learners.ssvm.SSVM` on those alone (with units of their
        own, in a copy of the model unless it is the final fit) has the same
        optimum and follows the same steps as a target-only learner, without
        the floating-point drift of another code path (decodings with ties
        can then differ).
        """
        if rho == 0:
            Xs, Ys = [Xs[i] for i in target_idx], [Ys[i] for i in target_idx]
            target_idx = list(range(len(Xs)))
            if model is not self.model:
                model = copy.deepcopy(model)
            est = SSVM(model, C=self.C, max_iter=self.max_iter, tol=self.tol, averaging=self.averaging,
                       random_state=self.random_state, warm_start=True)
            est.w_ = self._start(model, Xs, Ys)      # warm start = these parameters complete the targets
            est.fit(Xs, Ys)
            est.w_datasets_ = {self.target_: est.w_}
        else:
            est = self._learner(model, rho).fit(Xs, Ys, datasets, w_init=w0)
        w = est.w_datasets_[self.target_]
        self.w_fitted_ = w
        if self.refine is not None:
            w = np.asarray(self.refine(model, w, [Xs[i] for i in target_idx], [Ys[i] for i in target_idx]),
                           dtype=np.float64)
        return model, est, w

    def _item_error(self, model, w, X, Y) -> float:
        if self.error is not None:
            return float(self.error(model, w, X, Y))
        return float(model.loss(model.make_target(X, Y, w), model.decode(X, w)))

    def fit(self, Xs, Ys, datasets, groups=None) -> "TransferRhoCV":
        """Choose ``rho`` on the target's folds, then refit on every item. Returns self.

        Parameters
        ----------
        Xs, Ys, datasets
            As in :meth:`TransferSSVM.fit`.
        groups : sequence, optional
            Group of every item (only the target's are used); default: one group per item.
        """
        Xs, Ys, datasets = list(Xs), list(Ys), list(datasets)
        if not (len(Xs) == len(Ys) == len(datasets)):
            raise ParameterError(f"Xs, Ys, datasets: expected the same length, got {len(Xs)}, {len(Ys)}, "
                                 f"{len(datasets)}")
        rhos = [float(r) for r in self.rhos]
        if not rhos or any(not r >= 0 for r in rhos):
            raise ParameterError(f"rhos: expected a non-empty list of numbers >= 0 (or inf), got {self.rhos!r}")
        counts = {k: datasets.count(k) for k in dict.fromkeys(datasets)}
        if self.target is None:
            self.target_ = min(counts, key=lambda k: counts[k])
        elif self.target in counts:
            self.target_ = self.target
        else:
            raise ParameterError(f"target: expected one of the datasets {list(counts)}, got {self.target!r}")
        tgt = [i for i, k in enumerate(datasets) if k == self.target_]
        rest = [i for i, k in enumerate(datasets) if k != self.target_]
        groups = list(range(len(Xs))) if groups is None else list(groups)
        if len(groups) != len(Xs):
            raise ParameterError(f"groups: expected {len(Xs)} groups (one per item), got {len(groups)}")
        folds = group_folds([groups[i] for i in tgt], self.cv, self.random_state)
        if self.rule not in ("min", "1se"):
            raise ParameterError(f"rule: expected 'min' or '1se', got {self.rule!r}")
        item_err = {rho: np.zeros(len(tgt)) for rho in rhos}
        for f in range(int(folds.max()) + 1):
            train_t = [tgt[j] for j in np.flatnonzero(folds != f)]
            idx = rest + train_t
            Xf, Yf, df = [Xs[i] for i in idx], [Ys[i] for i in idx], [datasets[i] for i in idx]
            model = copy.deepcopy(self.model)       # the fold's units; the caller's model keeps the final ones
            w0 = self._start(model, Xf, Yf)
            for rho in rhos:
                used, _, w = self._fit_one(model, rho, Xf, Yf, df, list(range(len(rest), len(idx))), w0)
                for j in np.flatnonzero(folds == f):
                    item_err[rho][j] = self._item_error(used, w, Xs[tgt[j]], Ys[tgt[j]])
        self.cv_item_errors_ = item_err
        self.cv_errors_ = {rho: float(e.sum()) for rho, e in item_err.items()}
        self._data = (Xs, Ys, datasets, tgt)
        return self.refit(select_rho(item_err, self.rule))

    def refit(self, rho) -> "TransferRhoCV":
        """Fit every item of the last :meth:`fit` with ``rho`` (e.g. the choice of another rule). Returns self."""
        if not hasattr(self, "_data"):
            raise NotFittedError(f"{type(self).__name__}: call fit() before refit()")
        Xs, Ys, datasets, tgt = self._data
        self.rho_ = float(rho)
        w0 = None if self.rho_ == 0 else self._start(self.model, Xs, Ys)
        _, self.estimator_, self.w_ = self._fit_one(self.model, self.rho_, Xs, Ys, datasets, tgt, w0)
        self.w_datasets_ = dict(self.estimator_.w_datasets_)
        self.w_datasets_[self.target_] = self.w_
        return self

    def predict(self, Xs, datasets=None):
        """Decode each item with its dataset's vector (the target's when ``datasets`` is None)."""
        if not hasattr(self, "w_"):
            raise NotFittedError(f"{type(self).__name__}: call fit() before predict()")
        datasets = [self.target_] * len(Xs) if datasets is None else list(datasets)
        return [self.model.decode(X, self.w_datasets_.get(k, self.w_)) for X, k in zip(Xs, datasets)]
