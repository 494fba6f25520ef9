"""Starting a project from another project's model or a model file (issue 47 point 7; marginalia.prior)."""

import io
import shutil

import numpy as np
import pytest

import marginalia as mg
from marginalia.engine import Engine
from marginalia.exceptions import DataFormatError, ParameterError, UsageError, WrongTaskError
from marginalia.models.files import TrainedModel, save_model
from marginalia.models.segmentation import SegmentationModel
from marginalia.prior import coupled_ssvm_settings
from marginalia.types import AnchorLabel, RegionKind, RegionLabel

from .test_engine_segmentation import _write_profiles


def _ids(eng):
    return {i.name: i.id for i in eng.items()}


def _label_truth(eng, truth, names):
    """A 1breakpoint region around each true change and a 0breakpoints region between them."""
    ids = _ids(eng)
    for name in names:
        a, b = truth[name]
        labels = [RegionLabel(item_id=ids[name], start=a - 10, stop=a + 10, kind=RegionKind.ONE),
                  RegionLabel(item_id=ids[name], start=b - 10, stop=b + 10, kind=RegionKind.ONE)]
        if b - a > 40:
            labels.append(RegionLabel(item_id=ids[name], start=a + 15, stop=b - 15, kind=RegionKind.ZERO))
        eng.add_labels(labels)


def _current_w(eng, item_id):
    version = next(v for v in eng.model_versions(item_id) if v["current"])
    with np.load(io.BytesIO(eng.session.load_model(version["id"]).blob)) as z:
        return np.array(z["w"]), version


@pytest.fixture
def target(tmp_path):
    truth = _write_profiles(tmp_path / "target.csv", n_profiles=2, chroms=("1", "2", "3"), seed=3)
    eng = Engine.create(tmp_path / "target.marginalia")
    eng.import_files([tmp_path / "target.csv"])
    yield eng, truth, tmp_path
    eng.close()


def _prior_file(eng, path, penalty_factor):
    """A model file on the app's aCGH inputs: the untrained metric with its penalty times ``penalty_factor``."""
    Xs = [eng._tasks.get(eng.item(i.id)).features(i.id) for i in eng.items()]
    model = SegmentationModel(metric="diagonal", loss="frobenius", partial_loss="completion", min_size=3)
    model.fit_scales(Xs)
    w = model.join_w(np.r_[1.0, np.zeros(5)], 1.0 / 6)
    save_model(path, TrainedModel("segmentation", "cgh-pointwise", model, model.scale_penalty(w, penalty_factor),
                                  {"learner": "test"}))
    return path


def test_starting_from_a_model_file_gives_that_models_predictions(target):
    eng, truth, tmp = target
    ids = _ids(eng)
    item = ids["1:1"]
    before = eng.predict(item).structure.breakpoints.tolist()
    assert len(before) >= 2                              # the untrained model finds the clear changes
    # a prior whose penalty is so high that it sees no change at all
    path = _prior_file(eng, tmp / "flat.model", 1e6)
    info = eng.start_from(path)
    assert info["task"] == "segmentation/cgh" and info["source_kind"] == "model file" and info["rho"] == 1.0
    assert eng.predict(item).structure.breakpoints.tolist() == []
    trained = mg.load_model(path)
    seq = eng.sequence(ids["2:3"])
    assert eng.predict(ids["2:3"]).structure.breakpoints.tolist() == trained.segment(seq).breakpoints.tolist()
    versions = eng.model_versions(item)
    assert versions[-1]["trained_by"] == "prior" and versions[-1]["current"]
    assert not any(v["id"].startswith("prior-") for v in eng.model_versions())   # the stored prior is no version


