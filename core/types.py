"""Immutable value types shared by the engine, the command line and the app.

Conventions
-----------
* Sample indices are 0-based. A *change index* ``c`` (``0 < c < T``) means a
  change between sample ``c - 1`` and sample ``c``; a :class:`Segmentation`
  lists its change indices followed by ``T`` (so segment ``k`` spans
  ``[changes[k-1], changes[k])`` with ``changes[-1] == 0`` implied).
* A region ``[start, stop)`` *contains* the change indices ``c`` with
  ``start < c < stop`` -- a change strictly between two of its samples.
* Arrays stored in these dataclasses are copied, made read-only and validated
  on construction, so a value can be shared between threads safely.
"""

from __future__ import annotations

import dataclasses
import enum
import time
import uuid
import warnings
from dataclasses import dataclass, field, fields
from typing import Optional

import numpy as np

from .checks import check_features
from .exceptions import ParameterError

__all__ = [
    "Sequence",
    "MidiScore",
    "Segmentation",
    "Alignment",
    "Warping",
    "RegionKind",
    "Label",
    "RegionLabel",
    "BoundaryLabel",
    "AnchorLabel",
    "EventSpanLabel",
    "WarpAnchorLabel",
    "SyncAnchorLabel",
    "SegmentationLabel",
    "AlignmentLabel",
    "AnyLabel",
    "label_fact",
    "describe_label",
    "REGION_KIND_NAMES",
    "Query",
    "Prediction",
    "new_id",
]


def new_id() -> str:
    """Return a fresh random identifier (32 hex characters)."""
    return uuid.uuid4().hex


def _frozen_array(name: str, value, dtype, ndim: int) -> np.ndarray:
    try:
        arr = np.array(value, dtype=dtype, copy=True)
    except (TypeError, ValueError) as exc:
        raise ParameterError(f"{name}: cannot convert to {np.dtype(dtype).name} array ({exc})") from None
    if arr.ndim != ndim:
        raise ParameterError(f"{name}: expected a {ndim}-d array, got shape {arr.shape}")
    arr.setflags(write=False)
    return arr


def _set(obj, name, value):
    object.__setattr__(obj, name, value)


# --------------------------------------------------------------------------- data


@dataclass(frozen=True, eq=False)
class Sequence:
    """A multivariate sequence: a CGH profile of one chromosome, audio features, a time series.

    Parameters
    ----------
    values : array_like, shape (T, p) or (T,)
        The observations; a 1-d input is stored as ``(T, 1)``. Must be finite.
    positions : array_like, shape (T,), optional
        Position of each sample (base pairs, seconds...), non-decreasing.
        Defaults to ``arange(T)``.
    name : str
        Human readable name (e.g. ``"profile 8, chr 2"`` or a file stem).
    units : str
        Units of ``positions`` (``"bp"``, ``"s"``, ``"index"``).
    group : str, optional
        Grouping key such as the chromosome.
    kind : str
        ``"cgh"``, ``"audio"`` or ``"series"``.
    feature_names : tuple of str, optional
        One name per column of ``values``.
    meta : dict
        Free-form provenance (source path, profile id, sample rate, hop length...).
    """

    values: np.ndarray
    positions: Optional[np.ndarray] = None
    name: str = ""
    units: str = "index"
    group: Optional[str] = None
    kind: str = "series"
    feature_names: tuple = ()
    meta: dict = field(default_factory=dict)

    def __post_init__(self):
        values = np.array(check_features(self.values, f"Sequence.values of {self.name or 'a sequence'}",
                                         fix="remove or interpolate NaN/inf before building a Sequence"), copy=True)
        values.setflags(write=False)
        _set(self, "values", values)
        T = values.shape[0]
        if self.positions is None:
            pos = np.arange(T, dtype=np.float64)
            pos.setflags(write=False)
        else:
            pos = _frozen_array("Sequence.positions", self.positions, np.float64, 1)
            if pos.shape[0] != T:
                raise ParameterError(f"Sequence.positions: expected {T} positions (one per sample), got {pos.shape[0]}")
            if not np.all(np.isfinite(pos)):
                raise ParameterError("Sequence.positions: contains NaN or inf")
            if T > 1 and np.any(np.diff(pos) < 0):
                raise ParameterError("Sequence.positions: must be non-decreasing; sort the samples first")
        _set(self, "positions", pos)
        names = tuple(self.feature_names)
        if names and len(names) != values.shape[1]:
            raise ParameterError(f"Sequence.feature_names: expected {values.shape[1]} names, got {len(names)}")
        _set(self, "feature_names", names)
        _set(self, "meta", dict(self.meta))

    @property
    def n_samples(self) -> int:
        """Number of samples ``T``."""
        return int(self.values.shape[0])

    @property
    def n_features(self) -> int:
        """Number of features ``p``."""
        return int(self.values.shape[1])

    def __len__(self) -> int:
        return self.n_samples

    def index_of(self, position: float) -> int:
        """Index of the first sample whose position is ``>= position`` (clipped to ``[0, T]``)."""
        return int(np.searchsorted(self.positions, position, side="left"))


