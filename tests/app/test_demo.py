"""The real main window on the real demo project (marginalia.engine.Engine.open_demo), driven like a user.

One window serves the whole module (building the demo and compiling the decoders takes seconds);
the tests run in file order and each leaves the window usable for the next.
"""

from __future__ import annotations

import numpy as np
import pytest
from PySide6 import QtCore, QtWidgets
from PySide6.QtCore import Qt

from marginalia.app import theme
from marginalia.app.main_window import MainWindow
from marginalia.engine import Engine
from marginalia.types import AnchorLabel, BoundaryLabel, EventSpanLabel, RegionKind, RegionLabel, label_fact

from .helpers import click, drag, finish_io

WAIT = 120_000  # ms; a retrain of the whole demo can take tens of seconds on a loaded 2-core machine


@pytest.fixture(scope="module")
def demo(qapp, tmp_path_factory):
    theme.configure_pyqtgraph()
    work = tmp_path_factory.mktemp("demo")
    settings = QtCore.QSettings(str(work / "settings.ini"), QtCore.QSettings.Format.IniFormat)
    engine = Engine.open_demo(work)
    win = MainWindow(engine, settings=settings)
    win.learner.timer.setInterval(600_000)   # no retrain on pauses here: the test asks for one explicitly
    win.resize(1300, 850)
    win.show()
    yield win, work
    win.close()
    win.deleteLater()


def _cgh_ready(qtbot, win):
    try:
        qtbot.waitUntil(lambda: win.current_item is not None and win.current_prediction() is not None
                        and win.current_prediction().item_id == win.current_item, timeout=WAIT)
    except Exception:
        raise AssertionError(f"no prediction drawn: item {win.current_item}, busy {win.runner.busy_lanes()}, "
                             f"status {win.statusBar().currentMessage()!r}") from None


def _free_span(win):
    """A sample range inside the longest predicted segment that no label covers."""
    pred = win.current_prediction().structure
    T = pred.n_samples
    covered = np.zeros(T, bool)
    for lab in win.engine.labels(win.current_item):
        if isinstance(lab, RegionLabel):
            covered[lab.start:lab.stop] = True
        elif isinstance(lab, BoundaryLabel):
            covered[max(lab.index - 5, 0):lab.index + 5] = True
    starts = np.concatenate(([0], pred.changes[:-1]))
    best = None
    for a, b in zip(starts, pred.changes):
        run = 0
        for i in range(a + 5, b - 5):
            run = run + 1 if not covered[i] else 0
            if run >= 60 and (best is None or run > best[1] - best[0]):
                best = (i - run + 1, i + 1)
    assert best is not None, "the demo item has no free span to label"
    mid = (best[0] + best[1]) // 2
    return mid - 25, mid + 25


def _key(qtbot, win, key, modifier=Qt.KeyboardModifier.NoModifier):
    win.activateWindow()
    win.active_view().setFocus()
    qtbot.keyClick(win.active_view(), key, modifier)


def test_the_spectrogram_view_is_built_once_the_first_item_is_shown(qtbot, demo):
    """Built ahead (the demo has a recording), so the first question on a recording does not wait for it."""
    win, _ = demo
    _cgh_ready(qtbot, win)
    qtbot.waitUntil(lambda: win._spec_view is not None, timeout=WAIT)
    assert win.active_view() is win.profile_view          # built, not shown


