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
from .atomic import publish, publish_folder
from .session.codec import label_to_dict
from .types import Alignment, RegionLabel, Segmentation

BUNDLE_VERSION = 1


def _items_of(engine, kind=None, task=None):
    for rec in engine.session.items():
        if (kind is None or rec.kind == kind) and (task is None or rec.task == task):
            yield rec


def _prediction(engine, item_id):
    return engine.prediction(item_id) or engine.predict(item_id)


def _cgh_sequences(engine):
    recs = list(_items_of(engine, kind="cgh"))
    return recs, [engine.sequence(r.id) for r in recs]


def export(engine, kind: str, path: Path) -> list:
    """Write export ``kind`` of the project to ``path`` (a file, or a folder for per-item kinds)."""
    from .io import cgh as cgh_io
    if kind == "annotations-csv":
        recs, seqs = _cgh_sequences(engine)
        # the table names sequences, not project items
        labels = [_with_item(lab, s.name) for r, s in zip(recs, seqs)
                  for lab in engine.labels(r.id) if isinstance(lab, RegionLabel)]
        publish(path, lambda tmp: cgh_io.write_annotations(tmp, labels, seqs))
        return [path]
    if kind in ("segments-csv", "breaks-csv", "bedgraph", "seg"):
        recs, seqs = _cgh_sequences(engine)
        if not recs:
            raise ParameterError(f"export {kind}: the project has no aCGH items")
        segs = {}
        for r, s in zip(recs, seqs):
            segs[s.name] = _prediction(engine, r.id).structure
        writer = {"segments-csv": cgh_io.write_segments, "breaks-csv": cgh_io.write_breaks,
                  "bedgraph": cgh_io.write_bedgraph, "seg": cgh_io.write_seg_file}[kind]
        publish(path, lambda tmp: writer(tmp, segs, seqs))
        return [path]
    if kind in ("audacity", "aligned-midi", "alignment-csv"):
        path.mkdir(parents=True, exist_ok=True)
        written = []
        for rec in _items_of(engine, kind="audio"):
            data = engine.data(rec.id)
            pred = _prediction(engine, rec.id)
            times = data.sequence.positions
            if kind == "audacity":
                from .io.labels_audio import write_audacity_labels
                if isinstance(pred.structure, Segmentation):
                    bounds = times[np.minimum(pred.structure.changes, len(times) - 1)]
                else:
                    bounds = pred.times_s if pred.times_s is not None else times[pred.structure.onsets]
                out = path / f"{rec.name}.txt"
                publish(out, lambda tmp: write_audacity_labels(tmp, np.asarray(bounds, dtype=float)))
            else:
                if not isinstance(pred.structure, Alignment) or data.score is None:
                    continue
                from .io.midi import write_alignment_csv, write_midi
                onset_times = pred.times_s if pred.times_s is not None else times[pred.structure.onsets]
                if kind == "aligned-midi":
                    out = path / f"{rec.name}_aligned.mid"
                    publish(out, lambda tmp: write_midi(tmp, data.score, times_s=onset_times))
                else:
                    out = path / f"{rec.name}_alignment.csv"
                    publish(out, lambda tmp: write_alignment_csv(tmp, data.score, onset_times))
            written.append(out)
        return written
    if kind in ("sonic-visualiser", "textgrid", "jams"):
        from .label_files import export_audio_labels
        return export_audio_labels(engine, kind, path)
    if kind == "bundle":
        return _write_bundle(engine, path)
    if kind == "cgh-model":
        return _write_cgh_model(engine, path)
    raise ParameterError(f"export: unknown kind {kind!r}")


def _write_cgh_model(engine, path: Path) -> list:
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
    publish(path, lambda tmp: save_model(tmp, TrainedModel("segmentation", "cgh-pointwise", task.model, w, prov)))
    return [path]


def _write_bundle(engine, folder: Path) -> list:
    """Write the bundle into a new folder put in place of ``folder`` at the end (never a half-written mix)."""
    names = []
    publish_folder(folder, lambda tmp: names.extend(p.relative_to(tmp) for p in _fill_bundle(engine, tmp)))
    return [folder / name for name in names]


def _fill_bundle(engine, folder: Path) -> list:
    (folder / "features").mkdir(exist_ok=True)
    items = []
    written = []
    for rec in engine.session.items():
        seq = engine.sequence(rec.id)
        feat_path = folder / "features" / f"{rec.id}.npz"
        np.savez_compressed(feat_path, values=seq.values, positions=seq.positions)
        written.append(feat_path)
        items.append({
            "id": rec.id, "name": rec.name, "kind": rec.kind, "task": rec.task,
            "source": rec.source_path, "source_sha256": rec.source_hash, "features": f"features/{rec.id}.npz",
            "n_samples": seq.n_samples, "feature_names": list(seq.feature_names),
            # partial labels stay partial: only what the annotator said is listed; unlabelled is not negative
            "labels": [label_to_dict(lab) for lab in engine.labels(rec.id)],
        })
    models = []
    for m in engine.session.models():
        blob = engine.session.load_model(m.id)
        out = folder / f"model_{m.id}.bin"
        out.write_bytes(blob if isinstance(blob, (bytes, bytearray)) else blob.blob)
        written.append(out)
        models.append({"id": m.id, "task": m.task, "label_hash": m.label_hash, "file": out.name,
                       "parameters": m.params})
    manifest = {"format": "marginalia-bundle", "version": BUNDLE_VERSION, "created": time.time(),
                "project": str(engine.path), "labels_hash": engine.session.labels_hash(),
                "items": items, "models": models}
    mpath = folder / "manifest.json"
    mpath.write_text(json.dumps(manifest, indent=1, sort_keys=True))
    written.append(mpath)
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
    from .session.codec import label_from_dict
    manifest = folder / "manifest.json" if folder.is_dir() else folder
    if not manifest.is_file():
        raise DataFormatError("no manifest.json here; choose the folder written by File \u25b8 Export \u25b8 dataset "
                              "bundle", path=str(folder))
    try:
        data = json.loads(manifest.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise DataFormatError(f"unreadable bundle manifest ({exc})", path=str(manifest)) from None
    if not isinstance(data, dict) or data.get("format") != "marginalia-bundle":
        raise DataFormatError("not a Marginalia bundle manifest (no \"format\": \"marginalia-bundle\")",
                              path=str(manifest))
    if int(data.get("version", 0)) > BUNDLE_VERSION:
        raise DataFormatError(f"bundle version {data['version']} is newer than this Marginalia reads "
                              f"({BUNDLE_VERSION}); update Marginalia", path=str(manifest))
    here = {(rec.name, rec.kind): rec.id for rec in engine.session.items()}
    out, missing = [], []
    for k, item in enumerate(data.get("items", [])):
        labels = item.get("labels", [])
        item_id = here.get((item.get("name"), item.get("kind")))
        if item_id is None:
            if labels:
                missing.append(str(item.get("name")))
            continue
        for j, raw in enumerate(labels):
            try:
                lab = label_from_dict(raw)
            except DataFormatError as exc:
                raise DataFormatError(f"item {item.get('name')!r}, label {j + 1}: {exc}", path=str(manifest)) from None
            out.append(_with_item(lab, item_id))
    if missing:
        shown = ", ".join(missing[:5]) + (f" and {len(missing) - 5} more" if len(missing) > 5 else "")
        warnings.warn(f"{manifest}: skipped the labels of {len(missing)} item(s) this project does not have "
                      f"({shown}); import their data first", UserWarning, stacklevel=3)
    return out


def _with_item(label, item_id):
    import dataclasses
    return dataclasses.replace(label, item_id=item_id)