def test_the_coupling_pulls_the_retrain_towards_the_prior(target):
    eng, truth, tmp = target
    ids = _ids(eng)
    _label_truth(eng, truth, ["1:1", "1:2"])
    path = _prior_file(eng, tmp / "flat.model", 50.0)
    w_prior = mg.load_model(path).w
    fits = {}
    for rho in (0.0, 1e-6, 1e6):
        eng.start_from(path, rho=rho)
        eng.retrain()
        fits[rho], version = _current_w(eng, ids["1:1"])
        assert version["trained_by"] == "coupled" and version["rho"] == rho

    def dist(a, b):
        return float(np.linalg.norm(a / np.linalg.norm(a) - b / np.linalg.norm(b)))

    moved = dist(fits[0.0], w_prior)          # how far the target-only fit goes from the prior
    assert moved > 0.05
    # strong coupling keeps the prior's parameters (up to scale: they decode the same) ...
    assert dist(fits[1e6], w_prior) < 1e-2 * moved
    # ... and a weak one lands where the target-only fit does
    assert dist(fits[1e-6], fits[0.0]) < 1e-2 * moved
    # and the strongly coupled model still draws the prior's too-few changes on a labelled chromosome
    errors = {v["id"]: v["errors"] for v in eng.model_versions(ids["1:1"], figures=True)}
    assert all(e is not None and e["n_regions"] == 6 for e in errors.values())


def test_coupled_settings_complete_the_square():
    p = np.array([2.0, 1.0, 0.5])
    C, c = coupled_ssvm_settings(p, rho=1.0, C=1.0)
    w = np.array([0.3, -0.2, 1.7])
    lhs = w @ w / 2 + 1.0 / 4 * (w - p) @ (w - p)                   # ‖w‖²/(2C) + ρ/4 ‖w − p‖²
    rhs = (w - c) @ (w - c) / (2 * C)
    const = p @ p / 4 - c @ c / (2 * C)
    assert lhs == pytest.approx(rhs + const)


def test_the_prior_survives_reopening_even_when_its_file_is_gone(target):
    eng, truth, tmp = target
    ids = _ids(eng)
    path = _prior_file(eng, tmp / "flat.model", 1e6)
    eng.start_from(path, rho=2.0)
    eng.close()
    path.unlink()
    again = Engine.open(tmp / "target.marginalia")
    try:
        prior = again.prior(ids["1:1"])
        assert prior is not None and prior["rho"] == 2.0 and prior["source"] == str(path)
        assert again.predict(ids["1:1"]).structure.breakpoints.tolist() == []
        _label_truth(again, truth, ["1:1"])
        again.retrain()
        assert _current_w(again, ids["1:1"])[1]["trained_by"] == "coupled"
        figures = again.prior_figures(ids["1:1"])
        assert figures["prior"] == {"errors": 2, "fp": 0, "fn": 2, "n_regions": 3}    # sees no change at all
        assert figures["current"]["n_regions"] == 3
        assert again.forget_prior(ids["1:1"])["model_id"] == prior["model_id"]
        assert again.prior(ids["1:1"]) is None and again.prior_figures(ids["1:1"]) is None
        again.retrain()
        assert _current_w(again, ids["1:1"])[1]["trained_by"] == "ssvm"
    finally:
        again.close()


def test_starting_from_another_project_takes_its_current_model(target, tmp_path):
    eng, truth, tmp = target
    source_truth = _write_profiles(tmp_path / "source.csv", n_profiles=2, chroms=("1", "2"), seed=11)
    src = Engine.create(tmp_path / "source.marginalia")
    src.import_files([tmp_path / "source.csv"])
    _label_truth(src, source_truth, ["1:1", "2:2"])
    src.retrain()
    src_w, src_version = _current_w(src, _ids(src)["1:1"])
    src.close()
    before = {str(p): p.read_bytes() for p in tmp_path.rglob("source*") if p.is_file()}
    info = eng.start_from(tmp_path / "source.marginalia")
    assert info["source_kind"] == "project" and info["source_model"] == src_version["id"]
    w, version = _current_w(eng, _ids(eng)["1:1"])
    assert version["trained_by"] == "prior"
    np.testing.assert_allclose(w, src_w)
    # the source is only read: every file of it keeps its bytes; at most SQLite's read-only sidecars appear,
    # the write-ahead log among them empty
    after = {str(p): p.read_bytes() for p in tmp_path.rglob("source*") if p.is_file()}
    assert {k: after[k] for k in before} == before
    new = {k: v for k, v in after.items() if k not in before}
    assert {k.rpartition("source.marginalia")[2] for k in new} <= {"-wal", "-shm"}
    assert all(v == b"" for k, v in new.items() if k.endswith("-wal"))


