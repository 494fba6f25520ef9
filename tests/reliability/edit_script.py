"""A deterministic stream of label edits and an in-memory model of their effect.

The kill tests run the same stream in a child process (through a real
Session) and in the parent (through :class:`EditModel`), so the parent knows
the exact state after every edit the child reported.
"""

import dataclasses
import random

from core.types import BoundaryLabel, RegionKind, RegionLabel


class EditModel:
    """Labels by id plus undo/redo stacks of (before, after) pairs (None = label absent)."""

    def __init__(self, labels=None):
        self.labels = dict(labels or {})
        self.undo_stack = []
        self.redo_stack = []

    def _set(self, lid, value):
        if value is None:
            self.labels.pop(lid, None)
        else:
            self.labels[lid] = value

    def apply(self, op):
        kind = op[0]
        if kind in ("add", "change", "delete"):
            if kind == "add":
                before, after = None, op[1]
            elif kind == "change":
                before, after = self.labels[op[1].id], op[1]
            else:
                before, after = self.labels[op[1]], None
            self._set((after or before).id, after)
            self.undo_stack.append((before, after))
            self.redo_stack.clear()
        elif kind == "undo" and self.undo_stack:
            before, after = self.undo_stack.pop()
            self._set((after or before).id, before)
            self.redo_stack.append((before, after))
        elif kind == "redo" and self.redo_stack:
            before, after = self.redo_stack.pop()
            self._set((after or before).id, after)
            self.undo_stack.append((before, after))

    def snapshot(self):
        return dict(self.labels), bool(self.undo_stack), bool(self.redo_stack)


def next_op(rng: random.Random, labels: dict, item_id: str, tag: str, i: int):
    """Choose the next edit from the current labels (``id -> label``)."""
    r = rng.random()
    ids = sorted(labels)
    if r < 0.45 or not ids:
        start = rng.randrange(0, 500)
        created = float(rng.randrange(1, 10**9))
        if rng.random() < 0.5:
            lab = BoundaryLabel(item_id, id=f"{tag}-{i}", created=created, author=tag, index=start + 1)
        else:
            lab = RegionLabel(item_id, id=f"{tag}-{i}", created=created, start=start,
                              stop=start + rng.randrange(2, 40), kind=rng.choice(list(RegionKind)))
        return ("add", lab)
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


def apply_to_session(session, op):
    kind = op[0]
    if kind == "add":
        session.add_label(op[1])
    elif kind == "change":
        session.change_label(op[1])
    elif kind == "delete":
        session.delete_label(op[1])
    elif kind == "undo":
        session.undo()
    else:
        session.redo()