@pytest.mark.slow
def test_drawn_region_label_changes_the_prediction(qtbot, demo):
    win, _ = demo
    _cgh_ready(qtbot, win)
    eng, item = win.engine, win.current_item
    seq = eng.sequence(item)
    a, b = _free_span(win)
    assert not any(a < c < b for c in win.current_prediction().structure.breakpoints)
    n0 = len(eng.labels(item))
    _key(qtbot, win, Qt.Key.Key_1)            # next regions: exactly one change
    drag(qtbot, win.profile_view, win.profile_view.vb, seq.positions[a], seq.positions[b - 1], 0.0)
    labs = eng.labels(item)
    assert len(labs) == n0 + 1
    new = [lab for lab in labs if isinstance(lab, RegionLabel) and lab.kind == RegionKind.ONE
           and abs(lab.start - a) <= 2 and abs(lab.stop - b) <= 2]
    assert len(new) == 1
    lab = new[0]
    qtbot.waitUntil(lambda: sum(lab.start < c < lab.stop
                                for c in win.current_prediction().structure.breakpoints) == 1, timeout=WAIT)
    # the engine's prediction event may repaint the view just before the worker's result, which records the latency
    qtbot.waitUntil(lambda: bool(win.latencies), timeout=10_000)
    _key(qtbot, win, Qt.Key.Key_0)            # the selected region becomes "no change"
    assert eng.labels(item)[-1].kind == RegionKind.ZERO or any(
        x.id == lab.id and x.kind == RegionKind.ZERO for x in eng.labels(item))
    qtbot.waitUntil(lambda: not any(lab.start < c < lab.stop
                                    for c in win.current_prediction().structure.breakpoints), timeout=WAIT)


def test_boundary_delete_undo_redo(qtbot, demo):
    win, _ = demo
    _cgh_ready(qtbot, win)   # the first test of `make test-fast` here: the demo's first prediction may still be on its way
    eng, item = win.engine, win.current_item
    seq = eng.sequence(item)
    a, b = _free_span(win)
    c = (a + b) // 2
    n0 = len(eng.labels(item))
    x = 0.5 * (seq.positions[c - 1] + seq.positions[c])
    click(qtbot, win.profile_view, win.profile_view.vb, x, 0.0, modifier=Qt.KeyboardModifier.ControlModifier)
    bounds = [lab for lab in eng.labels(item) if isinstance(lab, BoundaryLabel) and abs(lab.index - c) <= 4]
    assert len(bounds) == 1 and len(eng.labels(item)) == n0 + 1   # one pixel spans a few probes
    c = bounds[0].index
    qtbot.waitUntil(lambda: c in win.current_prediction().structure.breakpoints.tolist(), timeout=WAIT)
    _key(qtbot, win, Qt.Key.Key_Delete)
    assert len(eng.labels(item)) == n0
    _key(qtbot, win, Qt.Key.Key_Z, Qt.KeyboardModifier.ControlModifier)
    assert len(eng.labels(item)) == n0 + 1
    name = win.infos[item].name
    assert win.statusBar().currentMessage() == (f"Undid: delete 1 label on {name} \u2014 "   # says what came back
                                                "Ctrl+Shift+Z to redo")
    _key(qtbot, win, Qt.Key.Key_Z, Qt.KeyboardModifier.ControlModifier | Qt.KeyboardModifier.ShiftModifier)
    assert len(eng.labels(item)) == n0
    qtbot.waitUntil(lambda: len(win.profile_view.labels()) == n0, timeout=WAIT)


@pytest.mark.slow
def test_retrain_redraws_the_prediction(qtbot, demo):
    win, _ = demo
    before = win.current_prediction()
    with qtbot.waitSignal(win.learner.modelUpdated, timeout=WAIT,
                          check_params_cb=lambda model_id, kind: kind == "retrain"):
        win.actions["retrain"].trigger()
    qtbot.waitUntil(lambda: win.current_prediction() is not before, timeout=WAIT)
    pred = win.current_prediction()
    assert pred.model_id == win.engine.model_id(win.current_item)
    assert win.profile_view.means.opts["pen"].color().name() == theme.PREDICTION   # drawn as current


