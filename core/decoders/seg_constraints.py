"""Partial labels of a segmentation, turned into rules on single transitions.

A segmentation is a path ``0 = c_0 < c_1 < ... < c_K = T`` and every partial
label this module knows about forbids some *transitions* ``s -> t`` (a
segment ``[s, t)``, i.e. consecutive changes ``s`` and ``t``):

* no change inside ``[a, b)``        ⇔ no segment end ``t`` with ``a < t < b``;
* at most one change inside          ⇔ no transition with ``a < s < t < b``;
* at least one change inside         ⇔ no transition with ``s <= a`` and ``t >= b``;
* a change exactly at ``c``          ⇔ no transition with ``s < c < t``.

For a fixed end ``t`` the allowed starts therefore form one interval
``lo[t] <= s <= hi[t]`` (with ``lo`` non-decreasing in ``t``), plus a flag
saying whether ``t`` may be a segment end at all. The dynamic programmes
of :mod:`marginalia.decoders.segmentation` need no extra state for labels.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Optional

import numpy as np

from ..exceptions import InfeasibleLabelsError, ParameterError
from ..types import BoundaryLabel, RegionKind, RegionLabel, Segmentation
from ._segmentation_kernels import _reachable

__all__ = [
    "RegionConstraint",
    "BoundaryConstraint",
    "SegmentConstraints",
    "constraints_from_labels",
]


@dataclass(frozen=True)
class RegionConstraint:
    """The number of changes strictly inside ``[start, stop)`` lies in ``[min_changes, max_changes]``.

    Parameters
    ----------
    start, stop : int
        The region ``[start, stop)``; it contains the change indices ``c`` with ``start < c < stop``.
    min_changes : int
        0 or 1.
    max_changes : int or None
        0, 1 or None (unbounded).
    label_id : str
        Id of the label the constraint comes from (used in error messages).
    """

    start: int
    stop: int
    min_changes: int = 0
    max_changes: Optional[int] = 0
    label_id: str = ""

    def __post_init__(self):
        if int(self.start) < 0 or int(self.stop) <= int(self.start):
            raise ParameterError(f"RegionConstraint {self.label_id!r}: need 0 <= start < stop, "
                                 f"got start={self.start}, stop={self.stop}")
        if (self.min_changes, self.max_changes) not in ((0, 0), (1, 1), (1, None)):
            raise ParameterError(f"RegionConstraint {self.label_id!r}: (min_changes, max_changes) must be "
                                 f"(0, 0), (1, 1) or (1, None), got ({self.min_changes}, {self.max_changes})")
        object.__setattr__(self, "start", int(self.start))
        object.__setattr__(self, "stop", int(self.stop))

    def count(self, segmentation: Segmentation) -> int:
        """Number of changes of ``segmentation`` strictly inside the region."""
        return segmentation.changes_inside(self.start, self.stop)

    def is_satisfied_by(self, segmentation: Segmentation) -> bool:
        n = self.count(segmentation)
        return n >= self.min_changes and (self.max_changes is None or n <= self.max_changes)


@dataclass(frozen=True)
class BoundaryConstraint:
    """A change exactly at change index ``index`` (``0 < index < T``)."""

    index: int
    label_id: str = ""

    def __post_init__(self):
        if int(self.index) < 1:
            raise ParameterError(f"BoundaryConstraint {self.label_id!r}: index must be >= 1, got {self.index}")
        object.__setattr__(self, "index", int(self.index))

    def is_satisfied_by(self, segmentation: Segmentation) -> bool:
        return bool(np.any(segmentation.breakpoints == self.index))


@dataclass(frozen=True)
class SegmentConstraints:
    """Every partial label of one sequence of ``n_samples`` samples, as decoder constraints.

    Parameters
    ----------
    n_samples : int
        ``T``, the length of the sequence the constraints are about.
    regions : tuple of RegionConstraint
    boundaries : tuple of BoundaryConstraint

    Notes
    -----
    Construction checks ranges (``ParameterError``) but not feasibility, which
    depends on the decoder's ``min_size``; see :meth:`check_feasible`.
    """

    n_samples: int
    regions: tuple = ()
    boundaries: tuple = ()

    def __post_init__(self):
        T = int(self.n_samples)
        if T < 1:
            raise ParameterError(f"SegmentConstraints: n_samples must be >= 1, got {self.n_samples}")
        object.__setattr__(self, "n_samples", T)
        regions = tuple(self.regions)
        boundaries = tuple(self.boundaries)
        for r in regions:
            if not isinstance(r, RegionConstraint):
                raise ParameterError(f"SegmentConstraints.regions: expected RegionConstraint items, got {type(r).__name__}")
            if r.stop > T:
                raise ParameterError(f"label {r.label_id!r}: region [{r.start}, {r.stop}) is out of range "
                                     f"for a sequence of {T} samples (need stop <= {T})")
        for b in boundaries:
            if not isinstance(b, BoundaryConstraint):
                raise ParameterError(f"SegmentConstraints.boundaries: expected BoundaryConstraint items, "
                                     f"got {type(b).__name__}")
            if b.index >= T:
                raise ParameterError(f"label {b.label_id!r}: boundary at change index {b.index} is out of range "
                                     f"for a sequence of {T} samples (need 1 <= index <= {T - 1})")
        object.__setattr__(self, "regions", regions)
        object.__setattr__(self, "boundaries", boundaries)

    @property
    def is_empty(self) -> bool:
        return not self.regions and not self.boundaries

    @property
    def label_ids(self) -> tuple:
        """Ids of the labels behind the constraints, regions first."""
        return tuple(r.label_id for r in self.regions) + tuple(b.label_id for b in self.boundaries)

    def violations(self, segmentation: Segmentation) -> list:
        """Ids of the labels that ``segmentation`` does not satisfy (empty when it satisfies all)."""
        if segmentation.n_samples != self.n_samples:
            raise ParameterError(f"segmentation: has {segmentation.n_samples} samples, the constraints are "
                                 f"about {self.n_samples}")
        bad = [r.label_id for r in self.regions if not r.is_satisfied_by(segmentation)]
        bad += [b.label_id for b in self.boundaries if not b.is_satisfied_by(segmentation)]
        return bad

    def is_satisfied_by(self, segmentation: Segmentation) -> bool:
        return not self.violations(segmentation)

    def subset(self, keep: Iterable[int]) -> "SegmentConstraints":
        """The constraints whose position in :attr:`label_ids` is in ``keep``."""
        keep = set(keep)
        nr = len(self.regions)
        regions = tuple(r for i, r in enumerate(self.regions) if i in keep)
        boundaries = tuple(b for i, b in enumerate(self.boundaries) if i + nr in keep)
        return SegmentConstraints(self.n_samples, regions, boundaries)

    def transition_bounds(self, min_size: int = 1):
        """Allowed starts of a segment for every end.

        Parameters
        ----------
        min_size : int
            Minimum number of samples of a segment.

        Returns
        -------
        lo, hi : ndarray of int64, shape (T + 1,)
            A segment ``[s, t)`` is allowed iff ``lo[t] <= s <= hi[t]`` and ``end_ok[t]``
            (``hi[t] <= t - min_size``; ``lo`` is non-decreasing).
        end_ok : ndarray of bool, shape (T + 1,)
            Whether ``t`` may end a segment (``end_ok[T]`` is True).
        one_a, one_b : ndarray of int64, shape (T + 1,)
            Largest start and largest stop of the "exactly one change" regions that contain
            ``t`` strictly (``-1`` when none); the pruning of the decoders needs them.
        """
        return _transition_bounds(self, int(min_size))

    def check_feasible(self, min_size: int = 1) -> None:
        """Raise :class:`InfeasibleLabelsError` naming a minimal conflicting set of labels.

        Parameters
        ----------
        min_size : int
            Minimum segment length the decoder will use.
        """
        T = self.n_samples
        if min_size > T:
            raise ParameterError(f"min_size: a sequence of {T} samples cannot hold a segment of "
                                 f"min_size={min_size} samples; use min_size <= {T}")
        if self.is_empty or _is_feasible(self, min_size):
            return
        n = len(self.label_ids)
        keep = list(range(n))
        # deletion filter: drop every label whose removal keeps the set infeasible
        for i in range(n):
            trial = [k for k in keep if k != i]
            if not _is_feasible(self.subset(trial), min_size):
                keep = trial
        ids = [self.label_ids[k] for k in keep]
        descr = "; ".join(self._describe(k) for k in keep)
        why = f" with segments of at least {min_size} samples (min_size={min_size})" if min_size > 1 else ""
        raise InfeasibleLabelsError(f"labels cannot all hold{why}: {descr}. Remove or edit one of them.", ids)

    def _describe(self, k: int) -> str:
        nr = len(self.regions)
        if k < nr:
            r = self.regions[k]
            what = {(0, 0): "no change", (1, 1): "exactly one change", (1, None): "at least one change"}[
                (r.min_changes, r.max_changes)]
            return f"{r.label_id!r} ({what} in [{r.start}, {r.stop}))"
        b = self.boundaries[k - nr]
        return f"{b.label_id!r} (change at {b.index})"


def constraints_from_labels(labels, n_samples: int) -> SegmentConstraints:
    """Turn partial labels of one sequence into :class:`SegmentConstraints`.

    Parameters
    ----------
    labels : iterable of RegionLabel or BoundaryLabel
        ``ZERO``/``SAME`` regions hold no change, ``ONE`` exactly one, ``AT_LEAST_ONE``
        one or more; a boundary puts a change exactly at its index.
    n_samples : int
        Length ``T`` of the sequence.

    Returns
    -------
    SegmentConstraints

    Raises
    ------
    ParameterError
        A label of another kind, or out of range for ``n_samples``.
    InfeasibleLabelsError
        No segmentation (with ``min_size=1``) satisfies all labels; names a minimal conflicting set.
    """
    try:
        T = int(n_samples)
    except (TypeError, ValueError):
        raise ParameterError(f"n_samples: expected an integer >= 1, got {n_samples!r}") from None
    if T < 1:
        raise ParameterError(f"n_samples: expected an integer >= 1, got {n_samples!r}")
    regions, boundaries = [], []
    for lab in labels if labels is not None else ():
        if isinstance(lab, RegionLabel):
            lo, hi = RegionKind(lab.kind).bounds
            if lab.stop > T:
                raise ParameterError(f"label {lab.id!r}: region [{lab.start}, {lab.stop}) is out of range for "
                                     f"a sequence of {T} samples (need stop <= {T})")
            regions.append(RegionConstraint(lab.start, lab.stop, lo, hi, lab.id))
        elif isinstance(lab, BoundaryLabel):
            if lab.index >= T:
                raise ParameterError(f"label {lab.id!r}: boundary at change index {lab.index} is out of range for "
                                     f"a sequence of {T} samples (need 1 <= index <= {T - 1})")
            boundaries.append(BoundaryConstraint(lab.index, lab.id))
        else:
            raise ParameterError(f"labels: expected RegionLabel or BoundaryLabel items, got {type(lab).__name__}")
    cons = SegmentConstraints(T, tuple(regions), tuple(boundaries))
    cons.check_feasible(1)
    return cons


# ------------------------------------------------------------------ internals


def _transition_bounds(cons: SegmentConstraints, min_size: int):
    m = int(min_size)
    T = cons.n_samples
    t = np.arange(T + 1, dtype=np.int64)
    lo_at = np.zeros(T + 2, dtype=np.int64)
    hi = t - m
    end_ok = np.ones(T + 1, dtype=bool)
    one_a = np.full(T + 1, -1, dtype=np.int64)
    one_b = np.full(T + 1, -1, dtype=np.int64)
    for r in cons.regions:
        a, b = r.start, r.stop
        if r.max_changes == 0:
            end_ok[a + 1:b] = False
        if r.min_changes >= 1:
            # a segment ending at or after b must start after a
            lo_at[b] = max(lo_at[b], a + 1)
        if r.max_changes == 1:
            hi[a + 1:b] = np.minimum(hi[a + 1:b], a)
            one_a[a + 1:b] = np.maximum(one_a[a + 1:b], a)
            one_b[a + 1:b] = np.maximum(one_b[a + 1:b], b)
    for bc in cons.boundaries:
        c = bc.index
        lo_at[c + 1] = max(lo_at[c + 1], c)
    lo = np.maximum.accumulate(lo_at[:T + 1])
    end_ok[T] = True
    end_ok[0] = True
    return lo, hi, end_ok, one_a, one_b


def _is_feasible(cons: SegmentConstraints, min_size: int) -> bool:
    lo, hi, end_ok, _, _ = _transition_bounds(cons, min_size)
    return bool(_reachable(lo, hi, end_ok))
