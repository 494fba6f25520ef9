import dataclasses

import pytest

from marginalia.events import (
    ItemsChanged,
    LabelsChanged,
    ModelChanged,
    PredictionChanged,
    SettingChanged,
    UndoStateChanged,
)
from marginalia.exceptions import ParameterError, StoreError
from marginalia.project import Session
from marginalia.types import AnchorLabel, BoundaryLabel, EventSpanLabel, RegionKind, RegionLabel, WarpAnchorLabel


@pytest.fixture
def session(tmp_path):
    s = Session.create(tmp_path / "p.marginalia", author="tester")
    yield s
    s.close()


def _fill(s):
    seg = s.add_item("chr1", "cgh", "segmentation", meta={"profile": 8, "chrom": "1"})
    ali = s.add_item("piece", "audio+score", "alignment")
    war = s.add_item("pair", "audio", "warping", item_id="pair-1")
    labels = [
        RegionLabel(seg, start=0, stop=10, kind=RegionKind.ZERO, author="a"),
        RegionLabel(seg, start=10, stop=30, kind=RegionKind.ONE),
        BoundaryLabel(seg, index=44),
        AnchorLabel(ali, event=3, time_s=1.25, tolerance_s=0.1),
        EventSpanLabel(ali, first=2, last=5, t0_s=0.5, t1_s=2.0),
        WarpAnchorLabel(war, ta=3, tb=7),
    ]
    for lab in labels:
        s.add_label(lab)
    return seg, ali, war, labels


def test_save_close_reopen_gives_identical_items_and_labels(tmp_path):
    path = tmp_path / "p.marginalia"
    with Session.create(path) as s:
        seg, ali, war, labels = _fill(s)
        s.change_label(dataclasses.replace(labels[1], stop=31))
        s.delete_label(labels[2].id)
        s.undo()
        items, all_labels, h = s.items(), s.labels(), s.labels_hash()
        assert (s.can_undo, s.can_redo) == (True, True)
        assert len(all_labels) == 6
    with Session.open(path) as s:
        assert s.items() == items
        assert s.labels() == all_labels
        assert s.labels_hash() == h
        # undo and redo reach this session's steps only: the earlier ones are in the history
        assert (s.can_undo, s.can_redo) == (False, False) and s.undo() is None and s.redo() is None
        assert s.label(labels[1].id).stop == 31
        assert s.item(war).id == "pair-1"
        assert s.item(seg).meta == {"profile": 8, "chrom": "1"}
        assert s.integrity_check() == []
        # the undone deletion stays reachable: restoring the state after it is one new, undoable step
        deletion = [st for st in s.history() if st.kind == "edit" and st.deleted == 1]
        assert len(deletion) == 1 and deletion[0].undone
        assert s.restore(deletion[0].id) is not None
        assert labels[2].id not in {lab.id for lab in s.labels(seg)}
        assert s.undo() is not None and labels[2].id in {lab.id for lab in s.labels(seg)}


def test_label_validation(session):
    seg = session.add_item("x", "series", "segmentation")
    ali = session.add_item("y", "audio", "alignment")
    with pytest.raises(ParameterError, match="no item with id 'nope'"):
        session.add_label(BoundaryLabel("nope", index=3))
    with pytest.raises(ParameterError, match="is a segmentation label, but item"):
        session.add_label(BoundaryLabel(ali, index=3))
    lab = session.add_label(BoundaryLabel(seg, index=3))
    with pytest.raises(ParameterError, match="already exists"):
        session.add_label(lab)
    with pytest.raises(ParameterError, match="cannot move between items"):
        session.change_label(dataclasses.replace(lab, item_id=ali))
    with pytest.raises(ParameterError, match="no label with id"):
        session.delete_label("missing")
    with pytest.raises(ParameterError, match="expected one of"):
        session.add_label("not a label")
    with pytest.raises(ParameterError, match="task: expected one of"):
        session.add_item("z", "series", "clustering")
    with pytest.raises(ParameterError, match="meta: expected a dict"):
        session.add_item("z", "series", "segmentation", meta=[1])
    with pytest.raises(ParameterError, match="already exists"):
        session.add_item("z", "series", "segmentation", item_id=seg)
    with pytest.raises(StoreError, match="failed"):
        session.add_label(BoundaryLabel(seg, id="bad\ud800id", index=3))
    assert session.labels() == [lab]
    assert not session.can_redo
    assert session.integrity_check() == []


