"""Sync anchors stored in a project: saved at once, undone like labels, obeyed by every sync, learned from."""

import numpy as np
import pytest

from marginalia.engine import Engine
from marginalia.exceptions import InfeasibleLabelsError, ParameterError, UsageError
from marginalia.sync import SyncAligner, SyncFeatures
from marginalia.sync.anchors import anchored_truth
from marginalia.types import SyncAnchorLabel
from tests.core.sync.synthetic import three_takes_project


@pytest.fixture
def project(tmp_path):
    eng, ids, onsets = three_takes_project(tmp_path)
    yield eng, ids, onsets
    eng.close()


def test_anchors_are_stored_read_from_either_side_undone_redone_and_reopened(project, tmp_path):
    eng, ids, _ = project
    a, b, c = ids["a"], ids["b"], ids["c"]
    labels_before, hash_before = eng.labels(a), eng.session.labels_hash([a])
    first = eng.add_sync_anchor(a, b, 1.0, 1.2)
    second = eng.add_sync_anchor(b, a, 3.1, 2.5)                # made from b's side
    assert [(x.reference_s, x.target_s) for x in eng.sync_anchors(a, b)] == [(1.0, 1.2), (2.5, 3.1)]
    assert [(x.reference_s, x.target_s) for x in eng.sync_anchors(b, a)] == [(1.2, 1.0), (3.1, 2.5)]
    assert [x.id for x in eng.sync_anchors(a, b)] == [first.id, second.id] and eng.sync_anchors(a, c) == []
    # they are no label of a recording's task: not listed, counted or hashed with them
    assert eng.labels(a) == labels_before and eng.session.labels_hash([a]) == hash_before
    assert {i.name: i.n_labels for i in eng.items()} == {"a": 4, "b": 0, "c": 0}
    moved = eng.move_sync_anchor(second.id, a, 2.0, 3.0)       # moved from a's side, stored on b's
    assert (moved.reference_s, moved.target_s) == (2.0, 3.0)
    assert eng.session.label(second.id).item_id == b and eng.session.label(second.id).reference_s == 3.0
    with pytest.raises(InfeasibleLabelsError, match="crosses the anchor 1.00 s \u2194 1.20 s"):
        eng.add_sync_anchor(a, b, 0.5, 1.5)
    with pytest.raises(ParameterError, match="lies past the end of b"):
        eng.add_sync_anchor(a, b, 4.0, 99.0)
    with pytest.raises(UsageError, match="two different recordings"):
        eng.add_sync_anchor(a, a, 1.0, 1.0)
    assert eng.delete_sync_anchors([first.id]) == 1
    names = [step.name for step in eng.history()][-4:]
    assert names[0].startswith("sync anchor 1.00 s of a \u2194 1.20 s of b")
    assert names[2].startswith("move sync anchor to 2.00 s of a") and names[3] == "delete 1 sync anchor between a and b"
    times = lambda: [(x.reference_s, x.target_s) for x in eng.sync_anchors(a, b)]  # noqa: E731
    assert times() == [(2.0, 3.0)]
    eng.undo()
    assert times() == [(1.0, 1.2), (2.0, 3.0)]
    eng.undo()
    assert times() == [(1.0, 1.2), (2.5, 3.1)]
    eng.redo()
    assert times() == [(1.0, 1.2), (2.0, 3.0)]
    path = eng.path
    eng.close()
    again = Engine.open(path)
    try:
        assert [(x.reference_s, x.target_s) for x in again.sync_anchors(a, b)] == [(1.0, 1.2), (2.0, 3.0)]
        assert all(isinstance(x, SyncAnchorLabel) for x in again.sync_anchors(a, b))
    finally:
        again.close()


def test_attaching_a_score_keeps_the_recordings_sync_anchors_and_removing_the_partner_hides_them(project, tmp_path):
    eng, ids, _ = project
    a, b = ids["a"], ids["b"]
    eng.add_sync_anchor(a, b, 1.0, 1.2)
    eng.session.edit_item(a, eng.item(a).__class__(**{**eng.item(a).__dict__, "task": "alignment"}), name="task")
    assert eng.labels(a) == [] and len(eng.sync_anchors(a, b)) == 1
    eng.undo()
    assert len(eng.labels(a)) == 4 and len(eng.sync_anchors(a, b)) == 1
    with pytest.raises(ParameterError, match="no item with id 'nope'"):
        eng.session.add_label(SyncAnchorLabel(item_id=a, target_id="nope", reference_s=1.0, target_s=1.0))
    eng.remove_item(b)                       # the anchor stays on a, unused while b is gone; undo brings b back
    with pytest.raises(UsageError, match="nothing to learn the sync metric from"):
        eng.learn_sync_metric()
    eng.undo()
    assert len(eng.sync_anchors(a, b)) == 1


