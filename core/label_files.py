"""Audio label files in and out of a project: Audacity, Sonic Visualiser, Praat TextGrid and JAMS.

The formats are read and written by :mod:`marginalia.io.labels_audio` and :mod:`marginalia.io.jams_files`;
this module maps them onto a project's audio items (by name) and their labels.

Import (partial labels, never a full answer: what a file does not say stays unlabelled)
---------------------------------------------------------------------------------------
A file labels the audio item of the same name (its file name without suffixes, or ``item=``).

* segmentation items: a point label is a change at the frame nearest its time (:class:`BoundaryLabel`);
  a region label says its span is one segment (:class:`RegionLabel` of kind ``same``) and that changes
  happen at its edges (boundary labels there, unless an edge is the start or end of the recording).
* alignment items (audio with a score): a label named ``event E`` or ``E`` (an event index, as the
  alignment exports write them) anchors score event E at its (start) time (:class:`AnchorLabel`).

Whatever cannot be mapped (labels beyond the recording, labels of an alignment that name no score event,
changes at the very ends of the recording) is reported in one warning per file and not imported.

Export (predictions of every audio item, one file per item into a folder)
-------------------------------------------------------------------------
``sonic-visualiser`` (``<name>.csv``), ``textgrid`` (``<name>.TextGrid``), ``jams`` (``<name>.jams``):
segmentation items as their predicted changes (TextGrid and JAMS: the segments between them), alignment
items as their aligned event onsets (JAMS: the score's notes at their aligned times, ``note_midi``).
"""

from __future__ import annotations

import re
import warnings
from pathlib import Path

import numpy as np

from .exceptions import DataFormatError, ParameterError
from .types import AnchorLabel, BoundaryLabel, RegionKind, RegionLabel, Segmentation

__all__ = ["LABEL_FILE_KINDS", "LABEL_EXPORT_KINDS", "UnmappedLabelsWarning", "label_kind_of", "read_label_tracks",
           "labels_from_file", "write_audio_labels"]

#: import kinds -> the file suffixes that select them with kind "auto"
LABEL_FILE_KINDS = {
    "audacity": (".txt",),
    "sonic-visualiser": (".csv",),
    "textgrid": (".textgrid",),
    "jams": (".jams", ".json"),
}
#: export kinds -> suffix of the file written per audio item
LABEL_EXPORT_KINDS = {"audacity": ".txt", "sonic-visualiser": ".csv", "textgrid": ".TextGrid", "jams": ".jams"}


class UnmappedLabelsWarning(UserWarning):
    """Some labels of an imported file could not be mapped onto the project's items (the message says which)."""


def label_kind_of(path) -> str:
    """The label-file kind of a path from its suffix."""
    name = Path(path).name.lower()
    for kind, suffixes in LABEL_FILE_KINDS.items():
        if name.endswith(suffixes):
            return kind
    raise ParameterError(f"{str(path)!r}: cannot tell the label format from the file name; expected "
                         f"{', '.join(s for ss in LABEL_FILE_KINDS.values() for s in ss)} or name the format "
                         f"({', '.join(LABEL_FILE_KINDS)})")


def read_label_tracks(path, kind: str = "auto") -> dict:
    """``{track name: LabelTrack}`` of a label file (one track for Audacity and Sonic Visualiser)."""
    from .io import jams_files, labels_audio
    kind = label_kind_of(path) if kind == "auto" else kind
    if kind == "audacity":
        return {"labels": labels_audio.read_audacity_labels(path)}
    if kind == "sonic-visualiser":
        return {"labels": labels_audio.read_sonic_visualiser_csv(path)}
    if kind == "textgrid":
        return labels_audio.read_textgrid(path)
    if kind == "jams":
        return jams_files.read_jams(path)
    raise ParameterError(f"label format {kind!r} unknown; expected one of {', '.join(LABEL_FILE_KINDS)} or auto")


def _item_name(path: Path) -> str:
    name = path.name
    for suffix in (".TextGrid", ".textgrid", ".jams", ".json", ".txt", ".csv"):
        if name.endswith(suffix):
            name = name[: -len(suffix)]
            break
    return re.sub(r"_(alignment|labels)$", "", name)


