"""Structured SVM trained by block-coordinate Frank–Wolfe (Lacoste-Julien et al. 2013; Lajugie 2015, §1.6).

Objective (``n`` training pairs, ``λ = 1 / (C n)``, ``c`` the regularisation centre)::

    min_{w ∈ 𝒲}  λ/2 ‖w - c‖² + 1/n Σ_i max_y [ loss(y_i, y) - ⟨w, φ(x_i, y_i) - φ(x_i, y)⟩ ]

with ``𝒲`` a closed convex cone given by the model's ``project`` (e.g. a
non-negative metric and penalty). The dual variables are kept as the
unprojected vector ``v = Σ_i v_i`` and the primal is ``w = P_𝒲(c + v)``; the
dual stays smooth and concave, its gradient on block ``i`` is the
loss-augmented decoding at ``w``, and the exact line search along a
Frank–Wolfe direction is a 1-d monotone root find (closed form when the
projection is inactive).

The learner is generic: the model supplies ``initial_w``, ``make_target``,
``joint_feature``, ``loss_augmented_decode``, ``loss``, ``project`` and
``n_params``.
"""

from __future__ import annotations

import warnings

import numpy as np

from ..checks import check_choice, check_int, check_scalar
from ..exceptions import NotFittedError, ParameterError

__all__ = ["SSVM", "check_training_set", "decode_each", "unit_step_root"]


def decode_each(learner, Xs, constraints=None) -> list:
    """``learner.model.decode`` of every input with the fitted ``learner.w_`` (``constraints``: one per input or None).

    Raises
    ------
    NotFittedError
        ``learner`` has no ``w_`` yet.
    """
    if not hasattr(learner, "w_"):
        raise NotFittedError(f"{type(learner).__name__}: call fit() before predict()")
    cons = [None] * len(Xs) if constraints is None else list(constraints)
    return [learner.model.decode(X, learner.w_, constraints=c) for X, c in zip(Xs, cons)]


def unit_step_root(deriv, guess: float, g0: float, *, bisections: int) -> float:
    """The step ``γ ∈ [0, 1]`` where a non-increasing derivative ``deriv(γ)`` (``deriv(0) = g0 > 0``) reaches 0.

    ``guess`` (the closed form when the dual is quadratic along the step) is returned when it is a root to
    ``1e-12 · |g0|``; 1 when the derivative is still non-negative there; else ``bisections`` halvings of
    ``[0, 1]`` (the Frank-Wolfe line search of Lacoste-Julien et al. 2013 with a projection).
    """
    if abs(deriv(guess)) <= 1e-12 * (abs(g0) + 1e-300):
        return guess
    if deriv(1.0) >= 0:
        return 1.0
    lo, hi = 0.0, 1.0
    for _ in range(bisections):
        mid = 0.5 * (lo + hi)
        if deriv(mid) > 0:
            lo = mid
        else:
            hi = mid
    return 0.5 * (lo + hi)


def check_training_set(model, Xs, Ys, *, learner="SSVM") -> tuple:
    """Validate ``(Xs, Ys)``: same length, at least one item, finite features.

    Warns when only one item is given (the model will fit that one item).
    """
    if isinstance(Xs, np.ndarray):
        raise ParameterError(f"{learner}.fit: Xs must be a list of (T, p) arrays, got a single array; wrap it in a list")
    Xs, Ys = list(Xs), list(Ys)
    if len(Xs) == 0:
        raise ParameterError(f"{learner}.fit: expected at least one labelled sequence, got none")
    if len(Xs) != len(Ys):
        raise ParameterError(f"{learner}.fit: Xs has {len(Xs)} sequences but Ys has {len(Ys)} targets")
    if len(Xs) == 1:
        warnings.warn(f"{learner}.fit: a single labelled sequence; the learned parameters fit that sequence only "
                      "and may not generalise", UserWarning, stacklevel=3)
    return Xs, Ys


