"""Save ``docs/images/prior_model.png``: a high-density project started from a low-density model.

Usage: ``python -m benchmarks.images.prior_screenshot [--data PATH] [--out PNG] [--reveal N] [--source project|model]``

On the neuroblastoma cohort (Institut Curie, Hocking et al. 2013; ``cgh/neuroblastoma/profiles_small.csv.gz``
and its expert labels): the low-density (BAC) profiles with their labels become a project retrained by the
engine (``--source project``, the default), or the aCGH recipe trained on them is written as a model file, as
``marginalia-cli train`` writes it (``--source model``); a new project holds the high-density (oligo)
chromosomes with the expert labels of ``N`` of them (those ``benchmarks/quality/transfer_project_cgh.py``
reveals in its first draw). The window then does Model ▸ Start from another project or model file… with that
source and retrains (Ctrl+R):
the Model panel shows the prior, its coupling and its label errors beside the adapted model's, and every
model version with its errors on the labelled regions. Prints the panel's rows. Runs offscreen.
"""

from __future__ import annotations

import argparse
import os
import pathlib
import shutil
import sys
import tempfile
import time
import warnings

from benchmarks._common import ROOT, themed_app  # noqa: E402

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")


def wait(app, until, timeout=600.0):
    end = time.perf_counter() + timeout
    while time.perf_counter() < end:
        app.processEvents()
        if until():
            return True
        time.sleep(0.005)
    return False


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", default=str(ROOT.parent / "shared" / "data"), help="the shared data folder")
    ap.add_argument("--out", default=str(ROOT / "docs" / "images" / "prior_model.png"))
    ap.add_argument("--reveal", type=int, default=4, help="labelled high-density chromosomes (default 4)")
    ap.add_argument("--source", choices=("project", "model"), default="project",
                    help="start from a low-density project (default) or the recipe's model file")
    args = ap.parse_args(argv)
    nb = pathlib.Path(args.data) / "cgh" / "neuroblastoma"
    if not (nb / "annotations_small.csv").exists():
        print(f"prior_screenshot: no neuroblastoma data in {nb}; pass --data", file=sys.stderr)
        return 1

    from PySide6 import QtCore

    from benchmarks.experiments.transfer_cgh import target_splits
    from benchmarks.quality.quality_cgh import load
    from benchmarks.quality.transfer_project_cgh import project, write_profiles
    from marginalia.app.main_window import MainWindow
    from marginalia.cgh.recipe import CghSegmenter, density_class
    from marginalia.engine import Engine
    from marginalia.models.files import save_model

    work = pathlib.Path(tempfile.mkdtemp(prefix="prior-shot-"))
    try:
        items = load(args.data)
        source = [it for it in items if density_class(it[0]) == "low"]
        target = [it for it in items if density_class(it[0]) == "high"]
        t0 = time.perf_counter()
        if args.source == "model":
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                recipe = CghSegmenter().fit([s for s, _ in source], [y for _, y in source])
            model_file = work / "low-density.model"
            save_model(model_file, recipe)
        else:
            write_profiles(work / "low-density.csv", source)
            src, _ = project(work, "low-density", work / "low-density.csv", source)
            src.retrain()
            model_file = pathlib.Path(src.path)
            src.close()
        print(f"prior: {model_file.name} from {len(source)} low-density chromosomes ({time.perf_counter() - t0:.0f} s)")
        pool, _test = target_splits(target, 1)[0]
        revealed = [target[i] for i in pool[:args.reveal]]
        table = work / "high-density.csv"
        write_profiles(table, target)
        eng, ids = project(work, "high-density", table, revealed)
        path = eng.path
        eng.close()
        app = themed_app()
        settings = QtCore.QSettings(str(work / "settings.ini"), QtCore.QSettings.Format.IniFormat)
        win = MainWindow(Engine.open(path), settings=settings)
        win.learner.timer.setInterval(600_000)   # retrains only when asked, as the steps below say
        win.resize(1400, 880)
        win.show()
        # the Model panel tall enough for its versions, the subject of this picture
        win.resizeDocks([win.model_dock], [560], QtCore.Qt.Orientation.Vertical)
        win.show_item(ids[revealed[0][0].name])
        if not wait(app, lambda: win.current_prediction() is not None and not win.runner.is_busy()):
            print("prior_screenshot: the first item was not drawn", file=sys.stderr)
            return 1
        win.choose_prior_file = lambda: str(model_file)
        t0 = time.perf_counter()
        win.actions["start_from"].trigger()
        panel = win.model_panel
        wait(app, lambda: "prior" in (panel.version_rows() or [[""] * 4])[0][2] and panel.prior_label.isVisible())
        print(f"started from the prior: {time.perf_counter() - t0:.1f} s")
        t0 = time.perf_counter()
        win.actions["retrain"].trigger()
        wait(app, lambda: win.runner.is_busy("retrain"), 5)
        wait(app, lambda: not win.runner.is_busy())
        wait(app, lambda: "coupled" in panel.version_rows()[0][2] and bool(panel.version_rows()[0][3])
             and "current model" in panel.prior_label.text(), 120)
        wait(app, lambda: False, 1.0)
        print(f"coupled retrain: {time.perf_counter() - t0:.1f} s")
        print("prior:", panel.prior_label.text().replace("\n", " | "))
        print("versions (newest first):")
        for row in panel.version_rows():
            print("  " + "  ".join(row))
        out = pathlib.Path(args.out)
        out.parent.mkdir(parents=True, exist_ok=True)
        win.grab().save(str(out))
        print(f"wrote {out}")
        win.close()
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
