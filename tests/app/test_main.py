"""Start-up without a display, the exception hook and its log, playback without an audio library."""

from __future__ import annotations

import logging
import os
import pathlib
import subprocess
import sys

import pytest
from PySide6 import QtWidgets

from marginalia.app import errors
from marginalia.app.main import NO_DISPLAY, display_available, uses_x11, x11_problem
from marginalia.exceptions import DataFormatError, InfeasibleLabelsError, ProjectDamagedError

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
    proc = subprocess.run([sys.executable, "-m", "marginalia.app.main", "--demo"], cwd=ROOT, env=env, capture_output=True,
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


@pytest.mark.parametrize("env, platform, expected", [
    ({"DISPLAY": ":0"}, "linux", True),
    ({"DISPLAY": ":0", "WAYLAND_DISPLAY": "wayland-0"}, "linux", False),
    ({"DISPLAY": ":0", "QT_QPA_PLATFORM": "offscreen"}, "linux", False),
    ({"QT_QPA_PLATFORM": "xcb", "DISPLAY": ":1"}, "linux", True),
    ({"QT_QPA_PLATFORM": "wayland;xcb", "DISPLAY": ":1"}, "linux", False),
    ({"DISPLAY": ":0"}, "darwin", False),
])
def test_x11_plugin_detection(env, platform, expected):
    assert uses_x11(env, platform) is expected


def _loader(linked=(), run_time=()):
    """A stand-in for the dynamic loader of a system lacking ``linked`` (plugin dependencies) and ``run_time``."""
    def load(name):
        missing = list(linked) if name.endswith("libqxcb.so") else [lib for lib in run_time if lib == name]
        if missing:
            raise OSError(f"{missing[0]}: cannot open shared object file: No such file or directory")
        return object()
    return load


def test_a_missing_x11_library_is_named_with_its_package(tmp_path):
    plugin = tmp_path / "libqxcb.so"
    msg = x11_problem(load=_loader(linked=["libxcb-icccm.so.4"]), plugin=str(plugin))
    assert "libxcb-icccm.so.4" in msg and "apt-get install" in msg
    install = msg.split("apt-get install ")[1].split("\n")[0].split()
    assert "libxcb-icccm4" in install and "libxcb-cursor0" in install
    assert "QT_QPA_PLATFORM=offscreen" in msg


def test_the_run_time_cursor_library_is_checked_too(tmp_path):
    msg = x11_problem(load=_loader(run_time=["libxcb-cursor.so.0"]), plugin=str(tmp_path / "libqxcb.so"))
    assert msg is not None and "lacks libxcb-cursor.so.0 (" in msg and "libxcb-cursor0" in msg
    both = x11_problem(load=_loader(linked=["libxcb-keysyms.so.1"], run_time=["libxcb-cursor.so.0"]),
                       plugin=str(tmp_path / "libqxcb.so"))
    assert "lacks libxcb-keysyms.so.1, libxcb-cursor.so.0 (" in both


def test_no_message_when_every_library_loads(tmp_path):
    assert x11_problem(load=lambda name: object(), plugin=str(tmp_path / "libqxcb.so")) is None


def test_a_broken_plugin_is_reported_as_such(tmp_path):
    plugin = tmp_path / "libqxcb.so"

    def load(name):
        if name == str(plugin):
            raise OSError(f"{plugin}: invalid ELF header")
        return object()
    msg = x11_problem(load=load, plugin=str(plugin))
    assert "cannot be loaded" in msg and "invalid ELF header" in msg


def test_pyside_keeps_references_to_the_singletons(qapp):
    """PySide6 6.12.0 on Python < 3.12 returned None/True without a reference (Python then aborts after a few
    thousand calls); pyproject excludes it. This fails on any such build before it can crash a user's session."""
    import sys

    from PySide6 import QtCore, QtWidgets

    class Emitter(QtCore.QObject):
        fired = QtCore.Signal()

    widget, emitter = QtWidgets.QWidget(), Emitter()
    before = sys.getrefcount(None), sys.getrefcount(True)
    for _ in range(5000):
        widget.update()
        emitter.fired.emit()
    after = sys.getrefcount(None), sys.getrefcount(True)
    assert after[0] >= before[0] - 100 and after[1] >= before[1] - 100


def test_first_start_shows_the_window_at_once_and_opens_the_project_after_preparing(qtbot, tmp_path, monkeypatch):
    """The kernels' compilation (a minute on a fresh install) runs in the background; the window is up meanwhile."""
    import threading

    from PySide6 import QtCore

    from marginalia.app.main import build_parser, create_window
    from marginalia.engine import Engine

    release = threading.Event()
    calls = []

    def slow_prepare(*, progress=None):   # stands in for the minute of compilation, released by the test
        release.wait(30)
        progress(1, 1, "decoders")
        calls.append("prepared")
        return {"decoders": 0.1}

    monkeypatch.setattr(Engine, "kernels_prepared", staticmethod(lambda: False))
    monkeypatch.setattr(Engine, "prepare_kernels", staticmethod(slow_prepare))
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    settings = QtCore.QSettings(str(tmp_path / "settings.ini"), QtCore.QSettings.Format.IniFormat)
    win = create_window(build_parser().parse_args(["--demo"]), settings=settings)
    qtbot.addWidget(win)
    assert win.engine is None and "first run only" in win.statusBar().currentMessage()
    assert win.runner.is_busy("prepare")
    release.set()
    qtbot.waitUntil(lambda: win.engine is not None, timeout=60_000)
    assert calls == ["prepared"] and win.engine.items()
    win.runner.shutdown()