@dataclass(frozen=True, eq=False)
class MidiScore:
    """A symbolic score (read from MIDI or MusicXML): notes with times in seconds and beats.

    Named for what it holds, so it is not mistaken for a score in the sense of a number
    (decoders and active learning score structures). ``Score`` is a deprecated alias.

    Parameters
    ----------
    pitches : array_like of int, shape (N,)
        MIDI pitch numbers 0..127.
    onsets_s, offsets_s : array_like of float, shape (N,)
        Note start and end in the score's own seconds (from its tempo map).
    onsets_beats, offsets_beats : array_like of float, shape (N,)
        The same in beats (quarter notes).
    velocities : array_like of int, shape (N,)
        MIDI velocities 1..127.
    tracks : array_like of int, shape (N,), optional
        Track (or channel) of each note.
    name : str
    tempo_map : array_like, shape (M, 3), optional
        Rows ``(tick_or_beat, seconds, microseconds_per_quarter)`` where the tempo changes;
        informational.
    ticks_per_beat : int
    meta : dict

    Notes
    -----
    Notes are stored sorted by (onset, pitch). An *event* is a group of notes
    whose onsets (in seconds) lie within ``event_tolerance_s`` of the first
    note of the group.
    """

    pitches: np.ndarray
    onsets_s: np.ndarray
    offsets_s: np.ndarray
    onsets_beats: Optional[np.ndarray] = None
    offsets_beats: Optional[np.ndarray] = None
    velocities: Optional[np.ndarray] = None
    tracks: Optional[np.ndarray] = None
    name: str = ""
    tempo_map: Optional[np.ndarray] = None
    ticks_per_beat: int = 480
    meta: dict = field(default_factory=dict)
    event_tolerance_s: float = 0.001

    def __post_init__(self):
        pitches = np.array(self.pitches, dtype=np.int64).reshape(-1)
        N = pitches.shape[0]
        if N == 0:
            raise ParameterError(f"MidiScore {self.name!r}: has no notes; a score needs at least one note")
        if np.any((pitches < 0) | (pitches > 127)):
            raise ParameterError(f"MidiScore {self.name!r}: pitches must lie in 0..127")

        def arr(name, value, default, dtype=np.float64):
            a = default if value is None else np.array(value, dtype=dtype).reshape(-1)
            if a.shape[0] != N:
                raise ParameterError(f"MidiScore.{name}: expected {N} values (one per note), got {a.shape[0]}")
            if dtype is np.float64 and not np.all(np.isfinite(a)):
                raise ParameterError(f"MidiScore.{name}: contains NaN or inf")
            return a

        on = arr("onsets_s", self.onsets_s, None)
        off = arr("offsets_s", self.offsets_s, None)
        if np.any(off < on):
            raise ParameterError(f"MidiScore {self.name!r}: a note ends before it starts")
        onb = arr("onsets_beats", self.onsets_beats, on.copy())
        offb = arr("offsets_beats", self.offsets_beats, off.copy())
        vel = arr("velocities", self.velocities, np.full(N, 80, dtype=np.int64), np.int64)
        trk = arr("tracks", self.tracks, np.zeros(N, dtype=np.int64), np.int64)
        order = np.lexsort((pitches, on))
        for name, a in (("pitches", pitches), ("onsets_s", on), ("offsets_s", off), ("onsets_beats", onb),
                        ("offsets_beats", offb), ("velocities", vel), ("tracks", trk)):
            a = np.ascontiguousarray(a[order])
            a.setflags(write=False)
            _set(self, name, a)
        if self.tempo_map is not None:
            tm = np.array(self.tempo_map, dtype=np.float64)
            tm.setflags(write=False)
            _set(self, "tempo_map", tm)
        _set(self, "meta", dict(self.meta))
        # event grouping (cached: the dataclass is immutable)
        starts = [0]
        for i in range(1, N):
            if on[order][i] - on[order][starts[-1]] > self.event_tolerance_s:
                starts.append(i)
        ev_index = np.zeros(N, dtype=np.int64)
        for e, s in enumerate(starts):
            ev_index[s:] = e
        ev_index.setflags(write=False)
        _set(self, "_note_event", ev_index)

    @property
    def n_notes(self) -> int:
        return int(self.pitches.shape[0])

    @property
    def note_event(self) -> np.ndarray:
        """Event index of each note, shape (N,)."""
        return self._note_event  # type: ignore[attr-defined]

    @property
    def n_events(self) -> int:
        return int(self._note_event[-1]) + 1  # type: ignore[attr-defined]

    @property
    def event_onsets_s(self) -> np.ndarray:
        """Expected onset of each event in the score's seconds, shape (E,)."""
        first = np.searchsorted(self.note_event, np.arange(self.n_events), side="left")
        return self.onsets_s[first]

    @property
    def event_onsets_beats(self) -> np.ndarray:
        """Onset of each event in beats, shape (E,)."""
        first = np.searchsorted(self.note_event, np.arange(self.n_events), side="left")
        return self.onsets_beats[first]

    def event_pitches(self, event: int) -> tuple:
        """Sorted distinct MIDI pitches of one event."""
        return tuple(sorted(set(int(p) for p in self.pitches[self.note_event == event])))

    def event_matrix(self, n_classes: int = 12) -> np.ndarray:
        """Binary event × pitch-class matrix Φ.

        Parameters
        ----------
        n_classes : {12, 128}
            12 folds pitches to chroma classes, 128 keeps MIDI pitches.

        Returns
        -------
        phi : ndarray, shape (E, n_classes), float64
        """
        if n_classes not in (12, 128):
            raise ParameterError(f"event_matrix: n_classes must be 12 or 128, got {n_classes}")
        phi = np.zeros((self.n_events, n_classes))
        cls = self.pitches % 12 if n_classes == 12 else self.pitches
        phi[self.note_event, cls] = 1.0
        return phi

    @property
    def duration_s(self) -> float:
        return float(self.offsets_s.max())


