"""The Session: the single owner of a project's mutable state.

Items, labels, models, predictions, settings and the undo/redo history all
change only through a :class:`Session`. Every change is committed to the
:class:`~marginalia.project.store.ProjectStore` before the call returns (one
transaction per label edit), then the in-memory view is updated and events
are emitted through the session's :class:`~marginalia.events.EventHub`.

Examples
--------
>>> from marginalia.types import RegionLabel, RegionKind
>>> with Session.create(tmp_path / "demo.marginalia") as s:          # doctest: +SKIP
...     item = s.add_item("chr1", kind="cgh", task="segmentation")
...     lab = s.add_label(RegionLabel(item, start=0, stop=50, kind=RegionKind.ZERO))
...     s.undo()
"""

from __future__ import annotations

import copy
import dataclasses
import json
import threading
import time
from collections.abc import Iterable
from pathlib import Path
from typing import Optional

from ..checks import check_int, is_integer
from ..events import (
    EventHub,
    ItemsChanged,
    LabelsChanged,
    ModelChanged,
    PredictionChanged,
    SettingChanged,
    UndoStateChanged,
)
from ..exceptions import DataFormatError, ParameterError, ProjectDamagedError, StoreError
from .codec import canonical_json, dumps_label, labels_digest, loads_label, task_of_label
from .records import TASKS, ItemRecord, ModelRecord, PredictionRecord
from .sources import file_sha256, file_signature
from .store import LIBRARY_VERSION, ProjectStore

#: Models kept per task and model kind (``params["task"]``); older ones and their cached predictions are
#: deleted when a newer one is saved, so a project that is retrained after every label does not grow without end.
MODELS_KEPT = 5

__all__ = ["Session"]


def _require_str(name: str, value, *, allow_empty: bool = False) -> str:
    if not isinstance(value, str) or (not allow_empty and not value):
        raise ParameterError(f"{name}: expected a non-empty str, got {value!r}")
    return value


