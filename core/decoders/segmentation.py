"""Exact segmentation decoders: penalized and fixed-K optimal partitioning, constrained by partial labels.

Every decoder *minimises*

    cost(y) = sum over segments k of sum_{i in k} ||L (x_i - mean_k)||^2  +  penalty * n_segments

where the metric ``L`` is the identity (``metric=None``), a diagonal given as a 1-d array
``w`` of length ``p`` (column ``j`` scaled by ``w_j``; ``B = diag(w^2)``) or a ``(q, p)`` matrix
(``B = L^T L``). Samples are transformed once (``X L^T``) and segment scatters come from
prefix sums, so no ``T x T`` matrix is ever built.

The penalized decoders prune candidate starts PELT-style (exact: a start is dropped only when
it provably cannot begin the last segment of an optimal solution, with the right delay for
``min_size`` and for "exactly one change" labels) and scan the remaining starts as one flat list
while it is short; once it is long they search a tree of them whose nodes carry a cheap lower bound
(a drift-aware triangle inequality plus the lower convex hull of the node's prefix values),
skipping every node whose bound exceeds the best value found; so long sequences with few changes,
where pruning removes almost nothing, cost a few dozen node tests per sample. One feature without
labels (``min_size`` 1) is pruned functionally instead (FPOP): a start is dropped once no mean of
the last segment is left where it may be best, which keeps a few dozen starts where PELT keeps all.
The fixed-K decoder uses the same bounds on flat groups of starts and drops prefixes
that a Lagrangian bound (a penalized decoding of the reversed sequence) proves useless;
when that penalized solution already has K segments it is returned as is.
Penalized second-best decoding reads the plain decoding: the runner-up deviates from the best for the
last time at one of the best's ends (:mod:`marginalia.decoders._seg_runner_up`); fixed-K second best
keeps the two best values per prefix. Loss-augmented decoding adds the loss
per segment (Frobenius, from overlaps with the true segments) or per change (Hamming).

A 1-sample sequence is allowed: its only segmentation is ``[1]``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

import numpy as np

from ..checks import check_choice, check_int, check_matrix, check_scalar
from ..exceptions import ParameterError
from ..types import Segmentation, Sequence
from . import _seg_penalized_kernel as _pk
from . import _seg_runner_up as _ru
from . import _segmentation_kernels as _k
from ._seg_fixed_k_bound import fixed_k_bounds
from ._start_tree import BOUND_TOL, FANOUT, LEAF
from .metric import metric_transform
from .seg_constraints import SegmentConstraints

__all__ = [
    "SegmentationResult",
    "LossAugmentedResult",
    "segment_penalized",
    "segment_fixed_k",
    "segment_loss_augmented",
    "segment_second_best",
    "segmentation_cost",
    "frobenius_loss",
    "hamming_loss",
]

_FIXED_GROUP = 16    # static groups of starts of the fixed-K decoder
_RU_FANOUT = 8       # children per node of the second best's search (timed against 4); only leaves get a bound
_TOL = BOUND_TOL     # relative slack of the pruning and bound tests (rounding of prefix sums)
# the penalized decoder searches a flat list of the live starts until it holds more than
# _FLAT_NODES * leaf * fanout of them, then the tree (timed against 2 and 8)
_FLAT_NODES = 4


@dataclass(frozen=True)
class SegmentationResult:
    """A decoded segmentation and its cost (scatter + penalty × number of segments)."""

    segmentation: Segmentation
    cost: float


@dataclass(frozen=True)
class LossAugmentedResult:
    """Result of loss-augmented decoding.

    Attributes
    ----------
    segmentation : Segmentation
    cost : float
        ``cost(y)`` without the loss.
    loss : float
        ``loss(truth, y)``.
    objective : float
        ``cost - loss_scale * loss`` (the minimised quantity).
    """

    segmentation: Segmentation
    cost: float
    loss: float
    objective: float


# ------------------------------------------------------------------ validation


def _as_matrix(X) -> np.ndarray:
    return check_matrix(X.values if isinstance(X, Sequence) else X, "X", fix="remove or interpolate NaN/inf first")


def _transform(X: np.ndarray, metric) -> np.ndarray:
    """Centre the samples (costs do not change; prefix sums lose less precision) and apply the metric."""
    return np.ascontiguousarray(metric_transform(X - X.mean(axis=0), metric))


def _prefix(Z: np.ndarray):
    """Prefix sums ``S`` (T+1, q) and ``Q`` (T+1,) of the rows of ``Z`` and of their squared norms."""
    return _k._prefix_sums(np.ascontiguousarray(Z), np.zeros(Z.shape[1]))


def _check_min_size(min_size, T) -> int:
    m = check_int(min_size, "min_size", min_val=1)
    if m > T:
        raise ParameterError(f"min_size: a sequence of {T} samples cannot hold a segment of min_size={m} "
                             f"samples; use min_size <= {T}")
    return m


def _check_constraints(constraints, T, m) -> SegmentConstraints:
    if constraints is None:
        cons = SegmentConstraints(T)
    elif isinstance(constraints, SegmentConstraints):
        cons = constraints
        if cons.n_samples != T:
            raise ParameterError(f"constraints: built for {cons.n_samples} samples, but X has {T}")
    else:
        raise ParameterError(f"constraints: expected SegmentConstraints or None, got {type(constraints).__name__}")
    cons.check_feasible(m)
    return cons


def _check_segmentation(seg, T, name) -> Segmentation:
    if not isinstance(seg, Segmentation):
        try:
            seg = Segmentation(np.asarray(seg, dtype=np.int64), T)
        except Exception as exc:
            raise ParameterError(f"{name}: expected a Segmentation of {T} samples ({exc})") from None
    if seg.n_samples != T:
        raise ParameterError(f"{name}: has {seg.n_samples} samples, expected {T}")
    return seg


class _Problem:
    """Validated inputs shared by the decoders."""

    def __init__(self, X, metric, min_size, constraints):
        X = _as_matrix(X)
        self.T = X.shape[0]
        if metric is None:
            # centred on the fly: no copy of X
            self._X, self._mean = X, X.mean(axis=0)
            self._Z = None
            self.S, self.Q = _k._prefix_sums(np.ascontiguousarray(X), self._mean)
        else:
            self._Z = _transform(X, metric)
            self.S, self.Q = _prefix(self._Z)
        self.m = _check_min_size(min_size, self.T)
        self.cons = _check_constraints(constraints, self.T, self.m)
        self.lo, self.hi, self.end_ok, self.one_a, self.one_b = self.cons.transition_bounds(self.m)

    @property
    def Z(self) -> np.ndarray:
        """The transformed, centred samples, shape (T, q) (built when first asked for)."""
        if self._Z is None:
            self._Z = self._X - self._mean
        return self._Z


_EMPTY_I = np.zeros(1, np.int64)
_EMPTY_KILL = np.zeros(0, np.int64)


def _run_penalized(pb: _Problem, beta, *, end_term=None, truth=None, frob_w=0.0, slack=0.0, second=False,
                   prune=True, bound=True, leaf=LEAF, fanout=FANOUT, kill_t=_EMPTY_KILL, max_live=None,
                   functional=True):
    T = pb.T
    if end_term is None:
        end_term = np.zeros(T + 1)
    if truth is None:
        tid, tstart, tstop = np.zeros(T, np.int64), _EMPTY_I, np.full(1, T, np.int64)
    else:
        tid = truth.labels()
        tstop = truth.changes.astype(np.int64)
        tstart = np.concatenate(([0], tstop[:-1])).astype(np.int64)
    return _pk._penalized(pb.S, pb.Q, float(beta), pb.m, pb.lo, pb.hi, pb.end_ok, pb.one_a, pb.one_b,
                         end_term, tid, tstart, tstop, float(frob_w), float(slack), bool(second), bool(prune),
                         bool(bound), int(leaf), int(fanout), _TOL, kill_t,
                         int(_FLAT_NODES * leaf * fanout if max_live is None else max_live),
                         bool(functional and _functional_applies(pb, frob_w, second, prune, bound)))


def _functional_applies(pb: _Problem, frob_w, second, prune, bound) -> bool:
    """Whether the functional pruning of the penalized kernel applies (one feature, no labels, min_size 1)."""
    return (pb.S.shape[1] == 1 and pb.m == 1 and pb.cons.is_empty and frob_w == 0.0 and not second
            and prune and bound)


def _seg_cost_prefix(S, Q, changes, penalty) -> float:
    t = np.asarray(changes, dtype=np.int64)
    s = np.concatenate(([0], t[:-1]))
    d = S[t] - S[s]
    scatter = (Q[t] - Q[s]) - np.einsum("ij,ij->i", d, d) / (t - s)
    return float(np.sum(scatter) + penalty * len(t))


def _seg_cost(Z, changes, penalty) -> float:
    S, Q = _prefix(Z)
    return _seg_cost_prefix(S, Q, changes, penalty)


# ------------------------------------------------------------------ public API


def segmentation_cost(X, segmentation, penalty: float = 0.0, *, metric=None) -> float:
    """Cost of a given segmentation: within-segment scatter under the metric + penalty × n_segments.

    Parameters
    ----------
    X : array_like, shape (T, p) or (T,), or Sequence
    segmentation : Segmentation or array_like of int
        Segment ends, last == T.
    penalty : float
        Cost per segment (>= 0).
    metric : None, array (p,) or array (q, p)

    Returns
    -------
    float
    """
    X = _as_matrix(X)
    seg = _check_segmentation(segmentation, X.shape[0], "segmentation")
    beta = check_scalar(penalty, "penalty", float, min_val=0)
    Z = _transform(X, metric)
    return _seg_cost(Z, seg.changes, beta)


def _pair(a, b):
    if not isinstance(a, Segmentation):
        try:
            a = Segmentation(np.asarray(a, dtype=np.int64))
        except Exception as exc:
            raise ParameterError(f"a: expected a Segmentation ({exc})") from None
    return a, _check_segmentation(b, a.n_samples, "b")


def frobenius_loss(a, b) -> float:
    """Frobenius loss between the normalised partition matrices of two segmentations (Lajugie 2015, eq. 4.13).

    ``||M(a) - M(b)||_F^2 = K_a + K_b - 2 sum_{k,l} |A_k ∩ B_l|^2 / (|A_k| |B_l|)``, computed from the
    overlaps of consecutive segments in O(K_a + K_b).

    Parameters
    ----------
    a, b : Segmentation
        Of the same number of samples.

    Returns
    -------
    float
    """
    a, b = _pair(a, b)
    ea, eb = a.changes, b.changes
    i = j = 0
    prev = 0
    sa = sb = 0
    acc = 0.0
    while i < len(ea) and j < len(eb):
        stop = min(ea[i], eb[j])
        ov = stop - prev
        acc += ov * ov / ((ea[i] - sa) * (eb[j] - sb))
        prev = stop
        if ea[i] == stop:
            sa = ea[i]
            i += 1
        if eb[j] == stop:
            sb = eb[j]
            j += 1
    return float(len(ea) + len(eb) - 2.0 * acc)


def hamming_loss(a, b) -> int:
    """Number of change indices (excluding T) in one segmentation but not in the other."""
    a, b = _pair(a, b)
    return int(np.setxor1d(a.breakpoints, b.breakpoints).size)


def segment_penalized(X, penalty: float, *, metric=None, min_size: int = 1,
                      constraints: Optional[SegmentConstraints] = None) -> SegmentationResult:
    """Exact minimiser of the penalized segmentation cost.

    Parameters
    ----------
    X : array_like, shape (T, p) or (T,), or Sequence
        Finite samples.
    penalty : float
        Cost added per segment (>= 0); larger gives fewer segments.
    metric : None, array (p,) or array (q, p)
        Identity, diagonal weights ``w`` or linear map ``L``.
    min_size : int
        Minimum number of samples per segment.
    constraints : SegmentConstraints, optional
        Partial labels the result must satisfy.

    Returns
    -------
    SegmentationResult

    Raises
    ------
    ParameterError
        Bad input (empty X, NaN, negative penalty, wrong metric shape, bad min_size).
    InfeasibleLabelsError
        No segmentation satisfies the constraints with this ``min_size``.
    """
    beta = check_scalar(penalty, "penalty", float, min_val=0)
    pb = _Problem(X, metric, min_size, constraints)
    F1, _, bp1, bp2, bp2r, _ = _run_penalized(pb, beta)
    ends = _k._backtrack(bp1, bp2, bp2r, pb.T, 1)
    return SegmentationResult(Segmentation(ends, pb.T), _seg_cost_prefix(pb.S, pb.Q, ends, beta))


def segment_fixed_k(X, n_segments: int, *, metric=None, min_size: int = 1,
                    constraints: Optional[SegmentConstraints] = None) -> SegmentationResult:
    """Exact minimiser of the scatter over segmentations with exactly ``n_segments`` segments.

    Parameters
    ----------
    X : array_like, shape (T, p) or (T,), or Sequence
    n_segments : int
        ``K``, between 1 and ``T // min_size``.
    metric, min_size, constraints
        As in :func:`segment_penalized`.

    Returns
    -------
    SegmentationResult
        ``cost`` is the scatter (no penalty).

    Raises
    ------
    ParameterError
        ``K`` out of range, or no segmentation with ``K`` segments satisfies the constraints.
    """
    best, _ = _fixed_k_decode(X, n_segments, metric, min_size, constraints, second=False)
    return best


def _check_k(n_segments, T, m) -> int:
    K = check_int(n_segments, "n_segments", min_val=1)
    if K < 1 or K * m > T:
        raise ParameterError(f"n_segments: expected 1 <= n_segments <= T // min_size = {T // m} "
                             f"(T={T}, min_size={m}), got {n_segments!r}")
    return K


def _unconstrained_runner(pb):
    """``(S, Q, lam) -> (F1, bp1, bp2, bp2r)``: penalized decoding without labels (same min_size)."""
    T = pb.T
    lo = np.zeros(T + 1, np.int64)
    hi = np.arange(T + 1, dtype=np.int64) - pb.m
    end_ok = np.ones(T + 1, bool)
    none = np.full(T + 1, -1, np.int64)
    zeros = np.zeros(T + 1)
    tid, tstart, tstop = np.zeros(T, np.int64), _EMPTY_I, np.full(1, T, np.int64)

    def run(S, Q, lam):
        F1, _, bp1, bp2, bp2r, _ = _pk._penalized(S, Q, float(lam), pb.m, lo, hi, end_ok, none, none, zeros,
                                                 tid, tstart, tstop, 0.0, 0.0, False, True, True,
                                                  LEAF, FANOUT, _TOL, _EMPTY_KILL, _FLAT_NODES * LEAF * FANOUT,
                                                  S.shape[1] == 1 and pb.m == 1)
        return F1, bp1, bp2, bp2r
    return run


def _fixed_k_decode(X, n_segments, metric, min_size, constraints, second):
    pb = _Problem(X, metric, min_size, constraints)
    K = _check_k(n_segments, pb.T, pb.m)
    future, lam, ub, direct = fixed_k_bounds(pb, K, bool(second), _unconstrained_runner(pb))
    if direct is not None:
        return SegmentationResult(Segmentation(direct, pb.T), _seg_cost_prefix(pb.S, pb.Q, direct, 0.0)), None
    F1, F2, _ = _k._fixed_k(pb.S, pb.Q, K, pb.m, pb.lo, pb.hi, pb.end_ok, _FIXED_GROUP, bool(second), True, _TOL,
                            future, float(lam), float(ub))
    if not np.isfinite(F1[K, pb.T]):
        raise ParameterError(f"n_segments: no segmentation with exactly {K} segments (min_size={pb.m}) "
                             f"satisfies the labels {list(pb.cons.label_ids)}")
    ends = _k._fixed_k_backtrack(pb.S, pb.Q, F1, F2, K, pb.m, pb.lo, pb.hi, 1)
    best = SegmentationResult(Segmentation(ends, pb.T), _seg_cost_prefix(pb.S, pb.Q, ends, 0.0))
    if not second:
        return best, None
    if not np.isfinite(F2[K, pb.T]):
        return best, None
    ends2 = _k._fixed_k_backtrack(pb.S, pb.Q, F1, F2, K, pb.m, pb.lo, pb.hi, 2)
    if ends2[0] < 0:
        return best, None
    sec = SegmentationResult(Segmentation(ends2, pb.T), _seg_cost_prefix(pb.S, pb.Q, ends2, 0.0))
    return best, sec


def segment_second_best(X, penalty: float = 0.0, *, metric=None, min_size: int = 1,
                        constraints: Optional[SegmentConstraints] = None,
                        n_segments: Optional[int] = None):
    """The best segmentation and the best one different from it.

    Parameters
    ----------
    X, penalty, metric, min_size, constraints
        As in :func:`segment_penalized`.
    n_segments : int, optional
        Decode with exactly this many segments instead (``penalty`` is then ignored).

    Returns
    -------
    best : SegmentationResult
    second : SegmentationResult or None
        None when only one segmentation is feasible.

    Notes
    -----
    Penalized: one plain decoding, then a search over the starts of the best segmentation's ends
    only (any other segmentation leaves the best one for the last time at one of them); starts the
    plain decoding removed are skipped when a better candidate than them is known. Fixed K: the
    fixed-K programme with two values per prefix, restricted by the Lagrangian bound.
    """
    if n_segments is not None:
        return _fixed_k_decode(X, n_segments, metric, min_size, constraints, second=True)
    beta = check_scalar(penalty, "penalty", float, min_val=0)
    pb = _Problem(X, metric, min_size, constraints)
    # the plain decoding, then the cheapest last deviation from it (see _seg_runner_up)
    kill_t = np.empty(pb.T + 1, np.int64)
    F1, _, bp1, bp2, bp2r, _ = _run_penalized(pb, beta, kill_t=kill_t)
    T = pb.T
    e1 = _k._backtrack(bp1, bp2, bp2r, T, 1)
    best = SegmentationResult(Segmentation(e1, T), _seg_cost_prefix(pb.S, pb.Q, e1, beta))
    # the functional pruning drops most starts before any PELT test removes them, so kill_t skips few:
    # bounds on nodes of every size then skip the old starts (for one feature, cheap to build)
    max_bounded = T + 1 if _functional_applies(pb, 0.0, False, True, True) else LEAF
    gap, u, s = _ru.runner_up_at_ends(pb.S, pb.Q, F1, bp1, kill_t, e1, pb.lo, pb.hi, LEAF, _RU_FANOUT, max_bounded,
                                      _TOL)
    if u < 0 or not np.isfinite(gap):
        return best, None
    prefix = _k._backtrack(bp1, bp2, bp2r, s, 1) if s > 0 else e1[:0]
    e2 = np.concatenate((prefix, e1[np.searchsorted(e1, u):]))
    return best, SegmentationResult(Segmentation(e2, T), _seg_cost_prefix(pb.S, pb.Q, e2, beta))


def segment_loss_augmented(X, penalty: float, truth, *, loss: str = "frobenius", loss_scale: float = 1.0,
                           metric=None, min_size: int = 1,
                           constraints: Optional[SegmentConstraints] = None) -> LossAugmentedResult:
    """Minimise ``cost(y) - loss_scale * loss(truth, y)`` (the SSVM loss-augmented decoding).

    Parameters
    ----------
    X, penalty, metric, min_size, constraints
        As in :func:`segment_penalized`.
    truth : Segmentation
        The reference segmentation ``y*`` of the same ``T`` samples.
    loss : {"frobenius", "hamming"}
        Frobenius loss between normalised partition matrices (Lajugie 2015, eq. 4.13), or the number of
        change indices in one segmentation but not the other.
    loss_scale : float
        Weight of the loss (>= 0).

    Returns
    -------
    LossAugmentedResult
    """
    beta = check_scalar(penalty, "penalty", float, min_val=0)
    lam = check_scalar(loss_scale, "loss_scale", float, min_val=0)
    check_choice(loss, "loss", ("frobenius", "hamming"))
    pb = _Problem(X, metric, min_size, constraints)
    T = pb.T
    truth = _check_segmentation(truth, T, "truth")
    if loss == "hamming":
        # -lam * |B Δ B*| = -lam |B*| + sum over chosen changes of (-lam + 2 lam [t in B*])
        end_term = np.full(T + 1, -lam)
        end_term[truth.breakpoints] = lam
        end_term[T] = 0.0
        _, _, bp1, bp2, bp2r, _ = _run_penalized(pb, beta, end_term=end_term)
    else:
        # -lam (K + K* - 2 sum overlap^2/(n n*)) : per segment -lam + 2 lam overlap/n; the overlap term is
        # sub-additive with deficit <= 2 lam, hence the pruning slack
        _, _, bp1, bp2, bp2r, _ = _run_penalized(pb, beta - lam, truth=truth, frob_w=2.0 * lam,
                                                 slack=2.0 * lam)
    ends = _k._backtrack(bp1, bp2, bp2r, T, 1)
    seg = Segmentation(ends, T)
    cost = _seg_cost_prefix(pb.S, pb.Q, ends, beta)
    lval = frobenius_loss(truth, seg) if loss == "frobenius" else float(hamming_loss(truth, seg))
    return LossAugmentedResult(seg, cost, float(lval), float(cost - lam * lval))