# ------------------------------------------------------------------- structures


@dataclass(frozen=True, eq=False)
class Segmentation:
    """A partition of ``T`` samples into consecutive segments.

    Parameters
    ----------
    changes : array_like of int, shape (K,)
        Strictly increasing segment ends; ``changes[-1] == n_samples``.
    n_samples : int, optional
        ``T``; defaults to ``changes[-1]``.
    """

    changes: np.ndarray
    n_samples: Optional[int] = None

    def __post_init__(self):
        ch = _frozen_array("Segmentation.changes", self.changes, np.int64, 1)
        if ch.shape[0] == 0:
            raise ParameterError("Segmentation.changes: must end with T (got an empty array)")
        T = int(ch[-1]) if self.n_samples is None else int(self.n_samples)
        if ch[-1] != T:
            raise ParameterError(f"Segmentation.changes: last entry must equal T={T}, got {int(ch[-1])}")
        if ch[0] <= 0 or np.any(np.diff(ch) <= 0):
            raise ParameterError(f"Segmentation.changes: must be strictly increasing and positive, got {ch.tolist()}")
        _set(self, "changes", ch)
        _set(self, "n_samples", T)

    @property
    def breakpoints(self) -> np.ndarray:
        """Change indices without the final ``T``, shape (K-1,)."""
        return self.changes[:-1]

    @property
    def n_segments(self) -> int:
        return int(self.changes.shape[0])

    def changes_inside(self, start: int, stop: int) -> int:
        """Number of change indices ``c`` with ``start < c < stop``: the changes a region ``[start, stop)`` holds.

        A change at ``start`` lies between sample ``start - 1`` and ``start``, on the region's edge, so it
        is not inside; the final ``T`` is never a change.
        """
        bp = self.breakpoints
        return int(np.searchsorted(bp, stop, side="left") - np.searchsorted(bp, start, side="right"))

    def labels(self) -> np.ndarray:
        """Segment index of every sample, shape (T,)."""
        lab = np.zeros(self.n_samples, dtype=np.int64)
        lab[self.breakpoints] = 1
        return np.cumsum(lab)

    def __eq__(self, other):
        return isinstance(other, Segmentation) and self.n_samples == other.n_samples and \
            np.array_equal(self.changes, other.changes)

    def __hash__(self):
        return hash((self.n_samples, self.changes.tobytes()))


