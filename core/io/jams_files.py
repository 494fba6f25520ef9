"""JAMS (JSON Annotated Music Specification) files: segmentations and score alignments of audio items.

JAMS is JSON with a schema; this module writes and reads it with the standard ``json`` module, so the
engine and the command line do not need the ``jams`` package (which pulls in pandas). The tests load
every file written here with ``jams.load(..., validate=True)``, and read files that ``jams`` wrote.

What is written
---------------
* a segmentation: one annotation in the ``segment_open`` namespace, one observation per segment
  (``time`` = start, ``duration`` = end - start, ``value`` = the segment's name);
* an alignment: one annotation in the ``note_midi`` namespace, one observation per note of each score
  event, at the event's aligned onset (``duration`` up to the next event's onset, ``value`` = MIDI pitch);
  the event index of each observation is kept in the annotation's ``sandbox`` (``events``).

What is read
------------
Every annotation becomes a :class:`~marginalia.io.labels_audio.LabelTrack` keyed by its namespace (a second
one of the same namespace gets ``#2``): segment namespaces give regions, ``onset``/``beat`` give points,
``note_midi``/``note_hz`` give notes (points at their onsets, named by their value).
"""

from __future__ import annotations

import json

import numpy as np

from ..checks import check_scalar
from ..exceptions import DataFormatError, ParameterError
from ._common import decode_text, existing_file, output_file, read_bytes
from .labels_audio import LabelTrack

__all__ = ["JAMS_VERSION", "write_jams_segments", "write_jams_alignment", "read_jams"]

JAMS_VERSION = "0.3.4"


def _metadata(duration_s: float, title: str) -> dict:
    return {"title": title, "artist": "", "release": "", "duration": float(duration_s), "identifiers": {},
            "jams_version": JAMS_VERSION}


def _annotation(namespace: str, data: list, duration_s: float, sandbox=None) -> dict:
    return {"annotation_metadata": {"curator": {"name": "", "email": ""}, "annotator": {},
                                    "version": "", "corpus": "", "annotation_tools": "Marginalia",
                                    "annotation_rules": "", "validation": "", "data_source": "Marginalia"},
            "namespace": namespace, "data": data, "sandbox": sandbox or {}, "time": 0,
            "duration": float(duration_s)}


def _check_duration(duration_s) -> float:
    return check_scalar(duration_s, "duration_s", float, min_val=0, include_boundaries="neither",
                        what="the recording's duration in seconds")


def _dump(path, doc: dict) -> None:
    p = output_file(path)
    with open(p, "w", encoding="utf-8") as fh:
        json.dump(doc, fh, indent=1)
        fh.write("\n")


def write_jams_segments(path, boundaries_s, *, duration_s, names=None, title: str = "") -> None:
    """Write a segmentation as a JAMS ``segment_open`` annotation.

    Parameters
    ----------
    path : str or path-like
    boundaries_s : array_like, shape (K,)
        Change times in seconds (sorted); those at or beyond 0 and ``duration_s`` are dropped.
    duration_s : float
        The recording's duration (the last segment ends there).
    names : sequence of str, optional
        One per segment; default ``"1", "2", ...``.
    title : str
        The file metadata's title (the item's name).
    """
    dur = _check_duration(duration_s)
    b = np.asarray(boundaries_s, dtype=np.float64).ravel()
    if not np.all(np.isfinite(b)) or np.any(np.diff(b) < 0):
        raise ParameterError("boundaries_s: expected sorted finite times in seconds")
    edges = np.concatenate([[0.0], np.unique(b[(b > 0) & (b < dur)]), [dur]])
    n = edges.shape[0] - 1
    labels = [str(k + 1) for k in range(n)] if names is None else [str(x) for x in names]
    if len(labels) != n:
        raise ParameterError(f"names: expected {n} names (one per segment), got {len(labels)}")
    data = [{"time": float(edges[k]), "duration": float(edges[k + 1] - edges[k]), "value": labels[k],
             "confidence": None} for k in range(n)]
    _dump(path, {"annotations": [_annotation("segment_open", data, dur)], "file_metadata": _metadata(dur, title),
                 "sandbox": {}})


