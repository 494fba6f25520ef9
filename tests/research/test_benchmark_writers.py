"""Benchmark helpers that delete files delete only what they made themselves."""

from __future__ import annotations

import sys
import tempfile

import pytest

from benchmarks import _common
from benchmarks.quality.quality_alignment_tools import sync_toolbox_process as stp


def test_a_screenshot_scratch_folder_is_removed_and_nothing_beside_it(tmp_path, monkeypatch):
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    neighbour = tmp_path / "someone's project"
    neighbour.mkdir()
    (neighbour / "p.marginalia").write_text("keep")
    with pytest.raises(RuntimeError):
        with _common.scratch("shot-") as work:
            (work / "settings").mkdir()
            (work / "settings" / "x.ini").write_text("scratch")
            raise RuntimeError("a script that fails half-way")
    assert not work.exists()
    assert (neighbour / "p.marginalia").read_text() == "keep"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["someone's project"]


def test_the_sync_toolbox_runner_replaces_only_its_own_stale_output(tmp_path, monkeypatch):
    monkeypatch.setattr(stp, "RESULTS", tmp_path)
    mine = tmp_path / "grid_sync_out.json"
    mine.write_text("{}")
    others = [tmp_path / "other_sync_out.json", tmp_path / "grid.json"]
    for path in others:
        path.write_text("keep")
    # sync_ref.py cannot import synctoolbox in the test environment: the process stops at once
    proc, fh, out_path = stp.start(sys.executable, [{"id": "0", "wav": "x.wav", "notes": []}], "grid")
    proc.wait(timeout=60)
    fh.close()
    assert out_path == mine and not mine.exists()
    assert all(path.read_text() == "keep" for path in others)
