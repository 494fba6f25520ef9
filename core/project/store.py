"""The project store: one SQLite file per project.

Durability and safety
---------------------
* WAL journal, ``synchronous=FULL``: every write transaction is on disk
  before the call that made it returns, so a crash or SIGKILL loses nothing
  that was acknowledged.
* Each label edit is one transaction that appends to the edit log *and*
  updates the materialised ``labels`` table, so both always agree.
* One writer per project file: an ``flock`` on the project file itself (so hard
  links, symbolic links and renames meet it) and on ``<project>.lock``, dropped
  by the OS when the process dies. Other processes may open it read-only.
* On open the file is checked (SQLite header, ``PRAGMA integrity_check``) with a
  read-only connection before anything writes to it; a damaged file raises
  :class:`ProjectDamagedError` listing the good backups and is never written.
  Damage inside records that SQLite's page checks cannot see is caught by
  checksums: every item record and edit-log row (CRC-32), every model blob
  (SHA-256, checked when read), and labels replayed against the edit log. A
  cached prediction whose CRC-32 fails is dropped and predicted again.
* Backups (online backup API) on open, on close and every ``backup_every_edits``
  writes or ``backup_every_s`` seconds, keeping the ``keep_backups`` newest.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import os
import sqlite3
import threading
import time
import urllib.parse
import zlib
from pathlib import Path
from typing import Optional

from .._version import library_version
from ..atomic import folder_writable
from ..checks import check_choice, check_int
from ..exceptions import (
    NotAProjectError,
    ParameterError,
    ProjectDamagedError,
    ProjectVersionError,
    SourceMovedError,
    StoreError,
)
from . import backups as _backups
from .codec import canonical_json, loads_label
from .history import EditHistory, replay_log
from .locking import ProjectLock
from .records import ItemRecord, ModelRecord, PredictionRecord, SourceProblem
from .schema import (
    APPLICATION_ID,
    CREATE_LATEST,
    ITEM_COLUMNS,
    MIGRATIONS,
    SCHEMA_VERSION,
    item_row_crc,
    log_row_crc,
    step_name_crc,
)
from .sources import file_sha256, file_signature

__all__ = ["ProjectStore", "LIBRARY_VERSION"]

_logger = logging.getLogger(__name__)

LIBRARY_VERSION = library_version()


class ProjectStore:
    """Persistent state of one project. Use :meth:`create` or :meth:`open`.

    Parameters
    ----------
    path : str or Path
        The project file.
    read_only : bool
        Open with a read-only SQLite connection, without taking the write lock;
        every write raises :class:`StoreError`.
    backup_every_edits : int
        Take a backup after this many write transactions.
    backup_every_s : float
        ... or when the newest backup is older than this (checked on each write).
    keep_backups : int
        Number of backups kept.

    Notes
    -----
    Methods are thread-safe (one lock around the connection). Errors from
    SQLite surface as :class:`StoreError`.
    """

    def __init__(self, path, *, read_only: bool = False, backup_every_edits: int = 500,
                 backup_every_s: float = 600.0, keep_backups: int = 5, _create: bool = False):
        self.path = Path(path).absolute()
        try:
            str(self.path).encode("utf-8")   # SQLite takes file names as UTF-8
        except UnicodeEncodeError:
            shown = os.fsencode(self.path).decode("utf-8", "backslashreplace")
            raise StoreError(f"project path '{shown}' is not valid UTF-8 text, which SQLite needs; rename the file "
                             "(or its folder) to a name without those bytes") from None
        self.read_only = bool(read_only)
        self.backup_every_edits = check_int(backup_every_edits, "backup_every_edits", min_val=1)
        if not (isinstance(backup_every_s, (int, float)) and backup_every_s > 0):
            raise ParameterError(f"backup_every_s: expected a number of seconds > 0, got {backup_every_s!r}")
        self.backup_every_s = float(backup_every_s)
        self.keep_backups = check_int(keep_backups, "keep_backups", min_val=1)
        if _create and self.read_only:
            raise ParameterError("read_only: a new project cannot be created read-only")
        self._lock = threading.RLock()
        self._conn: Optional[sqlite3.Connection] = None
        self._identity = None       # (device, inode) of the file opened, to notice it being moved away
        self._file_lock = None if self.read_only else ProjectLock(self.path, missing_ok=_create)
        self._writes = 0
        self._writes_at_open = 0
        self._history_at_open = None  # undo/redo stacks replayed while checking the file, used once
        self._writes_at_backup = 0
        self._last_backup_time = time.monotonic()
        self._backup_thread: Optional[threading.Thread] = None
        try:
            if self._file_lock is not None:
                self._file_lock.acquire()
            if _create:
                self._create_file()
                self._file_lock.lock_created_file()
            self._open_file()
        except BaseException:
            self._abort_open()
            raise

    # ------------------------------------------------------------------ opening

    @classmethod
    def create(cls, path, **options) -> "ProjectStore":
        """Create a new, empty project at ``path`` (which must not exist)."""
        return cls(path, _create=True, **options)

    @classmethod
    def open(cls, path, *, read_only: bool = False, **options) -> "ProjectStore":
        """Open an existing project (see the class for the options)."""
        return cls(path, read_only=read_only, **options)

    def _abort_open(self) -> None:
        if self._conn is not None:
            try:
                self._conn.close()
            except sqlite3.Error:
                pass
            self._conn = None
        if self._file_lock is not None:
            self._file_lock.release()

    def _create_file(self) -> None:
        if self.path.exists():
            raise StoreError(f"cannot create project {self.path}: the file already exists; open it instead")
        if not self.path.parent.is_dir():
            raise StoreError(f"cannot create project {self.path}: folder {self.path.parent} does not exist")
        for suffix in ("-wal", "-shm"):  # a stale log of an older file would be applied to the new one
            stale = Path(str(self.path) + suffix)
            if stale.exists():
                stale.unlink()
        tmp = Path(str(self.path) + ".creating")
        if tmp.exists():
            tmp.unlink()
        try:
            conn = sqlite3.connect(tmp, isolation_level=None)
            try:
                conn.execute("PRAGMA journal_mode=WAL")
                conn.execute("BEGIN IMMEDIATE")
                for statement in CREATE_LATEST.split(";"):
                    if statement.strip():
                        conn.execute(statement)
                conn.execute(f"PRAGMA application_id = {APPLICATION_ID}")
                conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
                conn.execute("COMMIT")
            finally:
                conn.close()
            os.replace(tmp, self.path)  # a crash while creating never leaves a half-made project
        except (sqlite3.Error, OSError) as exc:
            raise StoreError(f"cannot create project {self.path}: {exc}") from None

    def _open_file(self) -> None:
        if not self.path.exists():
            raise StoreError(f"no project at {self.path}: the file does not exist")
        if not self.path.is_file():
            raise StoreError(f"no project at {self.path}: it is not a file (expected a .marginalia project file)")
        # SQLite reads a write-ahead-logged file through a -shm file beside it; in a folder nobody may
        # write to (a read-only mount, a shared archive) a read-only open must say the file cannot change
        frozen = self.read_only and not folder_writable(self.path.parent)
        if frozen and _has_pending_log(self.path):
            raise StoreError(f"project {self.path} has edits in its write-ahead log ({self.path.name}-wal) and its "
                             "folder is read-only: open it once from a writable folder so they are saved in it")
        problem = _backups.check_database_file(self.path, immutable=frozen)
        if problem is not None:
            what = _backups.not_a_database(self.path)
            if what is not None and not _backups.list_backups(self.path):
                raise NotAProjectError(f"{self.path.name} is not a Marginalia project ({what}); open a .marginalia "
                                       "project, or import the file with File \u25b8 Import (marginalia-cli project "
                                       "create P.marginalia --import FILE)")
            raise self._damaged(problem)
        ro_uri = "file:" + urllib.parse.quote(str(self.path)) + "?mode=ro" + ("&immutable=1" if frozen else "")
        try:
            # identify the file read-only first: a foreign or newer file must not be touched
            peek = sqlite3.connect(ro_uri, uri=True)
            try:
                app_id = peek.execute("PRAGMA application_id").fetchone()[0]
                version = peek.execute("PRAGMA user_version").fetchone()[0]
                content = []
                if app_id == APPLICATION_ID and version == SCHEMA_VERSION:
                    try:
                        content, self._history_at_open = _content_problems(peek)
                    except sqlite3.DatabaseError as exc:  # e.g. bytes that are no longer valid text
                        if "locked" in str(exc) or "busy" in str(exc):
                            raise
                        content = [f"SQLite cannot read its records ({exc})"]
            finally:
                peek.close()
        except sqlite3.Error as exc:
            raise StoreError(f"cannot open project {self.path}: {exc}") from None
        if content:
            more = f" (and {len(content) - 1} more problems)" if len(content) > 1 else ""
            raise self._damaged(content[0] + more)
        if app_id != APPLICATION_ID:
            raise StoreError(f"{self.path} is an SQLite database but not a Marginalia project "
                             f"(application id {app_id:#x}, expected {APPLICATION_ID:#x})")
        if version > SCHEMA_VERSION:
            raise ProjectVersionError(f"{self.path} was written by a newer Marginalia (schema {version} > "
                                      f"{SCHEMA_VERSION}); update Marginalia")
        if version < 1:
            raise StoreError(f"{self.path}: invalid schema version {version}; expected 1..{SCHEMA_VERSION}")
        try:
            if self.read_only:
                self._conn = sqlite3.connect(ro_uri, uri=True, isolation_level=None, check_same_thread=False)
            else:
                self._conn = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False)
            conn = self._conn
            conn.execute("PRAGMA busy_timeout = 10000")
            if not self.read_only:
                mode = conn.execute("PRAGMA journal_mode=WAL").fetchone()[0]
                if str(mode).lower() != "wal":
                    raise StoreError(f"cannot switch {self.path} to WAL journal mode (got {mode})")
            conn.execute("PRAGMA synchronous = FULL")
            conn.execute("PRAGMA foreign_keys = ON")
        except sqlite3.Error as exc:
            raise StoreError(f"cannot open project {self.path}: {exc}") from None
        if version < SCHEMA_VERSION:
            if self.read_only:
                raise StoreError(f"{self.path} uses the older schema {version} (current {SCHEMA_VERSION}); "
                                 f"open it once for writing to upgrade it")
            self._migrate(version)
        self._writes = self._writes_at_open = self._read_write_count()
        self._identity = _file_identity(self.path)
        if not self.read_only:
            try:
                self._backup_if_changed()
            except StoreError as exc:   # a full disk: open anyway, so the user can export or free space
                _logger.warning("opening %s without a fresh backup: %s", self.path, exc)

    def _damaged(self, problem: str) -> ProjectDamagedError:
        good = _backups.good_backups(self.path)
        advice = f"restore the newest backup ({good[0]})" if good else "no good backup was found"
        return ProjectDamagedError(f"project {self.path} is damaged: {problem}; it was not modified; {advice}",
                                   backups=good, problem=problem)

    def _read_write_count(self) -> int:
        with self._sql("reading the write counter"):
            row = self._conn.execute("SELECT value FROM store_meta WHERE key = 'writes'").fetchone()
        return int(row[0]) if row else 0

    def _migrate(self, version: int) -> None:
        # keep a copy of the old layout first: a failed migration must be recoverable
        _backups.write_backup(self._conn, self.path, 0)
        with self._sql(f"migrating from schema {version} to {SCHEMA_VERSION}"):
            self._conn.execute("BEGIN IMMEDIATE")
            try:
                for v in range(version, SCHEMA_VERSION):
                    MIGRATIONS[v](self._conn)
                self._conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
                self._conn.execute("COMMIT")
            except BaseException:
                self._conn.execute("ROLLBACK")
                raise
        _logger.info("migrated %s from schema %d to %d", self.path, version, SCHEMA_VERSION)

    def close(self) -> None:
        """Take a last backup if anything changed, then close and release the lock (idempotent)."""
        with self._lock:
            if self._conn is None:
                return
            try:
                if not self.read_only:
                    self.wait_for_backups()
                    self._backup_if_changed()
            except StoreError as exc:
                _logger.warning("no backup on close: %s", exc)
            finally:
                try:
                    self._conn.close()
                finally:
                    self._conn = None
                    if self._file_lock is not None:
                        self._file_lock.release()

    @property
    def closed(self) -> bool:
        return self._conn is None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    # ------------------------------------------------------------ transactions

    @contextlib.contextmanager
    def _sql(self, what: str):
        try:
            yield
        except (sqlite3.Error, UnicodeEncodeError) as exc:
            raise StoreError(f"{what} failed on {self.path}: {exc}") from None

    def _require_open(self) -> sqlite3.Connection:
        if self._conn is None:
            raise StoreError(f"project {self.path} is closed")
        return self._conn

    @contextlib.contextmanager
    def _write(self, what: str):
        """One durable write transaction; yields the connection."""
        with self._lock:
            conn = self._require_open()
            if self.read_only:
                raise StoreError(f"cannot {what}: project {self.path} is open read-only")
            if _file_identity(self.path) != self._identity:
                # SQLite would go on writing its log under the old name, and reopening the file under its
                # new name would show none of this session's edits: refuse, and say how to get them back
                raise StoreError(f"cannot {what}: the project file {self.path} was moved, renamed or replaced "
                                 "while open. Close the project, move the file back to that path and open it "
                                 "again: the edits made so far are kept with it")
            with self._sql(what):
                conn.execute("BEGIN IMMEDIATE")
                try:
                    yield conn
                    conn.execute("UPDATE store_meta SET value = value + 1 WHERE key = 'writes'")
                    conn.execute("COMMIT")
                except BaseException:
                    if conn.in_transaction:
                        conn.execute("ROLLBACK")
                    raise
            self._writes += 1
            self._maybe_backup()

    def _read(self, what: str, sql: str, args=()) -> list:
        with self._lock:
            conn = self._require_open()
            with self._sql(what):
                return conn.execute(sql, args).fetchall()

    # ----------------------------------------------------------------- backups

    def _maybe_backup(self) -> None:
        """Start a periodic backup in a background thread when one is due.

        The copy reads a snapshot through its own read-only connection (WAL
        lets it run while edits go on), so no edit waits for a backup.
        """
        due = (self._writes - self._writes_at_backup >= self.backup_every_edits or
               time.monotonic() - self._last_backup_time >= self.backup_every_s)
        if not due or (self._backup_thread is not None and self._backup_thread.is_alive()):
            return
        self._writes_at_backup = self._writes
        self._last_backup_time = time.monotonic()
        # the snapshot holds at least these writes; naming it so only ever makes a later backup redundant
        self._backup_thread = threading.Thread(target=self._backup_in_background, args=(self._writes,),
                                               name="marginalia-backup", daemon=True)
        self._backup_thread.start()

    def _backup_in_background(self, writes: int) -> None:
        try:
            uri = "file:" + urllib.parse.quote(str(self.path)) + "?mode=ro"
            conn = sqlite3.connect(uri, uri=True)
            try:
                _backups.write_backup(conn, self.path, writes)
            finally:
                conn.close()
            _backups.prune_backups(self.path, self.keep_backups)
        except (StoreError, sqlite3.Error, OSError) as exc:  # the edits are committed; a failed backup is not fatal
            _logger.warning("automatic backup of %s failed: %s", self.path, exc)

    def wait_for_backups(self, timeout: Optional[float] = None) -> bool:
        """Wait until no background backup is running; False if ``timeout`` expired first."""
        thread = self._backup_thread
        if thread is not None:
            thread.join(timeout)
            return not thread.is_alive()
        return True

    def _backup_if_changed(self) -> None:
        existing = _backups.list_backups(self.path)
        if existing and _backups.backup_write_count(existing[0]) == self._writes:
            self._writes_at_backup = self._writes
            self._last_backup_time = time.monotonic()
            _backups.prune_backups(self.path, self.keep_backups)
            return
        self.backup()

    def backup(self) -> Path:
        """Write a backup now (waiting for it) and drop the oldest beyond ``keep_backups``; returns its path."""
        with self._lock:
            conn = self._require_open()
            self.wait_for_backups()
            path = _backups.write_backup(conn, self.path, self._writes)
            self._writes_at_backup = self._writes
            self._last_backup_time = time.monotonic()
            _backups.prune_backups(self.path, self.keep_backups)
            return path

    def backups(self) -> list:
        """Good backups of this project, newest first."""
        return _backups.good_backups(self.path)

    @staticmethod
    def restore_backup(backup, dest) -> "_backups.RestoredProject":
        """Restore ``backup`` as project ``dest``; an existing ``dest`` is moved aside, never overwritten.

        ``dest`` must not be open for writing anywhere (its lock is taken while restoring).

        Returns
        -------
        RestoredProject
            ``(path, damaged)``: the restored project and the file moved aside (None when none was).
        """
        dest = Path(dest).absolute()
        lock = ProjectLock(dest, missing_ok=True).acquire()
        try:
            return _backups.restore_backup(Path(backup), dest)
        finally:
            lock.release()

    @property
    def write_count(self) -> int:
        """Number of write transactions committed over the project's life."""
        return self._writes

    # ------------------------------------------------------------------- items

    def insert_item(self, item: ItemRecord) -> None:
        row = (item.id, item.name, item.kind, item.task, item.source_path, item.source_hash, item.size,
               item.mtime, canonical_json(item.meta), item.created)
        with self._write("add an item") as conn:
            conn.execute(f"INSERT INTO items ({', '.join(ITEM_COLUMNS)}, crc) VALUES ({', '.join('?' * 11)})",
                         row + (item_row_crc(*row),))

    def delete_item(self, item_id: str) -> None:
        """Remove an item with its labels and predictions (logged so replays drop its edits)."""
        with self._write("remove an item") as conn:
            _log(conn, "remove_item", None, item_id, None, None, None, "")
            cur = conn.execute("DELETE FROM items WHERE id = ?", (item_id,))
            if cur.rowcount != 1:
                raise StoreError(f"remove_item: no item with id {item_id!r}")

    def load_items(self) -> list:
        rows = self._read("reading items", "SELECT id, name, kind, task, source_path, source_hash, size, mtime, "
                                           "meta, created FROM items ORDER BY rowid")
        return [ItemRecord(id=r[0], name=r[1], kind=r[2], task=r[3], source_path=r[4], source_hash=r[5],
                           meta=self._json(r[8], f"item {r[1]!r}"), size=r[6], mtime=r[7], created=r[9]) for r in rows]

    def _json(self, text, what: str):
        """A JSON column's value; unreadable JSON is damage (a flipped byte), reported with the backups."""
        try:
            return json.loads(text)
        except (TypeError, ValueError) as exc:
            raise self._damaged(f"the stored data of {what} is unreadable ({exc})") from None

    def _update_source(self, item_id, path, digest, size, mtime) -> None:
        with self._write("relocate an item's source") as conn:
            cur = conn.execute("UPDATE items SET source_path = ?, source_hash = ?, size = ?, mtime = ? "
                               "WHERE id = ?", (path, digest, size, mtime, item_id))
            if cur.rowcount != 1:
                raise ParameterError(f"item_id: no item with id {item_id!r}")
            row = conn.execute(f"SELECT {', '.join(ITEM_COLUMNS)} FROM items WHERE id = ?", (item_id,)).fetchone()
            conn.execute("UPDATE items SET crc = ? WHERE id = ?", (item_row_crc(*row), item_id))

    def check_sources(self, *, rehash: bool = False) -> list:
        """Items whose source file is missing or whose content changed.

        Parameters
        ----------
        rehash : bool
            Hash every source file; by default only files whose size or
            modification time differ from the recorded ones are hashed.

        Returns
        -------
        problems : list of SourceProblem
        """
        problems = []
        for item in self.load_items():
            if item.source_path is None:
                continue
            path = Path(item.source_path)
            if not path.is_file():
                problems.append(SourceProblem(item.id, item.source_path, "missing", item.source_hash))
                continue
            size, mtime = file_signature(path)
            if rehash or size != item.size or mtime != item.mtime:
                digest = file_sha256(path)
                if digest != item.source_hash:
                    problems.append(SourceProblem(item.id, item.source_path, "changed", item.source_hash, digest))
        return problems

    def relocate(self, item_id: str, new_path, *, accept_changed: bool = False) -> ItemRecord:
        """Point an item at its source file's new location.

        Raises
        ------
        SourceMovedError
            If the file's content differs from the imported one and ``accept_changed`` is False.
        """
        items = {it.id: it for it in self.load_items()}
        if item_id not in items:
            raise ParameterError(f"item_id: no item with id {item_id!r}")
        new_path = Path(new_path).absolute()
        if not new_path.is_file():
            raise ParameterError(f"new_path: {new_path} is not an existing file")
        size, mtime = file_signature(new_path)
        digest = file_sha256(new_path)
        old = items[item_id]
        if old.source_hash is not None and digest != old.source_hash and not accept_changed:
            raise SourceMovedError(f"{new_path} differs from the file item {old.name!r} was imported from "
                                   f"(sha256 {digest[:12]}… != {old.source_hash[:12]}…); pass "
                                   f"accept_changed=True to use it anyway", items=(item_id,))
        self._update_source(item_id, str(new_path), digest, size, mtime)
        return next(it for it in self.load_items() if it.id == item_id)

    # ------------------------------------------------------------------ labels

    def apply_edit(self, op: str, label_id: str, item_id: str, before: Optional[str], after: Optional[str],
                   author: str = "") -> int:
        """Log one user edit and apply it to the current labels, in one transaction.

        Parameters
        ----------
        op : {"add", "change", "delete"}
        before, after : str or None
            Label JSON before and after the edit (None for add / delete respectively).

        Returns
        -------
        seq : int
            The edit's position in the log.
        """
        return self.apply_edits([(op, label_id, item_id, before, after)], author)[0]

    def apply_edits(self, edits, author: str = "", name: Optional[str] = None) -> list:
        """Log and apply several user edits in ONE transaction (all or nothing).

        Parameters
        ----------
        edits : list of tuple
            ``(op, label_id, item_id, before, after)`` as for :meth:`apply_edit`.
        author : str
            Written into the log.
        name : str, optional
            The step's name in the history ("import of 676 labels from annotations.csv"),
            stored in the same transaction.

        Returns
        -------
        seqs : list of int
        """
        edits = list(edits)
        for op, *_ in edits:
            check_choice(op, "op", ("add", "change", "delete", "item"))
        if not edits:
            return []
        what = f"{edits[0][0]} label {edits[0][1]}" if len(edits) == 1 else f"edit {len(edits)} labels"
        seqs = []
        with self._write(what) as conn:
            batch = None
            if len(edits) > 1:  # one undo step: tag the edits with the seq the first one will get
                batch = conn.execute("SELECT COALESCE(MAX(seq), 0) + 1 FROM label_log").fetchone()[0]
            for op, label_id, item_id, before, after in edits:
                seq = _log(conn, op, label_id, item_id, before, after, None, author, batch)
                self._apply(conn, op, label_id, item_id, after if op != "delete" else None, seq)
                seqs.append(seq)
            if name:
                conn.execute("INSERT INTO step_names (seq, name, crc) VALUES (?, ?, ?)",
                             (seqs[0], name, step_name_crc(seqs[0], name)))
        return seqs

    @staticmethod
    def _apply(conn, op, label_id, item_id, text, seq) -> None:
        """Make the materialised labels reflect ``op`` (add: insert ``text``, change: set, delete: remove).

        For an item edit (``op == "item"``), ``text`` is the item record's JSON to put in place (None: remove it).
        """
        if op == "item":
            _put_item(conn, item_id, text)
            return
        if op == "add":
            conn.execute("INSERT INTO labels (id, item_id, label, seq) VALUES (?, ?, ?, ?)",
                         (label_id, item_id, text, seq))
            return
        if op == "change":
            cur = conn.execute("UPDATE labels SET label = ?, seq = ? WHERE id = ? AND item_id = ?",
                               (text, seq, label_id, item_id))
        else:
            cur = conn.execute("DELETE FROM labels WHERE id = ? AND item_id = ?", (label_id, item_id))
        if cur.rowcount != 1:
            raise StoreError(f"{op} of label {label_id!r}: no such label on item {item_id!r}")

    def _revisit(self, kind: str, targets) -> list:
        targets = [int(targets)] if isinstance(targets, int) else [int(t) for t in targets]
        if kind == "undo":
            targets = targets[::-1]  # revert the newest edit of a step first
        results = []
        with self._write(f"{kind} edit(s) {targets}") as conn:
            for target in targets:
                row = conn.execute("SELECT op, label_id, item_id, before, after FROM label_log WHERE seq = ? "
                                   "AND op IN ('add', 'change', 'delete', 'item')", (target,)).fetchone()
                if row is None:
                    raise StoreError(f"{kind}: edit {target} is not in the log")
                op, label_id, item_id, before, after = row
                seq = _log(conn, kind, label_id, item_id, None, None, target, "")
                if kind == "undo":
                    inverse = {"add": ("delete", None), "change": ("change", before),
                               "delete": ("add", before), "item": ("item", before)}[op]
                    self._apply(conn, inverse[0], label_id, item_id, inverse[1], seq)
                    now = inverse[1]
                else:
                    self._apply(conn, op, label_id, item_id, after, seq)
                    now = None if op == "delete" else after
                results.append((op, label_id, item_id, now))
        return results

    def apply_undo(self, targets) -> list:
        """Revert the user edits ``targets`` (seqs of one undo step, oldest first) in one transaction.

        Returns
        -------
        results : list of tuple
            ``(op, label_id, item_id, label_json)`` per reverted edit, in the order applied
            (newest first): the edit's op and ids, and the label's JSON now (None if gone).
        """
        return self._revisit("undo", targets)

    def apply_redo(self, targets) -> list:
        """Re-apply the user edits ``targets`` (oldest first) in one transaction; returns like :meth:`apply_undo`."""
        return self._revisit("redo", targets)

    def current_labels(self) -> list:
        """``[(label_id, item_id, label_json)]`` from the materialised table."""
        return self._read("reading labels", "SELECT id, item_id, label FROM labels ORDER BY seq")

    def log_rows(self, with_labels: bool = True) -> list:
        """Edit-log rows ``(seq, op, label_id, item_id, before, after, target, batch)``, oldest first.

        ``before``/``after`` are None without ``with_labels`` (enough to rebuild the undo stacks).
        """
        cols = "before, after" if with_labels else "NULL, NULL"
        return self._read("reading the edit log",
                          f"SELECT seq, op, label_id, item_id, {cols}, target, batch FROM label_log ORDER BY seq")

    def timeline_rows(self, first: int = 0, last: Optional[int] = None) -> list:
        """Edit-log rows ``(seq, op, label_id, item_id, before, after, target, batch, time, author)``, oldest first.

        Only the rows with ``first <= seq <= last`` (every row by default).
        """
        sql = ("SELECT seq, op, label_id, item_id, before, after, target, batch, time, author FROM label_log "
               "WHERE seq >= ?")
        args: tuple = (first,)
        if last is not None:
            sql += " AND seq <= ?"
            args += (last,)
        return self._read("reading the edit log", sql + " ORDER BY seq", args)

    def step_names(self) -> dict:
        """``seq -> name`` of the named steps of the history (a name failing its checksum is left out)."""
        rows = self._read("reading step names", "SELECT seq, name, crc FROM step_names")
        return {seq: name for seq, name, crc in rows if crc == step_name_crc(seq, name)}

    def last_seq(self) -> int:
        """The seq of the newest edit-log entry (0 for an empty log)."""
        return int(self._read("reading the edit log", "SELECT COALESCE(MAX(seq), 0) FROM label_log")[0][0])

    def history(self) -> EditHistory:
        """Undo/redo stacks rebuilt from the edit log."""
        with self._lock:
            if self._history_at_open is not None and self._writes == self._writes_at_open:
                cached, self._history_at_open = self._history_at_open, None
                return cached
            return replay_log(self.log_rows(False), with_labels=False)[1]

    def replayed_labels(self) -> dict:
        """``label_id -> (item_id, label_json)`` derived from the edit log alone."""
        return replay_log(self.log_rows(True), with_labels=True)[0]

    def log_length(self) -> int:
        return int(self._read("counting the edit log", "SELECT COUNT(*) FROM label_log")[0][0])

    # --------------------------------------------------- models, predictions, settings

    def insert_model(self, model: ModelRecord) -> None:
        with self._write(f"save model {model.id}") as conn:
            conn.execute("INSERT INTO models (id, task, created, label_hash, params, blob, version, blob_sha256) "
                         "VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                         (model.id, model.task, model.created, model.label_hash, canonical_json(model.params),
                          sqlite3.Binary(model.blob), model.version, hashlib.sha256(model.blob).hexdigest()))

    def delete_models(self, model_ids) -> None:
        """Delete models and, by the foreign key, their cached predictions."""
        ids = list(model_ids)
        if not ids:
            return
        with self._write(f"delete {len(ids)} old model(s)") as conn:
            conn.executemany("DELETE FROM models WHERE id = ?", [(i,) for i in ids])

    def load_model(self, model_id: str) -> Optional[ModelRecord]:
        rows = self._read("reading a model", "SELECT id, task, created, label_hash, params, version, blob, "
                                             "blob_sha256 FROM models WHERE id = ?", (model_id,))
        return self._model(rows[0], True) if rows else None

    def list_models(self, task: Optional[str] = None) -> list:
        """Models without their blobs, oldest first."""
        sql = "SELECT id, task, created, label_hash, params, version FROM models"
        args = ()
        if task is not None:
            sql += " WHERE task = ?"
            args = (task,)
        return [self._model(r, False) for r in self._read("listing models", sql + " ORDER BY created, rowid", args)]

    def latest_model(self, task: str) -> Optional[ModelRecord]:
        rows = self._read("reading a model", "SELECT id, task, created, label_hash, params, version, blob, "
                                             "blob_sha256 FROM models WHERE task = ? ORDER BY created DESC, "
                                             "rowid DESC LIMIT 1", (task,))
        return self._model(rows[0], True) if rows else None

    def _model(self, row, with_blob: bool) -> ModelRecord:
        blob = None
        if with_blob:
            blob = bytes(row[6])
            problem = _blob_problem(row[0], blob, row[7])
            if problem is not None:
                raise ProjectDamagedError(f"project {self.path} is damaged: {problem}; retrain the model or "
                                          f"restore a backup", backups=_backups.good_backups(self.path))
        return ModelRecord(id=row[0], task=row[1], created=row[2], label_hash=row[3],
                           params=self._json(row[4], f"model {row[0]!r}"),
                           version=row[5], blob=blob)

    def put_prediction(self, item_id: str, model_id: str, blob: bytes) -> None:
        with self._write(f"save a prediction of item {item_id}") as conn:
            conn.execute("INSERT OR REPLACE INTO predictions (item_id, model_id, blob, created, blob_crc) "
                         "VALUES (?, ?, ?, ?, ?)", (item_id, model_id, sqlite3.Binary(blob), time.time(),
                                                    zlib.crc32(bytes(blob))))

    def get_prediction(self, item_id: str, model_id: Optional[str] = None) -> Optional[PredictionRecord]:
        """The newest cached prediction of an item (by ``model_id`` when given), None when there is none.

        A cached blob that fails its checksum is treated as absent (and logged): the caller
        predicts again rather than drawing a damaged structure.
        """
        sql = "SELECT item_id, model_id, blob, created, blob_crc FROM predictions WHERE item_id = ?"
        args = (item_id,)
        if model_id is not None:
            sql += " AND model_id = ?"
            args += (model_id,)
        rows = self._read("reading a prediction", sql + " ORDER BY created DESC, rowid DESC LIMIT 1", args)
        if not rows:
            return None
        r = rows[0]
        blob = bytes(r[2])
        if r[4] != zlib.crc32(blob):
            _logger.warning("%s: the cached prediction of item %s (model %s) fails its checksum; predicting again",
                            self.path, r[0], r[1])
            return None
        return PredictionRecord(item_id=r[0], model_id=r[1], blob=blob, created=r[3])

    def get_setting(self, key: str, default=None):
        rows = self._read("reading a setting", "SELECT value FROM settings WHERE key = ?", (key,))
        return self._json(rows[0][0], f"setting {key!r}") if rows else default

    def set_setting(self, key: str, value) -> None:
        text = canonical_json(value)
        with self._write(f"set setting {key}") as conn:
            conn.execute("INSERT OR REPLACE INTO settings (key, value) VALUES (?, ?)", (key, text))

    # --------------------------------------------------------------- integrity

    def integrity_check(self) -> list:
        """Problems found in the database (empty list when it is sound).

        Runs SQLite's full ``integrity_check`` and ``foreign_key_check``, decodes
        every label, and checks that replaying the edit log gives exactly the
        materialised labels.
        """
        problems = []
        with self._lock:
            conn = self._require_open()
            try:
                rows = [r[0] for r in conn.execute("PRAGMA integrity_check").fetchall()]
                if rows != ["ok"]:
                    problems.extend(f"sqlite: {r}" for r in rows)
                for table, rowid, parent, _ in conn.execute("PRAGMA foreign_key_check").fetchall():
                    problems.append(f"foreign key: row {rowid} of {table} points to a missing {parent}")
                problems.extend(_content_problems(conn, limit=None)[0])
                for mid, blob, expected in conn.execute("SELECT id, blob, blob_sha256 FROM models"):
                    problem = _blob_problem(mid, bytes(blob), expected)
                    if problem is not None:
                        problems.append(problem)
                current = {lid: (item, text) for lid, item, text in
                           conn.execute("SELECT id, item_id, label FROM labels").fetchall()}
            except sqlite3.Error as exc:
                return problems + [f"sqlite: {exc}"]
        for lid, (_, text) in current.items():
            try:
                label = loads_label(text)
            except Exception as exc:
                problems.append(f"label {lid}: cannot be decoded ({exc})")
                continue
            if label.id != lid:
                problems.append(f"label {lid}: its JSON carries id {label.id!r}")
        return problems


