"""The runner-up of a penalised segmentation that a region label would tell apart from the best.

The unrestricted second-best segmentation is almost always the best one with a
change moved by one sample: its margin measures how sharply a change is
located, not whether it exists, and a region label ("no change here",
"exactly one change here") cannot tell the two apart. For active learning the
runner-up that matters differs from the best in the *number of changes* of
some region. This module finds the cheapest such neighbour of the best
segmentation ``b`` (changes ``c_1 < ... < c_K``, segment ends ``c_{K+1} = T``):

* **remove one change** ``c_k``: merge its two segments ``[s, c)`` and ``[c, e)``;
  the cost rises by ``G(s, c, e) - λ``;
* **add one change** ``t`` inside a segment ``[s, e)`` (``s + m <= t <= e - m``
  for the minimum segment length ``m``): the cost rises by ``λ - G(s, t, e)``;

where ``λ`` is the price of one segment and ``G(s, t, e) = scatter(s, e) -
scatter(s, t) - scatter(t, e) = ‖S_t - S_s‖²/(t - s) + ‖S_e - S_t‖²/(e - t) -
‖S_e - S_s‖²/(e - s)`` (``S`` the prefix sums of the metric-transformed samples)
is the drop of the within-segment scatter when ``[s, e)`` is split at ``t``.
Both moves are evaluated from prefix sums in one ``O(T q)`` pass. A short
segment inside a long one (a focal aberration) needs two changes at once, and
neither alone pays for itself, so two more moves are tried as well:

* **add a pair** ``t1 < t2`` inside ``[s, e)`` with ``t2 - t1 <= pair_width``: cost
  ``2λ - (scatter(s, e) - scatter(s, t1) - scatter(t1, t2) - scatter(t2, e))``,
  ``O(T q pair_width)``;
* **remove a pair**: merge three consecutive segments, ``O(K)``.

Moves that would break a partial label or ``min_size`` are skipped: labels are
read as the allowed segments ``[s, t)`` of
:meth:`marginalia.decoders.seg_constraints.SegmentConstraints.transition_bounds`, and a
move is allowed when every segment it creates is.

Because ``b`` is the constrained optimum, every allowed move costs ``>= 0``
(up to rounding). The neighbour is exact for "``b`` with one change (or one
short pair) added or removed"; the best segmentation with ``K ± 1`` changes
anywhere may be cheaper (its other changes may move as well), so the margin is
an upper bound of that one.

:func:`refine_segmentation` uses the same moves, plus moving one change between
its neighbours, as a local search that follows the optimum when the
parameters change a little.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

import numba
import numpy as np

from ..checks import check_int, check_scalar
from ..decoders.seg_constraints import SegmentConstraints
from ..decoders.segmentation import SegmentationResult, metric_transform, segment_penalized
from ..exceptions import ParameterError
from ..types import Segmentation

__all__ = ["CountRunnerUp", "count_runner_up", "segment_count_runner_up", "refine_segmentation",
           "refine_with_runner_up", "transition_bounds", "PAIR_WIDTH"]

#: longest short segment (samples) that an added pair of changes may cut out (e.g. a focal aberration);
#: 0 turns the pair additions off. Off by default: the scan costs O(T q width) per part (about 4 ms for
#: 5,000 probes at width 16), too much for scoring a pool after every label; pair removals stay (O(K)).
PAIR_WIDTH = 0


_MOVES = ("add", "remove", "add-pair", "remove-pair")


@dataclass(frozen=True)
class CountRunnerUp:
    """The cheapest neighbour of a segmentation with one or two changes more or fewer.

    Attributes
    ----------
    segmentation : Segmentation or None
        The neighbour; None when no move is allowed (too short, or every move breaks a label).
    delta : float
        Its cost minus the best's (``inf`` when there is none), >= 0 up to rounding.
    move : {"add", "remove", "add-pair", "remove-pair", None}
    indices : tuple of int
        The change indices added or removed (empty when there is none).
    """

    segmentation: Optional[Segmentation]
    delta: float
    move: Optional[str]
    indices: tuple = ()


@numba.njit(cache=True, nogil=True)
def _explained(S, a, b):
    """``‖S_b - S_a‖² / (b - a)``: the scatter a segment's mean explains."""
    acc = 0.0
    for j in range(S.shape[1]):
        u = S[b, j] - S[a, j]
        acc += u * u
    return acc / (b - a)


@numba.njit(cache=True, nogil=True)
def _allowed(lo, hi, end_ok, s, t):
    return end_ok[t] and lo[t] <= s and s <= hi[t]


