"""Learning from partial labels (Lou et al. 2014, §1.3; Lajugie 2015, §4.4.2).

``strategy="bridge"`` minimises the bridge-loss objective (Lou et al. 2014, eq. 1.5)::

    J(w) = 1/(2C) ‖w‖² + Σ_n ( max_y [⟨w, φ(x_n, y)⟩ + Δ_n(y)] - max_{y ∈ 𝒴*_n} ⟨w, φ(x_n, y)⟩ )
              w ∈ 𝒲 (the model's allowed cone)

where ``Δ_n`` is the model's loss on the labels (violated labels, or wrong
change decisions with ``partial_loss="counts"``) and ``𝒴*_n`` is the set of
structures compatible with the labels. ``J`` is a difference of convex
functions ``P - R``; CCCP replaces ``R`` by its linearisation at ``w_t``
(the features of the *completion*, i.e. the constrained decode at ``w_t``)
and minimises the convex remainder, keeping the best point evaluated.

``inner="bundle"`` (Lou et al. 2014, Alg. 1.1) minimises it with a bundle method:
cutting planes ``⟨a_k, w⟩ + b_k ≤ P(w)`` (one loss-augmented decode per item
each) are *kept across CCCP iterations* since ``P`` does not change (bounds
recycling), and the bundle's precision ``ε`` tightens geometrically from one
CCCP iteration to the next (adaptive precision); CCCP only stops on a stall
once ``ε`` has reached ``epsilon_min``. The bundle subproblem is a small QP
(epigraph form, solved by SLSQP with BLAS on one thread) for the orthant
cone, and is solved in its dual over the simplex for other cones.
``inner="bcfw"`` solves the same convex step with block-coordinate
Frank–Wolfe (the step is ``n`` times the SSVM objective on the labels with
their current completions).

``strategy="complete"`` is the alternation of Lajugie 2015, §4.4.2: complete the
labels with the current model (constrained decode), train a full-label
:class:`~marginalia.learners.ssvm.SSVM` on the completions, repeat until the
completions stop changing. With ``partial_loss="completion"`` it matches
full-label training with 25 % of the samples' segments revealed
(``benchmarks/speed/learning.py``).
"""

from __future__ import annotations

import numpy as np

from ..checks import check_choice, check_int, check_scalar
from ..exceptions import ParameterError
from .ssvm import SSVM, check_training_set, decode_each

__all__ = ["PartialLabelSSVM", "project_simplex"]


def _single_threaded_blas():
    """Context limiting BLAS to one thread: SLSQP on a tiny QP issues many small BLAS calls, and threaded
    BLAS spinning on a loaded machine made each solve 100× slower (seconds instead of milliseconds)."""
    try:
        from threadpoolctl import threadpool_limits
    except ImportError:  # pragma: no cover - threadpoolctl ships with scikit-learn, a librosa dependency
        import contextlib
        return contextlib.nullcontext()
    return threadpool_limits(limits=1, user_api="blas")


