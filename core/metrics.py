"""Labelled-region error: the count every accuracy figure of a segmentation rests on.

A *region label* says how many changes the samples ``[start, stop)`` hold (see
:class:`~marginalia.types.RegionKind`); a region holds the change indices ``c`` with
``start < c < stop``. A segmentation gets a region wrong in one of two ways (the
neuroblastoma benchmark convention, Hocking et al. 2013):

* **false positive** (FP): more changes than the label allows -- a ``0breakpoints``
  (ZERO) or one-segment (SAME) region holding at least one change, a ``1breakpoint``
  (ONE) region holding two or more;
* **false negative** (FN): fewer changes than the label asks for -- a ONE or
  ``>0breakpoints`` (AT_LEAST_ONE) region holding none.

Each region counts at most once. The command line (``evaluate``), the copy-number
learners, the active-learning code and the benchmarks all count with
:func:`region_errors`, so their figures are the same measure.
"""

from __future__ import annotations

from dataclasses import dataclass

from .exceptions import ParameterError
from .types import BoundaryLabel, RegionLabel, Segmentation

__all__ = ["RegionErrors", "region_errors"]


@dataclass(frozen=True)
class RegionErrors:
    """Error counts over a set of region labels; ``a + b`` adds the counts of two sets.

    Attributes
    ----------
    fp : int
        False positives: regions holding more changes than their label allows.
    fn : int
        False negatives: regions holding fewer changes than their label asks for.
    n_labels : int
        Region labels counted.
    """

    fp: int = 0
    fn: int = 0
    n_labels: int = 0

    @property
    def errors(self) -> int:
        """``fp + fn``: the regions the segmentation gets wrong."""
        return self.fp + self.fn

    @property
    def rate(self) -> float:
        """``errors / n_labels`` (0.0 when no region was counted)."""
        return self.errors / self.n_labels if self.n_labels else 0.0

    def __add__(self, other: "RegionErrors") -> "RegionErrors":
        if not isinstance(other, RegionErrors):
            return NotImplemented
        return RegionErrors(self.fp + other.fp, self.fn + other.fn, self.n_labels + other.n_labels)


def region_errors(labels, segmentation: Segmentation) -> RegionErrors:
    """Count the region labels a segmentation gets wrong (false positives and false negatives).

    Parameters
    ----------
    labels : iterable of RegionLabel or BoundaryLabel
        The labels of one sequence of ``T`` samples, in sample-index space. Boundary labels are
        not regions and are skipped, so a project's whole label list can be passed.
    segmentation : Segmentation
        The predicted structure of that sequence.

    Returns
    -------
    RegionErrors
        ``fp``, ``fn`` and ``n_labels`` (the region labels counted).

    Raises
    ------
    ParameterError
        ``segmentation`` is not a Segmentation, an item of ``labels`` is not a label of a
        segmentation, or a region ends after the sequence's last sample.
    """
    if not isinstance(segmentation, Segmentation):
        raise ParameterError(f"segmentation: expected a Segmentation, got {type(segmentation).__name__} "
                             "(the arguments are region_errors(labels, segmentation))")
    T = segmentation.n_samples
    fp = fn = n = 0
    for lab in labels:
        if isinstance(lab, BoundaryLabel):
            continue
        if not isinstance(lab, RegionLabel):
            raise ParameterError(f"labels: expected RegionLabel or BoundaryLabel items, got {type(lab).__name__}")
        if lab.stop > T:
            raise ParameterError(f"labels: region [{lab.start}, {lab.stop}) of {lab.item_id!r} runs past the "
                                 f"sequence end T={T}")
        n += 1
        missing, extra = lab.kind.shortfall(segmentation.changes_inside(lab.start, lab.stop))
        fn += missing > 0
        fp += extra > 0
    return RegionErrors(fp, fn, n)
