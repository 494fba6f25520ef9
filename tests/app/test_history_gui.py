"""The issue's scenario in the window: an undone import is named, asked about, and one click away in the history."""

import shutil

import pytest
from PySide6 import QtCore
from PySide6.QtCore import Qt

from marginalia.app import theme
from marginalia.app.main_window import MainWindow
from marginalia.engine import DEMO_DIR, Engine
from marginalia.types import RegionKind, RegionLabel

from .helpers import drag, finish_io


@pytest.fixture
def project(tmp_path):
    shutil.copy2(DEMO_DIR / "profiles.csv", tmp_path / "profiles.csv")
    shutil.copy2(DEMO_DIR / "annotations.csv", tmp_path / "annotations.csv")
    path = tmp_path / "p.marginalia"
    with Engine.create(path) as eng:
        eng.import_files([tmp_path / "profiles.csv"])
    return path


def _window(qtbot, tmp_path, path):
    theme.configure_pyqtgraph()
    settings = QtCore.QSettings(str(tmp_path / "settings.ini"), QtCore.QSettings.Format.IniFormat)
    win = MainWindow(Engine.open(path), settings=settings)
    win.learner.enabled = False          # no retrain on the test's edits: this is about the history
    qtbot.addWidget(win)
    win.resize(1200, 800)
    win.show()
    qtbot.waitUntil(lambda: win.current_item is not None, timeout=30_000)
    return win


def _key(qtbot, win, key, modifier):
    win.activateWindow()
    win.active_view().setFocus()
    qtbot.keyClick(win.active_view(), key, modifier)


CTRL = Qt.KeyboardModifier.ControlModifier
SHIFT = Qt.KeyboardModifier.ShiftModifier


@pytest.mark.slow
def test_an_undone_import_is_named_confirmed_and_restored_from_the_history(qtbot, tmp_path, project):
    win = _window(qtbot, tmp_path, project)
    eng = win.engine
    asked = []
    win.ask_before_undo = lambda step: asked.append(step.name) or True
    imported = finish_io(qtbot, win, lambda: win.import_labels_from("annotations-csv",
                                                                    str(tmp_path / "annotations.csv")))
    n = len(imported)
    assert n == 30 and len(eng.labels()) == 30
    assert win.actions["undo"].text() == f"&Undo import of {n} labels"

    _key(qtbot, win, Qt.Key.Key_Z, CTRL)                     # the stray Ctrl+Z
    assert asked == [f"import of {n} labels from annotations.csv"]   # many labels: asked first
    assert eng.labels() == []
    assert win.statusBar().currentMessage() == (f"Undid: import of {n} labels from annotations.csv \u2014 "
                                                "Ctrl+Shift+Z to redo")
    assert win.actions["redo"].text() == f"&Redo import of {n} labels"

    seq = eng.sequence(win.current_item)                      # the next region drawn ends what redo reaches
    drag(qtbot, win.profile_view, win.profile_view.vb, seq.positions[10], seq.positions[40], 0.0)
    qtbot.waitUntil(lambda: len(eng.labels()) == 1, timeout=5000)
    assert not eng.can_redo and not win.actions["redo"].isEnabled()
    name = win.infos[win.current_item].name                   # the menu follows the newest step
    qtbot.waitUntil(lambda: win.actions["undo"].text() == f"&Undo add 1 label on {name}", timeout=2000)
    assert win.actions["redo"].text() == "&Redo"

    win.show_history()                                        # ... but the import is one click away
    dialog = win.history_dialog
    assert dialog.isVisible()
    whats = [dialog.table.item(row, 2).text() for row in range(dialog.table.rowCount())]
    assert whats[0].startswith("add 1 label on ") and whats[1] == f"undo of import of {n} labels from annotations.csv"
    assert whats[2] == f"import of {n} labels from annotations.csv  (undone by step {eng.history()[1].id})"
    assert dialog.select_step(eng.history()[0].id)
    assert f"After it the project had {n} labels; it has 1 now." in dialog.details.text()
    qtbot.mouseClick(dialog.restore_button, Qt.MouseButton.LeftButton)
    assert sorted(lab.id for lab in eng.labels()) == sorted(lab.id for lab in imported)
    assert "Ctrl+Z to take it back" in win.statusBar().currentMessage()
    assert dialog.table.item(0, 2).text().startswith(f"restore to step {eng.history()[0].id} (import of {n}")

    _key(qtbot, win, Qt.Key.Key_Z, CTRL)                      # the restore is itself one undoable step
    assert len(asked) == 2 and asked[1].startswith("restore to step")
    assert len(eng.labels()) == 1
    _key(qtbot, win, Qt.Key.Key_Z, CTRL | SHIFT)
    assert len(eng.labels()) == n
    assert win.statusBar().currentMessage().startswith("Redid: restore to step")

    win.ask_before_undo = lambda step: False                  # answering "Cancel" keeps the labels
    _key(qtbot, win, Qt.Key.Key_Z, CTRL)
    assert len(eng.labels()) == n and win.statusBar().currentMessage().startswith("Kept: restore to step")
    dialog.close()
    win.close()

    win = _window(qtbot, tmp_path, project)                   # a new session: Ctrl+Z cannot reach older steps
    assert win.actions["undo"].text() == "&Undo (nothing in this session)"
    _key(qtbot, win, Qt.Key.Key_Z, CTRL)                      # Ctrl+Z still answers, and changes nothing
    assert len(win.engine.labels()) == n
    assert win.statusBar().currentMessage().startswith("Nothing to undo in this session")
    win.close()


@pytest.mark.slow
def test_model_versions_lists_label_counts_and_reverts_to_the_model_on_more_labels(qtbot, tmp_path, project):
    with Engine.open(project) as eng:          # a model on 30 labels, then one on the 1 label left
        eng.import_labels("annotations-csv", tmp_path / "annotations.csv")
        many = eng.retrain()
        eng.undo()
        first = eng.session.items()[0].id
        eng.add_label(RegionLabel(first, start=0, stop=5, kind=RegionKind.ZERO))
        few = eng.retrain()
        assert eng.better_model_than(few)["id"] == many
    win = _window(qtbot, tmp_path, project)
    win._on_model_updated(few, "retrain")                    # what the window says after such a retrain
    assert win.statusBar().currentMessage().startswith(f"Model retrained on fewer labels than model {many[:12]} "
                                                       "(30 labels), which is kept")
    offered = []
    win.choose_model_version = lambda versions: offered.append(versions) or many
    win.model_versions_dialog()
    assert {v["id"]: v["n_labels"] for v in offered[0]}[many] == 30
    assert [v["id"] for v in offered[0] if v["current"]] == [few]
    assert win.statusBar().currentMessage().startswith(f"Reverted to model {many[:12]} (fitted on 30 labels)")
    assert win.engine.model_versions(first)[-1]["reverted_from"] == many
    assert win.engine.model_id(first) == win.engine.model_versions(first)[-1]["id"]
    win.close()
