"""No label state a project ever reached becomes unreachable through its history (hypothesis stateful testing).

The machine imports batches, adds, changes and deletes labels, removes items and changes their
records (as attaching a score does) with their labels, undoes, redoes, edits after an undo (which
ends what redo reaches), reopens the project (which ends what undo reaches) and restores past
steps. Every state it reaches is recorded with the step that produced it; the invariant is that
the history still lists that step and :meth:`Session.labels_at` gives back that exact state, and
the ``restore`` rule checks that restoring it reproduces the labels and the records of the items
of that state as one undoable step.
"""

import dataclasses
import shutil
import tempfile
from pathlib import Path

import pytest
from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from marginalia.project import Session
from marginalia.types import BoundaryLabel

#: Cases run by the machine (reported in the issue's closing note).
MAX_EXAMPLES = 40
STEPS = 25


def _key(labels) -> list:
    return sorted((lab.id, lab.item_id, lab.index) for lab in labels)


class HistoryMachine(RuleBasedStateMachine):
    def __init__(self):
        super().__init__()
        self.dir = Path(tempfile.mkdtemp(prefix="history-machine-"))
        self.path = self.dir / "p.marginalia"
        self.session = Session.create(self.path)
        self.items = [self.session.add_item(n, "series", "segmentation") for n in ("1:1", "1:2")]
        self.reached = []   # (step id, labels key, items key) of every state reached after a step
        self.clock = 0
        self.redo_steps = 0   # undos of this session not yet redone (what redo may reach)

    def _label(self, item):
        self.clock += 1
        return BoundaryLabel(item, id=f"l{self.clock}", created=float(self.clock), index=self.clock)

    def _present(self) -> list:
        return sorted(it.id for it in self.session.items())

    def _items_key(self) -> dict:
        return {it.id: it.meta for it in self.session.items()}

    def _record(self, step=None):
        step = step if step is not None else self.session.history()[-1]
        self.reached.append((step.id, _key(self.session.labels()), self._items_key()))
        return step

    @precondition(lambda self: self._present())
    @rule(n=st.integers(2, 8), data=st.data())
    def import_batch(self, n, data):
        item = data.draw(st.sampled_from(self._present()))
        labels = [self._label(item) for _ in range(n)]
        self.session.add_labels(labels, name=f"import of {n} labels from annotations.csv")
        step = self._record()
        assert step.name == f"import of {n} labels from annotations.csv" and step.added == n
        self.redo_steps = 0

    @precondition(lambda self: self._present())
    @rule(data=st.data())
    def add(self, data):
        self.session.add_label(self._label(data.draw(st.sampled_from(self._present()))))
        self._record()
        self.redo_steps = 0

    @precondition(lambda self: self.session.labels())
    @rule(data=st.data())
    def change(self, data):
        old = data.draw(st.sampled_from(self.session.labels()))
        self.session.change_label(dataclasses.replace(old, index=old.index + 1000))
        self._record()
        self.redo_steps = 0

    @precondition(lambda self: self.session.labels())
    @rule(data=st.data())
    def delete(self, data):
        old = data.draw(st.sampled_from(self.session.labels()))
        self.session.delete_label(old.id)
        self._record()
        self.redo_steps = 0

    @precondition(lambda self: self._present())
    @rule(data=st.data())
    def remove_item(self, data):
        item = data.draw(st.sampled_from(self._present()))
        self.session.edit_item(item, None, name=f"removal of {item}")
        self._record()
        self.redo_steps = 0

    @precondition(lambda self: self._present())
    @rule(data=st.data())
    def change_record(self, data):
        record = self.session.item(data.draw(st.sampled_from(self._present())))
        self.clock += 1
        self.session.edit_item(record.id, dataclasses.replace(record, meta={"score_path": f"s{self.clock}.mid"}),
                               name=f"attach score s{self.clock}.mid")
        self._record()
        self.redo_steps = 0

    @rule()
    def undo(self):
        expected = self.session.next_undo
        before = _key(self.session.labels())
        step = self.session.undo()
        assert (step is None) == (expected is None)
        if step is not None:
            assert step.id == expected.id and step.name == expected.name
            assert _key(self.session.labels()) != before or step.n_labels == 0
            undo_step = self.session.history()[-1]
            assert undo_step.kind == "undo" and undo_step.target == step.id
            self._record(undo_step)
            self.redo_steps += 1

    @rule()
    def redo(self):
        step = self.session.redo()
        assert (step is not None) == (self.redo_steps > 0)
        if step is not None:
            self._record()
            self.redo_steps -= 1

    @rule()
    def reopen(self):
        self.session.close()
        self.session = Session.open(self.path)
        assert not self.session.can_undo and not self.session.can_redo   # this session's steps only
        self.redo_steps = 0

    @precondition(lambda self: self.reached)
    @rule(data=st.data())
    def restore(self, data):
        step_id, state, items = data.draw(st.sampled_from(self.reached))
        before = _key(self.session.labels())
        new = self.session.restore(step_id)
        assert _key(self.session.labels()) == state
        now = self._items_key()
        assert all(now.get(item) == meta for item, meta in items.items())   # removed items are back
        if new is None:
            assert before == state
        else:
            assert new.kind == "edit" and new.name.startswith(f"restore to step {step_id} ")
            self._record(new)
            self.redo_steps = 0

    @invariant()
    def every_state_reached_is_in_the_history(self):
        ids = {step.id for step in self.session.history()}
        for step_id, state, _ in self.reached[-3:]:   # the newest each time; all of them at teardown
            assert step_id in ids
            assert _key(self.session.labels_at(step_id)) == state

    def teardown(self):
        try:
            assert self.session.integrity_check() == []
            ids = {step.id for step in self.session.history()}
            for step_id, state, _ in self.reached:
                assert step_id in ids
                assert _key(self.session.labels_at(step_id)) == state
        finally:
            self.session.close()
            shutil.rmtree(self.dir, ignore_errors=True)


