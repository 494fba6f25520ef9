"""One writer per project *file*: hard links, symbolic links and renames meet the same lock.

Before, the lock was a sidecar named after the path: a second process opening the project
through a hard link got write access, its ``add_label`` returned, and the edit was gone after
reopening (each writer kept its own write-ahead log beside its own name). Opening a missing
project also left a stray ``.lock`` behind.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from marginalia.exceptions import ProjectInUseError, StoreError
from marginalia.project import Session
from marginalia.types import BoundaryLabel

ROOT = Path(__file__).resolve().parents[2]


def new_project(folder: Path) -> tuple:
    path = folder / "p.marginalia"
    with Session.create(path) as s:
        item = s.add_item("x", "series", "segmentation")
        s.add_label(BoundaryLabel(item, index=3))
    return path, item


@pytest.mark.slow
@pytest.mark.parametrize("how", ["hard link", "symbolic link", "renamed", "other folder's hard link"])
def test_a_second_writer_through_another_name_is_refused(tmp_path, how):
    path, item = new_project(tmp_path)
    with Session.open(path) as first:
        if how == "hard link":
            other = tmp_path / "link.marginalia"
            os.link(path, other)
        elif how == "symbolic link":
            other = tmp_path / "sym.marginalia"
            other.symlink_to(path)
        elif how == "renamed":
            other = tmp_path / "renamed.marginalia"
            os.rename(path, other)
        else:
            (tmp_path / "elsewhere").mkdir()
            other = tmp_path / "elsewhere" / "p.marginalia"
            os.link(path, other)
        with pytest.raises(ProjectInUseError, match=r"open in another Marginalia window or process \(pid \d+ on "
                                                    r"host .+\); close it there first"):
            Session.open(other)
        with Session.open(other, read_only=True) as reader:        # reading stays possible
            assert len(reader.labels()) >= 1
        if how == "renamed":     # the first writer refuses too: its log would stay under the old name
            with pytest.raises(StoreError, match="moved, renamed or replaced while open"):
                first.add_label(BoundaryLabel(item, index=5))
        else:
            first.add_label(BoundaryLabel(item, index=5))
    with Session.open(other) as again:                            # the lock went with the first writer
        assert sorted(lab.index for lab in again.labels()) == ([3] if how == "renamed" else [3, 5])
        assert again.integrity_check() == []


@pytest.mark.slow
def test_a_second_process_through_a_hard_link_is_refused_and_named(tmp_path):
    path, item = new_project(tmp_path)
    link = tmp_path / "link.marginalia"
    os.link(path, link)
    ready = tmp_path / "ready"
    code = textwrap.dedent(f"""
        import time
        from marginalia.project import Session
        s = Session.open({str(path)!r})
        open({str(ready)!r}, "w").write("ready")
        time.sleep(60)
    """)
    holder = subprocess.Popen([sys.executable, "-c", code], cwd=ROOT)
    try:
        t0 = time.monotonic()
        while not ready.exists():
            assert holder.poll() is None and time.monotonic() - t0 < 30
            time.sleep(0.02)
        with pytest.raises(ProjectInUseError, match=rf"\(pid {holder.pid} on host"):
            Session.open(link)
    finally:
        holder.kill()
        holder.wait()
    with Session.open(link) as s:            # a killed holder leaves no stale lock
        s.add_label(BoundaryLabel(item, index=7))
    with Session.open(path) as s:
        assert sorted(lab.index for lab in s.labels()) == [3, 7]
        assert s.integrity_check() == []


def test_opening_a_missing_project_leaves_no_lock_file(tmp_path):
    with pytest.raises(StoreError, match="does not exist"):
        Session.open(tmp_path / "none.marginalia")
    with pytest.raises(StoreError, match="not a file"):
        Session.open(tmp_path)
    assert list(tmp_path.iterdir()) == []


def test_create_still_locks_the_new_file(tmp_path):
    path = tmp_path / "new.marginalia"
    with Session.create(path):
        link = tmp_path / "l.marginalia"
        os.link(path, link)
        with pytest.raises(ProjectInUseError):
            Session.open(link)
