"""Best-vs-second question of a sync: where a single anchor would move the path the most.

The cheapest path *different* from the best one (:meth:`SyncAligner.predict`'s runner-up) usually
differs by one cell, a frame away: it says how sure the path is, not where to ask. The question here
compares the best path with the cheapest path that strays at least ``separation_s`` away from it in
the target at some reference time: the cost of the cheapest path through every cell is the sum of a
forward and a backward DTW accumulation minus the cell's cost, so that runner-up and the reference
time where it is furthest from the best path come out of two passes over the grid.

On silence the features of both recordings are nearly zero and every path through a pause costs
the same, wherever it spends the extra time of the longer pause (a constant cost per cell would not
help: the shortest paths through a pause all have the same number of cells). With the plain cost the
margin there would be 0, and every pause would tie as the most uncertain place though no anchor
placed in silence tells anything. So, for the question only:

* every cell also costs ``eps * (1 + |d| / duration)``, with ``d`` its distance (s) from the straight
  line between the two recordings' ends and ``eps`` 5 % of the median cell cost: a faint preference
  for an even tempo that decides only where the descriptors cannot. In a pause the best path then
  spreads the pause evenly and a path that strays from it costs more by ``eps`` times its extra
  distance, so the margin on silence is small but not 0 and grows with how far and how long the
  alternative strays; in music the descriptors' mismatch (20 times larger per cell) decides;
* the question is asked only where the reference *sounds*: at audible frames (descriptors above a
  tenth of the recording's loud frames) from its first attack to its last (:func:`sounding_frames`).
  As the score aligner's margins never let its rests move (:class:`marginalia.align.aligner.OnsetMoves`),
  a lead-in, a pause or the ring of the final chord is never asked about: a tail that fades differently
  in the two recordings is as free as silence (the tempo prior decides it), and no anchor placed there
  tells anything.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numba
import numpy as np

__all__ = ["SyncQuestion", "sounding_frames", "through_costs"]


@dataclass(frozen=True)
class SyncQuestion:
    """Where an anchor would change a sync path the most.

    Attributes
    ----------
    reference_s : float
        Time on the reference to ask about.
    best_target_s : float
        Where the best path puts it on the target.
    alternative_target_s : float
        Where the runner-up (the cheapest path at least ``separation_s`` away there) puts it.
    margin : float
        Cost of the runner-up minus the cost of the best path, under the cell cost plus ``eps``
        (>= 0; small: the two are nearly as good, an anchor there is worth the most).
    """

    reference_s: float
    best_target_s: float
    alternative_target_s: float
    margin: float


@numba.njit(cache=True, nogil=True)
def _accumulate(C):
    """Forward DTW accumulation: ``D[i, j]`` the cheapest path cost from (0, 0) to (i, j), cell included."""
    TA, TB = C.shape
    D = np.empty((TA, TB))
    for i in range(TA):
        for j in range(TB):
            c = C[i, j]
            if i == 0 and j == 0:
                D[i, j] = c
                continue
            best = np.inf
            if i > 0 and D[i - 1, j] < best:
                best = D[i - 1, j]
            if j > 0 and D[i, j - 1] < best:
                best = D[i, j - 1]
            if i > 0 and j > 0 and D[i - 1, j - 1] < best:
                best = D[i - 1, j - 1]
            D[i, j] = best + c
    return D


@numba.njit(cache=True, nogil=True)
def _backtrack_rows(D):
    """First and last target frame of the best path in every reference frame, shapes (TA,)."""
    TA, TB = D.shape
    lo = np.full(TA, TB, np.int64)
    hi = np.full(TA, -1, np.int64)
    i, j = TA - 1, TB - 1
    while True:
        lo[i] = min(lo[i], j)
        hi[i] = max(hi[i], j)
        if i == 0 and j == 0:
            break
        if i == 0:
            j -= 1
        elif j == 0:
            i -= 1
        else:
            a, b, c = D[i - 1, j - 1], D[i - 1, j], D[i, j - 1]
            if a <= b and a <= c:
                i -= 1
                j -= 1
            elif b <= c:
                i -= 1
            else:
                j -= 1
    return lo, hi


def through_costs(C) -> tuple:
    """Cost of the cheapest path through every cell, and the best path's target frames per reference frame.

    Parameters
    ----------
    C : ndarray, shape (TA, TB)
        Cell costs (``inf`` forbids a cell).

    Returns
    -------
    through : ndarray, shape (TA, TB)
    lo, hi : ndarray of int, shape (TA,)
        First and last target frame of the best path in every reference frame.
    """
    C = np.ascontiguousarray(C, dtype=np.float64)
    forward = _accumulate(C)
    backward = _accumulate(C[::-1, ::-1].copy())[::-1, ::-1]
    lo, hi = _backtrack_rows(forward)
    with np.errstate(invalid="ignore"):
        through = forward + backward - C
    through[~np.isfinite(C)] = np.inf
    return through, lo, hi


def anchor_mask(C, cells) -> None:
    """Forbid (``inf``) the cells a path through every anchor cell ``(i, j)`` cannot visit, in place."""
    for i, j in np.asarray(cells, dtype=np.int64).reshape(-1, 2):
        C[:i, j + 1:] = np.inf
        C[i + 1:, :j] = np.inf


def audible_frames(X) -> np.ndarray:
    """Frames whose varying descriptors reach a tenth of the recording's loud frames (95th percentile), shape (T,)."""
    X = np.asarray(X, dtype=np.float64)
    varying = X[:, np.ptp(X, axis=0) > 0] if X.shape[0] > 1 else X
    norm = np.linalg.norm(varying, axis=1)
    loud = float(np.percentile(norm, 95)) if norm.size else 0.0
    return norm >= 0.1 * loud if loud > 0 else np.zeros(norm.shape, bool)


