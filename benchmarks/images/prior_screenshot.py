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

import os
import pathlib
import sys
import time
import warnings

from benchmarks._common import ROOT, themed_app  # noqa: E402
from benchmarks.images._shots import finish, main_window, neuroblastoma, parser, print_versions, retrain, scratch, wait

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")


def main(argv=None) -> int:
    ap = parser(__doc__, ROOT / "docs" / "images" / "prior_model.png")
    ap.add_argument("--reveal", type=int, default=4, help="labelled high-density chromosomes (default 4)")
    ap.add_argument("--source", choices=("project", "model"), default="project",
                    help="start from a low-density project (default) or the recipe's model file")
    args = ap.parse_args(argv)
    if neuroblastoma(args.data, "prior_screenshot") is None:
        return 1

    from PySide6 import QtCore

    from benchmarks.experiments.transfer_cgh import platforms, target_splits
    from benchmarks.quality.quality_cgh import load
    from benchmarks.quality.transfer_project_cgh import project, write_profiles
    from marginalia.cgh.recipe import CghSegmenter
    from marginalia.engine import Engine
    from marginalia.models.files import save_model

    with scratch("prior-shot-") as work:
        source, target = platforms(load(args.data))
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
        win = main_window(Engine.open(path), work, (1400, 880))
        win.learner.timer.setInterval(600_000)   # retrains only when asked, as the steps below say
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
        retrain(app, win)
        wait(app, lambda: "coupled" in panel.version_rows()[0][2] and bool(panel.version_rows()[0][3])
             and "current model" in panel.prior_label.text(), 120)
        wait(app, timeout=1.0)
        print(f"coupled retrain: {time.perf_counter() - t0:.1f} s")
        print("prior:", panel.prior_label.text().replace("\n", " | "))
        print_versions(panel)
        finish(win, args.out, win)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
