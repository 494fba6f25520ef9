"""View ▸ Compare with another recording: two recordings of the same music and the path that aligns them."""

from __future__ import annotations

import numpy as np
import pyqtgraph as pg
from PySide6 import QtCore, QtWidgets

from marginalia.types import AnchorLabel, BoundaryLabel, EventSpanLabel, RegionLabel

from . import theme
from .views.spectrogram_view import COLOR_MAPS, FrequencyAxis

__all__ = ["SyncDialog", "label_times", "grid_step", "GRID_STEPS_S", "GRID_LINES"]

#: the path is drawn as a connecting line every one of these many seconds of the reference (the shortest step
#: that keeps at most GRID_LINES lines)
GRID_STEPS_S = (1.0, 2.0, 5.0, 10.0, 20.0, 30.0, 60.0)
GRID_LINES = 60


def grid_step(duration_s: float) -> float:
    """Seconds between two of the path's connecting lines for a reference of ``duration_s`` seconds."""
    return next((s for s in GRID_STEPS_S if duration_s / s <= GRID_LINES), GRID_STEPS_S[-1])


def label_times(labels, positions) -> list:
    """The moments a recording's labels state something: ``[(time_s, caption)]``, in time order.

    Parameters
    ----------
    labels : iterable of Label
    positions : ndarray, shape (T,)
        Times (s) of the recording's frames (region and boundary labels count frames).
    """
    pos = np.asarray(positions, dtype=float)
    last = pos.size - 1
    out = []
    for lab in labels:
        if isinstance(lab, RegionLabel):
            out += [(float(pos[min(lab.start, last)]), f"{lab.kind.value} from"),
                    (float(pos[min(lab.stop - 1, last)]), f"{lab.kind.value} to")]
        elif isinstance(lab, BoundaryLabel):
            out.append((float(0.5 * (pos[min(lab.index - 1, last)] + pos[min(lab.index, last)])), "boundary"))
        elif isinstance(lab, AnchorLabel):
            out.append((float(lab.time_s), f"e{lab.event}"))
        elif isinstance(lab, EventSpanLabel):
            out += [(float(lab.t0_s), f"e{lab.first}\u2013e{lab.last} from"), (float(lab.t1_s), "to")]
    return sorted(out)


