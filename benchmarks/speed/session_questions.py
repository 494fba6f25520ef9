"""A scripted labelling session: the real window answers N questions on the demo by key, offscreen.

Usage: ``python -m benchmarks.speed.session_questions [--questions N] [--answers AB] [--no-reading] [--shots DIR]``

Each round is what a person does: read the question the panel shows, press ``A`` (the demo
has no known truth for its questions, so the model's answer is taken; ``--answers AB`` takes
turns) and wait until the next question is on screen. Reports the wait per answered question
(median, p95, max: from the key press to the next question shown; by kind of the answered
item), the actions per label (one key per question; the labels an answer writes are counted
from the engine), how often the next question repeats the one just answered, and, with
``--shots``, saves the window during the first copy-number and the first audio question.
A round stops early when the demo has no question left (every part labelled or certain).
``--no-reading`` answers as soon as a question is shown, before the next one is prepared.
"""

from __future__ import annotations

import argparse
import os
import pathlib
import sys
import tempfile
import time

ROOT = pathlib.Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--questions", type=int, default=20)
    ap.add_argument("--shots", default=None, help="folder for question_cgh.png and question_audio.png")
    ap.add_argument("--quick", action="store_true", help="5 questions")
    ap.add_argument("--answers", default="A", help="the keys answered in turn, e.g. AB (default A)")
    ap.add_argument("--no-reading", action="store_true",
                    help="answer as soon as a question is shown, before the next one is prepared")
    args = ap.parse_args(argv)
    n_questions = 5 if args.quick else args.questions

    import numpy as np
    from PySide6 import QtCore, QtWidgets
    from PySide6.QtCore import Qt
    from PySide6.QtTest import QTest

    app = QtWidgets.QApplication.instance() or QtWidgets.QApplication([])
    from benchmarks._common import pump as pump_events
    from marginalia.app import theme
    from marginalia.app.main_window import MainWindow
    from marginalia.engine import Engine

    def pump(until, timeout=120.0):
        return pump_events(app, until, timeout, poll_s=0.002)

    theme.configure_pyqtgraph()
    work = tempfile.mkdtemp(prefix="session_questions_")
    settings = QtCore.QSettings(os.path.join(work, "settings.ini"), QtCore.QSettings.Format.IniFormat)
    engine = Engine.open_demo(work)
    win = MainWindow(engine, settings=settings)
    win.resize(1400, 900)
    win.show()
    pump(lambda: win.current_prediction() is not None)
    said = []

    def ran_out(message):
        return message.startswith("no question left to ask")

    win.statusBar().messageChanged.connect(lambda text: text and said.append(text))

    def key(k):
        """A real key press on the shown view (the window's shortcuts take it)."""
        win.activateWindow()
        pump(win.isActiveWindow, 5)
        win.active_view().setFocus()
        QTest.keyClick(win.active_view(), k)

    t0 = time.perf_counter()
    key(Qt.Key.Key_Q)
    pump(lambda: win.current_question is not None and win.current_item == win.current_question.item_id, 300)
    first = time.perf_counter() - t0
    waits, actions, labels, shots = [], 1, 0, {}
    asked, repeats = [], []
    for _ in range(n_questions):
        q = win.current_question
        if q is None:
            break
        here = (q.item_id, q.query.start, q.query.stop, tuple(q.region), win.infos[q.item_id].kind)
        if asked and here[:4] == asked[-1][:4]:
            repeats.append((len(asked), q.sentence))
        asked.append(here)
        kind = win.infos[q.item_id].kind
        if args.shots and kind not in shots:
            pump(lambda: False, 1.0)
            path = pathlib.Path(args.shots) / f"question_{kind}.png"
            win.grab().save(str(path))
            shots[kind] = str(path)
        # the person reads while the next question is prepared (a reading time, not counted as a wait)
        if not args.no_reading:
            pump(lambda: not win.runner.is_busy("prefetch"), 60)
        n0 = len(engine.labels())
        t = time.perf_counter()
        key({"A": Qt.Key.Key_A, "B": Qt.Key.Key_B}[args.answers[len(asked) % len(args.answers) - 1]])
        actions += 1
        ok = pump(lambda: win.current_question is not None and win.current_question is not q
                  and win.current_item == win.current_question.item_id or any(ran_out(m) for m in said), 60)
        labels += len(engine.labels()) - n0
        if any(ran_out(m) for m in said):
            print(f"the demo has no question left after {len(asked)} answers: every part is labelled or certain")
            break
        waits.append(time.perf_counter() - t)
        if not ok:
            print(f"no next question after answer {len(asked)}: the status bar says "
                  f"{said[-3:]!r}; queue {len(win.active_panel.queries())} rows; query {win.current_query}")
            break
    win.close()
    w = np.array(waits) * 1000
    print(f"questions answered: {actions - 1}; first question after {first:.2f} s")
    print(f"wait from key to the next question: median {np.median(w):.0f} ms, p95 {np.percentile(w, 95):.0f} ms, "
          f"max {w.max():.0f} ms")
    print(f"actions (keys) per label: {actions / max(labels, 1):.2f} ({actions} keys, {labels} labels)")
    kinds = [a[4] for a in asked]
    by_kind = {k: w[[i for i, kk in enumerate(kinds[:len(w)]) if kk == k]] for k in sorted(set(kinds))}
    print("questions by kind of the answered one (wait median / max): " + ", ".join(
        f"{k} {v.size} ({np.median(v):.0f} / {v.max():.0f} ms)" for k, v in by_kind.items() if v.size))
    slowest = sorted(range(len(waits)), key=lambda i: -waits[i])[:5]
    print("slowest waits: " + ", ".join(f"answer {i + 1} ({kinds[i]}) {w[i]:.0f} ms" for i in slowest))
    print(f"questions that repeat the one just answered: {len(repeats)}"
          + "".join(f"\n  after answer {i}: {sentence}" for i, sentence in repeats))
    for kind, path in shots.items():
        print(f"screenshot ({kind}): {path}")


if __name__ == "__main__":
    main()
