"""The state and cache directories stay where earlier versions put them on Linux (so no state is lost)."""

import os
import sys
from pathlib import Path

import pytest

from marginalia.paths import cache_dir, state_dir

linux = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the hand-written paths were Linux's")


@linux
def test_linux_defaults_are_the_paths_written_by_hand_before(monkeypatch, tmp_path):
    monkeypatch.delenv("XDG_STATE_HOME", raising=False)
    monkeypatch.delenv("XDG_CACHE_HOME", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))
    assert state_dir() == Path(os.path.expanduser("~")) / ".local" / "state" / "marginalia"
    assert cache_dir() == Path(os.path.expanduser("~")) / ".cache" / "marginalia"


@linux
def test_xdg_variables_move_both(monkeypatch, tmp_path):
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "s"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "c"))
    assert state_dir() == tmp_path / "s" / "marginalia"
    assert cache_dir() == tmp_path / "c" / "marginalia"
