"""A new user's path through the real app: the import dialog's preview and pairing, attaching a score to and
removing an item (each undoable), the start page, and error dialogs that fit the screen."""

from __future__ import annotations

import numpy as np
import pytest
from PySide6 import QtCore, QtWidgets

from marginalia.app import errors
from marginalia.app.main_window import MainWindow
from marginalia.engine import Engine
from marginalia.types import BoundaryLabel
from tests.core.test_importing import vienna_files


@pytest.fixture
def files(tmp_path):
    """Two recordings and two scores in the Vienna 4x22 naming (<piece>_pNN.wav, <piece>.mid), as strings."""
    f = vienna_files(tmp_path / "data")
    return {"wav": str(f["wav"]), "wav2": str(f["other_wav"]), "mid": str(f["mid"]), "mid2": str(f["other_mid"])}


@pytest.fixture
def win(qtbot, tmp_path):
    settings = QtCore.QSettings(str(tmp_path / "s.ini"), QtCore.QSettings.Format.IniFormat)
    w = MainWindow(settings=settings)
    qtbot.addWidget(w)
    w.resize(1200, 800)
    w.show()
    yield w
    for dlg in QtWidgets.QApplication.topLevelWidgets():
        if isinstance(dlg, QtWidgets.QDialog) and dlg.isVisible():
            dlg.close()
    w.close_engine()


def _open_preview(qtbot, w, paths):
    w.import_preview = None
    w.preview_import(paths)
    qtbot.waitUntil(lambda: getattr(w, "import_preview", None) is not None and w.import_preview.isVisible(),
                    timeout=30_000)
    return w.import_preview


@pytest.mark.slow
def test_import_dialog_shows_the_guessed_pairs_and_imports_the_pairs_chosen(qtbot, win, files, tmp_path):
    win.set_engine(Engine.create(tmp_path / "p.marginalia"))
    bad = tmp_path / "data" / "notes.bin"
    bad.write_bytes(b"\x00\x01")
    dialog = _open_preview(qtbot, win, [files["wav"], files["wav2"], files["mid"], files["mid2"], str(bad)])
    assert win.engine.items() == []                       # nothing is imported while the dialog is open
    assert dialog.pairs() == {files["wav"]: files["mid"], files["wav2"]: files["mid2"]}
    rows = {dialog.files.topLevelItem(i).text(0): dialog.files.topLevelItem(i)
            for i in range(dialog.files.topLevelItemCount())}
    assert rows["Chopin_op10_no3.mid"].text(2) == "4 score events"
    assert "notes.bin" in rows["notes.bin"].text(2) and rows["notes.bin"].text(1) == "cannot be imported"
    # the user pairs the first recording with the other score and takes the score away from the second
    dialog.choose_score(files["wav"], files["mid2"])
    combo2 = dialog.combos[files["wav2"]]
    combo2.setCurrentIndex(combo2.findData(None))
    assert dialog.summary.text() == ("Will add 2 items (1 recording with a score); not imported (no recording): "
                                     "Chopin_op10_no3.mid; 1 file left out (see the lines above).")
    win.last_io_result = None
    qtbot.mouseClick(dialog.import_button, QtCore.Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: win.last_io_result is not None, timeout=30_000)
    recs = {r.name: r for r in (win.engine.item(i) for i in win.last_io_result)}
    assert recs["Chopin_op10_no3_p01"].task == "alignment"
    assert recs["Chopin_op10_no3_p01"].meta["n_events"] == 6
    assert recs["Chopin_op38_p01"].task == "segmentation"
    qtbot.waitUntil(lambda: len(win.browser.item_ids_in_order()) == 2, timeout=5000)


def _coriell_like(path):
    """A DNAcopy wide table in kb over most of chromosomes 1 and 2, and a second table with odd column names."""
    rng = np.random.default_rng(5)
    rows = ["Clone,Chromosome,Position,A,B"]
    for chrom, top in (("1", 240_000), ("2", 230_000)):
        rows += [f"c{chrom}_{k},{chrom},{int(x)},{rng.normal():.4f},{rng.normal():.4f}"
                 for k, x in enumerate(np.linspace(500, top, 30))]
    path.write_text("\n".join(rows) + "\n")
    return str(path)


