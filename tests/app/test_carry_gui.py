"""Labels ▸ Carry labels to other recordings, from the real window on a real project of three takes."""

import numpy as np
import pytest
from PySide6 import QtWidgets
from PySide6.QtCore import Qt

from marginalia.app import theme
from marginalia.app.window_carry import CarryDialog


@pytest.fixture
def window(takes_window):
    return takes_window[:2]


def _show(qtbot, win, item_id):
    """Show ``item_id`` and wait until it is drawn."""
    win.show_item(item_id)
    qtbot.waitUntil(lambda: win.current_item == item_id and win._item_payload is not None, timeout=20000)


@pytest.mark.slow
def test_the_shown_recordings_labels_are_carried_in_the_background_and_one_undo_takes_them_back(qtbot, window):
    win, ids = window
    _show(qtbot, win, ids["a"])
    seen = []

    def answer(dialog):
        seen.append([dialog.list.item(i).text() for i in range(dialog.list.count())])
        assert dialog.chosen() == []                      # no score: nothing is checked for the person
        assert not dialog.carry_button.isEnabled()
        dialog.list.item(0).setCheckState(Qt.CheckState.Checked)
        assert dialog.carry_button.isEnabled() and dialog.chosen() == [ids["b"]]
        dialog.as_suggestions.setChecked(False)           # straight to labels
        return QtWidgets.QDialog.DialogCode.Accepted

    win.run_dialog = answer
    win.actions["carry_labels"].trigger()
    assert seen == [["b", "c"]]
    qtbot.waitUntil(lambda: len(win.engine.labels(ids["b"])) == 4 and not win.runner.is_busy("carry"), timeout=60000)
    assert win.statusBar().currentMessage().startswith("Carried 4 label(s) onto 1 recording(s) (b 4)")
    assert win.infos[ids["b"]].n_labels == 4 and win.engine.labels(ids["c"]) == []
    win.undo()
    assert win.engine.labels(ids["b"]) == [] and len(win.engine.labels(ids["a"])) == 4


@pytest.mark.slow
def test_carried_suggestions_are_drawn_dotted_and_accepted_or_rejected_by_key(qtbot, window):
    win, ids = window
    _show(qtbot, win, ids["a"])

    def answer(dialog):
        assert dialog.as_suggestions.isChecked()          # suggestions by default
        dialog._check_all(Qt.CheckState.Checked)
        return QtWidgets.QDialog.DialogCode.Accepted

    win.run_dialog = answer
    win.carry_labels_dialog()
    qtbot.waitUntil(lambda: len(win.engine.suggestions(ids["c"])) == 4 and not win.runner.is_busy("carry"),
                    timeout=60000)
    assert "suggested label(s)" in win.statusBar().currentMessage() and win.engine.labels(ids["b"]) == []
    assert win.infos[ids["b"]].n_labels == 0 and win.infos[ids["b"]].n_suggestions == 4
    from marginalia.app.panels.dataset_browser import COL_LABELS
    assert win.browser._rows[ids["b"]].text(COL_LABELS) == "0 +4"
    _show(qtbot, win, ids["b"])
    view = win.active_view()
    drawn = view._label_items
    assert len(drawn) == 4 and all(item.label.suggested for item in drawn.values())
    region = next(item for item in drawn.values() if hasattr(item, "lines"))
    assert region.lines[0].pen.style() == theme.SUGGESTED_PEN_STYLE
    assert all(text.startswith("suggested \u00b7 ") for text in win.label_list.texts())
    # Ctrl+Enter accepts the selected suggestion; nothing selected: the status bar says what to do
    win.accept_selected_suggestion()
    assert "Select a suggested (dotted) label first" in win.statusBar().currentMessage()
    view.select_label(region.label.id)
    win.actions["accept_suggestion"].trigger()
    assert [lab.id for lab in win.engine.labels(ids["b"])] == [region.label.id]
    qtbot.waitUntil(lambda: not view._label_items[region.label.id].label.suggested, timeout=5000)
    assert view._label_items[region.label.id].lines[0].pen.style() != theme.SUGGESTED_PEN_STYLE
    win.actions["accept_all_suggestions"].trigger()
    assert len(win.engine.labels(ids["b"])) == 4 and win.engine.suggestions(ids["b"]) == []
    win.undo()
    assert len(win.engine.suggestions(ids["b"])) == 3
    win.actions["reject_all_suggestions"].trigger()
    assert win.engine.suggestions(ids["b"]) == [] and len(win.engine.labels(ids["b"])) == 1


