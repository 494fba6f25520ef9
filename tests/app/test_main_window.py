"""The main window over an in-memory engine: labelling with mouse and keys, live learning, questions, files."""

from __future__ import annotations

import json

import numpy as np
import pytest
from PySide6 import QtCore, QtWidgets
from PySide6.QtCore import Qt

from marginalia.app import theme
from marginalia.app.main_window import MainWindow
from marginalia.types import BoundaryLabel, RegionKind, RegionLabel

from .fake_engine import FakeEngine
from .helpers import StandInPlayer, click, drag, finish_io


@pytest.fixture(scope="module")
def shared_window(qapp, tmp_path_factory):
    """One window for the module (building one takes a second); each test gets a fresh engine."""
    theme.configure_pyqtgraph()
    path = tmp_path_factory.mktemp("win") / "settings.ini"
    win = MainWindow(settings=QtCore.QSettings(str(path), QtCore.QSettings.Format.IniFormat))
    win.resize(1300, 850)
    win.show()
    yield win
    win.close()
    win.deleteLater()


@pytest.fixture
def window(qtbot, shared_window, tmp_path):
    win = shared_window
    win.settings.clear()
    win.set_engine(FakeEngine(tmp_path / "p.marginalia"))
    win.show_item("cgh-a")
    qtbot.waitUntil(lambda: win.current_item == "cgh-a" and win.current_prediction() is not None
                    and win.current_prediction().item_id == "cgh-a", timeout=5000)
    win.show_all()
    yield win
    for dlg in QtWidgets.QApplication.topLevelWidgets():
        if isinstance(dlg, QtWidgets.QDialog) and dlg.isVisible():
            dlg.close()


def _press(qtbot, win, key, modifier=Qt.KeyboardModifier.NoModifier):
    win.activateWindow()
    win.profile_view.setFocus()
    qtbot.keyClick(win.profile_view, key, modifier)


@pytest.mark.slow
def test_drag_labels_and_the_prediction_obeys_it(qtbot, window):
    win, eng = window, window.engine
    seq = eng.sequence("cgh-a")
    assert win.current_prediction().structure.breakpoints.tolist() == []  # untrained
    drag(qtbot, win.profile_view, win.profile_view.vb, seq.positions[20], seq.positions[50], 0.3)
    labs = eng.labels("cgh-a")
    assert len(labs) == 1 and isinstance(labs[0], RegionLabel) and labs[0].kind == RegionKind.ZERO
    _press(qtbot, win, Qt.Key.Key_1)   # the new region is selected: make it "exactly one change"
    assert eng.labels("cgh-a")[0].kind == RegionKind.ONE
    lab = eng.labels("cgh-a")[0]
    qtbot.waitUntil(lambda: any(lab.start < c < lab.stop for c in win.current_prediction().structure.breakpoints),
                    timeout=5000)
    assert win.latencies and all(t < 5 for t in win.latencies)
    assert ("update", "cgh-a") in eng.calls
    assert win.label_list.count() == 1


def test_a_boundary_placed_near_a_change_the_model_draws_snaps_onto_it(qtbot, window):
    from marginalia.app.views.base_view import SNAP_PX
    win, eng = window, window.engine
    view = win.profile_view
    pred = win.current_prediction()
    candidates = set(pred.structure.changes[:-1].tolist()) | set(pred.runner_up.changes[:-1].tolist())
    c = min(candidates)                              # a change of the model or of its runner-up
    pixel = view.vb.viewPixelSize()[0]
    x = float(view.mapping.change_x(c)) + 0.6 * SNAP_PX * pixel
    assert view.mapping.nearest_change(x) != c       # the click itself is a few probes off
    click(qtbot, view, view.vb, x, 0.3, modifier=Qt.KeyboardModifier.ControlModifier)
    assert [lab.index for lab in eng.labels("cgh-a")] == [c]
    far = float(view.mapping.change_x(c)) + 3 * SNAP_PX * pixel
    click(qtbot, view, view.vb, far, 0.3, modifier=Qt.KeyboardModifier.ControlModifier)
    assert sorted(lab.index for lab in eng.labels("cgh-a")) == [c, view.mapping.nearest_change(far)]


def test_ctrl_click_boundary_delete_undo_redo(qtbot, window):
    win, eng = window, window.engine
    seq = eng.sequence("cgh-a")
    x = 0.5 * (seq.positions[119] + seq.positions[120])
    click(qtbot, win.profile_view, win.profile_view.vb, x, 0.3, modifier=Qt.KeyboardModifier.ControlModifier)
    labs = eng.labels("cgh-a")
    assert len(labs) == 1 and isinstance(labs[0], BoundaryLabel) and labs[0].index == 120
    assert win.profile_view.selected_id == labs[0].id
    _press(qtbot, win, Qt.Key.Key_Delete)
    assert eng.labels("cgh-a") == []
    _press(qtbot, win, Qt.Key.Key_Z, Qt.KeyboardModifier.ControlModifier)
    assert len(eng.labels("cgh-a")) == 1
    assert len(win.profile_view.labels()) == 1
    _press(qtbot, win, Qt.Key.Key_Z, Qt.KeyboardModifier.ControlModifier | Qt.KeyboardModifier.ShiftModifier)
    assert eng.labels("cgh-a") == []
    qtbot.waitUntil(lambda: win.profile_view.labels() == [], timeout=2000)


def test_retrain_changes_the_prediction(qtbot, window):
    win, eng = window, window.engine
    before = win.current_prediction()
    win.actions["retrain"].trigger()
    qtbot.waitUntil(lambda: win.current_prediction() is not before
                    and win.current_prediction().structure.breakpoints.tolist() == [60, 140], timeout=5000)
    assert ("retrain",) in eng.calls
    assert win.model_panel.model_label.text().startswith(eng.current_model_id)


def test_stale_prediction_is_drawn_stale(qtbot, window):
    win, eng = window, window.engine
    eng.model_n += 1   # a newer model exists; the drawn prediction is now stale
    pred = eng.prediction("cgh-a")
    win._drawn_prediction = None
    win._draw_prediction(pred)
    assert win.profile_view.means.opts["pen"].color().name() == theme.STALE