@pytest.mark.slow
def test_next_question_frames_the_queried_part(qtbot, demo):
    win, _ = demo
    win.actions["next_question"].trigger()
    qtbot.waitUntil(lambda: win.current_query is not None, timeout=WAIT)
    q = win.current_query
    qtbot.waitUntil(lambda: win.current_item == q.item_id and win._item_payload is not None, timeout=WAIT)
    # the best question on an item of the kind being labelled (chromosomes lead to chromosomes)
    kind = win.engine.item_info(q.item_id).kind
    better = [o for o in win.active_panel.queries() if o.rank < q.rank]
    assert all(win.engine.item_info(o.item_id).kind != kind for o in better)
    assert win.active_panel.queue.topLevelItemCount() >= 1
    view = win.active_view()
    qtbot.waitUntil(lambda: view.mapping is not None and win.current_question is not None
                    and win.current_question.query is q, timeout=WAIT)
    # framed on the window where the best and the runner-up disagree, inside the queried part
    question = win.current_question
    start, stop = win.query_samples(q)
    assert start <= question.region[0] < question.region[1] <= stop
    x0, x1 = view.x_range()
    lo, hi = view.mapping.region_x(*question.view)
    assert x0 <= lo + 1e-9 and x1 >= hi - 1e-9
    assert x1 - x0 <= 1.6 * (hi - lo) + 1e-6   # framed with a little context
    assert view.question_overlay.shown and win.active_panel.question_label.text() == question.sentence


@pytest.mark.slow
def test_anchor_a_score_note_on_the_audio(qtbot, demo):
    win, _ = demo
    audio = next(i for i in win.engine.items() if i.kind == "audio")
    win.show_item(audio.id)
    qtbot.waitUntil(lambda: win.current_item == audio.id and win.spec_view.score_shown
                    and win.score_view._starts is not None, timeout=WAIT)
    # the notes are drawn where the alignment puts them: aim only once it is drawn, or a late redraw on a
    # loaded machine moves the note from under the press and the drag pans the view instead
    qtbot.waitUntil(lambda: win.current_prediction() is not None and win.current_prediction().item_id == audio.id,
                    timeout=WAIT)
    win.spec_view.show_all()
    sv = win.score_view
    note = sv.score.n_notes // 2
    x, y = sv.note_center(note)
    n0 = len(win.engine.labels(audio.id))
    drag(qtbot, win.spec_view, sv.vb, x, x + 0.3, y)
    anchors = [lab for lab in win.engine.labels(audio.id) if isinstance(lab, AnchorLabel)]
    assert len(win.engine.labels(audio.id)) == n0 + 1
    assert anchors[-1].event == int(sv.score.note_event[note]) and abs(anchors[-1].time_s - (x + 0.3)) < 0.15
    qtbot.waitUntil(lambda: win.current_prediction() is not None and win.current_prediction().item_id == audio.id,
                    timeout=WAIT)


@pytest.mark.slow
def test_drag_on_the_spectrogram_spans_the_events_drawn_there(qtbot, demo):
    win, _ = demo
    audio = next(i for i in win.engine.items() if i.kind == "audio")
    win.show_item(audio.id)
    qtbot.waitUntil(lambda: win.current_item == audio.id and win.score_view.event_times is not None
                    and not win.runner.is_busy("update"), timeout=WAIT)
    ev_t = win.score_view.event_times.copy()
    t0, t1 = 0.5 * (ev_t[0] + ev_t[1]), 0.5 * (ev_t[2] + ev_t[3])
    drag(qtbot, win.spec_view, win.spec_view.vb, t0, t1, 10.0)
    spans = [lab for lab in win.engine.labels(audio.id) if isinstance(lab, EventSpanLabel)]
    assert len(spans) == 1 and (spans[0].first, spans[0].last) == (1, 2)
    lab = spans[0]
    fr = win.engine.data(audio.id).frame_rate
    qtbot.waitUntil(lambda: not win.runner.is_busy("update") and win.current_prediction().item_id == audio.id,
                    timeout=WAIT)
    times = np.asarray(win.current_prediction().times_s)
    assert np.all(times[1:3] >= lab.t0_s - 1.0 / fr) and np.all(times[1:3] <= lab.t1_s + 1.0 / fr)
    assert win.score_view.span_note_mask().sum() == int(np.isin(win.score_view.score.note_event, [1, 2]).sum())


