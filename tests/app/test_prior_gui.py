"""Model ▸ Start from another project or model file, in the real window on a real engine (issue 47, point 7)."""

from __future__ import annotations

import pytest
from PySide6 import QtCore

from marginalia.app import theme
from marginalia.app.main_window import MainWindow
from marginalia.engine import Engine
from marginalia.types import RegionKind, RegionLabel

from ..core.engine.test_engine_prior import _prior_file
from ..core.engine.test_engine_segmentation import _write_profiles


@pytest.fixture
def window(qapp, qtbot, tmp_path):
    theme.configure_pyqtgraph()
    win = MainWindow(settings=QtCore.QSettings(str(tmp_path / "settings.ini"), QtCore.QSettings.Format.IniFormat))
    win.resize(1300, 850)
    win.show()
    truth = _write_profiles(tmp_path / "profiles.csv", n_profiles=2, chroms=("1", "2"), seed=3)
    eng = Engine.create(tmp_path / "p.marginalia")
    eng.import_files([tmp_path / "profiles.csv"])
    win.set_engine(eng)
    ids = {i.name: i.id for i in eng.items()}
    win.show_item(ids["1:1"])
    qtbot.waitUntil(lambda: win.current_prediction() is not None and win.current_prediction().item_id == ids["1:1"],
                    timeout=20000)
    yield win, eng, ids, truth, tmp_path
    win.runner.shutdown()
    win.close()
    eng.close()


@pytest.mark.slow
def test_starting_from_a_model_file_predicts_with_it_and_the_panel_shows_its_figures(qtbot, window):
    win, eng, ids, truth, tmp = window
    assert len(win.current_prediction().structure.breakpoints) >= 2
    path = _prior_file(eng, tmp / "flat.model", 1e6)       # a prior that sees no change at all
    win.choose_prior_file = lambda: str(path)
    win.actions["start_from"].trigger()
    qtbot.waitUntil(lambda: win.current_prediction() is not None
                    and len(win.current_prediction().structure.breakpoints) == 0, timeout=20000)
    panel = win.model_panel
    qtbot.waitUntil(lambda: panel.prior_label.isVisible() and "flat.model (model file), coupling \u03c1=1"
                    in panel.prior_label.text(), timeout=20000)
    assert panel.version_rows()[0][2].endswith("started from the prior model")
    a, b = truth["1:1"]
    eng.add_labels([RegionLabel(item_id=ids["1:1"], start=a - 10, stop=a + 10, kind=RegionKind.ONE),
                    RegionLabel(item_id=ids["1:1"], start=b - 10, stop=b + 10, kind=RegionKind.ONE)])
    win.retrain()
    qtbot.waitUntil(lambda: "full fit coupled to the prior (\u03c1=1)" in panel.version_rows()[0][2]
                    and panel.version_rows()[0][3].endswith(" / 2"), timeout=30000)
    # the prior sees no change: both "exactly one change" regions are wrong under it
    qtbot.waitUntil(lambda: "label errors on the 2 labelled regions: prior 2, current model" in panel.prior_label.text(),
                    timeout=20000)
    assert all(row[3].endswith(" / 2") for row in panel.version_rows())    # every version on the same labels
    win.actions["forget_prior"].trigger()
    assert eng.prior(ids["1:1"]) is None
    qtbot.waitUntil(lambda: not panel.prior_label.isVisible(), timeout=20000)


def test_a_corrupt_file_is_refused_in_one_line_and_nothing_changes(qtbot, window):
    win, eng, ids, _, tmp = window
    before = [v["id"] for v in eng.model_versions()]
    corrupt = tmp / "broken.model"
    corrupt.write_bytes(b"PK\x03\x04" + bytes(range(100)))
    win.choose_prior_file = lambda: str(corrupt)
    win.start_from_dialog()
    qtbot.waitUntil(lambda: getattr(win, "last_error_dialog", None) is not None, timeout=20000)
    text = win.last_error_dialog.informativeText()
    assert "broken.model" in text and "Traceback" not in text
    win.last_error_dialog.close()
    assert eng.prior() is None and [v["id"] for v in eng.model_versions()] == before


def test_each_version_row_says_its_errors_on_the_labelled_regions_next_to_what_changed():
    from marginalia.app.panels.model_panel import describe_versions, prior_reading

    versions = [{"id": "seg-a", "created": 0.0, "n_labels": 3, "trained_by": "prior", "current": False,
                 "errors": {"errors": 2, "fp": 0, "fn": 2, "n_regions": 3}},
                {"id": "seg-b", "created": 1.0, "n_labels": 5, "trained_by": "coupled", "rho": 1.0, "current": True,
                 "errors": {"errors": 1, "fp": 1, "fn": 0, "n_regions": 3}},
                {"id": "seg-c", "created": 2.0, "n_labels": 5, "trained_by": "perceptron", "current": False}]
    rows = describe_versions(versions)
    assert [(r["change"], r["errors"]) for r in rows] == [
        ("same labels \u00b7 quick update", ""),
        ("+2 labels \u00b7 full fit coupled to the prior (\u03c1=1)", "1 / 3"),
        ("started from the prior model", "2 / 3")]
    prior = {"source": "/somewhere/low.model", "source_kind": "model file", "rho": 1.0}
    assert prior_reading(prior) == "low.model (model file), coupling \u03c1=1\nno labelled region yet to measure it on"
    figures = {"prior": versions[0]["errors"], "current": versions[1]["errors"]}
    assert prior_reading(prior, figures).endswith("label errors on the 3 labelled regions: prior 2, current model 1")
    assert prior_reading(None) == ""
    aligner = {"source": "/somewhere/piano.model", "source_kind": "model file", "rho": None}
    assert prior_reading(aligner, {"prior": {"errors": 3, "n_regions": 8, "unit": "labels"},
                                   "current": {"errors": 1, "n_regions": 8, "unit": "labels"}}) == (
        "piano.model (model file): retrains start from its scorers\nlabel errors on the 8 labels: prior 3, "
        "current model 1")
    assert describe_versions([{"id": "ali-a", "created": 0.0, "n_labels": 0, "trained_by": "weak-supervision-prior",
                               "current": True}])[0]["change"] == "full fit (alignment) from the prior's scorers"
    assert prior_reading(dict(prior, source="b.marginalia", source_kind="project", source_items=185)).startswith(
        "b.marginalia (project), coupling \u03c1=1 with its 185 labelled items\n")
