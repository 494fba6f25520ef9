"""Checking project files, and writing, listing and restoring their backups.

Backups live in ``<project>.backups/`` and are named
``<project name>.<UTC time>.w<write count>.sqlite``; each one is a complete,
self-contained SQLite file (rollback journal, not WAL) made with the SQLite
online backup API into a temporary file that is then renamed into place, so a
crash never leaves a half-written backup under a backup's name.
"""

from __future__ import annotations

import contextlib
import datetime as _dt
import os
import re
import sqlite3
import urllib.parse
from pathlib import Path
from typing import NamedTuple, Optional

from ..exceptions import ProjectDamagedError, StoreError

__all__ = [
    "SQLITE_MAGIC",
    "backups_dir",
    "list_backups",
    "backup_write_count",
    "check_database_file",
    "good_backups",
    "write_backup",
    "prune_backups",
    "restore_backup",
    "move_aside",
]

SQLITE_MAGIC = b"SQLite format 3\x00"
_NAME = re.compile(r"^(?P<name>.+)\.(?P<stamp>\d{8}T\d{12}Z)\.w(?P<writes>\d+)\.sqlite$")


def _stamp() -> str:
    return _dt.datetime.now(_dt.UTC).strftime("%Y%m%dT%H%M%S%fZ")


def backups_dir(project: Path) -> Path:
    """Folder holding the backups of ``project``."""
    return Path(str(project) + ".backups")


def list_backups(project: Path) -> list:
    """Backup files of ``project``, newest first (not checked)."""
    folder = backups_dir(project)
    if not folder.is_dir():
        return []
    found = []
    for p in folder.iterdir():
        m = _NAME.match(p.name)
        if m and m.group("name") == Path(project).name and p.is_file():
            found.append((m.group("stamp"), int(m.group("writes")), p))
    found.sort(reverse=True)
    return [p for _, _, p in found]


def backup_write_count(backup: Path) -> Optional[int]:
    """The project's write counter when ``backup`` was taken (from its name)."""
    m = _NAME.match(Path(backup).name)
    return int(m.group("writes")) if m else None


def _ro_uri(path: Path, immutable: bool) -> str:
    uri = "file:" + urllib.parse.quote(str(Path(path).absolute())) + "?mode=ro"
    return uri + "&immutable=1" if immutable else uri


def check_database_file(path: Path, *, immutable: bool = False) -> Optional[str]:
    """Describe what is wrong with an SQLite file, or return None when it is sound.

    The file is opened read-only (it is never written); ``PRAGMA integrity_check``
    verifies the b-tree structure and that every index matches its table
    (``quick_check`` skips the latter, and a damaged index silently hides rows
    from the queries that use it). It costs about a second per 20,000 edits. Use ``immutable=True`` for files that have
    no write-ahead log (backups), so no ``-shm`` file is created next to them.
    """
    path = Path(path)
    try:
        with open(path, "rb") as fh:
            header = fh.read(100)
    except FileNotFoundError:
        return "the file does not exist"
    except OSError as exc:
        return f"the file cannot be read ({exc.strerror})"
    if len(header) < 100 or not header.startswith(SQLITE_MAGIC):
        return "it is not an SQLite database (wrong or missing header)"
    try:
        conn = sqlite3.connect(_ro_uri(path, immutable), uri=True)
    except sqlite3.Error as exc:
        return f"SQLite cannot open it ({exc})"
    try:
        rows = [r[0] for r in conn.execute("PRAGMA integrity_check").fetchall()]
    except sqlite3.Error as exc:
        return f"SQLite cannot read it ({exc})"
    finally:
        conn.close()
    if rows != ["ok"]:
        return "integrity check failed: " + "; ".join(str(r) for r in rows[:5])
    return None


def not_a_database(path: Path) -> Optional[str]:
    """What a file without SQLite's header holds (``"it is a text file"``, ``"it is empty"``...), else None."""
    try:
        with open(path, "rb") as fh:
            head = fh.read(8192)
    except OSError:
        return None
    if head.startswith(SQLITE_MAGIC):
        return None
    if not head:
        return "it is empty"
    if head[:2] == b"\x1f\x8b":
        return "it is a gzip-compressed file"
    if head[:4] == b"RIFF" or head[:4] in (b"fLaC", b"OggS") or head[:3] == b"ID3":
        return "it is an audio file"
    if head[:4] == b"MThd":
        return "it is a MIDI file"
    if b"\x00" not in head:
        try:
            head.decode("utf-8")
            return "it is a text file"
        except UnicodeDecodeError as exc:
            if exc.start > len(head) - 4:
                return "it is a text file"
    return None