def _log(conn, op, label_id, item_id, before, after, target, author, batch=None) -> int:
    """Append one checksummed row to the edit log; returns its seq."""
    now = time.time()
    crc = log_row_crc(op, label_id, item_id, before, after, target, now, author, batch)
    return conn.execute("INSERT INTO label_log (op, label_id, item_id, before, after, target, time, author, crc, "
                        "batch) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                        (op, label_id, item_id, before, after, target, now, author, crc, batch)).lastrowid


def item_json(item: ItemRecord) -> str:
    """An item record as the JSON an item edit of the log holds (every column of :data:`ITEM_COLUMNS`)."""
    return canonical_json({c: getattr(item, c) for c in ITEM_COLUMNS})


def item_from_json(text: str) -> ItemRecord:
    return ItemRecord(**json.loads(text))


def _put_item(conn, item_id: str, text: Optional[str]) -> None:
    """Make the items table hold the record ``text`` (JSON, see :func:`item_json`) for ``item_id``, or none."""
    if text is None:
        cur = conn.execute("DELETE FROM items WHERE id = ?", (item_id,))
        if cur.rowcount != 1:
            raise StoreError(f"removing item {item_id!r}: no such item")
        return
    item = item_from_json(text)
    row = (item.id, item.name, item.kind, item.task, item.source_path, item.source_hash, item.size,
           item.mtime, canonical_json(item.meta), item.created)
    crc = item_row_crc(*row)
    cur = conn.execute(f"UPDATE items SET {', '.join(c + ' = ?' for c in ITEM_COLUMNS[1:])}, crc = ? WHERE id = ?",
                       row[1:] + (crc, item_id))
    if cur.rowcount == 0:
        conn.execute(f"INSERT INTO items ({', '.join(ITEM_COLUMNS)}, crc) VALUES ({', '.join('?' * 11)})",
                     row + (crc,))


def _content_problems(conn, limit: Optional[int] = 5) -> tuple:
    """Damage SQLite's page checks cannot see: bad item or log checksums, labels that disagree with the log.

    Returns
    -------
    problems : list of str
    history : EditHistory or None
        The undo/redo stacks replayed from the log (None if the log is inconsistent).
    """
    problems = []
    items = conn.execute(f"SELECT {', '.join(ITEM_COLUMNS)}, crc FROM items ORDER BY rowid").fetchall()
    bad_items = [r[1] for r in items if r[-1] != item_row_crc(*r[:-1])]
    if bad_items:
        problems.append(f"{len(bad_items)} item records fail their checksum (first: {bad_items[:5]})")
    rows = conn.execute("SELECT seq, op, label_id, item_id, before, after, target, batch, time, author, crc "
                        "FROM label_log ORDER BY seq").fetchall()
    bad = [r[0] for r in rows if r[10] != log_row_crc(*r[1:7], r[8], r[9], r[7])]
    if bad:
        problems.append(f"{len(bad)} edit-log entries fail their checksum (first: {bad[:5]})")
    try:
        replayed, history = replay_log(r[:8] for r in rows)
    except StoreError as exc:
        return problems + [str(exc)], None
    current = {lid: (item, text) for lid, item, text in conn.execute("SELECT id, item_id, label FROM labels")}
    differ = sorted(lid for lid in set(current) | set(replayed) if current.get(lid) != replayed.get(lid))
    if differ:
        problems.append(f"{len(differ)} stored labels disagree with the edit log (first: {differ[:3]})")
    if limit is not None:
        problems = problems[:limit]
    return problems, history


def _blob_problem(model_id, blob, expected) -> Optional[str]:
    if hashlib.sha256(blob).hexdigest() != expected:
        return f"the stored blob of model {model_id!r} fails its sha256 checksum"
    return None


def _has_pending_log(path: Path) -> bool:
    wal = Path(f"{path}-wal")
    try:
        return wal.stat().st_size > 0
    except OSError:
        return False


def _file_identity(path: Path):
    """``(device, inode)`` of the file at ``path`` now, or None when there is none."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    return (st.st_dev, st.st_ino)