def _dual_ascent(A, b, beta, w_of, dual, C, iterations=300):
    """Raise the bundle QP's dual value from ``beta`` by accelerated projected gradient on the simplex.

    Parameters
    ----------
    A : ndarray, shape (k, d)
        Cutting planes' slopes.
    b : ndarray, shape (k,)
        Their offsets.
    beta : ndarray, shape (k,)
        Starting weights on the simplex.
    w_of : callable
        ``w_of(beta)`` → the primal minimiser for those weights, shape (d,).
    dual : callable
        ``dual(beta)`` → the dual value, a lower bound on the QP's minimum for any ``beta`` on the simplex.
    C : float
        Trade-off; the dual's gradient ``b + A w(β)`` is ``C ‖A‖₂²``-Lipschitz.

    Returns
    -------
    beta : ndarray, shape (k,)
        The weights of the best dual value seen.
    bound : float
        That value (never below ``dual`` at the start).
    """
    best_beta, best = beta, dual(beta)
    L = float(C) * float(np.linalg.norm(A, 2)) ** 2
    if not (np.isfinite(L) and L > 0):
        return best_beta, best
    x_prev, y, t = beta, beta, 1.0
    for _ in range(int(iterations)):
        x = project_simplex(y + (b + A @ w_of(y)) / L)
        value = dual(x)
        if value > best:
            best_beta, best = x, value
        t_next = 0.5 * (1.0 + np.sqrt(1.0 + 4.0 * t * t))
        y = x + ((t - 1.0) / t_next) * (x - x_prev)
        x_prev, t = x, t_next
    return best_beta, best


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
        Bundle iterations per CCCP iteration, or SSVM passes for "complete"
        and for ``inner="bcfw"``.
    inner : {"bundle", "bcfw"}, default "bundle"
        Solver of the convex CCCP subproblem of the bridge loss: the bundle
        method (planes recycled across CCCP iterations) or block-coordinate
        Frank–Wolfe (:class:`~marginalia.learners.ssvm.SSVM` on the labels with
        their current completions; the subproblem is exactly its objective
        times ``n``). Ignored by ``strategy="complete"``.
    n_jobs : int, default 1
        Threads for the SSVM passes (``"complete"`` and ``inner="bcfw"``).
    random_state, callback, should_stop
        As in :class:`~marginalia.learners.ssvm.SSVM`; ``callback(learner, outer_iteration)``.

    Attributes
    ----------
    w_ : ndarray
    objective_curve_ : list of float
        ``J(w_t)`` after each CCCP iteration.
    n_planes_ : int
        Cutting planes computed in total (each costs one decode per item); BCFW passes with ``inner="bcfw"``.
    n_outer_ : int
    """

    def __init__(self, model, C=1.0, strategy="bridge", max_outer=20, tol=1e-3, epsilon=0.5, epsilon_min=1e-3,
                 rho=0.5, max_planes=200, inner_max_iter=50, random_state=None, callback=None, should_stop=None,
                 inner="bundle", n_jobs=1):
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
        self.inner = inner
        self.n_jobs = n_jobs
        self.random_state = random_state
        self.callback = callback
        self.should_stop = should_stop

    def _check_params(self):
        check_choice(self.strategy, "strategy", ("bridge", "complete"))
        check_choice(self.inner, "inner", ("bundle", "bcfw"))
        check_int(self.n_jobs, "n_jobs", min_val=1)
        check_scalar(self.C, "C", float, min_val=0, include_boundaries="neither")
        if not (0 < self.rho <= 1):
            raise ParameterError(f"rho: expected a factor in (0, 1], got {self.rho!r}")
        if not (self.epsilon > 0 and self.epsilon_min > 0):
            raise ParameterError(f"epsilon/epsilon_min: expected positive numbers, got {self.epsilon!r}, "
                                 f"{self.epsilon_min!r}")
        for name in ("max_outer", "max_planes", "inner_max_iter"):
            check_int(getattr(self, name), name, min_val=1)

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
        if self.inner == "bcfw":
            return self._fit_bridge_bcfw(Xs, Ys, w)
        return self._fit_bridge(Xs, Ys, w)

    def predict(self, Xs, constraints=None):
        """Decode every sequence with ``w_`` (``constraints``: one per sequence or None)."""
        return decode_each(self, Xs, constraints)

    # ------------------------------------------------------------ complete
    def _fit_complete(self, Xs, Ys, w):
        model = self.model
        previous = None
        inner = SSVM(model, C=self.C, max_iter=int(self.inner_max_iter), tol=self.tol,
                     random_state=self.random_state, should_stop=self.should_stop, n_jobs=self.n_jobs)
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
    def _fit_bridge_bcfw(self, Xs, Ys, w):
        """CCCP on the bridge loss with the convex step solved by BCFW.

        With the completions ``ȳ_n`` fixed at ``w_t``, the CCCP surrogate
        ``1/(2C)‖w‖² + Σ_n max_y [Δ_n(y) + ⟨w, φ(x_n, y)⟩] - ⟨w, φ(x_n, ȳ_n)⟩`` is ``n`` times the
        SSVM objective with targets ``(labels, ȳ_n)``; the best ``J`` seen is kept.
        """
        model = self.model
        inner = SSVM(model, C=self.C, max_iter=int(self.inner_max_iter), tol=float(self.epsilon_min),
                     random_state=self.random_state, should_stop=self.should_stop, n_jobs=self.n_jobs)
        J_best = self._objective(Xs, Ys, w)
        w_best = w
        for t in range(int(self.max_outer)):
            targets = [model.make_target(X, Y, w) for X, Y in zip(Xs, Ys)]
            inner._check_params()
            inner._solve(Xs, targets, w)
            w = inner.w_
            if not np.all(np.isfinite(w)):
                raise ParameterError(f"{type(self).__name__}: non-finite parameters; check the features")
            self.n_planes_ += inner.n_iter_
            J = self._objective(Xs, Ys, w)
            self.objective_curve_.append(min(J, J_best))
            self.n_outer_ = t + 1
            improved = J < J_best - float(self.tol) * max(1.0, abs(J_best))
            if J < J_best:
                J_best, w_best = J, w
            self.w_ = w_best
            if self.callback is not None:
                self.callback(self, t)
            if inner.stopped_early_:
                self.stopped_early_ = True
                break
            if not improved:
                break
            w = w_best
        self.w_ = w_best
        return self

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
            w_best = w
            for _k in range(int(self.inner_max_iter)):
                if self.should_stop is not None and self.should_stop():
                    self.stopped_early_ = True
                    break
                a_k, b_k, P_w = self._plane(Xs, targets, w)
                self.n_planes_ += 1
                J_true = 0.5 / self.C * float(w @ w) + P_w + float(v @ w)
                if J_true < best_J:
                    # the bundle's minimiser can land far from the data while the model of P is still
                    # coarse: the CCCP step keeps the best point evaluated, never just the last one
                    best_J, w_best = J_true, w
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
            w = w_best
            if not np.all(np.isfinite(w)):
                raise ParameterError(f"{type(self).__name__}: non-finite parameters; check the features")
            self.w_ = w
            self.n_outer_ = t + 1
            J = self._objective(Xs, Ys, w)
            self.objective_curve_.append(J)
            if self.callback is not None:
                self.callback(self, t)
            stalled = (J_prev - J) <= float(self.tol) * max(1.0, abs(J))
            # a stall while the bundle was still solved coarsely only means the precision was too loose to move
            # away from w_t: tighten it (next iteration) rather than stop
            if self.stopped_early_ or (stalled and eps <= float(self.epsilon_min) * (1 + 1e-12)):
                break
            J_prev = min(J_prev, J)
        if not hasattr(self, "w_"):
            self.w_ = w
        return self

    def _solve_bundle(self, A, b, v, beta0=None):
        """min_w 1/(2C)‖w‖² + max_k(⟨a_k, w⟩ + b_k) + ⟨v, w⟩ over the model's cone.

        With the non-negative orthant as the cone (diagonal metric) this is a
        small smooth QP in epigraph form, ``min 1/(2C)‖w‖² + ξ + ⟨v, w⟩``
        s.t. ``⟨a_k, w⟩ + b_k ≤ ξ``, ``w ≥ 0``, which SLSQP solves in a few
        iterations; the plane weights ``β`` are then recovered on the active
        planes from the stationarity condition (non-negative least squares).
        Other cones use the dual over the simplex, ``w(β) = C · P_𝒲(-(Aᵀβ + v))``.
        Returns ``(w, lower bound on the minimum, β)``.
        """
        model = self.model
        C = float(self.C)
        k = A.shape[0]
        if beta0 is not None and beta0.shape[0] == k - 1:
            beta0 = np.append(0.5 * beta0, 0.5)
        if beta0 is None or beta0.shape[0] != k:
            beta0 = np.full(k, 1.0 / k)

        def w_of(beta_):
            return C * model.project(-(A.T @ beta_ + v))

        def dual(beta_):
            w_ = w_of(beta_)
            return float(b @ beta_) - 0.5 / C * float(w_ @ w_)

        if k == 1:
            beta = np.ones(1)
            return w_of(beta), dual(beta), beta
        with _single_threaded_blas():
            return self._solve_bundle_qp(A, b, v, beta0, w_of, dual)

    def _solve_bundle_qp(self, A, b, v, beta0, w_of, dual):
        from scipy.optimize import minimize

        model = self.model
        C = float(self.C)
        k, d = A.shape
        orthant = bool(getattr(model, "projection_is_orthant", lambda: False)())
        scale = max(1.0, float(np.abs(A).max()) * np.sqrt(C), float(np.abs(b).max()))
        if orthant:
            w0 = w_of(beta0)
            z0 = np.append(w0, float(np.max(A @ w0 + b)))

            def f(z):
                w_ = z[:-1]
                return (0.5 / C * float(w_ @ w_) + z[-1] + float(v @ w_)) / scale, \
                    np.append(w_ / C + v, 1.0) / scale

            jac = np.hstack([-A, np.ones((k, 1))]) / scale
            res = minimize(f, z0, jac=True, method="SLSQP", bounds=[(0.0, None)] * d + [(None, None)],
                           constraints=[{"type": "ineq", "fun": lambda z: (z[-1] - A @ z[:-1] - b) / scale,
                                         "jac": lambda z: jac}],
                           options={"maxiter": 200, "ftol": 1e-14})
            w = np.maximum(res.x[:-1], 0.0)
            # the bound must be certified: SLSQP reports success on these badly scaled planes (features of
            # 1e4-1e5) at points far from the QP's optimum, and taking its value as the bound closed the gap
            # at once and froze the bundle (objective 172,032 against 40-108 reached once the bound is the
            # dual value of weights on the simplex; benchmarks/speed/learning.py). So: the active planes' weights
            # from stationarity, improved by projected-gradient ascent on the dual.
            beta, bound = _dual_ascent(A, b, self._plane_weights(A, b, v, w, C), w_of, dual, C)
            return w, bound, beta
        res = minimize(lambda bt: (-dual(bt) / scale, -(b + A @ w_of(bt)) / scale), beta0, jac=True,
                       method="SLSQP", bounds=[(0.0, 1.0)] * k,
                       constraints=[{"type": "eq", "fun": lambda z: z.sum() - 1.0,
                                     "jac": lambda z: np.ones_like(z)}],
                       options={"maxiter": 200, "ftol": 1e-12})
        beta = project_simplex(res.x)
        return w_of(beta), dual(beta), beta

    @staticmethod
    def _plane_weights(A, b, v, w, C):
        """Weights ``β`` (on the simplex) of the planes active at the orthant QP's solution ``w``.

        Stationarity on the free coordinates (``w_j > 0``) reads ``w/C + v + Aᵀβ = 0``;
        solved by non-negative least squares over the active planes, then normalised.
        """
        from scipy.optimize import nnls

        k = A.shape[0]
        vals = A @ w + b
        active = np.flatnonzero(vals >= vals.max() - 1e-7 * max(1.0, abs(vals.max())))
        free = w > 1e-12
        beta = np.zeros(k)
        if free.any() and active.size > 1:
            M = np.vstack([A[active][:, free].T, 1e3 * np.ones((1, active.size))])
            rhs = np.append(-(w[free] / C + v[free]), 1e3)
            sol, _ = nnls(M, rhs)
            if sol.sum() > 0:
                beta[active] = sol / sol.sum()
                return beta
        beta[active] = 1.0 / active.size
        return beta
