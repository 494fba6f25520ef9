"""Save the question screenshots of ``docs/active-learning.md`` from the real app on real data.

Usage: ``python -m benchmarks.images.question_screenshots [--data PATH] [--out FOLDER]``

A project of the neuroblastoma profiles (Institut Curie, Hocking et al. 2013;
``cgh/neuroblastoma/profiles_small.csv.gz`` with its expert labels) and one Vienna 4x22 recording with
its score (Chopin op. 10 no. 3, pianist 1, rendered to audio). Each task is fitted once, then:

* ``question_cgh.png``: Next question (Q) on a copy-number item: the view zoomed on the disputed window,
  the model and the runner-up with a legend, the question in one sentence and the labels each answer
  writes; the queue, the margin under the plot and the Dataset browser give the same margin;
* ``question_audio.png``: the same on the recording: which of two onsets of one note is right;
* ``answered.png``: the window after ``A`` on that audio question: the next question on screen, the
  answered part gone from the queue, the answer one step of the history.

Prints each question's sentence, its margin as the queue and the view write it, and the time from the
key to the question on screen. Everything is written in a temporary folder; runs offscreen.
"""

from __future__ import annotations

import os
import pathlib
import sys
import tempfile
import time

from benchmarks._common import ROOT
from benchmarks.images._shots import main_window, parser

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")


def main(argv=None) -> int:
    args = parser(__doc__, ROOT / "docs" / "images").parse_args(argv)
    data = pathlib.Path(args.data)
    cgh = data / "cgh" / "neuroblastoma"
    vienna = data / "alignment" / "vienna4x22"
    wav = vienna / "audio_rendered" / "Chopin_op10_no3_p01.wav"
    mid = vienna / "score_midi" / "Chopin_op10_no3.mid"
    if not (cgh / "profiles_small.csv.gz").exists() or not wav.exists():
        print(f"question_screenshots: no neuroblastoma or Vienna 4x22 data under {data}; pass --data", file=sys.stderr)
        return 2

    from PySide6.QtCore import Qt
    from PySide6.QtTest import QTest

    from benchmarks._common import pump, themed_app
    from marginalia.app.panels.margins import format_margin
    from marginalia.engine import Engine

    out = pathlib.Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    app = themed_app()
    work = pathlib.Path(tempfile.mkdtemp(prefix="marginalia-questions-"))
    engine = Engine.create(work / "questions.marginalia")
    engine.import_files([cgh / "profiles_small.csv.gz", wav], scores={str(wav): mid})
    engine.import_labels("annotations-csv", cgh / "annotations_small.csv")
    infos = engine.items()
    cgh_id = next(i.id for i in infos if i.kind == "cgh")
    aud_id = next(i.id for i in infos if i.kind == "audio")
    t0 = time.perf_counter()
    engine.retrain()
    print(f"fitted every task in {time.perf_counter() - t0:.0f} s")

    win = main_window(engine, work, (1500, 920), settings="s.ini")
    win.show()

    def show(item_id):
        win.show_item(item_id)
        pump(app, lambda: win.current_item == item_id and win.current_prediction() is not None
             and win.current_prediction().item_id == item_id, 300)

    def key(k):
        win.activateWindow()
        win.active_view().setFocus()
        QTest.keyClick(win.active_view(), k)

    def ask(filename, previous=None):
        t = time.perf_counter()
        if previous is None:
            key(Qt.Key.Key_Q)
        else:
            key(Qt.Key.Key_A)
        pump(app, lambda: win.current_question is not None and win.current_question is not previous
             and win.current_item == win.current_question.item_id, 300)
        waited = time.perf_counter() - t
        pump(app, lambda: not win.runner.is_busy("prefetch"), 120)
        pump(app, timeout=0.5)
        q = win.current_question
        part = (q.item_id, q.query.start, q.query.stop)
        row = next((win.active_panel.queue.topLevelItem(i) for i, r in enumerate(win.active_panel.queries())
                    if (r.item_id, r.start, r.stop) == part), None)
        queue_margin = row.text(3) if row is not None else "(not in the queue)"
        print(f"{filename}: {q.sentence!r}; margin {format_margin(q.margin)} (queue {queue_margin}); "
              f"on screen {waited:.2f} s after the key")
        win.grab().save(str(out / filename))
        return q

    show(cgh_id)
    ask("question_cgh.png")
    show(aud_id)
    audio_question = ask("question_audio.png")
    ask("answered.png", previous=audio_question)
    win.close()
    engine.close()
    print(f"saved into {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
