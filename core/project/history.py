"""Undo/redo stacks derived from the label edit log.

The log is append-only; undo and redo are themselves log entries naming the
edit they revert or re-apply. Replaying the log from the start therefore
rebuilds both the current labels and the undo/redo stacks exactly, which is
how a project reopened after a crash keeps its history.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Optional

from ..exceptions import StoreError

__all__ = ["EditHistory", "replay_log"]


class EditHistory:
    """Undo and redo stacks of *steps*; a step is a tuple of ``(seq, item_id)`` user edits.

    Most steps hold one edit; a batch (:meth:`Session.add_labels`) is one step,
    undone and redone as a whole.

    Undo and redo reach only the steps made after :attr:`floor` (a log seq): a session sets it
    to the newest entry of the log when the project is opened, so Ctrl+Z never reverts an edit
    of an earlier session (those are reached through the history,
    :meth:`Session.history` and :meth:`Session.restore`). The stacks themselves stay
    exactly those the log replays to.
    """

    def __init__(self, floor: int = 0):
        self.undo_stack: list = []
        self.redo_stack: list = []
        self.floor = floor
        self._last_batch = None
        self._partial: set = set()  # edits of the top step already reverted/re-applied (log replay only)

    def _reachable(self, stack: list) -> bool:
        return bool(stack) and stack[-1][0][0] > self.floor

    @property
    def can_undo(self) -> bool:
        return self._reachable(self.undo_stack)

    @property
    def can_redo(self) -> bool:
        return self._reachable(self.redo_stack)

    def next_undo(self) -> Optional[tuple]:
        """Seqs of the edits the next undo reverts (in the order they were made), or None."""
        return tuple(e[0] for e in self.undo_stack[-1]) if self.can_undo else None

    def next_redo(self) -> Optional[tuple]:
        """Seqs of the edits the next redo re-applies (in the order they were made), or None."""
        return tuple(e[0] for e in self.redo_stack[-1]) if self.can_redo else None

    def edited(self, seq: int, item_id: str, batch: Optional[int] = None) -> None:
        """A new user edit: it can be undone, and nothing can be redone any more.

        Consecutive edits with the same non-None ``batch`` form one step.
        """
        if batch is not None and batch == self._last_batch and self.undo_stack and not self.redo_stack:
            self.undo_stack[-1] = self.undo_stack[-1] + ((seq, item_id),)
        else:
            self.undo_stack.append(((seq, item_id),))
        self._last_batch = batch
        self.redo_stack.clear()
        self._partial.clear()

    def undone(self, targets) -> None:
        """The edits ``targets`` (seqs) of the top undo step were reverted."""
        self._move(self.undo_stack, self.redo_stack, targets, "undo")

    def redone(self, targets) -> None:
        """The edits ``targets`` (seqs) of the top redo step were re-applied."""
        self._move(self.redo_stack, self.undo_stack, targets, "redo")

    def _move(self, source: list, dest: list, targets, kind: str) -> None:
        targets = (targets,) if isinstance(targets, int) else tuple(targets)
        top = {e[0] for e in source[-1]} if source else set()
        if not set(targets) <= top - self._partial:
            raise StoreError(f"edit log is inconsistent: {kind} of edit(s) {list(targets)}, but the next {kind} "
                             f"is {sorted(top) or None}")
        self._partial.update(targets)
        if self._partial == top:  # a step moves once all its edits were handled
            dest.append(source.pop())
            self._partial.clear()
        self._last_batch = None

    def item_removed(self, item_id: str) -> None:
        """Forget the edits of a removed item (they can no longer be undone)."""
        self.undo_stack = _without(self.undo_stack, item_id)
        self.redo_stack = _without(self.redo_stack, item_id)
        self._last_batch = None
        self._partial.clear()


def _without(stack: list, item_id: str) -> list:
    out = []
    for step in stack:
        kept = tuple(e for e in step if e[1] != item_id)
        if kept:
            out.append(kept)
    return out


def _forward(labels: dict, op: str, label_id: str, item_id: str, before, after) -> None:
    # an item edit ("item") changes no label: the labels it takes away are delete edits of its step
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
        ``(seq, op, label_id, item_id, before, after, target, batch)`` in increasing ``seq``.
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
    for seq, op, label_id, item_id, before, after, target, batch in rows:
        if op in ("add", "change", "delete", "item"):
            edits[seq] = (op, label_id, item_id, before, after)
            history.edited(seq, item_id, batch)
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
