"""Schemas of the files Marginalia reads from others: model files and bundle manifests.

A file may come from anyone, so nothing in it is trusted before it is checked: the
sizes of a model file's arrays are read from the archive's directory and the ``.npy``
headers (without reading the arrays) and must fit the file's own size; the JSON header
and the manifest are checked field by field (types, ranges, known versions) before any
object is built from them. Every failure is one :class:`DataFormatError` naming the file
and the field. The checks are hand-written rather than a JSON-Schema library: the bounds
depend on the file's size and the messages must say how to fix the file. (Arguments passed by a
caller are checked by :mod:`marginalia.checks`.)
"""

from __future__ import annotations

import io
import json
import math
import os
import zipfile
import zlib
from typing import Optional

import numpy as np

from .checks import is_integer
from .exceptions import DataFormatError
from .sanitize import check_relative_path
from .text import exception_text

__all__ = ["read_model_archive", "check_model_header", "read_json_file", "check_bundle_manifest",
           "MODEL_TASKS", "array_budget"]

MODEL_TASKS = ("segmentation", "alignment", "sync")
#: bytes of arrays a model file may unpack to besides the bound by its own size
BASE_BUDGET = 16 * 2 ** 20
#: ... plus this many times the file's size (learned parameters compress a few times at most)
RATIO_BUDGET = 32
MAX_HEADER_BYTES = 2 ** 20
MAX_MEMBERS = 256
MAX_MANIFEST_BYTES = 512 * 2 ** 20


def array_budget(file_size: int) -> int:
    """Largest total of array bytes a model file of ``file_size`` bytes may hold."""
    return BASE_BUDGET + RATIO_BUDGET * int(file_size)


def _bad(message: str, where) -> DataFormatError:
    return DataFormatError(message, path=where)


def _size_of(source) -> int:
    if hasattr(source, "seek"):
        pos = source.tell()
        source.seek(0, os.SEEK_END)
        size = source.tell()
        source.seek(pos)
        return size
    return os.path.getsize(source)


def read_model_archive(source, where: Optional[str]) -> tuple:
    """The JSON header (a dict, not yet checked) and the arrays of a model file, read within bounds.

    Parameters
    ----------
    source : path or binary file object
    where : str or None
        The file's name for messages.

    Returns
    -------
    (dict, dict of ndarray)

    Raises
    ------
    DataFormatError
        Not a zip archive, a member that is not a plain numeric ``.npy`` array, arrays that
        claim more memory than the file's size allows, a damaged or oversized header.
    """
    try:
        size = _size_of(source)
    except OSError as exc:
        raise _bad(f"cannot read the model file ({exc.strerror or exc})", where) from None
    budget = array_budget(size)
    try:
        zf = zipfile.ZipFile(source)
    except (zipfile.BadZipFile, OSError, ValueError, EOFError, NotImplementedError, RuntimeError,
            zlib.error) as exc:
        raise _bad(f"not a readable model file ({exc})", where) from None
    with zf:
        infos = zf.infolist()
        if len(infos) > MAX_MEMBERS:
            raise _bad(f"model file has {len(infos)} arrays; at most {MAX_MEMBERS} expected", where)
        total = 0
        shapes = {}
        for info in infos:
            name = info.filename
            if not name.endswith(".npy") or "/" in name or name.startswith("."):
                raise _bad(f"model file member {name[:60]!r}: expected only .npy arrays", where)
            key = name[:-4]
            total += info.file_size
            if total > budget:
                raise _bad(f"model file field {key!r}: its arrays would take {total:,} bytes, more than a "
                           f"{size:,}-byte model file can hold (at most {budget:,}); the file is damaged or "
                           "not a Marginalia model", where)
            try:
                with zf.open(info) as fh:
                    shape, dtype, offset = _npy_header(fh)
            except zlib.error as exc:
                raise _bad(f"the model file is damaged (corrupt compressed data in {key!r}: {exc}); copy it again "
                           "or train the model again", where) from None
            except (ValueError, OSError, zipfile.BadZipFile, EOFError, zipfile.LargeZipFile, NotImplementedError,
                    RuntimeError, SyntaxError) as exc:
                raise _bad(f"model file field {key!r}: not a readable array ({exc})", where) from None
            if dtype.hasobject or dtype.kind not in "biuf":
                raise _bad(f"model file field {key!r}: expected numbers, got dtype {dtype.str!r}", where)
            n = math.prod(shape)
            if n * dtype.itemsize + offset != info.file_size:
                raise _bad(f"model file field {key!r}: its header claims shape {shape} of {dtype.str}, which does "
                           f"not match its {info.file_size:,} stored bytes", where)
            shapes[key] = (shape, dtype)
        if "header" not in shapes:
            raise _bad("not a Marginalia model file (no header)", where)
        if shapes["header"][1] != np.uint8 or len(shapes["header"][0]) != 1 or \
                shapes["header"][0][0] > MAX_HEADER_BYTES:
            raise _bad(f"model file field 'header': expected at most {MAX_HEADER_BYTES:,} bytes of JSON", where)
        try:
            data = {name[:-4]: np.load(io.BytesIO(zf.read(name)), allow_pickle=False)
                    for name in zf.namelist()}
        except zlib.error as exc:
            raise _bad(f"the model file is damaged (corrupt compressed data: {exc}); copy it again or train "
                       "the model again", where) from None
        except (ValueError, OSError, zipfile.BadZipFile, EOFError, NotImplementedError, RuntimeError) as exc:
            raise _bad(f"the model file is damaged ({exc}); copy it again or train the model again", where) from None
    try:
        header = json.loads(data["header"].tobytes().decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError, RecursionError) as exc:
        raise _bad(f"damaged model header ({exception_text(exc, 80)})", where) from None
    return header, data


