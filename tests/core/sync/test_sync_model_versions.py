"""The project's sync metric has versions like every model: listed, restorable, exported and imported as a model
file, and a hostile sync model file is refused in one line with nothing stored."""

import io
import json

import numpy as np
import pytest

from marginalia.engine import Engine
from marginalia.exceptions import DataFormatError, ParameterError, WrongTaskError
from marginalia.models.files import TrainedModel, load_model, save_model
from marginalia.sync import SyncAligner
from marginalia.sync.anchors import project_aligner
from tests.core.sync.synthetic import three_takes_project


@pytest.fixture(scope="module")
def learned(tmp_path_factory):
    """A project with two learned sync metrics (3 anchors, then 4) and the first one's weights."""
    folder = tmp_path_factory.mktemp("versions")
    eng, ids, onsets = three_takes_project(folder)
    a, b = ids["a"], ids["b"]
    for k in (4, 12, 20):
        eng.add_sync_anchor(a, b, float(onsets["a"][k]), float(onsets["b"][k]))
    first = eng.learn_sync_metric(options={"max_iter": 5})
    first_w = project_aligner(eng).metric_weights()
    eng.add_sync_anchor(a, b, float(onsets["a"][8]), float(onsets["b"][8]))
    second = eng.learn_sync_metric(options={"max_iter": 5, "C": 10.0})
    yield eng, ids, folder, first, second, first_w
    eng.close()


def _sync_rows(versions):
    return [v for v in versions if v["task"] == "sync"]


def test_sync_versions_are_listed_on_recordings_and_one_is_restored(learned):
    eng, ids, _, first, second, first_w = learned
    rows = _sync_rows(eng.model_versions(ids["a"]))
    assert [(v["id"], v["n_labels"], v["trained_by"], v["current"], v["fitted_from"]) for v in rows] == [
        (first.model_id, 3, "ssvm", False, "3 sync anchors on 1 pair"),
        (second.model_id, 4, "ssvm", True, "4 sync anchors on 1 pair")]
    assert rows[0]["created"] <= rows[1]["created"]
    assert _sync_rows(eng.model_versions()) == rows       # every task's versions: the sync metric's too
    assert not np.allclose(project_aligner(eng).metric_weights(), first_w)
    new_id = eng.revert_model(first.model_id)
    try:
        rows = _sync_rows(eng.model_versions(ids["b"]))
        assert [(v["id"], v["trained_by"], v["reverted_from"], v["current"]) for v in rows][-1] == (
            new_id, "revert", first.model_id, True)
        assert eng.sync_model_id == new_id and np.allclose(project_aligner(eng).metric_weights(), first_w)
        compared = eng.sync_recordings(ids["a"], ids["c"])
        assert compared.model_id == new_id and compared.state == eng.sync_state(ids["a"], ids["c"])
        state = eng.sync_state(ids["a"], ids["b"])
        assert state[1] == new_id and state[3] == tuple(first_w) and len(state[0]) == 4
    finally:
        eng.revert_model(second.model_id)
    assert np.allclose(project_aligner(eng).metric_weights(),
                       eng.session.load_model(second.model_id).params["w"])
    assert eng.sync_state(ids["a"], ids["b"]) != state       # another version, other weights: another state


def test_the_sync_metric_goes_out_as_a_model_file_and_into_another_project(learned, tmp_path):
    eng, ids, folder, _, second, _ = learned
    eng.export("sync-model", tmp_path / "piano.model")
    trained = load_model(tmp_path / "piano.model", task="sync")
    assert np.allclose(trained.sync_aligner().metric_weights(), project_aligner(eng).metric_weights())
    assert trained.provenance["model_id"] == eng.sync_model_id and trained.provenance["n_anchors"] == 4
    other = Engine.create(tmp_path / "q.marginalia")
    try:
        other.import_files([folder / "a.wav", folder / "b.wav"])
        oid = {i.name: i.id for i in other.items()}
        assert other.sync_model_id is None
        with pytest.raises(ParameterError, match="export sync-model: no sync metric learned yet"):
            other.export("sync-model", tmp_path / "none.model")
        info = other.start_from(tmp_path / "piano.model")
        assert info["task"] == "sync" and other.sync_model_id == info["version"]
        assert np.allclose(project_aligner(other).metric_weights(), project_aligner(eng).metric_weights())
        assert project_aligner(other).get_params() == project_aligner(eng).get_params()
        [row] = _sync_rows(other.model_versions(oid["a"]))
        assert (row["trained_by"], row["current"], row["fitted_from"]) == ("model-file", True,
                                                                           "the model file piano.model")
        assert other.sync_recordings(oid["a"], oid["b"]).model_id == info["version"]
    finally:
        other.close()


