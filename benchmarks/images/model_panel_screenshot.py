"""Save ``docs/images/model_panel.png``: the model panel's versions and stopping reading on real labels.

Usage: ``python -m benchmarks.images.model_panel_screenshot [--data PATH] [--out PNG] [--questions N]``

On the neuroblastoma cohort (Institut Curie, Hocking et al. 2013; ``cgh/neuroblastoma/profiles_small.csv.gz``
and its expert labels): the labels are imported, the window retrains every task (Model > Retrain every task),
then answers ``N`` questions with the A key as a person would (each answer is a quick update of the model,
one version), and retrains again. The screenshot is the whole window: the Model panel lists the versions with
what changed and reads the stopping signal; the view shows the last item with the newest model (never "STALE").
Prints the versions listed, the stopping reading and the time of each step. Runs offscreen.
"""

from __future__ import annotations

import os
import sys
import time

from benchmarks._common import ROOT, themed_app  # noqa: E402
from benchmarks.images._shots import (
    finish,
    main_window,
    neuroblastoma,
    neuroblastoma_project,
    parser,
    print_versions,
    retrain,
    scratch,
    wait,
)

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")


def main(argv=None) -> int:
    ap = parser(__doc__, ROOT / "docs" / "images" / "model_panel.png")
    ap.add_argument("--questions", type=int, default=3, help="questions answered with A after the retrain")
    args = ap.parse_args(argv)
    nb = neuroblastoma(args.data, "model_panel_screenshot")
    if nb is None:
        return 1

    from marginalia.engine import Engine

    with scratch("model-panel-shot-") as work:
        path, labels = neuroblastoma_project(nb, work)
        print(f"imported {len(labels)} expert labels")
        app = themed_app()
        win = main_window(Engine.open(path), work, (1400, 880))
        win.learner.timer.setInterval(600_000)   # retrains only when asked, as the steps below say
        win.show()
        if not wait(app, lambda: win.current_prediction() is not None and not win.runner.is_busy()):
            print("model_panel_screenshot: the first item was not drawn", file=sys.stderr)
            return 1
        msgs = []   # the status bar's messages (they expire): what a question that never came said
        win.statusBar().messageChanged.connect(lambda m: msgs.append(m) if m else None)
        t0 = time.perf_counter()
        retrain(app, win, "retrain_all")
        print(f"retrain of every task: {time.perf_counter() - t0:.1f} s")
        answered = None
        for k in range(args.questions):
            t0 = time.perf_counter()
            win.actions["next_question"].trigger()
            # the answered question stays current until the next one is ranked: wait for a new one, shown on its
            # item (A pressed while the item still loads is refused with "the question is on its way", and the
            # same question comes back: no new label, one quick update fewer than the caption says)
            if not wait(app, lambda: win.current_question is not None and win.current_question is not answered
                        and win.current_item == win.current_question.item_id, 120):
                print(f"no question to ask: {msgs[-5:]!r} query {win.current_query} follow "
                      f"{getattr(win, '_follow_queries', None)} busy {win.runner.busy_lanes()}")
                break
            win.activateWindow()
            win.active_view().setFocus()
            answered = win.current_question
            sentence = answered.sentence
            win.actions["accept"].trigger()            # the A key
            wait(app, lambda: not win.runner.is_busy("update"), 120)
            print(f"question {k + 1}: {sentence} (answered A, {time.perf_counter() - t0:.1f} s)")
        t0 = time.perf_counter()
        retrain(app, win)
        wait(app, timeout=1.0)
        print(f"retrain: {time.perf_counter() - t0:.1f} s; drawn stale: {win._drawn_stale}")
        print_versions(win.model_panel)
        print("reading:", win.model_panel.reading.text())
        finish(win, args.out, win)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
