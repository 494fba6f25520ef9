"""Whole-profile view: every chromosome of one aCGH profile side by side (an overview; click one to zoom)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

import numpy as np
import pyqtgraph as pg
from PySide6 import QtCore
from PySide6.QtCore import Qt

from marginalia.types import RegionLabel

from .. import theme
from .profile_view import segment_means

__all__ = ["Chromosome", "GenomeView", "genome_offsets", "overview_indices"]

#: probes drawn for a whole profile: a few per pixel of a wide screen; more only costs seconds of drawing
OVERVIEW_POINTS = 20_000


@dataclass(frozen=True)
class Chromosome:
    """One chromosome of the profile: its item, name, probes and what the model and the user said."""

    item_id: str
    name: str
    positions: np.ndarray          # (T,) bp
    values: np.ndarray             # (T,) logratio
    prediction: Optional[object] = None   # marginalia.types.Prediction of a Segmentation, or None
    labels: tuple = ()


def genome_offsets(starts, stops, *, gap_fraction: float = 0.01) -> np.ndarray:
    """x offset of each chromosome so that they sit side by side in the given order.

    Parameters
    ----------
    starts, stops : array_like, shape (C,)
        First and last probe position of each chromosome (bp).
    gap_fraction : float
        Gap between neighbours as a fraction of the total span.

    Returns
    -------
    offsets : ndarray, shape (C,)
        Chromosome ``c`` is drawn at ``positions + offsets[c]``; it spans
        ``[starts[c] + offsets[c], stops[c] + offsets[c]]`` and never overlaps the next one.
    """
    starts = np.asarray(starts, dtype=np.float64).reshape(-1)
    stops = np.asarray(stops, dtype=np.float64).reshape(-1)
    if starts.shape != stops.shape or np.any(stops < starts):
        raise ValueError(f"genome_offsets: need starts <= stops of equal length, got {starts.shape} and {stops.shape}")
    spans = stops - starts
    gap = gap_fraction * max(float(spans.sum()), 1.0)
    left = np.concatenate(([0.0], np.cumsum(spans + gap)[:-1]))
    return left - starts


def overview_indices(values, max_points: int) -> np.ndarray:
    """Probes to draw when ``values`` has more than ``max_points``.

    Most of the budget is an even subsample, which keeps the spread of the noise as it
    is; the rest keeps the lowest and highest probe of each of a few hundred runs of
    consecutive probes, so outliers and narrow amplifications or deletions stay visible.
    (Extremes alone would draw pure noise as two bands with nothing between.)

    Parameters
    ----------
    values : array_like, shape (T,)
    max_points : int

    Returns
    -------
    idx : ndarray of int64, shape (<= max_points,), increasing
    """
    v = np.asarray(values, dtype=np.float64).reshape(-1)
    T = v.size
    if T <= max_points:
        return np.arange(T, dtype=np.int64)
    n_even = max(int(0.92 * max_points), 1)
    even = np.linspace(0, T - 1, n_even).astype(np.int64)
    n_bins = max((max_points - n_even) // 2, 1)
    edges = np.linspace(0, T, n_bins + 1).astype(np.int64)
    starts, stops = edges[:-1], edges[1:]
    keep = stops > starts
    starts, stops = starts[keep], stops[keep]
    lows = np.array([a + int(np.argmin(v[a:b])) for a, b in zip(starts, stops)], dtype=np.int64)
    highs = np.array([a + int(np.argmax(v[a:b])) for a, b in zip(starts, stops)], dtype=np.int64)
    return np.unique(np.concatenate([even, lows, highs]))


class GenomeView(pg.GraphicsLayoutWidget):
    """All chromosomes of a profile: probes, predicted segment means, label regions and chromosome names.

    Signals
    -------
    chromosomeActivated(item_id)
        The user clicked inside a chromosome: show it zoomed.
    """

    chromosomeActivated = QtCore.Signal(str)

    def __init__(self, parent=None):
        super().__init__(parent)
        self.ci.setContentsMargins(4, 4, 8, 4)
        self.main = self.addPlot(row=0, col=0)
        self.vb = self.main.getViewBox()
        self.vb.setMouseEnabled(x=True, y=False)
        self.main.setMenuEnabled(False)
        self.main.hideButtons()
        self.main.showGrid(x=False, y=True, alpha=theme.GRID_ALPHA)
        theme.light_axes(self.main)
        self.main.getAxis("left").setWidth(56)
        self.main.setLabel("left", "log\u2082 ratio")
        self.main.setLabel("bottom", "chromosome")
        for name in ("left", "bottom"):   # no "(x1e+09)" under chromosome names, no "(x0.001)" on log ratios
            self.main.getAxis(name).enableAutoSIPrefix(False)
        self.chromosomes: list = []
        self.offsets = np.zeros(0)
        self._items: list = []
        self.main.scene().sigMouseClicked.connect(self._on_click)

    def set_profile(self, title: str, chromosomes: list, current: Optional[str] = None):
        """Show ``chromosomes`` (list of :class:`Chromosome`, in display order) of profile ``title``.

        The chromosome of item ``current`` (the one the user came from) is shaded.
        """
        for it in self._items:
            self.main.removeItem(it)
        self._items = []
        self.chromosomes = list(chromosomes)
        self.main.setTitle(title, color=theme.FOREGROUND, size="10pt")
        if not self.chromosomes:
            self.offsets = np.zeros(0)
            return
        starts = [c.positions[0] for c in self.chromosomes]
        stops = [c.positions[-1] for c in self.chromosomes]
        self.offsets = genome_offsets(starts, stops)
        all_values = np.concatenate([c.values for c in self.chromosomes])
        lo, hi = np.percentile(all_values, [0.5, 99.5]) if all_values.size > 10 else (-1.0, 1.0)
        pad = 0.15 * max(hi - lo, 0.2)
        y0, y1 = float(lo - pad), float(hi + pad)
        ticks = []
        n_total = sum(c.values.size for c in self.chromosomes)
        for k, (chrom, off) in enumerate(zip(self.chromosomes, self.offsets)):
            x = chrom.positions + off
            colour = theme.DATA if k % 2 == 0 else theme.MUTED
            # a high-density profile has ~500,000 probes: drawing them all took 15 s on the GUI thread
            budget = max(500, int(OVERVIEW_POINTS * chrom.values.size / max(n_total, 1)))
            shown = overview_indices(chrom.values, budget)
            pts = pg.PlotDataItem(x[shown], chrom.values[shown], pen=None, symbol="o", symbolSize=2, symbolPen=None,
                                  symbolBrush=pg.mkBrush(colour))
            self._add(pts)
            # only once inside the plot: clipping asks the item's view box for its range
            pts.setDownsampling(auto=True, method="peak")
            pts.setClipToView(True)
            for lab in chrom.labels:
                if isinstance(lab, RegionLabel):
                    a = x[lab.start]
                    b = x[min(lab.stop, x.size) - 1]
                    band = pg.LinearRegionItem((a, b), movable=False, brush=theme.region_brush(lab.kind))
                    for line in band.lines:
                        line.setPen(pg.mkPen(None))
                    band.setZValue(-5)
                    self._add(band)
            self._draw_prediction(chrom, x)
            if chrom.item_id == current:
                here = pg.LinearRegionItem((x[0], x[-1]), movable=False, brush=theme.tint(14))
                for line in here.lines:
                    line.setPen(pg.mkPen(None))
                here.setZValue(-20)
                here.setToolTip(f"chromosome {chrom.name}: the item you came from")
                self._add(here)
            ticks.append((float(0.5 * (x[0] + x[-1])), chrom.name))
            if k:   # a dotted line half-way through the gap to the previous chromosome
                previous_end = self.chromosomes[k - 1].positions[-1] + self.offsets[k - 1]
                sep = pg.InfiniteLine(pos=float(0.5 * (x[0] + previous_end)), angle=90,
                                      pen=pg.mkPen(theme.MUTED, width=1, style=Qt.PenStyle.DotLine))
                self._add(sep)
        self.main.getAxis("bottom").setTicks([ticks, []])
        self.main.setYRange(y0, y1, padding=0)
        first = self.chromosomes[0].positions[0] + self.offsets[0]
        last = self.chromosomes[-1].positions[-1] + self.offsets[-1]
        self.main.setXRange(first, last, padding=0.01)

    def _add(self, item):
        self.main.addItem(item)
        self._items.append(item)

    def _draw_prediction(self, chrom: Chromosome, x: np.ndarray):
        seg = getattr(chrom.prediction, "structure", None)
        if seg is None or not hasattr(seg, "changes") or seg.n_samples != x.size:
            return
        means = segment_means(chrom.values, seg.changes)
        starts = np.concatenate(([0], seg.changes[:-1]))
        xs = np.empty(2 * means.size)
        xs[0::2] = x[starts]
        xs[1::2] = x[np.asarray(seg.changes) - 1]
        curve = pg.PlotCurveItem(xs, np.repeat(means, 2), pen=theme.prediction_pen(False, width=2.5),
                                 connect="pairs")
        curve.setZValue(30)
        self._add(curve)

    def chromosome_at(self, x: float) -> Optional[str]:
        """Item id of the chromosome drawn at ``x`` (the nearest one between two), or None."""
        if not self.chromosomes:
            return None
        lefts = np.array([c.positions[0] for c in self.chromosomes]) + self.offsets
        rights = np.array([c.positions[-1] for c in self.chromosomes]) + self.offsets
        dist = np.maximum(lefts - x, 0) + np.maximum(x - rights, 0)
        return self.chromosomes[int(np.argmin(dist))].item_id

    def _on_click(self, ev):
        if ev.button() != Qt.MouseButton.LeftButton or not self.chromosomes:
            return
        pos = ev.scenePos()
        if not self.vb.sceneBoundingRect().contains(pos):
            return
        item_id = self.chromosome_at(self.vb.mapSceneToView(pos).x())
        if item_id is not None:
            ev.accept()
            self.chromosomeActivated.emit(item_id)
