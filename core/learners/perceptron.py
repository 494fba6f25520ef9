"""Averaged structured perceptron with passive-aggressive steps, for interactive updates.

Each update decodes the item with the current ``w`` and, when the result
loses against the target (a full structure, or partial labels completed by a
constrained decode), moves ``w`` towards ``φ(x, target) - φ(x, ŷ)`` and
projects it back onto the model's allowed set. ``step="perceptron"`` uses a
fixed ``learning_rate``; ``step="pa"`` (default) uses the passive-aggressive
step ``τ = min(C, (loss - ⟨w, Δφ⟩) / ‖Δφ‖²)`` (Crammer et al. 2006), which
is scale-free and fixes the current mistake with a margin equal to the loss.
Weights are averaged over all visits (lecture notes; Lou et al. 2014, Alg. 1.2).
"""

from __future__ import annotations

import numpy as np

from ..checks import check_choice, check_int, check_scalar
from ..exceptions import NotFittedError, ParameterError
from .ssvm import check_training_set

__all__ = ["StructuredPerceptron"]

_WORKER = None


def _worker():
    """One background thread shared by the learners (kept out of the learner so it stays picklable)."""
    global _WORKER
    if _WORKER is None:
        from concurrent.futures import ThreadPoolExecutor
        _WORKER = ThreadPoolExecutor(max_workers=1, thread_name_prefix="perceptron")
    return _WORKER


class StructuredPerceptron:
    """Online structured learner.

    Parameters
    ----------
    model : object
        E.g. :class:`marginalia.models.segmentation.SegmentationModel`.
    max_iter : int, default 10
        Passes over the data in :meth:`fit`.
    averaged : bool, default True
        Expose the average of the iterates as ``w_``.
    step : {"pa", "perceptron"}, default "pa"
    learning_rate : float, default 1.0
        Fixed step for ``step="perceptron"``.
    C : float, default 1.0
        Cap of the passive-aggressive step.
    loss_augmented : bool, default False
        Decode with the loss added (margin perceptron) rather than plainly.
    random_state : int, optional
        Order of the items in :meth:`fit`.
    warm_start : bool, default False
    n_jobs : int, default 1
        With 2, an update from partial labels decodes the prediction and the
        labels' completion at the same time on two threads (the decoders
        release the GIL): the wall time of an update is one decode instead of
        two when the labels are violated, at the price of a wasted completion
        when they are not.

    Attributes
    ----------
    w_ : ndarray, shape (n_params,)
        Current (averaged) parameters.
    n_updates_ : int
        Number of updates that changed ``w``.
    mistakes_ : list of int
        Mistakes per pass of :meth:`fit`.
    """

    def __init__(self, model, max_iter=10, averaged=True, step="pa", learning_rate=1.0, C=1.0,
                 loss_augmented=False, random_state=None, warm_start=False, n_jobs=1):
        self.model = model
        self.max_iter = max_iter
        self.averaged = averaged
        self.step = step
        self.learning_rate = learning_rate
        self.C = C
        self.loss_augmented = loss_augmented
        self.random_state = random_state
        self.warm_start = warm_start
        self.n_jobs = n_jobs

    def _check_params(self):
        check_choice(self.step, "step", ("pa", "perceptron"))
        check_scalar(self.learning_rate, "learning_rate", float, min_val=0, include_boundaries="neither")
        check_scalar(self.C, "C", float, min_val=0, include_boundaries="neither")
        check_int(self.max_iter, "max_iter", min_val=1)
        check_int(getattr(self, "n_jobs", 1), "n_jobs", min_val=1)

    def _start(self, w0):
        self._w = self.model.check_w(w0).copy()
        self._w_sum = self._w.copy()
        self._n_seen = 1
        self.n_updates_ = 0
        self.w_ = self._w.copy()

    def fit(self, Xs, Ys):
        """Run ``max_iter`` passes of :meth:`partial_fit` over the data. Returns self."""
        self._check_params()
        Xs, Ys = check_training_set(self.model, Xs, Ys, learner=type(self).__name__)
        if not (self.warm_start and hasattr(self, "_w")):
            self._start(self.model.initial_w(Xs, Ys))
        rng = np.random.default_rng(self.random_state)
        self.mistakes_ = []
        for _ in range(int(self.max_iter)):
            mistakes = 0
            for i in rng.permutation(len(Xs)):
                mistakes += self._update(Xs[i], Ys[i])
            self.mistakes_.append(mistakes)
            if mistakes == 0:
                break
        return self

    def partial_fit(self, X, y):
        """One update from one item: ``y`` is a full structure or a list of partial labels. Returns self."""
        self._check_params()
        if not hasattr(self, "_w"):
            self._start(self.model.default_w([X]))
        self._update(X, y)
        return self

    def _update(self, X, y) -> int:
        model = self.model
        w = self._w
        y_pred = None
        target = None
        partial = not self.loss_augmented and hasattr(model, "violations") and not hasattr(y, "n_samples") \
            and not hasattr(y, "n_frames") and not hasattr(y, "completion")
        if partial and int(getattr(self, "n_jobs", 1)) > 1:
            # completion speculatively on the shared worker while this thread decodes the prediction
            pending = _worker().submit(model.make_target, X, y, w)
            y_pred = model.decode(X, w)
            if model.violations(y, y_pred) == 0:
                self._record()          # nothing to learn: the completion finishes unobserved
                return 0
            target = pending.result()
        elif partial:
            # partial labels: when the current prediction already respects them there is nothing to
            # learn, and the completion (a second, constrained decode) can be skipped
            y_pred = model.decode(X, w)
            if model.violations(y, y_pred) == 0:
                self._record()
                return 0
        if target is None:
            target = model.make_target(X, y, w)
        if self.loss_augmented:
            y_hat = model.loss_augmented_decode(X, target, w)
        else:
            y_hat = model.decode(X, w) if y_pred is None else y_pred
        loss = float(model.loss(target, y_hat))
        dphi = model.joint_feature(X, target) - model.joint_feature(X, y_hat)
        margin = float(w @ dphi)
        mistake = 0
        if loss > 0 and margin < loss:
            mistake = 1
            nrm = float(dphi @ dphi)
            if self.step == "pa":
                tau = 0.0 if nrm <= 0 else min(float(self.C), (loss - margin) / nrm)
            else:
                tau = float(self.learning_rate)
            if tau > 0:
                self._w = model.project(w + tau * dphi)
                self.n_updates_ += 1
        if not np.all(np.isfinite(self._w)):
            raise ParameterError(f"{type(self).__name__}: the update produced non-finite parameters; "
                                 "check the features for huge values")
        self._record()
        return mistake

    def _record(self):
        self._w_sum += self._w
        self._n_seen += 1
        self.w_ = self.model.project(self._w_sum / self._n_seen) if self.averaged else self._w.copy()

    def predict(self, X, constraints=None):
        """Decode one sequence with ``w_``."""
        if not hasattr(self, "w_"):
            raise NotFittedError(f"{type(self).__name__}: call fit() or partial_fit() first")
        return self.model.decode(X, self.w_, constraints=constraints)