def _source_project(tmp_path, labelled=("1:1", "2:2")):
    truth = _write_profiles(tmp_path / "source.csv", n_profiles=2, chroms=("1", "2"), seed=11)
    src = Engine.create(tmp_path / "source.marginalia")
    src.import_files([tmp_path / "source.csv"])
    _label_truth(src, truth, labelled)
    src.retrain()
    n = len(src.labels())
    src.close()
    return tmp_path / "source.marginalia", n


@pytest.mark.slow
def test_from_a_project_its_labels_are_stored_and_retrains_fit_both_datasets(target, tmp_path, monkeypatch):
    from marginalia.learners.transfer import TransferSSVM
    eng, truth, tmp = target
    (tmp_path / "src").mkdir()
    source, n_source_labels = _source_project(tmp_path / "src")
    info = eng.start_from(source)
    assert info["source_items"] == 2 and info["data_id"].startswith("prior-data-")
    shutil.rmtree(source.parent)                      # the source project and its data go away
    seen = []
    fit = TransferSSVM.fit

    def spy(self, Xs, Ys, datasets, **kw):
        seen.append((list(datasets), sum(len(y) for y in Ys), self.rho))
        return fit(self, Xs, Ys, datasets, **kw)

    monkeypatch.setattr(TransferSSVM, "fit", spy)
    _label_truth(eng, truth, ["1:1"])
    eng.retrain()
    n_target = len(eng.labels())
    assert seen == [(["source", "source", "project"], n_source_labels + n_target, 1.0)]
    assert _current_w(eng, _ids(eng)["1:1"])[1]["trained_by"] == "coupled"


def test_a_source_project_whose_data_moved_couples_through_its_model_only(target, tmp_path):
    eng, _, _ = target
    (tmp_path / "src").mkdir()
    source, _ = _source_project(tmp_path / "src")
    (tmp_path / "src" / "source.csv").unlink()
    info = eng.start_from(source)
    assert "data_id" not in info and info["source_labels"].startswith("not used: its data files could not be read")


def test_a_wrong_task_a_foreign_kind_and_a_corrupt_file_are_refused_in_one_line(target):
    eng, _, tmp = target
    from marginalia.sync import SyncAligner
    from tests.core.sync.test_aligner import _pairs
    sync = tmp / "sync.model"
    mg.save_model(sync, SyncAligner(train_pool=1, max_iter=2, runner_up=False).fit(_pairs(np.random.default_rng(1), 2)))
    with pytest.raises(WrongTaskError, match=r"sync.model: is a sync model; this project's models are "
                                             r"copy-number models"):
        eng.start_from(sync)
    series = tmp / "series.model"
    model = SegmentationModel(metric="diagonal")
    model.fit_scales([np.random.default_rng(0).normal(size=(50, 2))])
    save_model(series, TrainedModel("segmentation", "series", model, model.default_w(), {}))
    with pytest.raises(WrongTaskError, match=r"series.model: segments series data; this project has copy-number"):
        eng.start_from(series)
    corrupt = tmp / "corrupt.model"
    corrupt.write_bytes(b"PK\x03\x04" + bytes(range(200)))
    with pytest.raises(DataFormatError) as err:
        eng.start_from(corrupt)
    assert "corrupt.model" in str(err.value) and "\n" not in str(err.value)
    text = tmp / "notes.txt"
    text.write_text("hello")
    with pytest.raises(DataFormatError, match="notes.txt: not a Marginalia model file"):
        eng.start_from(text)
    fake = tmp / "notes.marginalia"
    fake.write_text("not a project\n" * 50)
    with pytest.raises(DataFormatError) as err:
        eng.start_from(fake)
    assert str(err.value).startswith(f"{fake}: cannot read it as a Marginalia project") and "\n" not in str(err.value)
    with pytest.raises(UsageError, match="is this project itself"):
        eng.start_from(eng.path)
    with pytest.raises(ParameterError, match="rho: expected a finite coupling >= 0"):
        eng.start_from(sync, rho=-1)
    assert eng.prior() is None and all(v["trained_by"] != "prior" for v in eng.model_versions())


