"""View ▸ Compare with another recording: sync anchors placed by clicks, moved, deleted by Del, undone by Ctrl+Z."""

import numpy as np
import pytest
from PySide6 import QtCore
from PySide6.QtCore import Qt


@pytest.fixture
def window(takes_window):
    return takes_window


def _compare(qtbot, win, ids, name="b"):
    win.show_item(ids["a"])
    qtbot.waitUntil(lambda: win.current_item == ids["a"] and win._item_payload is not None, timeout=20000)
    win.choose_recording = lambda title, infos: ids[name]
    win.actions["compare_recordings"].trigger()
    qtbot.waitUntil(lambda: getattr(win, "last_sync_dialog", None) is not None, timeout=60000)
    dialog = win.last_sync_dialog
    qtbot.waitExposed(dialog)
    return dialog


def _click(qtbot, dialog, plot, t):
    """A real left click at ``t`` seconds on one of the dialog's spectrograms; the time the pixel stands for."""
    vb = plot.vb
    y0, y1 = vb.viewRange()[1]
    pos = dialog.plots.mapFromScene(vb.mapViewToScene(QtCore.QPointF(t, 0.5 * (y0 + y1))))
    qtbot.mouseClick(dialog.plots.viewport(), Qt.MouseButton.LeftButton, pos=pos)
    return float(vb.mapSceneToView(dialog.plots.mapToScene(pos)).x())


def _settled(qtbot, win, dialog, n):
    qtbot.waitUntil(lambda: not win.runner.is_busy("sync") and not dialog.busy and len(dialog.anchors) == n,
                    timeout=60000)


def _passes_through(dialog, ref_s, tgt_s, tol):
    table = dialog.result.table()
    near = np.abs(table[:, 0] - ref_s) <= tol
    return near.any() and np.min(np.abs(table[near, 1] - tgt_s)) <= tol


@pytest.mark.slow
def test_two_clicks_add_an_anchor_the_path_passes_through_del_deletes_it_and_ctrl_z_brings_it_back(qtbot, window):
    win, ids, onsets = window
    dialog = _compare(qtbot, win, ids)
    assert dialog.anchors == [] and "No sync anchor yet" in dialog.summary.text()
    free_at = float(dialog.result.map_times([2.0])[0])
    _click(qtbot, dialog, dialog.tgt_plot, 1.0)                 # the target first: the dialog says what to do
    assert "first" in dialog.hint.text() and win.engine.sync_anchors(ids["a"], ids["b"]) == []
    ref_s = _click(qtbot, dialog, dialog.ref_plot, 2.0)
    assert dialog.pending_reference_s == pytest.approx(ref_s) and "Now click the same moment" in dialog.hint.text()
    tgt_s = _click(qtbot, dialog, dialog.tgt_plot, free_at + 0.5)  # half a second off the free path
    stored = win.engine.sync_anchors(ids["a"], ids["b"])
    assert [(x.reference_s, x.target_s) for x in stored] == [(pytest.approx(ref_s), pytest.approx(tgt_s))]
    _settled(qtbot, win, dialog, 1)
    assert _passes_through(dialog, ref_s, tgt_s, 0.012) and "passes through 1 sync anchor" in dialog.summary.text()
    assert win.engine.history()[-1].name.startswith(f"sync anchor {ref_s:.2f} s of a")
    win.show_history()                                       # listed in Edit > History like every edit
    assert win.history_dialog.table.item(0, 2).text().startswith(f"sync anchor {ref_s:.2f} s of a \u2194")
    assert win.actions["undo"].text().startswith(f"&Undo sync anchor {ref_s:.2f} s of a")
    win.history_dialog.close()
    dialog.activateWindow()                                  # back to the compare view, as a click on it does
    qtbot.waitUntil(dialog.isActiveWindow, timeout=5000)
    # a click on the anchor's line selects it, Del deletes it
    _click(qtbot, dialog, dialog.ref_plot, ref_s)
    assert dialog.selected_anchor == stored[0].id and dialog.pending_reference_s is None
    qtbot.keyClick(dialog, Qt.Key.Key_Delete)
    assert win.engine.sync_anchors(ids["a"], ids["b"]) == []
    _settled(qtbot, win, dialog, 0)
    assert abs(float(dialog.result.map_times([ref_s])[0]) - free_at) < 0.05
    qtbot.keyClick(dialog, Qt.Key.Key_Z, Qt.KeyboardModifier.ControlModifier)
    assert [x.id for x in win.engine.sync_anchors(ids["a"], ids["b"])] == [stored[0].id]
    _settled(qtbot, win, dialog, 1)
    assert _passes_through(dialog, ref_s, tgt_s, 0.012)
    assert win.statusBar().currentMessage().startswith("Undid: delete 1 sync anchor between a and b")
    win.resync_dialog()                                      # nothing changed: the path is not recomputed
    assert not win.runner.is_busy("sync") and not dialog.busy
    qtbot.keyClick(dialog, Qt.Key.Key_Z, Qt.KeyboardModifier.ControlModifier | Qt.KeyboardModifier.ShiftModifier)
    assert win.engine.sync_anchors(ids["a"], ids["b"]) == []    # Ctrl+Shift+Z redoes the deletion
    _settled(qtbot, win, dialog, 0)