def _npy_header(fh) -> tuple:
    version = np.lib.format.read_magic(fh)
    if version == (1, 0):
        shape, fortran, dtype = np.lib.format.read_array_header_1_0(fh, max_header_size=10000)
    elif version in ((2, 0), (3, 0)):
        shape, fortran, dtype = np.lib.format.read_array_header_2_0(fh, max_header_size=10000)
    else:
        raise ValueError(f"unknown .npy version {version}")
    if not all(isinstance(d, int) and d >= 0 for d in shape) or len(shape) > 8:
        raise ValueError(f"invalid shape {shape}")
    offset = fh.tell() if hasattr(fh, "tell") else 0
    return tuple(shape), np.dtype(dtype), offset


def _int_field(header, key, where, lo, hi, *, required=True):
    value = header.get(key)
    if value is None and not required:
        return None
    if not is_integer(value) or not lo <= value <= hi:
        raise _bad(f"model file field {key!r}: expected a whole number in {lo}..{hi}, got {_show(value)}", where)
    return value


def _show(value) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def check_model_header(header, arrays: dict, where: Optional[str], *, fmt: str, version: int) -> dict:
    """Check a model file's JSON header against the schema; returns it.

    Fields: ``format`` (== ``fmt``), ``format_version`` (1..``version``), ``task`` (one of
    :data:`MODEL_TASKS`), ``model_class`` (str), ``model_params`` (object), ``n_features``
    (1..10⁶), ``state_keys`` (strings, each stored as an array ``state_<key>``), ``provenance``
    (object, optional); the parameters ``w`` must be a 1-D array of finite numbers.
    """
    if "w" not in arrays:
        raise _bad("the model file is damaged (its parameters 'w' are missing); train the model again", where)
    if not isinstance(header, dict):
        raise _bad(f"model file header: expected a JSON object, got {type(header).__name__}", where)
    if header.get("format") != fmt:
        raise _bad(f"not a Marginalia model file (field 'format' is {_show(header.get('format'))}, expected "
                   f"{fmt!r})", where)
    v = header.get("format_version")
    if is_integer(v) and v > version:
        raise _bad(f"model file format {v} is newer than this Marginalia reads ({version}); update Marginalia",
                   where)
    _int_field(header, "format_version", where, 1, version)
    task = header.get("task")
    if task not in MODEL_TASKS:
        raise _bad(f"model file field 'task': expected one of {list(MODEL_TASKS)}, got {_show(task)}", where)
    if not isinstance(header.get("model_class"), str):
        raise _bad(f"model file field 'model_class': expected a class name, got {_show(header.get('model_class'))}",
                   where)
    if not isinstance(header.get("model_params"), dict):
        raise _bad(f"model file field 'model_params': expected a JSON object, got "
                   f"{_show(header.get('model_params'))}", where)
    _int_field(header, "n_features", where, 1, 10 ** 6)
    keys = header.get("state_keys", [])
    if not isinstance(keys, list) or not all(isinstance(k, str) for k in keys):
        raise _bad(f"model file field 'state_keys': expected a list of names, got {_show(keys)}", where)
    for k in keys:
        if f"state_{k}" not in arrays:
            raise _bad(f"model file field 'state_keys': array 'state_{k}' is missing", where)
    prov = header.get("provenance", {})
    if not isinstance(prov, dict):
        raise _bad(f"model file field 'provenance': expected a JSON object, got {_show(prov)}", where)
    w = arrays["w"]
    if w.ndim != 1 or w.dtype.kind not in "iuf" or not np.all(np.isfinite(w)):
        raise _bad(f"model file field 'w': expected a 1-D array of finite numbers, got shape {w.shape} of "
                   f"{w.dtype}", where)
    return header