HistoryMachine.TestCase.settings = settings(max_examples=MAX_EXAMPLES, stateful_step_count=STEPS, deadline=None)
TestHistory = HistoryMachine.TestCase
TestHistory.pytestmark = [pytest.mark.slow]


@pytest.mark.slow
def test_restore_brings_back_an_import_undone_and_overwritten(tmp_path):
    """The issue's scenario in the engine's terms: undo an import, edit, and get it back in one step."""
    path = tmp_path / "p.marginalia"
    with Session.create(path) as s:
        item = s.add_item("1:1", "series", "segmentation")
        s.add_labels([BoundaryLabel(item, index=i + 1) for i in range(676)],
                     name="import of 676 labels from annotations.csv")
    with Session.open(path) as s:
        assert s.undo() is None and len(s.labels()) == 676   # a stray Ctrl+Z cannot reach yesterday's import
        s.add_label(BoundaryLabel(item, index=900))
        assert s.undo().name == "add 1 label on 1:1" and len(s.labels()) == 676
        imported = s.history()[0]
        assert (imported.name, imported.added, imported.item_ids) == ("import of 676 labels from annotations.csv",
                                                                      676, (item,))
        # take the import back in this session (restore to before it is not possible: restore the deletion)
        s.delete_label(s.labels()[0].id)
        step = s.undo()
        assert step.name == "delete 1 label on 1:1"
        s.add_label(BoundaryLabel(item, index=901))      # a new edit after an undo: redo cannot reach the deletion
        assert not s.can_redo
        deletion = next(st for st in s.history() if st.name == "delete 1 label on 1:1")
        assert deletion.undone
        new = s.restore(deletion.id)
        assert new.deleted == 2 and len(s.labels()) == 675 and s.next_undo.id == new.id
        assert s.undo().id == new.id and len(s.labels()) == 677
        assert s.restore(deletion.id).id > new.id and s.restore(deletion.id) is None  # already there
