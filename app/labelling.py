"""Turning a structure (best or runner-up) on a part into labels, and parts into x ranges."""

from __future__ import annotations

import numpy as np

from marginalia.types import AnchorLabel, BoundaryLabel, RegionKind, RegionLabel


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


def anchors_for_events(item_id: str, alignment, first: int, stop: int, frame_times, skip=()) -> list:
    """Anchors pinning events ``first..stop-1`` at their onsets in ``alignment`` (events in ``skip`` left out).

    What answering an audio question with an alignment (the runner-up) labels: the events
    the question names, not the events whose onsets happen to fall in its frame range.
    """
    times = np.asarray(frame_times, dtype=float)
    onsets = np.asarray(alignment.onsets)
    skip = set(int(e) for e in skip)
    return [AnchorLabel(item_id=item_id, event=e, time_s=float(times[int(onsets[e])]))
            for e in range(max(int(first), 0), min(int(stop), onsets.size)) if e not in skip]


def provisional_onsets(onsets, event: int, frame: int, fixed=(), n_frames: int | None = None) -> np.ndarray:
    """The drawn alignment bent so that ``event`` starts at ``frame``: what to show until the decoder answers.

    Events between the nearest ``fixed`` events (other anchored events; else the ends of the
    recording) on each side are re-timed linearly so that their order and relative spacing stay;
    events beyond them do not move.

    Parameters
    ----------
    onsets : array_like of int, shape (E,)
        Strictly increasing onset frames of the drawn alignment.
    event : int
        The event just anchored.
    frame : int
        Its new onset frame.
    fixed : iterable of int
        Events that must not move (other anchors).
    n_frames : int, optional
        ``T``; onsets stay in ``[0, T - 1]`` (default: one past the last onset).

    Returns
    -------
    ndarray of int64, shape (E,), strictly increasing
    """
    old = np.asarray(onsets, dtype=np.int64).reshape(-1)
    E = old.size
    if not 0 <= event < E:
        raise ValueError(f"provisional_onsets: event {event} is outside the score's {E} events")
    T = int(n_frames) if n_frames is not None else int(old[-1]) + 1
    if T < E:
        raise ValueError(f"provisional_onsets: {E} events cannot start in {T} frames")
    fixed = sorted(int(e) for e in fixed if 0 <= int(e) < E and int(e) != event)
    # room for the events on each side of the anchored one
    frame = int(np.clip(frame, event, T - E + event))
    left = max([e for e in fixed if e < event], default=None)
    right = min([e for e in fixed if e > event], default=None)
    new = old.astype(np.float64).copy()
    x0, y0 = (float(old[left]), float(old[left])) if left is not None else (0.0, 0.0)
    x1, y1 = (float(old[right]), float(old[right])) if right is not None else (float(T - 1), float(T - 1))
    lo = left + 1 if left is not None else 0
    hi = right if right is not None else E
    xe = float(old[event])
    for i in range(lo, hi):
        x = float(old[i])
        if x <= xe:
            new[i] = y0 + (x - x0) * (frame - y0) / (xe - x0) if xe > x0 else frame
        else:
            new[i] = frame + (x - xe) * (y1 - frame) / (x1 - xe) if x1 > xe else frame
    out = np.round(new).astype(np.int64)
    out[event] = frame
    for i in range(event + 1, E):          # keep them strictly increasing around the anchored event
        out[i] = max(out[i], out[i - 1] + 1)
    for i in range(event - 1, -1, -1):
        out[i] = min(out[i], out[i + 1] - 1)
    return np.clip(out, np.arange(E), T - E + np.arange(E))