@pytest.mark.slow
def test_the_path_passes_through_every_stored_anchor_and_the_carry_uses_them(project):
    eng, ids, onsets = project
    a, b = ids["a"], ids["b"]
    free = eng.sync_recordings(a, b).path
    # an anchor off the free path by 0.4 s, and one where it already is
    off = (float(onsets["a"][10]), float(free.map_times([onsets["a"][10]])[0]) + 0.4)
    on = (float(onsets["a"][20]), float(free.map_times([onsets["a"][20]])[0]))
    eng.add_sync_anchor(a, b, *off)
    eng.add_sync_anchor(b, a, on[1], on[0])                    # stored from b's side: obeyed all the same
    compared = eng.sync_recordings(a, b, question=True)
    table = compared.path.table()
    frame = float(np.median(np.diff(np.unique(table[:, 0]))))
    for ref_s, tgt_s in (off, on):
        near = np.abs(table[:, 0] - ref_s) <= frame / 2 + 1e-9
        assert near.any() and np.min(np.abs(table[near, 1] - tgt_s)) <= frame / 2 + 1e-9
    assert [x.reference_s for x in compared.anchors] == [off[0], on[0]] and compared.model_id is None
    # the carry's path goes through them too: a boundary at the off anchor lands at its target time
    pos_a, pos_b = eng.sequence(a).positions, eng.sequence(b).positions
    from marginalia.types import BoundaryLabel
    index = int(np.searchsorted(pos_a, off[0]))
    eng.add_label(BoundaryLabel(item_id=a, index=index))
    eng.carry_labels(a, [b])
    carried = [lab for lab in eng.labels(b) if isinstance(lab, BoundaryLabel)]
    t_src = 0.5 * (pos_a[index - 1] + pos_a[index])
    expected = compared.path.map_times([t_src])[0]
    assert min(abs(pos_b[lab.index] - expected) for lab in carried) < 0.05
    assert abs(expected - off[1]) < 0.05


def _misleading_pair(TA=120, TB=150, frame_s=0.05, seed=0):
    """Two feature sequences whose chroma follows a wrong warp (three times louder) and whose onsets follow the
    true, even one: ``(fa, fb, true target frame of every reference frame)``."""
    rng = np.random.default_rng(seed)
    truth = np.round(np.arange(TA) * (TB - 1) / (TA - 1)).astype(int)
    inv = np.round(np.arange(TB) * (TA - 1) / (TB - 1)).astype(int)
    raw = rng.random((TA + 6, 12))
    chroma = np.array([raw[t:t + 7].mean(0) for t in range(TA)])
    onsets = rng.random((TA, 12)) ** 3
    wrong = np.clip(inv + np.round(10 * np.sin(np.pi * np.arange(TB) / TB)).astype(int), 0, TA - 1)
    Xa = np.hstack([3 * chroma, onsets, np.ones((TA, 1))])
    Xb = np.hstack([3 * chroma[wrong], onsets[inv] + 0.05 * rng.random((TB, 12)), np.ones((TB, 1))])
    return SyncFeatures(Xa, frame_s, 0.0, TA * frame_s), SyncFeatures(Xb, frame_s, 0.0, TB * frame_s), truth


def test_learning_from_six_anchors_weighs_the_descriptors_that_follow_them_and_the_free_path_finds_the_truth():
    fa, fb, truth = _misleading_pair()

    def error_s(aligner):
        got = aligner.predict(fa, fb, runner_up=False).map_times(fa.times())
        return float(np.mean(np.abs(got - fb.times()[truth])))

    euclidean = SyncAligner(train_pool=1)
    rows = np.linspace(10, 110, 6).astype(int)
    anchors = np.column_stack([fa.times()[rows], fb.times()[truth[rows]]])
    completed = anchored_truth(euclidean, fa, fb, anchors)
    assert np.all(np.isin(np.round(anchors / 0.05), np.round(completed / 0.05)))
    learned = SyncAligner(train_pool=1).fit([(fa, fb, completed)])
    w = learned.metric_weights()
    assert w[12] > 2 * w[0]                          # the onsets (which follow the anchors) outweigh the chroma
    assert error_s(euclidean) > 0.2 and error_s(learned) < 0.02


@pytest.mark.slow
def test_the_app_facade_learns_the_metric_from_stored_anchors_stores_it_and_later_syncs_use_it(project):
    import threading

    from marginalia.exceptions import CancelledError
    eng, ids, onsets = project
    a, b, c = ids["a"], ids["b"], ids["c"]
    with pytest.raises(UsageError, match="nothing to learn the sync metric from"):
        eng.learn_sync_metric()
    for k in (4, 12, 20):
        eng.add_sync_anchor(a, b, float(onsets["a"][k]), float(onsets["b"][k]))
    eng.add_sync_anchor(c, a, float(onsets["c"][8]), float(onsets["a"][8]))
    cancel = threading.Event()
    with pytest.raises(CancelledError):
        eng.learn_sync_metric(cancel=cancel, progress=lambda d, t, m: cancel.set())
    assert eng.sync_model_id is None
    steps = []
    report = eng.learn_sync_metric(options={"max_iter": 20}, progress=lambda d, t, m: steps.append((d, t)))
    assert (report.n_anchor_pairs, report.n_anchors, report.n_score_pairs) == (2, 4, 0)
    assert steps[0] == (1, 63) and steps[-1] == (63, 63) and len(steps) == 3 + report.n_iter + 1
    assert 1 <= report.n_rounds <= 3 and all(d <= 63 for d, _ in steps)
    assert eng.sync_model_id == report.model_id
    assert set(report.weights) == {"chroma", "onsets", "loudness"} and report.weights != {
        "chroma": 1.0, "onsets": 1.0, "loudness": 1.0}
    assert report.summary().startswith("Learned the sync metric from 4 sync anchors on 2 pairs (")
    compared = eng.sync_recordings(a, b)
    assert compared.model_id == report.model_id
    carried = compared.path.map_times(onsets["a"])
    assert np.median(np.abs(carried - onsets["b"])) < 0.03
    # the model is the project's, no version of an item task's model: its versions are listed apart
    assert [(v["id"], v["task"], v["current"]) for v in eng.model_versions(a) if v["id"].startswith("sync@")] == [
        (report.model_id, "sync", True)]