# ------------------------------------------------------------------ the alignment task's prior
def _aligner_file(path):
    """A model file of a score aligner whose scorers also credit the next semitone (unlike the untrained ones)."""
    from marginalia.align import ScoreAligner
    w = ScoreAligner().scorer_weights()
    w[1], w[13] = 0.4, 0.3
    mg.save_model(path, ScoreAligner().with_scorer_weights(w, {"trained_on": ["piano"]}))
    return path, w


@pytest.fixture
def demo(tmp_path):
    eng = Engine.open_demo(tmp_path / "demo")
    yield eng, next(i.id for i in eng.items() if i.task == "alignment")
    eng.close()


def _current_aligner(eng, item_id):
    from marginalia.align import ScoreAligner
    version = next(v for v in eng.model_versions(item_id) if v["current"])
    with np.load(io.BytesIO(eng.session.load_model(version["id"]).blob)) as z:
        return ScoreAligner.from_bytes(z["aligner"].tobytes()), version


@pytest.mark.slow
def test_an_aligner_model_file_starts_the_alignment_task_and_its_retrains(demo, tmp_path, monkeypatch):
    from marginalia.align import ScoreAligner
    eng, audio = demo
    path, w = _aligner_file(tmp_path / "piano.model")
    info = eng.start_from(path)
    assert info["task"] == "alignment/audio" and info["rho"] is None and info["kind"] == "alignment"
    aligner, version = _current_aligner(eng, audio)
    assert version["trained_by"] == "prior" and np.allclose(aligner.scorer_weights(), w)
    assert eng.prior(audio)["source"] == str(path) and eng.prior(_ids(eng)["1:1"] if "1:1" in _ids(eng) else
                                                                  next(i.id for i in eng.items()
                                                                       if i.kind == "cgh")) is None
    starts = []
    real_fit = ScoreAligner.fit

    def spy(self, pairs, **kw):
        starts.append(kw.get("start"))
        return real_fit(self, pairs, **kw)
    monkeypatch.setattr(ScoreAligner, "fit", spy)
    eng.retrain(task_name="alignment")
    assert len(starts) == 1 and np.allclose(starts[0].scorer_weights(), w)
    assert _current_aligner(eng, audio)[1]["trained_by"] == "weak-supervision-prior"
    # the panel's figures: the prior's and the current aligner's misses on the item's labels
    eng.add_label(AnchorLabel(item_id=audio, event=3, time_s=float(eng.predict(audio).times_s[3]), tolerance_s=0.05))
    figures = eng.prior_figures(audio)
    assert figures["prior"]["n_regions"] == 1 and figures["prior"]["unit"] == "labels"
    assert figures["current"]["errors"] == 0
    eng.forget_prior(audio)
    monkeypatch.undo()
    eng.retrain(task_name="alignment")
    assert _current_aligner(eng, audio)[1]["trained_by"] == "weak-supervision"


@pytest.mark.slow
def test_another_projects_aligner_is_taken_when_the_shown_item_is_a_recording(demo, tmp_path):
    eng, audio = demo
    source = Engine.open_demo(tmp_path / "source")
    try:
        src_audio = next(i.id for i in source.items() if i.task == "alignment")
        source.retrain()                                         # both of its tasks have a trained model
        expected = _current_aligner(source, src_audio)[0].scorer_weights()
        src_path = source.path
    finally:
        source.close()
    info = eng.start_from(src_path, prefer="alignment/audio")
    assert info["task"] == "alignment/audio" and info["source_kind"] == "project"
    assert np.allclose(_current_aligner(eng, audio)[0].scorer_weights(), expected)
    info = eng.start_from(src_path)                              # no preference: the first task found, copy number
    assert info["task"] == "segmentation/cgh"


def test_an_aligner_for_a_project_without_recordings_is_refused_in_one_line(target):
    eng, _, tmp = target
    path, _ = _aligner_file(tmp / "piano.model")
    with pytest.raises(WrongTaskError, match=r"piano.model: is an audio-to-score alignment model; this project has "
                                             r"no recording with a score"):
        eng.start_from(path)
    assert eng.prior() is None
