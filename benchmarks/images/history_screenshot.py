"""Save ``docs/images/history_panel.png``: Edit > History on a project with the real neuroblastoma labels.

Usage: ``python -m benchmarks.images.history_screenshot [--data PATH] [--out PNG]``

Plays the scenario of issue 46 on the neuroblastoma cohort (Institut Curie, Hocking et al. 2013;
``cgh/neuroblastoma/profiles_small.csv.gz`` and its 676 expert labels): the labels are imported, the
import is undone, a new region is drawn (so redo cannot reach the import any more), then the app is
opened, Edit > History is shown, the import step is selected and restored. The screenshot shows the
history after the restore, the import step still selected. Runs offscreen.
"""

from __future__ import annotations

import os
import sys
import time

from benchmarks._common import ROOT, themed_app  # noqa: E402
from benchmarks.images._shots import finish, main_window, neuroblastoma, neuroblastoma_project, parser, scratch, wait

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")


def main(argv=None) -> int:
    args = parser(__doc__, ROOT / "docs" / "images" / "history_panel.png").parse_args(argv)
    nb = neuroblastoma(args.data, "history_screenshot")
    if nb is None:
        return 1

    from marginalia.engine import Engine
    from marginalia.types import RegionKind, RegionLabel

    with scratch("history-shot-") as work:
        t0 = time.perf_counter()
        path, labels = neuroblastoma_project(nb, work, author="expert")
        print(f"imported the profiles and {len(labels)} labels in {time.perf_counter() - t0:.1f} s")
        with Engine.open(path) as eng:     # the session of the issue: a stray undo, then a new region
            eng.session.author = "me"
            eng.add_label(RegionLabel(labels[0].item_id, start=0, stop=20, kind=RegionKind.ZERO))
            eng.session._history.floor = 0   # as before the fix: undo reached yesterday's import
            eng.undo()
            eng.undo()
            eng.add_label(RegionLabel(labels[0].item_id, start=0, stop=20, kind=RegionKind.ZERO))
        app = themed_app()
        win = main_window(Engine.open(path), work, (1300, 850))
        win.learner.enabled = False
        win.show()
        wait(app, timeout=2.0)
        win.show_history()
        dialog = win.history_dialog
        dialog.resize(960, 340)
        imported = win.engine.history()[0]
        dialog.select_step(imported.id)
        dialog.restore_button.click()
        dialog.select_step(imported.id)
        wait(app, timeout=1.0)
        print(f"labels now: {len(win.engine.labels())}; status: {win.statusBar().currentMessage()}")
        finish(dialog, args.out, dialog, win)
        return 0


if __name__ == "__main__":
    sys.exit(main())