@pytest.mark.slow
def test_next_question_jumps_to_and_frames_the_part(qtbot, window):
    win, eng = window, window.engine
    win.actions["next_question"].trigger()
    qtbot.waitUntil(lambda: win.current_item == "cgh-b", timeout=5000)
    qtbot.waitUntil(lambda: win.active_panel.queue.topLevelItemCount() == 3, timeout=5000)
    seq = eng.sequence("cgh-b")
    # the queue numbers the part as the Labels panel and the exports do: 0-based, both ends included
    assert win.active_panel.queue.topLevelItem(0).text(2) == "probes 40\u2013119"
    assert win.active_panel.queue.topLevelItem(2).text(2) == "events 0\u20132"
    x0, x1 = win.profile_view.x_range()
    assert x0 <= seq.positions[40] and x1 >= seq.positions[119]
    assert x1 - x0 < 0.8 * (seq.positions[-1] - seq.positions[0])  # zoomed on the part, not the whole
    # "model is right" here turns the prediction on the part into a label
    win.actions["accept"].trigger()
    qtbot.waitUntil(lambda: len(eng.labels("cgh-b")) == 1, timeout=5000)
    lab = eng.labels("cgh-b")[0]
    assert (lab.start, lab.stop) == (40, 120)


def test_runner_up_is_right_labels_the_runner_up(qtbot, window):
    win, eng = window, window.engine
    win.follow_query(eng.next_queries()[1])   # cgh-a [20, 80); runner-up adds a change at T/2=100: none inside
    qtbot.waitUntil(lambda: not win.runner.is_busy("question"), timeout=5000)
    win._drop_question()                      # no question about the part: B accepts the runner-up there
    win.current_query = type(win.current_query)("cgh-a", 90, 110, 0.5)
    win.actions["accept_runner"].trigger()
    labs = eng.labels("cgh-a")
    kinds = sorted(type(lab).__name__ for lab in labs)
    assert kinds == ["BoundaryLabel", "RegionLabel"]
    region = next(lab for lab in labs if isinstance(lab, RegionLabel))
    assert region.kind == RegionKind.ONE and (region.start, region.stop) == (90, 110)
    win.undo()                                # accepting the runner-up was one edit
    assert eng.labels("cgh-a") == []


@pytest.mark.slow
def test_audio_item_anchor_by_dragging_a_note(qtbot, window):
    win, eng = window, window.engine
    win.browser.select("aud")
    qtbot.waitUntil(lambda: win.current_item == "aud" and win.current_prediction() is not None
                    and win.current_prediction().item_id == "aud", timeout=5000)
    assert win.stack.currentWidget() is win.spec_view and win.spec_view.score_shown
    sv = win.score_view
    x, y = sv.note_center(3)
    drag(qtbot, win.spec_view, sv.vb, x, x + 1.0, y)
    labs = eng.labels("aud")
    assert len(labs) == 1 and labs[0].event == int(eng.the_score.note_event[3])
    assert abs(labs[0].time_s - (x + 1.0)) < 0.2
    want = eng.sequence("aud").index_of(labs[0].time_s)
    qtbot.waitUntil(lambda: abs(int(win.current_prediction().structure.onsets[3]) - want) <= 1, timeout=5000)


def test_playback_without_audio_library_says_why_at_each_press(qtbot, window):
    win = window
    win.show_item("aud")
    qtbot.waitUntil(lambda: win.current_item == "aud", timeout=5000)
    win.statusBar().clearMessage()
    win.actions["play"].trigger()
    if win.audio.available:       # a machine with QtMultimedia and a sound card: playback starts
        assert win.statusBar().currentMessage() == ""
        return
    assert "audio playback is unavailable" in win.statusBar().currentMessage()
    win.statusBar().clearMessage()
    win.actions["play"].trigger()
    assert "audio playback is unavailable" in win.statusBar().currentMessage()   # a silent button looks broken
    assert "unavailable" in win.actions["play"].toolTip()
    assert win.current_item == "aud"                  # and nothing else broke


def test_export_then_reimport_restores_the_labels(qtbot, window, tmp_path):
    win, eng = window, window.engine
    eng.add_label(RegionLabel(item_id="cgh-a", start=5, stop=30, kind=RegionKind.ONE))
    out = tmp_path / "annotations.csv"
    assert finish_io(qtbot, win, lambda: win.export_to("annotations-csv", str(out))) == [str(out)]
    rows = json.loads(out.read_text())
    eng.delete_label(eng.labels("cgh-a")[0].id)
    assert eng.labels("cgh-a") == []
    finish_io(qtbot, win, lambda: win.import_labels_from("annotations-csv", str(out)))
    labs = eng.labels("cgh-a")
    assert [(lab.start, lab.stop, lab.kind.value) for lab in labs] == [(r["start"], r["stop"], r["kind"]) for r in rows]
    qtbot.waitUntil(lambda: len(win.profile_view.labels()) == 1, timeout=2000)


def test_corrupt_file_gives_a_clear_dialog_not_a_traceback(qtbot, window, tmp_path):
    win = window
    bad = tmp_path / "broken.csv"
    bad.write_text("\x00\x01garbage")
    assert finish_io(qtbot, win, lambda: win.import_labels_from("annotations-csv", str(bad))) == []
    dlg = win.last_error_dialog
    assert isinstance(dlg, QtWidgets.QMessageBox) and dlg.isVisible()
    text = dlg.informativeText()
    assert "broken.csv" in text and "Traceback" not in text
    assert "supported formats" in text   # the fix is spelled out
    assert dlg.open_log_button.text() == "Open log"
    dlg.close()
    assert finish_io(qtbot, win, lambda: win.import_data([str(bad)])) == []
    assert "line 1" in win.last_error_dialog.informativeText()
    win.last_error_dialog.close()


def test_cheat_sheet_lists_every_shortcut_and_filters(qtbot, window):
    win = window
    sheet = win.show_cheatsheet()
    qtbot.addWidget(sheet)
    names = sheet.visible_actions()
    assert "Undo" in names and "Next question" in names and len(names) == len(win.actions)
    shortcuts = {sheet.table.topLevelItem(i).text(0): sheet.table.topLevelItem(i).text(1)
                 for i in range(sheet.table.topLevelItemCount())}
    assert shortcuts["Undo"] == "Ctrl+Z" and shortcuts["Keyboard shortcuts"] == "F1"
    assert shortcuts["Show model panel"] == "Alt+3"   # the dock toggles are actions too
    assert all(shortcuts.values()), [name for name, keys in shortcuts.items() if not keys]  # every action has one
    sheet.search.setText("retrain")
    assert sheet.visible_actions() == ["Retrain now", "Retrain every task"]
    sheet.search.setText("ctrl+shift+z")
    assert sheet.visible_actions() == ["Redo"]
    sheet.close()


def test_browser_sorts_by_uncertainty(qtbot, window):
    win = window
    win.browser.sort_by_uncertainty()
    order = win.browser.item_ids_in_order()
    assert order.index("cgh-a") < order.index("cgh-b")   # 0.7 before 0.3 within the aCGH group
    row = win.browser._rows["cgh-a"]
    assert row.text(3) == "0.36"                          # shown as the margin -ln 0.7


