"""Helpers of the app tests: drive pyqtgraph views through real mouse events; an audio player without a sound card."""

from __future__ import annotations

import time

from PySide6 import QtCore, QtWidgets
from PySide6.QtCore import Qt

MOVE_INTERVAL_MS = 25


def view_point(widget, viewbox, x: float, y: float) -> QtCore.QPoint:
    """Widget (viewport) pixel of view coordinates (x, y) of ``viewbox`` inside ``widget``."""
    scene_pos = viewbox.mapViewToScene(QtCore.QPointF(x, y))
    return widget.mapFromScene(scene_pos)


def drag(qtbot, widget, viewbox, x0, x1, y, *, modifier=Qt.KeyboardModifier.NoModifier, steps: int = 6):
    """Press at (x0, y), move in ``steps`` and release at (x1, y) with the left button."""
    QtWidgets.QApplication.processEvents()   # let pending layout changes settle before mapping points
    vp = widget.viewport()
    p0, p1 = view_point(widget, viewbox, x0, y), view_point(widget, viewbox, x1, y)
    qtbot.mousePress(vp, Qt.MouseButton.LeftButton, modifier, p0)
    for k in range(1, steps + 1):
        qtbot.wait(MOVE_INTERVAL_MS)  # pyqtgraph drops mouse moves that come faster than its frame rate
        qtbot.mouseMove(vp, p0 + (p1 - p0) * k / steps)
    qtbot.wait(MOVE_INTERVAL_MS)
    qtbot.mouseRelease(vp, Qt.MouseButton.LeftButton, modifier, p1)


def click(qtbot, widget, viewbox, x, y, *, modifier=Qt.KeyboardModifier.NoModifier):
    QtWidgets.QApplication.processEvents()
    vp = widget.viewport()
    p = view_point(widget, viewbox, x, y)
    qtbot.mousePress(vp, Qt.MouseButton.LeftButton, modifier, p)
    qtbot.mouseRelease(vp, Qt.MouseButton.LeftButton, modifier, p)


def pump(seconds: float):
    """Process events for ``seconds`` (for redraws that need no condition)."""
    app = QtWidgets.QApplication.instance()
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        app.processEvents()
        time.sleep(0.005)


def finish_io(qtbot, win, start, timeout: int = 60_000):
    """Run ``start()`` (an import or export of the window, done in the background) and return its result.

    While it runs the GUI thread stays free: the test waits for the window's ``last_io_result``.
    """
    start()
    qtbot.waitUntil(lambda: win.last_io_result is not None, timeout=timeout)
    return win.last_io_result


class StandInPlayer(QtCore.QObject):
    """The AudioPlayer interface without a sound card: records what it was asked to play."""

    positionChanged = QtCore.Signal(object)

    def __init__(self, parent=None):
        super().__init__(parent)
        self.available, self.reason, self.played, self.playing = True, "", [], False

    def play(self, path, start_s=0.0, stop_s=None):
        self.played.append((path, start_s, stop_s))
        self.playing = True
        return True

    def stop(self):
        self.playing = False
        self.positionChanged.emit(None)

    def is_playing(self):
        return self.playing
