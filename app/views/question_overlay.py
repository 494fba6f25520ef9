"""The question on the view: the disputed range highlighted, the best and the runner-up as two marked overlays."""

from __future__ import annotations

import pyqtgraph as pg
from PySide6 import QtCore, QtGui

#: colour-blind-safe pair (Okabe & Ito): sky blue for the model's answer, orange for the runner-up's
MODEL_COLOUR = "#56B4E9"
RUNNER_COLOUR = "#E69F00"


class QuestionOverlay:
    """Draws one :class:`marginalia.active.questions.Question` on a plot: region, two sets of marks, a legend.

    The model's marks are solid, the runner-up's dashed, so they stay apart in grey too.
    """

    def __init__(self, plot: pg.PlotItem):
        self.plot = plot
        self.region = pg.LinearRegionItem(movable=False, brush=pg.mkBrush(255, 255, 255, 28),
                                          pen=pg.mkPen(255, 255, 255, 90, width=1))
        self.region.setZValue(-5)
        self.best = pg.PlotCurveItem([], [], pen=pg.mkPen(MODEL_COLOUR, width=3), connect="pairs")
        self.runner = pg.PlotCurveItem([], [], pen=pg.mkPen(RUNNER_COLOUR, width=3,
                                                            style=QtCore.Qt.PenStyle.DashLine), connect="pairs")
        for item in (self.best, self.runner):
            item.setZValue(20)
        self.legend = pg.LegendItem(offset=(-10, 10), labelTextColor="#e6e6e6",
                                    brush=pg.mkBrush(30, 33, 40, 220), pen=pg.mkPen(120, 120, 120))
        self.legend.setParentItem(plot.getViewBox())
        self.legend.addItem(self.best, "A \u00b7 model")
        self.legend.addItem(self.runner, "B \u00b7 runner-up")
        self.legend.setVisible(False)
        self.shown = False

    def show(self, question, mapping):
        """Draw ``question`` (sample/frame indices) with ``mapping`` (an AxisMapping) to x."""
        self.clear()
        if question is None or mapping is None:
            return
        x0, x1 = mapping.region_x(*question.region)
        self.region.setRegion((x0, x1))
        self.plot.addItem(self.region, ignoreBounds=True)
        y0, y1 = self.plot.getViewBox().viewRange()[1]
        for item, marks in ((self.best, question.best_marks), (self.runner, question.runner_marks)):
            xs = mapping.start_x(list(marks)) if marks else []
            item.setData([x for x in xs for _ in (0, 1)], [y for _ in xs for y in (-1e9, 1e9)])
            self.plot.addItem(item, ignoreBounds=True)
        self.legend.setVisible(True)
        self.shown = True

    def clear(self):
        for item in (self.region, self.best, self.runner):
            if item.scene() is not None:
                self.plot.removeItem(item)
        self.legend.setVisible(False)
        self.shown = False

    def legend_pens(self) -> dict:
        """``{"model": QPen, "runner-up": QPen}`` as drawn (for tests and screenshots)."""
        return {"model": QtGui.QPen(self.best.opts["pen"]), "runner-up": QtGui.QPen(self.runner.opts["pen"])}
