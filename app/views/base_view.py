"""Common machinery of the item views: label items, selection, kind keys, prediction style, margin strip."""

from __future__ import annotations

import dataclasses

import numpy as np
import pyqtgraph as pg
from PySide6 import QtCore

from marginalia.types import BoundaryLabel, EventSpanLabel, RegionKind, RegionLabel

from .. import theme
from .axis_mapping import AxisMapping
from .interaction import BoundaryLabelLine, EventSpanItem, LabelRegionItem, LabelViewBox
from .margin_strip import MarginStrip
from .question_overlay import QuestionOverlay


def segmentation_disagreement(best, runner_up, n_samples: int):
    """Sample spans ``[start, stop)`` where two segmentations place changes differently.

    Returns a list of (start, stop) around every change present in only one of them.
    """
    if best is None or runner_up is None or not hasattr(best, "breakpoints") or not hasattr(runner_up, "breakpoints"):
        return []
    a, b = set(best.breakpoints.tolist()), set(runner_up.breakpoints.tolist())
    diff = sorted(a ^ b)
    pad = max(1, n_samples // 400)
    return [(max(0, c - pad), min(n_samples, c + pad)) for c in diff]


#: a boundary placed or dropped this close (screen pixels) to a change the model draws lands on that change
SNAP_PX = 8


class ItemView(pg.GraphicsLayoutWidget):
    """Base of every item view: a main plot with editable labels and a margin strip under it.

    Subclasses draw the data (:meth:`_draw_data`) and the prediction (:meth:`_draw_prediction`).

    Signals
    -------
    labelCreateRequested(label), labelChangeRequested(label), labelDeleteRequested(label_id)
        The user asked for an edit; the window forwards it to the engine, which answers with
        ``LabelsChanged`` and the view redraws from :meth:`set_labels`.
    selectionChanged(label_id or None)
    """

    labelCreateRequested = QtCore.Signal(object)
    labelChangeRequested = QtCore.Signal(object)
    labelDeleteRequested = QtCore.Signal(str)
    selectionChanged = QtCore.Signal(object)

    #: minimum number of samples of a drawn region (shorter drags count as clicks)
    min_region_samples = 2

    def __init__(self, parent=None, *, y_label: str = "", x_label: str = "", x_units: str = ""):
        super().__init__(parent)
        self.ci.setContentsMargins(4, 4, 8, 4)
        self.ci.setSpacing(2)
        self.item_id = None
        self.mapping = None
        self.current_kind = RegionKind.ZERO
        self.selected_id = None
        self._labels = {}
        self._label_items = {}
        self._prediction = None
        self.vb = LabelViewBox()
        self.main = self.addPlot(row=0, col=0, viewBox=self.vb)
        self.main.setMenuEnabled(False)
        self.main.hideButtons()
        self.main.showGrid(x=True, y=True, alpha=theme.GRID_ALPHA)
        theme.light_axes(self.main)
        self.main.getAxis("left").setWidth(56)
        if y_label:
            self.main.setLabel("left", y_label)
        if x_label:
            self.main.setLabel("bottom", x_label, units=x_units)
        self.strip = MarginStrip()
        self.addItem(self.strip, row=1, col=0)
        self.strip.setXLink(self.main)
        self.ci.layout.setRowStretchFactor(0, 6)
        self.ci.layout.setRowStretchFactor(1, 1)
        self.vb.sigRegionDrawn.connect(self._on_region_drawn)
        self.vb.sigClicked.connect(self._on_clicked)

    # ------------------------------------------------------------------ data
    def set_positions(self, positions: np.ndarray):
        self.clear_labels()
        self.mapping = AxisMapping(positions)
        lo, hi = self.mapping.region_x(0, self.mapping.n_samples)
        self.vb.setLimits(xMin=lo - (hi - lo) * 0.02, xMax=hi + (hi - lo) * 0.02)

    def frame(self, start: int, stop: int, *, pad: float = 0.15):
        """Zoom so samples ``[start, stop)`` fill the view with some context."""
        if self.mapping is None:
            return
        x0, x1 = self.mapping.region_x(int(start), int(max(stop, start + 1)))
        w = max(x1 - x0, self.mapping.step)
        self.main.setXRange(x0 - pad * w, x1 + pad * w, padding=0)

    def show_all(self):
        if self.mapping is not None:
            self.frame(0, self.mapping.n_samples, pad=0.0)

    def x_range(self):
        return tuple(self.vb.viewRange()[0])

    # ---------------------------------------------------------------- labels
    def set_labels(self, labels):
        """Show the item's labels (a list of marginalia.types labels); only changed ones are redrawn."""
        new = {lab.id: lab for lab in labels}
        if self.mapping is None:
            self._labels = new
            return
        for label_id in list(self._label_items):
            if new.get(label_id) != self._labels.get(label_id):
                self.main.removeItem(self._label_items.pop(label_id))
        self._labels = new
        for lab in labels:
            if lab.id in self._label_items:
                continue
            item = self._make_label_item(lab)
            if item is None:
                continue
            self._label_items[lab.id] = item
            self.main.addItem(item, ignoreBounds=True)
            if lab.id == self.selected_id:
                item.set_selected(True)
        if self.selected_id not in self._labels:
            self._set_selected(None)

    def clear_labels(self):
        """Forget every label item (when another item is shown)."""
        for item in self._label_items.values():
            self.main.removeItem(item)
        self._label_items.clear()
        self._labels = {}

    def _make_label_item(self, lab):
        if isinstance(lab, RegionLabel):
            x0, x1 = self.mapping.region_x(lab.start, lab.stop)
            item = LabelRegionItem(lab, x0, x1)
            item.sigSelected.connect(self._set_selected)
            item.sigEdited.connect(self._on_region_edited)
            return item
        if isinstance(lab, BoundaryLabel):
            item = BoundaryLabelLine(lab, float(self.mapping.change_x(lab.index)))
            item.sigSelected.connect(self._set_selected)
            item.sigEdited.connect(self._on_boundary_edited)
            return item
        if isinstance(lab, EventSpanLabel) and self.x_is_time:
            item = EventSpanItem(lab)
            item.sigSelected.connect(self._set_selected)
            item.sigEdited.connect(self._on_span_edited)
            return item
        return None

    #: whether the x axis is time in seconds (labels given in seconds are drawn at their time)
    x_is_time = False

    def labels(self):
        return list(self._labels.values())

    def selected_label(self):
        return self._labels.get(self.selected_id)

    def _set_selected(self, label_id):
        if label_id == self.selected_id:
            return
        old = self._label_items.get(self.selected_id)
        if old is not None:
            old.set_selected(False)
        self.selected_id = label_id
        new = self._label_items.get(label_id)
        if new is not None:
            new.set_selected(True)
        self.selectionChanged.emit(label_id)

    def select_label(self, label_id):
        self._set_selected(label_id)

    def set_region_kind(self, kind: RegionKind):
        """Set the kind of the selected region label, and of the next regions drawn."""
        kind = RegionKind(kind)
        self.current_kind = kind
        lab = self.selected_label()
        if isinstance(lab, RegionLabel) and lab.kind != kind:
            if kind in (RegionKind.ONE, RegionKind.AT_LEAST_ONE) and lab.stop - lab.start < 2:
                return
            self.labelChangeRequested.emit(dataclasses.replace(lab, kind=kind))

    def delete_selected(self) -> bool:
        lab = self.selected_label()
        if lab is None:
            return False
        self.labelDeleteRequested.emit(lab.id)
        return True

    def _on_region_drawn(self, x0: float, x1: float):
        if self.mapping is None or self.item_id is None:
            return
        start, stop = self.mapping.region_indices(x0, x1)
        if stop - start < self.min_region_samples:
            return
        self.labelCreateRequested.emit(RegionLabel(item_id=self.item_id, start=start, stop=stop,
                                                   kind=self.current_kind))

    def _on_clicked(self, x: float, boundary: bool):
        if self.mapping is None or self.item_id is None:
            return
        if boundary and self.mapping.n_samples >= 2:
            c = self.snapped_change(x)
            self.labelCreateRequested.emit(BoundaryLabel(item_id=self.item_id, index=c))
        else:
            self._set_selected(None)

    def _on_region_edited(self, label_id: str, x0: float, x1: float):
        lab = self._labels.get(label_id)
        if lab is None:
            return
        start, stop = self.mapping.region_indices(x0, x1)
        if (start, stop) == (lab.start, lab.stop):
            return
        if lab.kind in (RegionKind.ONE, RegionKind.AT_LEAST_ONE) and stop - start < 2:
            stop = min(self.mapping.n_samples, start + 2)
        self.labelChangeRequested.emit(dataclasses.replace(lab, start=start, stop=stop))

    def _on_span_edited(self, label_id: str, x0: float, x1: float):
        lab = self._labels.get(label_id)
        if lab is None:
            return
        t0, t1 = max(0.0, min(x0, x1)), max(0.0, max(x0, x1))
        if abs(t0 - lab.t0_s) < 1e-6 and abs(t1 - lab.t1_s) < 1e-6:
            return
        self.labelChangeRequested.emit(dataclasses.replace(lab, t0_s=t0, t1_s=t1))

    def _on_boundary_edited(self, label_id: str, x: float):
        lab = self._labels.get(label_id)
        if lab is None:
            return
        c = self.snapped_change(x)
        if c != lab.index:
            self.labelChangeRequested.emit(dataclasses.replace(lab, index=c))
        else:
            self._label_items[label_id].setValue(float(self.mapping.change_x(c)))

    def snapped_change(self, x: float) -> int:
        """The change index a boundary placed at ``x`` gets: a change of the drawn prediction or its runner-up
        when one is drawn within :data:`SNAP_PX` pixels of ``x``, else the change nearest ``x``.

        The model's own candidates are where a person most often means to put a boundary, and a
        click rarely lands on the exact probe gap of a dense profile (one pixel holds dozens).
        """
        nearest = self.mapping.nearest_change(x)
        pred = self._prediction
        if pred is None:
            return nearest
        T = self.mapping.n_samples
        changes = [np.asarray(getattr(s, "changes", ()), dtype=np.int64) for s in (pred.structure, pred.runner_up)
                   if s is not None]
        cands = np.unique(np.concatenate(changes)) if changes else np.array([], np.int64)
        cands = cands[(cands >= 1) & (cands <= T - 1)]
        if cands.size == 0:
            return nearest
        xs = self.mapping.change_x(cands)
        j = int(np.argmin(np.abs(xs - x)))
        pixel = abs(float(self.vb.viewPixelSize()[0])) or np.inf
        return int(cands[j]) if abs(float(xs[j]) - x) <= SNAP_PX * pixel else nearest

    # ------------------------------------------------------------ prediction
    def set_prediction(self, prediction, *, stale: bool = False, current_model: str | None = None):
        """Draw ``prediction`` (a marginalia.types.Prediction or None); stale ones are grey and dashed."""
        self._prediction = prediction
        self._draw_prediction(prediction, stale)
        if prediction is None:
            self.strip.set_margin(None)
            self.strip.set_disagreement([])
            return
        self.strip.set_margin(prediction.margin, model_id=prediction.model_id, stale=stale,
                              current_model=current_model)
        self.strip.set_disagreement(self._disagreement_x(prediction))
        tip = f"model {prediction.model_id[:8]}"
        if stale:
            tip += f" (stale: current model is {current_model[:8] if current_model else 'none'})"
        self.main.setToolTip(tip)

    def _disagreement_x(self, prediction):
        if self.mapping is None:
            return []
        spans = segmentation_disagreement(prediction.structure, prediction.runner_up, self.mapping.n_samples)
        return [self.mapping.region_x(a, b) for a, b in spans]

    def _draw_prediction(self, prediction, stale):  # pragma: no cover - abstract
        raise NotImplementedError

    def set_question(self, question):
        """Highlight ``question``'s disputed range and draw its best and runner-up marks (None: clear)."""
        if getattr(self, "question_overlay", None) is None:
            self.question_overlay = QuestionOverlay(self.main)
        self.question_overlay.show(question, self.mapping)

    def set_queries(self, queries):
        """Show this item's queries (marginalia.types.Query, index space of the item) in the strip."""
        if self.mapping is None:
            return
        rows = []
        for q in queries:
            x0, x1 = self.mapping.region_x(q.start, max(q.stop, q.start + 1))
            rows.append((x0, x1, q.uncertainty, q.rank))
        self.strip.set_queries(rows)