def test_change_to_identical_content_is_not_an_edit(session):
    seg = session.add_item("x", "series", "segmentation")
    lab = session.add_label(BoundaryLabel(seg, index=3))
    n = session.store.log_length()
    session.change_label(lab)
    assert session.store.log_length() == n


def test_undo_redo_basics_and_new_edit_clears_redo(session):
    seg = session.add_item("x", "series", "segmentation")
    assert not session.can_undo and not session.undo() and not session.redo()
    a = session.add_label(BoundaryLabel(seg, index=3))
    b = session.add_label(BoundaryLabel(seg, index=5))
    session.change_label(dataclasses.replace(a, index=4))
    assert session.undo() and session.label(a.id).index == 3
    assert session.undo() and [lab.id for lab in session.labels(seg)] == [a.id]
    assert session.redo() and {lab.id for lab in session.labels(seg)} == {a.id, b.id}
    assert session.can_redo
    session.delete_label(a.id)
    assert not session.can_redo and not session.redo()
    assert session.undo() and session.label(a.id).index == 3
    assert session.integrity_check() == []


def test_events_are_emitted_after_each_change(session):
    seen = []
    session.events.subscribe(seen.append)
    seg = session.add_item("x", "series", "segmentation")
    lab = session.add_label(BoundaryLabel(seg, index=3))
    session.undo()
    session.set_setting("zoom", 2)
    session.save_model("m1", "segmentation", {"C": 1.0}, b"w", session.labels_hash())
    session.save_prediction(seg, "m1", b"pred")
    assert seen == [
        ItemsChanged((seg,)),
        LabelsChanged(seg, (lab.id,)),
        UndoStateChanged(True, False),
        LabelsChanged(seg, (lab.id,)),
        UndoStateChanged(False, True),
        SettingChanged("zoom"),
        ModelChanged("m1"),
        PredictionChanged(seg, "m1"),
    ]


def test_subscriber_sees_the_committed_state(session):
    seg = session.add_item("x", "series", "segmentation")
    observed = []
    session.events.subscribe(lambda e: observed.append(len(session.labels(seg))), kinds=LabelsChanged)
    session.add_label(BoundaryLabel(seg, index=3))
    session.undo()
    assert observed == [1, 0]


def test_remove_item_drops_its_labels_and_history(session):
    a = session.add_item("a", "series", "segmentation")
    b = session.add_item("b", "series", "segmentation")
    la = session.add_label(BoundaryLabel(a, index=3))
    lb = session.add_label(BoundaryLabel(b, index=3))
    session.remove_item(b)
    assert [it.id for it in session.items()] == [a]
    assert session.labels() == [la]
    assert session.undo()  # undoes the add on a, the edit on b is gone
    assert session.labels() == [] and not session.can_undo
    assert session.integrity_check() == []
    with pytest.raises(ParameterError):
        session.label(lb.id)


def test_models_predictions_settings(session):
    seg = session.add_item("x", "series", "segmentation")
    assert session.latest_model("segmentation") is None
    h = session.labels_hash([seg])
    m1 = session.save_model("m1", "segmentation", {"C": 0.1}, b"\x00\x01", h)
    session.save_model("m2", "segmentation", {"C": 0.2}, bytearray(b"\x02"), h)
    assert m1.blob is None and m1.label_hash == h
    assert [m.id for m in session.models()] == ["m1", "m2"]
    assert session.latest_model("segmentation").blob == b"\x02"
    assert session.load_model("m1").params == {"C": 0.1}
    with pytest.raises(ParameterError, match="already exists"):
        session.save_model("m1", "segmentation", {}, b"", h)
    with pytest.raises(ParameterError, match="no model with id"):
        session.load_model("m9")
    with pytest.raises(ParameterError, match="save the model first"):
        session.save_prediction(seg, "m9", b"")
    session.save_prediction(seg, "m1", b"p1")
    session.save_prediction(seg, "m2", b"p2")
    assert session.prediction(seg).blob == b"p2"
    assert session.prediction(seg, "m1").model_id == "m1"
    assert session.get_setting("missing", 7) == 7
    session.set_setting("view", {"zoom": [1, 2.5], "name": "é"})
    assert session.get_setting("view") == {"zoom": [1, 2.5], "name": "é"}
    with pytest.raises(ParameterError, match="not JSON-serialisable"):
        session.set_setting("bad", object())


