"""Random edit sequences through the Session API end in success or a project exception, never damage."""

import dataclasses
import shutil
import tempfile
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from marginalia.exceptions import MarginaliaError
from marginalia.project import Session
from tests.core.project.labels_strategies import any_label, ids

ITEMS = ["seg", "ali", "war", "ghost"]  # "ghost" is never added

ops = st.one_of(
    st.tuples(st.just("add"), st.sampled_from(ITEMS), any_label),
    st.tuples(st.just("add_many"), st.lists(st.tuples(st.sampled_from(ITEMS), any_label), max_size=4)),
    st.tuples(st.just("change"), st.sampled_from(ITEMS), any_label),
    st.tuples(st.just("change_existing"), st.integers(0, 50), st.integers(-3, 3)),
    st.tuples(st.just("delete"), ids),
    st.tuples(st.just("delete_existing"), st.integers(0, 50)),
    st.tuples(st.just("undo")),
    st.tuples(st.just("redo")),
    st.tuples(st.just("remove_item"), st.sampled_from(ITEMS)),
    st.tuples(st.just("add_item"), st.sampled_from(ITEMS), st.sampled_from(["segmentation", "alignment",
                                                                            "warping", "bogus"])),
    st.tuples(st.just("setting"), st.text(max_size=3), st.one_of(st.integers(), st.floats(), st.text(max_size=3))),
    st.tuples(st.just("reopen")),
)


def _apply(session, op):
    kind = op[0]
    if kind == "add":
        session.add_label(dataclasses.replace(op[2], item_id=op[1]))
    elif kind == "add_many":
        session.add_labels([dataclasses.replace(lab, item_id=item) for item, lab in op[1]])
    elif kind == "change":
        session.change_label(dataclasses.replace(op[2], item_id=op[1]))
    elif kind == "change_existing":
        labels = session.labels()
        if labels:
            lab = labels[op[1] % len(labels)]
            field = next(f for f in ("index", "stop", "event", "last", "ta") if hasattr(lab, f))
            session.change_label(dataclasses.replace(lab, **{field: getattr(lab, field) + op[2]}))
    elif kind == "delete":
        session.delete_label(op[1])
    elif kind == "delete_existing":
        labels = session.labels()
        if labels:
            session.delete_label(labels[op[1] % len(labels)].id)
    elif kind == "undo":
        session.undo()
    elif kind == "redo":
        session.redo()
    elif kind == "remove_item":
        session.remove_item(op[1])
    elif kind == "add_item":
        session.add_item(op[1], "series", op[2], item_id=op[1])
    elif kind == "setting":
        session.set_setting(op[1], op[2])


@settings(max_examples=30)
@given(st.lists(ops, max_size=25))
@pytest.mark.slow
def test_random_edit_sequences_never_damage_the_project(sequence):
    folder = Path(tempfile.mkdtemp(prefix="fuzz-"))
    path = folder / "p.marginalia"
    session = Session.create(path, backup_every_edits=5)
    try:
        for name, task in zip(ITEMS, ["segmentation", "alignment", "warping"]):
            session.add_item(name, "series", task, item_id=name)
        for op in sequence:
            if op[0] == "reopen":
                session.close()
                session = Session.open(path, backup_every_edits=5)
                continue
            before = (session.labels(), session.can_undo, session.can_redo, session.items())
            try:
                _apply(session, op)
            except MarginaliaError:
                # a refused call changes nothing
                assert (session.labels(), session.can_undo, session.can_redo, session.items()) == before
        assert session.integrity_check() == []
        full = session.store.history()   # the stacks the log replays to
        labels, items, undo = session.labels(), session.items(), (full.undo_stack, full.redo_stack)
        session.close()
        with Session.open(path) as again:
            assert again.labels() == labels
            assert again.items() == items
            assert not again.can_undo and not again.can_redo   # undo reaches this session's steps only
            full = again.store.history()
            assert (full.undo_stack, full.redo_stack) == undo
            assert again.integrity_check() == []
    finally:
        session.close()
        shutil.rmtree(folder, ignore_errors=True)
