"""A deterministic stream of label edits and an in-memory model of their effect.

The kill tests run the same stream in a child process (through a real
Session) and in the parent (through :class:`EditModel`), so the parent knows
the exact state after every edit the child reported.
"""

import dataclasses
import random

from marginalia.types import BoundaryLabel, RegionKind, RegionLabel


class EditModel:
    """Labels by id plus undo/redo stacks of ``(session, step)``; a step is a list of (before, after) pairs.

    None in a pair means the label is absent. Undo and redo reach only the steps made in the current
    session (:meth:`new_session` is a reopen), as in :class:`marginalia.project.Session`; the stacks
    themselves are those the edit log replays to (``store.history()``).
    """

    def __init__(self, labels=None):
        self.labels = dict(labels or {})
        self.undo_stack = []
        self.redo_stack = []
        self.session = 0

    def new_session(self):
        """The project was opened again: earlier steps are out of undo's and redo's reach."""
        self.session += 1

    def _set(self, lid, value):
        if value is None:
            self.labels.pop(lid, None)
        else:
            self.labels[lid] = value

    def apply(self, op):
        kind = op[0]
        if kind in ("add", "change", "delete", "add_many"):
            if kind == "add":
                step = [(None, op[1])]
            elif kind == "add_many":
                step = [(None, lab) for lab in op[1]]
            elif kind == "change":
                step = [(self.labels[op[1].id], op[1])]
            else:
                step = [(self.labels[op[1]], None)]
            for before, after in step:
                self._set((after or before).id, after)
            self.undo_stack.append((self.session, step))
            self.redo_stack.clear()
        elif kind == "undo" and self.undo_stack and self.undo_stack[-1][0] == self.session:
            entry = self.undo_stack.pop()
            for before, after in reversed(entry[1]):
                self._set((after or before).id, before)
            self.redo_stack.append(entry)
        elif kind == "redo" and self.redo_stack and self.redo_stack[-1][0] == self.session:
            entry = self.redo_stack.pop()
            for before, after in entry[1]:
                self._set((after or before).id, after)
            self.undo_stack.append(entry)

    def snapshot(self):
        return dict(self.labels), bool(self.undo_stack), bool(self.redo_stack)


def next_op(rng: random.Random, labels: dict, item_id: str, tag: str, i: int):
    """Choose the next edit from the current labels (``id -> label``)."""
    r = rng.random()
    ids = sorted(labels)
    if r < 0.05:
        return ("add_many", [_new_label(rng, item_id, f"{tag}-{i}.{k}") for k in range(rng.randrange(2, 6))])
    if r < 0.45 or not ids:
        return ("add", _new_label(rng, item_id, f"{tag}-{i}"))
    if r < 0.6:
        old = labels[rng.choice(ids)]
        if isinstance(old, BoundaryLabel):
            return ("change", dataclasses.replace(old, index=old.index + rng.randrange(1, 5)))
        return ("change", dataclasses.replace(old, stop=old.stop + rng.randrange(1, 5)))
    if r < 0.72:
        return ("delete", rng.choice(ids))
    if r < 0.88:
        return ("undo",)
    return ("redo",)


def _new_label(rng, item_id, label_id):
    start = rng.randrange(0, 500)
    created = float(rng.randrange(1, 10**9))
    if rng.random() < 0.5:
        return BoundaryLabel(item_id, id=label_id, created=created, author="script", index=start + 1)
    return RegionLabel(item_id, id=label_id, created=created, start=start,
                       stop=start + rng.randrange(2, 40), kind=rng.choice(list(RegionKind)))


def apply_to_session(session, op):
    kind = op[0]
    if kind == "add":
        session.add_label(op[1])
    elif kind == "add_many":
        session.add_labels(op[1])
    elif kind == "change":
        session.change_label(op[1])
    elif kind == "delete":
        session.delete_label(op[1])
    elif kind == "undo":
        session.undo()
    else:
        session.redo()
