import io

import numpy as np
import pytest

from marginalia.exceptions import DataFormatError, ParameterError
from marginalia.models.persistence import from_bytes, labels_hash, load_model_parts, save_model_parts, to_bytes
from marginalia.models.segmentation import SegmentationModel
from marginalia.types import RegionKind, RegionLabel


def fitted(metric="diagonal"):
    rng = np.random.default_rng(0)
    X = rng.normal(size=(50, 3))
    m = SegmentationModel(metric=metric, loss="hamming", min_size=2)
    w = m.initial_w([X]) * 1.5
    return m, w, X


@pytest.mark.parametrize("metric", ["diagonal", "full"])
def test_round_trip_file_and_bytes(tmp_path, metric):
    m, w, X = fitted(metric)
    prov = {"features": {"kind": "hermite", "orders": [0, 1, 2]}, "label_hash": "abc", "learner": {"C": 1.0}}
    save_model_parts(tmp_path / "m.npz", m, w, prov)
    m2, w2, p2 = load_model_parts(tmp_path / "m.npz", task="segmentation", n_features=3,
                            features={"kind": "hermite", "orders": [0, 1, 2]})
    assert np.array_equal(w, w2) and m2.get_params() == m.get_params()
    assert m2.decode(X, w2) == m.decode(X, w)
    assert p2["label_hash"] == "abc" and "library_version" in p2
    m3, w3, _ = from_bytes(to_bytes(m, w, prov))
    assert np.array_equal(w3, w) and np.allclose(m3.metric_matrix(w3), m.metric_matrix(w))


def test_refuses_other_task_or_features():
    m, w, _ = fitted()
    blob = to_bytes(m, w, {"features": {"kind": "hermite", "half_width": 2}})
    with pytest.raises(ParameterError, match="alignment"):
        from_bytes(blob, task="alignment")
    with pytest.raises(ParameterError, match="3 features"):
        from_bytes(blob, n_features=5)
    with pytest.raises(ParameterError, match="half_width=2"):
        from_bytes(blob, features={"half_width": 4})


def test_damaged_or_foreign_files(tmp_path):
    bad = tmp_path / "x.npz"
    bad.write_bytes(b"not a zip")
    with pytest.raises(DataFormatError, match="x.npz"):
        load_model_parts(bad)
    buf = io.BytesIO()
    np.savez(buf, w=np.ones(3))
    with pytest.raises(DataFormatError, match="no header"):
        from_bytes(buf.getvalue())
    with pytest.raises(ParameterError, match="bytes"):
        from_bytes("hello")


def test_labels_hash_ignores_ids_and_order():
    a = RegionLabel(item_id="i", start=0, stop=5, kind=RegionKind.ZERO)
    b = RegionLabel(item_id="i", start=5, stop=9, kind=RegionKind.ONE)
    a2 = RegionLabel(item_id="i", start=0, stop=5, kind=RegionKind.ZERO)
    assert labels_hash([a, b]) == labels_hash([b, a2])
    assert labels_hash([a]) != labels_hash([b])


def test_corrupt_compressed_member_is_called_damaged(tmp_path):
    import zipfile
    m, w, _ = fitted()
    path = tmp_path / "m.model"
    save_model_parts(path, m, w, {})
    with zipfile.ZipFile(path) as z:
        info = z.getinfo("w.npy")
    raw = bytearray(path.read_bytes())
    name_len = int.from_bytes(raw[info.header_offset + 26:info.header_offset + 28], "little")
    extra_len = int.from_bytes(raw[info.header_offset + 28:info.header_offset + 30], "little")
    start = info.header_offset + 30 + name_len + extra_len
    for i in range(start, start + min(20, info.compress_size)):   # invert the deflate stream's first bytes
        raw[i] ^= 0xFF
    path.write_bytes(bytes(raw))
    with pytest.raises(DataFormatError, match="m.model.*damaged|damaged.*m.model"):
        load_model_parts(path)
    buf = io.BytesIO()
    np.savez(buf, header=np.frombuffer(b"{}", dtype=np.uint8))
    with pytest.raises(DataFormatError, match="'w' are missing"):
        from_bytes(buf.getvalue())