def _reopened_where_left(qtbot, tmp_path, settings, seq):
    """A new window on ``p.marginalia`` with ``settings``, checked to show cgh-b at positions 10 to 30 as it was left."""
    win2 = MainWindow(FakeEngine(tmp_path / "p.marginalia"), settings=settings)
    qtbot.addWidget(win2)
    win2.show()
    qtbot.waitUntil(lambda: win2.current_item == "cgh-b", timeout=5000)
    x0, x1 = win2.profile_view.x_range()
    assert abs(x0 - seq.positions[10]) < 1e-6 * seq.positions[-1] + 1
    assert abs(x1 - seq.positions[30]) < 1e-6 * seq.positions[-1] + 1
    return win2

@pytest.mark.slow
def test_reopening_restores_item_and_view_range(qtbot, tmp_path):
    theme.configure_pyqtgraph()
    settings = QtCore.QSettings(str(tmp_path / "s.ini"), QtCore.QSettings.Format.IniFormat)
    eng = FakeEngine(tmp_path / "p.marginalia")
    win = MainWindow(eng, settings=settings)
    qtbot.addWidget(win)
    win.show()
    win.show_item("cgh-b")
    qtbot.waitUntil(lambda: win.current_item == "cgh-b", timeout=5000)
    seq = eng.sequence("cgh-b")
    win.profile_view.main.setXRange(seq.positions[10], seq.positions[30], padding=0)
    win.close()   # as after a crash, settings hold the last place
    win2 = _reopened_where_left(qtbot, tmp_path, settings, seq)
    assert str(tmp_path / "p.marginalia") in win2.recent_projects()
    win2.close()


def test_views_use_the_same_time_axis(qtbot, window):
    win = window
    win.show_item("aud")
    qtbot.waitUntil(lambda: win.current_item == "aud", timeout=5000)
    win.spec_view.main.setXRange(2.0, 4.0, padding=0)
    np.testing.assert_allclose(win.score_view.viewRange()[0], win.spec_view.main.viewRange()[0])


def _show_audio(qtbot, win):
    win.show_item("aud")
    qtbot.waitUntil(lambda: win.current_item == "aud" and win.current_prediction() is not None
                    and win.current_prediction().item_id == "aud", timeout=5000)


def test_the_toolbar_shows_what_a_drag_makes_on_the_shown_item(qtbot, window):
    win = window
    win.set_region_kind(RegionKind.ONE)
    assert win.actions["kind1"].isChecked() and not win.span_kind.isVisible()
    _show_audio(qtbot, win)                # aligned to its score: a drag marks an event span
    assert win.span_kind.isVisible() and win.span_kind.isChecked()
    assert not any(win.actions[k].isVisible() for k in ("kind0", "kind1", "kind2", "kindS"))
    win.show_item("cgh-b")
    qtbot.waitUntil(lambda: win.current_item == "cgh-b", timeout=5000)
    assert win.actions["kind1"].isVisible() and win.actions["kind1"].isChecked()    # the kind picked before
    assert not win.span_kind.isVisible()


@pytest.mark.slow
def test_drag_on_an_aligned_spectrogram_makes_an_event_span_drawn_on_both_views(qtbot, window):
    win, eng = window, window.engine
    _show_audio(qtbot, win)
    sv = win.score_view
    ev_t = sv.event_times.copy()          # where the drawn alignment puts each event (s)
    t0, t1 = 0.5 * (ev_t[1] + ev_t[2]), 0.5 * (ev_t[3] + ev_t[4])
    drag(qtbot, win.spec_view, win.spec_view.vb, t0, t1, 16.0)
    labs = eng.labels("aud")
    assert len(labs) == 1 and type(labs[0]).__name__ == "EventSpanLabel"
    lab = labs[0]
    assert (lab.first, lab.last) == (2, 3)
    assert abs(lab.t0_s - t0) < 0.1 and abs(lab.t1_s - t1) < 0.1
    qtbot.waitUntil(lambda: lab.id in win.spec_view._label_items, timeout=2000)
    assert win.spec_view._label_items[lab.id].getRegion() == pytest.approx((lab.t0_s, lab.t1_s))
    np.testing.assert_array_equal(sv.span_note_mask(), np.isin(eng.the_score.note_event, [2, 3]))
    assert "events 2\u20133" in win.label_list.item(0).text()
    win.spec_view.select_label(lab.id)
    win.delete_selected()
    assert eng.labels("aud") == []
    qtbot.waitUntil(lambda: not sv.span_note_mask().any() and not win.spec_view._label_items, timeout=2000)


def test_runner_up_alignment_is_drawn_only_where_it_differs(qtbot, window):
    win, eng = window, window.engine
    _show_audio(qtbot, win)
    pred = win.current_prediction()
    differ = np.flatnonzero(pred.runner_up.onsets != pred.structure.onsets)
    assert differ.tolist() == [1]          # the stand-in's runner-up moves event 1 by a frame
    notes = win.score_view._runner_notes
    assert notes is not None and len(notes.opts["x0"]) == int(np.sum(eng.the_score.note_event == 1))
    times = eng.sequence("aud").positions
    xs = np.unique(win.spec_view.runner.getData()[0])
    np.testing.assert_allclose(xs, [times[pred.runner_up.onsets[1]]])


@pytest.mark.slow
def test_a_prediction_left_behind_by_a_newer_model_turns_stale(qtbot, window):
    from marginalia import events as ev

    win, eng = window, window.engine
    strip = win.profile_view.strip
    assert "model model-0" in strip.text() and "STALE" not in strip.text()
    win.learner.enabled = False            # nothing will replace the drawn prediction
    eng.model_n += 1
    eng.events.emit(ev.ModelChanged(eng.current_model_id))
    qtbot.waitUntil(lambda: "STALE" in strip.text(), timeout=3000)
    assert "model-1" in strip.text() and "model model-0" in strip.text()
    assert win.profile_view.means.opts["pen"].color().name() == theme.STALE
    win.learner.enabled = True
    win.predict_current()
    qtbot.waitUntil(lambda: "STALE" not in strip.text(), timeout=3000)
    assert win.profile_view.means.opts["pen"].color().name() == theme.PREDICTION