def labels_from_file(engine, path, *, kind: str = "auto", item=None) -> list:
    """The labels a file states about the project's audio item (not yet stored); warns about the rest.

    Parameters
    ----------
    engine : Engine
    path : path-like
    kind : {"auto", "audacity", "sonic-visualiser", "textgrid", "jams"}
    item : str, optional
        The name of the item the file labels; default: the file name without its suffixes.

    Warns
    -----
    UnmappedLabelsWarning
        One per file, listing what was not imported and why.
    """
    path = Path(path)
    tracks = read_label_tracks(path, kind)
    name = item if item is not None else _item_name(path)
    recs = [r for r in engine.session.items() if r.name == name and r.kind == "audio"]
    if not recs:
        audio = sorted(r.name for r in engine.session.items() if r.kind == "audio")
        raise DataFormatError(f"no audio item named {name!r} in the project (audio items: "
                              f"{', '.join(audio[:8]) or 'none'}{' ...' if len(audio) > 8 else ''}); import its "
                              "recording first or name the item", path=str(path))
    rec = recs[0]
    times = np.asarray(engine.data(rec.id).sequence.positions, dtype=np.float64)
    T = times.shape[0]
    duration = float((rec.meta or {}).get("duration_s") or (times[-1] if T else 0.0))
    n_events = int((rec.meta or {}).get("n_events") or 0)

    def frame(t):
        return int(np.clip(np.searchsorted(times, t), 0, T))

    out, skipped, anchored = [], [], {}
    for tname, tr in tracks.items():
        for a, b, label in zip(tr.starts.tolist(), tr.ends.tolist(), tr.names):
            where = f"{tname} {label!r} at {a:g} s"
            if a < 0 or a > duration + 1e-6:
                skipped.append(f"{where}: outside the recording (0-{duration:g} s)")
                continue
            if rec.task == "alignment":
                m = re.fullmatch(r"\s*(?:event\s*)?(\d+)\s*", label)
                if m is None and not label.strip() and b > a:
                    continue   # an unnamed interval of a tier (before the first event): states nothing
                if m is None or int(m.group(1)) >= max(n_events, 1):
                    skipped.append(f"{where}: names no score event (expected 'event E' or E, E < {n_events})")
                elif int(m.group(1)) in anchored:
                    if abs(anchored[int(m.group(1))] - a) > 1e-9:   # a chord's notes share their event's time
                        skipped.append(f"{where}: event {m.group(1)} is already anchored at "
                                       f"{anchored[int(m.group(1))]:g} s by this file")
                else:
                    anchored[int(m.group(1))] = float(a)
                    out.append(AnchorLabel(item_id=rec.id, event=int(m.group(1)), time_s=float(a)))
                continue
            ia = frame(a)
            if b <= a:
                if 1 <= ia <= T - 1:
                    out.append(BoundaryLabel(item_id=rec.id, index=ia))
                else:
                    skipped.append(f"{where}: a change at the very start or end of the recording says nothing")
                continue
            ib = max(frame(b), ia + 1)
            ib = min(ib, T)
            if ia >= T:
                skipped.append(f"{where}: starts after the last frame")
                continue
            out.append(RegionLabel(item_id=rec.id, start=ia, stop=ib, kind=RegionKind.SAME))
            out.extend(BoundaryLabel(item_id=rec.id, index=i) for i in (ia, ib) if 1 <= i <= T - 1)
    if skipped:
        shown = "; ".join(skipped[:5]) + (f"; and {len(skipped) - 5} more" if len(skipped) > 5 else "")
        warnings.warn(f"{path}: {len(skipped)} label(s) not imported: {shown}", UnmappedLabelsWarning, stacklevel=3)
    return out


def write_audio_labels(engine, kind: str, folder: Path) -> list:
    """Write ``kind`` (a key of :data:`LABEL_EXPORT_KINDS`) for every audio item into ``folder``; returns the names.

    ``folder`` is the export's temporary folder (:func:`marginalia.exports.export` publishes it whole);
    item names become safe, unique file names.
    """
    from .io import jams_files, labels_audio
    from .sanitize import UniqueNames
    if kind not in LABEL_EXPORT_KINDS:
        raise ParameterError(f"export: unknown label format {kind!r}; expected one of {', '.join(LABEL_EXPORT_KINDS)}")
    folder = Path(folder)
    file_names = UniqueNames()
    written = []
    for rec in engine.session.items():
        if rec.kind != "audio":
            continue
        data = engine.data(rec.id)
        pred = engine.prediction(rec.id) or engine.predict(rec.id)
        times = np.asarray(data.sequence.positions, dtype=np.float64)
        duration = float((getattr(rec, "meta", None) or {}).get("duration_s") or times[-1])
        name = file_names.take(rec.name, LABEL_EXPORT_KINDS[kind])
        out = folder / name
        if isinstance(pred.structure, Segmentation):
            bounds = times[np.minimum(pred.structure.breakpoints, len(times) - 1)]
            names = None
            if kind == "audacity":
                labels_audio.write_audacity_labels(out, bounds)
            elif kind == "sonic-visualiser":
                labels_audio.write_sonic_visualiser_csv(out, bounds)
            elif kind == "textgrid":
                labels_audio.write_textgrid(out, bounds, end_s=duration, tier_name=rec.name)
            else:
                jams_files.write_jams_segments(out, bounds, duration_s=duration, names=names, title=rec.name)
        else:
            onsets = pred.times_s if pred.times_s is not None else times[pred.structure.onsets]
            onsets = np.asarray(onsets, dtype=np.float64)
            names = [f"event {e}" for e in range(onsets.shape[0])]
            if kind == "audacity":      # named by event, so that importing the track back anchors the same events
                labels_audio.write_audacity_labels(out, onsets, names)
            elif kind == "sonic-visualiser":
                labels_audio.write_sonic_visualiser_csv(out, onsets, names)
            elif kind == "textgrid":
                _textgrid_points(out, onsets, names, duration, rec.name)
            else:
                jams_files.write_jams_alignment(out, data.score, onsets, duration_s=duration, title=rec.name)
        written.append(name)
    return written


def _textgrid_points(path, onsets, names, duration, tier):
    """Event onsets as a TextGrid interval tier: the interval starting at event E's onset is named ``event E``."""
    from .io import labels_audio
    inner = np.unique(onsets[(onsets > 0) & (onsets < duration)])
    at0 = [e for e, t in enumerate(onsets.tolist()) if t <= 0]
    labels = [names[at0[-1]] if at0 else ""]
    labels += [names[int(np.flatnonzero(onsets == v)[0])] for v in inner.tolist()]
    labels_audio.write_textgrid(path, inner, labels, end_s=duration, tier_name=tier)