def test_starting_from_another_project_takes_its_sync_metric_too(learned, tmp_path):
    eng, ids, folder, _, _, _ = learned
    other = Engine.create(tmp_path / "q.marginalia")
    try:
        other.import_files([folder / "a.wav", folder / "b.wav"])
        oid = {i.name: i.id for i in other.items()}
        # the source has no model of the recordings' segmentation yet: its sync metric comes alone
        info = other.start_from(eng.path)
        assert info["task"] == "sync" and other.sync_model_id == info["version"]
        assert np.allclose(project_aligner(other).metric_weights(), project_aligner(eng).metric_weights())
        assert project_aligner(other).get_params() == project_aligner(eng).get_params()
        [row] = _sync_rows(other.model_versions(oid["a"]))
        assert (row["trained_by"], row["fitted_from"]) == ("project", f"the project {eng.path.name}")
        assert other.prior(oid["a"]) is None
        # with a model of the recordings' task: that model is the prior, and the sync metric comes along
        eng.retrain()
        info = other.start_from(eng.path)
        assert info["source_kind"] == "project" and info["sync"]["task"] == "sync"
        assert other.prior(oid["a"])["source"] == str(eng.path)
        assert other.sync_model_id == info["sync"]["version"] and len(_sync_rows(other.model_versions())) == 2
    finally:
        other.close()


def test_a_source_project_without_a_sync_metric_changes_no_sync_metric(learned, tmp_path):
    eng, ids, folder, _, _, _ = learned
    plain = Engine.create(tmp_path / "plain.marginalia")       # recordings, but no sync metric
    other = Engine.create(tmp_path / "q.marginalia")
    try:
        plain.import_files([folder / "a.wav"])
        other.import_files([folder / "b.wav"])
        with pytest.raises(WrongTaskError):
            other.start_from(plain.path)
        assert other.sync_model_id is None
    finally:
        plain.close()
        other.close()


def _hostile_project(learned, tmp_path, params):
    """A project whose stored sync metric has ``params`` (as a damaged or hostile file would)."""
    _, _, folder, _, _, _ = learned
    bad = Engine.create(tmp_path / "hostile.marginalia")
    bad.import_files([folder / "a.wav", folder / "b.wav"])
    bad.session.save_model("sync@1", "warping", dict({"task": "sync", "role": "sync", "trained_by": "ssvm"}, **params),
                           b"[]", "hostile")
    return bad


_GOOD = {"options": SyncAligner().get_params(), "w": [1.0] * SyncAligner().n_features_}
HOSTILE = {
    "huge": ({"options": dict(_GOOD["options"], max_cells=10 ** 12)},
             r"max_cells: 1000000000000 is more than a model file may set \(400000000\)"),
    "band": ({"options": dict(_GOOD["options"], band=1.0)}, r"band: 1.0 is more than a model file may set"),
    "pyramid": ({"options": dict(_GOOD["options"], pyramid=10 ** 9)}, "pyramid"),
    "step cost": ({"options": dict(_GOOD["options"], step_cost=1e300)}, r"step_cost: 1e\+300 is more than a model"),
    "negative step cost": ({"options": dict(_GOOD["options"], step_cost=-1.0)}, "step_cost"),
    "unknown": ({"options": dict(_GOOD["options"], rm_rf=True)}, "'rm_rf' is no option of the sync aligner"),
    "not a table": ({"options": [1, 2]}, "options: expected a table"),
    "bad type": ({"options": dict(_GOOD["options"], coarse="2")}, "coarse"),
    "short w": ({"w": [1.0, 2.0]}, "n_features"),
    "negative w": ({"w": [-1.0] * SyncAligner().n_features_}, "metric weights must be >= 0"),
    "no w": ({"w": None}, "w: expected the metric's weights"),
}