@pytest.mark.slow
def test_a_retrain_redraws_the_item_shown_when_it_ends(qtbot, window):
    """The item a person moves to during a retrain (or visits after it) is predicted anew, never left "STALE"."""
    win, eng = window, window.engine
    strip = win.profile_view.strip
    win.show_item("cgh-b")
    qtbot.waitUntil(lambda: win.current_prediction() is not None and win.current_prediction().item_id == "cgh-b",
                    timeout=5000)
    win.show_item("cgh-a")
    qtbot.waitUntil(lambda: win.current_prediction().item_id == "cgh-a", timeout=5000)
    win.retrain()
    win.show_item("cgh-b")                 # its cached prediction is the untrained model's
    qtbot.waitUntil(lambda: win.current_item == "cgh-b" and win.current_prediction().item_id == "cgh-b"
                    and win.current_prediction().model_id == eng.current_model_id, timeout=5000)
    assert win.current_prediction().structure.breakpoints.tolist() == [90]
    assert "STALE" not in strip.text() and not win._drawn_stale


@pytest.mark.slow
def test_layout_item_and_range_are_on_disk_without_a_clean_exit(qtbot, tmp_path):
    import shutil

    theme.configure_pyqtgraph()
    ini = tmp_path / "s.ini"
    win = MainWindow(FakeEngine(tmp_path / "p.marginalia"),
                     settings=QtCore.QSettings(str(ini), QtCore.QSettings.Format.IniFormat))
    qtbot.addWidget(win)
    win.show()
    win.show_item("cgh-b")
    qtbot.waitUntil(lambda: win.current_item == "cgh-b", timeout=5000)
    win.model_dock.hide()
    seq = win.engine.sequence("cgh-b")
    win.profile_view.main.setXRange(seq.positions[10], seq.positions[30], padding=0)
    # no close(): what a crash would leave is what is on disk now
    qtbot.waitUntil(lambda: ini.exists() and "x_range" in ini.read_text() and "cgh-b" in ini.read_text(),
                    timeout=5000)
    shutil.copy(ini, tmp_path / "after_crash.ini")   # a fresh file: nothing shared with the live settings
    win2 = _reopened_where_left(
        qtbot, tmp_path, QtCore.QSettings(str(tmp_path / "after_crash.ini"), QtCore.QSettings.Format.IniFormat), seq)
    assert win2.model_dock.isHidden() and not win2.browser_dock.isHidden()
    win.close()
    win2.close()


def test_playback_cursor_moves_and_pages_the_view(qtbot, window):
    from marginalia.app.audio import AudioPlayer

    win = window
    win.audio, win.audio_factory = None, StandInPlayer
    try:
        _show_audio(qtbot, win)
        win.current_query = None
        win.spec_view.main.setXRange(2.0, 6.0, padding=0)
        win.actions["play"].trigger()
        player = win.audio
        assert len(player.played) == 1
        _path, start, stop = player.played[0]
        assert abs(start - 2.0) < 0.06 and abs(stop - 6.0) < 0.06     # the visible range
        player.positionChanged.emit(3.0)
        assert win.spec_view.cursor.isVisible() and win.spec_view.cursor.value() == 3.0
        assert win.spec_view.x_range() == pytest.approx((2.0, 6.0))
        player.positionChanged.emit(6.5)                                # ran off the right edge: page on
        x0, x1 = win.spec_view.x_range()
        assert x0 < 6.5 < x1 and x1 - x0 == pytest.approx(4.0)
        win.actions["play"].trigger()                                   # Space again stops
        assert not player.is_playing() and not win.spec_view.cursor.isVisible()
    finally:
        win.audio, win.audio_factory = None, AudioPlayer


@pytest.mark.slow
def test_whole_profile_shows_every_chromosome_side_by_side_and_a_click_zooms_in(qtbot, window):
    win, eng = window, window.engine
    eng.add_label(RegionLabel(item_id="cgh-b", start=10, stop=40, kind=RegionKind.ZERO))
    win.activateWindow()
    qtbot.waitUntil(win.isActiveWindow, timeout=2000)   # shortcuts reach the active window only
    _press(qtbot, win, Qt.Key.Key_G)
    qtbot.waitUntil(win.whole_profile_shown, timeout=5000)
    gv = win.genome_view
    assert [c.item_id for c in gv.chromosomes] == ["cgh-a", "cgh-b"]
    a, b = gv.chromosomes
    assert a.positions[-1] + gv.offsets[0] < b.positions[0] + gv.offsets[1]   # side by side
    assert all(c.prediction is not None for c in gv.chromosomes)              # each one predicted
    assert [lab.start for lab in b.labels] == [10]
    x = float(np.median(b.positions) + gv.offsets[1])
    click(qtbot, gv, gv.vb, x, 0.0)
    qtbot.waitUntil(lambda: win.current_item == "cgh-b" and win.stack.currentWidget() is win.profile_view,
                    timeout=5000)
    win.actions["whole_profile"].trigger()
    qtbot.waitUntil(win.whole_profile_shown, timeout=5000)
    _press(qtbot, win, Qt.Key.Key_G)           # G again: back to the chromosome
    assert win.stack.currentWidget() is win.profile_view


@pytest.mark.slow
def test_an_anchor_on_the_spectrogram_can_be_moved_selected_and_deleted(qtbot, window):
    from marginalia.types import AnchorLabel

    win, eng = window, window.engine
    _show_audio(qtbot, win)
    eng.add_label(AnchorLabel(item_id="aud", event=2, time_s=6.0, tolerance_s=0.05))
    qtbot.waitUntil(lambda: len(win.spec_view.anchor_lines()) == 1, timeout=3000)
    win.spec_view.main.setXRange(3.0, 9.0, padding=0)
    drag(qtbot, win.spec_view, win.spec_view.vb, 6.0, 7.0, 16.0)       # grab the line, drop it 1 s later
    (lab,) = eng.labels("aud")
    assert type(lab).__name__ == "AnchorLabel" and abs(lab.time_s - 7.0) < 0.1 and lab.event == 2
    qtbot.waitUntil(lambda: abs(win.spec_view.anchor_lines()[0].value() - lab.time_s) < 1e-9, timeout=3000)
    click(qtbot, win.spec_view, win.spec_view.vb, lab.time_s, 16.0)
    assert win.spec_view.selected_id == lab.id and win.label_list.currentRow() == 0
    win.activateWindow()
    qtbot.waitUntil(win.isActiveWindow, timeout=2000)
    win.spec_view.setFocus()
    qtbot.keyClick(win.spec_view, Qt.Key.Key_Delete)
    assert eng.labels("aud") == []
    qtbot.waitUntil(lambda: win.spec_view.anchor_lines() == [], timeout=3000)


