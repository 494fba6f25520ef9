"""Undo/redo stacks derived from the label edit log.

The log is append-only; undo and redo are themselves log entries naming the
edit they revert or re-apply. Replaying the log from the start therefore
rebuilds both the current labels and the undo/redo stacks exactly, which is
how a project reopened after a crash keeps its history.
"""

from __future__ import annotations

from typing import Iterable, Optional

from ..exceptions import StoreError

__all__ = ["EditHistory", "replay_log"]


class EditHistory:
    """Two stacks of ``(seq, item_id)`` of user edits (add/change/delete)."""

    def __init__(self):
        self.undo_stack: list = []
        self.redo_stack: list = []

    @property
    def can_undo(self) -> bool:
        return bool(self.undo_stack)

    @property
    def can_redo(self) -> bool:
        return bool(self.redo_stack)

    def next_undo(self) -> Optional[int]:
        """Seq of the edit the next undo reverts."""
        return self.undo_stack[-1][0] if self.undo_stack else None

    def next_redo(self) -> Optional[int]:
        """Seq of the edit the next redo re-applies."""
        return self.redo_stack[-1][0] if self.redo_stack else None

    def edited(self, seq: int, item_id: str) -> None:
        """A new user edit: it can be undone, and nothing can be redone any more."""
        self.undo_stack.append((seq, item_id))
        self.redo_stack.clear()

    def undone(self, target: int) -> None:
        if not self.undo_stack or self.undo_stack[-1][0] != target:
            raise StoreError(f"edit log is inconsistent: undo of edit {target}, but the next undo is "
                             f"{self.next_undo()}")
        self.redo_stack.append(self.undo_stack.pop())

    def redone(self, target: int) -> None:
        if not self.redo_stack or self.redo_stack[-1][0] != target:
            raise StoreError(f"edit log is inconsistent: redo of edit {target}, but the next redo is "
                             f"{self.next_redo()}")
        self.undo_stack.append(self.redo_stack.pop())

    def item_removed(self, item_id: str) -> None:
        """Forget the edits of a removed item (they can no longer be undone)."""
        self.undo_stack = [e for e in self.undo_stack if e[1] != item_id]
        self.redo_stack = [e for e in self.redo_stack if e[1] != item_id]


def _forward(labels: dict, op: str, label_id: str, item_id: str, before, after) -> None:
    if op in ("add", "change"):
        labels[label_id] = (item_id, after)
    elif op == "delete":
        labels.pop(label_id, None)


def _backward(labels: dict, op: str, label_id: str, item_id: str, before, after) -> None:
    if op == "add":
        labels.pop(label_id, None)
    elif op in ("change", "delete"):
        labels[label_id] = (item_id, before)


def replay_log(rows: Iterable, *, with_labels: bool = True):
    """Rebuild the current labels and the undo/redo stacks from log rows.

    Parameters
    ----------
    rows : iterable of tuple
        ``(seq, op, label_id, item_id, before, after, target)`` in increasing ``seq``.
        ``before``/``after`` may be None when ``with_labels`` is False.
    with_labels : bool
        Also rebuild the labels (otherwise only the stacks).

    Returns
    -------
    labels : dict
        ``label_id -> (item_id, label_json)`` (empty when ``with_labels`` is False).
    history : EditHistory
    """
    labels: dict = {}
    history = EditHistory()
    edits: dict = {}
    for seq, op, label_id, item_id, before, after, target in rows:
        if op in ("add", "change", "delete"):
            edits[seq] = (op, label_id, item_id, before, after)
            history.edited(seq, item_id)
            if with_labels:
                _forward(labels, op, label_id, item_id, before, after)
        elif op in ("undo", "redo"):
            if target not in edits:
                raise StoreError(f"edit log is inconsistent: entry {seq} ({op}) names unknown edit {target}")
            if op == "undo":
                history.undone(target)
                if with_labels:
                    _backward(labels, *edits[target])
            else:
                history.redone(target)
                if with_labels:
                    _forward(labels, *edits[target])
        elif op == "remove_item":
            history.item_removed(item_id)
            if with_labels:
                for lid in [k for k, v in labels.items() if v[0] == item_id]:
                    del labels[lid]
        else:
            raise StoreError(f"edit log is inconsistent: entry {seq} has unknown operation {op!r}")
    return labels, history
