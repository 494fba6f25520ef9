"""Opening damaged, foreign, newer and older project files; locking; backups; moved sources."""

import hashlib
import os
import signal
import sqlite3
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from marginalia.exceptions import (
    ParameterError,
    ProjectDamagedError,
    ProjectInUseError,
    ProjectVersionError,
    SourceMovedError,
    StoreError,
)
from marginalia.project import ProjectStore, Session
from marginalia.project.backups import good_backups, list_backups
from marginalia.project.schema import APPLICATION_ID, CREATE_V1, SCHEMA_VERSION
from marginalia.types import BoundaryLabel, RegionKind, RegionLabel

ROOT = Path(__file__).resolve().parents[3]


def _digest(path):
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def _project(tmp_path, n_labels=200, batch=True, **options):
    """A closed project with ``n_labels`` labels (one transaction, or one per label)."""
    path = tmp_path / "p.marginalia"
    with Session.create(path, **options) as s:
        item = s.add_item("x", "series", "segmentation")
        new = [BoundaryLabel(item, index=i + 1) for i in range(n_labels)]
        if batch:
            s.add_labels(new)
        else:
            for lab in new:
                s.add_label(lab)
        labels = s.labels()
    return path, labels


def test_store_pragmas(tmp_path):
    with ProjectStore.create(tmp_path / "p.marginalia") as store:
        conn = store._conn
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        assert conn.execute("PRAGMA synchronous").fetchone()[0] == 2  # FULL
        assert conn.execute("PRAGMA foreign_keys").fetchone()[0] == 1
        assert conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
        assert conn.execute("PRAGMA application_id").fetchone()[0] == APPLICATION_ID


def test_a_text_file_is_not_a_project_rather_than_damaged_and_is_left_alone(tmp_path):
    from marginalia.exceptions import NotAProjectError
    path = tmp_path / "p.marginalia"
    path.write_bytes(b"this is a text file, not a project\n" * 10)
    before = _digest(path)
    with pytest.raises(NotAProjectError) as info:
        Session.open(path)
    message = str(info.value)
    assert message.startswith("p.marginalia is not a Marginalia project (it is a text file); open a .marginalia")
    assert "Import" in message and "damaged" not in message and "\n" not in message
    assert info.value.backups == ()
    assert _digest(path) == before


def test_binary_garbage_without_a_header_is_still_damaged(tmp_path):
    path = tmp_path / "p.marginalia"
    path.write_bytes(b"\x00\x01\x02garbage" * 50)
    with pytest.raises(ProjectDamagedError, match="not an SQLite database") as info:
        Session.open(path)
    assert "is damaged" in str(info.value) and info.value.problem