@dataclass(frozen=True, eq=False)
class Alignment:
    """Onset frame of every score event in a sequence of ``n_frames`` frames.

    Parameters
    ----------
    onsets : array_like of int, shape (E,)
        Strictly increasing frame indices in ``[0, n_frames)``; event ``e``
        occupies frames ``[onsets[e], onsets[e+1])``.
    n_frames : int
    """

    onsets: np.ndarray
    n_frames: int

    def __post_init__(self):
        on = _frozen_array("Alignment.onsets", self.onsets, np.int64, 1)
        T = int(self.n_frames)
        if on.shape[0] == 0:
            raise ParameterError("Alignment.onsets: needs at least one event")
        if on[0] < 0 or on[-1] >= T or np.any(np.diff(on) <= 0):
            raise ParameterError(f"Alignment.onsets: must be strictly increasing frame indices in [0, {T}), "
                                 f"got first={int(on[0])}, last={int(on[-1])}")
        _set(self, "onsets", on)
        _set(self, "n_frames", T)

    @property
    def n_events(self) -> int:
        return int(self.onsets.shape[0])

    def frame_events(self) -> np.ndarray:
        """Event index of each frame, shape (T,); frames before the first onset get -1."""
        lab = np.full(self.n_frames, -1, dtype=np.int64)
        for e in range(self.n_events):
            stop = self.onsets[e + 1] if e + 1 < self.n_events else self.n_frames
            lab[self.onsets[e]:stop] = e
        return lab

    def __eq__(self, other):
        return isinstance(other, Alignment) and self.n_frames == other.n_frames and \
            np.array_equal(self.onsets, other.onsets)

    def __hash__(self):
        return hash((self.n_frames, self.onsets.tobytes()))


@dataclass(frozen=True, eq=False)
class Warping:
    """A monotone warping path between sequences of lengths ``TA`` and ``TB``.

    Parameters
    ----------
    path : array_like of int, shape (L, 2)
        Pairs ``(ia, ib)`` from ``(0, 0)`` to ``(TA-1, TB-1)`` with steps
        (1,0), (0,1) or (1,1).
    """

    path: np.ndarray

    def __post_init__(self):
        p = _frozen_array("Warping.path", self.path, np.int64, 2)
        if p.shape[0] == 0 or p.shape[1] != 2:
            raise ParameterError(f"Warping.path: expected shape (L, 2) with L >= 1, got {p.shape}")
        if p[0, 0] != 0 or p[0, 1] != 0:
            raise ParameterError("Warping.path: must start at (0, 0)")
        steps = np.diff(p, axis=0)
        ok = ((steps == [1, 0]).all(1) | (steps == [0, 1]).all(1) | (steps == [1, 1]).all(1))
        if not np.all(ok):
            raise ParameterError("Warping.path: steps must be (1,0), (0,1) or (1,1)")
        _set(self, "path", p)

    @property
    def shape(self) -> tuple:
        """``(TA, TB)``."""
        return int(self.path[-1, 0]) + 1, int(self.path[-1, 1]) + 1

    def __eq__(self, other):
        return isinstance(other, Warping) and np.array_equal(self.path, other.path)

    def __hash__(self):
        return hash(self.path.tobytes())


# ----------------------------------------------------------------------- labels