@pytest.mark.slow
def test_an_anchor_bends_the_drawn_alignment_at_once_until_the_decoder_answers(qtbot, window):
    from marginalia.types import AnchorLabel

    win, eng = window, window.engine
    _show_audio(qtbot, win)
    before = win.score_view.event_times.copy()
    win.learner.enabled = False            # the decoder's answer is held back
    try:
        win.create_label(AnchorLabel(item_id="aud", event=2, time_s=float(before[2]) + 1.0, tolerance_s=0.05))
        times = eng.sequence("aud").positions
        shown = win.score_view.event_times
        assert abs(shown[2] - (before[2] + 1.0)) <= 0.5 * (times[1] - times[0]) + 1e-9
        assert np.all(np.diff(shown) > 0) and shown[0] == before[0]
        assert win.spec_view.bounds.opts["pen"].color().name() == theme.STALE     # drawn as not final
        assert win.current_prediction().structure.onsets[2] == int(np.searchsorted(times, before[2]))
    finally:
        win.learner.enabled = True
    win.predict_current()
    qtbot.waitUntil(lambda: win.spec_view.bounds.opts["pen"].color().name() == theme.PREDICTION, timeout=3000)


def test_esc_stops_a_running_retrain(qtbot, window):
    import threading

    win = window
    started, seen_cancel = threading.Event(), threading.Event()

    def slow(cancel, progress):          # a retrain that runs until it is told to stop
        started.set()
        cancel.wait(10)
        if cancel.is_set():
            seen_cancel.set()

    win.runner.submit("retrain", slow, description="retraining the model")
    qtbot.waitUntil(lambda: started.is_set() and win.model_panel.stop_button.isEnabled(), timeout=3000)
    win.activateWindow()
    qtbot.waitUntil(win.isActiveWindow, timeout=2000)
    win.profile_view.setFocus()
    qtbot.keyClick(win.profile_view, Qt.Key.Key_Escape)
    assert seen_cancel.wait(3) and not win.runner.is_busy("retrain")
    qtbot.waitUntil(lambda: not win.model_panel.stop_button.isEnabled(), timeout=3000)
    assert "stopped: retrain" in win.statusBar().currentMessage()


def test_each_label_edit_leaves_a_timeline_to_the_screen(qtbot, window):
    win = window
    win.learner.timeline.clear()
    win.create_label(RegionLabel(item_id="cgh-a", start=5, stop=30, kind=RegionKind.ZERO))
    qtbot.waitUntil(lambda: win.learner.timeline and "drawn" in win.learner.timeline[-1], timeout=5000)
    st = win.learner.timeline[-1]
    order = ["edited", "started", "updated", "predicted", "delivered", "drawn"]
    stamps = [st[k] for k in order]
    assert stamps == sorted(stamps), st
    assert st["store_s"] >= 0 and 0 <= st["worker_cpu_s"] <= st["predicted"] - st["started"] + 0.05
    assert 0 < st["edit_cpu_s"] < 5 and 0 < st["draw_cpu_s"] < 5
    assert st["drawn"] - st["edited"] <= win.latencies[-1]


@pytest.mark.slow
def test_opening_a_project_builds_no_model_on_the_gui_thread(qtbot, tmp_path):
    from marginalia.engine import Engine

    rng = np.random.default_rng(0)
    rows = ["profile.id,chromosome,position,logratio"]
    x = np.r_[np.zeros(60), np.full(60, 0.8)] + 0.1 * rng.standard_normal(120)
    rows += [f"7,1,{1000 * (i + 1)},{v:.4f}" for i, v in enumerate(x)]
    (tmp_path / "profiles.csv").write_text("\n".join(rows) + "\n")
    with Engine.create(tmp_path / "p.marginalia") as eng:
        eng.import_files([tmp_path / "profiles.csv"])
    eng = Engine.open(tmp_path / "p.marginalia")
    win = MainWindow(eng, settings=QtCore.QSettings(str(tmp_path / "s.ini"), QtCore.QSettings.Format.IniFormat))
    qtbot.addWidget(win)
    assert eng.peek_model_id() is None      # opening did not load or build a model (seconds on a cold start)
    win.show()
    qtbot.waitUntil(lambda: win.current_prediction() is not None, timeout=60_000)
    assert eng.peek_model_id() == win.current_prediction().model_id
    assert win.model_panel.model_label.toolTip() == eng.peek_model_id()
    win.close()


@pytest.mark.slow
def test_next_question_stays_with_the_kind_of_item_being_labelled(qtbot, window):
    win = window
    _show_audio(qtbot, win)
    win.actions["next_question"].trigger()
    qtbot.waitUntil(lambda: win.current_query is not None and win.current_query.item_id == "aud", timeout=5000)
    assert win.current_item == "aud"       # the aCGH questions rank higher, but this is an audio session


def test_an_event_span_bends_the_drawn_alignment_into_the_span_at_once(qtbot, window):
    from marginalia.types import EventSpanLabel

    win, eng = window, window.engine
    _show_audio(qtbot, win)
    before = win.score_view.event_times.copy()
    t0, t1 = float(before[3]) + 0.5, float(before[4]) + 0.5      # later than events 2..3 are drawn
    win.learner.enabled = False
    try:
        win.create_label(EventSpanLabel(item_id="aud", first=2, last=3, t0_s=t0, t1_s=t1))
        shown = win.score_view.event_times
        hop = float(eng.sequence("aud").positions[1] - eng.sequence("aud").positions[0])
        assert np.all(shown[2:4] >= t0 - hop) and np.all(shown[2:4] <= t1 + hop), shown
        assert np.all(np.diff(shown) > 0) and shown[0] == before[0]
        assert win.spec_view.bounds.opts["pen"].color().name() == theme.STALE
    finally:
        win.learner.enabled = True


def test_queue_shows_the_margin_that_tells_close_calls_apart(qtbot):
    from marginalia.app.panels.active_panel import ActivePanel
    from marginalia.app.panels.margins import format_margin, margin_from_uncertainty
    from marginalia.types import Query
    panel = ActivePanel()
    qtbot.addWidget(panel)
    qs = [Query("a", 0, 10, float(np.exp(-m)), "best-vs-2nd", rank=i) for i, m in enumerate((6.1e-4, 0.02, 5.5))]
    qs += [Query("b", 0, 5, 0.0, "best-vs-2nd", rank=3), Query("c", 0, 5, 0.7, "random", rank=4)]
    panel.set_queries(qs, {"a": "20159:15"})
    cells = [panel.queue.topLevelItem(i).text(3) for i in range(5)]
    assert cells == ["6.1e-4", "0.02", "5.5", "\u221e", "\u2014"]
    assert panel.queue.headerItem().text(3) == "Margin"
    assert format_margin(margin_from_uncertainty(np.exp(-250.0))) == "250"