class SyncDialog(QtWidgets.QDialog):
    """The reference recording above, the target below, joined by lines where the path puts the same music.

    Dotted lines every :func:`grid_step` seconds of the reference show the path (slanted where the
    tempi differ); coloured ones start at each label of the reference and end where carrying
    it would put it. With ``question`` (a :class:`~marginalia.sync.question.SyncQuestion`), the moment
    where the path is least sure is marked on the reference and joined to both candidate times on
    the target, the path's (solid) and its runner-up's (dashed), in the question's colours. The two
    time axes are linked: zooming one zooms both.
    """

    carryRequested = QtCore.Signal()

    def __init__(self, reference, target, ref_spec, tgt_spec, result, ref_labels, ref_positions, parent=None, *,
                 question=None):
        super().__init__(parent)
        self.setWindowTitle(f"{reference.name} \u2194 {target.name}")
        self.result = result
        layout = QtWidgets.QVBoxLayout(self)
        self.plots = pg.GraphicsLayoutWidget()
        layout.addWidget(self.plots, 1)
        self.ref_plot = self._spectrogram(0, reference.name, ref_spec)
        self.link = self.plots.addPlot(row=1, col=0)
        self.link.hideAxis("left")
        self.link.hideAxis("bottom")
        self.link.setMouseEnabled(x=False, y=False)
        self.link.setYRange(0, 1, padding=0)
        self.plots.ci.layout.setRowStretchFactor(0, 3)
        self.plots.ci.layout.setRowStretchFactor(1, 1)
        self.plots.ci.layout.setRowStretchFactor(2, 3)
        self.tgt_plot = self._spectrogram(2, target.name, tgt_spec)
        self.tgt_plot.setLabel("bottom", "time (s)")
        self.link.setXLink(self.ref_plot)
        self.tgt_plot.setXLink(self.ref_plot)
        end = max(float(ref_spec[1][-1]), float(tgt_spec[1][-1]))
        self.grid_s = grid_step(float(ref_spec[1][-1]))
        grid = np.arange(0.0, float(ref_spec[1][-1]), self.grid_s)
        self.grid_pairs = np.column_stack([grid, result.map_times(grid)]) if grid.size else np.zeros((0, 2))
        self.label_pairs = [(t, float(result.map_times([t])[0]), caption)
                            for t, caption in label_times(ref_labels, ref_positions)]
        self._connect(self.grid_pairs, pg.mkPen(theme.FOREGROUND, width=1, style=QtCore.Qt.PenStyle.DotLine))
        self._connect(np.array([(a, b) for a, b, _ in self.label_pairs]).reshape(-1, 2),
                      pg.mkPen(theme.ANCHOR, width=2))
        self.question = question
        if question is not None:
            for plot, t in ((self.ref_plot, question.reference_s), (self.tgt_plot, question.best_target_s)):
                plot.addItem(pg.InfiniteLine(t, angle=90, pen=pg.mkPen(theme.QUESTION_MODEL, width=2)))
            self.tgt_plot.addItem(pg.InfiniteLine(question.alternative_target_s, angle=90,
                                                  pen=pg.mkPen(theme.QUESTION_RUNNER, width=2,
                                                               style=QtCore.Qt.PenStyle.DashLine)))
            self._connect(np.array([[question.reference_s, question.best_target_s]]),
                          pg.mkPen(theme.QUESTION_MODEL, width=2))
            self._connect(np.array([[question.reference_s, question.alternative_target_s]]),
                          pg.mkPen(theme.QUESTION_RUNNER, width=2, style=QtCore.Qt.PenStyle.DashLine))
        self.ref_plot.setXRange(0, end, padding=0.01)
        self.summary = QtWidgets.QLabel(self._summary(reference, target, ref_spec, tgt_spec))
        self.summary.setWordWrap(True)
        self.summary.setTextInteractionFlags(QtCore.Qt.TextInteractionFlag.TextSelectableByMouse)
        layout.addWidget(self.summary)
        buttons = QtWidgets.QDialogButtonBox(QtWidgets.QDialogButtonBox.StandardButton.Close)
        self.carry_button = buttons.addButton(f"Carry the labels to {target.name}",
                                              QtWidgets.QDialogButtonBox.ButtonRole.ActionRole)
        self.carry_button.setToolTip("Add the coloured lines' labels to the target as suggestions to review (one "
                                     "step; Ctrl+Z takes it back)")
        self.carry_button.setEnabled(bool(self.label_pairs))
        self.carry_button.clicked.connect(self.carryRequested.emit)
        buttons.rejected.connect(self.reject)
        layout.addWidget(buttons)
        self.resize(1100, 720)

    def _spectrogram(self, row, title, spec):
        image, times, freqs = spec
        image = np.asarray(image, dtype=np.float32)
        axis = FrequencyAxis(orientation="left")
        axis.set_freqs(freqs)
        plot = self.plots.addPlot(row=row, col=0, title=title, axisItems={"left": axis})
        plot.setLabel("left", "frequency (Hz)")
        item = pg.ImageItem(image, autoLevels=False)
        lo, hi = np.percentile(image, [5, 99.7]) if image.size else (0.0, 1.0)
        item.setLevels((float(lo), float(hi)))
        item.setColorMap(COLOR_MAPS[0])
        dt = float(np.median(np.diff(times))) if len(times) > 1 else 1.0
        item.setRect(float(times[0] - dt / 2), 0.0, dt * image.shape[1], float(image.shape[0]))
        plot.addItem(item)
        plot.setYRange(0, image.shape[0], padding=0)
        plot.setMouseEnabled(y=False)
        return plot

    def _connect(self, pairs, pen):
        """One line per ``(reference s, target s)`` pair, from the top of the link strip to its bottom."""
        if len(pairs) == 0:
            return
        x = np.empty(3 * len(pairs))
        y = np.empty(3 * len(pairs))
        x[0::3], x[1::3], x[2::3] = pairs[:, 0], pairs[:, 1], np.nan
        y[0::3], y[1::3], y[2::3] = 1.0, 0.0, np.nan
        self.link.addItem(pg.PlotCurveItem(x, y, pen=pen, connect="finite"))

    def _summary(self, reference, target, ref_spec, tgt_spec) -> str:
        ratio = np.diff(self.grid_pairs[:, 1]) / self.grid_s if len(self.grid_pairs) > 1 else np.array([1.0])
        ratio = ratio[ratio > 0] if np.any(ratio > 0) else np.array([1.0])
        text = (f"{reference.name} ({float(ref_spec[1][-1]):.1f} s) against {target.name} "
                f"({float(tgt_spec[1][-1]):.1f} s): the target takes {np.percentile(ratio, 10):.2f}\u2013"
                f"{np.percentile(ratio, 90):.2f} s per second of the reference (10th\u201390th percentile). ")
        if self.label_pairs:
            shift = np.array([b - a for a, b, _ in self.label_pairs])
            text += (f"Its {len(self.label_pairs)} labelled moments would land {shift.min():+.2f} to "
                     f"{shift.max():+.2f} s from their times here (coloured lines).")
        else:
            text += "This recording has no labels to carry yet."
        q = self.question
        if q is not None:
            text += (f" The path is least sure at {q.reference_s:.2f} s of {reference.name}: {q.best_target_s:.2f} s "
                     f"of {target.name} (solid), or {q.alternative_target_s:.2f} s (dashed; margin "
                     f"{q.margin:.3g}).")
        return text