def write_jams_alignment(path, score, times_s, *, duration_s, title: str = "") -> None:
    """Write a score alignment as a JAMS ``note_midi`` annotation (see the module notes).

    Parameters
    ----------
    path : str or path-like
    score : MidiScore
    times_s : array_like, shape (E,)
        Audio onset of each score event (non-decreasing).
    duration_s : float
        The recording's duration.
    title : str
    """
    dur = _check_duration(duration_s)
    t = np.asarray(times_s, dtype=np.float64).ravel()
    if t.shape[0] != score.n_events or not np.all(np.isfinite(t)) or np.any(np.diff(t) < 0):
        raise ParameterError(f"times_s: expected {score.n_events} sorted finite onsets (one per score event), "
                             f"got {t.shape[0]}")
    data, events = [], []
    for e in range(score.n_events):
        end = t[e + 1] if e + 1 < score.n_events else max(dur, t[e])
        for pitch in score.event_pitches(e):
            data.append({"time": float(t[e]), "duration": float(max(end - t[e], 0.0)), "value": float(pitch),
                         "confidence": None})
            events.append(e)
    _dump(path, {"annotations": [_annotation("note_midi", data, max(dur, float(t[-1]) if t.size else dur),
                                             {"events": events})],
                 "file_metadata": _metadata(dur, title), "sandbox": {}})


_POINT_NAMESPACES = ("onset", "beat", "beat_position", "note_midi", "note_hz", "pitch_class")


def read_jams(path) -> dict:
    """Read the annotations of a JAMS file as label tracks.

    Returns
    -------
    tracks : dict of str -> LabelTrack
        Keyed by namespace (``segment_open``, ``onset``, ``note_midi``...; repeats get ``#2``, ``#3``).
        Segment-like namespaces give regions (``ends = starts + duration``); onset, beat and note
        namespaces give points at their times (``ends == starts``), named by their value, except in an
        alignment written by Marginalia, whose points are named ``"event E"`` (from the annotation's sandbox).

    Raises
    ------
    DataFormatError
        Not JSON, or not a JAMS document (no ``annotations`` list), or an observation without a time.
    """
    p = existing_file(path)
    text = decode_text(read_bytes(p), p)
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as exc:
        raise DataFormatError(f"not JSON ({exc.msg}); a JAMS file is a JSON document", path=str(p),
                              where=f"line {exc.lineno}") from None
    if not isinstance(doc, dict) or not isinstance(doc.get("annotations"), list):
        raise DataFormatError("not a JAMS document: no 'annotations' list at the top level", path=str(p))
    tracks: dict = {}
    for k, ann in enumerate(doc["annotations"]):
        ns = str(ann.get("namespace", "")) if isinstance(ann, dict) else ""
        data = ann.get("data", []) if isinstance(ann, dict) else None
        if isinstance(data, dict):   # the column-wise layout of older JAMS files
            keys = ("time", "duration", "value")
            data = [dict(zip(keys, row)) for row in zip(*(data.get(c, []) for c in keys))]
        if not isinstance(data, list):
            raise DataFormatError(f"annotation {k + 1} ({ns or 'no namespace'}) has no list of observations",
                                  path=str(p))
        events = (ann.get("sandbox") or {}).get("events") if isinstance(ann.get("sandbox"), dict) else None
        point = ns in _POINT_NAMESPACES
        starts, ends, names = [], [], []
        for j, obs in enumerate(data):
            try:
                a = float(obs["time"])
                d = float(obs.get("duration") or 0.0)
            except (KeyError, TypeError, ValueError):
                raise DataFormatError(f"observation {j + 1} has no numeric time/duration", path=str(p),
                                      where=f"annotation {k + 1} ({ns})") from None
            starts.append(a)
            ends.append(a if point else a + d)
            if isinstance(events, list) and len(events) == len(data):
                names.append(f"event {int(events[j])}")
            else:
                v = obs.get("value")
                names.append("" if v is None else str(v))
        key = ns or "annotation"
        n = 2
        while key in tracks:
            key = f"{ns}#{n}"
            n += 1
        order = np.argsort(np.asarray(starts, dtype=np.float64), kind="stable")
        tracks[key] = LabelTrack(np.asarray(starts, dtype=np.float64)[order], np.asarray(ends, dtype=np.float64)[order],
                                 tuple(names[i] for i in order))
    return tracks