class Session:
    """Thread-safe owner of one project's items, labels, models and undo history.

    Use :meth:`create` or :meth:`open` (or pass an open store).

    Parameters
    ----------
    store : ProjectStore
        The open project store; the session owns it from now on.
    hub : EventHub, optional
        Where events go; a new hub when None (see :attr:`events`).
    author : str
        Written into the edit log for every label edit.
    """

    def __init__(self, store: ProjectStore, *, hub: Optional[EventHub] = None, author: str = ""):
        if not isinstance(store, ProjectStore):
            raise ParameterError(f"store: expected a ProjectStore, got {type(store).__name__}")
        self._store = store
        self.events = hub if hub is not None else EventHub()
        self.author = _require_str("author", author, allow_empty=True)
        self._lock = threading.RLock()
        self._items: dict = {}
        self._labels: dict = {}   # label id -> label
        self._by_item: dict = {}  # item id -> {label id -> label}
        self._load()

    def _load(self) -> None:
        for item in self._store.load_items():
            self._items[item.id] = item
            self._by_item[item.id] = {}
        for label_id, item_id, text in self._store.current_labels():
            try:
                label = loads_label(text)
            except DataFormatError as exc:
                raise ProjectDamagedError(f"project {self.path} is damaged: label {label_id!r} cannot be read "
                                          f"({exc})", backups=self._store.backups()) from None
            self._labels[label_id] = label
            self._by_item[item_id][label_id] = label
        self._history = self._store.history()
        # undo and redo reach this session's steps only; earlier ones are in history() and restore()
        self._history.floor = self._store.last_seq()

    # ----------------------------------------------------------- life cycle

    @classmethod
    def create(cls, path, *, hub: Optional[EventHub] = None, author: str = "", **store_options) -> "Session":
        """Create a new project file at ``path`` and open a session on it.

        ``store_options`` go to :class:`ProjectStore` (backup frequency...).
        """
        store = ProjectStore.create(path, **store_options)
        try:
            return cls(store, hub=hub, author=author)
        except BaseException:
            store.close()
            raise

    @classmethod
    def open(cls, path, *, read_only: bool = False, hub: Optional[EventHub] = None, author: str = "",
             **store_options) -> "Session":
        """Open an existing project.

        Raises
        ------
        ProjectInUseError
            Another process has it open for writing (``read_only=True`` still works).
        ProjectDamagedError
            The file is damaged; ``exc.backups`` lists good backups, newest first.
        ProjectVersionError
            It was written by a newer Marginalia.
        """
        store = ProjectStore.open(path, read_only=read_only, **store_options)
        try:
            return cls(store, hub=hub, author=author)
        except BaseException:
            store.close()
            raise

    def close(self) -> None:
        """Close the project (idempotent); the last state is already on disk."""
        with self._lock:
            self._store.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    @property
    def path(self) -> Path:
        return self._store.path

    @property
    def read_only(self) -> bool:
        return self._store.read_only

    @property
    def store(self) -> ProjectStore:
        """The underlying store (for backups and diagnostics; do not write through it)."""
        return self._store

    def _writable(self, what: str) -> None:
        if self._store.closed:
            raise StoreError(f"cannot {what}: project {self.path} is closed")
        if self._store.read_only:
            raise StoreError(f"cannot {what}: project {self.path} is open read-only")

    def _emit(self, events: Iterable) -> None:
        for event in events:
            self.events.emit(event)

    # ---------------------------------------------------------------- items

    def add_item(self, name: str, kind: str, task: str, source_path=None, meta: Optional[dict] = None,
                 item_id: Optional[str] = None) -> str:
        """Add an item and return its id.

        Parameters
        ----------
        name : str
        kind : str
            What the data is (``"cgh"``, ``"audio"``, ``"series"``, ``"audio+score"``...).
        task : {"segmentation", "alignment", "warping"}
        source_path : path, optional
            The file it comes from; its sha256, size and mtime are recorded.
        meta : dict, optional
            JSON-serialisable metadata.
        item_id : str, optional
            Defaults to a fresh random id.
        """
        _require_str("name", name, allow_empty=True)
        _require_str("kind", kind)
        if task not in TASKS:
            raise ParameterError(f"task: expected one of {TASKS}, got {task!r}")
        meta = {} if meta is None else meta
        if not isinstance(meta, dict):
            raise ParameterError(f"meta: expected a dict, got {type(meta).__name__}")
        canonical_json(meta)  # raises ParameterError if not JSON-serialisable
        if item_id is None:
            from ..types import new_id
            item_id = new_id()
        _require_str("item_id", item_id)
        digest = size = mtime = None
        if source_path is not None:
            source_path = Path(source_path).absolute()
            if not source_path.is_file():
                raise ParameterError(f"source_path: {source_path} is not an existing file")
            size, mtime = file_signature(source_path)
            digest = file_sha256(source_path)
            source_path = str(source_path)
        record = ItemRecord(id=item_id, name=name, kind=kind, task=task, source_path=source_path,
                            source_hash=digest, meta=copy.deepcopy(meta), size=size, mtime=mtime,
                            created=time.time())
        with self._lock:
            self._writable("add an item")
            if item_id in self._items:
                raise ParameterError(f"item_id: an item with id {item_id!r} already exists")
            self._store.insert_item(record)
            self._items[item_id] = record
            self._by_item[item_id] = {}
        self._emit([ItemsChanged((item_id,))])
        return item_id

    def items(self) -> list:
        """All items, oldest first, as :class:`ItemRecord`."""
        with self._lock:
            return [_copy_item(it) for it in self._items.values()]

    def item(self, item_id: str) -> ItemRecord:
        """One item; :class:`ParameterError` if unknown."""
        with self._lock:
            return _copy_item(self._get_item(item_id))

    def _get_item(self, item_id) -> ItemRecord:
        try:
            return self._items[item_id]
        except (KeyError, TypeError):
            raise ParameterError(f"item_id: no item with id {item_id!r} in {self.path.name}") from None

    def remove_item(self, item_id: str) -> None:
        """Remove an item, its labels and predictions; its edits leave the undo history."""
        with self._lock:
            self._writable("remove an item")
            self._get_item(item_id)
            before = (self._history.can_undo, self._history.can_redo)
            self._store.delete_item(item_id)
            removed = tuple(self._by_item.pop(item_id))
            for lid in removed:
                del self._labels[lid]
            del self._items[item_id]
            self._history.item_removed(item_id)
            events = [ItemsChanged((item_id,))]
            if removed:
                events.append(LabelsChanged(item_id, removed))
            events += self._undo_event(before)
        self._emit(events)

    def edit_item(self, item_id: str, record: Optional[ItemRecord] = None, *, name: str):
        """Put ``record`` in the place of an item (None: remove the item) as ONE undoable step of the history.

        The item's labels go in the same step (they describe the item as it was: a recording's
        segmentation labels mean nothing once it is aligned to a score), and come back with it on undo;
        a sync anchor (a moment of the recording matched to another recording) stays when the item stays.

        Parameters
        ----------
        item_id : str
        record : ItemRecord, optional
            The item's new record (same id), e.g. with a score in its meta and the alignment task.
        name : str
            The step's name in the history ("attach score x.mid to take1").

        Returns
        -------
        Step
            The new step (``undo`` takes it back).
        """
        from .store import item_json
        with self._lock:
            self._writable("change an item")
            old = self._get_item(item_id)
            if record is not None:
                if record.id != item_id:
                    raise ParameterError(f"record.id: expected {item_id!r}, got {record.id!r}")
                if record.task not in TASKS:
                    raise ParameterError(f"record.task: expected one of {TASKS}, got {record.task!r}")
                canonical_json(record.meta)
            labels = sorted((lab for lab in self._by_item[item_id].values()
                             if record is None or task_of_label(lab) != "sync"), key=lambda lab: (lab.created, lab.id))
            edits = [("delete", lab.id, item_id, dumps_label(lab), None) for lab in labels]
            edits.append(("item", None, item_id, item_json(old), None if record is None else item_json(record)))
            before = (self._history.can_undo, self._history.can_redo)
            seqs = self._store.apply_edits(edits, self.author, name=name)
            batch = seqs[0] if len(seqs) > 1 else None
            for lab in labels:
                del self._labels[lab.id]
            if record is None:
                del self._items[item_id]
                del self._by_item[item_id]
            else:
                self._items[item_id] = _copy_item(record)
                for lab in labels:
                    del self._by_item[item_id][lab.id]
            for seq in seqs:
                self._history.edited(seq, item_id, batch)
            events = [ItemsChanged((item_id,))]
            if labels:
                events.append(LabelsChanged(item_id, tuple(lab.id for lab in labels)))
            events += self._undo_event(before)
            step = self._describe_stack_top(self._history.next_undo())
        self._emit(events)
        return step

    def check_sources(self, *, rehash: bool = False) -> list:
        """Items whose source file is missing or changed (list of :class:`SourceProblem`)."""
        with self._lock:
            return self._store.check_sources(rehash=rehash)

    def relocate(self, item_id: str, new_path, *, accept_changed: bool = False) -> ItemRecord:
        """Point an item at the new location of its source file (verified by sha256).

        Raises
        ------
        SourceMovedError
            The file differs from the imported one and ``accept_changed`` is False.
        """
        with self._lock:
            self._writable("relocate an item")
            self._get_item(item_id)
            record = self._store.relocate(item_id, new_path, accept_changed=accept_changed)
            self._items[item_id] = record
        self._emit([ItemsChanged((item_id,))])
        return _copy_item(record)

    # --------------------------------------------------------------- labels

    def _check_label_for_item(self, label) -> None:
        task = task_of_label(label)
        item = self._get_item(label.item_id)
        if task == "sync":
            # an anchor between two recordings: it belongs to the pair, whatever task each recording serves
            other = self._items.get(label.target_id)
            for rec, what in ((item, "item_id"), (other, "target_id")):
                if rec is None:
                    raise ParameterError(f"label.target_id: no item with id {label.target_id!r}")
                if rec.kind != "audio":
                    raise ParameterError(f"label.{what}: a sync anchor joins two recordings, but item {rec.id!r} "
                                         f"({rec.name!r}) is {rec.kind} data")
            return
        if item.task != task:
            raise ParameterError(f"label: a {type(label).__name__} is a {task} label, but item {item.id!r} "
                                 f"({item.name!r}) is a {item.task} item")

    def _undo_event(self, before: tuple) -> list:
        after = (self._history.can_undo, self._history.can_redo)
        return [UndoStateChanged(*after)] if after != before else []

    def _store_label(self, kind: str, label, old_text: Optional[str], new_text: str) -> list:
        """Write one "add" or "change" edit durably, then cache ``label``; returns the events to emit.

        The caller holds the lock and has checked the label; the cache changes only after the store
        has the edit, so a failed write leaves the session as it was.
        """
        before = (self._history.can_undo, self._history.can_redo)
        seq = self._store.apply_edit(kind, label.id, label.item_id, old_text, new_text, self.author)
        self._labels[label.id] = label
        self._by_item[label.item_id][label.id] = label
        self._history.edited(seq, label.item_id)
        return [LabelsChanged(label.item_id, (label.id,))] + self._undo_event(before)

    def add_label(self, label):
        """Add a new label (durably) and return it.

        Raises
        ------
        ParameterError
            Not a label type, unknown item, task mismatch, or the id is already used.
        """
        with self._lock:
            self._writable("add a label")
            self._check_label_for_item(label)
            if label.id in self._labels:
                raise ParameterError(f"label.id: a label with id {label.id!r} already exists; "
                                     f"use change_label to modify it")
            events = self._store_label("add", label, None, dumps_label(label))
        self._emit(events)
        return label

    def add_labels(self, labels, *, name: Optional[str] = None) -> list:
        """Add several new labels in ONE transaction (all or none); returns them.

        Much faster than repeated :meth:`add_label` for imports (one disk sync),
        and one undo step: :meth:`undo` removes the whole batch.

        Parameters
        ----------
        labels : iterable of label
        name : str, optional
            The step's name in the history, e.g. ``"import of 676 labels from annotations.csv"``
            (otherwise described from its edits: ``"add 3 labels on 1:2"``).
        """
        labels = list(labels)
        with self._lock:
            self._writable("add labels")
            fresh = set()
            edits = []
            for label in labels:
                self._check_label_for_item(label)
                if label.id in self._labels or label.id in fresh:
                    raise ParameterError(f"labels: a label with id {label.id!r} already exists; "
                                         f"use change_label to modify it")
                fresh.add(label.id)
                edits.append(("add", label.id, label.item_id, None, dumps_label(label)))
            if not edits:
                return []
            events = self._apply_batch(edits, labels, (), name)
        self._emit(events)
        return labels

    def change_label(self, label):
        """Replace the label with the same id by ``label`` (same item); returns it.

        A change to identical content is not recorded.
        """
        with self._lock:
            self._writable("change a label")
            old_text, new_text = self._checked_change(label)
            if old_text == new_text:
                return label
            events = self._store_label("change", label, old_text, new_text)
        self._emit(events)
        return label

    def _checked_change(self, label) -> tuple:
        """``(old text, new text)`` of a change to an existing label, after checking it stays on its item."""
        task_of_label(label)
        old = self._get_label(label.id)
        if label.item_id != old.item_id:
            raise ParameterError(f"label.item_id: a label cannot move between items (label {label.id!r} is on "
                                 f"{old.item_id!r}, got {label.item_id!r}); delete it and add a new one")
        self._check_label_for_item(label)
        return dumps_label(old), dumps_label(label)

    def edit_labels(self, changed=(), deleted=(), *, name: Optional[str] = None) -> list:
        """Change and delete several labels in ONE transaction and one undo step; returns the changed labels.

        Parameters
        ----------
        changed : iterable of label
            New versions of existing labels (same id and item), as :meth:`change_label` takes them.
        deleted : iterable of str
            Ids of labels to delete.
        name : str, optional
            The step's name in the history.
        """
        changed, deleted = list(changed), list(deleted)
        with self._lock:
            self._writable("edit labels")
            edits, kept = [], []
            seen = set()
            for label in changed:
                old_text, new_text = self._checked_change(label)
                if label.id in seen:
                    raise ParameterError(f"labels: label {label.id!r} is edited twice in one step")
                seen.add(label.id)
                if old_text != new_text:
                    edits.append(("change", label.id, label.item_id, old_text, new_text))
                    kept.append(label)
            gone = []
            for label_id in deleted:
                if label_id in seen:
                    raise ParameterError(f"labels: label {label_id!r} is edited twice in one step")
                seen.add(label_id)
                old = self._get_label(label_id)
                edits.append(("delete", label_id, old.item_id, dumps_label(old), None))
                gone.append(old)
            if not edits:
                return []
            events = self._apply_batch(edits, kept, gone, name)
        self._emit(events)
        return kept

    def _apply_batch(self, edits: list, stored, removed, name: Optional[str]) -> list:
        """Write ``edits`` durably as one step, then cache them; returns the events to emit (the caller holds
        the lock). ``edits`` lists the additions or changes of ``stored`` first, then the deletions of ``removed``."""
        before = (self._history.can_undo, self._history.can_redo)
        seqs = self._store.apply_edits(edits, self.author, name=name)
        batch = seqs[0] if len(seqs) > 1 else None  # the store tags a batch with its first seq
        by_item: dict = {}
        for label, seq in zip(stored, seqs):
            self._labels[label.id] = label
            self._by_item[label.item_id][label.id] = label
            self._history.edited(seq, label.item_id, batch)
            by_item.setdefault(label.item_id, []).append(label.id)
        for old, seq in zip(removed, seqs[len(stored):]):
            del self._labels[old.id]
            del self._by_item[old.item_id][old.id]
            self._history.edited(seq, old.item_id, batch)
            by_item.setdefault(old.item_id, []).append(old.id)
        return [LabelsChanged(item, tuple(ids)) for item, ids in by_item.items()] + self._undo_event(before)

    def delete_label(self, label_id: str) -> None:
        """Delete a label (durably)."""
        with self._lock:
            self._writable("delete a label")
            old = self._get_label(label_id)
            before = (self._history.can_undo, self._history.can_redo)
            seq = self._store.apply_edit("delete", label_id, old.item_id, dumps_label(old), None, self.author)
            del self._labels[label_id]
            del self._by_item[old.item_id][label_id]
            self._history.edited(seq, old.item_id)
            events = [LabelsChanged(old.item_id, (label_id,))] + self._undo_event(before)
        self._emit(events)

    def recover_labels(self, damaged) -> dict:
        """Bring the labels up to date with a damaged copy of this project (after restoring a backup).

        The damaged file's edit log is read up to its first unreadable or damaged entry
        (:func:`~marginalia.project.recovery.plan_recovery`); when it extends this project's own
        history, its labels on this project's items are applied as ONE undoable step
        (additions, changes, deletions). Items imported after the backup come back first
        from their records in the damaged file, when those pass their checksum.

        Parameters
        ----------
        damaged : path-like
            The damaged project file the restore moved aside (``<project>.damaged-<time>``).

        Returns
        -------
        summary : dict
            ``added``, ``changed``, ``deleted`` (numbers of labels), ``items`` (items imported
            after the backup whose intact records were added back, so their labels could be),
            ``skipped`` (labels of items neither project has an intact record of), ``edits`` (log
            entries found beyond this project's) and ``problems`` (why the damaged file was read
            only in part); all zero and empty when there is nothing to recover.
        """
        from .recovery import plan_recovery
        summary = {"added": 0, "changed": 0, "deleted": 0, "skipped": 0, "items": 0, "edits": 0, "problems": []}
        events: list = []
        with self._lock:
            self._writable("recover labels")
            plan = plan_recovery(damaged, self._store.log_rows())
            if plan is None:
                return summary
            summary["edits"], summary["problems"] = plan.n_newer_edits, list(plan.problems)
            new_items = self._recover_items(plan)
            summary["items"] = len(new_items)
            lost = sorted({item for item, _ in plan.labels.values()} & set(plan.damaged_items) - set(self._items))
            if lost:
                summary["problems"].append(f"the records of {len(lost)} item(s) imported after the backup fail their "
                                           f"checksum in the damaged file (first: {lost[:3]}); their labels stay there")
            if new_items:
                events.append(ItemsChanged(tuple(new_items)))
            edits, summary["skipped"] = self._edits_towards(plan.labels)
            if edits:
                events += self._apply_recovered(edits, summary, f"recovery of {len(edits)} label edit(s) from "
                                                                f"{Path(damaged).name}")
        self._emit(events)
        return summary

    def _edits_towards(self, target: dict, items: Optional[set] = None) -> tuple:
        """``(edits, skipped)``: the add/change/delete edits taking the labels to ``target`` on known items.

        ``items``: the ids of the items the labels may be on (default: the project's items now).
        """
        items = set(self._items) if items is None else items
        edits, skipped = [], 0
        for label_id, (item_id, text) in sorted(target.items()):
            if item_id not in items:
                skipped += 1
                continue
            old = self._labels.get(label_id)
            if old is None:
                edits.append(("add", label_id, item_id, None, text))
            elif dumps_label(old) != text:
                edits.append(("change", label_id, item_id, dumps_label(old), text))
        for label_id, old in sorted(self._labels.items()):
            if label_id not in target:
                edits.append(("delete", label_id, old.item_id, dumps_label(old), None))
        return edits, skipped

    def _item_edits_towards(self, then: dict) -> list:
        """Item edits bringing back the records of ``then`` (:func:`~.timeline.items_at`) that differ now.

        A removed item comes back as it was; an item whose task or meta (its score) changed gets them
        back, keeping the source location of now (a relocation is not an edit of the history).
        """
        from .store import item_from_json, item_json
        edits = []
        for item_id, text in sorted(then.items()):
            now = self._items.get(item_id)
            if text is None:
                continue
            if now is None:
                edits.append(("item", None, item_id, None, text))
                continue
            past = item_from_json(text)
            if (past.task, past.meta) != (now.task, now.meta):
                back = dataclasses.replace(now, task=past.task, meta=past.meta)
                edits.append(("item", None, item_id, item_json(now), item_json(back)))
        return edits

    def _apply_recovered(self, edits: list, summary: dict, name: Optional[str] = None) -> list:
        """Apply ``edits`` as one transaction and one undo step; counts them in ``summary``; returns the events."""
        decoded = {e[1]: loads_label(e[4]) for e in edits if e[0] in ("add", "change")}
        before = (self._history.can_undo, self._history.can_redo)
        seqs = self._store.apply_edits(edits, self.author, name=name)
        batch = seqs[0] if len(seqs) > 1 else None
        by_item: dict = {}
        items_changed = []
        for (op, label_id, item_id, _, after), seq in zip(edits, seqs):
            if op == "item":
                self._item_edited(item_id, after)
                self._history.edited(seq, item_id, batch)
                items_changed.append(item_id)
                continue
            if op == "delete":
                del self._labels[label_id]
                del self._by_item[item_id][label_id]
            else:
                self._labels[label_id] = decoded[label_id]
                self._by_item[item_id][label_id] = decoded[label_id]
            self._history.edited(seq, item_id, batch)
            by_item.setdefault(item_id, []).append(label_id)
            summary[{"add": "added", "change": "changed", "delete": "deleted"}[op]] += 1
        events = [ItemsChanged(tuple(items_changed))] if items_changed else []
        return events + [LabelsChanged(item, tuple(ids)) for item, ids in by_item.items()] + self._undo_event(before)

    def _recover_items(self, plan) -> list:
        """Add the damaged file's intact records of the items its labels need and this project lacks."""
        needed = {item_id for item_id, _ in plan.labels.values()} - set(self._items)
        added = []
        for row in plan.items:
            if row[0] not in needed:
                continue
            record = ItemRecord(id=row[0], name=row[1], kind=row[2], task=row[3], source_path=row[4],
                                source_hash=row[5], size=row[6], mtime=row[7], meta=json.loads(row[8]), created=row[9])
            self._store.insert_item(record)
            self._items[record.id] = record
            self._by_item[record.id] = {}
            added.append(record.id)
        return added

    def _get_label(self, label_id):
        try:
            return self._labels[label_id]
        except (KeyError, TypeError):
            raise ParameterError(f"label_id: no label with id {label_id!r} in {self.path.name}") from None

    def label(self, label_id: str):
        """The label with this id; :class:`ParameterError` if unknown."""
        with self._lock:
            return self._get_label(label_id)

    def has_label(self, label_id: str) -> bool:
        """Whether a current label has this id."""
        with self._lock:
            return label_id in self._labels

    def labels(self, item_id: Optional[str] = None) -> list:
        """Current labels (of one item, or all), ordered by creation time then id."""
        with self._lock:
            if item_id is None:
                found = list(self._labels.values())
            else:
                self._get_item(item_id)
                found = list(self._by_item[item_id].values())
        found.sort(key=lambda lab: (lab.created, lab.id))
        return found

    def labels_hash(self, item_ids: Optional[Iterable[str]] = None) -> str:
        """sha256 of the canonical JSON of the current labels (of the given items, or all), suggestions and sync
        anchors left out: the label set an item task's model learns from (the sync model keeps its own digest)."""
        with self._lock:
            if item_ids is None:
                chosen = list(self._labels.values())
            else:
                if isinstance(item_ids, str):
                    raise ParameterError(f"item_ids: expected an iterable of item ids, got the str {item_ids!r}")
                chosen = []
                for iid in item_ids:
                    self._get_item(iid)
                    chosen.extend(self._by_item[iid].values())
        return labels_digest(lab for lab in chosen if not lab.suggested and task_of_label(lab) != "sync")

    # ------------------------------------------------------------- undo/redo

    @property
    def can_undo(self) -> bool:
        with self._lock:
            return self._history.can_undo

    @property
    def can_redo(self) -> bool:
        with self._lock:
            return self._history.can_redo

    def undo(self):
        """Revert the latest step of this session not yet undone.

        Only the steps made since the project was opened are undone this way: an edit of
        an earlier session (an import made yesterday) is never reverted by a stray Ctrl+Z;
        the whole history, earlier sessions included, is in :meth:`history` and any state of
        it comes back with :meth:`restore`.

        Returns
        -------
        Step or None
            The step that was undone (its ``name`` says what it was, e.g. ``"import of 676
            labels from annotations.csv"``), or None when there is nothing to undo.
        """
        return self._revisit("undo")

    def redo(self):
        """Re-apply the latest step undone in this session; the :class:`Step` re-applied, or None.

        A new edit after an undo ends what redo can reach, but not the undone step: it stays
        in :meth:`history` (``undone=True``) and :meth:`restore` brings its state back.
        """
        return self._revisit("redo")

    @property
    def next_undo(self):
        """The :class:`Step` that :meth:`undo` would revert now, or None."""
        with self._lock:
            return self._describe_stack_top(self._history.next_undo())

    @property
    def next_redo(self):
        """The :class:`Step` that :meth:`redo` would re-apply now, or None."""
        with self._lock:
            return self._describe_stack_top(self._history.next_redo())

    def _describe_stack_top(self, targets):
        if targets is None:
            return None
        from .timeline import build_timeline
        wanted = set(targets)
        rows = [r for r in self._store.timeline_rows(min(wanted), max(wanted)) if r[0] in wanted]
        steps = build_timeline(rows, self._store.step_names(), self._item_names())
        return steps[0] if steps else None

    def _item_names(self) -> dict:
        return {item_id: rec.name for item_id, rec in self._items.items()}

    def _revisit(self, kind: str):
        with self._lock:
            self._writable(kind)
            targets = self._history.next_undo() if kind == "undo" else self._history.next_redo()
            if targets is None:
                return None
            step = self._describe_stack_top(targets)
            before = (self._history.can_undo, self._history.can_redo)
            apply = self._store.apply_undo if kind == "undo" else self._store.apply_redo
            changed: dict = {}
            items_changed = []
            for op, label_id, item_id, text in apply(targets):
                if op == "item":
                    self._item_edited(item_id, text)
                    items_changed.append(item_id)
                elif text is None:
                    self._labels.pop(label_id, None)
                    self._by_item[item_id].pop(label_id, None)
                else:
                    label = loads_label(text)
                    self._labels[label_id] = label
                    self._by_item[item_id][label_id] = label
                changed.setdefault(item_id, []).append(label_id)
            if kind == "undo":
                self._history.undone(targets)
            else:
                self._history.redone(targets)
            events = ([ItemsChanged(tuple(items_changed))] if items_changed else [])
            events += [LabelsChanged(item, tuple(ids)) for item, ids in changed.items()] + self._undo_event(before)
        self._emit(events)
        return step

    def _item_edited(self, item_id: str, text: Optional[str]) -> None:
        """Reflect an undone or redone item edit in memory (``text``: the record's JSON now, None: gone)."""
        from .store import item_from_json
        if text is None:
            self._items.pop(item_id, None)
            self._by_item.pop(item_id, None)
        else:
            self._items[item_id] = item_from_json(text)
            self._by_item.setdefault(item_id, {})

    # --------------------------------------------------------------- history

    def history(self) -> list:
        """Every step of the project's history, across sessions, oldest first.

        Built from the append-only edit log: label edits, imports and other named bulk
        edits, undos, redos, restores and item removals, each with its time, author, label
        counts and items (:class:`~marginalia.project.timeline.Step`). Steps that were undone
        stay listed (``undone=True``), including those a later edit made unreachable by redo.
        """
        from .timeline import build_timeline
        with self._lock:
            return build_timeline(self._store.timeline_rows(), self._store.step_names(), self._item_names())

    def step(self, step_id: int):
        """The :class:`Step` with this id; :class:`ParameterError` when the history has none."""
        for step in self.history():
            if step.id == step_id:
                return step
        raise ParameterError(f"step: no step {step_id!r} in the history of {self.path.name}; "
                             "list the steps with history() (marginalia-cli history PROJECT)")

    def labels_at(self, step_id: int) -> list:
        """The labels as they were right after step ``step_id`` (oldest first, like :meth:`labels`)."""
        from .timeline import labels_after
        with self._lock:
            step = self.step(step_id)
            state = labels_after(self._store.timeline_rows(0, step.last))
        found = [loads_label(text) for _, text in state.values()]
        found.sort(key=lambda lab: (lab.created, lab.id))
        return found

    def restore(self, step_id: int):
        """Bring the labels back to what they were right after step ``step_id``, as ONE new step.

        Nothing is lost: the labels of now are the state after the step before this one, so
        a restore is undone by :meth:`undo` (or restored from the history in turn). Items removed
        since that step come back with their labels, and an item given a score since goes back to
        the record it had (its source file stays where it is now). Items are never removed by a
        restore: the labels of an item added or brought back since are taken away, the item stays.
        Items removed by :meth:`remove_item` (which leaves no record in the history) cannot come back.

        Parameters
        ----------
        step_id : int
            A :attr:`Step.id` from :meth:`history`.

        Returns
        -------
        Step or None
            The new step (named ``"restore to step N (...)"``), or None when the labels
            already are those of step ``step_id``.

        Raises
        ------
        ParameterError
            No step ``step_id`` in the history.
        """
        from .timeline import items_at, labels_after
        with self._lock:
            self._writable("restore labels")
            target = self.step(step_id)
            rows = self._store.timeline_rows()
            item_edits = self._item_edits_towards(items_at(rows, target.last))
            present = set(self._items) | {e[2] for e in item_edits}
            label_edits, _skipped = self._edits_towards(labels_after(r for r in rows if r[0] <= target.last),
                                                        present)
            # labels leave before their item's record changes; they arrive after it is back
            edits = ([e for e in label_edits if e[0] == "delete"] + item_edits
                     + [e for e in label_edits if e[0] != "delete"])
            if not edits:
                return None
            summary = {"added": 0, "changed": 0, "deleted": 0}
            name = f"restore to step {target.id} ({target.name})"
            events = self._apply_recovered(edits, summary, name)
            restored = self._describe_stack_top(self._history.next_undo())
        self._emit(events)
        return restored

    # --------------------------------------------------------------- models

    def save_model(self, model_id: str, task: str, params: dict, blob: bytes, label_hash: str,
                   keep: int = MODELS_KEPT) -> ModelRecord:
        """Store a trained model with its provenance (returned without its blob).

        The ``keep`` newest models of the same task and kind (``params["task"]``, when given) stay in the
        project, and so does the one fitted on the most labels (``params["n_labels"]``); older ones are
        deleted with their cached predictions. The labels, not the models, are the
        record: any model can be rebuilt from them.

        Parameters
        ----------
        model_id : str
            Must be new.
        task : {"segmentation", "alignment", "warping"}
        params : dict
            JSON-serialisable hyper-parameters.
        blob : bytes
            The serialised model (the caller's format).
        label_hash : str
            :meth:`labels_hash` of the labels it was trained on.
        keep : int, default MODELS_KEPT
            How many models of this task and kind to keep, the new one included (>= 1).
        """
        _require_str("model_id", model_id)
        if task not in TASKS:
            raise ParameterError(f"task: expected one of {TASKS}, got {task!r}")
        if not isinstance(params, dict):
            raise ParameterError(f"params: expected a dict, got {type(params).__name__}")
        canonical_json(params)
        if not isinstance(blob, (bytes, bytearray, memoryview)):
            raise ParameterError(f"blob: expected bytes, got {type(blob).__name__}")
        _require_str("label_hash", label_hash)
        check_int(keep, "keep", min_val=1)
        record = ModelRecord(id=model_id, task=task, created=time.time(), label_hash=label_hash,
                             params=copy.deepcopy(params), version=LIBRARY_VERSION, blob=bytes(blob))
        with self._lock:
            self._writable("save a model")
            if self._store.load_model(model_id) is not None:
                raise ParameterError(f"model_id: a model with id {model_id!r} already exists")
            self._store.insert_model(record)
            kind = params.get("task")
            same = [m for m in self._store.list_models(task) if (m.params or {}).get("task") == kind]
            old = same[:-keep]
            if old:   # a model fitted on more labels than any kept one is never pruned (it can be reverted to)
                best = max(same, key=lambda m: (_n_labels(m), m.created))
                old = [m for m in old if m.id != best.id]
            self._store.delete_models([m.id for m in old])
        self._emit([ModelChanged(model_id)])
        return dataclasses.replace(record, blob=None)

    def load_model(self, model_id: str) -> ModelRecord:
        """A stored model with its blob; :class:`ParameterError` if unknown."""
        with self._lock:
            record = self._store.load_model(model_id)
        if record is None:
            raise ParameterError(f"model_id: no model with id {model_id!r} in {self.path.name}")
        return record

    def models(self, task: Optional[str] = None) -> list:
        """Stored models (without blobs), oldest first."""
        with self._lock:
            return self._store.list_models(task)

    def latest_model(self, task: str) -> Optional[ModelRecord]:
        """The newest model of ``task`` with its blob, or None."""
        if task not in TASKS:
            raise ParameterError(f"task: expected one of {TASKS}, got {task!r}")
        with self._lock:
            return self._store.latest_model(task)

    def save_prediction(self, item_id: str, model_id: str, blob: bytes) -> None:
        """Cache a prediction of ``item_id`` by the saved model ``model_id``."""
        if not isinstance(blob, (bytes, bytearray, memoryview)):
            raise ParameterError(f"blob: expected bytes, got {type(blob).__name__}")
        with self._lock:
            self._writable("save a prediction")
            self._get_item(item_id)
            if self._store.load_model(model_id) is None:
                raise ParameterError(f"model_id: no saved model with id {model_id!r}; save the model first")
            self._store.put_prediction(item_id, model_id, bytes(blob))
        self._emit([PredictionChanged(item_id, model_id)])

    def prediction(self, item_id: str, model_id: Optional[str] = None) -> Optional[PredictionRecord]:
        """The newest cached prediction of ``item_id`` (by ``model_id`` if given), or None."""
        with self._lock:
            self._get_item(item_id)
            return self._store.get_prediction(item_id, model_id)

    # ------------------------------------------------------------- settings

    def get_setting(self, key: str, default=None):
        _require_str("key", key)
        with self._lock:
            return self._store.get_setting(key, default)

    def set_setting(self, key: str, value) -> None:
        """Store a JSON-serialisable setting."""
        _require_str("key", key)
        canonical_json(value)
        with self._lock:
            self._writable("change a setting")
            self._store.set_setting(key, value)
        self._emit([SettingChanged(key)])

    # ------------------------------------------------------------ integrity

    def integrity_check(self) -> list:
        """Problems found in the project (empty list when it is sound)."""
        with self._lock:
            problems = self._store.integrity_check()
            stored = {lid: loads_label(text) for lid, _, text in self._store.current_labels()}
            if stored != self._labels:
                problems.append("the session's labels differ from the stored labels")
            history = self._store.history()
            if (history.undo_stack, history.redo_stack) != (self._history.undo_stack, self._history.redo_stack):
                problems.append("the session's undo history differs from the edit log")
        return problems


def _n_labels(model: ModelRecord) -> int:
    """How many labels a model was fitted on (-1 when its record does not say)."""
    n = (model.params or {}).get("n_labels")
    return int(n) if is_integer(n) else -1


def _copy_item(item: ItemRecord) -> ItemRecord:
    return dataclasses.replace(item, meta=copy.deepcopy(item.meta))