class RegionKind(str, enum.Enum):
    """What a region label says about the changes strictly inside it."""

    ZERO = "0"             #: no change inside (``0breakpoints`` / ``normal``)
    ONE = "1"              #: exactly one change inside (``1breakpoint``)
    AT_LEAST_ONE = ">=1"   #: one or more changes inside (``>0breakpoints`` / ``breakpoint``)
    SAME = "same"          #: the span lies in one segment (constraint identical to ZERO)

    @property
    def bounds(self) -> tuple:
        """(min, max) number of changes allowed inside; max is None for unbounded."""
        return {"0": (0, 0), "same": (0, 0), "1": (1, 1), ">=1": (1, None)}[self.value]

    def shortfall(self, n_changes: int) -> tuple:
        """``(missing, extra)``: how many changes a region holding ``n_changes`` has below and above the bounds.

        ``(0, 0)`` when the label holds; at most one of the two is positive. The one rule every count of
        label errors reads (:func:`marginalia.region_errors`, the models' label violations).
        """
        lo, hi = self.bounds
        return max(lo - n_changes, 0), (max(n_changes - hi, 0) if hi is not None else 0)


def _label_defaults(obj):
    if not obj.id:
        _set(obj, "id", new_id())
    if not obj.created:
        _set(obj, "created", time.time())
    if not isinstance(obj.suggested, bool):
        raise ParameterError(f"{type(obj).__name__}.suggested: expected True or False, got {obj.suggested!r}")


@dataclass(frozen=True)
class Label:
    """Common fields of every partial label.

    Parameters
    ----------
    item_id : str
        The item (sequence or audio/score pair) the label is about.
    id : str
        Unique id; generated when empty.
    author : str
    created : float
        Unix time; set to now when 0.
    suggested : bool
        A suggestion (e.g. carried from another recording) that the person has not accepted yet:
        shown, but no model learns from it and no export writes it until it is accepted.
    """

    item_id: str
    id: str = ""
    author: str = ""
    created: float = 0.0
    suggested: bool = False

    def __post_init__(self):
        _label_defaults(self)


def label_fact(label) -> tuple:
    """What a label states, without its id, author or time: equal for two labels saying the same thing.

    Subclasses that only remember where a label came from (e.g. the annotation table's values
    kept by ``CghRegionLabel``) state the same fact as their base label, and a suggestion states the
    same fact as the label it would become.
    """
    base = next(c for c in type(label).__mro__ if Label in c.__bases__)
    names = [f.name for f in fields(base) if f.name not in ("id", "author", "created", "suggested")]
    return (base.__name__,) + tuple(getattr(label, name) for name in names)


@dataclass(frozen=True)
class RegionLabel(Label):
    """The samples ``[start, stop)`` hold 0, exactly 1, or at least 1 change (or one segment)."""

    start: int = 0
    stop: int = 0
    kind: RegionKind = RegionKind.ZERO

    def __post_init__(self):
        super().__post_init__()
        _set(self, "kind", RegionKind(self.kind))
        _set(self, "start", int(self.start))
        _set(self, "stop", int(self.stop))
        if self.start < 0 or self.stop <= self.start:
            raise ParameterError(f"RegionLabel: need 0 <= start < stop, got start={self.start}, stop={self.stop}")
        if self.kind in (RegionKind.ONE, RegionKind.AT_LEAST_ONE) and self.stop - self.start < 2:
            raise ParameterError(f"RegionLabel: a region with a change needs at least 2 samples, "
                                 f"got [{self.start}, {self.stop})")


@dataclass(frozen=True)
class BoundaryLabel(Label):
    """A change exactly at change index ``index`` (between samples index-1 and index)."""

    index: int = 1

    def __post_init__(self):
        super().__post_init__()
        _set(self, "index", int(self.index))
        if self.index < 1:
            raise ParameterError(f"BoundaryLabel: index must be >= 1, got {self.index}")