@numba.njit(cache=True, nogil=True)
def _best_moves(S, ends, lo, hi, end_ok, penalty, width, moves_out, where_out):
    """Cheapest move of each kind (add, remove, add a pair, remove a pair) of ``ends``.

    Writes ``moves_out[k]`` (cost change, ``inf`` when no move of kind ``k`` is
    allowed) and ``where_out[k]`` (the change indices). ``width`` bounds the
    length of the short segment an added pair cuts out (0: no pair moves).
    """
    T = S.shape[0] - 1
    for k in range(4):
        moves_out[k] = np.inf
        where_out[k, 0] = -1
        where_out[k, 1] = -1
    left = np.empty(T + 1)
    right = np.empty(T + 1)
    s = 0
    n = ends.shape[0]
    for k in range(n):
        e = ends[k]
        whole = _explained(S, s, e)
        for t in range(s + 1, e):
            left[t] = _explained(S, s, t)
            right[t] = _explained(S, t, e)
        for t in range(s + 1, e):
            if _allowed(lo, hi, end_ok, s, t) and _allowed(lo, hi, end_ok, t, e):
                d = penalty - (left[t] + right[t] - whole)
                if d < moves_out[0]:
                    moves_out[0] = d
                    where_out[0, 0] = t
            if width > 0 and _allowed(lo, hi, end_ok, s, t):
                for t2 in range(t + 1, min(t + width, e - 1) + 1):
                    if _allowed(lo, hi, end_ok, t, t2) and _allowed(lo, hi, end_ok, t2, e):
                        d = 2.0 * penalty - (left[t] + _explained(S, t, t2) + right[t2] - whole)
                        if d < moves_out[2]:
                            moves_out[2] = d
                            where_out[2, 0] = t
                            where_out[2, 1] = t2
        if k + 1 < n and _allowed(lo, hi, end_ok, s, ends[k + 1]):
            d = _explained(S, s, e) + _explained(S, e, ends[k + 1]) - _explained(S, s, ends[k + 1]) - penalty
            if d < moves_out[1]:
                moves_out[1] = d
                where_out[1, 0] = e
        if k + 2 < n and _allowed(lo, hi, end_ok, s, ends[k + 2]):
            f = ends[k + 1]
            g = ends[k + 2]
            d = (_explained(S, s, e) + _explained(S, e, f) + _explained(S, f, g) - _explained(S, s, g)
                 - 2.0 * penalty)
            if d < moves_out[3]:
                moves_out[3] = d
                where_out[3, 0] = e
                where_out[3, 1] = f
        s = e


@numba.njit(cache=True, nogil=True)
def _apply(ends, kind, where):
    """Segment ends after move ``kind`` (0 add, 1 remove, 2 add pair, 3 remove pair) at ``where``."""
    if kind == 0 or kind == 2:
        m = 1 if kind == 0 else 2
        out = np.empty(ends.shape[0] + m, dtype=np.int64)
        j = 0
        i = 0
        for k in range(ends.shape[0]):
            while i < m and where[i] < ends[k]:
                out[j] = where[i]
                j += 1
                i += 1
            out[j] = ends[k]
            j += 1
        return out
    m = 1 if kind == 1 else 2
    out = np.empty(ends.shape[0] - m, dtype=np.int64)
    j = 0
    for k in range(ends.shape[0]):
        if ends[k] != where[0] and (m == 1 or ends[k] != where[1]):
            out[j] = ends[k]
            j += 1
    return out


@numba.njit(cache=True, nogil=True)
def _refine(S, ends, lo, hi, end_ok, penalty, width, max_passes, tol, moves, where, reach):
    """Local search from a feasible segmentation; returns ``(ends, converged)``.

    A pass moves each change to its best place between its neighbours, then takes
    the best add or remove move; pair moves are tried only when no single move
    helps. Stops when no move lowers the cost by more than ``tol``; then
    ``moves``/``where`` hold the moves of the returned segmentation (its runner-up).
    """
    ends = ends.copy()
    for _ in range(max_passes):
        improved = False
        s = 0
        n = ends.shape[0]
        for k in range(n - 1):
            c = ends[k]
            e = ends[k + 1]
            here = _explained(S, s, c) + _explained(S, c, e)
            best_t = c
            best_g = here
            for t in range(max(s + 1, c - reach), min(e, c + reach + 1)):
                if t != c and _allowed(lo, hi, end_ok, s, t) and _allowed(lo, hi, end_ok, t, e):
                    g = _explained(S, s, t) + _explained(S, t, e)
                    if g > best_g:
                        best_g = g
                        best_t = t
            if best_t != c and best_g - here > tol:
                ends[k] = best_t
                improved = True
            s = ends[k]
        _best_moves(S, ends, lo, hi, end_ok, penalty, 0, moves, where)
        kind = 0 if moves[0] <= moves[1] else 1
        if moves[kind] >= -tol:
            # no single move helps: a pair may (removing two neighbouring changes is always a candidate,
            # adding a pair only with width > 0), and the runner-up counts both, so the search must too
            if width > 0:
                _best_moves(S, ends, lo, hi, end_ok, penalty, width, moves, where)
            kind = int(np.argmin(moves))
        if moves[kind] < -tol:
            ends = _apply(ends, kind, where[kind])
            improved = True
        if not improved:
            return ends, True
    return ends, False


