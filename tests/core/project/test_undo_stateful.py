"""Undo/redo against an in-memory model of the expected state (hypothesis stateful testing)."""

import dataclasses
import shutil
import tempfile
from pathlib import Path

import pytest
from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from marginalia.project import Session
from marginalia.types import BoundaryLabel, RegionKind, RegionLabel


class UndoMachine(RuleBasedStateMachine):
    """The model: current labels by id, and stacks of steps, lists of (before, after) pairs (None = absent)."""

    def __init__(self):
        super().__init__()
        self.dir = Path(tempfile.mkdtemp(prefix="undo-machine-"))
        self.path = self.dir / "p.marginalia"
        self.session = Session.create(self.path)
        self.items = [self.session.add_item(n, "series", "segmentation") for n in "ab"]
        self.model = {}
        self.undo_stack, self.redo_stack = [], []
        self.clock = 0

    def _apply(self, pairs, *, backwards=False):
        """Set the model's labels to each pair's ``after`` (``before`` going backwards; None deletes)."""
        for before, after in (reversed(pairs) if backwards else pairs):
            lid = (after or before).id
            state = before if backwards else after
            if state is None:
                del self.model[lid]
            else:
                self.model[lid] = state

    def _edit(self, *pairs):
        self._apply(pairs)
        self.undo_stack.append(list(pairs))
        self.redo_stack.clear()

    def _new_label(self, item, start, length, kind):
        self.clock += 1
        if kind is None:
            return BoundaryLabel(item, id=f"l{self.clock}", created=float(self.clock), index=start + 1)
        return RegionLabel(item, id=f"l{self.clock}", created=float(self.clock), start=start,
                           stop=start + length + 1, kind=kind)

    @rule(item=st.integers(0, 1), start=st.integers(0, 50), length=st.integers(1, 20),
          kind=st.sampled_from([None, *RegionKind]))
    def add(self, item, start, length, kind):
        label = self._new_label(self.items[item % len(self.items)], start, length, kind)
        assert self.session.add_label(label) == label
        self._edit((None, label))

    @rule(spec=st.lists(st.tuples(st.integers(0, 1), st.integers(0, 50), st.integers(1, 20),
                                  st.sampled_from([None, *RegionKind])), min_size=1, max_size=4))
    def add_many(self, spec):
        labels = [self._new_label(self.items[i % len(self.items)], start, length, kind)
                  for i, start, length, kind in spec]
        assert self.session.add_labels(labels) == labels
        self._edit(*[(None, lab) for lab in labels])  # one undo step

    @precondition(lambda self: self.model)
    @rule(data=st.data(), shift=st.integers(1, 9))
    def change(self, data, shift):
        lid = data.draw(st.sampled_from(sorted(self.model)))
        old = self.model[lid]
        if isinstance(old, BoundaryLabel):
            new = dataclasses.replace(old, index=old.index + shift)
        else:
            new = dataclasses.replace(old, stop=old.stop + shift)
        self.session.change_label(new)
        self._edit((old, new))

    @precondition(lambda self: self.model)
    @rule(data=st.data())
    def delete(self, data):
        lid = data.draw(st.sampled_from(sorted(self.model)))
        old = self.model[lid]
        self.session.delete_label(lid)
        self._edit((old, None))

    @rule()
    def undo(self):
        done = self.session.undo() is not None
        assert done == bool(self.undo_stack)
        if done:
            step = self.undo_stack.pop()
            self._apply(step, backwards=True)
            self.redo_stack.append(step)

    @rule()
    def redo(self):
        done = self.session.redo() is not None
        assert done == bool(self.redo_stack)
        if done:
            step = self.redo_stack.pop()
            self._apply(step)
            self.undo_stack.append(step)

    @precondition(lambda self: len(self.items) > 1)
    @rule()
    def remove_second_item(self):
        gone = self.items.pop()
        self.session.remove_item(gone)
        self.model = {k: v for k, v in self.model.items() if v.item_id != gone}
        for stack in (self.undo_stack, self.redo_stack):
            kept = [[p for p in step if (p[1] or p[0]).item_id != gone] for step in stack]
            stack[:] = [step for step in kept if step]

    @rule()
    def reopen(self):
        self.session.close()
        self.session = Session.open(self.path)
        self.undo_stack, self.redo_stack = [], []  # undo and redo reach this session's steps only

    @invariant()
    def state_matches_the_model(self):
        assert self.session.labels() == sorted(self.model.values(), key=lambda lab: (lab.created, lab.id))
        assert self.session.can_undo == bool(self.undo_stack)
        assert self.session.can_redo == bool(self.redo_stack)

    def teardown(self):
        try:
            assert self.session.integrity_check() == []
            self.session.close()
            with Session.open(self.path, read_only=True) as again:
                assert again.labels() == sorted(self.model.values(), key=lambda lab: (lab.created, lab.id))
        finally:
            self.session.close()
            shutil.rmtree(self.dir, ignore_errors=True)


UndoMachine.TestCase.settings = settings(max_examples=25, stateful_step_count=20, deadline=None)
TestUndoRedo = UndoMachine.TestCase
TestUndoRedo.pytestmark = [pytest.mark.slow]
