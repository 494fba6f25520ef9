"""Exports of a project to the formats of DESIGN.md, and label imports.

Each export kind writes predictions or labels of the project's items with the
format writers of :mod:`marginalia.io`; the ``bundle`` kind writes a self-describing
dataset folder (``manifest.json``, per-item features as ``.npz``, partial labels
kept partial, and the current models with their provenance).
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import numpy as np

from .exceptions import ParameterError
from .export_target import check_target, publish_export_file, publish_export_folder
from .project.codec import label_to_dict
from .sanitize import UniqueNames
from .types import Alignment, RegionLabel, SyncAnchorLabel

BUNDLE_VERSION = 1


def _sync_anchor_entry(anchor: SyncAnchorLabel) -> dict:
    """A sync anchor as an entry of a bundle's ``sync_anchors``: the two recordings by their items' ``id``."""
    return {"id": anchor.id, "reference_item": anchor.item_id, "target_item": anchor.target_id,
            "reference_s": anchor.reference_s, "target_s": anchor.target_s, "author": anchor.author,
            "created": anchor.created}


def _items_of(engine, kind=None, task=None):
    for rec in engine.session.items():
        if (kind is None or rec.kind == kind) and (task is None or rec.task == task):
            yield rec


def _prediction(engine, item_id):
    return engine.prediction(item_id) or engine.predict(item_id)


def _cgh_sequences(engine):
    recs = list(_items_of(engine, kind="cgh"))
    return recs, [engine.sequence(r.id) for r in recs]


#: export kinds that write a folder (the others write one file)
FOLDER_KINDS = ("audacity", "aligned-midi", "alignment-csv", "sonic-visualiser", "textgrid", "jams", "bundle")


def layout_of(kind: str) -> str:
    """``"folder"`` or ``"file"``: what export ``kind`` writes."""
    return "folder" if kind in FOLDER_KINDS else "file"


def export(engine, kind: str, path: Path, *, force: bool = False) -> list:
    """Write export ``kind`` of the project to ``path`` (a file, or a folder for per-item kinds).

    Nothing that is already at ``path`` is deleted or overwritten unless it is a previous export
    of Marginalia and ``force`` is true (see :mod:`marginalia.export_target`); the export appears
    whole or not at all.
    """
    path = Path(path)
    target = check_target(path, layout=layout_of(kind), kind=kind, force=force)
    if target.layout == "folder":
        fill = _fill_bundle if kind == "bundle" else _fill_audio
        return publish_export_folder(target, kind, lambda tmp: fill(engine, tmp, kind), force=force)
    if kind == "cgh-model":
        write = _cgh_model_writer(engine)
    elif kind == "sync-model":
        from .sync.anchors import sync_model_writer
        write = sync_model_writer(engine)
    else:
        write = _cgh_table_writer(engine, kind)
    return publish_export_file(target, kind, write, force=force)


def _cgh_table_writer(engine, kind):
    from .io import cgh as cgh_io
    if kind == "annotations-csv":
        recs, seqs = _cgh_sequences(engine)
        # the table names sequences, not project items
        labels = [_with_item(lab, s.name) for r, s in zip(recs, seqs)
                  for lab in engine.labels(r.id) if isinstance(lab, RegionLabel)]
        return lambda tmp: cgh_io.write_annotations(tmp, labels, seqs)
    if kind in ("segments-csv", "breaks-csv", "bedgraph", "seg"):
        recs, seqs = _cgh_sequences(engine)
        if not recs:
            raise ParameterError(f"export {kind}: the project has no aCGH items")
        segs = {}
        for r, s in zip(recs, seqs):
            segs[s.name] = _prediction(engine, r.id).structure
        writer = {"segments-csv": cgh_io.write_segments, "breaks-csv": cgh_io.write_breaks,
                  "bedgraph": cgh_io.write_bedgraph, "seg": cgh_io.write_seg_file}[kind]
        return lambda tmp: writer(tmp, segs, seqs)
    raise ParameterError(f"export: unknown kind {kind!r}")


def _fill_audio(engine, folder: Path, kind: str) -> list:
    """One file per audio item (label tracks, aligned MIDI or alignment CSV); returns their names."""
    if kind in ("audacity", "sonic-visualiser", "textgrid", "jams"):
        # one writer for every label format: the Audacity track used to hold the segmentation's end as a
        # change and number an alignment's events from 1, so it did not import back as the same labels
        from .label_files import write_audio_labels
        return write_audio_labels(engine, kind, folder)
    names = UniqueNames()
    written = []
    for rec in _items_of(engine, kind="audio"):
        data = engine.data(rec.id)
        pred = _prediction(engine, rec.id)
        times = data.sequence.positions
        if not isinstance(pred.structure, Alignment) or data.score is None:
            continue
        from .io.midi import write_alignment_csv, write_midi
        onset_times = pred.times_s if pred.times_s is not None else times[pred.structure.onsets]
        if kind == "aligned-midi":
            name = names.take(rec.name, "_aligned.mid")
            write_midi(folder / name, data.score, times_s=onset_times)
        else:
            name = names.take(rec.name, "_alignment.csv")
            write_alignment_csv(folder / name, data.score, onset_times)
        written.append(name)
    return written


def _cgh_model_writer(engine):
    """The aCGH task's current model as the command line's model file.

    The parameters are those the app draws with (the last retrain plus the perceptron
    steps since), and a fitted recipe's penalty laws and change pruners go with them, so
    ``marginalia-cli predict`` segments an unlabelled chromosome as the app does.
    """
    from .models.files import TrainedModel, save_model
    recs = list(_items_of(engine, kind="cgh"))
    if not recs:
        raise ParameterError("export cgh-model: the project has no aCGH items")
    task = engine._tasks.get(recs[0])
    n_labels = sum(len(engine.labels(r.id)) for r in recs)
    if task.recipe is None and n_labels == 0:
        raise ParameterError("export cgh-model: no model learned yet: label a few chromosomes and retrain first")
    w = np.array(task.w, dtype=np.float64)
    prov = {"learner": "ssvm" if task.recipe is not None else "perceptron", "exported_from": str(engine.path),
            "model_id": task.model_id, "label_hash": engine.session.labels_hash([r.id for r in recs]),
            "n_sequences": sum(1 for r in recs if engine.labels(r.id)), "n_labels": n_labels}
    if task.recipe is not None:
        spec = task.recipe.to_dict()
        prov.update(recipe="penalty-law", penalty_law=spec)
    return lambda tmp: save_model(tmp, TrainedModel("segmentation", "cgh-pointwise", task.model, w, prov))


def _fill_bundle(engine, folder: Path, kind: str = "bundle") -> list:
    """Write a bundle into ``folder``; returns the relative paths written (file names are made safe)."""
    (folder / "features").mkdir(exist_ok=True)
    feature_names = UniqueNames()
    model_names = UniqueNames()
    items = []
    written = []
    for rec in engine.session.items():
        seq = engine.sequence(rec.id)
        rel = "features/" + feature_names.take(rec.id, ".npz")
        np.savez_compressed(folder / rel, values=seq.values, positions=seq.positions)
        written.append(rel)
        items.append({
            "id": rec.id, "name": rec.name, "kind": rec.kind, "task": rec.task,
            "source": rec.source_path, "source_sha256": rec.source_hash, "features": rel,
            "n_samples": seq.n_samples, "feature_names": list(seq.feature_names),
            # partial labels stay partial: only what the annotator said is listed; unlabelled is not negative
            "labels": [label_to_dict(lab) for lab in engine.labels(rec.id)],
        })
    models = []
    for m in engine.session.models():
        blob = engine.session.load_model(m.id)
        name = model_names.take(f"model_{m.id}", ".bin")
        (folder / name).write_bytes(blob if isinstance(blob, (bytes, bytearray)) else blob.blob)
        written.append(name)
        models.append({"id": m.id, "task": m.task, "label_hash": m.label_hash, "file": name,
                       "parameters": m.params})
    written.append("manifest.json")
    manifest = {"format": "marginalia-bundle", "version": BUNDLE_VERSION, "created": time.time(),
                "project": str(engine.path), "labels_hash": engine.session.labels_hash(),
                "items": items, "models": models, "files": sorted(written + ["features"])}
    anchors = [_sync_anchor_entry(lab) for lab in engine.session.labels()
               if isinstance(lab, SyncAnchorLabel) and not lab.suggested]
    if anchors:     # a bundle without sync anchors is written exactly as before
        manifest["sync_anchors"] = anchors
    (folder / "manifest.json").write_text(json.dumps(manifest, indent=1, sort_keys=True), encoding="utf-8")
    return written


IMPORT_KINDS = ("annotations-csv", "bundle")


def import_labels(engine, kind: str, path: Path) -> list:
    """Labels read from a file (or a bundle folder), mapped onto the project's items (not yet stored)."""
    if kind not in IMPORT_KINDS:
        raise ParameterError(f"import_labels: unknown kind {kind!r}; expected one of {list(IMPORT_KINDS)}")
    if kind == "bundle":
        return _bundle_labels(engine, Path(path))
    from .io import cgh as cgh_io
    recs, seqs = _cgh_sequences(engine)
    if not recs:
        raise ParameterError("import_labels: the project has no aCGH items to attach annotations to; "
                             "import the profiles first")
    by_name = {s.name: r.id for r, s in zip(recs, seqs)}
    labels = cgh_io.read_annotations(path, seqs, unknown_sequences="warn", empty_regions="warn")
    out = []
    for lab in labels:
        item_id = by_name.get(lab.item_id)
        if item_id is None:
            continue
        out.append(_with_item(lab, item_id))
    return out