def test_the_learning_curve_counts_labels_in_whole_numbers_from_its_first_point(qtbot):
    from marginalia.app.panels.active_panel import MIN_CURVE_LABELS, ActivePanel
    panel = ActivePanel()
    qtbot.addWidget(panel)
    panel.set_curve([{"labels": 0, "mean_uncertainty": 0.97}, {"labels": 1, "mean_uncertainty": 0.95}])
    (x0, x1), (y0, y1) = panel.curve.viewRange()
    assert x0 == 0 and x1 >= MIN_CURVE_LABELS and (y0, y1) == (0, pytest.approx(1.05))
    panel.set_curve([{"labels": n, "mean_uncertainty": 0.5} for n in (0, 20, 40)])
    assert panel.curve.viewRange()[0][1] == pytest.approx(42.0)


def test_the_light_theme_is_remembered_for_the_next_start(qtbot, window):
    from marginalia.app.main import build_parser
    win = window
    win.actions["light_theme"].setChecked(True)
    assert win.settings.value("theme") == "light" and "next start" in win.statusBar().currentMessage()
    win.actions["light_theme"].setChecked(False)
    assert win.settings.value("theme") == "dark"
    assert build_parser().parse_args(["--theme", "light"]).theme == "light"


def test_a_theme_sets_every_colour_the_views_draw_with(qapp):
    app = QtWidgets.QApplication.instance()
    try:
        theme.apply_theme(app, "light")
        assert theme.NAME == "light" and theme.BACKGROUND == "#ffffff"
        assert app.palette().color(app.palette().ColorRole.Base).name() == "#ffffff"
        assert "#dde2e7" in app.styleSheet()                      # the light style sheet
        assert theme.tint(28).color().name() == theme.FOREGROUND   # highlights in the text colour, see-through
        dark = theme.THEMES["dark"]
        assert all(theme.THEMES["light"][k] != dark[k] for k in ("DATA", "PREDICTION", "FOREGROUND", "SELECTION"))
        with pytest.raises(ValueError, match="dark"):
            theme.use("sepia")
    finally:
        theme.apply_theme(app, "dark")
    assert theme.BACKGROUND == "#1f2228" and app.palette().color(app.palette().ColorRole.Base).name() == "#1f2228"


def test_a_short_region_label_is_drawn_a_few_pixels_wide_at_any_zoom(qtbot):
    import pyqtgraph as pg

    from marginalia.app.views.interaction import MIN_LABEL_PX, LabelRegionItem
    plot = pg.PlotWidget()
    qtbot.addWidget(plot)
    plot.resize(800, 300)
    plot.show()
    item = LabelRegionItem(RegionLabel(item_id="x", start=10, stop=12, kind=RegionKind.ONE), 100.0, 100.3)
    plot.addItem(item)
    plot.setXRange(0, 1000, padding=0)          # the label is a third of a pixel here
    qtbot.waitUntil(lambda: item.pixelWidth() is not None and item.pixelWidth() > 1, timeout=2000)
    assert item.boundingRect().width() / item.pixelWidth() == pytest.approx(MIN_LABEL_PX)
    assert item.boundingRect().center().x() == pytest.approx(100.15)
    assert item.getRegion() == pytest.approx((100.0, 100.3))      # its ends (and the stored label) stay
    plot.setXRange(99, 102, padding=0)          # zoomed in: drawn at its true width again
    qtbot.waitUntil(lambda: item.pixelWidth() < 0.1, timeout=2000)
    assert item.boundingRect().width() == pytest.approx(0.3)


def test_an_empty_project_asks_for_data_not_for_a_project(qtbot, tmp_path):
    from marginalia.engine import Engine
    settings = QtCore.QSettings(str(tmp_path / "s.ini"), QtCore.QSettings.Format.IniFormat)
    win = MainWindow(None, settings=settings)
    qtbot.addWidget(win)
    assert win.placeholder.text().startswith("Open a project")
    win.set_engine(Engine.create(tmp_path / "empty.marginalia"))
    assert "empty.marginalia has no items yet: import data files (Ctrl+I)" in win.placeholder.text()
    win.actions["next_question"].trigger()
    qtbot.waitUntil(lambda: "import data first" in win.statusBar().currentMessage(), timeout=5000)
    win.close()


def test_item_steps_pressed_faster_than_loads_all_count(qtbot, window):
    win = window
    ids = win.browser.item_ids_in_order()
    start = ids.index(win.current_item)
    for _ in range(3):                 # no event processing in between: the loads are still on their way
        win.actions["next_item"].trigger()
    want = ids[(start + 3) % len(ids)]
    qtbot.waitUntil(lambda: win.current_item == want and not win.runner.is_busy("load"), timeout=5000)


def test_questions_are_ranked_while_a_retrain_runs(qtbot):
    import threading

    from marginalia.app.workers import TaskRunner
    runner = TaskRunner()
    release = threading.Event()
    got = []
    runner.submit("retrain", lambda cancel, progress: release.wait(30), description="a long retrain")
    runner.submit("queries", lambda cancel, progress: "ranked", on_done=got.append)
    try:
        qtbot.waitUntil(lambda: got == ["ranked"], timeout=5000)   # not queued behind the retrain
        assert runner.is_busy("retrain")
    finally:
        release.set()
        runner.heavy_pool.waitForDone(5000)


