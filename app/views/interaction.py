"""Mouse handling shared by the views: drawing regions, placing boundaries, editable label items."""

from __future__ import annotations

import pyqtgraph as pg
from PySide6 import QtCore
from PySide6.QtCore import Qt

from marginalia.types import BoundaryLabel, EventSpanLabel, RegionKind, RegionLabel

from .. import theme


class LabelViewBox(pg.ViewBox):
    """A ViewBox where a left drag draws a region and a click places a boundary.

    Panning stays on the middle button, Shift+left drag and the wheel zooms, as in
    most sequence editors (Audacity, Sonic Visualiser).

    Signals
    -------
    sigRegionDrawn(x0, x1)
        A left drag finished between the two x positions (view coordinates).
    sigClicked(x, boundary)
        A left click at x; ``boundary`` is True when it should place a boundary
        (Ctrl held or boundary mode on).
    """

    sigRegionDrawn = QtCore.Signal(float, float)
    sigClicked = QtCore.Signal(float, int)

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.setMouseEnabled(x=True, y=False)
        self.boundary_mode = False
        self.drawing_enabled = True
        self._rubber = None

    def mouseDragEvent(self, ev, axis=None):
        mods = ev.modifiers()
        if (axis is not None or ev.button() != Qt.MouseButton.LeftButton or not self.drawing_enabled
                or mods & (Qt.KeyboardModifier.ShiftModifier | Qt.KeyboardModifier.AltModifier)):
            if ev.button() == Qt.MouseButton.LeftButton and axis is None:
                # Shift/Alt + left drag pans, like the middle button
                ev.accept()
                if ev.isStart() or not ev.isFinish():
                    d = self.mapSceneToView(ev.lastScenePos()) - self.mapSceneToView(ev.scenePos())
                    self.translateBy(x=d.x(), y=0)
                return
            super().mouseDragEvent(ev, axis)
            return
        ev.accept()
        x0 = self.mapSceneToView(ev.buttonDownScenePos()).x()
        x1 = self.mapSceneToView(ev.scenePos()).x()
        if ev.isStart() and self._rubber is None:
            self._rubber = pg.LinearRegionItem((x0, x1), movable=False,
                                               brush=theme.tint(35),
                                               pen=pg.mkPen(theme.SELECTION, width=1))
            self._rubber.setZValue(50)
            self.addItem(self._rubber, ignoreBounds=True)
        if self._rubber is not None:
            self._rubber.setRegion((x0, x1))
        if ev.isFinish():
            if self._rubber is not None:
                self.removeItem(self._rubber)
                self._rubber = None
            self.sigRegionDrawn.emit(min(x0, x1), max(x0, x1))

    def mouseClickEvent(self, ev):
        if ev.button() == Qt.MouseButton.LeftButton:
            ev.accept()
            x = self.mapSceneToView(ev.scenePos()).x()
            boundary = self.boundary_mode or bool(ev.modifiers() & Qt.KeyboardModifier.ControlModifier)
            self.sigClicked.emit(x, int(boundary))
            return
        super().mouseClickEvent(ev)


class ClickSelects:
    """Mixin for a label's graphics item: a left click selects the label (``sigSelected(label id)``).

    The item class provides ``label`` and a ``sigSelected`` signal; the mixin goes first in the bases.
    """

    def mouseClickEvent(self, ev):
        if ev.button() == Qt.MouseButton.LeftButton:
            if _places_a_boundary(self, ev):
                ev.ignore()     # a boundary click inside a label goes on to the view box, which places it
                return
            ev.accept()
            self.sigSelected.emit(self.label.id)
            return
        super().mouseClickEvent(ev)


def _places_a_boundary(item, ev) -> bool:
    """Whether a left click on ``item`` means "a change here" (Ctrl held, or the view in boundary mode)."""
    if ev.modifiers() & Qt.KeyboardModifier.ControlModifier:
        return True
    vb = item.getViewBox() if hasattr(item, "getViewBox") else None
    return bool(getattr(vb, "boundary_mode", False))


def let_clicks_through(item) -> None:
    """Make ``item`` (e.g. the scatter of data points) ignore mouse clicks so the view box gets them.

    pyqtgraph's scene offers a click to every item under the cursor until one accepts it,
    without looking at ``acceptedMouseButtons``; a ScatterPlotItem accepts any click that
    lands on a point, which on a dense profile is almost every click on the data.
    """
    item.mouseClickEvent = lambda ev: ev.ignore()


class _RegionEditFinished(ClickSelects):
    """Mixin for a label drawn as a time region: a finished move/resize emits ``sigEdited(id, x0, x1)``."""

    def _finished(self, *_):
        x0, x1 = self.getRegion()
        self.sigEdited.emit(self.label.id, float(x0), float(x1))


#: a region label is drawn at least this many screen pixels wide (a 0.3 Mb expert region is a fraction of a pixel
#: on a whole chromosome), centred on where it is; its edges stay at its true ends
MIN_LABEL_PX = 4