@pytest.mark.slow
def test_import_dialog_maps_the_columns_and_the_position_unit(qtbot, win, tmp_path):
    win.set_engine(Engine.create(tmp_path / "p.marginalia"))
    (tmp_path / "data").mkdir()
    wide = _coriell_like(tmp_path / "data" / "coriell.csv")
    odd = tmp_path / "data" / "odd.csv"
    odd.write_text("tumour,arm,coord,ratio\n" + "".join(f"T1,1,{1000 * k},{0.1 * k:.1f}\n" for k in range(1, 9)))
    with pytest.warns(UserWarning, match="looks like kb"):
        dialog = _open_preview(qtbot, win, [wide, str(odd)])
    box = dialog.mappings[wide]
    assert box.table.header == ("Clone", "Chromosome", "Position", "A", "B")
    assert box.preview.rowCount() == 5 and box.preview.item(0, 2).text() == "500"
    assert box.combos["chromosome"].currentData() == "Chromosome" and box.combos["logratio"].currentData() == "A+B"
    assert "DNAcopy wide table, 2 samples" in box.status.text() and "look like kb" in box.status.text()
    box.choose_unit("kb")
    assert "positions in kb" in box.status.text() and "look like" not in box.status.text()
    # the table the reader could not map: its columns are offered, and a wrong choice is refused on the spot
    fix = dialog.mappings[str(odd)]
    assert fix.combos["position"].currentData() is None and not fix.valid and "position" in fix.status.text()
    fix.choose("position", "coord")
    fix.choose("logratio", "tumour")
    assert not fix.valid and "'tumour' holds 'T1', not a number" in fix.status.text()
    assert str(odd) not in dialog.columns()
    fix.choose("id", "tumour")
    fix.choose("chromosome", "arm")
    fix.choose("position", "coord")
    fix.choose("logratio", "ratio")
    assert fix.valid and "long table: id=tumour" in fix.status.text()
    assert dialog.columns() == {wide: "chromosome=Chromosome,position=Position,logratio=A+B,unit=kb",
                                str(odd): "id=tumour,chromosome=arm,position=coord,logratio=ratio,unit=bp"}
    win.last_io_result = None
    qtbot.mouseClick(dialog.import_button, QtCore.Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: win.last_io_result is not None, timeout=30_000)
    names = {win.engine.item(i).name: i for i in win.last_io_result}
    assert set(names) == {"A:1", "A:2", "B:1", "B:2", "T1:1"}
    assert float(win.engine.sequence(names["A:1"]).positions.max()) == 240_000_000
    assert win.engine.sequence(names["T1:1"]).positions.tolist() == [1000.0 * k for k in range(1, 9)]


@pytest.mark.slow
def test_cancel_imports_nothing(qtbot, win, files, tmp_path):
    win.set_engine(Engine.create(tmp_path / "p.marginalia"))
    dialog = _open_preview(qtbot, win, [files["wav"], files["mid"]])
    dialog.reject()
    qtbot.wait(200)
    assert win.engine.items() == [] and not win.runner.is_busy("import")