@pytest.mark.parametrize("name", sorted(HOSTILE))
def test_a_stored_sync_metric_is_checked_as_a_model_file_is(learned, tmp_path, name):
    change, message = HOSTILE[name]
    bad = _hostile_project(learned, tmp_path, dict(_GOOD, **change))
    ids = {i.name: i.id for i in bad.items()}
    try:
        # used by the project itself: one line naming the project, the model and the fix
        with pytest.raises(DataFormatError, match=message) as info:
            bad.sync_recordings(ids["a"], ids["b"])
        text = str(info.value)
        assert text.startswith(str(bad.path)) and "\n" not in text and "sync@1" in text and "Model versions" in text
    finally:
        bad.close()
    # started from by another project: refused in one line, nothing stored
    other = Engine.create(tmp_path / "q.marginalia")
    try:
        other.import_files([learned[2] / "c.wav"])
        with pytest.raises(DataFormatError, match=message):
            other.start_from(tmp_path / "hostile.marginalia")
        assert other.sync_model_id is None and other.prior(other.items()[0].id) is None
    finally:
        other.close()


def _rewrite(src, dst, *, w=None, params=None):
    """A copy of model file ``src`` with its ``w`` or some model options replaced (as a hostile file would)."""
    with np.load(src) as z:
        arrays = {k: z[k] for k in z.files}
    header = json.loads(bytes(arrays["header"]).decode())
    header["model_params"].update(params or {})
    arrays["header"] = np.frombuffer(json.dumps(header).encode(), dtype=np.uint8)
    if w is not None:
        arrays["w"] = np.asarray(w, dtype=np.float64)
    buf = io.BytesIO()
    np.savez(buf, **arrays)
    dst.write_bytes(buf.getvalue())
    return dst


def test_hostile_sync_model_files_are_refused_in_one_line_and_nothing_is_stored(learned, tmp_path):
    eng, _, _, _, _, _ = learned
    good = tmp_path / "good.model"
    eng.export("sync-model", good)
    n = SyncAligner().n_features_
    bad = {
        "huge.model": ({"params": {"max_cells": 10 ** 12}}, r"max_cells: 1000000000000 is more than a model file "
                                                             r"may set \(400000000\)"),
        "wide.model": ({"params": {"band": 1.0}}, r"band: 1.0 is more than a model file may set \(0.05\)"),
        "corridor.model": ({"params": {"corridor_s": 1e9}}, "corridor_s"),
        "features.model": ({"params": {"features": "mfcc"}}, "features: expected one of"),
        "unknown.model": ({"params": {"rm_rf": True}}, "inconsistent model file"),
        "negative.model": ({"w": -np.ones(n)}, "metric weights must be >= 0"),
        "nan.model": ({"w": np.full(n, np.nan)}, "field .w.: expected a 1-D array of finite numbers"),
        "short.model": ({"w": np.ones(3)}, r"shape \(%d,\)" % n),
    }
    before = eng.sync_model_id
    for name, (change, message) in bad.items():
        path = _rewrite(good, tmp_path / name, **change)
        with pytest.raises(DataFormatError, match=message) as info:
            eng.start_from(path)
        assert str(info.value).startswith(str(path)) and "\n" not in str(info.value), name
        with pytest.raises(DataFormatError, match=message):
            load_model(path, task="sync")
    truncated = tmp_path / "truncated.model"
    truncated.write_bytes(good.read_bytes()[:200])
    with pytest.raises(DataFormatError, match=str(truncated)):
        eng.start_from(truncated)
    assert eng.sync_model_id == before


def test_a_sync_model_is_no_prior_of_a_task_and_a_task_model_no_sync_metric(learned, tmp_path):
    eng, _, folder, _, _, _ = learned
    aligner = SyncAligner().with_metric_weights(np.ones(SyncAligner().n_features_))
    save_model(tmp_path / "unit.model", TrainedModel("sync", "sync-aligner", aligner, aligner.metric_weights(), {}))
    info = eng.start_from(tmp_path / "unit.model")      # a file without counts: "nothing recorded"
    try:
        assert _sync_rows(eng.model_versions())[-1]["fitted_from"] == "the model file unit.model"
        assert eng.prior(eng.items()[0].id) is None
    finally:
        eng.revert_model(_sync_rows(eng.model_versions())[-2]["id"])
    assert eng.sync_model_id != info["version"]
    from marginalia.sync.anchors import import_sync_model
    save_model(tmp_path / "align.model", _fitted_score_aligner())
    with pytest.raises(WrongTaskError, match="is an alignment model; this command needs a sync model"):
        import_sync_model(eng, tmp_path / "align.model")


def _fitted_score_aligner():
    from marginalia.align import ScoreAligner
    aligner = ScoreAligner()
    aligner.W_ = aligner._W()
    aligner.n_iter_ = 0
    return aligner