def test_labels_hash_tracks_content(session):
    a = session.add_item("a", "series", "segmentation")
    b = session.add_item("b", "series", "segmentation")
    empty = session.labels_hash()
    session.add_label(BoundaryLabel(a, index=3))
    h1 = session.labels_hash()
    assert h1 != empty and session.labels_hash([b]) == empty
    session.undo()
    assert session.labels_hash() == empty
    with pytest.raises(ParameterError, match="iterable of item ids"):
        session.labels_hash(a)


def test_closed_and_read_only_sessions_refuse_edits(tmp_path):
    path = tmp_path / "p.marginalia"
    s = Session.create(path)
    seg = s.add_item("x", "series", "segmentation")
    s.close()
    s.close()
    with pytest.raises(StoreError, match="closed"):
        s.add_label(BoundaryLabel(seg, index=2))
    with Session.open(path, read_only=True) as r:
        assert [it.id for it in r.items()] == [seg]
        with pytest.raises(StoreError, match="read-only"):
            r.add_label(BoundaryLabel(seg, index=2))
        with pytest.raises(StoreError, match="read-only"):
            r.set_setting("k", 1)


def test_create_refuses_an_existing_file_and_open_a_missing_one(tmp_path):
    path = tmp_path / "p.marginalia"
    Session.create(path).close()
    with pytest.raises(StoreError, match="already exists"):
        Session.create(path)
    with pytest.raises(StoreError, match="does not exist"):
        Session.open(tmp_path / "nope.marginalia")
    with pytest.raises(StoreError, match="it is not a file"):
        Session.open(tmp_path)


@pytest.mark.slow
def test_concurrent_edits_from_threads_stay_consistent(session):
    import threading

    seg = session.add_item("x", "series", "segmentation")
    undone = []
    seen = []
    session.events.subscribe(seen.append, kinds=LabelsChanged)
    errors = []

    def worker(k):
        try:
            for i in range(15):
                session.add_label(BoundaryLabel(seg, id=f"t{k}-{i}", index=i + 1))
                if i % 4 == 3:
                    undone.append(session.undo())
                session.labels(seg)
        except Exception as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=worker, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert all(undone) and len(undone) == 12
    assert len(session.labels(seg)) == 4 * 15 - 12
    assert len(seen) == 4 * 15 + 12
    assert session.integrity_check() == []


def test_time_based_backups(tmp_path):
    from marginalia.project.backups import list_backups
    path = tmp_path / "p.marginalia"
    with Session.create(path, backup_every_edits=1000, backup_every_s=0.05) as s:
        seg = s.add_item("x", "series", "segmentation")
        n0 = len(list_backups(path))
        s.add_label(BoundaryLabel(seg, index=2))
        import time
        time.sleep(0.1)
        s.add_label(BoundaryLabel(seg, index=3))
        assert s.store.wait_for_backups(timeout=30)
        assert len(list_backups(path)) > n0


