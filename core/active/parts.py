"""Parts: the pieces of items that an annotator is asked to label.

Active learning asks for labels on *parts* (Lou et al. 2014, §1.4: break large
instances into parts and query the informative ones): a whole aCGH chromosome,
a window of a long chromosome or of audio frames, a phrase or window of score
events. A label given on a part is stored as the *partial* labels of
:mod:`marginalia.types` that hold inside the part (regions, boundaries, anchors),
never as a full label of the whole item.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

import numpy as np

from ..checks import check_int, is_integer
from ..exceptions import ParameterError
from ..types import AnchorLabel, BoundaryLabel, EventSpanLabel, MidiScore, RegionKind, RegionLabel, Sequence

__all__ = ["PART_KINDS", "PART_AXES", "Part", "make_parts", "parts_for_items", "phrase_parts"]

PART_KINDS = ("chromosome", "window", "phrase")
PART_AXES = ("samples", "frames", "events")


@dataclass(frozen=True)
class Part:
    """A contiguous range ``[start, stop)`` of one item, proposed for labelling.

    Parameters
    ----------
    item_id : str
        The item the part belongs to.
    start, stop : int
        Range in the item's index space (``0 <= start < stop``).
    kind : {"chromosome", "window", "phrase"}
        A whole item, a window of a long item, or a musical phrase.
    axis : {"samples", "frames", "events"}
        What the indices count: samples of a sequence (aCGH probes), audio
        frames, or score events.
    """

    item_id: str
    start: int
    stop: int
    kind: str = "chromosome"
    axis: str = "samples"

    def __post_init__(self):
        if not isinstance(self.item_id, str) or not self.item_id:
            raise ParameterError(f"Part.item_id: expected a non-empty string, got {self.item_id!r}")
        try:
            start, stop = int(self.start), int(self.stop)
        except (TypeError, ValueError):
            raise ParameterError(f"Part: start and stop must be integers, got {self.start!r}, {self.stop!r}") from None
        if start < 0 or stop <= start:
            raise ParameterError(f"Part {self.item_id!r}: need 0 <= start < stop, got start={start}, stop={stop}")
        if self.kind not in PART_KINDS:
            raise ParameterError(f"Part.kind: expected one of {PART_KINDS}, got {self.kind!r}")
        if self.axis not in PART_AXES:
            raise ParameterError(f"Part.axis: expected one of {PART_AXES}, got {self.axis!r}")
        object.__setattr__(self, "start", start)
        object.__setattr__(self, "stop", stop)

    @property
    def size(self) -> int:
        """Number of indices in the part, ``stop - start``."""
        return self.stop - self.start

    def overlaps(self, other: "Part") -> bool:
        """True when both parts are on the same item and their ranges intersect."""
        return self.item_id == other.item_id and self.start < other.stop and other.start < self.stop

    def contains_label(self, label) -> bool:
        """True when a label of this part's item lies entirely inside the part.

        Region labels must lie in ``[start, stop)``; a boundary at change index
        ``c`` must satisfy ``start < c < stop``; anchors and event spans are
        tested on event indices (for parts whose axis is ``"events"``).
        """
        if getattr(label, "item_id", None) != self.item_id:
            return False
        if isinstance(label, RegionLabel):
            return self.start <= label.start and label.stop <= self.stop
        if isinstance(label, BoundaryLabel):
            return self.start < label.index < self.stop
        if isinstance(label, AnchorLabel) and self.axis == "events":
            return self.start <= label.event < self.stop
        if isinstance(label, EventSpanLabel) and self.axis == "events":
            return self.start <= label.first and label.last < self.stop
        return False

    def select_labels(self, labels: Iterable) -> list:
        """The labels (of any item) that lie entirely inside this part, in input order."""
        return [lab for lab in labels if self.contains_label(lab)]

    def labels_from_changes(self, changes, *, author: str = "") -> list:
        """Store a complete answer on this part as partial segmentation labels.

        Parameters
        ----------
        changes : array_like of int, shape (K,)
            Change indices of the item (a :class:`~marginalia.types.Segmentation`'s
            ``changes`` may be passed as is: entries outside ``(start, stop)``
            are ignored).
        author : str

        Returns
        -------
        labels : list of BoundaryLabel and RegionLabel
            A :class:`BoundaryLabel` at every change strictly inside the part and
            a ``ZERO`` :class:`RegionLabel` on every stretch of >= 2 samples
            between consecutive changes (or the part's ends). Together they fix
            the segmentation inside the part and say nothing outside it.
        """
        if self.axis == "events":
            raise ParameterError(f"Part {self.item_id!r} [{self.start}, {self.stop}): segmentation labels need a "
                                 "part over samples or frames, got axis='events'")
        ch = np.asarray(changes, dtype=np.int64).reshape(-1)
        inside = np.unique(ch[(ch > self.start) & (ch < self.stop)])
        cuts = [self.start, *inside.tolist(), self.stop]
        labels: list = [BoundaryLabel(item_id=self.item_id, index=int(c), author=author) for c in inside]
        for a, b in zip(cuts[:-1], cuts[1:]):
            if b - a >= 2:
                labels.append(RegionLabel(item_id=self.item_id, start=a, stop=b, kind=RegionKind.ZERO, author=author))
        return labels

    def anchor_labels(self, event_times_s, *, tolerance_s: float = 0.05, author: str = "") -> list:
        """Store a complete answer on an events part as anchors.

        Parameters
        ----------
        event_times_s : array_like of float, shape (E,)
            Onset time (seconds of the audio) of every event of the item;
            ``NaN`` marks an event the annotator cannot place (skipped).
        tolerance_s : float
        author : str

        Returns
        -------
        labels : list of AnchorLabel
            One anchor per event ``start <= e < stop`` with a finite time.
        """
        if self.axis != "events":
            raise ParameterError(f"Part {self.item_id!r}: anchors are stored on parts over events, "
                                 f"got axis={self.axis!r}")
        times = np.asarray(event_times_s, dtype=np.float64).reshape(-1)
        if times.shape[0] < self.stop:
            raise ParameterError(f"event_times_s: expected at least {self.stop} times (one per event of "
                                 f"{self.item_id!r}), got {times.shape[0]}")
        return [AnchorLabel(item_id=self.item_id, event=e, time_s=float(times[e]), tolerance_s=tolerance_s,
                            author=author)
                for e in range(self.start, self.stop) if np.isfinite(times[e]) and times[e] >= 0]


def make_parts(item_id: str, n: int, *, kind: str = "chromosome", window: int | None = None,
               hop: int | None = None, axis: str | None = None) -> list:
    """Cut one item of ``n`` indices into parts.

    Parameters
    ----------
    item_id : str
    n : int
        Length of the item in its index space (samples, frames or events).
    kind : {"chromosome", "window", "phrase"}
        ``"chromosome"``: the whole item is one part, unless ``window`` is given
        and the item is longer, in which case it is cut into windows.
        ``"window"``: windows of ``window`` indices. ``"phrase"``: windows of
        events labelled as phrases (use :func:`phrase_parts` to cut a score at
        its musical gaps).
    window : int, optional
        Window length; required for ``"window"`` and ``"phrase"``.
    hop : int, optional
        Step between window starts (default ``window``: no overlap). The last
        window always ends at ``n`` so every index is covered.
    axis : {"samples", "frames", "events"}, optional
        Defaults to ``"events"`` for phrases, ``"samples"`` otherwise.

    Returns
    -------
    parts : list of Part, ordered by start
    """
    n = check_int(n, "n", min_val=1)
    if kind not in PART_KINDS:
        raise ParameterError(f"kind: expected one of {PART_KINDS}, got {kind!r}")
    axis = axis or ("events" if kind == "phrase" else "samples")
    if kind == "chromosome" and (window is None or n <= window):
        return [Part(item_id, 0, n, "chromosome", axis)]
    if window is None:
        raise ParameterError(f"window: required for kind={kind!r}, got None")
    window = check_int(window, "window", min_val=1)
    hop = window if hop is None else check_int(hop, "hop", min_val=1)
    if hop > window:
        raise ParameterError(f"hop: must be <= window={window} so that no index is left out, got {hop}")
    part_kind = "window" if kind == "chromosome" else kind
    if n <= window:
        return [Part(item_id, 0, n, part_kind, axis)]
    starts = list(range(0, n - window + 1, hop))
    if starts[-1] + window < n:
        starts.append(n - window)
    return [Part(item_id, s, s + window, part_kind, axis) for s in starts]


def parts_for_items(items: Mapping, *, window: int | None = None, hop: int | None = None,
                    axis: str = "samples") -> list:
    """Parts for a pool of items: each item whole, or cut into windows when longer than ``window``.

    Parameters
    ----------
    items : mapping of str to Sequence or ndarray or int
        Item id to its data (a :class:`~marginalia.types.Sequence`, an array whose
        first axis is the index space, or the length itself).
    window, hop : int, optional
        See :func:`make_parts`.
    axis : {"samples", "frames", "events"}

    Returns
    -------
    parts : list of Part, in item order then by start
    """
    if not isinstance(items, Mapping):
        raise ParameterError(f"items: expected a mapping of item id to data, got {type(items).__name__}")
    parts = []
    for item_id, data in items.items():
        if isinstance(data, Sequence):
            n = data.n_samples
        elif is_integer(data):
            n = int(data)
        else:
            shape = np.shape(data)
            if not shape:
                raise ParameterError(f"items[{item_id!r}]: expected a Sequence, an array or a length, "
                                     f"got {type(data).__name__}")
            n = shape[0]
        parts.extend(make_parts(item_id, n, kind="chromosome", window=window, hop=hop, axis=axis))
    return parts


def phrase_parts(item_id: str, score: MidiScore, *, max_events: int = 16, gap_factor: float = 2.0) -> list:
    """Cut a score into phrases of events.

    A phrase ends where the gap to the next event onset exceeds ``gap_factor``
    times the median inter-onset interval (a rest or a long note), and phrases
    longer than ``max_events`` are cut into near-equal pieces.

    Parameters
    ----------
    item_id : str
    score : MidiScore
    max_events : int
    gap_factor : float
        Must be > 1.

    Returns
    -------
    parts : list of Part with ``kind="phrase"``, ``axis="events"``
    """
    if not isinstance(score, MidiScore):
        raise ParameterError(f"score: expected a marginalia.types.MidiScore, got {type(score).__name__}")
    max_events = check_int(max_events, "max_events", min_val=1)
    if not (np.isfinite(gap_factor) and gap_factor > 1.0):
        raise ParameterError(f"gap_factor: expected a finite number > 1, got {gap_factor!r}")
    onsets = np.asarray(score.event_onsets_s, dtype=np.float64)
    E = onsets.shape[0]
    cuts = [0]
    if E > 1:
        ioi = np.diff(onsets)
        median = float(np.median(ioi))
        cuts += (np.flatnonzero(ioi > gap_factor * median) + 1).tolist()
    cuts.append(E)
    parts = []
    for a, b in zip(cuts[:-1], cuts[1:]):
        n_pieces = -(-(b - a) // max_events)
        bounds = np.linspace(a, b, n_pieces + 1).round().astype(int)
        parts.extend(Part(item_id, int(s), int(t), "phrase", "events") for s, t in zip(bounds[:-1], bounds[1:]))
    return parts