class SSVM:
    """Margin-rescaled structured SVM solved by block-coordinate Frank–Wolfe.

    Parameters
    ----------
    model : object
        E.g. :class:`marginalia.models.segmentation.SegmentationModel`.
    C : float, default 1.0
        Trade-off: ``λ = 1 / (C n)``.
    max_iter : int, default 100
        Maximum number of passes over the data.
    tol : float, default 1e-3
        Stop when the duality gap of a pass is below ``tol · max(1, primal)``.
    averaging : bool, default True
        Return the weighted average ``w̄_k = k/(k+2) w̄_{k-1} + 2/(k+2) w_k``.
    random_state : int or Generator, optional
        Order of the blocks.
    callback : callable, optional
        ``callback(learner, iteration)`` after every pass.
    should_stop : callable, optional
        Checked before every block; when it returns True the fit ends early
        with the current parameters (``stopped_early_`` is set).
    warm_start : bool, default False
        Start from the previous ``w_`` (targets re-completed with it).
    n_jobs : int, default 1
        Threads for the per-item work: the initial penalty tuning, target
        completion and joint features, and the loss-augmented decodings of
        each pass (``n_jobs`` blocks are decoded at the same ``w``, then
        stepped in turn; with 1 the passes are the plain sequential BCFW).
    center : {"zero", "initial"}, default "zero"
        Regularise towards 0 (as in Lajugie 2015) or towards the model's initial ``w``.

    Attributes
    ----------
    w_ : ndarray, shape (n_params,)
    loss_curve_ : list of float
        Primal objective estimated during each pass.
    gap_curve_ : list of float
        Duality gap estimated during each pass.
    n_iter_ : int
    targets_ : list
        The (completed) targets used.
    """

    def __init__(self, model, C=1.0, max_iter=100, tol=1e-3, averaging=True, random_state=None, callback=None,
                 should_stop=None, warm_start=False, n_jobs=1, center="zero"):
        self.model = model
        self.C = C
        self.max_iter = max_iter
        self.tol = tol
        self.averaging = averaging
        self.random_state = random_state
        self.callback = callback
        self.should_stop = should_stop
        self.warm_start = warm_start
        self.n_jobs = n_jobs
        self.center = center

    # ------------------------------------------------------------------ API
    def _check_params(self):
        check_scalar(self.C, "C", float, min_val=0, include_boundaries="neither")
        check_int(self.max_iter, "max_iter", min_val=1)
        check_scalar(self.tol, "tol", float, min_val=0)
        check_choice(self.center, "center", ("zero", "initial"))
        check_int(self.n_jobs, "n_jobs", min_val=1)

    def fit(self, Xs, Ys):
        """Learn ``w_`` from sequences ``Xs`` and targets ``Ys`` (full structures or label lists).

        Returns
        -------
        self
        """
        self._check_params()
        Xs, Ys = check_training_set(self.model, Xs, Ys, learner=type(self).__name__)
        if self.warm_start and hasattr(self, "w_"):
            w0 = self.model.check_w(self.w_)
        else:
            w0 = _initial_w(self.model, Xs, Ys, int(self.n_jobs))
        targets = self._prepare(Xs, Ys, w0)
        self._solve(Xs, targets, w0)
        return self

    def predict(self, Xs, constraints=None):
        """Decode every sequence with ``w_`` (``constraints``: one per sequence or None)."""
        return decode_each(self, Xs, constraints)

    # ------------------------------------------------------------ internals
    def _map(self, fn, items):
        if int(self.n_jobs) == 1 or len(items) < 2:
            return [fn(*it) for it in items]
        from concurrent.futures import ThreadPoolExecutor
        with ThreadPoolExecutor(max_workers=int(self.n_jobs)) as pool:
            return list(pool.map(lambda it: fn(*it), items))

    def _prepare(self, Xs, Ys, w):
        return self._map(lambda X, Y: self.model.make_target(X, Y, w), list(zip(Xs, Ys)))

    def _solve(self, Xs, targets, w_init):
        model = self.model
        n = len(Xs)
        lam = 1.0 / (float(self.C) * n)
        rng = np.random.default_rng(self.random_state)
        phi_true = self._map(lambda X, Y: model.joint_feature(X, Y), list(zip(Xs, targets)))
        d = phi_true[0].shape[0]
        c = np.zeros(d) if self.center == "zero" else np.asarray(w_init, dtype=float)
        v_blocks = np.zeros((n, d))
        l_blocks = np.zeros(n)
        v = np.zeros(d)
        w = model.project(c + v)
        w_avg = w.copy()
        k = 0
        self.loss_curve_, self.gap_curve_ = [], []
        self.stopped_early_ = False
        self.targets_ = targets
        self.n_iter_ = 0
        n_jobs = min(int(self.n_jobs), n)
        pool = None
        if n_jobs > 1:
            from concurrent.futures import ThreadPoolExecutor
            pool = ThreadPoolExecutor(max_workers=n_jobs)

        stats = self._map(lambda X: _feature_stats(model, X), [(X,) for X in Xs])

        def oracle(i, w_at):
            y_hat = model.loss_augmented_decode(Xs[i], targets[i], w_at)
            phi = model.joint_feature(Xs[i], y_hat) if stats[i] is None else \
                model.joint_feature(Xs[i], y_hat, stats=stats[i])
            return float(model.loss(targets[i], y_hat)), phi_true[i] - phi

        try:
            for it in range(int(self.max_iter)):
                gap = 0.0
                hinge = 0.0
                order = rng.permutation(n)
                # with n_jobs > 1 the blocks of a chunk are decoded together at the same w (the decoders
                # release the GIL), then stepped one after the other: each step is still an exact line
                # search towards a vertex of its block, so the dual keeps increasing
                for c0 in range(0, n, n_jobs):
                    if self.should_stop is not None and self.should_stop():
                        self.stopped_early_ = True
                        break
                    chunk = order[c0:c0 + n_jobs]
                    if pool is None or len(chunk) == 1:
                        results = [oracle(int(i), w) for i in chunk]
                    else:
                        w_at = w
                        results = list(pool.map(lambda i: oracle(int(i), w_at), chunk))
                    for i, (L, psi) in zip(chunk, results):
                        hinge += max(0.0, L - float(w @ psi)) / n
                        w_s = psi / (lam * n)
                        l_s = L / n
                        dvec = w_s - v_blocks[i]
                        g_i = (l_s - l_blocks[i]) - lam * float(w @ dvec)
                        gap += g_i
                        gamma = self._line_search(model, c, v, dvec, l_s - l_blocks[i], lam, g_i)
                        if gamma > 0:
                            v_blocks[i] += gamma * dvec
                            l_blocks[i] += gamma * (l_s - l_blocks[i])
                            v = v + gamma * dvec
                            w = model.project(c + v)
                        k += 1
                        w_avg = (k / (k + 2.0)) * w_avg + (2.0 / (k + 2.0)) * w
                if self.stopped_early_ and it == 0 and k == 0:
                    break
                primal = 0.5 * lam * float((w - c) @ (w - c)) + hinge
                if not (np.isfinite(primal) and np.all(np.isfinite(w))):
                    raise ParameterError(f"{type(self).__name__}: the optimisation produced non-finite parameters; "
                                         "check the features for huge values")
                self.loss_curve_.append(primal)
                self.gap_curve_.append(gap)
                self.n_iter_ = it + 1
                self.w_ = model.project(w_avg) if self.averaging else w
                if self.callback is not None:
                    self.callback(self, it)
                if self.stopped_early_ or gap <= float(self.tol) * max(1.0, primal):
                    break
        finally:
            if pool is not None:
                pool.shutdown()
        if not hasattr(self, "w_"):
            self.w_ = w
        return self

    @staticmethod
    def _line_search(model, c, v, dvec, dl, lam, g0) -> float:
        """Maximise the dual along ``v + γ d``, ``γ ∈ [0, 1]``: root of a decreasing derivative."""
        if g0 <= 0:
            return 0.0
        dd = float(dvec @ dvec)
        if dd <= 0:
            return 0.0
        if _orthant_projection(model):
            return _orthant_line_search(c + v, dvec, dl, lam)

        def deriv(gamma):
            return dl - lam * float(model.project(c + v + gamma * dvec) @ dvec)

        # closed form if the projection were inactive; exact when it is
        return unit_step_root(deriv, min(1.0, g0 / (lam * dd)), g0, bisections=40)


