"""The engine facade on aCGH-like data: import, label, learn, predict, query, export, reopen."""

import numpy as np
import pytest

from marginalia import events as ev
from marginalia.engine import Engine
from marginalia.exceptions import DataFormatError, InfeasibleLabelsError, ParameterError
from marginalia.types import BoundaryLabel, RegionKind, RegionLabel


def _write_profiles(path, n_profiles=2, chroms=("1", "2"), T=300, seed=0):
    rng = np.random.default_rng(seed)
    rows = ["profile.id,chromosome,position,logratio"]
    truth = {}
    for prof in range(1, n_profiles + 1):
        for chrom in chroms:
            mu = np.zeros(T)
            a, b = sorted(rng.choice(np.arange(40, T - 40), 2, replace=False))
            mu[a:b] = rng.choice([-0.7, 0.7])
            x = mu + 0.15 * rng.standard_normal(T)
            truth[f"{prof}:{chrom}"] = (a, b)
            rows += [f"{prof},{chrom},{1000 + 700 * i},{x[i]:.5f}" for i in range(T)]
    path.write_text("\n".join(rows) + "\n")
    return truth


def test_a_batch_with_a_bad_file_imports_nothing_and_a_reimport_adds_nothing(project):
    eng, truth, tmp = project
    before = sorted(i.id for i in eng.items())
    more = tmp / "more.csv"
    _write_profiles(more, n_profiles=1, seed=7)
    bad = tmp / "broken.wav"
    bad.write_bytes(bytes(range(256)) * 4)
    with pytest.raises(DataFormatError, match="broken.wav"):
        eng.import_files([more, bad])
    assert sorted(i.id for i in eng.items()) == before          # not half of the batch
    assert eng.import_files([tmp / "profiles.csv"]) == []         # the same file again: already there
    added = eng.import_files([more])
    assert len(added) > 0 and len(eng.items()) == len(before) + len(added)


def test_a_profile_table_missing_its_logratio_column_is_refused_naming_it(project):
    # it was read as a generic series: one meaningless sample per row from the id and position columns
    eng, _, tmp = project
    before = len(eng.items())
    bad = tmp / "no_logratio.csv"
    bad.write_text("profile.id,chromosome,position\n1,1,100\n1,1,200\n")
    with pytest.raises(DataFormatError, match="missing column 'logratio'"):
        eng.import_files([bad])
    assert len(eng.items()) == before


def _ids(eng):
    return {i.name: i.id for i in eng.items()}


def test_import_makes_one_item_per_profile_and_chromosome(project):
    eng, truth, _ = project
    infos = eng.items()
    assert sorted(i.name for i in infos) == sorted(truth)
    assert all(i.kind == "cgh" and i.task == "segmentation" and i.n_samples == 300 for i in infos)


def test_prediction_finds_clear_changes_and_obeys_labels(project):
    eng, truth, _ = project
    ids = _ids(eng)
    item = ids["1:1"]
    a, b = truth["1:1"]
    pred = eng.predict(item)
    assert set(pred.structure.breakpoints.tolist()) == {a, b}
    assert pred.runner_up is not None and pred.runner_up != pred.structure and pred.margin >= 0
    # the drawn margin is the one the browser and the queue show: uncertainty = exp(-margin)
    info = next(i for i in eng.items() if i.id == item)
    assert info.uncertainty == pytest.approx(np.exp(-pred.margin), rel=1e-9)
    # a label saying "no change here" around the first change must be obeyed by the redraw
    eng.add_label(RegionLabel(item_id=item, start=a - 10, stop=a + 10, kind=RegionKind.ZERO))
    eng.add_label(BoundaryLabel(item_id=item, index=20))
    pred = eng.predict(item)
    bps = pred.structure.breakpoints
    assert not np.any((bps > a - 10) & (bps < a + 10))
    assert 20 in bps.tolist()


def test_impossible_label_is_refused_with_the_conflict_named(project):
    eng, _, _ = project
    item = _ids(eng)["1:1"]
    zero = eng.add_label(RegionLabel(item_id=item, start=10, stop=60, kind="0"))
    with pytest.raises(InfeasibleLabelsError) as info:
        eng.add_label(RegionLabel(item_id=item, start=20, stop=40, kind="1"))
    assert zero.id in " ".join(info.value.label_ids) + str(info.value)
    with pytest.raises(ParameterError, match="300 samples"):
        eng.add_label(RegionLabel(item_id=item, start=250, stop=400, kind="0"))
    assert len(eng.labels(item)) == 1


