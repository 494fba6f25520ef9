"""Learning from partial labels (Lou et al. §1.3; thesis §4.4.2).

``strategy="bridge"`` minimises the bridge-loss objective (Lou eq. 1.5)::

    J(w) = 1/(2C) ‖w‖² + Σ_n ( max_y [⟨w, φ(x_n, y)⟩ + Δ_n(y)] - max_{y ∈ 𝒴*_n} ⟨w, φ(x_n, y)⟩ )
              w ∈ 𝒲 (the model's allowed cone)

where ``Δ_n`` counts the labels ``y`` violates and ``𝒴*_n`` is the set of
structures compatible with the labels. ``J`` is a difference of convex
functions ``P - R``; CCCP replaces ``R`` by its linearisation at ``w_t``
(the features of the *completion*, i.e. the constrained decode at ``w_t``)
and minimises the convex remainder with a bundle method: cutting planes
``⟨a_k, w⟩ + b_k ≤ P(w)`` (one loss-augmented decode per item each) are
*kept across CCCP iterations* since ``P`` does not change (bounds
recycling), and the bundle's precision ``ε`` tightens geometrically from one
CCCP iteration to the next (adaptive precision) — Lou et al. Alg. 1.1.

The bundle subproblem is solved in its dual: for multipliers ``β`` on the
simplex, ``w(β) = P_𝒲(-(Aβ + v)) · C`` and the dual ``bᵀβ - ‖P_𝒲(-(Aβ+v))‖² C/2``
is maximised by accelerated projected gradient (tens of planes at most).

``strategy="complete"`` is the alternation of thesis §4.4.2: complete the
labels with the current model (constrained decode), train a full-label
:class:`~core.learners.ssvm.SSVM` on the completions, repeat until the
completions stop changing.
"""

from __future__ import annotations

import numpy as np

from ..exceptions import NotFittedError, ParameterError
from .ssvm import SSVM, check_training_set

__all__ = ["PartialLabelSSVM", "project_simplex"]


def project_simplex(v) -> np.ndarray:
    """Euclidean projection of ``v`` (shape (k,)) onto the probability simplex."""
    v = np.asarray(v, dtype=np.float64)
    u = np.sort(v)[::-1]
    css = np.cumsum(u) - 1.0
    idx = np.arange(1, v.shape[0] + 1)
    rho = np.nonzero(u - css / idx > 0)[0][-1]
    theta = css[rho] / (rho + 1.0)
    return np.maximum(v - theta, 0.0)