def _show_the_recording(qtbot, win):
    """Show the demo's recording and wait until its prediction is drawn; returns its item."""
    audio = next(i for i in win.engine.items() if i.kind == "audio")
    win.show_item(audio.id)
    qtbot.waitUntil(lambda: win.current_item == audio.id and not win.runner.is_busy("update")
                    and win.current_prediction() is not None and win.current_prediction().item_id == audio.id,
                    timeout=WAIT)
    return audio


@pytest.mark.slow
def test_runner_up_answers_the_audio_question_it_was_asked(qtbot, demo):
    win, _ = demo
    eng = win.engine
    audio = _show_the_recording(qtbot, win)
    win.actions["next_question"].trigger()
    qtbot.waitUntil(lambda: win.current_query is not None and win.current_query.item_id == audio.id, timeout=WAIT)
    q = win.current_query
    anchored = {lab.event for lab in eng.labels(audio.id) if isinstance(lab, AnchorLabel)}
    pred = win.current_prediction()
    assert pred.runner_up is not None
    # the runner-up drawn for the question is the phrase's own: it moves one of the phrase's events only
    moved = np.flatnonzero(pred.runner_up.onsets != pred.structure.onsets)
    assert moved.size and q.start <= moved.min() and moved.max() < q.stop, (q, moved)
    win.accept_runner_up_here()
    events = sorted(lab.event for lab in eng.labels(audio.id) if isinstance(lab, AnchorLabel))
    # the events the question names, not those whose onsets fall in its frame range, each anchored once
    assert events == sorted(anchored | set(range(q.start, q.stop)))
    # a part whose events are all anchored is not asked again, and answering it twice stacks nothing
    qtbot.waitUntil(lambda: not win.runner.is_busy("update"), timeout=WAIT)
    again = [o for o in eng.next_queries(10) if (o.item_id, o.start, o.stop) == (audio.id, q.start, q.stop)]
    assert all(o.uncertainty == 0.0 for o in again), again
    win.accept_runner_up_here()
    assert sorted(lab.event for lab in eng.labels(audio.id) if isinstance(lab, AnchorLabel)) == events
    assert "already anchored" in win.statusBar().currentMessage()


@pytest.mark.slow
def test_space_on_an_onset_question_plays_both_candidate_onsets(qtbot, demo):
    import soundfile

    from marginalia.app.audio import AudioPlayer

    from .helpers import StandInPlayer
    win, _ = demo
    _show_the_recording(qtbot, win)
    win.actions["next_question"].trigger()
    qtbot.waitUntil(lambda: win.current_question is not None and win.current_item == win.current_question.item_id,
                    timeout=WAIT)
    q = win.current_question
    assert q.event is not None and "Space: hear both onsets" in win.statusBar().currentMessage()
    win.audio, win.audio_factory = None, StandInPlayer
    try:
        win.actions["play"].trigger()
        qtbot.waitUntil(lambda: win.audio is not None and bool(win.audio.played), timeout=WAIT)
        path, start, stop = win.audio.played[0]
        assert (start, stop) == (0.0, None)
        signal, sr = soundfile.read(path)
        model_t, runner_t = (q.answers[w][0].time_s for w in ("model", "runner-up"))
        span = abs(model_t - runner_t) + 0.8 + 0.6            # the excerpt around both, played twice
        assert signal.shape[0] / sr == pytest.approx(2 * span + 0.4, abs=0.05)
        said = win.statusBar().currentMessage()
        assert said.startswith("playing the model's onset (click at 0.8 s), then the runner-up's onset")
    finally:
        win.audio, win.audio_factory = None, AudioPlayer


