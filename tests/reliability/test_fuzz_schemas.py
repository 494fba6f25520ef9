"""Hostile model files and bundle manifests are refused in one line naming the file and the field.

Before: a 2 MB model file drove ``predict`` to 2.2 GB of memory before it was refused; a 1.7 KB
file claiming a huge array ended in "internal error: MemoryError"; crafted headers gave internal
errors and a model with no task was accepted; crafted manifests raised TypeError,
AttributeError, RecursionError or ValueError. The longer runs (10⁴ cases per format) are in
``benchmarks/speed/soak.py``.
"""

from __future__ import annotations

import io
import json
import os
import tracemalloc
import zipfile
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from benchmarks.quality.soak_safety import edit_json, json_paths
from marginalia.cli import main
from marginalia.exceptions import DataFormatError, MarginaliaError
from marginalia.exports import _bundle_labels
from marginalia.models.files import TrainedModel, load_model, save_model
from marginalia.models.segmentation import SegmentationModel

from .engine_kill_child import exported_bundle

EXAMPLES = 60

json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-2 ** 70, 2 ** 70) | st.floats() | st.text(max_size=12),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3),
    max_leaves=8)


@st.composite
def mutated(draw, doc):
    """``doc`` with 1-3 values replaced, deleted or added (any JSON value, at any depth)."""
    doc = json.loads(json.dumps(doc))
    for _ in range(draw(st.integers(1, 3))):
        paths = list(json_paths(doc))
        path = paths[draw(st.integers(0, len(paths) - 1))]
        op = draw(st.sampled_from(["set", "delete", "add"]))
        doc = edit_json(doc, path, op, draw(json_values), draw(st.text(max_size=6)))
    return doc


# ------------------------------------------------------------------ model files

@pytest.fixture(scope="module")
def model_parts(tmp_path_factory):
    """The header and arrays of a valid model file (a fitted aCGH segmentation model)."""
    rng = np.random.default_rng(0)
    X = rng.normal(size=(40, 1))
    m = SegmentationModel(metric="diagonal", loss="hamming", min_size=2)
    w = m.initial_w([X])
    path = tmp_path_factory.mktemp("model") / "ok.model"
    save_model(path, TrainedModel("segmentation", "cgh-logratio", m, w, {"label_hash": "abc"}))
    load_model(path)    # valid as written
    with np.load(path) as z:
        arrays = {k: z[k] for k in z.files}
    return json.loads(arrays.pop("header").tobytes().decode("utf-8")), arrays


def write_model(path, header, arrays, compressed=True):
    blob = np.frombuffer(json.dumps(header).encode("utf-8"), dtype=np.uint8)
    with open(path, "wb") as fh:
        (np.savez_compressed if compressed else np.savez)(fh, header=blob, **arrays)
    return path


def refused_cleanly(call, path):
    """``call()`` succeeds, or raises a project exception whose one-line message names ``path``."""
    try:
        call()
    except MarginaliaError as exc:
        text = str(exc)
        assert "\n" not in text.strip(), text
        if isinstance(exc, DataFormatError):
            assert Path(path).name in text, text
        return exc
    return None


@pytest.mark.slow
@settings(max_examples=EXAMPLES)
@given(data=st.data())
def test_fuzzed_model_headers_are_refused_in_one_line(model_parts, tmp_path_factory, data):
    header, arrays = model_parts
    bad = data.draw(mutated(header))
    path = write_model(tmp_path_factory.mktemp("fz") / "m.model", bad, arrays)
    exc = refused_cleanly(lambda: load_model(path), path)
    if exc is None:      # accepted: then it is a usable model of a known task
        assert load_model(path).task in ("segmentation", "alignment")
    if isinstance(bad, dict) and "task" not in bad:
        assert exc is not None, "a model with no task was accepted"


def test_a_line_break_in_a_model_parameter_name_stays_on_one_line(model_parts, tmp_path):
    """Found by the fuzz above: the constructor's TypeError quotes the key, line break included."""
    header, arrays = model_parts
    bad = json.loads(json.dumps(header))
    bad["model_params"]["\n"] = 1
    path = write_model(tmp_path / "m.model", bad, arrays)
    exc = refused_cleanly(lambda: load_model(path), path)
    assert exc is not None and "unexpected keyword argument '\\n'" in str(exc)