def attack_strength(X) -> np.ndarray:
    """What starts in every frame: the length of the descriptors' rises from the frame before, shape (T,)."""
    X = np.asarray(X, dtype=np.float64)
    if X.shape[0] == 0:
        return np.zeros(0)
    rise = np.maximum(np.diff(X, axis=0, prepend=X[:1]), 0.0)
    return np.linalg.norm(rise, axis=1)


def sounding_frames(X, attack_fraction: float = 0.1) -> np.ndarray:
    """Audible frames from the recording's first attack to its last, shape (T,) of bool.

    An attack is a frame whose descriptors rise by at least ``attack_fraction`` of the audible frames'
    95th percentile of rises (:func:`attack_strength`): the lead-in before the first one and the ring
    of the last one are left out, as is every pause (:func:`audible_frames`).
    """
    audible = audible_frames(X)
    rise = attack_strength(X)
    if not audible.any():
        return audible
    top = float(np.percentile(rise[audible], 95))
    hits = np.flatnonzero(audible & (rise >= attack_fraction * top)) if top > 0 else np.zeros(0, np.int64)
    if hits.size == 0:
        return audible
    span = np.zeros_like(audible)
    span[hits[0]:hits[-1] + 1] = True
    return audible & span


def even_tempo_prior(TA: int, TB: int) -> np.ndarray:
    """``1 + |d| / duration`` of every cell, ``d`` its distance from the line between the grid's corners, (TA, TB).

    Distances along the target, in units of the longer recording's length.
    """
    i = np.arange(TA)[:, None] / max(TA - 1, 1)
    j = np.arange(TB)[None, :] / max(TB - 1, 1)
    return 1.0 + np.abs(j - i) * (TB / max(TA, TB))


def ask(C, separation: int, audible=None, eps_fraction: float = 0.05) -> tuple:
    """Reference frame, best and runner-up target frames and margin of the question on a cost grid.

    Parameters
    ----------
    C : ndarray, shape (TA, TB)
        Cell costs (``inf`` forbids a cell); modified in place (the even-tempo prior added).
    separation : int
        Least distance (target frames) between the runner-up and the best path at the question.
    audible : ndarray of bool, shape (TA,), optional
        Reference frames the question may be asked at (default: all).
    eps_fraction : float
        ``eps`` as a fraction of the median finite cell cost (see the module notes).

    Returns
    -------
    (i, j_best, j_alt, margin) or None
        None when no path strays that far (a grid too narrow or anchors everywhere).
    """
    finite = C[np.isfinite(C)]
    eps = max(eps_fraction * float(np.median(finite)), 1e-9) if finite.size else 1e-9
    C += eps * even_tempo_prior(*C.shape)
    through, lo, hi = through_costs(C)
    best = float(through[-1, -1])
    TB = C.shape[1]
    cols = np.arange(TB)
    # distance of every cell to the best path's cells of its reference frame
    dist = np.maximum(lo[:, None] - cols[None, :], cols[None, :] - hi[:, None])
    far = np.where(dist >= separation, through, np.inf)
    if audible is not None:
        far[~np.asarray(audible, bool)] = np.inf
    alt_cost = far.min(axis=1)
    if not np.isfinite(alt_cost).any():
        return None
    low = float(alt_cost.min())
    # the runner-up's rows where it is at its cheapest: ask where it is furthest from the best path
    tol = 1e-9 * max(abs(low), 1.0)
    rows = np.flatnonzero(alt_cost <= low + tol)
    alt_j = far[rows].argmin(axis=1)
    reach = dist[rows, alt_j]
    k = int(np.argmax(reach))
    i = int(rows[k])
    return i, 0.5 * (lo[i] + hi[i]), int(alt_j[k]), max(low - best, 0.0)


def pool_factor(TA: int, TB: int, max_cells: int) -> int:
    """Smallest pooling of both recordings' frames that keeps the grid within ``max_cells``."""
    return max(1, math.ceil(math.sqrt(TA * TB / max_cells)))