@pytest.mark.slow
def test_truncated_file_is_damaged_with_backups_newest_first(tmp_path):
    path, _ = _project(tmp_path, batch=False, backup_every_edits=50)
    size = path.stat().st_size
    with open(path, "r+b") as fh:
        fh.truncate(size // 2)
    before = _digest(path)
    with pytest.raises(ProjectDamagedError, match="is damaged") as info:
        Session.open(path)
    backups = info.value.backups
    assert len(backups) >= 2
    stamps = [b.name.split(".")[-3] for b in backups]
    assert stamps == sorted(stamps, reverse=True)
    assert str(backups[0]) in str(info.value)
    assert _digest(path) == before
    # the lock was released: after restoring, the project opens
    ProjectStore.restore_backup(backups[0], path)
    with Session.open(path) as s:
        assert s.integrity_check() == []


def test_corrupted_page_in_the_middle_is_detected(tmp_path):
    path, _ = _project(tmp_path)
    size = path.stat().st_size
    page = 4096
    middle = (size // 2) // page * page
    with open(path, "r+b") as fh:
        fh.seek(middle)
        fh.write(bytes((i * 37 + 11) % 251 for i in range(page)))
    before = _digest(path)
    with pytest.raises(ProjectDamagedError) as info:
        Session.open(path)
    assert info.value.backups
    assert _digest(path) == before


@pytest.mark.slow
@pytest.mark.parametrize("fraction", [0.3, 0.45, 0.55, 0.7, 0.85])
def test_small_overwrites_are_detected_or_harmless(tmp_path, fraction):
    path, labels = _project(tmp_path)
    offset = int(path.stat().st_size * fraction)
    with open(path, "r+b") as fh:
        fh.seek(offset)
        fh.write(b"\xff\x00garbage\x13\x37" * 20)
    before = _digest(path)
    try:
        s = Session.open(path)
    except ProjectDamagedError:
        assert _digest(path) == before
        return
    with s:
        assert s.labels() == labels
        assert s.integrity_check() == []


def test_restore_moves_the_damaged_file_aside(tmp_path):
    path, labels = _project(tmp_path, n_labels=20)
    damaged = b"SQLite format 3\x00" + b"\x00" * 5000
    path.write_bytes(damaged)
    with pytest.raises(ProjectDamagedError) as info:
        Session.open(path)
    restored = ProjectStore.restore_backup(info.value.backups[0], path)
    assert restored.path == path.absolute() and restored.damaged.parent == tmp_path
    aside = list(tmp_path.glob("p.marginalia.damaged-*"))
    assert [p.read_bytes() for p in aside if not p.name.endswith(("-wal", "-shm"))] == [damaged]
    with Session.open(path) as s:
        assert s.labels() == labels  # the close-time backup holds every label
        assert s.integrity_check() == []
        with pytest.raises(ProjectInUseError):  # never restore over a project that is open
            ProjectStore.restore_backup(info.value.backups[0], path)


def test_restore_refuses_a_bad_backup(tmp_path):
    bad = tmp_path / "bad.sqlite"
    bad.write_bytes(b"nope")
    with pytest.raises(ProjectDamagedError, match="cannot be restored"):
        ProjectStore.restore_backup(bad, tmp_path / "new.marginalia")
    assert not (tmp_path / "new.marginalia").exists()


def test_newer_schema_is_refused_without_touching_the_file(tmp_path):
    path, _ = _project(tmp_path, n_labels=3)
    conn = sqlite3.connect(path)
    conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION + 5}")
    conn.commit()
    conn.close()
    before = _digest(path)
    msg = f"written by a newer Marginalia \\(schema {SCHEMA_VERSION + 5} > {SCHEMA_VERSION}\\); update Marginalia"
    with pytest.raises(ProjectVersionError, match=msg):
        Session.open(path)
    with pytest.raises(ProjectVersionError):
        Session.open(path, read_only=True)
    assert _digest(path) == before
    with pytest.raises(ProjectVersionError):  # the lock was released: not ProjectInUseError
        Session.open(path)


def test_foreign_sqlite_file_is_refused(tmp_path):
    path = tmp_path / "other.sqlite"
    conn = sqlite3.connect(path)
    conn.execute("CREATE TABLE t (x)")
    conn.commit()
    conn.close()
    with pytest.raises(StoreError, match="not a Marginalia project"):
        Session.open(path)


@pytest.mark.slow
def test_schema_1_is_migrated_keeping_labels_and_a_backup(tmp_path):
    path = tmp_path / "old.marginalia"
    label = RegionLabel("it1", id="lab1", created=12.5, start=2, stop=9, kind=RegionKind.ONE)
    from marginalia.project.codec import dumps_label
    conn = sqlite3.connect(path)
    conn.executescript(CREATE_V1)
    conn.execute(f"PRAGMA application_id = {APPLICATION_ID}")
    conn.execute("PRAGMA user_version = 1")
    conn.execute("INSERT INTO items (id, name, kind, task, meta, created) VALUES ('it1', 'x', 'cgh', "
                 "'segmentation', '{}', 1.0)")
    conn.execute("INSERT INTO label_log (seq, op, label_id, item_id, after, time) "
                 "VALUES (1, 'add', 'lab1', 'it1', ?, 2.0)",
                 (dumps_label(label),))
    conn.execute("INSERT INTO labels (id, item_id, label, seq) VALUES ('lab1', 'it1', ?, 1)", (dumps_label(label),))
    conn.execute("INSERT INTO models (id, task, created, label_hash, params, blob, version) VALUES "
                 "('m1', 'segmentation', 3.0, 'h', '{}', X'0102', '0.0')")
    conn.commit()
    conn.close()
    with pytest.raises(StoreError, match="older schema 1"):
        Session.open(path, read_only=True)
    with Session.open(path) as s:
        assert s.labels() == [label]
        assert not s.can_undo    # an edit of an earlier session: reached through the history
        assert s.integrity_check() == []
        assert s.store._conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
        assert s.load_model("m1").blob == b"\x01\x02"
        assert [st.added for st in s.history()] == [1]
        s.delete_label(label.id)
        assert s.labels() == []
    pre = [b for b in list_backups(path) if b.name.endswith(".w0.sqlite")]
    assert pre, "a backup of the unmigrated file is kept"
    conn = sqlite3.connect(pre[-1])
    assert conn.execute("PRAGMA user_version").fetchone()[0] == 1
    conn.close()


def _run_holder(path, ready_file):
    code = textwrap.dedent(f"""
        import sys, time
        from marginalia.project import Session
        s = Session.open({str(path)!r})
        open({str(ready_file)!r}, "w").write("ready")
        time.sleep(60)
    """)
    return subprocess.Popen([sys.executable, "-c", code], cwd=ROOT)


def _wait_for(path, proc, timeout=30.0):
    t0 = time.monotonic()
    while not Path(path).exists():
        assert proc.poll() is None, "holder process died"
        assert time.monotonic() - t0 < timeout
        time.sleep(0.02)


@pytest.mark.slow
def test_second_process_gets_project_in_use_and_read_only_works(tmp_path):
    path, labels = _project(tmp_path, n_labels=5)
    ready = tmp_path / "ready"
    holder = _run_holder(path, ready)
    try:
        _wait_for(ready, holder)
        with pytest.raises(ProjectInUseError, match=rf"open in another Marginalia window or process \(pid {holder.pid} on "
                                                    r"host .+\); close it there first"):
            Session.open(path)
        with Session.open(path, read_only=True) as r:
            assert r.labels() == labels
    finally:
        holder.send_signal(signal.SIGKILL)
        holder.wait()
    # the OS dropped the lock of the killed process: no stale lock
    with Session.open(path) as s:
        assert s.labels() == labels


def test_same_process_second_writer_is_refused(tmp_path):
    path, _ = _project(tmp_path, n_labels=1)
    with Session.open(path):
        with pytest.raises(ProjectInUseError):
            Session.open(path)
    Session.open(path).close()


def test_backups_rotate_and_skip_unchanged(tmp_path):
    path = tmp_path / "p.marginalia"
    with Session.create(path, backup_every_edits=4, keep_backups=3) as s:
        item = s.add_item("x", "series", "segmentation")
        for i in range(30):
            s.add_label(BoundaryLabel(item, index=i + 1))
        writes = s.store.write_count
    backups = list_backups(path)
    assert len(backups) == 3
    assert good_backups(path) == backups  # copies made in the background while edits went on are sound
    assert backups[0].name.endswith(f".w{writes}.sqlite")
    (backups[0].parent / (path.name + ".20000101T000000000000Z.w1.sqlite.tmp")).write_bytes(b"half")
    Session.open(path, keep_backups=3).close()  # nothing changed: no new backup, leftovers removed
    assert list_backups(path) == backups
    assert not list(backups[0].parent.glob("*.tmp"))
    with Session.open(backups[0], read_only=True) as b:
        assert len(b.labels()) == 30


def test_bad_store_options():
    with pytest.raises(ParameterError, match="keep_backups: expected an integer >= 1, got 0"):
        ProjectStore("x.marginalia", keep_backups=0)
    with pytest.raises(ParameterError, match="backup_every_s"):
        ProjectStore("x.marginalia", backup_every_s=-1)


def test_moved_and_changed_sources_are_reported(tmp_path):
    src = tmp_path / "profile.csv"
    src.write_text("a,b\n1,2\n")
    other = tmp_path / "other.csv"
    other.write_text("a,b\n1,2\n")
    path = tmp_path / "p.marginalia"
    with Session.create(path) as s:
        a = s.add_item("a", "cgh", "segmentation", source_path=src)
        b = s.add_item("b", "cgh", "segmentation", source_path=other)
        s.add_item("c", "cgh", "segmentation")
        assert s.item(a).source_hash == hashlib.sha256(src.read_bytes()).hexdigest()
        assert s.check_sources() == []
    moved = tmp_path / "moved.csv"
    os.replace(src, moved)
    other.write_text("a,b\n1,3\n")
    with Session.open(path) as s:
        problems = {p.item_id: p for p in s.check_sources()}
        assert set(problems) == {a, b}
        assert problems[a].problem == "missing" and problems[b].problem == "changed"
        assert problems[b].actual_hash == hashlib.sha256(other.read_bytes()).hexdigest()
        s.relocate(a, moved)
        assert s.item(a).source_path == str(moved.absolute())
        with pytest.raises(SourceMovedError, match="accept_changed=True") as info:
            s.relocate(b, other)
        assert info.value.items == (b,)
        s.relocate(b, other, accept_changed=True)
        assert s.check_sources(rehash=True) == []
        with pytest.raises(ParameterError, match="not an existing file"):
            s.relocate(a, tmp_path / "nowhere.csv")
    with Session.open(path) as s:
        assert s.check_sources() == []


@pytest.mark.slow
@pytest.mark.parametrize("tamper, message", [
    ("UPDATE label_log SET after = replace(after, '\"index\":5,', '\"index\":6,') WHERE seq = 5",
     "edit-log entries fail their checksum"),
    ("UPDATE labels SET label = replace(label, '\"index\":7,', '\"index\":8,')",
     "stored labels disagree with the edit log"),
    ("DELETE FROM labels WHERE rowid = 3", "stored labels disagree with the edit log"),
])
def test_record_level_damage_sqlite_cannot_see_is_detected(tmp_path, tamper, message):
    path, _ = _project(tmp_path, n_labels=10)
    conn = sqlite3.connect(path)
    assert conn.execute(tamper).rowcount >= 1
    conn.commit()
    conn.close()
    before = _digest(path)
    with pytest.raises(ProjectDamagedError, match=message):
        Session.open(path)
    assert _digest(path) == before


def test_damaged_model_blob_is_reported(tmp_path):
    path = tmp_path / "p.marginalia"
    with Session.create(path) as s:
        s.save_model("m1", "segmentation", {"C": 1}, b"\x01\x02\x03", s.labels_hash())
    conn = sqlite3.connect(path)
    conn.execute("UPDATE models SET blob = X'010203FF'")
    conn.commit()
    conn.close()
    with Session.open(path) as s:
        assert [m.id for m in s.models()] == ["m1"]  # listing does not read blobs
        with pytest.raises(ProjectDamagedError, match="fails its sha256 checksum"):
            s.load_model("m1")
        assert any("m1" in p for p in s.integrity_check())


@pytest.mark.slow
@pytest.mark.parametrize("tamper", [
    """UPDATE items SET meta = '{"profile_id: "1"}'""",        # one flipped quote: unreadable JSON
    """UPDATE items SET meta = '{"profile_id":"7"}'""",        # one flipped digit: still valid JSON
    "UPDATE items SET created = created + 1",
])
def test_damaged_item_record_is_detected_with_the_backups_named(tmp_path, tamper):
    path = tmp_path / "p.marginalia"
    with Session.create(path) as s:
        s.add_item("1:1", "cgh", "segmentation", meta={"profile_id": "1"})
    conn = sqlite3.connect(path)
    assert conn.execute(tamper).rowcount == 1
    conn.commit()
    conn.close()
    with pytest.raises(ProjectDamagedError, match=r"1 item records fail their checksum \(first: \['1:1'\]\).*"
                                                  r"restore the newest backup"):
        Session.open(path)


@pytest.mark.slow
def test_schema_2_is_migrated_with_item_checksums(tmp_path):
    from marginalia.project import schema
    path = tmp_path / "v2.marginalia"
    conn = sqlite3.connect(path)
    conn.executescript(CREATE_V1 + schema._V2_ADDITIONS)
    conn.execute(f"PRAGMA application_id = {APPLICATION_ID}")
    conn.execute("PRAGMA user_version = 2")
    conn.execute("INSERT INTO items (id, name, kind, task, source_path, size, mtime, meta, created) VALUES "
                 """('it1', '1:1', 'cgh', 'segmentation', '/data/p.csv', 120, 1.5, '{"profile_id":"1"}', 1.0)""")
    conn.execute("INSERT INTO models (id, task, created, label_hash, params, blob, version, blob_sha256) VALUES "
                 "('m1', 'segmentation', 3.0, 'h', '{}', X'0102', '0.0', ?)", (hashlib.sha256(b"\x01\x02").hexdigest(),))
    conn.execute("INSERT INTO predictions (item_id, model_id, blob, created) VALUES ('it1', 'm1', X'0A0B', 4.0)")
    conn.commit()
    conn.close()
    with Session.open(path) as s:
        assert s.store._conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION == 5
        assert s.integrity_check() == []
        assert s.item("it1").meta == {"profile_id": "1"}
        assert s.prediction("it1").blob == b"\x0a\x0b"      # the migration checksummed the cache too
    with Session.open(path) as s:   # the checksums written by the migration hold on the next open
        assert s.integrity_check() == []


def test_consistent_but_unreadable_label_is_reported_as_damage(tmp_path):
    from marginalia.project.schema import log_row_crc
    path, _ = _project(tmp_path, n_labels=1)
    bad = '{"type":"FutureLabel"}'
    conn = sqlite3.connect(path)
    seq, op, lid, item, before, target, t, author = conn.execute(
        "SELECT seq, op, label_id, item_id, before, target, time, author FROM label_log").fetchone()
    conn.execute("UPDATE label_log SET after = ?, crc = ? WHERE seq = ?",
                 (bad, log_row_crc(op, lid, item, before, bad, target, t, author), seq))
    conn.execute("UPDATE labels SET label = ?", (bad,))
    conn.commit()
    conn.close()
    with pytest.raises(ProjectDamagedError, match="cannot be read.*unknown type 'FutureLabel'"):
        Session.open(path)
    with pytest.raises(ProjectDamagedError):  # again: the failed open released the lock
        Session.open(path)


def test_read_only_open_in_a_folder_nobody_may_write_to(tmp_path, monkeypatch):
    from marginalia.project import store as store_module
    path, _ = _project(tmp_path, n_labels=2)
    monkeypatch.setattr(store_module, "folder_writable", lambda folder: False)   # a read-only mount, say
    with Session.open(path, read_only=True) as s:
        assert len(s.labels()) == 2
    assert not Path(f"{path}-shm").exists()          # immutable: nothing written beside it
    Path(f"{path}-wal").write_bytes(b"x" * 100)      # edits a crash left in the log cannot be read from there
    with pytest.raises(StoreError, match="write-ahead log .* folder is read-only"):
        Session.open(path, read_only=True)


def test_a_project_renamed_while_open_refuses_edits_and_keeps_what_was_saved(tmp_path):
    path, _ = _project(tmp_path, n_labels=1)
    s = Session.open(path)
    item = s.items()[0].id
    s.add_label(BoundaryLabel(item, index=50))
    moved = tmp_path / "renamed.marginalia"
    os.rename(path, moved)
    with pytest.raises(StoreError, match="was moved, renamed or replaced while open"):
        s.add_label(BoundaryLabel(item, index=60))
    s.close()
    os.rename(moved, path)                      # what the message asks
    with Session.open(path) as again:
        assert sorted(lab.index for lab in again.labels()) == [1, 50]


def test_a_project_opens_even_when_no_backup_can_be_written(tmp_path, monkeypatch):
    from marginalia.project import backups as backups_module
    path, _ = _project(tmp_path, n_labels=3)
    with Session.open(path) as s:          # one more edit, so the next open wants a fresh backup
        s.add_label(BoundaryLabel(s.items()[0].id, index=90))

    def disk_full(*args, **kwargs):
        raise StoreError("cannot write a backup: database or disk is full")

    monkeypatch.setattr(backups_module, "write_backup", disk_full)
    with Session.open(path) as s:          # the user can still read, export and free space
        assert len(s.labels()) == 4


def test_a_damaged_cached_prediction_is_dropped_not_drawn(tmp_path):
    path = tmp_path / "p.marginalia"
    with Session.create(path) as s:
        item = s.add_item("x", "series", "segmentation")
        s.save_model("m1", "segmentation", {}, b"\x00", s.labels_hash([item]))
        s.save_prediction(item, "m1", b"\x01\x02\x03")
    conn = sqlite3.connect(path)
    conn.execute("UPDATE predictions SET blob = X'010207'")      # one flipped bit in the cache
    conn.commit()
    conn.close()
    with Session.open(path) as s:   # a cache, not the user's work: the project opens
        assert s.prediction(item) is None and s.prediction(item, "m1") is None
        s.save_prediction(item, "m1", b"\x04")
        assert s.prediction(item).blob == b"\x04"