@pytest.mark.slow
def test_a_question_is_answered_by_key_with_exactly_the_labels_it_shows(qtbot, window):
    win, eng = window, window.engine
    win.activateWindow()
    qtbot.waitUntil(win.isActiveWindow, timeout=2000)
    _press(qtbot, win, Qt.Key.Key_Q)
    qtbot.waitUntil(lambda: win.current_question is not None and win.current_item == "cgh-b", timeout=5000)
    question = win.current_question
    panel = win.active_panel
    assert panel.question_label.text() == question.sentence
    assert question.sentence.startswith("Is there a change between ") and question.sentence.endswith("on cgh-b?")
    shown = question.answers["model"]
    assert "no change (0)" in panel.answers_label.text() and "exactly one change (1)" in panel.answers_label.text()
    assert " Mb" in panel.answers_label.text() and " #" not in panel.answers_label.text()   # units, not samples
    # a question that came before its item loaded is worded again in the item's units once the item is shown
    from marginalia.types import describe_label
    panel.set_question(question, lambda lab: describe_label(lab, None, ""))
    assert " #" in panel.answers_label.text()
    win._pending_frame = question.query
    win._apply_pending_frame()
    assert " #" not in panel.answers_label.text() and panel.question is question
    # the view is zoomed on the disputed window, highlighted, with both structures and a legend
    view = win.profile_view
    overlay = view.question_overlay
    assert overlay.shown and overlay.legend.isVisible()
    lo, hi = view.mapping.region_x(*question.region)
    assert overlay.region.getRegion() == pytest.approx((lo, hi))
    x0, x1 = view.x_range()
    assert x0 <= lo and hi <= x1 and x1 - x0 < 0.9 * (view.mapping.positions[-1] - view.mapping.positions[0])
    pens = overlay.legend_pens()
    assert pens["model"].color() != pens["runner-up"].color()
    assert pens["model"].style() != pens["runner-up"].style()
    # while the question is read, the engine prepares what either answer will need
    qtbot.waitUntil(lambda: ("prepare_answers", "cgh-b") in eng.calls, timeout=5000)
    _press(qtbot, win, Qt.Key.Key_A)
    stored = eng.labels("cgh-b")
    assert [(type(lab), lab.start, lab.stop, lab.kind) for lab in stored] == \
        [(type(lab), lab.start, lab.stop, lab.kind) for lab in shown]
    assert not overlay.shown                       # answered: the next question takes its place
    qtbot.waitUntil(lambda: win.current_question is not None and win.current_question is not question, timeout=5000)
    win.undo()                                     # the answer is one undoable step
    assert eng.labels("cgh-b") == []


@pytest.mark.slow
def test_b_writes_the_runner_up_and_n_writes_nothing(qtbot, window):
    win, eng = window, window.engine
    win.activateWindow()
    qtbot.waitUntil(win.isActiveWindow, timeout=2000)
    win.actions["next_question"].trigger()
    qtbot.waitUntil(lambda: win.current_question is not None and win.current_item == win.current_question.item_id,
                    timeout=5000)
    item = win.current_question.item_id
    _press(qtbot, win, Qt.Key.Key_N)
    assert eng.labels(item) == []
    assert "draw the label yourself" in win.statusBar().currentMessage()
    shown = win.current_question.answers["runner-up"]
    _press(qtbot, win, Qt.Key.Key_B)
    assert [(lab.start, lab.stop, lab.kind) for lab in eng.labels(item)] == \
        [(lab.start, lab.stop, lab.kind) for lab in shown]


def test_one_queue_per_task_and_the_panel_says_how_it_is_ordered(qtbot, window):
    win = window
    panel = win.active_panel
    win.refresh_queries()
    qtbot.waitUntil(lambda: panel.queue.topLevelItemCount() == 3, timeout=5000)
    assert "taking turns" in panel.order_label.text()
    keys = [panel.task.itemData(i) for i in range(panel.task.count())]
    assert keys == [None, "alignment/audio", "segmentation/cgh"]
    panel.task.setCurrentIndex(keys.index("alignment/audio"))
    qtbot.waitUntil(lambda: panel.queue.topLevelItemCount() == 1, timeout=5000)
    assert panel.queries()[0].item_id == "aud"
    assert panel.order_label.text().startswith("Ordered by margin")
    panel.task.setCurrentIndex(0)
    qtbot.waitUntil(lambda: panel.queue.topLevelItemCount() == 3, timeout=5000)


def test_a_ranked_part_with_nothing_left_to_ask_is_passed_over(qtbot, window, monkeypatch):
    """A round of questions never stops at a part with nothing disputed: it goes on to one that is."""
    win, eng = window, window.engine
    settled = set()                         # parts whose runner-up the last answers took away
    ask = eng.question
    monkeypatch.setattr(eng, "question", lambda query, cancel=None:
                        None if query.item_id in settled else ask(query, cancel=cancel))
    said = []
    win.statusBar().messageChanged.connect(said.append)
    win.activateWindow()
    qtbot.waitUntil(win.isActiveWindow, timeout=2000)
    _press(qtbot, win, Qt.Key.Key_Q)
    qtbot.waitUntil(lambda: win.current_question is not None and win.current_item == "cgh-b", timeout=5000)
    assert ask(eng.next_queries()[1]) is None      # cgh-a, ranked next and of the same kind, has nothing to ask
    qtbot.waitUntil(lambda: not win.runner.is_busy("prefetch"), timeout=5000)
    first = win.current_question
    _press(qtbot, win, Qt.Key.Key_A)
    qtbot.waitUntil(lambda: win.current_question is not None and win.current_question is not first
                    and win.current_item == win.current_question.item_id, timeout=5000)
    assert win.current_question.item_id == "aud"
    settled.update({"cgh-b", "aud"})        # and now nothing is disputed anywhere
    _press(qtbot, win, Qt.Key.Key_Q)
    qtbot.waitUntil(lambda: any("every part is labelled or certain" in m for m in said), timeout=5000)
    assert win.current_question is None
    assert not [m for m in said if m.startswith("nothing disputed")]
    win.statusBar().messageChanged.disconnect(said.append)


def test_a_question_shown_when_the_model_changes_is_asked_again_under_the_new_model(qtbot, window):
    """The question's margin and candidates are the current model's, like the queue's and the plot's."""
    win, eng = window, window.engine
    win.actions["next_question"].trigger()
    qtbot.waitUntil(lambda: win.current_question is not None and win.current_item == win.current_question.item_id,
                    timeout=5000)
    asked = win.current_question
    assert asked.model_id == eng.current_model_id
    win.retrain()                               # a new model: the shown item is predicted again
    qtbot.waitUntil(lambda: win.current_question is not None and win.current_question is not asked, timeout=5000)
    assert win.current_question.model_id == eng.current_model_id != asked.model_id
    assert win.current_question.query == asked.query        # the same part, asked again
    qtbot.wait(300)
    assert win.current_question.model_id == eng.current_model_id          # and not asked over and over


@pytest.mark.slow
def test_an_answered_part_leaves_the_queue_at_once(qtbot, window):
    win = window
    win.actions["next_question"].trigger()
    qtbot.waitUntil(lambda: win.current_question is not None and not win.runner.is_busy("prefetch"), timeout=5000)
    asked = win.current_question.query
    win.answer_model()
    rows = [(q.item_id, q.start, q.stop) for q in win.active_panel.queries()]
    assert (asked.item_id, asked.start, asked.stop) not in rows
    assert win.current_query is not None and win.current_query != asked     # on to the next question