class PartialLabelSSVM:
    """Structured SVM from partial labels: bridge loss by CCCP + bundle, or complete-then-learn.

    Parameters
    ----------
    model : object
        A model whose ``loss`` on partial targets counts violated labels
        (e.g. ``SegmentationModel(partial_loss="violations")``).
    C : float, default 1.0
        Regularisation ``1/(2C) ‖w‖²`` against the *sum* of the item losses.
    strategy : {"bridge", "complete"}
    max_outer : int, default 20
        CCCP iterations (or completion rounds).
    tol : float, default 1e-3
        ``η`` of Alg. 1.1: stop when ``J`` decreases by less than ``tol · max(1, J)``.
    epsilon, epsilon_min, rho : float
        Adaptive precision of the bundle: ``ε ← max(ε ρ, ε_min)`` at each CCCP
        iteration, ``ε`` relative to ``max(1, J)``.
    max_planes : int, default 200
        Cutting planes kept (oldest inactive ones dropped beyond).
    inner_max_iter : int, default 50
        Bundle iterations per CCCP iteration, or SSVM passes for "complete".
    random_state, callback, should_stop
        As in :class:`~core.learners.ssvm.SSVM`; ``callback(learner, outer_iteration)``.

    Attributes
    ----------
    w_ : ndarray
    objective_curve_ : list of float
        ``J(w_t)`` after each CCCP iteration.
    n_planes_ : int
        Cutting planes computed in total (each costs one decode per item).
    n_outer_ : int
    """

    def __init__(self, model, C=1.0, strategy="bridge", max_outer=20, tol=1e-3, epsilon=0.5, epsilon_min=1e-3,
                 rho=0.5, max_planes=200, inner_max_iter=50, random_state=None, callback=None, should_stop=None):
        self.model = model
        self.C = C
        self.strategy = strategy
        self.max_outer = max_outer
        self.tol = tol
        self.epsilon = epsilon
        self.epsilon_min = epsilon_min
        self.rho = rho
        self.max_planes = max_planes
        self.inner_max_iter = inner_max_iter
        self.random_state = random_state
        self.callback = callback
        self.should_stop = should_stop

    def _check_params(self):
        if self.strategy not in ("bridge", "complete"):
            raise ParameterError(f"strategy: expected 'bridge' or 'complete', got {self.strategy!r}")
        if not (np.isfinite(self.C) and self.C > 0):
            raise ParameterError(f"C: expected a positive finite number, got {self.C!r}")
        if not (0 < self.rho <= 1):
            raise ParameterError(f"rho: expected a factor in (0, 1], got {self.rho!r}")
        if not (self.epsilon > 0 and self.epsilon_min > 0):
            raise ParameterError(f"epsilon/epsilon_min: expected positive numbers, got {self.epsilon!r}, "
                                 f"{self.epsilon_min!r}")
        for name in ("max_outer", "max_planes", "inner_max_iter"):
            if int(getattr(self, name)) < 1:
                raise ParameterError(f"{name}: expected a positive integer, got {getattr(self, name)!r}")

    def fit(self, Xs, Ys):
        """Learn from sequences and label lists (full structures are accepted too). Returns self."""
        self._check_params()
        Xs, Ys = check_training_set(self.model, Xs, Ys, learner=type(self).__name__)
        w = self.model.initial_w(Xs, Ys)
        self.objective_curve_ = []
        self.n_planes_ = 0
        self.n_outer_ = 0
        self.stopped_early_ = False
        if self.strategy == "complete":
            return self._fit_complete(Xs, Ys, w)
        return self._fit_bridge(Xs, Ys, w)

    def predict(self, Xs, constraints=None):
        if not hasattr(self, "w_"):
            raise NotFittedError(f"{type(self).__name__}: call fit() before predict()")
        cons = [None] * len(Xs) if constraints is None else list(constraints)
        return [self.model.decode(X, self.w_, constraints=c) for X, c in zip(Xs, cons)]

    # ------------------------------------------------------------ complete
    def _fit_complete(self, Xs, Ys, w):
        model = self.model
        previous = None
        inner = SSVM(model, C=self.C, max_iter=int(self.inner_max_iter), tol=self.tol,
                     random_state=self.random_state, should_stop=self.should_stop)
        for t in range(int(self.max_outer)):
            targets = [model.make_target(X, Y, w) for X, Y in zip(Xs, Ys)]
            full = [getattr(tg, "completion", tg) for tg in targets]
            if previous is not None and all(a == b for a, b in zip(full, previous)):
                break
            previous = full
            inner._check_params()
            inner._solve(Xs, full, w)
            w = inner.w_
            self.w_ = w
            self.n_outer_ = t + 1
            self.objective_curve_.append(self._objective(Xs, Ys, w))
            if self.callback is not None:
                self.callback(self, t)
            if inner.stopped_early_:
                self.stopped_early_ = True
                break
        self.w_ = w
        return self

    # ------------------------------------------------------------ bridge
    def _plane(self, Xs, targets, w):
        """Subgradient ``a`` and offset ``b`` of ``P`` at ``w``, and ``P(w)``."""
        model = self.model
        a = 0.0
        b = 0.0
        for X, tg in zip(Xs, targets):
            y_hat = model.loss_augmented_decode(X, tg, w)
            a = a + model.joint_feature(X, y_hat)
            b += float(model.loss(tg, y_hat))
        a = np.asarray(a, dtype=np.float64)
        return a, b, float(a @ w) + b

    def _objective(self, Xs, Ys, w):
        targets = [self.model.make_target(X, Y, w) for X, Y in zip(Xs, Ys)]
        _, _, P = self._plane(Xs, targets, w)
        R = sum(float(w @ self.model.joint_feature(X, tg)) for X, tg in zip(Xs, targets))
        return 0.5 / self.C * float(w @ w) + P - R

    def _fit_bridge(self, Xs, Ys, w):
        model = self.model
        A = np.zeros((0, w.shape[0]))
        b = np.zeros(0)
        eps = float(self.epsilon)
        J_prev = np.inf
        beta = None
        for t in range(int(self.max_outer)):
            # linearise -R at w: the completions' features
            targets = [model.make_target(X, Y, w) for X, Y in zip(Xs, Ys)]
            v = -np.sum([model.joint_feature(X, tg) for X, tg in zip(Xs, targets)], axis=0)
            eps = max(eps * float(self.rho), float(self.epsilon_min)) if t > 0 else eps
            best_J = np.inf
            for k in range(int(self.inner_max_iter)):
                if self.should_stop is not None and self.should_stop():
                    self.stopped_early_ = True
                    break
                a_k, b_k, P_w = self._plane(Xs, targets, w)
                self.n_planes_ += 1
                J_true = 0.5 / self.C * float(w @ w) + P_w + float(v @ w)
                best_J = min(best_J, J_true)
                A = np.vstack([A, a_k])
                b = np.append(b, b_k - 0.0)
                if A.shape[0] > int(self.max_planes):
                    keep = np.argsort(-(beta if beta is not None and beta.shape[0] == A.shape[0] - 1
                                        else np.zeros(A.shape[0] - 1)))[: int(self.max_planes) - 1]
                    keep = np.sort(np.append(keep, A.shape[0] - 1))
                    A, b = A[keep], b[keep]
                    beta = None
                w, J_model, beta = self._solve_bundle(A, b, v, beta)
                gap = best_J - J_model  # J_model (dual) lower-bounds the bundle's minimum
                if gap <= eps * max(1.0, abs(best_J)):
                    break
            if not np.all(np.isfinite(w)):
                raise ParameterError(f"{type(self).__name__}: non-finite parameters; check the features")
            self.w_ = w
            self.n_outer_ = t + 1
            J = self._objective(Xs, Ys, w)
            self.objective_curve_.append(J)
            if self.callback is not None:
                self.callback(self, t)
            if self.stopped_early_ or (J_prev - J) <= float(self.tol) * max(1.0, abs(J)):
                break
            J_prev = J
        if not hasattr(self, "w_"):
            self.w_ = w
        return self

    def _solve_bundle(self, A, b, v, beta0=None):
        """min_w 1/(2C)‖w‖² + max_k(⟨a_k, w⟩ + b_k) + ⟨v, w⟩ over the model's cone.

        Solved in the dual over the simplex (``k`` = number of planes, small)
        by SLSQP with the exact gradient ``b + A w(β)``; returns ``(w, dual value, β)``.
        """
        from scipy.optimize import minimize

        model = self.model
        C = float(self.C)
        k = A.shape[0]
        if beta0 is not None and beta0.shape[0] == k - 1:
            beta0 = np.append(0.5 * beta0, 0.5)
        if beta0 is None or beta0.shape[0] != k:
            beta0 = np.full(k, 1.0 / k)
        # scale rows so that the solver sees numbers of order one
        scale = max(1.0, float(np.abs(A).max()) * np.sqrt(C), float(np.abs(b).max()))

        def w_of(beta_):
            return C * model.project(-(A.T @ beta_ + v))

        def neg_dual(beta_):
            w_ = w_of(beta_)
            val = float(b @ beta_) - 0.5 / C * float(w_ @ w_)
            return -val / scale, -(b + A @ w_) / scale

        if k == 1:
            beta = np.ones(1)
        else:
            res = minimize(neg_dual, beta0, jac=True, method="SLSQP", bounds=[(0.0, 1.0)] * k,
                           constraints=[{"type": "eq", "fun": lambda z: z.sum() - 1.0,
                                         "jac": lambda z: np.ones_like(z)}],
                           options={"maxiter": 200, "ftol": 1e-12})
            beta = project_simplex(res.x)
        w = w_of(beta)
        return w, -neg_dual(beta)[0] * scale, beta
