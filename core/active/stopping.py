"""When to stop asking: convergence of the average uncertainty (Lou et al. 2014, eq. 1.8).

After every query the mean uncertainty ``q̄_t`` of the parts still unlabelled
is recorded. Over the last ``window + 1`` values the convergence measure is

    η = | rmean(q̄_{t-W+1..t}) - rmean(q̄_{t-W..t-1}) |

where ``rmean`` is the robust mean (mean of the values between the 10 % and
90 % quantiles of the window) and ``W`` the window. η is small once the
average uncertainty has stopped moving for about ``W`` queries; the criterion
fires when ``η <= threshold``. It needs no held-out data.
"""

from __future__ import annotations

import numpy as np

from ..checks import check_int, check_scalar
from ..exceptions import ParameterError

__all__ = ["robust_mean", "mean_uncertainty", "convergence_eta", "StoppingCriterion"]


def robust_mean(values, *, lower: float = 0.1, upper: float = 0.9) -> float:
    """Mean of the values lying between the ``lower`` and ``upper`` quantiles (inclusive).

    Parameters
    ----------
    values : array_like, shape (n,), n >= 1, finite
    lower, upper : float
        Quantile levels, ``0 <= lower <= upper <= 1``.

    Returns
    -------
    mean : float
    """
    x = _finite_values(values, "values", "expected at least one value, got an empty array")
    if not (0.0 <= lower <= upper <= 1.0):
        raise ParameterError(f"lower, upper: need 0 <= lower <= upper <= 1, got {lower!r}, {upper!r}")
    lo, hi = np.quantile(x, [lower, upper])
    kept = x[(x >= lo) & (x <= hi)]
    return float(kept.mean()) if kept.size else float(np.median(x))


def _finite_values(values, name: str, if_empty: str) -> np.ndarray:
    """``values`` flattened to float64, shape (n,), n >= 1, all finite; else a ParameterError naming ``name``."""
    x = np.asarray(values, dtype=np.float64).reshape(-1)
    if x.shape[0] == 0:
        raise ParameterError(f"{name}: {if_empty}")
    if not np.all(np.isfinite(x)):
        raise ParameterError(f"{name}: expected finite values, got {float(x[~np.isfinite(x)][0])!r}")
    return x


def mean_uncertainty(uncertainties) -> float:
    """Average uncertainty over the unlabelled pool (Lou et al. 2014, Alg. 1.2 line 12).

    Parameters
    ----------
    uncertainties : array_like, shape (n,), n >= 1

    Returns
    -------
    mean : float
    """
    q = _finite_values(uncertainties, "uncertainties",
                       "the unlabelled pool is empty, its average uncertainty is undefined")
    return float(q.mean())


def convergence_eta(history, window: int) -> float | None:
    """Convergence measure η of Lou et al. 2014, eq. 1.8 over the last ``window + 1`` averages.

    Parameters
    ----------
    history : array_like, shape (t,)
        Average uncertainty after each query, oldest first.
    window : int, >= 1

    Returns
    -------
    eta : float or None
        None while fewer than ``window + 1`` values are known.
    """
    check_int(window, "window", min_val=1)
    h = np.asarray(history, dtype=np.float64).reshape(-1)
    if h.shape[0] < window + 1:
        return None
    tail = h[-(window + 1):]
    return abs(robust_mean(tail[1:]) - robust_mean(tail[:-1]))


class StoppingCriterion:
    """Fires when the average uncertainty of the pool has converged (Lou et al. 2014, eq. 1.8).

    Parameters
    ----------
    window : int
        ``W``: number of queries the robust means run over (Lou et al. 2014 used 80 for a
        pool of 660 parts; about 5-10 % of the pool is a sensible choice).
    threshold : float
        Fire when ``η <= threshold``.
    relative : bool
        Divide η by the latest robust mean (scale-free threshold).

    Attributes
    ----------
    history_ : list of float
        Average uncertainty after each update.
    eta_ : float or None
        Latest η.
    eta_history_ : list of float or None
        η after each update.
    fired_ : bool
        True once η has reached the threshold (stays True until :meth:`reset`).
    fired_at_ : int or None
        Number of updates when it first fired.
    """

    def __init__(self, window: int = 10, threshold: float = 1e-3, *, relative: bool = False):
        self.window = check_int(window, "window", min_val=1)
        self.threshold = check_scalar(threshold, "threshold", float, min_val=0)
        self.relative = bool(relative)
        self.reset()

    def reset(self) -> "StoppingCriterion":
        """Forget every recorded value."""
        self.history_: list = []
        self.eta_history_: list = []
        self.eta_: float | None = None
        self.fired_ = False
        self.fired_at_: int | None = None
        return self

    def update(self, mean_uncertainty: float) -> bool:
        """Record the pool's average uncertainty after a query; return whether the criterion has fired.

        Parameters
        ----------
        mean_uncertainty : float, finite

        Returns
        -------
        fired : bool
        """
        value = check_scalar(mean_uncertainty, "mean_uncertainty", float)
        self.history_.append(value)
        eta = convergence_eta(self.history_, self.window)
        if eta is not None and self.relative:
            ref = abs(robust_mean(self.history_[-self.window:]))
            eta = eta / ref if ref > 0 else (0.0 if eta == 0 else np.inf)
        self.eta_ = eta
        self.eta_history_.append(eta)
        if not self.fired_ and eta is not None and eta <= self.threshold:
            self.fired_ = True
            self.fired_at_ = len(self.history_)
        return self.fired_

    def evidence(self) -> str:
        """A sentence the app can show about the state of the criterion."""
        n = len(self.history_)
        kind = "relative η" if self.relative else "η"
        if self.eta_ is None:
            return (f"not enough queries yet to judge convergence: {n} of the {self.window + 1} needed "
                    f"for {kind} over a window of {self.window}")
        if self.fired_:
            return (f"more labels are unlikely to help: {kind}={self.eta_:.3g} over the last {self.window} queries "
                    f"(threshold {self.threshold:.3g}; first reached after {self.fired_at_} queries)")
        return (f"the model is still changing: {kind}={self.eta_:.3g} over the last {self.window} queries "
                f"(threshold {self.threshold:.3g})")

    def as_dict(self) -> dict:
        """``{"eta", "fired", "evidence"}`` for the engine's stopping signal."""
        return {"eta": self.eta_, "fired": self.fired_, "evidence": self.evidence()}
