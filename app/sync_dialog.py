"""View ▸ Compare with another recording: two recordings of the same music, the path that aligns them, and the
anchors the person places between them."""

from __future__ import annotations

import numpy as np
import pyqtgraph as pg
from PySide6 import QtCore, QtGui, QtWidgets

from marginalia.types import AnchorLabel, BoundaryLabel, EventSpanLabel, RegionLabel

from . import theme
from .panels.model_panel import short_id
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
    the target, the path's (solid) and its runner-up's (dashed), in the question's colours; its two
    buttons anchor the answer. The two time axes are linked: zooming one zooms both.

    Sync anchors (``anchors``, :class:`~marginalia.types.SyncAnchorLabel` seen from the reference) are
    thick lines on both recordings joined across the strip: a click on the reference then a click on
    the target adds one, a drag of either end moves it, a click selects it and Del deletes it, Ctrl+Z
    undoes. The dialog only asks (signals); the window stores the edit and hands back the path
    recomputed through the anchors (:meth:`set_result`).
    """

    carryRequested = QtCore.Signal()
    #: reference s, target s
    anchorAdded = QtCore.Signal(float, float)
    #: anchor id, reference s, target s
    anchorMoved = QtCore.Signal(str, float, float)
    anchorsDeleted = QtCore.Signal(list)
    undoRequested = QtCore.Signal()
    redoRequested = QtCore.Signal()
    #: learn the project's sync metric (True) or stop learning it (False)
    learnRequested = QtCore.Signal(bool)

    def __init__(self, reference, target, ref_spec, tgt_spec, result, ref_labels, ref_positions, parent=None, *,
                 question=None, anchors=(), model_id=None):
        super().__init__(parent)
        self.setWindowTitle(f"{reference.name} \u2194 {target.name}")
        self.reference, self.target = reference, target
        self.ref_end, self.tgt_end = float(ref_spec[1][-1]), float(tgt_spec[1][-1])
        self.ref_labels, self.ref_positions = ref_labels, ref_positions
        self.pending_reference_s = None
        self.selected_anchor = None
        self.busy = False
        self._overlays = []
        self._anchor_lines = {}
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
        self.grid_s = grid_step(self.ref_end)
        self.plots.scene().sigMouseClicked.connect(self._on_click)
        self.ref_plot.setXRange(0, max(self.ref_end, self.tgt_end), padding=0.01)
        self.hint = QtWidgets.QLabel()
        self.hint.setWordWrap(True)
        layout.addWidget(self.hint)
        self.summary = QtWidgets.QLabel()
        self.summary.setWordWrap(True)
        self.summary.setTextInteractionFlags(QtCore.Qt.TextInteractionFlag.TextSelectableByMouse)
        layout.addWidget(self.summary)
        buttons = QtWidgets.QDialogButtonBox(QtWidgets.QDialogButtonBox.StandardButton.Close)
        role = QtWidgets.QDialogButtonBox.ButtonRole.ActionRole
        self.solid_button = buttons.addButton("Anchor the solid line", role)
        self.solid_button.setToolTip("The path is right where it is least sure: anchor the reference's marked moment "
                                     "to the solid line's time on the target")
        self.dashed_button = buttons.addButton("Anchor the dashed line", role)
        self.dashed_button.setToolTip("The runner-up is right: anchor the reference's marked moment to the dashed "
                                      "line's time on the target (the path is recomputed through it)")
        self.learn_button = buttons.addButton("Learn the metric", role)
        self.learn_button.setToolTip("Learn the cost that compares the recordings from the project's sync anchors and "
                                     "its recordings aligned to the same score (in the background; click again to "
                                     "stop); later comparisons and carries use it")
        self.carry_button = buttons.addButton(f"Carry the labels to {target.name}", role)
        self.carry_button.setToolTip("Add the coloured lines' labels to the target as suggestions to review (one "
                                     "step; Ctrl+Z takes it back)")
        for button in (self.solid_button, self.dashed_button, self.learn_button, self.carry_button):
            button.setAutoDefault(False)            # Enter never stores an anchor or starts work by itself
        self.solid_button.clicked.connect(lambda: self._anchor_question(False))
        self.dashed_button.clicked.connect(lambda: self._anchor_question(True))
        self.learn_button.clicked.connect(lambda: self.learnRequested.emit(self.learn_button.text() !=
                                                                           "Stop learning"))
        self.carry_button.clicked.connect(self.carryRequested.emit)
        buttons.rejected.connect(self.reject)
        layout.addWidget(buttons)
        for keys, slot in (((QtGui.QKeySequence.StandardKey.Delete, "Backspace"), self.delete_selected),
                           ((QtGui.QKeySequence.StandardKey.Undo,), self.undoRequested.emit),
                           ((QtGui.QKeySequence.StandardKey.Redo, "Ctrl+Shift+Z"), self.redoRequested.emit)):
            for key in keys:
                shortcut = QtGui.QShortcut(QtGui.QKeySequence(key), self)
                shortcut.activated.connect(slot)
        self.set_result(result, question, anchors, model_id)
        self.resize(1100, 760)

    # ------------------------------------------------------------------ drawing
    def set_result(self, result, question=None, anchors=(), model_id=None):
        """Draw a path (a :class:`~marginalia.sync.SyncResult`), its question and the pair's anchors."""
        self.result, self.question, self.model_id = result, question, model_id
        self.anchors = list(anchors)
        self.busy = False
        if self.selected_anchor not in {a.id for a in self.anchors}:
            self.selected_anchor = None
        for plot, item in self._overlays:
            plot.removeItem(item)
        self._overlays, self._anchor_lines = [], {}
        grid = np.arange(0.0, self.ref_end, self.grid_s)
        self.grid_pairs = np.column_stack([grid, result.map_times(grid)]) if grid.size else np.zeros((0, 2))
        self.label_pairs = [(t, float(result.map_times([t])[0]), caption)
                            for t, caption in label_times(self.ref_labels, self.ref_positions)]
        self._connect(self.grid_pairs, pg.mkPen(theme.FOREGROUND, width=1, style=QtCore.Qt.PenStyle.DotLine))
        self._connect(np.array([(a, b) for a, b, _ in self.label_pairs]).reshape(-1, 2),
                      pg.mkPen(theme.ANCHOR, width=2))
        if question is not None:
            self._line(self.ref_plot, question.reference_s, pg.mkPen(theme.QUESTION_MODEL, width=2))
            self._line(self.tgt_plot, question.best_target_s, pg.mkPen(theme.QUESTION_MODEL, width=2))
            runner = pg.mkPen(theme.QUESTION_RUNNER, width=2, style=QtCore.Qt.PenStyle.DashLine)
            self._line(self.tgt_plot, question.alternative_target_s, runner)
            self._connect(np.array([[question.reference_s, question.best_target_s]]),
                          pg.mkPen(theme.QUESTION_MODEL, width=2))
            self._connect(np.array([[question.reference_s, question.alternative_target_s]]), runner)
        for anchor in self.anchors:
            self._draw_anchor(anchor)
        if self.pending_reference_s is not None:
            self._draw_pending()
        self.solid_button.setEnabled(question is not None)
        self.dashed_button.setEnabled(question is not None)
        self.carry_button.setEnabled(bool(self.label_pairs))
        self.summary.setText(self._summary())
        self._say()

    def _line(self, plot, t, pen, movable=False):
        line = pg.InfiniteLine(float(t), angle=90, pen=pen, movable=movable)
        plot.addItem(line)
        self._overlays.append((plot, line))
        return line

    def _anchor_pen(self, anchor_id):
        selected = anchor_id == self.selected_anchor
        return pg.mkPen(theme.SELECTION if selected else theme.PREDICTION, width=4 if selected else 3)

    def _draw_anchor(self, anchor):
        pen = self._anchor_pen(anchor.id)
        ref = self._line(self.ref_plot, anchor.reference_s, pen, movable=True)
        tgt = self._line(self.tgt_plot, anchor.target_s, pen, movable=True)
        link = self._connect(np.array([[anchor.reference_s, anchor.target_s]]), pen)
        for line, bounds in ((ref, (0.0, self.ref_end)), (tgt, (0.0, self.tgt_end))):
            line.setBounds(bounds)
            line.setHoverPen(pg.mkPen(theme.SELECTION, width=5))
            line.setToolTip("sync anchor: drag to move it, click to select it (Del deletes it)")
            line.sigClicked.connect(lambda _line, ev, i=anchor.id: (ev.accept(), self.select_anchor(i)))
            line.sigPositionChangeFinished.connect(lambda _line, a=anchor: self._dragged(a))
        self._anchor_lines[anchor.id] = (ref, tgt, link)

    def _draw_pending(self):
        self._line(self.ref_plot, self.pending_reference_s,
                   pg.mkPen(theme.PREDICTION, width=2, style=QtCore.Qt.PenStyle.DashLine))

    def _connect(self, pairs, pen):
        """One line per ``(reference s, target s)`` pair, from the top of the link strip to its bottom."""
        if len(pairs) == 0:
            return None
        x = np.empty(3 * len(pairs))
        y = np.empty(3 * len(pairs))
        x[0::3], x[1::3], x[2::3] = pairs[:, 0], pairs[:, 1], np.nan
        y[0::3], y[1::3], y[2::3] = 1.0, 0.0, np.nan
        curve = pg.PlotCurveItem(x, y, pen=pen, connect="finite")
        self.link.addItem(curve)
        self._overlays.append((self.link, curve))
        return curve

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

    def _summary(self) -> str:
        reference, target = self.reference, self.target
        ratio = np.diff(self.grid_pairs[:, 1]) / self.grid_s if len(self.grid_pairs) > 1 else np.array([1.0])
        ratio = ratio[ratio > 0] if np.any(ratio > 0) else np.array([1.0])
        text = (f"{reference.name} ({self.ref_end:.1f} s) against {target.name} ({self.tgt_end:.1f} s): the target "
                f"takes {np.percentile(ratio, 10):.2f}\u2013{np.percentile(ratio, 90):.2f} s per second of the "
                f"reference (10th\u201390th percentile). ")
        n = len(self.anchors)
        text += (f"The path passes through {n} sync anchor{'s' if n != 1 else ''} (thick lines)" if n else
                 "No sync anchor yet")
        # the metric's id, as Model > Model versions and its status lines name it: a restore shows here
        text += (f", with the project's learned metric {short_id(self.model_id)}. " if self.model_id else
                 ", with the Euclidean cost. ")
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

    def _say(self, text=None):
        """The line above the summary: what a click does now (or ``text``)."""
        if text is None:
            if self.busy:
                text = "Recomputing the path through the anchors\u2026"
            elif self.pending_reference_s is not None:
                text = (f"Now click the same moment on {self.target.name} (Esc: forget "
                        f"{self.pending_reference_s:.2f} s of {self.reference.name}).")
            else:
                text = (f"Add a sync anchor: click a moment on {self.reference.name}, then the same moment on "
                        f"{self.target.name}. Drag an anchor to move it; click it, then Del to delete it; Ctrl+Z "
                        "undoes.")
        self.hint.setText(text)

    def set_busy(self, text=None):
        """Say that the path is being recomputed (the drawn one stays until the new one comes)."""
        self.busy = True
        self._say(text)

    def say(self, text: str):
        """Show a message (a refused anchor, learning progress) above the summary."""
        self._say(text)

    def set_learning(self, learning: bool):
        """The learn button stops the learning while it runs."""
        self.learn_button.setText("Stop learning" if learning else "Learn the metric")

    # --------------------------------------------------------------- anchors
    def add_anchor_at(self, plot, t: float):
        """A click at ``t`` seconds of ``plot`` (the reference's or the target's spectrogram)."""
        if plot is self.ref_plot:
            self.pending_reference_s = float(np.clip(t, 0.0, self.ref_end))
            self.set_result(self.result, self.question, self.anchors, self.model_id)
        elif plot is self.tgt_plot:
            if self.pending_reference_s is None:
                self._say(f"Click the moment on {self.reference.name} first, then this one.")
                return
            ref_s, self.pending_reference_s = self.pending_reference_s, None
            self.anchorAdded.emit(ref_s, float(np.clip(t, 0.0, self.tgt_end)))

    def _on_click(self, event):
        if event.button() != QtCore.Qt.MouseButton.LeftButton or event.isAccepted():
            return
        pos = event.scenePos()
        for plot in (self.ref_plot, self.tgt_plot):
            if plot.vb.sceneBoundingRect().contains(pos):
                event.accept()
                self.add_anchor_at(plot, float(plot.vb.mapSceneToView(pos).x()))
                return

    def _anchor_question(self, runner_up: bool):
        q = self.question
        if q is not None:
            self.pending_reference_s = None
            self.anchorAdded.emit(float(q.reference_s), float(q.alternative_target_s if runner_up
                                                              else q.best_target_s))

    def select_anchor(self, anchor_id):
        """Select an anchor (drawn brighter; Del deletes it), or none."""
        self.selected_anchor = anchor_id
        for aid, lines in self._anchor_lines.items():
            for line in lines:
                if line is not None:
                    line.setPen(self._anchor_pen(aid))
        if anchor_id is not None:
            self._say("Del deletes the selected anchor; drag either end to move it.")

    def delete_selected(self):
        if self.selected_anchor is None:
            self._say("Click an anchor (a thick line) first: Del deletes the selected one.")
            return
        self.anchorsDeleted.emit([self.selected_anchor])

    def _dragged(self, anchor):
        ref, tgt, _ = self._anchor_lines[anchor.id]
        self.selected_anchor = anchor.id
        self.anchorMoved.emit(anchor.id, float(ref.value()), float(tgt.value()))

    def keyPressEvent(self, event):
        if event.key() == QtCore.Qt.Key.Key_Escape and self.pending_reference_s is not None:
            self.pending_reference_s = None
            self.set_result(self.result, self.question, self.anchors, self.model_id)
            return
        super().keyPressEvent(event)