def read_json_file(path, *, what: str, max_bytes: int = MAX_MANIFEST_BYTES):
    """Parse a JSON file of at most ``max_bytes``; one :class:`DataFormatError` for any failure."""
    where = str(path)
    try:
        size = os.path.getsize(path)
        if size > max_bytes:
            raise _bad(f"{what} is {size:,} bytes, more than the {max_bytes:,} allowed", where)
        with open(path, "rb") as fh:
            text = fh.read().decode("utf-8")
        return json.loads(text)
    except DataFormatError:
        raise
    except OSError as exc:
        raise _bad(f"cannot read the {what} ({exc.strerror or exc})", where) from None
    except (UnicodeDecodeError, ValueError, RecursionError) as exc:
        raise _bad(f"unreadable {what} ({exception_text(exc, 80)})", where) from None


def check_bundle_manifest(data, where: str, *, version: int) -> dict:
    """Check a bundle's ``manifest.json`` (parsed) against the schema; returns it.

    Fields: ``format`` (``"marginalia-bundle"``), ``version`` (1..``version``), ``items``
    (list of objects with ``name`` and ``kind`` strings, ``labels`` a list of objects,
    ``features`` a relative path inside the bundle), ``models`` (list of objects with a
    relative ``file``), ``files`` (list of relative paths, optional), ``sync_anchors`` (list of
    objects whose ``reference_item`` and ``target_item`` are the ``id`` of two different audio items
    and whose ``reference_s`` and ``target_s`` are times >= 0; optional).
    """
    if not isinstance(data, dict) or data.get("format") != "marginalia-bundle":
        raise _bad("not a Marginalia bundle manifest (no \"format\": \"marginalia-bundle\")", where)
    v = data.get("version")
    if is_integer(v) and v > version:
        raise _bad(f"bundle version {v} is newer than this Marginalia reads ({version}); update Marginalia", where)
    if not is_integer(v) or v < 1:
        raise _bad(f"bundle manifest field 'version': expected a whole number in 1..{version}, got {_show(v)}", where)
    items = _list_field(data, "items", where)
    for k, item in enumerate(items):
        field = f"items[{k}]"
        if not isinstance(item, dict):
            raise _bad(f"bundle manifest field {field!r}: expected an object, got {_show(item)}", where)
        for key in ("name", "kind"):
            if not isinstance(item.get(key), str):
                raise _bad(f"bundle manifest field '{field}.{key}': expected a string, got {_show(item.get(key))}",
                           where)
        labels = item.get("labels", [])
        if not isinstance(labels, list) or not all(isinstance(lab, dict) for lab in labels):
            raise _bad(f"bundle manifest field '{field}.labels': expected a list of label objects", where)
        if "features" in item:
            _relative(item["features"], f"{field}.features", where)
    models = _list_field(data, "models", where)
    for k, model in enumerate(models):
        if not isinstance(model, dict):
            raise _bad(f"bundle manifest field 'models[{k}]': expected an object, got {_show(model)}", where)
        if "file" in model:
            _relative(model["file"], f"models[{k}].file", where)
    for k, rel in enumerate(_list_field(data, "files", where)):
        _relative(rel, f"files[{k}]", where)
    _check_sync_anchors(data, items, where)
    return data


def _check_sync_anchors(data: dict, items: list, where) -> None:
    """``sync_anchors``: objects joining two different audio items of the bundle at times >= 0."""
    kinds = {item.get("id"): item["kind"] for item in items if isinstance(item.get("id"), str)}
    for k, anchor in enumerate(_list_field(data, "sync_anchors", where)):
        field = f"sync_anchors[{k}]"
        if not isinstance(anchor, dict):
            raise _bad(f"bundle manifest field {field!r}: expected an object, got {_show(anchor)}", where)
        for key in ("reference_item", "target_item"):
            value = anchor.get(key)
            if kinds.get(value) != "audio":
                got = "no item of the bundle" if value not in kinds else f"a {kinds[value]} item, not a recording"
                raise _bad(f"bundle manifest field '{field}.{key}': {_show(value)} is {got}; give the 'id' of one "
                           "of the recordings listed in 'items' (or remove the anchor)", where)
        if anchor["reference_item"] == anchor["target_item"]:
            raise _bad(f"bundle manifest field {field!r}: joins a recording to itself; an anchor joins two different "
                       "recordings (fix 'target_item' or remove the anchor)", where)
        for key in ("reference_s", "target_s"):
            value = anchor.get(key)
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) \
                    or value < 0:
                raise _bad(f"bundle manifest field '{field}.{key}': expected a time in seconds >= 0, got "
                           f"{_show(value)}", where)
        for key in ("id", "author"):
            if key in anchor and not isinstance(anchor[key], str):
                raise _bad(f"bundle manifest field '{field}.{key}': expected a string, got {_show(anchor[key])}",
                           where)


def _list_field(data: dict, key: str, where) -> list:
    """``data[key]`` (an empty list when absent), refused unless it is a list."""
    value = data.get(key, [])
    if not isinstance(value, list):
        raise _bad(f"bundle manifest field {key!r}: expected a list, got {type(value).__name__}", where)
    return value


def _relative(value, field, where):
    try:
        check_relative_path(value, field=f"bundle manifest field {field!r}")
    except ValueError as exc:
        raise _bad(str(exc), where) from None
