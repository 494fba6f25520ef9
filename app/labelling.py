"""Turning a structure (best or runner-up) on a part into labels, and parts into x ranges."""

from __future__ import annotations

import numpy as np

from core.types import AnchorLabel, BoundaryLabel, RegionKind, RegionLabel


def labels_from_structure(item_id: str, structure, start: int, stop: int, frame_times=None) -> list:
    """Labels that pin ``structure`` on samples ``[start, stop)``.

    A segmentation gives one region label saying how many changes lie inside plus one exact
    boundary label per change; an alignment gives one anchor per event starting in the part.
    """
    start, stop = int(start), int(stop)
    if hasattr(structure, "breakpoints"):
        inside = [int(c) for c in structure.breakpoints if start < c < stop]
        if stop - start < 2:
            return []
        kind = RegionKind.ZERO if not inside else (RegionKind.ONE if len(inside) == 1 else RegionKind.AT_LEAST_ONE)
        out = [RegionLabel(item_id=item_id, start=start, stop=stop, kind=kind)]
        out += [BoundaryLabel(item_id=item_id, index=c) for c in inside]
        return out
    if hasattr(structure, "onsets"):
        times = np.asarray(frame_times, dtype=float)
        return [AnchorLabel(item_id=item_id, event=int(e), time_s=float(times[int(f)]))
                for e, f in enumerate(structure.onsets) if start <= f < stop]
    return []