def good_backups(project: Path) -> list:
    """Backups of ``project`` that pass the integrity check, newest first."""
    return [p for p in list_backups(project) if check_database_file(p, immutable=True) is None]


def _fsync_dir(folder: Path) -> None:
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def write_backup(conn: sqlite3.Connection, project: Path, writes: int) -> Path:
    """Copy the database behind ``conn`` into a new backup of ``project``.

    Returns
    -------
    path : Path
        The new backup file.
    """
    folder = backups_dir(project)
    folder.mkdir(exist_ok=True)
    final = folder / f"{Path(project).name}.{_stamp()}.w{int(writes)}.sqlite"
    tmp = folder / (final.name + ".tmp")
    try:
        if tmp.exists():
            tmp.unlink()
        dest = sqlite3.connect(tmp)
        try:
            conn.backup(dest)
            dest.execute("PRAGMA journal_mode=DELETE")
        finally:
            dest.close()
        with open(tmp, "rb+") as fh:
            os.fsync(fh.fileno())
        os.replace(tmp, final)
        _fsync_dir(folder)
    except (sqlite3.Error, OSError) as exc:
        with contextlib.suppress(OSError):   # a full disk must not keep a half backup as well
            tmp.unlink()
        raise StoreError(f"cannot write a backup of {project} into {folder}: {exc}") from None
    return final


def prune_backups(project: Path, keep: int) -> None:
    """Delete all but the ``keep`` newest backups, and leftovers of interrupted backups."""
    for old in list_backups(project)[keep:]:
        try:
            old.unlink()
        except OSError:
            pass
    folder = backups_dir(project)
    if folder.is_dir():
        name = Path(project).name
        # a killed backup leaves its temporary copy and, mid-copy, SQLite's journal of it
        for tmp in [*folder.glob(name + ".*.tmp"), *folder.glob(name + ".*.tmp-journal")]:
            try:
                tmp.unlink()
            except OSError:
                pass


def move_aside(path: Path) -> Optional[Path]:
    """Rename ``path`` (and its ``-wal``/``-shm`` files) to ``<path>.damaged-<UTC time>``.

    Returns the new name of the main file, or None if it did not exist.
    """
    path = Path(path)
    stamp = _stamp()
    moved = None
    for suffix in ("", "-wal", "-shm"):
        src = Path(str(path) + suffix)
        if src.exists():
            dst = Path(f"{path}.damaged-{stamp}{suffix}")
            os.replace(src, dst)
            if suffix == "":
                moved = dst
    _fsync_dir(path.parent)
    return moved


class RestoredProject(NamedTuple):
    """Where a restore put the backup, and where it moved the file it replaced (None when there was none)."""

    path: Path
    damaged: Optional[Path]


def restore_backup(backup: Path, dest: Path) -> RestoredProject:
    """Restore ``backup`` as the project ``dest``.

    If ``dest`` exists (typically a damaged project) it is first renamed to
    ``<dest>.damaged-<UTC time>`` with its ``-wal``/``-shm`` files, so nothing
    is ever overwritten. The caller must hold the project's lock.

    Returns
    -------
    RestoredProject
    """
    backup, dest = Path(backup), Path(dest)
    problem = check_database_file(backup, immutable=True)
    if problem is not None:
        raise ProjectDamagedError(f"backup {backup} cannot be restored: {problem}",
                                  backups=good_backups(dest))
    moved = move_aside(dest)
    tmp = Path(str(dest) + ".restoring")
    try:
        src = sqlite3.connect(_ro_uri(backup, True), uri=True)
        out = sqlite3.connect(tmp)
        try:
            src.backup(out)
        finally:
            out.close()
            src.close()
        with open(tmp, "rb+") as fh:
            os.fsync(fh.fileno())
        os.replace(tmp, dest)
        _fsync_dir(dest.parent)
    except (sqlite3.Error, OSError) as exc:
        raise StoreError(f"cannot restore {backup} to {dest}: {exc}") from None
    return RestoredProject(dest, moved)
