"""Model ▸ Model versions lists the sync metric's versions and restores one; File ▸ Export ▸ sync metric writes it
and Model ▸ Start from… reads it back as a new version; a bundle's sync anchors reach an open compare dialog."""

import os

import numpy as np
import pytest
from PySide6 import QtWidgets

from marginalia.app.panels.model_panel import describe_versions, short_id, version_choices
from marginalia.sync.anchors import project_aligner


def test_sync_versions_read_apart_in_the_panel_and_the_dialog():
    """Sync metric ids share their leading digits (a microsecond clock): every place that names one tells them
    apart, and a sync row counts anchors in its own words, not as labels of the task."""
    versions = [
        {"id": "ali-d7e4d97dca85e4ff", "task": "align", "created": 0.0, "n_labels": 0, "trained_by": "initial",
         "current": True},
        {"id": "sync@1795986586565092", "task": "sync", "created": 1.0, "n_labels": 2, "trained_by": "ssvm",
         "fitted_from": "2 sync anchors on 1 pair", "current": False},
        {"id": "sync@1795986588255810", "task": "sync", "created": 2.0, "n_labels": 3, "trained_by": "ssvm",
         "fitted_from": "3 sync anchors on 1 pair", "current": False},
        {"id": "sync@1795986592213099", "task": "sync", "created": 3.0, "n_labels": 2, "trained_by": "revert",
         "reverted_from": "sync@1795986586565092", "fitted_from": "2 sync anchors on 1 pair", "current": True}]
    assert short_id("sync@1795986586565092") == "sync@\u20266565092"
    assert short_id("ali-d7e4d97dca85e4ff") == "ali-d7e4d97d"
    rows = describe_versions(versions)
    assert [(r["labels"], r["change"]) for r in rows] == [
        ("", "sync metric, 2 anchors (restored)"),
        ("", "sync metric, 3 anchors"),           # the panel's narrow column; the tooltip says it in full
        ("", "sync metric, 2 anchors"),
        ("0", "untrained first model")]
    assert rows[1]["detail"] == "sync metric learned from 3 sync anchors on 1 pair"
    assert rows[0]["detail"] == "sync metric: revert to sync@\u20266565092 (2 sync anchors on 1 pair)"
    texts = [text for text, _ in version_choices(versions)]
    assert len(set(texts)) == 4
    assert texts[0].endswith("  \u00b7  sync@\u20262213099  (current)")
    assert texts[-1].endswith("  \u00b7  0 labels \u00b7 untrained first model  \u00b7  ali-d7e4d97d  (current)")
    assert not any("ssvm" in t or "initial" in t for t in texts)


@pytest.fixture
def learned(takes_window):
    """The window on three takes, with two learned sync metrics (3 anchors, then 4)."""
    win, ids, onsets = takes_window
    eng = win.engine
    for k in (4, 12, 20):
        eng.add_sync_anchor(ids["a"], ids["b"], float(onsets["a"][k]), float(onsets["b"][k]))
    first = eng.learn_sync_metric(options={"max_iter": 5})
    eng.add_sync_anchor(ids["a"], ids["b"], float(onsets["a"][8]), float(onsets["b"][8]))
    second = eng.learn_sync_metric(options={"max_iter": 5, "C": 10.0})
    return win, ids, first, second


def _shown(qtbot, win, item_id):
    win.show_item(item_id)
    qtbot.waitUntil(lambda: win.current_item == item_id and win._item_payload is not None, timeout=20000)


@pytest.mark.slow
def test_the_sync_metric_versions_are_listed_and_one_is_restored_from_the_dialog(qtbot, learned, tmp_path,
                                                                                 monkeypatch):
    win, ids, first, second = learned
    _shown(qtbot, win, ids["a"])
    win._versions_timer.start()
    qtbot.waitUntil(lambda: any("sync metric" in r[2] for r in win.model_panel.version_rows()), timeout=20000)
    sync_rows = [r for r in win.model_panel.version_rows() if "sync metric" in r[2]]
    assert [r[1:3] for r in sync_rows] == [["", "sync metric, 4 anchors"], ["", "sync metric, 3 anchors"]]
    tips = [win.model_panel.versions.topLevelItem(i).toolTip(2) for i in range(2)]
    assert tips[0].startswith("sync metric learned from 4 sync anchors on 1 pair\nmodel sync@")
    offered, shots = [], []

    def exec_(dialog):        # what the person sees, then picks the first sync metric
        items = dialog.comboBoxItems()
        offered.extend(items)
        shot = tmp_path / "versions.png"
        dialog.grab().save(str(shot))
        shots.append(shot)
        dialog.setTextValue(next(t for t in items if t.endswith(short_id(first.model_id))))
        return QtWidgets.QDialog.DialogCode.Accepted

    monkeypatch.setattr(QtWidgets.QInputDialog, "exec", exec_)
    win.actions["model_versions"].trigger()
    assert [t for t in offered if "sync metric" in t] == [
        t for t in offered if short_id(second.model_id) in t or short_id(first.model_id) in t]
    # newest first: the current sync metric on top, named by what it was learned from and told apart by its id
    assert offered[0].endswith(f"  \u00b7  sync metric learned from 4 sync anchors on 1 pair  \u00b7  "
                               f"{short_id(second.model_id)}  (current)")
    assert os.path.getsize(shots[0]) > 1000
    restored = win.engine.sync_model_id
    assert restored not in (first.model_id, second.model_id)
    assert win.engine.session.load_model(restored).params["reverted_from"] == first.model_id
    assert np.allclose(project_aligner(win.engine).metric_weights(), win.engine.session.load_model(
        first.model_id).params["w"])
    assert win.statusBar().currentMessage().startswith(
        f"Restored the sync metric {short_id(first.model_id)} (fitted from 3 sync anchors on 1 pair) as "
        f"{short_id(restored)}: later comparisons and carries use it; to go back, revert to "
        f"{short_id(second.model_id)}")
    assert len({short_id(first.model_id), short_id(second.model_id), short_id(restored)}) == 3