def test_update_and_retrain_change_the_model_and_mark_predictions_stale(project):
    eng, truth, _ = project
    ids = _ids(eng)
    item = ids["2:2"]
    first = eng.predict(item)
    seen = []
    eng.events.subscribe(seen.append, kinds=ev.PredictionChanged)
    a, b = truth["2:2"]
    # teach a wrong-looking fact: no change anywhere in this chromosome -> the model must move
    eng.add_label(RegionLabel(item_id=item, start=0, stop=300, kind="0"))
    new_id = eng.update_model(item)
    assert new_id != first.model_id
    assert any(i.prediction_stale for i in eng.items() if i.id == item)
    pred = eng.predict(item)
    assert pred.structure.n_segments == 1 and pred.model_id == new_id
    assert seen and seen[-1].item_id == item
    assert eng.retrain() is not None


def test_next_queries_rank_parts_and_stop_signal_is_reported(project):
    eng, _, _ = project
    queries = eng.next_queries(3)
    assert len(queries) == 3 and [q.rank for q in queries] == [0, 1, 2]
    assert queries[0].uncertainty >= queries[1].uncertainty >= queries[2].uncertainty
    assert len({q.item_id for q in queries}) == 3
    rnd = eng.next_queries(2, strategy="random")
    assert len(rnd) == 2
    with pytest.raises(ParameterError, match="best-vs-2nd"):
        eng.next_queries(2, strategy="no-such-strategy")
    sig = eng.stopping_signal()
    assert set(sig) >= {"eta", "fired", "evidence"}


def test_labels_models_survive_reopening(project):
    eng, truth, tmp = project
    item = _ids(eng)["1:2"]
    eng.add_label(RegionLabel(item_id=item, start=0, stop=300, kind="0"))
    model_id = eng.update_model(item)
    path = eng.path
    eng.close()
    again = Engine.open(path)
    try:
        assert [lab.kind for lab in again.labels(item)] == [RegionKind.ZERO]
        assert again.model_id(item) == model_id
        assert again.predict(item).structure.n_segments == 1
    finally:
        again.close()
    # keep the fixture's close() harmless
    project[0].session = again.session


def test_export_and_reimport_annotations_round_trip(project, tmp_path):
    eng, truth, _ = project
    ids = _ids(eng)
    eng.add_label(RegionLabel(item_id=ids["1:1"], start=5, stop=30, kind="0"))
    eng.add_label(RegionLabel(item_id=ids["2:1"], start=5, stop=290, kind=">=1"))
    out = tmp_path / "annotations.csv"
    eng.export("annotations-csv", out)
    written = out.read_text()
    assert "0breakpoints" in written
    other = Engine.create(tmp_path / "q.marginalia")
    try:
        other.import_files([tmp_path / "profiles.csv"])
        other.import_labels("annotations-csv", out)
        got = sorted((lab.start, lab.stop, lab.kind.value) for i in other.items() for lab in other.labels(i.id))
        assert got == [(5, 30, "0"), (5, 290, ">=1")]
        assert other.import_labels("annotations-csv", out) == []   # the same table again states nothing new
        assert sum(len(other.labels(i.id)) for i in other.items()) == 2
        assert other.undo()  # an import is one undo step
        assert sum(len(other.labels(i.id)) for i in other.items()) == 0
    finally:
        other.close()
    for kind, name in (("segments-csv", "segments.csv"), ("breaks-csv", "breaks.csv")):
        eng.export(kind, tmp_path / name)
        lines = (tmp_path / name).read_text().splitlines()
        assert len(lines) > 1
    bundle = eng.export("bundle", tmp_path / "bundle")
    assert any(p.name == "manifest.json" for p in bundle)


def test_accept_prediction_turns_a_span_into_labels(project):
    eng, truth, _ = project
    item = _ids(eng)["1:1"]
    a, b = truth["1:1"]
    eng.predict(item)
    labels = eng.accept_prediction(item, 0, 300)
    kinds = sorted(type(lab).__name__ for lab in labels)
    assert kinds.count("BoundaryLabel") == 2
    assert {lab.index for lab in labels if isinstance(lab, BoundaryLabel)} == {a, b}
    # accepting the same span again adds nothing: the labels already say it
    n = len(eng.labels(item))
    assert eng.accept_prediction(item, 0, 300) == []
    assert len(eng.labels(item)) == n