@pytest.mark.slow
def test_add_labels_is_one_all_or_nothing_transaction(session):
    seg = session.add_item("x", "series", "segmentation")
    ali = session.add_item("y", "audio", "alignment")
    writes = session.store.write_count
    batch = [BoundaryLabel(seg, index=i + 1) for i in range(50)] + [AnchorLabel(ali, event=1, time_s=0.5)]
    seen = []
    session.events.subscribe(seen.append, kinds=LabelsChanged)
    assert session.add_labels(batch) == batch
    assert session.store.write_count == writes + 1
    assert {e.item_id for e in seen} == {seg, ali} and sum(len(e.label_ids) for e in seen) == 51
    assert len(session.labels()) == 51
    with pytest.raises(ParameterError, match="already exists"):
        session.add_labels([BoundaryLabel(seg, id="new", index=2), batch[0]])
    with pytest.raises(ParameterError, match="already exists"):
        session.add_labels([BoundaryLabel(seg, id="twin", index=2), BoundaryLabel(seg, id="twin", index=3)])
    assert len(session.labels()) == 51 and session.add_labels([]) == []
    assert session.undo() and session.labels() == []  # the batch is one undo step
    assert session.redo() and len(session.labels()) == 51
    single = session.add_label(BoundaryLabel(seg, index=99))
    session.add_labels([BoundaryLabel(seg, index=100)])  # a batch of one is an ordinary step
    assert session.undo() and session.undo() and len(session.labels()) == 51
    assert single.id not in {lab.id for lab in session.labels()}
    assert session.undo() and session.labels() == [] and not session.can_undo
    assert session.integrity_check() == []
    session.close()
    with Session.open(session.path) as again:  # the grouping survives a reopen, in the history
        batch_step = again.history()[0]
        assert batch_step.kind == "edit" and batch_step.added == 51 and batch_step.undone
        assert again.restore(batch_step.id).added == 51 and len(again.labels()) == 51
        assert again.undo() and again.labels() == []


def test_old_models_are_pruned_per_task_kind_with_their_predictions(session):
    seg = session.add_item("x", "series", "segmentation")
    h = session.labels_hash([seg])
    for k in range(4):
        session.save_model(f"cgh{k}", "segmentation", {"task": "cgh"}, bytes([k]), h, keep=2)
        session.save_prediction(seg, f"cgh{k}", bytes([k]))
    session.save_model("audio0", "segmentation", {"task": "audio"}, b"a", h, keep=2)
    # the two newest cgh models stay; the other kind is counted on its own
    assert [m.id for m in session.models()] == ["cgh2", "cgh3", "audio0"]
    assert session.prediction(seg, "cgh1") is None and session.prediction(seg, "cgh3").blob == b"\x03"
    assert session.latest_model("segmentation").id == "audio0"
    assert session.integrity_check() == []
    with pytest.raises(ParameterError, match="keep"):
        session.save_model("m", "segmentation", {}, b"", h, keep=0)


def test_several_changes_and_deletions_are_one_step_that_survives_a_reopen(tmp_path):
    path = tmp_path / "edits.marginalia"
    with Session.create(path) as s:
        seg, _, _, labels = _fill(s)
        suggestion = dataclasses.replace(labels[1], suggested=True)
        s.change_label(suggestion)
        accepted = dataclasses.replace(suggestion, suggested=False)
        digest = s.labels_hash([seg])
        assert s.edit_labels(changed=[accepted, labels[0]], deleted=[labels[2].id], name="accept and tidy") == \
            [accepted]                                   # labels[0] is unchanged: not an edit
        assert {lab.id for lab in s.labels(seg)} == {labels[0].id, labels[1].id}
        assert s.history()[-1].name == "accept and tidy" and s.labels_hash([seg]) != digest
        s.undo()                                        # one undo takes back the change and the deletion
        assert s.label(labels[1].id).suggested and s.label(labels[2].id) == labels[2]
        s.redo()
        with pytest.raises(ParameterError, match="edited twice in one step"):
            s.edit_labels(changed=[labels[0]], deleted=[labels[0].id])
        assert s.edit_labels() == []
    with Session.open(path) as s:
        assert not s.label(labels[1].id).suggested and labels[2].id not in {lab.id for lab in s.labels()}


def test_suggestions_stay_out_of_the_label_set_digest(session):
    seg, _, _, labels = _fill(session)
    digest = session.labels_hash([seg])
    session.add_label(RegionLabel(seg, start=40, stop=60, kind=RegionKind.ZERO, suggested=True))
    assert session.labels_hash([seg]) == digest and len(session.labels(seg)) == 4