def test_every_control_of_the_window_has_a_tooltip(qtbot, window):
    """Each action, button and input says what it does on hover (an action's text alone is no explanation)."""
    from PySide6 import QtGui

    win = window
    assert win.spec_view is not None      # built on first use: its controls count too
    missing = []
    for act in win.findChildren(QtGui.QAction):
        if act.isSeparator() or act.menu() is not None or not act.text():
            continue                              # a menu's title opens it: nothing to explain
        plain = act.text().replace("&", "").rstrip("\u2026").strip()
        tip = act.toolTip().replace("&", "").rstrip("\u2026").strip()
        if not tip or tip == plain:               # Qt falls back to the text when no tooltip was set
            missing.append(f"action {act.text()!r}")
    for kind in (QtWidgets.QAbstractButton, QtWidgets.QComboBox, QtWidgets.QLineEdit):
        for w in win.findChildren(kind):
            if w.window() is not win:
                continue                          # a dialog's buttons: Qt's OK / Cancel need no tip
            if isinstance(w, QtWidgets.QLineEdit) and isinstance(w.parent(), QtWidgets.QComboBox):
                continue                          # an editable combo box's own line edit: the box has the tip
            action = w.defaultAction() if isinstance(w, QtWidgets.QToolButton) else None
            if not w.toolTip().strip() and not (action is not None and action.toolTip().strip()):
                missing.append(f"{type(w).__name__} {getattr(w, 'text', lambda: '')()!r} "
                               f"({w.objectName() or type(w.parent()).__name__})")
    assert not missing, "no tooltip: " + "; ".join(missing)


@pytest.mark.slow
def test_the_model_panel_lists_each_version_with_what_changed_and_reads_the_stopping_signal(qtbot, window):
    win, eng = window, window.engine
    panel = win.model_panel
    qtbot.waitUntil(lambda: bool(panel.version_rows()) and panel.version_rows()[0][2].startswith("untrained first model"),
                    timeout=5000)
    seq = eng.sequence("cgh-a")
    drag(qtbot, win.profile_view, win.profile_view.vb, seq.positions[20], seq.positions[50], 0.3)
    qtbot.waitUntil(lambda: panel.version_rows()[0][1:3] == ["1", "+1 label \u00b7 quick update"], timeout=5000)
    win.retrain()
    qtbot.waitUntil(lambda: panel.version_rows()[0][1:3] == ["1", "same labels \u00b7 full fit (SSVM)"],
                    timeout=5000)
    assert [r[2] for r in panel.version_rows()][-1] == "untrained first model"
    current = panel.versions.topLevelItem(0)
    assert current.font(0).bold() and eng.current_model_id in current.toolTip(2)
    win.refresh_queries()
    qtbot.waitUntil(lambda: panel.reading.text() == "Keep labelling: 2 rounds", timeout=5000)


def test_the_stopping_reading_says_in_one_line_whether_more_labels_would_help():
    from marginalia.active.stopping import StoppingCriterion
    from marginalia.app.panels.model_panel import stopping_reading

    crit = StoppingCriterion(window=3, threshold=1e-3, relative=True)
    assert stopping_reading(crit.as_dict()).startswith("Keep labelling: not enough queries yet")
    for _ in range(5):
        crit.update(0.25)
    line = stopping_reading(crit.as_dict())
    assert line.startswith("More labels are unlikely to change the model: relative \u03b7=0 over the last 3 "
                           "queries") and "\n" not in line


@pytest.mark.slow
def test_the_kind_a_drag_creates_is_always_shown_and_a_new_project_starts_from_no_change(qtbot, window, tmp_path):
    win, eng = window, window.engine
    kinds = {name: win.actions[name] for name in ("kind0", "kind1", "kind2", "kindS")}
    assert [n for n, a in kinds.items() if a.isChecked()] == ["kind0"]
    _press(qtbot, win, Qt.Key.Key_2)                 # nothing selected: only the next drag's kind changes
    assert [n for n, a in kinds.items() if a.isChecked()] == ["kind2"] and eng.labels("cgh-a") == []
    seq = eng.sequence("cgh-a")
    drag(qtbot, win.profile_view, win.profile_view.vb, seq.positions[20], seq.positions[50], 0.3)
    assert [lab.kind for lab in eng.labels("cgh-a")] == [RegionKind.AT_LEAST_ONE]
    assert win.spec_view.current_kind == RegionKind.AT_LEAST_ONE     # the same kind on a recording
    win.set_engine(FakeEngine(tmp_path / "other.marginalia"))
    assert [n for n, a in kinds.items() if a.isChecked()] == ["kind0"]
    assert win.profile_view.current_kind == RegionKind.ZERO


@pytest.mark.slow
def test_opening_another_project_leaves_nothing_of_the_previous_one_on_screen(qtbot, window, tmp_path):
    from marginalia.engine import Engine

    win, eng = window, window.engine
    seq = eng.sequence("cgh-a")
    drag(qtbot, win.profile_view, win.profile_view.vb, seq.positions[20], seq.positions[50], 0.3)
    win.refresh_queries()
    qtbot.waitUntil(lambda: win.label_list.count() == 1 and bool(win.active_panel.queries())
                    and bool(win.model_panel.version_rows()), timeout=5000)
    win.set_engine(Engine.create(tmp_path / "empty.marginalia"))
    assert win.label_list.count() == 0 and win.active_panel.queries() == [] and win.browser.item_ids_in_order() == []
    assert win.model_panel.version_rows() == [] and win.model_panel.model_label.text() == "no model yet"
    assert win.current_prediction() is None and win.active_panel.question is None


@pytest.mark.slow
def test_a_pressed_while_the_question_is_on_its_way_writes_nothing_the_person_did_not_see(qtbot, window):
    """A right after Q (or while the question's item loads) waits for the question; then it answers it."""
    from marginalia.types import Query

    win, eng = window, window.engine
    win.follow_query(Query("cgh-b", 40, 120, 0.9, "best-vs-2nd"))
    win.answer_model()                       # the question and its item are still on their way
    assert eng.labels() == [] and "on its way" in win.statusBar().currentMessage()
    qtbot.waitUntil(lambda: win.current_question is not None and win.current_item == "cgh-b", timeout=5000)
    shown = win.current_question.answers["model"]
    win.answer_model()
    assert [(lab.item_id, lab.start, lab.stop, lab.kind) for lab in eng.labels()] == \
        [(lab.item_id, lab.start, lab.stop, lab.kind) for lab in shown]


@pytest.mark.slow
def test_q_is_not_lost_when_a_label_edit_cancels_the_ranking(qtbot, window):
    win, eng = window, window.engine
    win.next_question()
    seq = eng.sequence("cgh-a")               # an edit at once: the learner cancels the ranking in flight
    drag(qtbot, win.profile_view, win.profile_view.vb, seq.positions[150], seq.positions[180], 0.3)
    qtbot.waitUntil(lambda: win.current_question is not None, timeout=5000)
    assert not win._follow_queries
