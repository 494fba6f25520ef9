"""The question on the view: the disputed range highlighted, the best and the runner-up as two marked overlays."""

from __future__ import annotations

import pyqtgraph as pg
from PySide6 import QtCore, QtGui

from .. import theme


class QuestionOverlay:
    """Draws one :class:`marginalia.active.questions.Question` on a plot: region, two sets of marks, a legend.

    The model's marks are solid, the runner-up's dashed, so they stay apart in grey too.
    """

    def __init__(self, plot: pg.PlotItem):
        self.plot = plot
        self.region = pg.LinearRegionItem(movable=False, brush=theme.tint(28),
                                          pen=pg.mkPen(theme.tint(90).color(), width=1))
        self.region.setZValue(-5)
        self.pens = {"model": pg.mkPen(theme.QUESTION_MODEL, width=3),
                     "runner-up": pg.mkPen(theme.QUESTION_RUNNER, width=3, style=QtCore.Qt.PenStyle.DashLine)}
        # legend samples only: the marks themselves are infinite lines (they keep their dashes at any zoom)
        self.legend = pg.LegendItem(offset=(-10, 10), labelTextColor="#e6e6e6",
                                    brush=pg.mkBrush(30, 33, 40, 220), pen=pg.mkPen(120, 120, 120))
        self.legend.setParentItem(plot.getViewBox())
        self.legend.addItem(pg.PlotDataItem([], [], pen=self.pens["model"]), "A \u00b7 model")
        self.legend.addItem(pg.PlotDataItem([], [], pen=self.pens["runner-up"]), "B \u00b7 runner-up")
        self.legend.setVisible(False)
        self.lines: list = []
        self.shown = False

    def show(self, question, mapping):
        """Draw ``question`` (sample/frame indices) with ``mapping`` (an AxisMapping) to x."""
        self.clear()
        if question is None or mapping is None:
            return
        x0, x1 = mapping.region_x(*question.region)
        self.region.setRegion((x0, x1))
        self.plot.addItem(self.region, ignoreBounds=True)
        # the runner-up's dashes over the model's solid line: a change both share shows both colours
        for which, marks, z in (("model", question.best_marks, 20), ("runner-up", question.runner_marks, 21)):
            for x in (mapping.start_x(list(marks)) if marks else []):
                line = pg.InfiniteLine(pos=float(x), angle=90, movable=False, pen=self.pens[which])
                line.setZValue(z)
                self.plot.addItem(line, ignoreBounds=True)
                self.lines.append((which, line))
        self.legend.setVisible(True)
        self.shown = True

    def clear(self):
        if self.region.scene() is not None:
            self.plot.removeItem(self.region)
        for _, line in self.lines:
            self.plot.removeItem(line)
        self.lines = []
        self.legend.setVisible(False)
        self.shown = False

    def legend_pens(self) -> dict:
        """``{"model": QPen, "runner-up": QPen}`` as drawn (for tests and screenshots)."""
        return {k: QtGui.QPen(p) for k, p in self.pens.items()}
