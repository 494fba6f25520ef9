"""Layout of the project database and its migrations.

``PRAGMA user_version`` holds the schema version and ``PRAGMA application_id``
marks the file as a Marginalia project. To change the layout: bump
:data:`SCHEMA_VERSION`, add a function to :data:`MIGRATIONS` that upgrades
from the previous version, and extend :data:`CREATE_LATEST` (new projects are
created directly at the latest version).
"""

from __future__ import annotations

import hashlib
import sqlite3
import zlib

__all__ = ["SCHEMA_VERSION", "APPLICATION_ID", "CREATE_V1", "CREATE_LATEST", "MIGRATIONS", "EDIT_OPS",
           "log_row_crc", "item_row_crc", "step_name_crc", "ITEM_COLUMNS"]

#: Current schema version written by this code.
SCHEMA_VERSION = 5
#: "MRGN" -- identifies a Marginalia project among SQLite files.
APPLICATION_ID = 0x4D52474E

#: Operations of the label log. ``add``/``change``/``delete`` are user edits;
#: ``undo``/``redo`` name the edit they revert or re-apply in ``target``;
#: ``remove_item`` drops an item's labels and its edits from the undo history (projects before schema 5);
#: ``item`` is an undoable edit of an item record (JSON of the record before and after; None before: the
#: item was added, None after: removed), e.g. a score attached to a recording or an item removed.
#: Edits sharing a ``batch`` (the seq of its first edit) are one undo step.
EDIT_OPS = ("add", "change", "delete", "undo", "redo", "remove_item", "item")

CREATE_V1 = """
CREATE TABLE items (
    id TEXT PRIMARY KEY,
    name TEXT NOT NULL,
    kind TEXT NOT NULL,
    task TEXT NOT NULL,
    source_path TEXT,
    source_hash TEXT,
    size INTEGER,
    mtime REAL,
    meta TEXT NOT NULL DEFAULT '{}',
    created REAL NOT NULL
);
CREATE TABLE label_log (
    seq INTEGER PRIMARY KEY,  -- rows are never deleted, so rowids only grow
    op TEXT NOT NULL CHECK (op IN ('add', 'change', 'delete', 'undo', 'redo', 'remove_item')),
    label_id TEXT,
    item_id TEXT NOT NULL,
    before TEXT,
    after TEXT,
    target INTEGER REFERENCES label_log(seq),
    time REAL NOT NULL,
    author TEXT NOT NULL DEFAULT ''
);
CREATE TABLE labels (
    id TEXT PRIMARY KEY,
    item_id TEXT NOT NULL REFERENCES items(id) ON DELETE CASCADE,
    label TEXT NOT NULL,
    seq INTEGER NOT NULL REFERENCES label_log(seq)
);
CREATE INDEX labels_by_item ON labels(item_id);
CREATE TABLE models (
    id TEXT PRIMARY KEY,
    task TEXT NOT NULL,
    created REAL NOT NULL,
    label_hash TEXT NOT NULL,
    params TEXT NOT NULL,
    blob BLOB NOT NULL,
    version TEXT NOT NULL
);
CREATE INDEX models_by_task ON models(task, created);
CREATE TABLE predictions (
    item_id TEXT NOT NULL REFERENCES items(id) ON DELETE CASCADE,
    model_id TEXT NOT NULL REFERENCES models(id) ON DELETE CASCADE,
    blob BLOB NOT NULL,
    created REAL NOT NULL,
    PRIMARY KEY (item_id, model_id)
);
CREATE TABLE settings (
    key TEXT PRIMARY KEY,
    value TEXT NOT NULL
);
"""

_V2_ADDITIONS = """
ALTER TABLE label_log ADD COLUMN crc INTEGER;
ALTER TABLE label_log ADD COLUMN batch INTEGER;
ALTER TABLE models ADD COLUMN blob_sha256 TEXT;
CREATE TABLE store_meta (
    key TEXT PRIMARY KEY,
    value INTEGER NOT NULL
);
INSERT INTO store_meta (key, value) VALUES ('writes', 0);
"""

_V3_ADDITIONS = """
ALTER TABLE items ADD COLUMN crc INTEGER;
ALTER TABLE predictions ADD COLUMN blob_crc INTEGER;
"""

# v4 names the steps of the history ("import of 676 labels from annotations.csv"): one row per named
# step, keyed by the seq of the step's first log entry and written in the same transaction as the step.
_V4_ADDITIONS = """
CREATE TABLE step_names (
    seq INTEGER PRIMARY KEY REFERENCES label_log(seq),
    name TEXT NOT NULL,
    crc INTEGER NOT NULL
);
"""

# v5 logs undoable item edits: the op 'item' joins the edit log's CHECK list
_V4_OPS, _V5_OPS = "'undo', 'redo', 'remove_item')", "'undo', 'redo', 'remove_item', 'item')"

#: DDL of a new project at :data:`SCHEMA_VERSION`.
CREATE_LATEST = CREATE_V1.replace(_V4_OPS, _V5_OPS) + _V2_ADDITIONS + _V3_ADDITIONS + _V4_ADDITIONS

