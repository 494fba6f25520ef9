"""The whole penalty path of 1-d optimal partitioning, and the label error along it.

For a 1-d signal the least-squares cost of the best segmentation with ``K``
segments, ``cost_K``, is computed for ``K = 1..K_max`` (segment neighbourhood,
exact). The penalized problem ``min_K cost_K + λ K`` then picks, as ``log λ``
grows, the vertices of the lower convex hull of ``(K, cost_K)``: the path is a
piecewise-constant map from ``log λ`` to a segmentation. Counting the label
errors of each segmentation on the path gives the piecewise-constant error
function whose minimising interval is the target of max-margin interval
regression of the penalty (Hocking et al. 2013).
"""

from __future__ import annotations

from dataclasses import dataclass

import numba
import numpy as np

from ..checks import check_int, check_signal
from ..exceptions import ParameterError
from ..metrics import region_errors
from ..types import Segmentation

__all__ = ["PenaltyPath", "penalty_path", "error_intervals", "min_error_interval"]


@numba.njit(cache=True, nogil=True)
def _segment_neighbourhood(x, k_max, min_size):
    T = x.shape[0]
    s1 = np.zeros(T + 1)
    s2 = np.zeros(T + 1)
    for i in range(T):
        s1[i + 1] = s1[i] + x[i]
        s2[i + 1] = s2[i] + x[i] * x[i]
    inf = np.inf
    cost = np.full((k_max + 1, T + 1), inf)
    arg = np.zeros((k_max + 1, T + 1), dtype=np.int64)
    for t in range(min_size, T + 1):
        m = s1[t]
        cost[1, t] = s2[t] - m * m / t
    for k in range(2, k_max + 1):
        for t in range(k * min_size, T + 1):
            best = inf
            bs = 0
            for s in range((k - 1) * min_size, t - min_size + 1):
                prev = cost[k - 1, s]
                if prev == inf:
                    continue
                n = t - s
                m = s1[t] - s1[s]
                c = prev + (s2[t] - s2[s]) - m * m / n
                if c < best:
                    best = c
                    bs = s
            cost[k, t] = best
            arg[k, t] = bs
    return cost[:, T].copy(), arg


def _backtrack(arg, k, T):
    ends = [T]
    t = T
    for kk in range(k, 1, -1):
        t = int(arg[kk, t])
        ends.append(t)
    return np.array(ends[::-1], dtype=np.int64)


@dataclass(frozen=True)
class PenaltyPath:
    """Segmentations chosen by the penalized cost as ``log λ`` grows.

    Attributes
    ----------
    n_segments : ndarray of int, shape (m,)
        Decreasing numbers of segments on the path (the lower convex hull of ``cost_K``).
    log_lower : ndarray, shape (m,)
        ``n_segments[j]`` is optimal for ``log λ`` in ``[log_lower[j], log_lower[j+1])``;
        ``log_lower[0] == -inf``.
    segmentations : tuple of Segmentation, length m
    costs : ndarray, shape (K_max,)
        ``cost_K`` (least squares, no penalty) for ``K = 1..K_max``.
    """

    n_segments: np.ndarray
    log_lower: np.ndarray
    segmentations: tuple
    costs: np.ndarray

    def segmentation_at(self, log_penalty: float) -> Segmentation:
        """The penalized optimum for ``λ = exp(log_penalty)``."""
        j = int(np.searchsorted(self.log_lower, log_penalty, side="right")) - 1
        return self.segmentations[max(j, 0)]


def penalty_path(x, *, k_max: int = 12, min_size: int = 1) -> PenaltyPath:
    """Exact penalty path of least-squares optimal partitioning of a 1-d signal.

    Parameters
    ----------
    x : array_like, shape (T,) or (T, 1)
        Finite signal.
    k_max : int
        Largest number of segments considered (penalties small enough to want
        more segments get the ``k_max`` segmentation).
    min_size : int
        Minimal segment length.

    Returns
    -------
    PenaltyPath
    """
    arr = check_signal(x, "x")
    check_int(k_max, "k_max", min_val=1)
    check_int(min_size, "min_size", min_val=1)
    T = arr.shape[0]
    k_max = int(min(k_max, T // int(min_size)))
    # centring does not change the costs but keeps the prefix sums well conditioned
    costs, arg = _segment_neighbourhood(np.ascontiguousarray(arr - arr.mean()), k_max, int(min_size))
    costs = costs[1:]
    # lower convex hull from the largest K: walking up in λ, K decreases
    ks = [k_max]
    lows = [-np.inf]
    k = k_max
    while k > 1:
        # smallest λ at which some K' < k becomes at least as good: λ = (cost_K' - cost_k) / (k - K')
        cand = np.array([(costs[kp - 1] - costs[k - 1]) / (k - kp) for kp in range(1, k)])
        cand = np.maximum(cand, 0.0)
        lam = float(cand.min())
        kp = int(np.flatnonzero(cand <= lam * (1 + 1e-12) + 1e-300)[0]) + 1  # fewest segments on ties
        ks.append(kp)
        lows.append(np.log(lam) if lam > 0 else -np.inf)
        k = kp
    lows_arr = np.maximum.accumulate(np.array(lows))
    segs = tuple(Segmentation(_backtrack(arg, kk, T), T) for kk in ks)
    return PenaltyPath(np.array(ks, dtype=np.int64), lows_arr, segs, costs)


def error_intervals(path: PenaltyPath, labels) -> tuple:
    """Label errors of every segmentation on the path.

    Returns
    -------
    log_lower : ndarray, shape (m,)
    fp, fn : ndarray of int, shape (m,)
    n_labels : int
    """
    fp = np.zeros(len(path.segmentations), dtype=np.int64)
    fn = np.zeros_like(fp)
    n = 0
    for j, seg in enumerate(path.segmentations):
        err = region_errors(labels, seg)
        fp[j], fn[j], n = err.fp, err.fn, err.n_labels
    return path.log_lower.copy(), fp, fn, n


def min_error_interval(log_lower, errors) -> tuple:
    """The widest interval of ``log λ`` with the smallest error.

    Parameters
    ----------
    log_lower : ndarray, shape (m,)
        Non-decreasing left ends of the pieces (``-inf`` first).
    errors : ndarray, shape (m,)
        Error on each piece.

    Returns
    -------
    (lower, upper, min_error) : tuple of float
        ``lower`` may be ``-inf`` and ``upper`` ``+inf``.
    """
    lo = np.asarray(log_lower, dtype=np.float64)
    err = np.asarray(errors, dtype=np.float64)
    if lo.shape != err.shape or lo.ndim != 1 or lo.size == 0:
        raise ParameterError(f"log_lower, errors: expected two 1-d arrays of the same non-zero length, "
                             f"got shapes {lo.shape} and {err.shape}")
    hi = np.append(lo[1:], np.inf)
    best = err.min()
    best_run, best_width = None, -1.0
    j = 0
    while j < err.size:
        if err[j] == best:
            k = j
            while k + 1 < err.size and err[k + 1] == best:
                k += 1
            width = hi[k] - lo[j]
            if width > best_width:
                best_run, best_width = (lo[j], hi[k]), width
            j = k + 1
        else:
            j += 1
    return float(best_run[0]), float(best_run[1]), float(best)