@numba.njit(cache=True, nogil=True)
def _penalised_cost(S, sq_total, ends, penalty):
    s = 0
    explained = 0.0
    for k in range(ends.shape[0]):
        e = ends[k]
        for j in range(S.shape[1]):
            u = S[e, j] - S[s, j]
            explained += u * u / (e - s)
        s = e
    return sq_total - explained + penalty * ends.shape[0]


def transition_bounds(T: int, min_size: int, constraints: Optional[SegmentConstraints]):
    """Allowed segments ``[s, t)``: ``end_ok[t] and lo[t] <= s <= hi[t]`` (labels and ``min_size``).

    Returns
    -------
    lo, hi : ndarray of int64, shape (T + 1,)
    end_ok : ndarray of bool, shape (T + 1,)
    """
    if constraints is None:
        t = np.arange(T + 1, dtype=np.int64)
        return np.zeros(T + 1, dtype=np.int64), t - int(min_size), np.ones(T + 1, dtype=np.bool_)
    lo, hi, end_ok, _, _ = constraints.transition_bounds(int(min_size))
    return (np.ascontiguousarray(lo, dtype=np.int64), np.ascontiguousarray(hi, dtype=np.int64),
            np.ascontiguousarray(end_ok, dtype=np.bool_))


def _check(X, penalty, metric, min_size, constraints):
    Z = metric_transform(X, metric)
    T = Z.shape[0]
    if T < 1 or not np.all(np.isfinite(Z)):
        raise ParameterError(f"X: expected at least one sample, all finite, got shape {np.shape(X)}")
    check_scalar(penalty, "penalty", float, min_val=0)
    check_int(min_size, "min_size", min_val=1)
    if constraints is not None and (not isinstance(constraints, SegmentConstraints)
                                    or constraints.n_samples != T):
        raise ParameterError(f"constraints: expected SegmentConstraints for {T} samples, got {constraints!r}")
    S = np.zeros((T + 1, Z.shape[1]))
    np.cumsum(Z, axis=0, out=S[1:])
    return Z, S


def _check_segmentation(seg, T, name):
    if not isinstance(seg, Segmentation) or seg.n_samples != T:
        got = seg.n_samples if isinstance(seg, Segmentation) else type(seg).__name__
        raise ParameterError(f"{name}: expected a Segmentation of {T} samples, got {got!r}")
    return np.ascontiguousarray(seg.changes, dtype=np.int64)


def _check_width(pair_width) -> int:
    return check_int(pair_width, "pair_width", min_val=0)


def count_runner_up(X, best: Segmentation, penalty: float, *, metric=None, min_size: int = 1,
                    constraints: Optional[SegmentConstraints] = None, pair_width: int = PAIR_WIDTH) -> CountRunnerUp:
    """Cheapest neighbour of ``best`` with one or two changes more or fewer (see the module notes).

    Parameters
    ----------
    X : array_like, shape (T, p) or (T,)
        Finite samples.
    best : Segmentation
        A segmentation of the ``T`` samples, normally the (constrained) optimum.
    penalty : float
        Cost per segment ``λ`` (>= 0), as in :func:`marginalia.decoders.segmentation.segment_penalized`.
    metric : None, array (p,) or array (q, p)
        Identity, diagonal weights, or linear map ``L``.
    min_size : int
        Minimum number of samples per segment (>= 1).
    constraints : SegmentConstraints, optional
        Partial labels the neighbour must keep satisfying.
    pair_width : int
        Longest short segment that an added pair of changes cuts out (0: no pair moves).

    Returns
    -------
    CountRunnerUp
    """
    Z, S = _check(X, penalty, metric, min_size, constraints)
    width = _check_width(pair_width)
    T = Z.shape[0]
    ends = _check_segmentation(best, T, "best")
    lo, hi, end_ok = transition_bounds(T, min_size, constraints)
    moves = np.empty(4)
    where = np.empty((4, 2), dtype=np.int64)
    _best_moves(S, ends, lo, hi, end_ok, float(penalty), width, moves, where)
    return _runner_up(ends, T, moves, where)