@pytest.mark.slow
def test_an_anchor_moves_by_drag_the_question_is_answered_by_a_button_and_a_crossing_one_is_refused(qtbot, window):
    win, ids, onsets = window
    dialog = _compare(qtbot, win, ids)
    a, b = ids["a"], ids["b"]
    first = win.engine.add_sync_anchor(a, b, 1.0, 1.1)
    win.resync_dialog(dialog)
    _settled(qtbot, win, dialog, 1)
    ref_line, tgt_line, _ = dialog._anchor_lines[first.id]
    tgt_line.setValue(1.3)                                   # what the end of a drag does
    tgt_line.sigPositionChangeFinished.emit(tgt_line)
    assert [(x.reference_s, x.target_s) for x in win.engine.sync_anchors(a, b)] == [(1.0, pytest.approx(1.3))]
    _settled(qtbot, win, dialog, 1)
    assert dialog.anchors[0].target_s == pytest.approx(1.3) and _passes_through(dialog, 1.0, 1.3, 0.012)
    q = dialog.question
    assert q is not None and dialog.dashed_button.isEnabled()
    dialog.dashed_button.click()                             # the runner-up is right: anchored there
    got = [(x.reference_s, x.target_s) for x in win.engine.sync_anchors(a, b)]
    assert (pytest.approx(q.reference_s), pytest.approx(q.alternative_target_s)) in got
    _settled(qtbot, win, dialog, 2)
    assert _passes_through(dialog, q.reference_s, q.alternative_target_s, 0.012)
    dialog.anchorAdded.emit(0.5, 3.0)                        # crosses the anchor at 1.0 s -> 1.3 s
    assert len(win.engine.sync_anchors(a, b)) == 2 and "crosses the anchor" in dialog.hint.text()
    assert "crosses the anchor" in win.statusBar().currentMessage()


@pytest.mark.slow
def test_the_learn_button_learns_the_metric_in_the_background_and_says_what_it_learned_from(qtbot, window):
    win, ids, onsets = window
    dialog = _compare(qtbot, win, ids)
    for k in (4, 12, 20):
        win.engine.add_sync_anchor(ids["a"], ids["b"], float(onsets["a"][k]), float(onsets["b"][k]))
    dialog.learn_button.click()
    assert dialog.learn_button.text() == "Stop learning" and win.runner.is_busy("sync-learn")
    qtbot.waitUntil(lambda: win.statusBar().currentMessage().startswith("Learned the sync metric from 3 sync "
                                                                        "anchors on 1 pair"), timeout=120000)
    assert win.engine.sync_model_id is not None and dialog.learn_button.text() == "Learn the metric"
    qtbot.waitUntil(lambda: not win.runner.is_busy("sync") and dialog.model_id == win.engine.sync_model_id,
                    timeout=60000)
    assert "with the project's learned metric" in dialog.summary.text()