@pytest.mark.slow
@settings(max_examples=EXAMPLES)
@given(data=st.data(), shape=st.lists(st.integers(0, 5), max_size=3),
       dtype=st.sampled_from(["<f8", "<f4", "<i8", "|u1", "|b1", "<c16", "<U3", "|S2", "<M8[s]"]))
def test_fuzzed_model_arrays_are_refused_in_one_line(model_parts, tmp_path_factory, data, shape, dtype):
    header, arrays = model_parts
    arrays = dict(arrays)
    key = data.draw(st.sampled_from(sorted(arrays) + ["state_extra"]))
    arrays[key] = np.zeros(shape, dtype=dtype)
    path = write_model(tmp_path_factory.mktemp("fa") / "m.model", header, arrays)
    refused_cleanly(lambda: load_model(path), path)


@pytest.mark.slow
@settings(max_examples=EXAMPLES)
@given(data=st.data())
def test_damaged_model_bytes_are_refused_in_one_line(model_parts, tmp_path_factory, data):
    header, arrays = model_parts
    folder = tmp_path_factory.mktemp("fb")
    raw = bytearray(write_model(folder / "ok.model", header, arrays).read_bytes())
    for _ in range(data.draw(st.integers(1, 4))):
        i = data.draw(st.integers(0, len(raw) - 1))
        raw[i] = data.draw(st.integers(0, 255))
    cut = data.draw(st.integers(len(raw) // 2, len(raw)))
    path = folder / "m.model"
    path.write_bytes(bytes(raw[:cut]))
    refused_cleanly(lambda: load_model(path), path)


def _npz_with_member(path, name, npy_bytes):
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as zf:
        zf.writestr("header.npy", _npy(np.frombuffer(b'{"format": "marginalia-model"}', dtype=np.uint8)))
        zf.writestr(name, npy_bytes)


def _npy(arr):
    buf = io.BytesIO()
    np.save(buf, arr)
    return buf.getvalue()


def _refused_in_little_memory(path, match):
    """``load_model(path)`` raises a DataFormatError matching ``match`` having allocated less than 20 MB."""
    tracemalloc.start()
    try:
        with pytest.raises(DataFormatError, match=match):
            load_model(path)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 20 * 2 ** 20


def test_a_small_file_claiming_a_huge_array_is_refused_before_allocating(tmp_path):
    head = io.BytesIO()
    np.lib.format.write_array_header_1_0(head, {"descr": "<f8", "fortran_order": False, "shape": (10 ** 11,)})
    path = tmp_path / "liar.model"
    _npz_with_member(path, "w.npy", b"\x93NUMPY\x01\x00" + head.getvalue()[8:] + b"\x00" * 64)
    assert path.stat().st_size < 2000
    _refused_in_little_memory(path, r"liar\.model.*field 'w'.*claims shape")


@pytest.mark.slow
def test_a_compressed_bomb_is_refused_by_the_files_own_size(model_parts, tmp_path, capsys):
    header, arrays = model_parts
    arrays = dict(arrays, w=np.zeros(6 * 2 ** 20))            # 48 MB of zeros: a ~50 KB file
    path = write_model(tmp_path / "bomb.model", header, arrays)
    assert path.stat().st_size < 200_000
    _refused_in_little_memory(path, r"bomb\.model.*field 'w'.*more than a .*-byte model file can hold")
    code = main(["predict", str(path), "--profiles", str(tmp_path / "none.csv"), "--out", str(tmp_path / "o")])
    err = capsys.readouterr().err
    assert code in (1, 2) and "internal error" not in err and "MemoryError" not in err


@pytest.mark.parametrize("change, field", [
    (lambda h: h.pop("task"), "'task'"),
    (lambda h: h.update(task=None), "'task'"),
    (lambda h: h.update(format_version=99), "newer than this Marginalia"),
    (lambda h: h.update(format_version="1"), "'format_version'"),
    (lambda h: h.update(format_version=0), "'format_version'"),
    (lambda h: h.update(n_features=10 ** 9), "'n_features'"),
    (lambda h: h.update(state_keys="feature_scale"), "'state_keys'"),
    (lambda h: h.update(state_keys=["nope"]), "'state_keys'"),
    (lambda h: h.update(model_params=[1]), "'model_params'"),
    (lambda h: h.update(provenance=[]), "'provenance'"),
])
def test_each_header_field_is_checked_and_named(model_parts, tmp_path, change, field):
    header, arrays = model_parts
    header = json.loads(json.dumps(header))
    change(header)
    path = write_model(tmp_path / "h.model", header, arrays)
    with pytest.raises(DataFormatError) as caught:
        load_model(path)
    assert field in str(caught.value) and "h.model" in str(caught.value)


def test_non_finite_parameters_are_refused(model_parts, tmp_path):
    header, arrays = model_parts
    w = arrays["w"].copy()
    w[0] = np.nan
    path = write_model(tmp_path / "nan.model", header, dict(arrays, w=w))
    with pytest.raises(DataFormatError, match="field 'w'.*finite"):
        load_model(path)


# ------------------------------------------------------------------ bundle manifests

@pytest.fixture(scope="module")
def bundle(tmp_path_factory):
    eng, manifest = exported_bundle(tmp_path_factory.mktemp("bundle"))
    yield eng, manifest
    eng.close()


def read_bundle(eng, folder, text):
    folder.mkdir(exist_ok=True)
    (folder / "manifest.json").write_text(text)
    return _bundle_labels(eng, folder)


@pytest.mark.slow
@settings(max_examples=EXAMPLES)
@given(data=st.data())
def test_fuzzed_bundle_manifests_are_refused_in_one_line(bundle, tmp_path_factory, data):
    import warnings
    eng, manifest = bundle
    bad = data.draw(mutated(manifest))
    folder = tmp_path_factory.mktemp("fm") / "b"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        refused_cleanly(lambda: read_bundle(eng, folder, json.dumps(bad)), folder / "manifest.json")


@pytest.mark.parametrize("text, field", [
    ("[" * 100_000 + "]" * 100_000, "RecursionError"),
    ('{"format": "marginalia-bundle", "version": "1"}', "'version'"),
    ('{"format": "marginalia-bundle", "version": 7}', "newer than this Marginalia"),
    ('{"format": "marginalia-bundle", "version": 1, "items": {"a": 1}}', "'items'"),
    ('{"format": "marginalia-bundle", "version": 1, "items": [1]}', "'items[0]'"),
    ('{"format": "marginalia-bundle", "version": 1, "items": [{"name": 3, "kind": "cgh"}]}', "'items[0].name'"),
    ('{"format": "marginalia-bundle", "version": 1, "items": [{"name": "a", "kind": "cgh", "labels": [[]]}]}',
     "'items[0].labels'"),
    ('{"format": "marginalia-bundle", "version": 1, "items": [{"name": "a", "kind": "cgh", '
     '"features": "../../x.npz"}]}', "'items[0].features'"),
    ('{"format": "marginalia-bundle", "version": 1, "models": [{"file": "/etc/passwd"}]}', "'models[0].file'"),
    ('{"format": "marginalia-bundle", "version": 1, "files": ["a/../../b"]}', "'files[0]'"),
    ('{"format": "marginalia-bundle", "version": 1, "models": "m.npz"}', "'models': expected a list"),
    ('{"format": "marginalia-bundle", "version": 1, "files": {"a": 1}}', "'files': expected a list"),
])
def test_each_manifest_field_is_checked_and_named(bundle, tmp_path, text, field):
    eng, _ = bundle
    with pytest.raises(DataFormatError) as caught:
        read_bundle(eng, tmp_path / "b", text)
    message = str(caught.value)
    assert field in message and "manifest.json" in message and "\n" not in message


def test_a_crafted_label_names_its_item_and_place(bundle, tmp_path):
    eng, manifest = bundle
    bad = json.loads(json.dumps(manifest))
    labelled = next(k for k, item in enumerate(bad["items"]) if item["labels"])
    bad["items"][labelled]["labels"][0]["start"] = {"x": 1}
    with pytest.raises(DataFormatError, match=rf"'items\[{labelled}\]\.labels\[0\]'"):
        read_bundle(eng, tmp_path / "b", json.dumps(bad))
    assert os.path.exists(tmp_path / "b" / "manifest.json")


def test_an_archive_needing_an_unknown_zip_version_is_refused(model_parts, tmp_path):
    """Found by benchmarks/quality/soak_safety.py: zipfile raises NotImplementedError while listing the archive."""
    header, arrays = model_parts
    path = write_model(tmp_path / "v.model", header, arrays)
    raw = bytearray(path.read_bytes())
    central = raw.index(b"PK\x01\x02")
    raw[central + 6:central + 8] = (250).to_bytes(2, "little")     # "version needed to extract": 25.0
    path.write_bytes(bytes(raw))
    with pytest.raises(DataFormatError, match=r"v\.model.*not a readable model file"):
        load_model(path)