def _bundle_labels(engine, folder: Path) -> list:
    """Every label of a bundle (region, boundary, anchor, span...) on the project's items of the same name and kind.

    Items of the bundle the project does not have are reported in one warning, not imported.
    """
    import warnings

    from .exceptions import DataFormatError
    from .project.codec import label_from_dict
    manifest = folder / "manifest.json" if folder.is_dir() else folder
    if not manifest.is_file():
        raise DataFormatError("no manifest.json here; choose the folder written by File \u25b8 Export \u25b8 dataset "
                              "bundle", path=str(folder))
    from .validation import check_bundle_manifest, read_json_file
    data = check_bundle_manifest(read_json_file(manifest, what="bundle manifest"), str(manifest),
                                 version=BUNDLE_VERSION)
    here = {(rec.name, rec.kind): rec.id for rec in engine.session.items()}
    out, missing = [], []
    for k, item in enumerate(data.get("items", [])):
        labels = item.get("labels", [])
        item_id = here.get((item.get("name"), item.get("kind")))
        if item_id is None:
            if labels:
                missing.append(item["name"][:60])
            continue
        for j, raw in enumerate(labels):
            try:
                lab = label_from_dict(raw)
            except (DataFormatError, TypeError, ValueError, KeyError, AttributeError, OverflowError,
                    RecursionError) as exc:
                raise DataFormatError(f"bundle manifest field 'items[{k}].labels[{j}]' (item {item['name'][:60]!r}): "
                                      f"{' '.join(str(exc).split())[:200]}", path=str(manifest)) from None
            out.append(_with_item(lab, item_id))
    if missing:
        shown = ", ".join(missing[:5]) + (f" and {len(missing) - 5} more" if len(missing) > 5 else "")
        warnings.warn(f"{manifest}: skipped the labels of {len(missing)} item(s) this project does not have "
                      f"({shown}); import their data first", UserWarning, stacklevel=3)
    return out + _bundle_sync_anchors(engine, data, here, str(manifest))


