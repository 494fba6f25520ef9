"""Start-up without a display, the exception hook and its log, playback without an audio library."""

from __future__ import annotations

import logging
import os
import subprocess
import sys
import pathlib

import pytest
from PySide6 import QtWidgets

from app import errors
from app.main import NO_DISPLAY, display_available
from core.exceptions import DataFormatError, InfeasibleLabelsError, ProjectDamagedError

ROOT = pathlib.Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("env, platform, expected", [
    ({}, "linux", False),
    ({"DISPLAY": ":0"}, "linux", True),
    ({"WAYLAND_DISPLAY": "wayland-0"}, "linux", True),
    ({"QT_QPA_PLATFORM": "offscreen"}, "linux", True),
    ({"QT_QPA_PLATFORM": "minimal"}, "linux", True),
    ({"QT_QPA_PLATFORM": "xcb"}, "linux", False),
    ({"QT_QPA_PLATFORM": "xcb", "DISPLAY": ":1"}, "linux", True),
    ({"QT_QPA_PLATFORM": "wayland"}, "linux", False),
    ({}, "darwin", True),
    ({}, "win32", True),
])
def test_display_detection(env, platform, expected):
    assert display_available(env, platform) is expected


def test_no_display_prints_one_line_and_exits_2():
    env = {k: v for k, v in os.environ.items() if k not in ("DISPLAY", "WAYLAND_DISPLAY", "QT_QPA_PLATFORM")}
    proc = subprocess.run([sys.executable, "-m", "app.main", "--demo"], cwd=ROOT, env=env, capture_output=True,
                          text=True, timeout=60)
    assert proc.returncode == 2
    assert proc.stderr.strip() == NO_DISPLAY
    assert "Traceback" not in proc.stderr and proc.stdout == ""


def test_exception_hook_logs_the_traceback_and_shows_a_short_dialog(qtbot, tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path))
    path = errors.setup_logging()
    assert path == tmp_path / "marginalia" / "marginalia.log"
    old = sys.excepthook
    try:
        hook = errors.install_excepthook()
        try:
            raise KeyError("boom in a slot")
        except KeyError:
            hook(*sys.exc_info())
    finally:
        sys.excepthook = old
    for h in logging.getLogger().handlers:
        h.flush()
    text = path.read_text()
    assert "Traceback" in text and "boom in a slot" in text
    dialogs = [w for w in QtWidgets.QApplication.topLevelWidgets()
               if isinstance(w, errors.ErrorDialog) and w.isVisible() and isinstance(w.exc, KeyError)]
    assert dialogs
    dlg = dialogs[-1]
    assert "boom in a slot" in dlg.informativeText() and "Traceback" not in dlg.informativeText()
    assert "log file" in dlg.informativeText()
    dlg.close()
    root = logging.getLogger()
    for h in list(root.handlers):
        if isinstance(h, logging.FileHandler) and h.baseFilename == str(path):
            root.removeHandler(h)
            h.close()


@pytest.mark.parametrize("exc, words", [
    (DataFormatError("bad header", path="x.csv", where="line 1"), "supported formats"),
    (InfeasibleLabelsError("labels 1 and 2 disagree", ("1", "2")), "undo"),
    (ProjectDamagedError("damaged", backups=("b1.marginalia",)), "b1.marginalia"),
    (RuntimeError("unexpected"), "bug"),
])
def test_every_error_comes_with_a_fix(exc, words):
    msg = errors.user_message(exc)
    assert str(exc) in msg and (words in msg or words in msg.lower())