def test_prediction_scores_are_the_models_scores(project):
    """The task reads the scores off the decoder's costs: they must equal ``⟨w, φ(X, y)⟩``."""
    eng, truth, _ = project
    item = _ids(eng)["1:1"]
    a, b = truth["1:1"]
    eng.add_label(RegionLabel(item_id=item, start=a - 20, stop=a + 20, kind=RegionKind.ONE))
    eng.update_model(item)
    pred = eng.predict(item)
    task = eng._tasks.get(eng.session.item(item))
    X, w = task.features(item), task.w
    best, second = task.model.second_best(X, w, constraints=task.model.constraints(eng.labels(item), X.shape[0]))
    assert pred.structure == best and pred.runner_up == second
    s_best, s_second = task.model.score(X, best, w), task.model.score(X, second, w)
    assert pred.score == pytest.approx(s_best, rel=1e-9, abs=1e-9)
    # the margin is counted in change penalties
    assert pred.margin * task.model.penalty(w) == pytest.approx(max(s_best - s_second, 0.0), rel=1e-6, abs=1e-6)


def test_item_info_is_the_items_row(project):
    eng, truth, _ = project
    item = _ids(eng)["1:2"]
    eng.add_label(RegionLabel(item_id=item, start=0, stop=10, kind=RegionKind.ZERO))
    assert eng.item_info(item) == next(i for i in eng.items() if i.id == item)   # before any prediction
    eng.predict(item)
    info = eng.item_info(item)
    assert info == next(i for i in eng.items() if i.id == item)
    assert info.n_labels == 1 and info.has_prediction and info.uncertainty is not None


def test_reopening_reads_parsed_profiles_back_and_an_edited_file_is_parsed_again(project, monkeypatch):
    import os

    import marginalia.io.cgh as cgh

    eng, truth, tmp = project
    parsed = {i.name: eng.sequence(i.id) for i in eng.items()}
    eng.close()

    def no_parsing(*args, **kwargs):
        raise AssertionError("the CSV was parsed again")

    monkeypatch.setattr(cgh, "read_profiles", no_parsing)
    again = Engine.open(tmp / "p.marginalia")
    try:
        for info in again.items():
            seq, want = again.sequence(info.id), parsed[info.name]
            np.testing.assert_array_equal(seq.values, want.values)
            np.testing.assert_array_equal(seq.positions, want.positions)
            assert (seq.name, seq.group, seq.units, seq.kind, seq.feature_names, seq.meta) == \
                (want.name, want.group, want.units, want.kind, want.feature_names, want.meta)
    finally:
        again.close()
    monkeypatch.undo()
    _write_profiles(tmp / "profiles.csv", seed=1)          # same shape, other values: a changed file
    os.utime(tmp / "profiles.csv", ns=(1, 10**18))
    third = Engine.open(tmp / "p.marginalia")
    try:
        info = third.items()[0]
        assert not np.array_equal(third.sequence(info.id).values, parsed[info.name].values)
    finally:
        third.close()


def test_next_queries_interleave_tasks_measured_on_different_scales(project):
    from marginalia.types import Query

    eng, _, _ = project

    class Task:
        def __init__(self, name, item, values):
            self.name, self.item, self.values = name, item, values

        def item_ids(self):
            return [self.item]

        def queries(self, n, strategy, cancel=None):
            return [Query(self.item, 10 * i, 10 * i + 5, u, strategy, rank=i) for i, u in enumerate(self.values[:n])]

    eng._tasks.all = lambda: [Task("a", "A", [0.99, 0.98, 0.97]), Task("b", "B", [0.5, 0.1])]
    got = [(q.item_id, q.uncertainty, q.rank) for q in eng.next_queries(4)]
    assert got == [("A", 0.99, 0), ("B", 0.5, 1), ("A", 0.98, 2), ("B", 0.1, 3)]
    assert [q.item_id for q in eng.next_queries(4, task_name="b")] == ["B", "B"]


def test_add_labels_is_one_undo_step_and_refuses_a_conflicting_set(project):
    eng, truth, _ = project
    item = _ids(eng)["2:1"]
    added = eng.add_labels([RegionLabel(item_id=item, start=0, stop=20, kind=RegionKind.ZERO),
                            BoundaryLabel(item_id=item, index=50)])
    assert len(added) == 2 and len(eng.labels(item)) == 2
    assert eng.undo() and eng.labels(item) == []
    with pytest.raises(InfeasibleLabelsError):
        eng.add_labels([RegionLabel(item_id=item, start=0, stop=20, kind=RegionKind.ZERO),
                        BoundaryLabel(item_id=item, index=10)])
    assert eng.labels(item) == []