def segment_count_runner_up(X, penalty: float, *, metric=None, min_size: int = 1,
                            constraints: Optional[SegmentConstraints] = None, pair_width: int = PAIR_WIDTH):
    """The best penalised segmentation and its count runner-up (:func:`count_runner_up`).

    A drop-in for :func:`marginalia.decoders.segmentation.segment_second_best` where the
    runner-up must differ in what a region label decides (the number of changes).

    Parameters
    ----------
    X, penalty, metric, min_size, constraints
        As in :func:`marginalia.decoders.segmentation.segment_penalized`.
    pair_width : int
        As in :func:`count_runner_up`.

    Returns
    -------
    best : SegmentationResult
    runner_up : SegmentationResult or None
        None when no change can be added or removed without breaking a label.
    """
    best = segment_penalized(X, penalty, metric=metric, min_size=min_size, constraints=constraints)
    r = count_runner_up(X, best.segmentation, penalty, metric=metric, min_size=min_size, constraints=constraints,
                        pair_width=pair_width)
    if r.segmentation is None:
        return best, None
    return best, SegmentationResult(r.segmentation, best.cost + max(r.delta, 0.0))


def _runner_up(ends, T, moves, where) -> CountRunnerUp:
    kind = int(np.argmin(moves))
    if not np.isfinite(moves[kind]):
        return CountRunnerUp(None, float("inf"), None, ())
    new = _apply(ends, kind, where[kind])
    idx = tuple(int(i) for i in where[kind, :1 if kind < 2 else 2])
    return CountRunnerUp(Segmentation(new, T), float(moves[kind]), _MOVES[kind], idx)


def refine_with_runner_up(X, start: Segmentation, penalty: float, *, metric=None, min_size: int = 1,
                          constraints: Optional[SegmentConstraints] = None, pair_width: int = PAIR_WIDTH,
                          max_passes: int = 20, move_reach: Optional[int] = None):
    """Improve a feasible segmentation by local moves until none lowers the penalised cost; also its runner-up.

    A pass moves every change, one after the other, to its cheapest place between
    its neighbours, then adds or removes the one change that saves the most (a
    pair, when no single change does). Used to follow the optimum cheaply when
    the parameters move a little (a perceptron step): started from the previous
    optimum it usually lands on the new one, but it is a local search, not an
    exact decoder.

    Parameters
    ----------
    X, penalty, metric, min_size, constraints
        As in :func:`marginalia.decoders.segmentation.segment_penalized`.
    start : Segmentation
        Must satisfy ``constraints`` and ``min_size`` (ParameterError otherwise).
    pair_width : int
        As in :func:`count_runner_up`.
    max_passes : int
        Upper bound on the passes (each ``O(T q)``, ``O(T q pair_width)`` when pairs are tried).
    move_reach : int or None
        A change is moved at most this many samples per pass (None: anywhere
        between its neighbours); adding and removing still scan every position.

    Returns
    -------
    result : SegmentationResult
        Never costlier than ``start``.
    runner_up : CountRunnerUp
        :func:`count_runner_up` of the result (the last pass computes it anyway).
    """
    Z, S = _check(X, penalty, metric, min_size, constraints)
    width = _check_width(pair_width)
    T = Z.shape[0]
    ends = _check_segmentation(start, T, "start")
    check_int(max_passes, "max_passes", min_val=1)
    if move_reach is not None:
        check_int(move_reach, "move_reach", min_val=1, what="None or an integer")
    lo, hi, end_ok = transition_bounds(T, min_size, constraints)
    s = np.r_[0, ends[:-1]]
    if not np.all(end_ok[ends] & (lo[ends] <= s) & (s <= hi[ends])):
        raise ParameterError(f"start: {start.breakpoints.tolist()} breaks a label or min_size={min_size}")
    sq_total = float(np.einsum("ij,ij->", Z, Z))
    tol = 1e-12 * max(1.0, sq_total, float(penalty) * T)
    moves = np.empty(4)
    where = np.empty((4, 2), dtype=np.int64)
    new, converged = _refine(S, ends, lo, hi, end_ok, float(penalty), width, int(max_passes), tol, moves, where,
                             T if move_reach is None else int(move_reach))
    if not converged:
        _best_moves(S, new, lo, hi, end_ok, float(penalty), width, moves, where)
    result = SegmentationResult(Segmentation(new, T), float(_penalised_cost(S, sq_total, new, float(penalty))))
    return result, _runner_up(new, T, moves, where)


def refine_segmentation(X, start: Segmentation, penalty: float, *, metric=None, min_size: int = 1,
                        constraints: Optional[SegmentConstraints] = None, pair_width: int = PAIR_WIDTH,
                        max_passes: int = 20, move_reach: Optional[int] = None) -> SegmentationResult:
    """The first half of :func:`refine_with_runner_up`: the locally improved segmentation."""
    return refine_with_runner_up(X, start, penalty, metric=metric, min_size=min_size, constraints=constraints,
                                 pair_width=pair_width, max_passes=max_passes, move_reach=move_reach)[0]
