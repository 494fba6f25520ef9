"""Child of the GUI kill test: the real MainWindow (offscreen) edits a project, reporting each returned edit.

Usage: ``QT_QPA_PLATFORM=offscreen python -m tests.reliability.gui_kill_child PROJECT SEED TAG SETTINGS_INI``.
Once the window shows the project it writes ``O``; before edit i ``B i``; once the window's method returned
``R i ok`` or ``R i refused`` (the window showed the engine's refusal), flushed, forever. Edits go through the
window's own methods (``create_label``, ``delete_label``, ``undo``, ``redo``, ``retrain``), and Qt events are
processed between them, so the live learner's background updates run while the edits are made.
"""

from __future__ import annotations

import os
import random
import sys
import time

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")


def _pump(app, seconds):
    end = time.monotonic() + seconds
    while True:
        app.processEvents()
        if time.monotonic() >= end:
            return
        time.sleep(0.002)


def _snapshot(win):
    return sorted(repr(lab) for lab in win.engine.labels()), win.engine.can_undo, win.engine.can_redo


def main(path, seed, tag, settings_path, out=None):
    from PySide6 import QtCore, QtWidgets

    from marginalia.app.main_window import MainWindow
    from tests.reliability.engine_kill_child import next_call

    out = sys.stdout if out is None else out
    app = QtWidgets.QApplication.instance() or QtWidgets.QApplication(sys.argv[:1])
    win = MainWindow(settings=QtCore.QSettings(settings_path, QtCore.QSettings.Format.IniFormat))
    win.resize(1000, 700)
    win.show()
    if not win.open_project(path):
        raise SystemExit(f"cannot open {path}")
    item = win.engine.items()[0].id
    _pump(app, 0.05)
    out.write("O\n")
    out.flush()
    rng = random.Random(seed)  # the parent replays this stream: nothing else may draw from it
    pauses = random.Random(seed + 1)
    i = 0
    while True:
        op = next_call(rng, {lab.id: lab for lab in win.engine.labels(item)}, item, tag, i)
        before = _snapshot(win)
        out.write(f"B {i}\n")
        out.flush()
        kind = op[0]
        if kind == "add":
            win.create_label(op[1])
            done = any(lab.id == op[1].id for lab in win.engine.labels(item))
        elif kind == "delete":
            win.delete_label(op[1])
            done = all(lab.id != op[1] for lab in win.engine.labels(item))
        elif kind == "undo":
            win.undo()
            done = True
        elif kind == "redo":
            win.redo()
            done = True
        elif kind == "retrain":
            win.retrain()  # runs in the background: the kill may land during training or saving the model
            done = True
        else:  # "update" / "export": let the live learner work
            done = True
        out.write(f"R {i} {'ok' if done else 'refused'}\n")
        out.flush()
        if not done:
            assert _snapshot(win) == before, "a refused edit changed the project"
        _pump(app, pauses.choice([0.0, 0.005, 0.03]))
        i += 1


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4])
