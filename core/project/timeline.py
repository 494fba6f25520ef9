"""The project's history as a person reads it: named steps built from the append-only edit log.

The edit log (:mod:`.store`) records every label edit, undo, redo and item removal of the
project's whole life, across sessions. This module groups its rows into *steps* (one user
action each: a drawn region, an import of 676 labels, the undo of that import, a restore)
and names them, so that the history panel, ``marginalia-cli history`` and the undo menu
can say what each step did. The labels as they were after any step are the log replayed
up to that step (:func:`labels_after`); :meth:`Session.restore` brings them back as one
new step, so no state the project ever had is lost, even on a redo branch that a new edit
made unreachable by Ctrl+Shift+Z.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Optional

from .history import replay_log

__all__ = ["Step", "build_timeline", "labels_after", "items_at", "describe_items"]

_EDIT_OPS = ("add", "change", "delete", "item")


@dataclass(frozen=True)
class Step:
    """One step of a project's history.

    Attributes
    ----------
    id : int
        The seq of the step's first edit-log entry: stable for the project's life
        (``marginalia-cli restore P --to ID``).
    last : int
        The seq of its last entry; the labels "after this step" are the log replayed up to here.
    kind : {"edit", "undo", "redo", "remove_item"}
        What the step was; restores and imports are edits with a name.
    name : str
        What it did, in words ("import of 676 labels from annotations.csv", "undo of ...").
    time : float
        Unix time of its first entry.
    author : str
        Who made it (the session's author), may be empty.
    added, changed, deleted : int
        Its effect on the labels: the undo of an added label counts as deleted.
    item_ids : tuple of str
        The items whose labels it touched, in order of first appearance.
    target : int or None
        For an undo or redo: the id of the step it reverted or re-applied.
    undone : bool
        An edit step that was undone and not redone since (its state may have come back
        through a restore: that is a step of its own).
    undone_by : int or None
        For such a step, the id of the undo step that reverted it.
    """

    id: int
    last: int
    kind: str
    name: str
    time: float
    author: str
    added: int
    changed: int
    deleted: int
    item_ids: tuple
    target: Optional[int] = None
    undone: bool = False
    undone_by: Optional[int] = None

    @property
    def n_labels(self) -> int:
        """How many labels the step added, changed or deleted."""
        return self.added + self.changed + self.deleted

    @property
    def effect(self) -> str:
        """``"676 added"``, ``"1 changed, 2 deleted"`` or ``"no label"``: the counts in words."""
        parts = [f"{n} {what}" for n, what in ((self.added, "added"), (self.changed, "changed"),
                                                (self.deleted, "deleted")) if n]
        return ", ".join(parts) or "no label"


def _plural(n: int, word: str) -> str:
    return f"{n} {word}{'' if n == 1 else 's'}"


def describe_items(item_ids: Iterable[str], item_names: dict, limit: int = 3) -> str:
    """``"1:2"`` or ``"12 items (1:1, 1:2, 2:1, ...)"``: the items a step touched, by name."""
    ids = list(item_ids)
    names = [item_names.get(i, i[:8]) for i in ids]
    if len(names) == 1:
        return names[0]
    shown = ", ".join(names[:limit]) + (", ..." if len(names) > limit else "")
    return f"{len(names)} items ({shown})"


def _edit_name(added: int, changed: int, deleted: int, items: str) -> str:
    counts = [(added, "add"), (changed, "change"), (deleted, "delete")]
    present = [(n, verb) for n, verb in counts if n]
    where = f" on {items}" if items else ""
    if len(present) == 1:
        n, verb = present[0]
        return f"{verb} {_plural(n, 'label')}{where}"
    total = added + changed + deleted
    detail = ", ".join(f"{n} {verb}{'d' if verb.endswith('e') else 'ed'}" for n, verb in present)
    return f"edit of {_plural(total, 'label')}{where} ({detail})"


class _Draft:
    """A step being gathered from consecutive log rows."""

    def __init__(self, key, kind, row):
        self.key, self.kind = key, kind
        self.id = self.last = row[0]
        self.time, self.author = row[8], row[9]
        self.counts = {"add": 0, "change": 0, "delete": 0}
        self.items: dict = {}
        self.target: Optional[int] = None
        self.removed_item: Optional[str] = None


def build_timeline(rows: Iterable, names: Optional[dict] = None, item_names: Optional[dict] = None) -> list:
    """Group edit-log rows into named :class:`Step` s.

    Parameters
    ----------
    rows : iterable of tuple
        ``(seq, op, label_id, item_id, before, after, target, batch, time, author)`` in
        increasing ``seq`` (:meth:`ProjectStore.timeline_rows`).
    names : dict, optional
        ``seq -> name`` of the named steps (:meth:`ProjectStore.step_names`).
    item_names : dict, optional
        ``item id -> name`` used in the derived names (ids shortened when unknown).

    Returns
    -------
    list of Step
        Oldest first. Edits sharing a batch are one step; the undo or redo entries of one
        step written together are one step; an item removal is one step.
    """
    names = names or {}
    item_names = item_names or {}
    drafts: list = []
    step_of: dict = {}   # edit seq -> id of its step
    op_of: dict = {}     # edit seq -> its op
    undone: dict = {}    # id of an undone edit step -> id of the undo step
    for row in rows:
        seq, op, _label_id, item_id, _before, _after, target, batch = row[:8]
        if op in _EDIT_OPS:
            key = ("edit", batch) if batch is not None else None
            kind = "edit"
        elif op in ("undo", "redo"):
            key = (op, step_of.get(target))
            kind = op
        else:
            key, kind = None, op
        cur = drafts[-1] if drafts else None
        if cur is None or key is None or cur.key != key:
            cur = _Draft(key, kind, row)
            drafts.append(cur)
        cur.last = seq
        if op in _EDIT_OPS:
            step_of[seq] = cur.id
            op_of[seq] = op
            if op != "item":
                cur.counts[op] += 1
            cur.items.setdefault(item_id, None)
        elif op in ("undo", "redo"):
            cur.target = step_of.get(target)
            original = op_of.get(target, "change")
            if op == "undo":
                original = {"add": "delete", "delete": "add"}.get(original, original)
                undone[cur.target] = cur.id
            else:
                undone.pop(cur.target, None)
            if original != "item":
                cur.counts[original] += 1
            cur.items.setdefault(item_id, None)
        else:
            cur.removed_item = item_id
    by_id = {d.id: d for d in drafts}
    steps = []
    for d in drafts:
        added, changed, deleted = d.counts["add"], d.counts["change"], d.counts["delete"]
        item_ids = tuple(d.items)
        if d.kind in ("undo", "redo") and d.target in by_id:   # in the order of the step it acts on
            item_ids = tuple(i for i in by_id[d.target].items if i in d.items)
        if d.kind == "edit":
            name = names.get(d.id) or _edit_name(added, changed, deleted, describe_items(d.items, item_names))
        elif d.kind in ("undo", "redo"):
            original = by_id.get(d.target)
            what = (names.get(original.id) or _edit_name(*(original.counts[k] for k in ("add", "change", "delete")),
                                                          describe_items(original.items, item_names))
                    if original is not None else "an edit")
            name = f"{d.kind} of {what}"
        else:
            name = f"removal of item {item_names.get(d.removed_item, d.removed_item)} with its labels"
        steps.append(Step(id=d.id, last=d.last, kind=d.kind, name=name, time=d.time, author=d.author or "",
                          added=added, changed=changed, deleted=deleted, item_ids=item_ids,
                          target=d.target, undone=d.kind == "edit" and d.id in undone,
                          undone_by=undone.get(d.id) if d.kind == "edit" else None))
    return steps


def labels_after(rows: Iterable) -> dict:
    """``label_id -> (item_id, label_json)``: the labels after the last of ``rows`` (log rows from the first).

    ``rows`` are :meth:`ProjectStore.timeline_rows` (or :meth:`~ProjectStore.log_rows`) from the
    start of the log up to the step of interest.
    """
    return replay_log((r[:8] for r in rows), with_labels=True)[0]


def items_at(rows: Iterable, last: int) -> dict:
    """``item_id -> item_json`` (None: removed) right after log entry ``last``, for every item an item edit touched.

    ``rows`` are the whole log (:meth:`ProjectStore.timeline_rows`). An item whose first item edit
    comes after ``last`` was, at ``last``, what that edit's ``before`` holds. Items no item edit
    touched are not listed: their record is the one of now.
    """
    items: dict = {}
    edits: dict = {}
    for seq, op, _label_id, item_id, before, after, target, _batch in (r[:8] for r in rows):
        if seq > last:
            if op == "item" and item_id not in items:
                items[item_id] = before
            continue
        if op == "item":
            edits[seq] = (item_id, before, after)
            items[item_id] = after
        elif op in ("undo", "redo") and target in edits:
            item_id, before, after = edits[target]
            items[item_id] = before if op == "undo" else after
        elif op == "remove_item":
            items[item_id] = None
    return items
