"""Save ``docs/images/history_panel.png``: Edit > History on a project with the real neuroblastoma labels.

Usage: ``python -m benchmarks.images.history_screenshot [--data PATH] [--out PNG]``

Plays the scenario of issue 46 on the neuroblastoma cohort (Institut Curie, Hocking et al. 2013;
``cgh/neuroblastoma/profiles_small.csv.gz`` and its 676 expert labels): the labels are imported, the
import is undone, a new region is drawn (so redo cannot reach the import any more), then the app is
opened, Edit > History is shown, the import step is selected and restored. The screenshot shows the
history after the restore, the import step still selected. Runs offscreen.
"""

from __future__ import annotations

import argparse
import os
import pathlib
import shutil
import sys
import tempfile
import time

from benchmarks._common import ROOT, themed_app  # noqa: E402

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")


def pump(app, seconds):
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        app.processEvents()
        time.sleep(0.005)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", default=str(ROOT.parent / "shared" / "data"), help="the shared data folder")
    ap.add_argument("--out", default=str(ROOT / "docs" / "images" / "history_panel.png"))
    args = ap.parse_args(argv)
    nb = pathlib.Path(args.data) / "cgh" / "neuroblastoma"
    if not (nb / "annotations_small.csv").exists():
        print(f"history_screenshot: no neuroblastoma data in {nb}; pass --data", file=sys.stderr)
        return 1

    from PySide6 import QtCore

    from marginalia.app.main_window import MainWindow
    from marginalia.engine import Engine
    from marginalia.types import RegionKind, RegionLabel

    work = pathlib.Path(tempfile.mkdtemp(prefix="history-shot-"))
    try:
        shutil.copy2(nb / "profiles_small.csv.gz", work / "profiles.csv.gz")
        shutil.copy2(nb / "annotations_small.csv", work / "annotations.csv")
        path = work / "neuroblastoma.marginalia"
        with Engine.create(path) as eng:
            eng.session.author = "expert"
            eng.import_files([work / "profiles.csv.gz"])
            t0 = time.perf_counter()
            labels = eng.import_labels("annotations-csv", work / "annotations.csv")
            print(f"imported {len(labels)} labels in {time.perf_counter() - t0:.1f} s")
        with Engine.open(path) as eng:     # the session of the issue: a stray undo, then a new region
            eng.session.author = "me"
            eng.add_label(RegionLabel(labels[0].item_id, start=0, stop=20, kind=RegionKind.ZERO))
            eng.session._history.floor = 0   # as before the fix: undo reached yesterday's import
            eng.undo()
            eng.undo()
            eng.add_label(RegionLabel(labels[0].item_id, start=0, stop=20, kind=RegionKind.ZERO))
        app = themed_app()
        settings = QtCore.QSettings(str(work / "settings.ini"), QtCore.QSettings.Format.IniFormat)
        win = MainWindow(Engine.open(path), settings=settings)
        win.learner.enabled = False
        win.resize(1300, 850)
        win.show()
        pump(app, 2.0)
        win.show_history()
        dialog = win.history_dialog
        dialog.resize(960, 340)
        imported = win.engine.history()[0]
        dialog.select_step(imported.id)
        dialog.restore_button.click()
        dialog.select_step(imported.id)
        pump(app, 1.0)
        out = pathlib.Path(args.out)
        out.parent.mkdir(parents=True, exist_ok=True)
        dialog.grab().save(str(out))
        print(f"labels now: {len(win.engine.labels())}; status: {win.statusBar().currentMessage()}")
        print(f"wrote {out}")
        dialog.close()
        win.close()
        return 0
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
