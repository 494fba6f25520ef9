"""Model files of the command line: what was learned, for which task, on which features.

A model file is a small JSON document::

    {"format": "marginalia-model", "version": 1, "task": "segmentation",
     "features": "cgh-logratio", "model": {"class": "SegmentationModel", "params": {...}, "state": {...}},
     "w": [...], "provenance": {"learner": ..., "trained_on": [...], "labels_hash": ..., "created": ...}}

JSON keeps it readable, diff-able and safe to load (no pickle). The file's
SHA-256 identifies the model in batch markers, so a new model never reuses
outputs of an old one.
"""

from __future__ import annotations

import hashlib
import json
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional

import numpy as np

from ..batch import atomic_write_text, file_sha256
from ..exceptions import DataFormatError, ParameterError
from ..types import Segmentation, Sequence
from ._common import WrongTaskError

__all__ = ["CliModel", "load_model", "load_model_cached", "save_model", "FEATURE_RECIPES", "TASKS",
           "sequence_features"]

FORMAT = "marginalia-model"
VERSION = 1
TASKS = ("segmentation", "alignment")
#: how a model's input matrix is made from an item
FEATURE_RECIPES = {
    "cgh-logratio": "the aCGH logratio of each probe, shape (T, 1)",
    "audio-frames": "standardised MFCC (+deltas) and chroma frames of the recording, shape (T, 38)",
    "series": "the values of a generic series as stored, shape (T, p)",
    "chroma": "chroma frames of the recording against the score's event templates",
}