@pytest.mark.slow
def test_attach_score_and_remove_item_from_the_browser_menu_are_undoable(qtbot, win, files, tmp_path):
    eng = Engine.create(tmp_path / "p.marginalia")
    a, b = eng.import_files([files["wav"], files["wav2"]])
    eng.add_label(BoundaryLabel(item_id=a, index=20))
    win.set_engine(eng)
    qtbot.waitUntil(lambda: win.current_item == a, timeout=30_000)
    note = win.spec_view.no_score_note
    assert note.isVisible() and note.text().startswith("No score: this recording is segmented")
    assert "Attach / replace score" in note.text()
    step = win.attach_score(a, files["mid"])
    assert step is not None and eng.item(a).task == "alignment" and eng.labels(a) == []
    assert "Ctrl+Z" in win.statusBar().currentMessage()
    qtbot.waitUntil(lambda: win.current_item == a and win._item_payload is not None
                    and win._item_payload["score"] is not None, timeout=30_000)   # the view reloads with its score
    assert not note.isVisible() and win.spec_view.score_shown
    win.undo()
    assert eng.item(a).task == "segmentation" and len(eng.labels(a)) == 1
    qtbot.waitUntil(lambda: win._item_payload is not None and win._item_payload["score"] is None, timeout=30_000)
    # remove through the Dataset panel's context menu
    menu = win.browser.item_menu(a)
    texts = [act.text() for act in menu.actions()]
    assert texts == ["Attach / replace score\u2026", "Remove item"]
    menu.actions()[1].trigger()
    assert [i.id for i in eng.items()] == [b]
    qtbot.waitUntil(lambda: win.browser.item_ids_in_order() == [b], timeout=5000)
    assert win.current_item != a
    win.undo()
    assert sorted(i.id for i in eng.items()) == sorted([a, b]) and len(eng.labels(a)) == 1
    qtbot.waitUntil(lambda: sorted(win.browser.item_ids_in_order()) == sorted([a, b]), timeout=5000)
    assert eng.session.integrity_check() == []


@pytest.mark.slow
def test_start_page_offers_demo_new_from_files_open_and_recent(qtbot, win, files, tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))   # the demo is built there
    page = win.start_page
    assert win.stack.currentWidget() is page and page.isVisible()
    assert not page.recent.isVisible()                             # nothing recent on a first run
    # new project from files: a project file, then the files, then the import dialog
    seen = {}

    def save(parent, title, start, filters=""):
        seen["save_start"] = start
        return str(tmp_path / "work" / "first"), filters

    def pick(parent, title, start, filters=""):
        seen["open_start"] = start
        return [files["wav"], files["mid"]], filters

    (tmp_path / "work").mkdir()
    monkeypatch.setattr(QtWidgets.QFileDialog, "getSaveFileName", staticmethod(save))
    monkeypatch.setattr(QtWidgets.QFileDialog, "getOpenFileNames", staticmethod(pick))
    qtbot.mouseClick(page.buttons["new"], QtCore.Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: getattr(win, "import_preview", None) is not None and win.import_preview.isVisible(),
                    timeout=30_000)
    assert str(win.engine.path).endswith("first.marginalia")
    assert seen["save_start"].startswith(str(QtCore.QDir.homePath()))  # a first dialog opens at home
    assert seen["open_start"] == str(tmp_path / "work")                # the next one where the user last was
    assert win.import_preview.pairs() == {files["wav"]: files["mid"]}
    win.import_preview.reject()
    # the demo
    qtbot.mouseClick(page.buttons["demo"], QtCore.Qt.MouseButton.LeftButton)
    assert str(win.engine.path).endswith("demo.marginalia")
    win.close_engine()
    assert win.stack.currentWidget() is page
    # recent projects: both are listed and a click opens one
    listed = [page.recent.item(i).data(QtCore.Qt.ItemDataRole.UserRole) for i in range(page.recent.count())]
    assert listed == [str(win.recent_projects()[0]), str(win.recent_projects()[1])]
    assert listed[1].endswith("first.marginalia")
    rect = page.recent.visualItemRect(page.recent.item(1))
    qtbot.mouseClick(page.recent.viewport(), QtCore.Qt.MouseButton.LeftButton, pos=rect.center())
    assert str(win.engine.path) == listed[1]
    win.close_engine()
    # open a project
    monkeypatch.setattr(QtWidgets.QFileDialog, "getOpenFileName",
                        staticmethod(lambda parent, title, start, filters="": (listed[0], filters)))
    qtbot.mouseClick(page.buttons["open"], QtCore.Qt.MouseButton.LeftButton)
    assert str(win.engine.path) == listed[0]