@dataclass(frozen=True)
class AnchorLabel(Label):
    """Score event ``event`` starts at ``time_s`` seconds of the audio, within ``tolerance_s``."""

    event: int = 0
    time_s: float = 0.0
    tolerance_s: float = 0.05

    def __post_init__(self):
        super().__post_init__()
        if int(self.event) < 0:
            raise ParameterError(f"AnchorLabel: event must be >= 0, got {self.event}")
        if not np.isfinite(self.time_s) or self.time_s < 0:
            raise ParameterError(f"AnchorLabel: time_s must be a finite time >= 0, got {self.time_s}")
        if not np.isfinite(self.tolerance_s) or self.tolerance_s < 0:
            raise ParameterError(f"AnchorLabel: tolerance_s must be >= 0, got {self.tolerance_s}")
        _set(self, "event", int(self.event))


@dataclass(frozen=True)
class EventSpanLabel(Label):
    """Score events ``first..last`` (inclusive) all start inside ``[t0_s, t1_s]``."""

    first: int = 0
    last: int = 0
    t0_s: float = 0.0
    t1_s: float = 0.0

    def __post_init__(self):
        super().__post_init__()
        if not (0 <= int(self.first) <= int(self.last)):
            raise ParameterError(f"EventSpanLabel: need 0 <= first <= last, got {self.first}..{self.last}")
        if not (np.isfinite(self.t0_s) and np.isfinite(self.t1_s) and 0 <= self.t0_s <= self.t1_s):
            raise ParameterError(f"EventSpanLabel: need 0 <= t0_s <= t1_s, got [{self.t0_s}, {self.t1_s}]")


@dataclass(frozen=True)
class WarpAnchorLabel(Label):
    """Frame ``ta`` of sequence A corresponds to frame ``tb`` of sequence B."""

    ta: int = 0
    tb: int = 0

    def __post_init__(self):
        super().__post_init__()
        if int(self.ta) < 0 or int(self.tb) < 0:
            raise ParameterError(f"WarpAnchorLabel: frames must be >= 0, got ({self.ta}, {self.tb})")
        _set(self, "ta", int(self.ta))
        _set(self, "tb", int(self.tb))


@dataclass(frozen=True)
class SyncAnchorLabel(Label):
    """``reference_s`` seconds of recording ``item_id`` are the same music as ``target_s`` seconds of ``target_id``.

    A warping anchor between two recordings of a project (a partial label of the path that aligns
    them): every sync of the pair passes through it, and the sync metric learns from it. Times are in
    seconds so that the anchor holds whatever frames the aligner uses. It is a label of the reference
    item (``item_id``) whatever that item's task, and no task's model of a single item learns from it.
    """

    target_id: str = ""
    reference_s: float = 0.0
    target_s: float = 0.0

    def __post_init__(self):
        super().__post_init__()
        if not isinstance(self.target_id, str) or not self.target_id:
            raise ParameterError(f"SyncAnchorLabel: target_id must name the other recording, got {self.target_id!r}")
        if self.target_id == self.item_id:
            raise ParameterError("SyncAnchorLabel: the two recordings must differ (target_id == item_id)")
        for name in ("reference_s", "target_s"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)) \
                    or not np.isfinite(value) or value < 0:
                raise ParameterError(f"SyncAnchorLabel: {name} must be a finite time >= 0, got {value!r}")
            _set(self, name, float(value))

    def flipped(self) -> "SyncAnchorLabel":
        """The same anchor seen from the other recording (same id: it is one stored label)."""
        return dataclasses.replace(self, item_id=self.target_id, target_id=self.item_id, reference_s=self.target_s,
                                   target_s=self.reference_s)


SegmentationLabel = RegionLabel | BoundaryLabel
AlignmentLabel = AnchorLabel | EventSpanLabel
AnyLabel = RegionLabel | BoundaryLabel | AnchorLabel | EventSpanLabel | WarpAnchorLabel | SyncAnchorLabel

#: how people read each region kind (legends, label lists, messages)
REGION_KIND_NAMES = {
    RegionKind.ZERO: "no change (0)",
    RegionKind.ONE: "exactly one change (1)",
    RegionKind.AT_LEAST_ONE: "at least one change (\u22651)",
    RegionKind.SAME: "same segment (S)",
}