@pytest.mark.slow
def test_the_sync_metric_is_exported_and_read_back_as_a_new_version(qtbot, learned, tmp_path, monkeypatch):
    win, ids, _, second = learned
    _shown(qtbot, win, ids["b"])
    out = tmp_path / "exported" / "sync.model"
    out.parent.mkdir()
    monkeypatch.setattr(QtWidgets.QFileDialog, "getSaveFileName", staticmethod(lambda *a, **k: (str(out), "")))
    win.last_io_result = None
    win.actions["export:sync-model"].trigger()
    qtbot.waitUntil(lambda: win.last_io_result is not None, timeout=60000)
    assert win.last_io_result and out.is_file()
    before = win.engine.sync_model_id
    win.choose_prior_file = lambda: str(out)
    win.actions["start_from"].trigger()
    qtbot.waitUntil(lambda: win.engine.sync_model_id != before, timeout=60000)
    qtbot.waitUntil(lambda: "The sync metric is now the one of sync.model" in win.statusBar().currentMessage(),
                    timeout=20000)
    assert "(fitted from the model file sync.model)" in win.statusBar().currentMessage()
    rows = [v for v in win.engine.model_versions(ids["b"]) if v["task"] == "sync"]
    assert (rows[-1]["trained_by"], rows[-1]["current"]) == ("model-file", True)
    assert np.allclose(project_aligner(win.engine).metric_weights(),
                       win.engine.session.load_model(second.model_id).params["w"])
    qtbot.waitUntil(lambda: any("read from the model file sync.model" in r[2]
                                for r in win.model_panel.version_rows()), timeout=20000)
    win.model_panel.grab().save(str(tmp_path / "panel.png"))


@pytest.mark.slow
def test_starting_from_another_project_takes_its_sync_metric(qtbot, learned, tmp_path):
    from marginalia.engine import Engine
    win, ids, _, _ = learned
    _shown(qtbot, win, ids["b"])
    # another project of one of the takes, whose sync metric weighs every descriptor 2
    from marginalia.models.files import TrainedModel, save_model
    from marginalia.sync import SyncAligner
    unit = SyncAligner().with_metric_weights(np.full(SyncAligner().n_features_, 2.0))
    save_model(tmp_path / "unit.model", TrainedModel("sync", "sync-aligner", unit, unit.metric_weights(), {}))
    (tmp_path / "other").mkdir()
    source = Engine.create(tmp_path / "other" / "src.marginalia")
    try:
        source.import_files([tmp_path / "a.wav"])
        source.start_from(tmp_path / "unit.model")
    finally:
        source.close()
    before = win.engine.sync_model_id
    win.choose_prior_file = lambda: str(tmp_path / "other" / "src.marginalia")
    win.actions["start_from"].trigger()
    qtbot.waitUntil(lambda: win.engine.sync_model_id != before, timeout=60000)
    qtbot.waitUntil(lambda: "The sync metric is now the one of src.marginalia" in win.statusBar().currentMessage(),
                    timeout=20000)
    assert "(fitted from the project src.marginalia)" in win.statusBar().currentMessage()
    assert np.allclose(project_aligner(win.engine).metric_weights(), 2.0)
    qtbot.waitUntil(lambda: any("sync metric taken from the project src.marginalia" in r[2]
                                for r in win.model_panel.version_rows()), timeout=20000)


@pytest.mark.slow
def test_a_bundle_imported_while_the_compare_dialog_is_open_redraws_its_path_through_the_anchors(qtbot, takes_window,
                                                                                                tmp_path):
    from tests.app.test_sync_anchors_gui import _compare, _settled
    win, ids, onsets = takes_window
    eng = win.engine
    anchor = eng.add_sync_anchor(ids["a"], ids["b"], 2.0, 2.9)
    eng.export("bundle", tmp_path / "bundle")
    eng.delete_sync_anchors([anchor.id])
    dialog = _compare(qtbot, win, ids)
    assert dialog.anchors == []
    win.last_io_result = None
    win.import_labels_from("bundle", str(tmp_path / "bundle"))
    qtbot.waitUntil(lambda: win.last_io_result is not None, timeout=60000)
    _settled(qtbot, win, dialog, 1)
    assert [(a.reference_s, a.target_s) for a in dialog.anchors] == [(2.0, 2.9)]
    assert "passes through 1 sync anchor" in dialog.summary.text()


@pytest.mark.slow
def test_restoring_an_older_sync_metric_redraws_the_open_compare_dialog_with_it(qtbot, learned, monkeypatch):
    from tests.app.test_sync_anchors_gui import _compare, _settled
    win, ids, first, second = learned
    dialog = _compare(qtbot, win, ids)
    _settled(qtbot, win, dialog, 4)
    assert dialog.model_id == second.model_id
    assert f"with the project's learned metric {short_id(second.model_id)}." in dialog.summary.text()
    win.choose_model_version = lambda versions: first.model_id
    win.actions["model_versions"].trigger()
    restored = win.engine.sync_model_id
    assert restored not in (first.model_id, second.model_id)
    qtbot.waitUntil(lambda: dialog.model_id == restored and not dialog.busy and not win.runner.is_busy("sync"),
                    timeout=60000)
    assert f"with the project's learned metric {short_id(restored)}." in dialog.summary.text()