def test_a_round_by_keys_writes_the_labels_shown_and_brings_the_next_question(qtbot, demo):
    win, _ = demo
    eng = win.engine
    _key(qtbot, win, Qt.Key.Key_Q)
    qtbot.waitUntil(lambda: win.current_question is not None and win.current_item == win.current_question.item_id,
                    timeout=WAIT)
    question = win.current_question
    item = question.item_id
    shown = [label_fact(lab) for lab in question.answers["runner-up"]]
    assert win.active_panel.question_label.text() == question.sentence
    before = {lab.id for lab in eng.labels(item)}
    _key(qtbot, win, Qt.Key.Key_B)
    added = [lab for lab in eng.labels(item) if lab.id not in before]
    assert [label_fact(lab) for lab in added] == shown            # exactly what the panel showed, nothing else
    qtbot.waitUntil(lambda: win.current_question is not None and win.current_question is not question, timeout=WAIT)
    assert win.current_question.query != question.query
    win.undo()                                                    # the answer was one step
    assert {lab.id for lab in eng.labels(item)} == before
    # leave no question on its way: a late one would frame the view under the next test's mouse
    qtbot.waitUntil(lambda: not any(win.runner.is_busy(lane) for lane in ("question", "prefetch", "load")),
                    timeout=WAIT)
    win.current_query = win.current_question = None
    win._clear_question_overlays()


def test_export_and_reimport_into_a_fresh_project(qtbot, demo):
    win, work = demo
    out = work / "exported_annotations.csv"
    assert finish_io(qtbot, win, lambda: win.export_to("annotations-csv", str(out)))
    assert out.exists() and out.read_text().splitlines()[0].startswith("profile.id")

    def cgh_labels(engine):
        names = {i.id: i.name for i in engine.items()}
        return sorted((names[lab.item_id], lab.kind.value) for lab in engine.labels() if isinstance(lab, RegionLabel))

    expected = cgh_labels(win.engine)
    fresh = Engine.create(work / "fresh.marginalia")
    win.set_engine(fresh)
    assert finish_io(qtbot, win, lambda: win.import_data([str(work / "profiles.csv")]))
    assert "profiles.csv read as long table: id=profile.id" in win.statusBar().currentMessage()
    assert len(finish_io(qtbot, win, lambda: win.import_labels_from("annotations-csv", str(out)))) == len(expected)
    assert cgh_labels(win.engine) == expected
    # the same table again adds nothing, and says so; importing the same profiles again neither
    assert finish_io(qtbot, win, lambda: win.import_labels_from("annotations-csv", str(out))) == []
    assert "already has these labels" in win.statusBar().currentMessage()
    assert cgh_labels(win.engine) == expected
    assert finish_io(qtbot, win, lambda: win.import_data([str(work / "profiles.csv")])) == []


def test_export_into_an_unwritable_place_is_a_clear_error_not_a_bug(qtbot, demo):
    win, work = demo
    blocker = work / "a_file"
    blocker.write_text("not a folder\n")
    assert finish_io(qtbot, win, lambda: win.export_to("bundle", str(blocker / "bundle"))) == []
    text = win.last_error_dialog.informativeText()
    assert "bug" not in text.lower() and "a_file" in text and "write to" in text
    win.last_error_dialog.close()


def test_corrupt_file_gives_a_clear_message(qtbot, demo):
    win, work = demo
    bad = work / "corrupt.csv"
    bad.write_bytes(b"profile.id,chromosome,position,logratio\n1,1,abc,\x00\x00\n")
    assert finish_io(qtbot, win, lambda: win.import_data([str(bad)])) == []
    dlg = win.last_error_dialog
    assert isinstance(dlg, QtWidgets.QMessageBox) and dlg.isVisible()
    text = dlg.informativeText()
    assert "corrupt.csv" in text and "Traceback" not in text
    dlg.close()