class LabelRegionItem(_RegionEditFinished, pg.LinearRegionItem):
    """An editable region label: drag the body to move, the edges to resize, click to select.

    At any zoom its fill is at least :data:`MIN_LABEL_PX` pixels wide, so a short label stays
    visible (and can be clicked) on a whole chromosome.
    """

    sigSelected = QtCore.Signal(str)
    sigEdited = QtCore.Signal(str, float, float)

    def __init__(self, label: RegionLabel, x0: float, x1: float):
        super().__init__((x0, x1), movable=True, swapMode="sort")
        self._drawn_rect = None
        self._pixel = 0.0          # view units per screen pixel, set when the view's transform changes
        self.label = label
        self.selected = False
        self.setZValue(10)
        self._apply_style()
        self.sigRegionChangeFinished.connect(self._finished)
        self.setToolTip((theme.SUGGESTED_TIP if label.suggested else "")
                        + f"{theme.REGION_NAMES[label.kind]}\nsamples [{label.start}, {label.stop})")

    def viewTransformChanged(self):
        # the width of a screen pixel is read once per zoom here, not at each of Qt's many boundingRect calls
        super().viewTransformChanged()
        self._pixel = abs(float(self.pixelWidth() or 0.0))

    def boundingRect(self):
        br = super().boundingRect()
        pixel = self._pixel
        if pixel and br.width() < MIN_LABEL_PX * pixel:
            half = 0.5 * MIN_LABEL_PX * pixel
            br = QtCore.QRectF(br.center().x() - half, br.top(), 2 * half, br.height())
        if self._drawn_rect != br:
            self._drawn_rect = br
            self.prepareGeometryChange()
        return br

    def _apply_style(self):
        suggested = self.label.suggested
        self.setBrush(theme.region_brush(self.label.kind, selected=self.selected, suggested=suggested))
        self.setHoverBrush(theme.region_brush(self.label.kind, selected=True, suggested=suggested))
        for line in self.lines:
            line.setPen(theme.region_pen(self.label.kind, selected=self.selected, suggested=suggested))
        self.update()

    def set_selected(self, selected: bool):
        self.selected = bool(selected)
        self._apply_style()


class BoundaryLabelLine(ClickSelects, pg.InfiniteLine):
    """An editable exact-boundary label: drag to move, click to select."""

    sigSelected = QtCore.Signal(str)
    sigEdited = QtCore.Signal(str, float)

    def __init__(self, label: BoundaryLabel, x: float):
        super().__init__(pos=x, angle=90, movable=True,
                         pen=theme.label_pen(theme.BOUNDARY_LABEL, suggested=label.suggested),
                         hoverPen=pg.mkPen(theme.SELECTION, width=3))
        self.label = label
        self.selected = False
        self.setZValue(20)
        self.setToolTip((theme.SUGGESTED_TIP if label.suggested else "") + f"exact boundary at change index {label.index}")
        self.sigPositionChangeFinished.connect(lambda *_: self.sigEdited.emit(self.label.id, float(self.value())))

    def set_selected(self, selected: bool):
        self.selected = bool(selected)
        self.setPen(theme.label_pen(theme.BOUNDARY_LABEL, selected=self.selected, suggested=self.label.suggested))


class EventSpanItem(_RegionEditFinished, pg.LinearRegionItem):
    """An editable "events first..last start in [t0, t1]" label: move or resize its time span, click to select."""

    sigSelected = QtCore.Signal(str)
    sigEdited = QtCore.Signal(str, float, float)

    def __init__(self, label: EventSpanLabel):
        super().__init__((label.t0_s, label.t1_s), movable=True, swapMode="sort")
        self.label = label
        self.selected = False
        self.setZValue(11)
        self._apply_style()
        self.sigRegionChangeFinished.connect(self._finished)
        self.setToolTip((theme.SUGGESTED_TIP if label.suggested else "")
                        + f"events {label.first}\u2013{label.last} start inside [{label.t0_s:.2f}, {label.t1_s:.2f}] s")

    def _apply_style(self):
        r, g, b = pg.mkColor(theme.ANCHOR).getRgb()[:3]
        fill = theme.SUGGESTED_FILL if self.label.suggested else 1.0
        self.setBrush(pg.mkBrush(r, g, b, int((90 if self.selected else 40) * fill)))
        self.setHoverBrush(pg.mkBrush(r, g, b, 90))
        style = theme.SUGGESTED_PEN_STYLE if self.label.suggested else Qt.PenStyle.DashLine
        for line in self.lines:
            line.setPen(pg.mkPen(theme.SELECTION, width=2) if self.selected
                        else pg.mkPen(r, g, b, 220, width=1, style=style))
        self.update()

    def set_selected(self, selected: bool):
        self.selected = bool(selected)
        self._apply_style()


def kind_for_key(key: str):
    """Region kind for a key press ('0', '1', '2', 's'), or None."""
    return {"0": RegionKind.ZERO, "1": RegionKind.ONE, "2": RegionKind.AT_LEAST_ONE,
            "s": RegionKind.SAME}.get(key.lower())