def _bundle_sync_anchors(engine, data: dict, here: dict, where: str) -> list:
    """The bundle's sync anchors on the project's recordings of the same names (checked, not yet stored).

    The manifest's schema is already checked (:func:`marginalia.validation.check_bundle_manifest`).
    An anchor past a recording's end, or crossing another anchor of the pair (of the bundle or of
    the project), refuses the whole import in one line naming the manifest and the anchor. Anchors
    between recordings the project does not have are reported in one warning, not imported.
    """
    import warnings

    from .exceptions import DataFormatError
    from .sync.anchors import find_crossing, pair_anchors, past_end, recording_duration
    entries = data.get("sync_anchors", [])
    if not entries:
        return []
    bundle_items = {item.get("id"): item for item in data.get("items", []) if isinstance(item.get("id"), str)}
    names = {rec.id: rec.name for rec in engine.session.items()}
    durations: dict = {}

    def duration(item_id):
        if item_id not in durations:
            durations[item_id] = recording_duration(engine, item_id)
        return durations[item_id]

    by_pair, skipped = {}, 0
    for k, raw in enumerate(entries):
        field = f"bundle manifest field 'sync_anchors[{k}]'"
        ref, tgt = (bundle_items[raw[key]] for key in ("reference_item", "target_item"))
        ref_id, tgt_id = here.get((ref["name"], "audio")), here.get((tgt["name"], "audio"))
        if ref_id is None or tgt_id is None:
            skipped += 1
            continue
        try:
            anchor = SyncAnchorLabel(item_id=ref_id, target_id=tgt_id, reference_s=raw["reference_s"],
                                     target_s=raw["target_s"], author=str(raw.get("author", ""))[:200])
        except ParameterError as exc:
            raise DataFormatError(f"{field}: {' '.join(str(exc).split())[:200]}", path=where) from None
        late = past_end(anchor, duration)
        if late is not None:
            item_id, t, end = late
            raise DataFormatError(f"{field}: {t:.3f} s lies past the end of {names[item_id][:60]} ({end:.3f} s); "
                                  "correct the time or remove the anchor", path=where)
        by_pair.setdefault(tuple(sorted((ref_id, tgt_id))), []).append((k, anchor))
    out = []
    for (a, b), listed in by_pair.items():
        # the bundle's anchors of the pair and the project's, seen from a: no two may cross
        seen = [(k, x if x.item_id == a else x.flipped()) for k, x in listed]
        seen += [(None, x) for x in pair_anchors(engine, a, b)]
        crossing = find_crossing([(x.reference_s, x.target_s) for _, x in seen])
        if crossing is not None:
            (k1, x1), (k2, x2) = sorted((seen[i] for i in crossing), key=lambda kx: (kx[0] is None, -(kx[0] or 0)))
            x1 = dict(listed)[k1]                       # as the bundle lists it, and the other seen from its side
            x2 = x2 if x2.item_id == x1.item_id else x2.flipped()
            between = f"between {names[x1.item_id][:60]} and {names[x1.target_id][:60]}"
            if k2 is None:
                raise DataFormatError(f"bundle manifest field 'sync_anchors[{k1}]': {_shown(x1)} crosses the "
                                      f"project's anchor {_shown(x2)} {between}: the music cannot go both ways; "
                                      "remove one of them (in the bundle, or in View \u25b8 Compare with another "
                                      "recording)", path=where)
            raise DataFormatError(f"bundle manifest field 'sync_anchors[{k1}]': {_shown(x1)} crosses "
                                  f"'sync_anchors[{k2}]' ({_shown(x2)}) {between}: the music cannot go both ways; "
                                  "correct or remove one of them", path=where)
        out += [x for _, x in listed]
    if skipped:
        warnings.warn(f"{where}: skipped {skipped} sync anchor(s) between recordings this project does not have; "
                      "import those recordings first", UserWarning, stacklevel=4)
    return out


def _shown(anchor: SyncAnchorLabel) -> str:
    return f"{anchor.reference_s:.3f} s \u2194 {anchor.target_s:.3f} s"


def _with_item(label, item_id):
    import dataclasses
    return dataclasses.replace(label, item_id=item_id)
