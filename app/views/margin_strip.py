"""The thin strip under a view: where the model hesitates and which parts are queried."""

from __future__ import annotations

import math

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import Qt

from .. import theme
from ..panels.margins import format_margin


class MarginStrip(pg.PlotItem):
    """Uncertainty strip x-linked to a main plot.

    Draws the active-learning queries of the item as bars (height = uncertainty,
    normalised) and shades the spans where the runner-up structure differs from
    the best one. The best-vs-2nd margin is written at the left.
    """

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.setMenuEnabled(False)
        self.setMouseEnabled(x=True, y=False)
        self.hideButtons()
        self.getAxis("left").setWidth(56)
        self.getAxis("left").setTicks([[(0, ""), (1, "")]])
        self.getAxis("left").setLabel("margin", color=theme.MUTED)
        self.hideAxis("bottom")
        self.setYRange(0, 1.05, padding=0)
        self.setMaximumHeight(56)
        self.setMinimumHeight(40)
        self._query_bars = None
        self._disagree = pg.PlotDataItem([], [], pen=None, fillLevel=0.0,
                                         brush=pg.mkBrush(198, 120, 221, 90), connect="finite")
        self.addItem(self._disagree)
        # an opaque caption above the bars and shading, so a queried part at the left edge cannot hide it
        background = pg.mkColor(theme.BACKGROUND)
        background.setAlpha(220)
        self._text = pg.TextItem("", color=theme.MUTED, anchor=(0, 0), fill=pg.mkBrush(background))
        self._text.setParentItem(self.vb)
        self._text.setZValue(10)
        self._text.setPos(4, 0)

    def set_margin(self, margin, *, model_id: str | None = None, stale: bool = False,
                   current_model: str | None = None):
        """Show the item's best-vs-2nd margin (``None`` or ``inf`` for none) and which model made it.

        A stale prediction (made by an older model than ``current_model``) says so, with both versions.
        """
        if margin is None:
            self._text.setText("")
            return
        text = "margin: \u221e (no runner-up)" if math.isinf(margin) else f"margin {format_margin(margin)}"
        if model_id:
            text += f" \u00b7 model {model_id[:8]}"
        if stale:
            text += f" \u00b7 STALE: the current model is {current_model[:8] if current_model else 'none'}"
            self._text.setColor(theme.STALE)
        else:
            self._text.setColor(theme.MUTED)
        self._text.setText(text)

    def text(self) -> str:
        """The strip's caption (margin, model version, staleness)."""
        return self._text.toPlainText()

    def set_disagreement(self, spans):
        """Shade ``spans`` (list of (x0, x1)) where the runner-up differs from the best structure."""
        if not spans:
            self._disagree.setData([], [])
            return
        xs, ys = [], []
        for x0, x1 in spans:
            xs += [x0, x0, x1, x1, np.nan]
            ys += [0.0, 0.5, 0.5, 0.0, np.nan]
        self._disagree.setData(np.array(xs), np.array(ys))

    def set_queries(self, queries):
        """Draw queried parts; ``queries`` is a list of (x0, x1, uncertainty, rank)."""
        if self._query_bars is not None:
            self.removeItem(self._query_bars)
            self._query_bars = None
        if not queries:
            return
        u = np.array([max(q[2], 0.0) for q in queries], dtype=float)
        top = float(u.max()) if u.size and u.max() > 0 else 1.0
        x0 = np.array([q[0] for q in queries], dtype=float)
        x1 = np.array([q[1] for q in queries], dtype=float)
        h = 0.15 + 0.85 * (u / top)
        self._query_bars = pg.BarGraphItem(x0=x0, width=np.maximum(x1 - x0, 1e-9), y0=np.zeros_like(h), height=h,
                                           brush=pg.mkBrush(224, 108, 117, 60),
                                           pen=pg.mkPen(theme.QUERY, width=1, style=Qt.PenStyle.SolidLine))
        self._query_bars.setToolTip("queried parts: taller = more uncertain")
        self.addItem(self._query_bars)