def test_the_dialog_checks_the_recordings_of_the_same_score_and_the_action_needs_a_labelled_recording(qtbot,
                                                                                                      window):
    win, ids = window
    infos = win.engine.items()
    by_name = {i.name: i for i in infos}
    dialog = CarryDialog(by_name["a"], [(by_name["b"], True), (by_name["c"], False)])
    qtbot.addWidget(dialog)
    assert dialog.chosen() == [ids["b"]] and "(same score)" in dialog.list.item(0).text()
    dialog._check_all(Qt.CheckState.Checked)
    assert dialog.chosen() == [ids["b"], ids["c"]]
    _show(qtbot, win, ids["b"])
    win.run_dialog = lambda dialog: pytest.fail("no dialog for a recording without labels")
    win.carry_labels_dialog()
    assert win.statusBar().currentMessage() == "b has no labels to carry yet"


@pytest.mark.slow
def test_compare_draws_the_path_between_two_recordings_and_carries_from_there(qtbot, window):
    win, ids = window
    _show(qtbot, win, ids["a"])
    asked = []
    win.choose_recording = lambda title, infos: asked.append([i.name for i in infos]) or ids["c"]
    win.actions["compare_recordings"].trigger()
    assert asked == [["b", "c"]]
    qtbot.waitUntil(lambda: getattr(win, "last_sync_dialog", None) is not None, timeout=60000)
    dialog = win.last_sync_dialog
    # the path every second of the reference, and one line per labelled moment (3 boundaries, a region's two ends)
    assert len(dialog.grid_pairs) >= 6 and np.all(np.diff(dialog.grid_pairs[:, 1]) > 0)
    assert [caption for _, _, caption in dialog.label_pairs] == ["boundary", "0 from", "0 to", "boundary", "boundary"]
    assert "5 labelled moments would land" in dialog.summary.text()
    assert dialog.question is not None and "The path is least sure at" in dialog.summary.text()
    dialog.carry_button.click()
    qtbot.waitUntil(lambda: len(win.engine.suggestions(ids["c"])) == 4 and not win.runner.is_busy("carry"),
                    timeout=60000)
    assert win.engine.suggestions(ids["b"]) == [] and win.engine.labels(ids["c"]) == []


def test_label_times_name_each_moment_a_label_states_and_the_path_keeps_to_60_lines():
    from marginalia.app.sync_dialog import grid_step, label_times
    assert [grid_step(d) for d in (6.7, 60.0, 107.0, 600.0, 1e5)] == [1.0, 1.0, 2.0, 10.0, 60.0]
    from marginalia.types import AnchorLabel, BoundaryLabel, EventSpanLabel, RegionKind, RegionLabel
    pos = np.arange(10) * 0.1
    got = label_times([RegionLabel(item_id="x", start=2, stop=5, kind=RegionKind.ONE),
                       BoundaryLabel(item_id="x", index=7),
                       AnchorLabel(item_id="x", event=3, time_s=0.33),
                       EventSpanLabel(item_id="x", first=1, last=2, t0_s=0.05, t1_s=0.15)], pos)
    assert got == [(0.05, "e1\u2013e2 from"), (0.15, "to"), (0.2, "1 from"), (0.33, "e3"), (0.4, "1 to"),
                   (pytest.approx(0.65), "boundary")]
