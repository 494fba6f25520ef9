"""Model files: a JSON header and the parameter arrays in one ``.npz`` archive.

The header records what the model was made for (task, model class and
options, number and names/settings of the features) and its provenance
(feature settings, label hash, learner parameters, library version). Loading
checks it against what the caller expects and refuses a model made for other
features or another task with a message saying which field differs.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
from typing import Optional

import numpy as np

from .._version import DISTRIBUTION, library_version  # noqa: F401 (part of this module's API)
from ..exceptions import DataFormatError, ParameterError
from ..text import exception_text

__all__ = ["save_model_parts", "load_model_parts", "to_bytes", "from_bytes", "labels_hash", "library_version",
           "FORMAT", "FORMAT_VERSION"]

FORMAT = "marginalia-model"
FORMAT_VERSION = 1


def labels_hash(labels) -> str:
    """Order-independent SHA-256 of partial labels (their type and fields, not ids or times)."""
    rows = []
    for lab in labels:
        fields = {k: v for k, v in sorted(vars(lab).items()) if k not in ("id", "created", "author")}
        rows.append(type(lab).__name__ + json.dumps(fields, sort_keys=True, default=str))
    return hashlib.sha256("\n".join(sorted(rows)).encode()).hexdigest()


def _model_classes() -> dict:
    from ..align import ScoreAligner
    from ..sync import SyncAligner
    from .segmentation import SegmentationModel
    return {"SegmentationModel": SegmentationModel, "ScoreAligner": ScoreAligner, "SyncAligner": SyncAligner}


def _jsonable(obj):
    return json.loads(json.dumps(obj, default=lambda o: o.tolist() if isinstance(o, np.ndarray) else str(o)))


def to_bytes(model, w, provenance: Optional[dict] = None) -> bytes:
    """Serialise ``(model, w, provenance)`` to bytes (for the project store's blobs)."""
    buf = io.BytesIO()
    save_model_parts(buf, model, w, provenance)
    return buf.getvalue()


def from_bytes(blob: bytes, *, task=None, n_features=None, features=None) -> tuple:
    """Inverse of :func:`to_bytes`; the keyword checks are those of :func:`load_model_parts`."""
    if not isinstance(blob, (bytes, bytearray, memoryview)):
        raise ParameterError(f"blob: expected bytes, got {type(blob).__name__}")
    return load_model_parts(io.BytesIO(bytes(blob)), task=task, n_features=n_features, features=features)


def save_model_parts(path_or_buffer, model, w, provenance: Optional[dict] = None) -> None:
    """Write a model file from its parts: the model, its parameters and their provenance.

    The public :func:`marginalia.save_model` writes a :class:`~marginalia.models.files.TrainedModel` through this.

    Parameters
    ----------
    path_or_buffer : str, path or binary file object
    model : SegmentationModel, ScoreAligner or SyncAligner
        Its options and learned units (``get_state``) are stored.
    w : ndarray, shape (n_params,)
    provenance : dict, optional
        Free-form but JSON-serialisable; conventional keys: ``features``
        (feature settings), ``label_hash``, ``learner`` (class and parameters),
        ``item_ids``. ``library_version`` is added.
    """
    name = type(model).__name__
    if name not in _model_classes():
        raise ParameterError(f"model: expected one of {sorted(_model_classes())}, got {name}")
    w = model.check_w(w)
    state = model.get_state()
    prov = dict(provenance or {})
    prov.setdefault("library_version", library_version())
    header = {
        "format": FORMAT,
        "format_version": FORMAT_VERSION,
        "task": model.task,
        "model_class": name,
        "model_params": model.get_params(),
        "n_features": int(model.n_features_),
        "state_keys": sorted(state),
        "provenance": _jsonable(prov),
    }
    arrays = {"w": np.asarray(w, dtype=np.float64)}
    arrays.update({f"state_{k}": np.asarray(v) for k, v in state.items()})
    arrays["header"] = np.frombuffer(json.dumps(header, sort_keys=True).encode("utf-8"), dtype=np.uint8)
    if hasattr(path_or_buffer, "write"):
        np.savez_compressed(path_or_buffer, **arrays)
        return
    path = os.fspath(path_or_buffer)
    tmp = path + ".tmp"
    with open(tmp, "wb") as fh:
        np.savez_compressed(fh, **arrays)
    os.replace(tmp, path)


def load_model_parts(path_or_buffer, *, task=None, n_features=None, features=None) -> tuple:
    """Read a model file's parts and check they fit the caller's data.

    The public :func:`marginalia.load_model` returns them as a :class:`~marginalia.models.files.TrainedModel`.

    Parameters
    ----------
    path_or_buffer : str, path or binary file object
    task : str, optional
        Expected task (``"segmentation"``, ``"alignment"``, ``"sync"``).
    n_features : int, optional
        Expected number of features.
    features : dict, optional
        Expected feature settings; every key given must equal the file's
        ``provenance["features"]`` entry.

    Returns
    -------
    (model, w, provenance)

    Raises
    ------
    DataFormatError
        Not a Marginalia model file, damaged, or of a newer format.
    ParameterError
        The model was made for another task or other features.
    """
    from ..validation import check_model_header, read_model_archive
    where = None if hasattr(path_or_buffer, "read") else os.fspath(path_or_buffer)
    # sizes, types and fields are checked against the file's own size before anything is built
    header, data = read_model_archive(path_or_buffer, where)
    check_model_header(header, data, where, fmt=FORMAT, version=FORMAT_VERSION)
    prov = header.get("provenance", {})
    if not isinstance(prov, dict):
        prov = {}
    if task is not None and header["task"] != task:
        raise ParameterError(f"model file is for the {header['task']!r} task, expected {task!r}")
    if n_features is not None and int(header["n_features"]) != int(n_features):
        raise ParameterError(f"model file expects {header['n_features']} features, the data has {int(n_features)}; "
                             "retrain or compute the features the model was made with")
    if features is not None:
        made = prov.get("features")
        made = made if isinstance(made, dict) else {}
        for key, want in _jsonable(dict(features)).items():
            if made.get(key) != want:
                raise ParameterError(f"model file was made with features {key}={made.get(key)!r}, "
                                     f"expected {key}={want!r}; recompute the features or retrain")
    classes = _model_classes()
    cls = classes.get(header.get("model_class"))
    if cls is None:
        raise DataFormatError(f"unknown model class {header.get('model_class')!r}", path=where)
    try:
        model = cls(**header["model_params"])
        model.set_state({k: data[f"state_{k}"] for k in header.get("state_keys", [])}, int(header["n_features"]))
        w = model.check_w(data["w"])
    except (KeyError, TypeError, ValueError, AttributeError, IndexError, OverflowError, ParameterError) as exc:
        raise DataFormatError(f"inconsistent model file ({exception_text(exc)})",
                              path=where) from None
    return model, w, prov