def test_importing_a_table_cut_short_says_so_after_the_import(qtbot, demo):
    win, work = demo
    cut = work / "cut.csv"
    cut.write_text("profile.id,chromosome,position,logratio\n" +
                   "".join(f"9,1,{100 * i},{0.01 * i}\n" for i in range(1, 30)) + "9,1,3000,-0.")
    ids = finish_io(qtbot, win, lambda: win.import_data([str(cut)]))
    assert len(ids) == 1                                     # read all the same
    dlg = win.last_error_dialog
    assert isinstance(dlg, QtWidgets.QMessageBox) and dlg.isVisible()
    assert "cut.csv, line 31: the last line has no line end" in dlg.informativeText()
    dlg.close()


def _closed_project_with_a_label(work, name, **label):
    """``(path, item)``: a new project ``work / name`` of the demo profiles with one "0" region, closed."""
    path = work / name
    eng = Engine.create(path)
    item = eng.import_files([str(work / "profiles.csv")])[0]
    eng.add_label(RegionLabel(item, start=2, stop=9, kind=RegionKind.ZERO, **label))
    eng.close()
    return path, item


@pytest.mark.slow
def test_a_damaged_project_is_restored_from_its_backup_and_says_where_the_damaged_file_went(qtbot, demo):
    win, work = demo
    path, _ = _closed_project_with_a_label(work, "mine.marginalia")   # the close-time backup holds the label
    path.write_bytes(b"SQLite format 3\x00" + b"\x00" * 5000)
    assert win.open_project(str(path)) is False
    dlg = win.last_error_dialog
    button = next(b for b in dlg.buttons() if b.text() == "Restore last good backup")
    button.click()
    qtbot.waitUntil(lambda: win.engine is not None and str(getattr(win.engine, "path", "")) != "", timeout=10_000)
    assert [lab.kind for lab in win.engine.labels()] == [RegionKind.ZERO]
    message = win.statusBar().currentMessage()
    aside = [p.name for p in work.glob("mine.marginalia.damaged-*") if not p.name.endswith(("-wal", "-shm"))]
    assert len(aside) == 1 and f"kept as {aside[0]}" in message
    notice = win.last_error_dialog      # the status line is soon replaced: the notice keeps the file's name
    assert notice.text() == "Restored the backup" and f"kept as {aside[0]}" in notice.informativeText()
    notice.close()
    win.set_engine(Engine.open_demo(work))


@pytest.mark.slow
def test_restoring_a_backup_brings_back_the_label_edits_made_after_it(qtbot, demo):
    import sqlite3
    win, work = demo
    path, item = _closed_project_with_a_label(work, "crashed.marginalia", id="before")
    older = {p.name for p in (work / "crashed.marginalia.backups").iterdir()}
    eng = Engine.open(path)
    eng.add_label(RegionLabel(item, start=20, stop=30, kind=RegionKind.ONE, id="after"))
    eng.close()
    for p in (work / "crashed.marginalia.backups").iterdir():   # as after a crash: no backup holds "after"
        if p.name not in older:
            p.unlink()
    conn = sqlite3.connect(path)
    conn.execute("UPDATE items SET created = created + 1")       # damage the item record, not the edit log
    conn.commit()
    conn.close()
    assert win.open_project(str(path)) is False
    next(b for b in win.last_error_dialog.buttons() if b.text() == "Restore last good backup").click()
    assert sorted(lab.id for lab in win.engine.labels()) == ["after", "before"]
    notice = win.last_error_dialog
    assert notice.text() == "Restored the backup and recovered later label edits"
    assert "1 added, 0 changed, 0 deleted" in notice.informativeText() and "Ctrl+Z" in notice.informativeText()
    assert "kept as crashed.marginalia.damaged-" in notice.informativeText()
    notice.close()
    win.engine.undo()
    assert [lab.id for lab in win.engine.labels()] == ["before"]
    win.set_engine(Engine.open_demo(work))