#: The columns of an item record that its checksum covers, in order.
ITEM_COLUMNS = ("id", "name", "kind", "task", "source_path", "source_hash", "size", "mtime", "meta", "created")


def log_row_crc(op, label_id, item_id, before, after, target, time, author, batch=None) -> int:
    """Checksum of one edit-log row.

    SQLite's own checks see the structure of pages, not the bytes inside a
    record; this checksum lets the store notice a log entry whose content was
    damaged on disk. ``None`` and ``""`` are told apart; floats use ``repr``
    (exact round trip through SQLite's REAL).
    """
    text = (f"{op}\x1f{_NONE if label_id is None else label_id}\x1f{item_id}\x1f"
            f"{_NONE if before is None else before}\x1f{_NONE if after is None else after}\x1f"
            f"{_NONE if target is None else target}\x1f{time!r}\x1f{author}\x1f{_NONE if batch is None else batch}")
    return zlib.crc32(text.encode("utf-8", "surrogatepass"))


_NONE = "\x00"


def item_row_crc(id, name, kind, task, source_path, source_hash, size, mtime, meta, created) -> int:
    """Checksum of one item record (the columns of :data:`ITEM_COLUMNS`).

    An item's metadata (its profile, chromosome, probe count, where its data lives and the
    data's hash) is valid JSON and valid numbers after most flipped bytes, so a damaged record
    would otherwise be read as a different item. Same conventions as :func:`log_row_crc`.
    """
    fields = (id, name, kind, task, source_path, source_hash, size, mtime, meta, created)
    text = "\x1f".join(_NONE if v is None else (repr(v) if isinstance(v, float) else str(v)) for v in fields)
    return zlib.crc32(text.encode("utf-8", "surrogatepass"))


def _migrate_1_to_2(conn: sqlite3.Connection) -> None:
    # v2 checksums the edit log and model blobs, and counts committed write transactions
    # (a backup is skipped when nothing changed since the last one).
    for statement in _V2_ADDITIONS.split(";"):
        if statement.strip():
            conn.execute(statement)
    rows = conn.execute("SELECT seq, op, label_id, item_id, before, after, target, time, author "
                        "FROM label_log").fetchall()
    conn.executemany("UPDATE label_log SET crc = ? WHERE seq = ?",
                     [(log_row_crc(*r[1:]), r[0]) for r in rows])
    models = conn.execute("SELECT id, blob FROM models").fetchall()
    conn.executemany("UPDATE models SET blob_sha256 = ? WHERE id = ?",
                     [(hashlib.sha256(blob).hexdigest(), mid) for mid, blob in models])


def _migrate_2_to_3(conn: sqlite3.Connection) -> None:
    # v3 checksums the item records and the cached predictions
    for statement in _V3_ADDITIONS.split(";"):
        if statement.strip():
            conn.execute(statement)
    rows = conn.execute(f"SELECT {', '.join(ITEM_COLUMNS)} FROM items").fetchall()
    conn.executemany("UPDATE items SET crc = ? WHERE id = ?", [(item_row_crc(*r), r[0]) for r in rows])
    cached = conn.execute("SELECT rowid, blob FROM predictions").fetchall()
    conn.executemany("UPDATE predictions SET blob_crc = ? WHERE rowid = ?",
                     [(zlib.crc32(bytes(blob)), rowid) for rowid, blob in cached])


def _migrate_3_to_4(conn: sqlite3.Connection) -> None:
    # v4 adds the names of history steps; older steps keep the names derived from their edits
    for statement in _V4_ADDITIONS.split(";"):
        if statement.strip():
            conn.execute(statement)


def _migrate_4_to_5(conn: sqlite3.Connection) -> None:
    # v5 logs undoable item edits (op 'item'). Only the CHECK list of label_log's ops widens, which SQLite
    # allows by editing the stored schema text (no table rebuild: labels and step_names reference label_log)
    (sql,) = conn.execute("SELECT sql FROM sqlite_master WHERE type = 'table' AND name = 'label_log'").fetchone()
    if _V4_OPS not in sql:
        raise sqlite3.DatabaseError("the edit log's table is not the one schema 4 made")
    version = conn.execute("PRAGMA schema_version").fetchone()[0]
    conn.execute("PRAGMA writable_schema = ON")
    try:
        conn.execute("UPDATE sqlite_master SET sql = ? WHERE type = 'table' AND name = 'label_log'",
                     (sql.replace(_V4_OPS, _V5_OPS),))
        conn.execute(f"PRAGMA schema_version = {version + 1}")
    finally:
        conn.execute("PRAGMA writable_schema = OFF")


def step_name_crc(seq, name) -> int:
    """Checksum of one step name (a damaged name is ignored and the step described from its edits)."""
    return zlib.crc32(f"{seq}\x1f{name}".encode("utf-8", "surrogatepass"))


#: ``MIGRATIONS[v]`` upgrades a database from version ``v`` to ``v + 1`` inside a transaction.
MIGRATIONS = {1: _migrate_1_to_2, 2: _migrate_2_to_3, 3: _migrate_3_to_4, 4: _migrate_4_to_5}