def _initial_w(model, Xs, Ys, n_jobs):
    """``model.initial_w(Xs, Ys)``, threaded when the model accepts ``n_jobs``."""
    if n_jobs > 1:
        import inspect
        try:
            if "n_jobs" in inspect.signature(model.initial_w).parameters:
                return model.initial_w(Xs, Ys, n_jobs=n_jobs)
        except (TypeError, ValueError):
            pass
    return model.initial_w(Xs, Ys)


def _feature_stats(model, X):
    """Per-item statistics that make the model's joint feature map cheap, when it offers them."""
    fn = getattr(model, "feature_stats", None)
    return fn(X) if callable(fn) else None


def _orthant_projection(model) -> bool:
    fn = getattr(model, "projection_is_orthant", None)
    return bool(fn()) if callable(fn) else False


def _orthant_line_search(u, d, dl, lam) -> float:
    """Root on ``[0, 1]`` of ``dl - lam * <max(u + γ d, 0), d>`` (exact; the projection is ``max(·, 0)``).

    The derivative is piecewise linear and non-increasing in ``γ`` with kinks
    where a coordinate of ``u + γ d`` crosses 0, so the root lies on the
    piece where its sign changes and is found by linear interpolation.
    """
    nz = d != 0
    kinks = -u[nz] / d[nz]
    kinks = np.unique(kinks[(kinks > 0) & (kinks < 1)])
    grid = np.concatenate([[0.0], kinks, [1.0]])
    vals = dl - lam * (np.maximum(u[None, :] + grid[:, None] * d[None, :], 0.0) @ d)
    if vals[0] <= 0:
        return 0.0
    if vals[-1] >= 0:
        return 1.0
    j = int(np.argmax(vals < 0))          # first grid point past the root
    g0, g1, f0, f1 = grid[j - 1], grid[j], vals[j - 1], vals[j]
    gamma = g0 + (g1 - g0) * f0 / (f0 - f1)
    return float(min(max(gamma, g0), g1)) if np.isfinite(gamma) else float(g0)
