"""Label edits that a damaged project still holds, to bring its restored backup up to date.

Restoring a backup moves the damaged file aside (:func:`~marginalia.project.backups.move_aside`);
the label edits made after that backup are only in the damaged file. Its edit log is often
still readable even when the file as a whole is not sound (a damaged item record or page
elsewhere). :func:`plan_recovery` reads the log up to the first row it cannot read or whose
checksum fails, checks that the restored project's history is the start of it, and replays
it to the labels the damaged file held; :meth:`marginalia.project.Session.recover_labels` then
applies the difference as one undoable step.
"""

from __future__ import annotations

import sqlite3
import urllib.parse
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

from ..exceptions import StoreError
from .history import replay_log
from .schema import ITEM_COLUMNS, item_row_crc, log_row_crc

__all__ = ["LabelRecovery", "readable_log", "readable_items", "plan_recovery"]


@dataclass(frozen=True)
class LabelRecovery:
    """What a damaged project file holds beyond a restored backup.

    Attributes
    ----------
    source : Path
        The damaged file.
    labels : dict
        ``label_id -> (item_id, label_json)``: the labels after its last readable edit.
    n_newer_edits : int
        Edit-log entries (edits, undos, redos) after the restored project's last one.
    items : tuple of tuple
        The damaged file's item records that pass their checksum, each the values of
        :data:`~marginalia.project.schema.ITEM_COLUMNS` (for the labels of items imported after the backup).
    damaged_items : tuple of str
        Ids of its item records that fail their checksum.
    problems : tuple of str
        Why the log was read only in part (empty when it was read to its end).
    """

    source: Path
    labels: dict
    n_newer_edits: int
    items: tuple = ()
    damaged_items: tuple = ()
    problems: tuple = ()


def _connect(path):
    return sqlite3.connect("file:" + urllib.parse.quote(str(Path(path).absolute())) + "?mode=ro", uri=True)


def readable_items(path) -> tuple:
    """The item records of the project file at ``path`` that can be read and pass their checksum.

    Returns
    -------
    rows : list of tuple
        The values of :data:`~marginalia.project.schema.ITEM_COLUMNS`, oldest first.
    damaged : list of str
        Ids of the records that fail their checksum.
    """
    rows: list = []
    damaged: list = []
    try:
        conn = _connect(path)
    except sqlite3.Error:
        return rows, damaged
    try:
        for r in conn.execute(f"SELECT {', '.join(ITEM_COLUMNS)}, crc FROM items ORDER BY rowid"):
            if r[-1] == item_row_crc(*r[:-1]):
                rows.append(tuple(r[:-1]))
            else:
                damaged.append(r[0])
    except sqlite3.Error:
        pass   # the records read so far are kept; the labels of the others are reported as skipped
    finally:
        conn.close()
    return rows, damaged


def readable_log(path) -> tuple:
    """The edit-log rows of the project file at ``path`` up to the first unreadable or damaged one.

    Returns
    -------
    rows : list of tuple
        ``(seq, op, label_id, item_id, before, after, target, batch)`` in increasing ``seq``.
    problems : list of str
    """
    rows: list = []
    problems: list = []
    try:
        conn = _connect(path)
    except sqlite3.Error as exc:
        return rows, [f"cannot open {path} ({exc})"]
    try:
        cur = conn.execute("SELECT seq, op, label_id, item_id, before, after, target, batch, time, author, crc "
                           "FROM label_log ORDER BY seq")
        for r in cur:
            if r[10] != log_row_crc(*r[1:7], r[8], r[9], r[7]):
                problems.append(f"edit-log entry {r[0]} fails its checksum; the entries from it on are not used")
                break
            rows.append(tuple(r[:8]))
    except sqlite3.Error as exc:
        after = f"after entry {rows[-1][0]}" if rows else "from its start"
        problems.append(f"the edit log cannot be read {after} ({exc})")
    finally:
        conn.close()
    return rows, problems


def plan_recovery(damaged, current_rows) -> Optional[LabelRecovery]:
    """The labels the damaged file holds, when its history extends the restored project's.

    Parameters
    ----------
    damaged : path-like
        The damaged project file (moved aside by the restore).
    current_rows : list of tuple
        The restored project's edit-log rows, as :func:`readable_log` returns them.

    Returns
    -------
    LabelRecovery or None
        None when the damaged file holds no edit beyond the restored project's, or when
        the two histories disagree (the backup is not an earlier state of that file): nothing
        could then be recovered safely.
    """
    rows, problems = readable_log(damaged)
    last = current_rows[-1][0] if current_rows else 0
    if not rows or rows[-1][0] <= last:
        return None
    theirs = {r[0]: r for r in rows}
    if any(theirs.get(r[0]) != r for r in current_rows):
        return None
    try:
        labels, _ = replay_log(rows)
    except StoreError:   # an inconsistent log: nothing to recover from it
        return None
    items, damaged_items = readable_items(damaged)
    return LabelRecovery(source=Path(damaged), labels=labels, n_newer_edits=sum(r[0] > last for r in rows),
                         items=tuple(items), damaged_items=tuple(damaged_items), problems=tuple(problems))