@pytest.mark.slow
def test_two_recordings_aligned_to_the_same_score_are_a_free_training_pair(tmp_path):
    from marginalia.io import write_midi, write_wav
    from marginalia.types import AnchorLabel, MidiScore
    from tests.core.sync.synthetic import SR, note_plan, stretched_pair
    ya, yb, on_a, on_b = stretched_pair(0)
    pitches, _ = note_plan(0)
    write_midi(tmp_path / "melody.mid", MidiScore(pitches=pitches, onsets_s=on_a, offsets_s=on_a + 0.3, name="melody"))
    for name, y in (("a", ya), ("b", yb)):
        write_wav(tmp_path / f"{name}.wav", y, SR)
    eng = Engine.create(tmp_path / "p.marginalia")
    try:
        eng.import_files([tmp_path / "a.wav", tmp_path / "b.wav"],
                         scores={str(tmp_path / n): str(tmp_path / "melody.mid") for n in ("a.wav", "b.wav")})
        ids = {it.name: it.id for it in eng.items()}
        assert {eng.item(i).task for i in ids.values()} == {"alignment"}
        # the person's score anchors: every note of both takes (the alignments the pair is learned from)
        eng.add_labels([AnchorLabel(item_id=ids[n], event=e, time_s=float(t))
                        for n, on in (("a", on_a), ("b", on_b)) for e, t in enumerate(on)])
        report = eng.learn_sync_metric(options={"max_iter": 20})
        assert (report.n_anchor_pairs, report.n_anchors, report.n_score_pairs, report.n_matched) == (0, 0, 1, 24)
        assert "from 1 score-aligned pair (24 matched notes)" in report.summary()
        assert report.weights != {"chroma": 1.0, "onsets": 1.0, "loudness": 1.0}
        carried = eng.sync_recordings(ids["a"], ids["b"]).path.map_times(on_a)
        assert np.median(np.abs(carried - on_b)) < 0.03
    finally:
        eng.close()


@pytest.mark.slow
def test_an_anchor_edit_recomputes_the_path_not_the_recordings_features(project, monkeypatch):
    from marginalia.sync import carry
    eng, ids, onsets = project
    computed = []
    original = SyncAligner.compute_features
    monkeypatch.setattr(SyncAligner, "compute_features",
                        lambda self, y, sr: computed.append(y.shape[0]) or original(self, y, sr))
    eng.sync_recordings(ids["a"], ids["b"])
    eng.add_sync_anchor(ids["a"], ids["b"], float(onsets["a"][5]), float(onsets["b"][5]))
    eng.sync_recordings(ids["a"], ids["b"], question=True)
    assert len(computed) == 2
    monkeypatch.setattr(carry, "FEATURES_KEPT", 2)
    eng.sync_recordings(ids["a"], ids["c"])                    # c pushes out b, the least recently used
    eng.sync_recordings(ids["b"], ids["c"])
    assert len(computed) == 4


def test_with_two_anchors_one_fit_keeps_the_wrong_warp_and_the_latent_alternation_finds_the_truth():
    from marginalia.sync.anchors import fit_from_anchors
    fa, fb, truth = _misleading_pair()

    def error_s(aligner):
        got = aligner.predict(fa, fb, runner_up=False).map_times(fa.times())
        return float(np.mean(np.abs(got - fb.times()[truth])))

    rows = np.array([10, 110])
    anchors = np.column_stack([fa.times()[rows], fb.times()[truth[rows]]])
    once, made, passes = fit_from_anchors(SyncAligner(train_pool=1), [(fa, fb, anchors)], rounds=1)
    assert made == 1 and error_s(once) > 0.2
    again, made, passes = fit_from_anchors(SyncAligner(train_pool=1), [(fa, fb, anchors)])
    assert made == 3 and passes > 100 and error_s(again) < 0.02
    w = again.metric_weights()
    assert w[12] > 10 * w[0]
    # no anchored pair: one fit on the matched ones, the alternation has nothing to complete
    matched = np.column_stack([fa.times(), fb.times()[truth]])
    plain, made, _ = fit_from_anchors(SyncAligner(train_pool=1), [], [(fa, fb, matched)])
    assert made == 1 and error_s(plain) < 0.02
