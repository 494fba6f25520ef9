"""Recovering the label edits a damaged project holds beyond the backup that replaced it."""

import dataclasses
import sqlite3

import pytest

from marginalia.exceptions import ProjectDamagedError
from marginalia.project import ProjectStore, Session
from marginalia.project.backups import list_backups
from marginalia.types import BoundaryLabel


def _history(tmp_path):
    """A project whose newest edits are in no backup but the newest: L1, L2, then L3 added, L1 moved, L2 deleted."""
    path = tmp_path / "p.marginalia"
    with Session.create(path) as s:
        item = s.add_item("x", "series", "segmentation")
        l1, l2 = s.add_labels([BoundaryLabel(item, index=5, id="L1"), BoundaryLabel(item, index=9, id="L2")])
    first_backup = list_backups(path)[0]           # newest first: the close-time backup, L1 and L2
    with Session.open(path) as s:
        s.add_label(BoundaryLabel(item, index=12, id="L3"))
        s.change_label(dataclasses.replace(l1, index=6))
        s.delete_label("L2")
        latest = s.labels()
    return path, first_backup, latest


def _tamper(path, sql, *args):
    """Change the project file behind the store's back (what a flipped byte on disk would do)."""
    conn = sqlite3.connect(path)
    conn.execute(sql, args)
    conn.commit()
    conn.close()


def _damage_an_item_record(path):
    _tamper(path, "UPDATE items SET created = created + 1")   # caught by the item checksum; the log is intact


def _restore(path, backup):
    """Restore ``backup`` over ``path``; returns the damaged file the restore moved aside."""
    return ProjectStore.restore_backup(backup, path).damaged


@pytest.mark.slow
def test_edits_after_the_restored_backup_come_back_as_one_undoable_step(tmp_path):
    path, backup, latest = _history(tmp_path)
    _damage_an_item_record(path)
    with pytest.raises(ProjectDamagedError):
        Session.open(path)
    aside = _restore(path, backup)
    with Session.open(path) as s:
        restored = s.labels()
        assert sorted(lab.id for lab in restored) == ["L1", "L2"]
        summary = s.recover_labels(aside)
        assert (summary["added"], summary["changed"], summary["deleted"], summary["skipped"]) == (1, 1, 1, 0)
        assert summary["edits"] == 3 and summary["problems"] == []
        assert s.labels() == latest
        assert s.integrity_check() == []
        s.undo()                                       # one step takes the whole recovery back
        assert s.labels() == restored
        s.redo()
    with Session.open(path) as s:                      # durable
        assert s.labels() == latest


@pytest.mark.slow
def test_nothing_is_recovered_from_a_file_whose_history_is_not_newer(tmp_path):
    path, backup, latest = _history(tmp_path)
    with Session.open(path) as s:                      # the project is ahead of its first backup
        assert s.recover_labels(backup)["edits"] == 0
        assert s.labels() == latest
    other = tmp_path / "other.marginalia"
    with Session.create(other) as o:
        item = o.add_item("x", "series", "segmentation")
        o.add_labels([BoundaryLabel(item, index=3, id="Z1")])
        o.add_label(BoundaryLabel(item, index=4, id="Z2"))
    with Session.open(path) as s:                      # another project's history: refused, nothing applied
        assert s.recover_labels(other)["edits"] == 0
        assert s.labels() == latest


def test_a_log_damaged_midway_gives_back_the_edits_before_the_damage(tmp_path):
    path, backup, latest = _history(tmp_path)
    _tamper(path, "UPDATE label_log SET author = 'x' WHERE seq = (SELECT MAX(seq) FROM label_log)")  # L2's delete
    aside = _restore(path, backup)
    with Session.open(path) as s:
        summary = s.recover_labels(aside)
        assert (summary["added"], summary["changed"], summary["deleted"]) == (1, 1, 0)
        assert "fails its checksum" in summary["problems"][0]
        assert sorted(lab.id for lab in s.labels()) == ["L1", "L2", "L3"]


@pytest.mark.slow
def test_an_item_added_after_the_backup_comes_back_with_its_labels(tmp_path):
    path, backup, latest = _history(tmp_path)
    source = tmp_path / "later.csv"
    source.write_text("position,x\n1,0.5\n2,0.7\n")
    with Session.open(path) as s:
        later = s.add_item("later", "series", "segmentation", source_path=source, meta={"n_samples": 2})
        s.add_label(BoundaryLabel(later, index=1, id="N1"))
        latest = s.labels()
        record = s.item(later)
    _tamper(path, "UPDATE items SET created = created + 1 WHERE name = 'x'")   # damage the older item only
    aside = _restore(path, backup)
    with Session.open(path) as s:
        summary = s.recover_labels(aside)
        assert summary["items"] == 1 and summary["skipped"] == 0 and summary["added"] == 2
        assert s.item(later) == record and s.labels() == latest
        assert s.integrity_check() == []
    with Session.open(path) as s:
        assert s.item(later) == record