@pytest.mark.slow
def test_the_learning_shows_its_progress_in_the_dialog_and_its_button_stops_it(qtbot, window, monkeypatch):
    from marginalia.exceptions import CancelledError
    win, ids, _ = window
    dialog = _compare(qtbot, win, ids)
    started = []

    def learn(*, cancel=None, progress=None):          # a learning that waits to be stopped
        started.append(True)
        progress(1, 10, "features of a")
        cancel.wait(30)
        raise CancelledError("cancelled: nothing was stored")

    monkeypatch.setattr(win.engine, "learn_sync_metric", learn)
    dialog.learn_button.click()
    qtbot.waitUntil(lambda: "Learning the sync metric: features of a (1/10)" in dialog.hint.text(), timeout=10000)
    assert dialog.learn_button.text() == "Stop learning" and started == [True]
    dialog.learn_button.click()
    qtbot.waitUntil(lambda: not win.runner.is_busy("sync-learn"), timeout=10000)
    qtbot.waitUntil(lambda: dialog.learn_button.text() == "Learn the metric", timeout=5000)
    assert win.engine.sync_model_id is None and not win.statusBar().currentMessage().startswith("Learned")


@pytest.mark.slow
def test_a_metric_learned_while_the_pair_is_being_aligned_reaches_the_dialog(qtbot, window, monkeypatch):
    win, ids, onsets = window
    eng = win.engine
    for k in (4, 12, 20):
        eng.add_sync_anchor(ids["a"], ids["b"], float(onsets["a"][k]), float(onsets["b"][k]))
    aligned = eng.sync_recordings

    def align_then_learn(*args, **kwargs):      # the metric changes after the compare read it, before it is shown
        out = aligned(*args, **kwargs)
        if not learned:
            learned.append(eng.learn_sync_metric(options={"max_iter": 5}))
        return out

    learned = []
    monkeypatch.setattr(eng, "sync_recordings", align_then_learn)
    dialog = _compare(qtbot, win, ids)
    assert learned and eng.sync_model_id == learned[0].model_id
    qtbot.waitUntil(lambda: not win.runner.is_busy("sync") and dialog.model_id == learned[0].model_id,
                    timeout=60000)
    assert "with the project's learned metric" in dialog.summary.text()
    assert dialog.path_state == eng.sync_state(ids["a"], ids["b"])
    win.resync_dialog()                                      # nothing changed since: not recomputed
    assert not win.runner.is_busy("sync") and not dialog.busy


@pytest.mark.slow
def test_a_recomputation_that_failed_or_was_stopped_is_done_again_at_the_next_change_check(qtbot, window, monkeypatch):
    from marginalia.exceptions import DataFormatError
    win, ids, _ = window
    eng = win.engine
    dialog = _compare(qtbot, win, ids)
    aligned = eng.sync_recordings

    def fail(*args, **kwargs):
        raise DataFormatError("b.wav: cannot be read; put the file back")

    monkeypatch.setattr(eng, "sync_recordings", fail)
    eng.add_sync_anchor(ids["a"], ids["b"], 2.0, 2.9)
    win.resync_dialog(dialog)
    qtbot.waitUntil(lambda: "Cannot recompute the path: b.wav" in dialog.hint.text(), timeout=20000)
    assert len(dialog.anchors) == 1 and not _passes_through(dialog, 2.0, 2.9, 0.012)
    monkeypatch.setattr(eng, "sync_recordings", aligned)
    win.resync_dialog()                                      # the drawn path is not the anchors': recomputed
    _settled(qtbot, win, dialog, 1)
    assert _passes_through(dialog, 2.0, 2.9, 0.012)
    eng.add_sync_anchor(ids["a"], ids["b"], 4.0, 4.6)
    win.resync_dialog()
    assert dialog.busy
    win.runner.cancel("sync")                                # Esc: the recomputation is dropped
    win.resync_dialog()
    _settled(qtbot, win, dialog, 2)
    assert _passes_through(dialog, 4.0, 4.6, 0.012) and not dialog.busy
