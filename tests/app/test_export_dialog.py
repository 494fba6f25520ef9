"""The export dialog says what an export will do and never replaces anything without asking.

Before, the bundle export asked for an existing folder and replaced it whole, the user's files
(and a project inside it) included.
"""

from __future__ import annotations

import os

import pytest
from PySide6 import QtCore, QtWidgets

from marginalia.app.main_window import MainWindow
from marginalia.engine import Engine

from ..reliability.engine_kill_child import make_profiles
from .helpers import finish_io


@pytest.fixture(scope="module")
def win(qapp, tmp_path_factory):
    work = tmp_path_factory.mktemp("exp")
    make_profiles(work / "profiles.csv")
    eng = Engine.create(work / "p.marginalia")
    eng.import_files([work / "profiles.csv"])
    settings = QtCore.QSettings(str(work / "settings.ini"), QtCore.QSettings.Format.IniFormat)
    w = MainWindow(eng, settings=settings)
    w.learner.timer.setInterval(600_000)
    w.show()
    w.work = work
    yield w
    w.close()
    w.deleteLater()


@pytest.fixture
def questions(win, monkeypatch):
    asked = []
    answer = {"value": True}

    def ask(title, text, accept):
        asked.append((text, accept))
        return answer["value"]

    monkeypatch.setattr(win, "ask_user", ask)
    return asked, answer


def choose(monkeypatch, folder):
    monkeypatch.setattr(QtWidgets.QFileDialog, "getExistingDirectory", staticmethod(lambda *a, **k: str(folder)))


@pytest.mark.slow
def test_a_non_empty_folder_gets_the_export_in_a_new_subfolder_the_user_is_told_of(qtbot, win, questions,
                                                                                    monkeypatch, tmp_path):
    asked, _ = questions
    (tmp_path / "thesis.tex").write_text("mine\n")
    choose(monkeypatch, tmp_path)
    win.last_io_result = None
    win.export_dialog("bundle")
    qtbot.waitUntil(lambda: win.last_io_result is not None, timeout=60_000)
    sub = tmp_path / "p-bundle"
    assert len(asked) == 1 and str(sub) in asked[0][0] and "leaves alone" in asked[0][0]
    assert (sub / "manifest.json").is_file()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["p-bundle", "thesis.tex"]
    assert (tmp_path / "thesis.tex").read_text() == "mine\n"


def test_a_previous_export_is_replaced_only_after_the_user_agrees(qtbot, win, questions, monkeypatch, tmp_path):
    asked, answer = questions
    out = tmp_path / "b"
    out.mkdir()
    choose(monkeypatch, out)
    win.last_io_result = None
    win.export_dialog("bundle")                         # an empty folder: no question, filled
    qtbot.waitUntil(lambda: win.last_io_result is not None, timeout=60_000)
    assert asked == [] and (out / "manifest.json").is_file()
    stamp = (out / "manifest.json").stat().st_mtime_ns
    answer["value"] = False
    win.last_io_result = None
    win.export_dialog("bundle")
    assert len(asked) == 1 and "previous Marginalia export" in asked[0][0] and asked[0][1] == "Replace"
    assert win.last_io_result is None and (out / "manifest.json").stat().st_mtime_ns == stamp
    answer["value"] = True
    assert finish_io(qtbot, win, lambda: win.export_dialog("bundle"))
    assert len(asked) == 2 and (out / "manifest.json").stat().st_mtime_ns != stamp
    assert sorted(p.name for p in tmp_path.iterdir()) == ["b"]


def test_a_confirmed_file_that_is_not_an_export_is_left_alone(qtbot, win, questions, monkeypatch):
    profiles = win.work / "profiles.csv"
    data = profiles.read_bytes()
    monkeypatch.setattr(QtWidgets.QFileDialog, "getSaveFileName",
                        staticmethod(lambda *a, **k: (str(profiles), "")))
    win.last_error_dialog = None
    win.export_dialog("annotations-csv")           # the save dialog asked "replace?" and the user said yes
    assert profiles.read_bytes() == data
    text = win.last_error_dialog.informativeText()
    assert "profiles.csv" in text and "not an annotations-csv export" in text
    win.last_error_dialog.close()
    assert os.path.exists(profiles)
