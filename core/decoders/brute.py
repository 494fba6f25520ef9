"""Brute-force segmentation oracles for tests: enumerate every segmentation of a tiny sequence.

Everything here is computed the slow, obvious way (segment means, dense partition matrices,
counting changes inside regions) so that it shares no code with the fast decoders it checks.
Use only for ``T <= 10`` (at most ``2**(T-1)`` segmentations).
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from typing import Optional

import numpy as np

from ..exceptions import ParameterError
from ..types import Segmentation
from .seg_constraints import SegmentConstraints

__all__ = [
    "brute_force_segmentations",
    "brute_cost",
    "brute_frobenius_loss",
    "brute_hamming_loss",
    "brute_penalized",
    "brute_fixed_k",
    "brute_loss_augmented",
    "brute_second_best",
]

_MAX_T = 12


def brute_force_segmentations(T: int, min_size: int = 1) -> Iterator[Segmentation]:
    """Every segmentation of ``T`` samples whose segments have at least ``min_size`` samples.

    Parameters
    ----------
    T : int
        Number of samples, ``1 <= T <= 12``.
    min_size : int

    Yields
    ------
    Segmentation
    """
    T = int(T)
    if not 1 <= T <= _MAX_T:
        raise ParameterError(f"T: brute force enumerates 2**(T-1) segmentations; expected 1 <= T <= {_MAX_T}, got {T}")
    if int(min_size) < 1:
        raise ParameterError(f"min_size: expected an integer >= 1, got {min_size}")
    for n in range(T):
        for cut in itertools.combinations(range(1, T), n):
            ends = list(cut) + [T]
            lengths = np.diff([0] + ends)
            if lengths.min() >= min_size:
                yield Segmentation(np.array(ends, dtype=np.int64), T)


def _transformed(X, metric):
    X = np.asarray(X, dtype=np.float64)
    if X.ndim == 1:
        X = X[:, None]
    if metric is None:
        return X
    L = np.asarray(metric, dtype=np.float64)
    return X * L if L.ndim == 1 else X @ L.T


def brute_cost(X, segmentation: Segmentation, penalty: float = 0.0, *, metric=None) -> float:
    """Scatter of every segment around its own mean under the metric, plus penalty × n_segments."""
    Z = _transformed(X, metric)
    total = 0.0
    start = 0
    for stop in segmentation.changes:
        seg = Z[start:stop]
        total += float(((seg - seg.mean(axis=0)) ** 2).sum())
        start = stop
    return total + penalty * segmentation.n_segments


def _partition_matrix(seg: Segmentation) -> np.ndarray:
    lab = seg.labels()
    same = lab[:, None] == lab[None, :]
    sizes = np.bincount(lab)[lab]
    return same / sizes[:, None]


def brute_frobenius_loss(a: Segmentation, b: Segmentation) -> float:
    """``||M(a) - M(b)||_F^2`` from the dense ``T x T`` normalised partition matrices."""
    return float(((_partition_matrix(a) - _partition_matrix(b)) ** 2).sum())


def brute_hamming_loss(a: Segmentation, b: Segmentation) -> int:
    """Size of the symmetric difference of the change sets (T excluded)."""
    return len(set(a.breakpoints.tolist()) ^ set(b.breakpoints.tolist()))


def _satisfies(seg: Segmentation, constraints: Optional[SegmentConstraints]) -> bool:
    if constraints is None:
        return True
    bp = set(seg.breakpoints.tolist())
    for r in constraints.regions:
        n = sum(1 for c in bp if r.start < c < r.stop)
        if n < r.min_changes or (r.max_changes is not None and n > r.max_changes):
            return False
    return all(b.index in bp for b in constraints.boundaries)


def _feasible(T, min_size, constraints, n_segments=None):
    for seg in brute_force_segmentations(T, min_size):
        if (n_segments is None or seg.n_segments == n_segments) and _satisfies(seg, constraints):
            yield seg


def _ranked(X, penalty, metric, min_size, constraints, n_segments=None):
    T = np.asarray(X).shape[0]
    rows = [(brute_cost(X, seg, penalty, metric=metric), seg)
            for seg in _feasible(T, min_size, constraints, n_segments)]
    rows.sort(key=lambda r: r[0])
    return rows


def brute_penalized(X, penalty: float, *, metric=None, min_size: int = 1, constraints=None):
    """Minimum-cost feasible segmentation; returns ``(cost, segmentation)`` or None if none is feasible."""
    rows = _ranked(X, penalty, metric, min_size, constraints)
    return rows[0] if rows else None


def brute_fixed_k(X, n_segments: int, *, metric=None, min_size: int = 1, constraints=None):
    """Minimum-scatter feasible segmentation with exactly ``n_segments`` segments, ``(cost, seg)`` or None."""
    rows = _ranked(X, 0.0, metric, min_size, constraints, n_segments)
    return rows[0] if rows else None


def brute_second_best(X, penalty: float = 0.0, *, metric=None, min_size: int = 1, constraints=None,
                      n_segments=None):
    """All feasible ``(cost, segmentation)`` pairs sorted by cost (the first two are best and second)."""
    return _ranked(X, 0.0 if n_segments is not None else penalty, metric, min_size, constraints, n_segments)


def brute_loss_augmented(X, penalty: float, truth: Segmentation, *, loss: str = "frobenius",
                         loss_scale: float = 1.0, metric=None, min_size: int = 1, constraints=None):
    """Minimum of ``cost - loss_scale * loss(truth, y)``; returns ``(objective, cost, loss, seg)`` or None."""
    T = np.asarray(X).shape[0]
    fn = brute_frobenius_loss if loss == "frobenius" else brute_hamming_loss
    best = None
    for seg in _feasible(T, min_size, constraints):
        c = brute_cost(X, seg, penalty, metric=metric)
        lval = float(fn(truth, seg))
        obj = c - loss_scale * lval
        if best is None or obj < best[0]:
            best = (obj, c, lval, seg)
    return best
