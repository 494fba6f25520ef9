"""Training windows: the stretches of a long labelled sequence that a metric step needs.

The loss-augmented decodings of partially labelled sequences (the SSVM's oracle,
:meth:`~marginalia.models.segmentation.SegmentationModel.loss_augmented_decode`) are the bulk of a
metric step, and on the high-density neuroblastoma arrays most of their samples lie far from any
label (about 1 s per pass for a 97,260-probe chromosome). A label only constrains the changes inside it, and the
best segmentation near a label hardly depends on data a few thousand probes away, so the metric is learned on windows cut around
the labels instead of on the whole sequence:

* labels are grouped, in order, into windows of at most ``max_length`` samples with
  ``margin`` samples of unlabelled context on each side (less at the sequence's ends);
* a no-change region longer than a window allows is cut to half a window at its end nearest
  another label (still true: no change in a sub-stretch of a stretch without one);
* a region that must hold a change and does not fit is left out: cutting it could drop its
  change and make the label false.

Each window is then an ordinary training sequence of its own length (its penalty scales with
its own ``log T``); the per-sequence penalty law fitted afterwards on whole sequences sets
each sequence's penalty, so the metric step only needs the windows' relative costs.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import numpy as np

from ..exceptions import ParameterError
from ..types import BoundaryLabel, RegionKind, RegionLabel

__all__ = ["TrainingWindow", "training_windows", "window_training_set", "MAX_WINDOW", "WINDOW_MARGIN"]

#: samples of the longest training window (the neuroblastoma low-density chromosomes, up to
#: 4,858 probes, are used whole)
MAX_WINDOW = 6000
#: unlabelled context kept on each side of a window's labels
WINDOW_MARGIN = 1000


@dataclass(frozen=True)
class TrainingWindow:
    """Samples ``[start, stop)`` of a sequence and its labels in window coordinates.

    Attributes
    ----------
    start, stop : int
        The window in the sequence's sample indices.
    labels : tuple of Label
        The labels inside the window, shifted by ``-start`` (cut no-change regions included).
    """

    start: int
    stop: int
    labels: tuple

    @property
    def n_samples(self) -> int:
        return self.stop - self.start


def _extent(label) -> tuple:
    """Samples ``[a, b)`` a label speaks about (a boundary: the two samples around its change)."""
    if isinstance(label, RegionLabel):
        return label.start, label.stop
    if isinstance(label, BoundaryLabel):
        return label.index - 1, label.index + 1
    raise ParameterError(f"labels: training windows take region and boundary labels, got {type(label).__name__}")


def _shifted(label, start: int, a: int, b: int):
    """``label`` moved by ``-start``, a region cut to ``[a, b)`` first."""
    if isinstance(label, RegionLabel):
        return dataclasses.replace(label, start=max(label.start, a) - start, stop=min(label.stop, b) - start)
    return dataclasses.replace(label, index=label.index - start)


def training_windows(n_samples: int, labels, *, max_length: int = MAX_WINDOW,
                     margin: int = WINDOW_MARGIN) -> list:
    """Cut a labelled sequence into training windows.

    Parameters
    ----------
    n_samples : int
        Length ``T`` of the sequence.
    labels : list of RegionLabel or BoundaryLabel
        Its labels, in sample indices.
    max_length : int, default :data:`MAX_WINDOW`
        Longest window; a sequence no longer than this is one window ``[0, T)`` with its labels as given.
    margin : int, default :data:`WINDOW_MARGIN`
        Unlabelled samples kept on each side of the labels of a window; ``2 * margin < max_length``.

    Returns
    -------
    windows : list of TrainingWindow
        In sequence order, each with at least one label; neighbouring windows may share context
        samples. Empty when no label fits (only change-holding regions longer than
        ``max_length - 2 * margin``).
    """
    T, W, M = int(n_samples), int(max_length), int(margin)
    if M < 0 or W <= 2 * M:
        raise ParameterError(f"max_length, margin: expected 0 <= 2 * margin < max_length, got {W}, {M}")
    labels = list(labels)
    if T <= W:
        return [TrainingWindow(0, T, tuple(labels))]
    room = W - 2 * M
    spans = sorted((_extent(lab) + (k,) for k, lab in enumerate(labels)))
    pieces = []     # (a, b, label): the stretch of each kept label, cut when it is a long no-change region
    for j, (a, b, k) in enumerate(spans):
        lab = labels[k]
        if b - a > room:
            if not (isinstance(lab, RegionLabel) and lab.kind in (RegionKind.ZERO, RegionKind.SAME)):
                continue
            # keep the end facing the nearest other label: where a change between the two is decided
            before = a - max((s[1] for s in spans[:j]), default=-np.inf)
            after = min((s[0] for s in spans[j + 1:]), default=np.inf) - b
            # half a window, so a neighbouring label still fits beside it
            if after < before:
                a = b - room // 2
            else:
                b = a + room // 2
        pieces.append((a, b, lab))
    groups, group = [], []
    for a, b, lab in sorted(pieces, key=lambda piece: piece[:2]):
        if group and max(b, max(g[1] for g in group)) - group[0][0] > room:
            groups.append(group)
            group = []
        group.append((a, b, lab))
    if group:
        groups.append(group)
    out = []
    for group in groups:
        start, stop = max(0, group[0][0] - M), min(T, max(g[1] for g in group) + M)
        out.append(TrainingWindow(start, stop, tuple(_shifted(lab, start, a, b) for a, b, lab in group)))
    return out


def window_training_set(Xs, Ys, *, max_length: int = MAX_WINDOW, margin: int = WINDOW_MARGIN) -> tuple:
    """Replace each long training sequence by its :func:`training_windows`.

    Parameters
    ----------
    Xs : list of ndarray, each (T_i, p)
    Ys : list of label lists

    Returns
    -------
    Xw : list of ndarray
        The windows' rows of ``Xs`` (a sequence no longer than ``max_length`` is passed whole).
    Yw : list of label lists
        Their labels in window coordinates.
    source : ndarray of int
        Index in ``Xs`` of each window's sequence.
    """
    Xw, Yw, source = [], [], []
    for i, (X, Y) in enumerate(zip(Xs, Ys)):
        for win in training_windows(X.shape[0], Y, max_length=max_length, margin=margin):
            Xw.append(X if win.n_samples == X.shape[0] else np.ascontiguousarray(X[win.start:win.stop]))
            Yw.append(list(win.labels))
            source.append(i)
    return Xw, Yw, np.asarray(source, dtype=np.int64)
