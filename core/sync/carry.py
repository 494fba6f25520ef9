"""Carry the labels of one recording onto another through a sync path.

Every label of the source states something at times of the source recording; the warping path
(:class:`~marginalia.sync.SyncResult`) says where those times fall in the target, so the same statement
becomes a label of the target: regions and boundaries (on the item's frames), score anchors and
event spans (in seconds, same score events). Warping anchors (which relate two recordings) are not
carried.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from ..exceptions import ParameterError
from ..types import AnchorLabel, BoundaryLabel, EventSpanLabel, RegionKind, RegionLabel

__all__ = ["CarriedLabels", "carry_labels"]


@dataclass(frozen=True)
class CarriedLabels:
    """The labels made for one target and what could not be carried.

    Attributes
    ----------
    labels : tuple of Label
        New labels of the target (fresh ids).
    skipped : tuple of (Label, str)
        Source labels left out, with the reason.
    """

    labels: tuple
    skipped: tuple


def _positions(positions, name) -> np.ndarray:
    pos = np.asarray(positions, dtype=np.float64)
    if pos.ndim != 1 or pos.size < 2 or not np.all(np.isfinite(pos)) or np.any(np.diff(pos) < 0):
        raise ParameterError(f"{name}: expected increasing frame times (s) of at least 2 frames")
    return pos


def _nearest(pos, t) -> int:
    i = int(np.searchsorted(pos, t))
    if i >= pos.size:
        return pos.size - 1
    if i > 0 and t - pos[i - 1] <= pos[i] - t:
        return i - 1
    return i


def carry_labels(labels, result, source_positions, target_positions, target_item_id: str, *,
                 target_events=None) -> CarriedLabels:
    """Map the source labels onto the target.

    Parameters
    ----------
    labels : iterable of Label
        The source item's labels.
    result : SyncResult
        The path from the source (reference) recording to the target.
    source_positions, target_positions : array_like, shape (T_s,) and (T_t,)
        Times (s) of the items' frames (their sequences' positions): region and boundary labels
        count frames.
    target_item_id : str
    target_events : int, optional
        Number of events of the target's score; anchors and event spans need one with at least
        the events they name.

    Returns
    -------
    CarriedLabels
    """
    src = _positions(source_positions, "source_positions")
    tgt = _positions(target_positions, "target_positions")
    T = tgt.size
    out, skipped = [], []

    def fresh(lab, **fields):
        return replace(lab, item_id=target_item_id, id="", created=0.0, **fields)

    for lab in labels:
        if isinstance(lab, RegionLabel):
            t0, t1 = result.map_times([src[min(lab.start, src.size - 1)], src[min(lab.stop - 1, src.size - 1)]])
            start = _nearest(tgt, t0)
            stop = max(_nearest(tgt, t1) + 1, start + 1)
            if lab.kind in (RegionKind.ONE, RegionKind.AT_LEAST_ONE) and stop - start < 2:
                stop = min(start + 2, T)
                start = stop - 2
            out.append(fresh(lab, start=start, stop=stop))
        elif isinstance(lab, BoundaryLabel):
            if lab.index >= src.size:
                skipped.append((lab, "past the end of the source"))
                continue
            t = result.map_times([0.5 * (src[lab.index - 1] + src[lab.index])])[0]
            index = int(np.clip(np.searchsorted(tgt, t), 1, T - 1))
            out.append(fresh(lab, index=index))
        elif isinstance(lab, (AnchorLabel, EventSpanLabel)):
            last = lab.event if isinstance(lab, AnchorLabel) else lab.last
            if target_events is None or last >= int(target_events):
                skipped.append((lab, "the target has no score with this event"))
                continue
            if isinstance(lab, AnchorLabel):
                out.append(fresh(lab, time_s=float(result.map_times([lab.time_s])[0])))
            else:
                t0, t1 = result.map_times([lab.t0_s, lab.t1_s])
                out.append(fresh(lab, t0_s=float(t0), t1_s=float(max(t0, t1))))
        else:
            skipped.append((lab, f"{type(lab).__name__} relates two recordings; it is not carried"))
    return CarriedLabels(tuple(out), tuple(skipped))