def _jsonable(value):
    if isinstance(value, np.ndarray):
        return {"__array__": value.tolist(), "dtype": str(value.dtype)}
    if isinstance(value, (np.floating, np.integer)):
        return value.item()
    if isinstance(value, dict):
        return {k: _jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    return value


def _from_json(value):
    if isinstance(value, dict):
        if "__array__" in value:
            return np.asarray(value["__array__"], dtype=value.get("dtype", "float64"))
        return {k: _from_json(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_from_json(v) for v in value]
    return value


def _model_classes() -> dict:
    from ..models.segmentation import SegmentationModel
    classes = {"SegmentationModel": SegmentationModel}
    try:  # the alignment model lands separately; segmentation works without it
        from ..models.alignment import AlignmentModel
        classes["AlignmentModel"] = AlignmentModel
    except ImportError:
        pass
    return classes


@dataclass
class CliModel:
    """A trained model as the command line uses it.

    Attributes
    ----------
    task : {"segmentation", "alignment"}
    features : str
        Key of :data:`FEATURE_RECIPES`.
    model : object
        The structured model (joint feature map and decoders).
    w : ndarray, shape (n_params,)
    provenance : dict
    path : Path or None
    sha256 : str
    """

    task: str
    features: str
    model: object
    w: np.ndarray
    provenance: dict = field(default_factory=dict)
    path: Optional[Path] = None
    sha256: str = ""

    def segment(self, seq: Sequence) -> Segmentation:
        """The model's best segmentation of one sequence (no labels)."""
        if self.task != "segmentation":
            raise ParameterError(f"model {self._name()}: is a {self.task} model; expected a segmentation model")
        X = sequence_features(seq, self.features)
        expected = getattr(self.model, "n_features_", X.shape[1])
        if X.shape[1] != expected:
            raise ParameterError(f"{seq.name or 'sequence'}: has {X.shape[1]} features but model {self._name()} "
                                 f"was trained on {expected} ({self.features}); use a model trained on this kind "
                                 "of data")
        return self.model.decode(X, self.w)

    def align(self, recording) -> np.ndarray:
        """Onset time (s) of every score event of a loaded recording, shape (E,)."""
        if self.task != "alignment":
            raise ParameterError(f"model {self._name()}: is a {self.task} model; expected an alignment model")
        from ._align import align_with_model
        return align_with_model(self, recording)

    def _name(self) -> str:
        return repr(str(self.path)) if self.path else "(in memory)"


def sequence_features(seq: Sequence, recipe: str) -> np.ndarray:
    """The model input of ``seq`` for a feature recipe, shape (T, p)."""
    if recipe not in FEATURE_RECIPES:
        raise ParameterError(f"features: unknown recipe {recipe!r}; expected one of {sorted(FEATURE_RECIPES)}")
    if recipe == "cgh-logratio" and seq.kind != "cgh":
        raise ParameterError(f"{seq.name or 'sequence'}: is {seq.kind!r} data but the model was trained on aCGH "
                             "logratios; use a model trained on this kind of data")
    if recipe == "audio-frames" and seq.kind != "audio":
        raise ParameterError(f"{seq.name or 'sequence'}: is {seq.kind!r} data but the model was trained on audio "
                             "frames; use a model trained on this kind of data")
    return np.asarray(seq.values, dtype=np.float64)


def save_model(path, cli_model: CliModel) -> str:
    """Write a model file atomically; returns its SHA-256."""
    model = cli_model.model
    state = {k: v for k, v in vars(model).items() if k.endswith("_") and not k.startswith("_")}
    doc = {
        "format": FORMAT, "version": VERSION, "task": cli_model.task, "features": cli_model.features,
        "model": {"class": type(model).__name__, "params": model.get_params(), "state": _jsonable(state)},
        "w": _jsonable(np.asarray(cli_model.w, dtype=np.float64)),
        "provenance": _jsonable(dict(cli_model.provenance, created=time.time())),
    }
    text = json.dumps(doc, indent=1, sort_keys=True)
    atomic_write_text(path, text)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def load_model(path, *, task: Optional[str] = None) -> CliModel:
    """Read a model file written by :func:`save_model`.

    Parameters
    ----------
    path : path-like
    task : {"segmentation", "alignment"}, optional
        Refuse a model of another task.

    Raises
    ------
    DataFormatError
        Missing or unreadable file, not a Marginalia model, newer version.
    ParameterError
        The model is for another task.
    """
    p = Path(path)
    if not p.is_file():
        raise DataFormatError("no such model file; train one with `marginalia-cli train`", path=str(p))
    try:
        raw = p.read_bytes()
        doc = json.loads(raw.decode("utf-8"))
    except (OSError, UnicodeDecodeError, ValueError):
        raise DataFormatError("not a Marginalia model file (expected the JSON written by `marginalia-cli train`)",
                              path=str(p)) from None
    if not isinstance(doc, dict) or doc.get("format") != FORMAT:
        raise DataFormatError("not a Marginalia model file (no 'format: marginalia-model')", path=str(p))
    if int(doc.get("version", 0)) > VERSION:
        raise DataFormatError(f"model file version {doc.get('version')} is newer than this Marginalia "
                              f"(reads up to {VERSION}); upgrade Marginalia", path=str(p))
    got = doc.get("task")
    if got not in TASKS:
        raise DataFormatError(f"unknown task {got!r}; expected one of {list(TASKS)}", path=str(p))
    if task is not None and got != task:
        raise WrongTaskError(f"model {str(p)!r}: is a {got} model; this command needs a {task} model")
    spec = doc.get("model") or {}
    classes = _model_classes()
    cls = classes.get(spec.get("class"))
    if cls is None:
        raise DataFormatError(f"unknown model class {spec.get('class')!r}; expected one of {sorted(classes)}",
                              path=str(p))
    try:
        model = cls(**spec.get("params", {}))
        for k, v in _from_json(spec.get("state", {})).items():
            setattr(model, k, v)
        w = np.asarray(_from_json(doc["w"]), dtype=np.float64)
        model.check_w(w)
    except (KeyError, TypeError, ValueError) as exc:
        raise DataFormatError(f"damaged model file ({exc})", path=str(p)) from None
    return CliModel(task=got, features=doc.get("features", "series"), model=model, w=w,
                    provenance=doc.get("provenance", {}), path=p, sha256=hashlib.sha256(raw).hexdigest())


_cache: dict = {}
_cache_lock = threading.Lock()


def load_model_cached(path, sha256: str, *, task: Optional[str] = None) -> CliModel:
    """:func:`load_model` once per process and file content (checked against ``sha256``)."""
    key = (str(Path(path).resolve()), sha256)
    with _cache_lock:
        model = _cache.get(key)
    if model is None:
        model = load_model(path)
        if model.sha256 != sha256:
            raise DataFormatError("the model file changed while the batch was running; run it again",
                                  path=str(path))
        with _cache_lock:
            _cache.clear()
            _cache[key] = model
    if task is not None and model.task != task:
        raise WrongTaskError(f"model {str(path)!r}: is a {model.task} model; this command needs a {task} model")
    return model


def model_fingerprint(path) -> str:
    """SHA-256 of a model file (the batch fingerprint)."""
    return file_sha256(path)