def test_a_bundle_brings_every_label_kind_back(project, tmp_path):
    from marginalia.types import label_fact
    eng, truth, _ = project
    ids = _ids(eng)
    eng.add_label(RegionLabel(item_id=ids["1:1"], start=5, stop=30, kind="0"))
    eng.add_label(BoundaryLabel(item_id=ids["1:2"], index=120))     # not in annotations.csv: only in the bundle
    eng.export("bundle", tmp_path / "bundle")
    names = {i.id: i.name for i in eng.items()}
    # what each label states, with the item named rather than by its project-specific id
    expected = sorted((names[lab.item_id], label_fact(lab)[0]) + label_fact(lab)[2:] for lab in eng.labels())
    other = Engine.create(tmp_path / "q.marginalia")
    try:
        other.import_files([tmp_path / "profiles.csv"])
        assert len(other.import_labels("bundle", tmp_path / "bundle")) == 2
        names2 = {i.id: i.name for i in other.items()}
        got = sorted((names2[lab.item_id], label_fact(lab)[0]) + label_fact(lab)[2:] for lab in other.labels())
        assert got == expected
        assert other.import_labels("bundle", tmp_path / "bundle") == []     # nothing new the second time
        with pytest.raises(DataFormatError, match="no manifest.json"):
            other.import_labels("bundle", tmp_path)
    finally:
        other.close()


def test_one_ranking_gives_every_whole_item_its_margin_for_the_browser(project):
    eng, truth, _ = project
    assert all(i.uncertainty is None for i in eng.items())     # nothing drawn yet
    ranked = eng.next_queries(2)
    infos = {i.id: i for i in eng.items()}
    assert all(info.uncertainty is not None for info in infos.values())
    assert infos[ranked[0].item_id].uncertainty == pytest.approx(ranked[0].uncertainty)


def test_a_ranking_after_the_model_changed_replaces_the_browsers_margins(project):
    """The browser's margins are the newest model's, not those an older ranking or prediction left behind."""
    eng, truth, _ = project
    ids = _ids(eng)
    eng.next_queries(10)
    before = {i.id: i.uncertainty for i in eng.items()}
    eng.predict(ids["1:1"])                   # a prediction under the old model leaves its own value too
    eng.add_label(RegionLabel(item_id=ids["2:2"], start=0, stop=300, kind="0"))
    eng.update_model(ids["2:2"])
    ranked = {q.item_id: q.uncertainty for q in eng.next_queries(10) if (q.start, q.stop) == (0, 300)}
    assert set(ranked) == set(ids.values())
    infos = {i.id: i for i in eng.items()}
    assert {i: infos[i].uncertainty for i in ranked} == pytest.approx(ranked, rel=1e-12)
    assert any(before[i] != pytest.approx(ranked[i]) for i in ranked)   # the model change moved them


def test_labels_that_only_segments_shorter_than_the_decoders_could_satisfy_are_refused(project):
    # a change at probe 1 (or two changes 2 probes apart) leaves a segment of fewer than 3 probes: the
    # redraw could never obey it, so it is refused when it is made, not at every redraw after
    eng, _, _ = project
    item = _ids(eng)["1:1"]
    with pytest.raises(InfeasibleLabelsError, match="at least 3 probes"):
        eng.add_label(BoundaryLabel(item_id=item, index=1))
    eng.add_label(BoundaryLabel(item_id=item, index=100))
    with pytest.raises(InfeasibleLabelsError, match="at least 3 probes"):
        eng.add_label(BoundaryLabel(item_id=item, index=102))
    eng.add_label(BoundaryLabel(item_id=item, index=103))
    eng.predict(item)


def test_a_contradicting_label_is_refused_in_the_terms_of_the_labels_panel(project):
    # the user reads the conflict as kinds and positions (Mb), not as label ids; the ids stay on the error
    eng, _, _ = project
    item = _ids(eng)["1:1"]
    seq = eng.sequence(item)
    boundary = eng.add_label(BoundaryLabel(item_id=item, index=100))
    region = RegionLabel(item_id=item, start=50, stop=150, kind=RegionKind.ZERO)
    with pytest.raises(InfeasibleLabelsError) as err:
        eng.add_label(region)
    text = str(err.value)
    assert f"new label: no change (0): {seq.positions[50] / 1e6:.3f} Mb" in text
    assert f"boundary at {seq.positions[100] / 1e6:.3f} Mb" in text
    assert boundary.id not in text and region.id not in text
    assert set(err.value.label_ids) == {boundary.id, region.id}
    assert [lab.id for lab in eng.labels(item) if lab.id in (boundary.id, region.id)] == [boundary.id]