def _damaged_error(tmp_path, lines: int):
    from marginalia.exceptions import ProjectDamagedError
    problem = "integrity check failed: " + "; ".join(f"row {i} missing from index sqlite_autoindex_labels_1"
                                                     for i in range(lines))
    backup = tmp_path / "p.marginalia.2026-11-28T15-00-00.w12.sqlite"
    return ProjectDamagedError(f"project {tmp_path / 'p.marginalia'} is damaged: {problem}; it was not modified; "
                               f"restore the newest backup ({backup})", backups=(backup,), problem=problem)


@pytest.mark.slow
def test_damaged_project_dialog_fits_the_screen_with_details_collapsed(qtbot, win, tmp_path):
    exc = _damaged_error(tmp_path, 400)
    dialog = errors.show_error(win, "Cannot open p.marginalia", exc)
    qtbot.addWidget(dialog)
    win._offer_backup(dialog, str(tmp_path / "p.marginalia"), exc.backups[0])
    qtbot.waitUntil(dialog.isVisible)
    room = dialog.screen().availableGeometry()
    assert dialog.height() <= room.height() and dialog.frameGeometry().height() <= room.height()
    assert "row 399" in dialog.detailedText() and "row 1 " not in dialog.informativeText()
    assert dialog.informativeText().startswith(f"{tmp_path / 'p.marginalia'} is damaged; it was not modified")
    assert dialog.informativeText().count("backup") == 1                   # the fix, said once
    restore = next(b for b in dialog.buttons() if b.text() == "Restore last good backup")
    assert restore.isVisible()
    assert restore.mapTo(dialog, restore.rect().bottomRight()).y() <= dialog.height()
    details = next(b for b in dialog.buttons() if b.text().startswith("Show Details"))
    qtbot.mouseClick(details, QtCore.Qt.MouseButton.LeftButton)          # the details open in a scrolling box
    qtbot.waitUntil(lambda: any(b.text().startswith("Hide Details") for b in dialog.buttons()))
    assert dialog.frameGeometry().height() <= room.height() and restore.isVisible()


def test_a_text_file_opened_as_a_project_is_not_called_damaged(qtbot, win, tmp_path):
    path = tmp_path / "notes.marginalia"
    path.write_text("profile.id,chromosome,position,logratio\n1,1,100,0.2\n")
    assert win.open_project(str(path)) is False
    dialog = win.last_error_dialog
    text = dialog.informativeText()
    assert text == ("notes.marginalia is not a Marginalia project (it is a text file); open a .marginalia project, "
                    "or import the file with File \u25b8 Import (marginalia-cli project create P.marginalia "
                    "--import FILE)")
    assert "damaged" not in dialog.text() + text and not dialog.detailedText()
    assert not any(b.text() == "Restore last good backup" for b in dialog.buttons())


@pytest.mark.slow
def test_the_demo_opens_with_a_skippable_tour_that_help_reopens(qtbot, win, tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    win.open_demo()
    tour = win.tour
    assert tour.isVisible() and tour.counter.text() == "1 / 5" and tour.target() is win.browser_dock
    frame = tour.highlight.geometry()
    assert frame.contains(win.browser_dock.geometry().center())     # the framed panel is the one described
    assert not tour.geometry().intersects(win.browser_dock.geometry().adjusted(4, 4, -4, -4))
    qtbot.mouseClick(tour.next_button, QtCore.Qt.MouseButton.LeftButton)
    assert tour.target() is win.stack and "Drag to select a region" in tour.text.text()
    qtbot.mouseClick(tour.skip_button, QtCore.Qt.MouseButton.LeftButton)
    assert not tour.isVisible() and not tour.highlight.isVisible()
    win.close_engine()
    win.open_demo()                                       # skipped once: not shown by itself again
    assert not tour.isVisible()
    win.actions["tour"].trigger()                         # Help > Guided tour
    assert tour.isVisible() and tour.counter.text() == "1 / 5"
    for _ in range(5):
        qtbot.mouseClick(tour.next_button, QtCore.Qt.MouseButton.LeftButton)
    assert not tour.isVisible()
