"""Exact JSON (de)serialisation of the partial-label types of :mod:`marginalia.types`.

A label becomes a flat JSON object with a ``"type"`` tag (the class name) and
one key per dataclass field; :class:`~marginalia.types.RegionKind` is stored by
value. Encoding is canonical (sorted keys, no spaces, integers and floats
normalised by the field's declared type) so equal labels always give the same
text, which makes :func:`labels_digest` a stable fingerprint of a label set.
Python's ``repr`` of floats round-trips exactly, so decoding gives back an
equal label (same id, author and ``created``).
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import math
from collections.abc import Iterable

from ..exceptions import DataFormatError, ParameterError
from ..io.cgh import CghRegionLabel
from ..types import (
    AnchorLabel,
    BoundaryLabel,
    EventSpanLabel,
    RegionKind,
    RegionLabel,
    SyncAnchorLabel,
    WarpAnchorLabel,
)

__all__ = [
    "LABEL_TYPES",
    "label_to_dict",
    "label_from_dict",
    "dumps_label",
    "loads_label",
    "canonical_json",
    "labels_digest",
    "task_of_label",
]

#: Label class by the name stored in the ``"type"`` tag.
LABEL_TYPES = {cls.__name__: cls for cls in (RegionLabel, BoundaryLabel, AnchorLabel, EventSpanLabel,
                                             WarpAnchorLabel, SyncAnchorLabel, CghRegionLabel)}

_TASK_OF_TYPE = {
    "RegionLabel": "segmentation",
    # a region label imported from an annotations.csv, remembering the row's bp interval and word
    "CghRegionLabel": "segmentation",
    "BoundaryLabel": "segmentation",
    "AnchorLabel": "alignment",
    "EventSpanLabel": "alignment",
    "WarpAnchorLabel": "warping",
    # an anchor between two recordings of the project: a label of the reference item whatever its task
    "SyncAnchorLabel": "sync",
}

#: stored only when set: a label that is not a suggestion encodes as it did before suggestions existed, so its
#: canonical JSON (and every label-set digest, which model versions remember) is unchanged
_OPTIONAL = {"suggested": False}
_FIELDS = {name: tuple(f for f in dataclasses.fields(cls) if f.name not in _OPTIONAL)
           for name, cls in LABEL_TYPES.items()}
_KEYS = {name: frozenset(f.name for f in fields) | {"type"} for name, fields in _FIELDS.items()}
_FLOAT_FIELDS = {name: tuple(f.name for f in fields if f.type == "float" or f.type is float)
                 for name, fields in _FIELDS.items()}
_NON_FINITE = ("nan", "inf", "-inf")


def task_of_label(label) -> str:
    """The task (``"segmentation"``, ``"alignment"``, ``"warping"`` or ``"sync"``) a label belongs to."""
    name = type(label).__name__
    if name not in _TASK_OF_TYPE or LABEL_TYPES[name] is not type(label):
        raise ParameterError(f"label: expected one of {sorted(LABEL_TYPES)}, got {type(label).__name__}")
    return _TASK_OF_TYPE[name]


def _normalise(cls_name: str, field: dataclasses.Field, value):
    declared = field.type if isinstance(field.type, str) else getattr(field.type, "__name__", "")
    if declared == "float":
        try:
            value = float(value)
        except (TypeError, ValueError):
            raise ParameterError(f"{cls_name}.{field.name}: expected a float, got {value!r}") from None
        # JSON has no NaN/inf: such values (e.g. an unknown base-pair bound) travel as strings
        return value if math.isfinite(value) else repr(value)
    if declared == "int":
        return int(value)
    if declared == "str":
        if not isinstance(value, str):
            raise ParameterError(f"{cls_name}.{field.name}: expected a str, got {value!r}")
        return value
    if isinstance(value, RegionKind):
        return value.value
    return value


def label_to_dict(label) -> dict:
    """Encode a label as a JSON-ready dict with a ``"type"`` tag.

    Raises
    ------
    ParameterError
        If ``label`` is not one of :data:`LABEL_TYPES` or a field has the wrong type.
    """
    task_of_label(label)  # validates the type
    name = type(label).__name__
    out = {"type": name}
    for f in _FIELDS[name]:
        out[f.name] = _normalise(name, f, getattr(label, f.name))
    for key, default in _OPTIONAL.items():
        if getattr(label, key) != default:
            out[key] = getattr(label, key)
    return out


def label_from_dict(data: dict):
    """Decode a dict made by :func:`label_to_dict`.

    Raises
    ------
    DataFormatError
        If the tag is unknown, a field is unknown or missing, or the values are invalid.
    """
    if not isinstance(data, dict):
        raise DataFormatError(f"label: expected a JSON object, got {type(data).__name__}")
    name = data.get("type")
    if name not in LABEL_TYPES:
        raise DataFormatError(f"label: unknown type {name!r}; expected one of {sorted(LABEL_TYPES)}")
    optional = {key: data[key] for key in _OPTIONAL if key in data}
    if optional:
        data = {k: v for k, v in data.items() if k not in optional}
        for key, value in optional.items():
            if not isinstance(value, bool):
                raise DataFormatError(f"label of type {name}: field {key} must be true or false, got {value!r}")
    if data.keys() != _KEYS[name]:  # one set comparison on the fast path (projects decode every label on open)
        names = _KEYS[name] - {"type"}
        extra = sorted(set(data) - names - {"type"})
        if extra:
            raise DataFormatError(f"label of type {name}: unknown field(s) {extra}; expected only {sorted(names)}")
        raise DataFormatError(f"label of type {name}: missing field(s) {sorted(names - set(data))}")
    kwargs = dict(data, **optional)
    del kwargs["type"]
    for fname in _FLOAT_FIELDS[name]:
        if isinstance(kwargs[fname], str):
            if kwargs[fname] not in _NON_FINITE:
                raise DataFormatError(f"label of type {name}: field {fname} must be a number, "
                                      f"got {kwargs[fname]!r}")
            kwargs[fname] = float(kwargs[fname])
    try:
        return LABEL_TYPES[name](**kwargs)
    except (ParameterError, TypeError, ValueError) as exc:
        raise DataFormatError(f"label of type {name}: invalid values ({exc})") from None


def canonical_json(obj) -> str:
    """Deterministic compact JSON (sorted keys, no NaN) of a JSON-ready object."""
    try:
        return json.dumps(obj, sort_keys=True, separators=(",", ":"), allow_nan=False, ensure_ascii=True)
    except (TypeError, ValueError) as exc:
        raise ParameterError(f"value is not JSON-serialisable ({exc}): {obj!r:.200}") from None


def dumps_label(label) -> str:
    """Canonical JSON text of a label."""
    return canonical_json(label_to_dict(label))


def loads_label(text: str):
    """Decode the JSON text made by :func:`dumps_label`."""
    try:
        data = json.loads(text)
    except (TypeError, ValueError) as exc:
        raise DataFormatError(f"label: not valid JSON ({exc}): {str(text)[:200]!r}") from None
    return label_from_dict(data)


def labels_digest(labels: Iterable) -> str:
    """sha256 (hex) of the canonical JSON of a set of labels, independent of their order."""
    encoded = sorted(dumps_label(lab) for lab in labels)
    h = hashlib.sha256()
    h.update(b"[")
    for i, text in enumerate(encoded):
        if i:
            h.update(b",")
        h.update(text.encode("utf-8"))
    h.update(b"]")
    return h.hexdigest()