def describe_label(label, positions=None, units: str = "") -> str:
    """One line saying what a label states, for people.

    Parameters
    ----------
    label : Label
    positions : ndarray, shape (T,), optional
        The item's sample positions; sample indices are shown when not given.
    units : str
        ``"bp"`` (shown in Mb), ``"s"`` or anything else (shown as is).

    Returns
    -------
    str
        e.g. ``"no change (0): 20.057 Mb \u2013 79.077 Mb"``, ``"event 12 at 3.250 s"``.
    """
    def at(i):
        if positions is None or len(positions) == 0:
            return f"#{i}"
        i = min(max(int(i), 0), len(positions) - 1)
        v = float(positions[i])
        if units == "bp":
            return f"{v / 1e6:.3f} Mb"
        if units == "s":
            return f"{v:.2f} s"
        return f"{v:g}"

    if label.suggested:
        return "suggested \u00b7 " + describe_label(dataclasses.replace(label, suggested=False), positions, units)
    if isinstance(label, RegionLabel):
        return f"{REGION_KIND_NAMES[label.kind]}: {at(label.start)} \u2013 {at(label.stop - 1)}"
    if isinstance(label, BoundaryLabel):
        return f"boundary at {at(label.index)}"
    if isinstance(label, AnchorLabel):
        return f"event {label.event} at {label.time_s:.3f} s"
    if isinstance(label, EventSpanLabel):
        return f"events {label.first}\u2013{label.last} in [{label.t0_s:.2f}, {label.t1_s:.2f}] s"
    if isinstance(label, WarpAnchorLabel):
        return f"warp anchor ({label.ta}, {label.tb})"
    if isinstance(label, SyncAnchorLabel):
        return f"sync anchor {label.reference_s:.3f} s \u2194 {label.target_s:.3f} s of another recording"
    return repr(label)


# ------------------------------------------------------------------ predictions


@dataclass(frozen=True)
class Query:
    """A part proposed for labelling.

    Parameters
    ----------
    item_id : str
    start, stop : int
        The part's range in the item's index space (samples or events).
    uncertainty : float
        Larger means a label is expected to help more.
    strategy : str
    rank : int
    """

    item_id: str
    start: int
    stop: int
    uncertainty: float
    strategy: str = "best-vs-2nd"
    rank: int = 0


@dataclass(frozen=True, eq=False)
class Prediction:
    """The model's best structure for an item, with its runner-up.

    Parameters
    ----------
    item_id : str
    structure : Segmentation or Alignment or Warping
    model_id : str
        Id of the model that made it (to draw stale predictions as stale).
    score : float
        Score of the best structure (higher is better).
    runner_up : structure, optional
        The best structure different from ``structure``.
    margin : float
        ``score - score(runner_up)`` (>= 0) in the task's unit of score (for segmentation
        the change penalty, so a margin of 1 is the price of one change), the ``m`` of
        the item's uncertainty ``exp(-m)``; ``inf`` when there is no runner-up.
    times_s : ndarray, shape (E,), optional
        For alignments: the event onsets in seconds, finer than the frames of
        ``structure`` when the aligner refines them.
    part_runner_ups : dict, optional
        For alignments: ``(first, stop)`` of each active-learning part (a phrase of
        events) → ``(runner_up, margin)`` of that part's own window: the best
        alignment that moves one of its unanchored events with every other event
        held, and the score it loses (``(None, inf)`` when nothing can move). The
        item's ``runner_up`` is its closest call anywhere; a question about one
        phrase shows and accepts the phrase's own.
    """

    item_id: str
    structure: object
    model_id: str
    score: float = 0.0
    runner_up: object = None
    margin: float = float("inf")
    times_s: Optional[np.ndarray] = None
    part_runner_ups: Optional[dict] = None

    def for_part(self, first: int, stop: int) -> "Prediction":
        """This prediction with the runner-up and margin of part ``[first, stop)`` when it has its own."""
        own = (self.part_runner_ups or {}).get((int(first), int(stop)))
        if own is None:
            return self
        runner_up, margin = own
        return dataclasses.replace(self, runner_up=runner_up, margin=float(margin))


def __getattr__(name: str):
    # the old name of MidiScore, kept for code written against 0.2 (it was public as marginalia.Score)
    if name == "Score":
        warnings.warn("marginalia.types.Score is deprecated; use MidiScore (same class)", DeprecationWarning,
                      stacklevel=2)
        return MidiScore
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
