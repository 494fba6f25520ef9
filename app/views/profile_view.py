"""aCGH profile view: logratio against genomic position, predicted segment means and changes, labels."""

from __future__ import annotations

import numpy as np
import pyqtgraph as pg

from .. import theme
from .base_view import ItemView
from .interaction import let_clicks_through


def segment_means(values: np.ndarray, changes: np.ndarray) -> np.ndarray:
    """Mean of ``values`` (shape (T,)) over each segment ending at ``changes`` (shape (K,), last == T)."""
    values = np.asarray(values, dtype=np.float64).reshape(-1)
    starts = np.concatenate(([0], np.asarray(changes[:-1], dtype=np.int64)))
    sums = np.add.reduceat(values, starts)
    return sums / np.diff(np.concatenate((starts, [values.size])))


def vertical_segments(xs: np.ndarray, y0: float, y1: float):
    """Arrays for a ``connect='pairs'`` curve drawing one vertical line per x."""
    xs = np.asarray(xs, dtype=float)
    return np.repeat(xs, 2), np.tile([y0, y1], xs.size)


class ProfileView(ItemView):
    """Logratio points of one chromosome, with the model's segmentation drawn over them.

    Use :meth:`set_sequence` with a ``marginalia.types.Sequence`` of kind ``"cgh"`` (positions in bp).
    """

    def __init__(self, parent=None):
        super().__init__(parent, y_label="log\u2082 ratio", x_label="position", x_units="bp")
        self.main.getAxis("bottom").enableAutoSIPrefix(True)
        self.main.getAxis("left").enableAutoSIPrefix(False)
        self.points = pg.PlotDataItem([], [], pen=None, symbol="o", symbolSize=3, symbolPen=None,
                                      symbolBrush=pg.mkBrush(theme.DATA))
        self.points.setDownsampling(auto=True, method="peak")
        self.points.setClipToView(True)
        let_clicks_through(self.points.scatter)
        self.main.addItem(self.points)
        self.means = pg.PlotCurveItem([], [], pen=theme.prediction_pen(False, width=3), connect="pairs")
        self.means.setZValue(30)
        self.changes = pg.PlotCurveItem([], [], pen=theme.prediction_pen(False, width=1.5, dashed=True),
                                        connect="pairs")
        self.changes.setZValue(29)
        self.runner = pg.PlotCurveItem([], [], pen=pg.mkPen(theme.RUNNER_UP, width=1), connect="pairs")
        self.runner.setOpacity(0.45)
        self.main.addItem(self.means, ignoreBounds=True)
        self.main.addItem(self.changes, ignoreBounds=True)
        self.main.addItem(self.runner, ignoreBounds=True)
        self._values = None
        self._ylim = (-1.0, 1.0)

    def set_sequence(self, sequence, item_id: str):
        """Show ``sequence`` (values (T, 1) logratio, positions (T,) in bp) of item ``item_id``."""
        self.item_id = item_id
        self._values = np.asarray(sequence.values[:, 0], dtype=np.float64)
        self.set_positions(sequence.positions)
        lo, hi = np.percentile(self._values, [0.5, 99.5]) if self._values.size > 10 else \
            (self._values.min(), self._values.max())
        pad = 0.15 * max(hi - lo, 0.2)
        self._ylim = (float(lo - pad), float(hi + pad))
        # frame first, then hand the points over once: each range change re-sends them to the scatter,
        # which on a 97,000-probe chromosome cost 0.5 s per change on the GUI thread
        self.points.setData([], [])
        self.main.setYRange(*self._ylim, padding=0)
        self.main.setTitle(sequence.name or "", color=theme.FOREGROUND, size="10pt")
        self.set_prediction(None)
        self.show_all()
        self.points.setData(self.mapping.positions, self._values)

    def _draw_prediction(self, prediction, stale):
        structure = getattr(prediction, "structure", None)
        if prediction is None or self._values is None or not hasattr(structure, "changes") \
                or structure.n_samples != self._values.size:
            for curve in (self.means, self.changes, self.runner):
                curve.setData([], [])
            return
        ch = structure.changes
        m = segment_means(self._values, ch)
        starts = np.concatenate(([0], ch[:-1]))
        xs = np.empty(2 * m.size)
        xs[0::2] = self.mapping.start_x(starts)
        xs[1::2] = self.mapping.change_x(ch)
        self.means.setData(xs, np.repeat(m, 2))
        self.means.setPen(theme.prediction_pen(stale, width=3))
        bx, by = vertical_segments(self.mapping.change_x(structure.breakpoints), *self._ylim)
        self.changes.setData(bx, by)
        self.changes.setPen(theme.prediction_pen(stale, width=1.5, dashed=True))
        ru = prediction.runner_up
        if ru is not None and hasattr(ru, "changes") and ru.n_samples == self._values.size:
            rm = segment_means(self._values, ru.changes)
            rstarts = np.concatenate(([0], ru.changes[:-1]))
            rx = np.empty(2 * rm.size)
            rx[0::2] = self.mapping.start_x(rstarts)
            rx[1::2] = self.mapping.change_x(ru.changes)
            self.runner.setData(rx, np.repeat(rm, 2))
        else:
            self.runner.setData([], [])
