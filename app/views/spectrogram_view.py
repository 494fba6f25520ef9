"""Audio spectrogram view: time in seconds, frequency in Hz, colour scale control, boundaries, labels."""

from __future__ import annotations

import dataclasses

import numpy as np
import pyqtgraph as pg
from pyqtgraph.widgets.ColorMapMenu import ColorMapMenu
from PySide6 import QtCore, QtWidgets

from marginalia.types import AnchorLabel, EventSpanLabel

from .. import theme
from .base_view import ItemView
from .interaction import ClickSelects
from .profile_view import vertical_segments
from .score_view import ScoreView

#: what the view says over a recording without a score (its segmentation is then all there is to label)
NO_SCORE_NOTE = ("No score: this recording is segmented, not aligned. To align it to its score, attach one: "
                 "Edit \u25b8 Attach / replace score\u2026 (Ctrl+Alt+S), or right-click it in the Dataset panel.")


def _light_colormap(name: str, stops: int = 11) -> pg.ColorMap:
    """``name`` resampled to a few stops (a 256-stop map makes the colour bar slow to build)."""
    full = pg.colormap.get(name)
    pos = np.linspace(0.0, 1.0, stops)
    cmap = pg.ColorMap(pos, full.map(pos, mode="byte"))
    cmap.name = name
    return cmap


COLOR_MAPS = tuple(_light_colormap(n) for n in ("inferno", "magma", "viridis", "cividis"))


def time_pyramid(image: np.ndarray, *, min_columns: int = 2048) -> list:
    """Successively halved copies of ``image`` (F, T) along time, keeping each pair's maximum.

    The maximum (not the mean) keeps short loud events such as onsets visible when zoomed out.
    Level ``k`` has ``T // 2**k`` columns; halving stops below ``min_columns``.
    """
    levels = [np.ascontiguousarray(image)]
    while levels[-1].shape[1] // 2 >= min_columns:
        a = levels[-1]
        even = a.shape[1] // 2 * 2
        levels.append(np.ascontiguousarray(np.maximum(a[:, 0:even:2], a[:, 1:even:2])))
    return levels


class FrequencyAxis(pg.AxisItem):
    """Left axis of a spectrogram whose rows are not evenly spaced in Hz (mel, log, CQT)."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.freqs = np.array([0.0, 1.0])

    def set_freqs(self, freqs):
        self.freqs = np.asarray(freqs, dtype=float).reshape(-1)
        self.picture = None
        self.update()

    def _hz(self, row: float) -> float:
        rows = np.arange(self.freqs.size) + 0.5
        return float(np.interp(row, rows, self.freqs))

    def tickValues(self, minVal, maxVal, size):
        # nice frequencies, placed at the rows that show them
        nice = np.array([50, 100, 200, 500, 1000, 2000, 4000, 8000, 16000], dtype=float)
        rows = np.arange(self.freqs.size) + 0.5
        if self.freqs.size < 2 or np.any(np.diff(self.freqs) <= 0):
            return super().tickValues(minVal, maxVal, size)
        nice = nice[(nice >= self.freqs[0]) & (nice <= self.freqs[-1])]
        pos = np.interp(nice, self.freqs, rows)
        keep = (pos >= minVal) & (pos <= maxVal)
        # keep labels at least ~28 px apart (mel rows crowd the low frequencies)
        min_gap = 28.0 * (maxVal - minVal) / max(size, 1.0)
        chosen = []
        for p in pos[keep][::-1]:
            if all(abs(p - q) >= min_gap for q in chosen):
                chosen.append(p)
        return [(1.0, sorted(chosen))]

    def tickStrings(self, values, scale, spacing):
        out = []
        for v in values:
            hz = self._hz(v)
            out.append(f"{hz / 1000:g}k" if hz >= 1000 else f"{hz:.0f}")
        return out


class AnchorLine(ClickSelects, pg.InfiniteLine):
    """An anchor label ("event e starts here") on the spectrogram: drag to move it, click to select."""

    sigSelected = QtCore.Signal(str)
    sigMoved = QtCore.Signal(str, float)

    def __init__(self, label: AnchorLabel):
        super().__init__(pos=label.time_s, angle=90, movable=True,
                         pen=theme.label_pen(theme.ANCHOR, suggested=label.suggested),
                         hoverPen=pg.mkPen(theme.SELECTION, width=3), label=f"e{label.event}",
                         labelOpts={"position": 0.95, "color": theme.ANCHOR})
        self.label = label
        self.setToolTip((theme.SUGGESTED_TIP if label.suggested else "")
                        + f"anchor: event {label.event} at {label.time_s:.3f} s \u00b1 {label.tolerance_s:.3f} "
                        "(drag to move, Del to delete)")
        self.setZValue(25)
        self.sigPositionChangeFinished.connect(lambda *_: self.sigMoved.emit(self.label.id, float(self.value())))

    def set_selected(self, selected: bool):
        self.setPen(theme.label_pen(theme.ANCHOR, selected=selected, suggested=self.label.suggested))


class SpectrogramView(ItemView):
    """Spectrogram with predicted boundaries (segmentation) or onsets (alignment) and labels.

    Region and boundary labels live in the index space of the item's feature frames;
    anchor labels are drawn at their time in seconds.
    """

    x_is_time = True

    def __init__(self, parent=None):
        self._freq_axis = FrequencyAxis(orientation="left")
        # "time (s)" as plain text: with units, pyqtgraph re-typesets the label on every pan
        super().__init__(parent, y_label="frequency (Hz)", x_label="time (s)")
        self.main.setAxisItems({"left": self._freq_axis})
        theme.light_axes(self.main)
        self._freq_axis.setWidth(56)
        self.main.showGrid(x=True, y=False, alpha=theme.GRID_ALPHA)
        self.image = pg.ImageItem(autoDownsample=False)
        self.image.setZValue(-10)
        self.main.addItem(self.image)
        # A colour bar with draggable levels. (pyqtgraph's HistogramLUTItem builds a colour-map
        # menu that imports matplotlib: +3 s on a cold start, so we use the lighter ColorBarItem.)
        menu = ColorMapMenu(userList=list(COLOR_MAPS))
        self.lut = pg.ColorBarItem(values=(-80, 0), colorMap=COLOR_MAPS[0], width=14, interactive=True,
                                   colorMapMenu=menu, label="dB")
        self.lut.setImageItem(self.image)
        self.addItem(self.lut, row=0, col=1)
        self.bounds = pg.PlotCurveItem([], [], pen=theme.prediction_pen(False), connect="pairs")
        self.runner = pg.PlotCurveItem([], [], pen=pg.mkPen(theme.RUNNER_UP, width=1), connect="pairs")
        self.runner.setOpacity(0.5)
        self.bounds.setZValue(30)
        self.main.addItem(self.bounds, ignoreBounds=True)
        self.main.addItem(self.runner, ignoreBounds=True)
        self.cursor = pg.InfiniteLine(pos=0, angle=90, movable=False, pen=pg.mkPen("#ffffff", width=1))
        self.cursor.setZValue(60)
        self.cursor.setVisible(False)
        self.main.addItem(self.cursor, ignoreBounds=True)
        self._n_rows = 1
        self._anchor_items = []
        self.score_view = ScoreView()
        self.score_view.setXLink(self.main)
        self._score_shown = False
        self.no_score_note = QtWidgets.QLabel(NO_SCORE_NOTE, self)
        self.no_score_note.setObjectName("no_score_note")
        self.no_score_note.setWordWrap(True)
        self.no_score_note.setStyleSheet("background: rgba(20, 20, 28, 210); color: #f0f0f0; padding: 4px 8px;"
                                         " border-radius: 4px;")
        self.no_score_note.setVisible(False)
        self._pyramid = []
        self._level = 0
        self.use_pyramid = True
        self.vb.sigXRangeChanged.connect(self._choose_level)

    def show_score(self, score, frame_times):
        """Show ``score`` as a piano roll under the spectrogram (``None`` hides the roll)."""
        self.no_score_note.setVisible(score is None)
        self._place_note()
        if score is None:
            if self._score_shown:
                self.ci.removeItem(self.score_view)
                self._score_shown = False
            self.ci.layout.setRowStretchFactor(2, 0)
            return
        if not self._score_shown:
            self.addItem(self.score_view, row=2, col=0)
            self._score_shown = True
        self.ci.layout.setRowStretchFactor(0, 5)
        self.ci.layout.setRowStretchFactor(2, 4)
        self.score_view.set_score(score, self.item_id, frame_times)

    def _place_note(self):
        self.no_score_note.setFixedWidth(max(200, min(760, self.width() - 140)))
        self.no_score_note.adjustSize()
        self.no_score_note.move(70, 34)   # under the plot title

    def resizeEvent(self, event):
        super().resizeEvent(event)
        if hasattr(self, "no_score_note"):   # the first resize comes while the base class is being built
            self._place_note()

    @property
    def score_shown(self) -> bool:
        return self._score_shown

    def set_audio(self, sequence, image, times, freqs, item_id: str):
        """Show the spectrogram ``image`` (F, T) dB with ``times`` (T,) s and ``freqs`` (F,) Hz.

        ``sequence`` gives the feature frames (positions in s) that labels and predictions index.
        """
        if item_id != self.item_id:         # another recording's anchors go; the same one's are kept for set_labels
            for item in self._anchor_items:
                self.main.removeItem(item)
            self._anchor_items = []
        self.item_id = item_id
        self.set_positions(sequence.positions)
        self._anchors_shown = None
        image = np.asarray(image, dtype=np.float32)
        times = np.asarray(times, dtype=float)
        F, T = image.shape
        self._n_rows = F
        dt = float(np.median(np.diff(times))) if T > 1 else 1.0
        self._pyramid = time_pyramid(image)
        self._level = 0
        self.image.setImage(image, autoLevels=False)
        lo, hi = np.percentile(image, [5, 99.7]) if image.size else (0, 1)
        self.lut.setLevels(values=(float(lo), float(hi)))
        self._image_rect = (float(times[0] - dt / 2), 0.0, float(dt * T), float(F))
        self.image.setRect(*self._image_rect)
        self._freq_axis.set_freqs(freqs)
        self.main.setYRange(0, F, padding=0)
        self.vb.setLimits(yMin=0, yMax=F)
        self.main.setTitle(sequence.name or "", color=theme.FOREGROUND, size="10pt")
        self.set_prediction(None)
        self.show_all()

    def _choose_level(self, *_):
        """Show the coarsest pyramid level that still has at least one column per screen pixel."""
        if not self._pyramid or not self.use_pyramid:
            return
        x0, x1 = self.vb.viewRange()[0]
        full_w = self._image_rect[2]
        n_cols = self._pyramid[0].shape[1] * max(x1 - x0, 1e-9) / full_w
        pixels = max(self.vb.width(), 1.0)
        level = int(np.clip(np.floor(np.log2(max(n_cols / pixels, 1.0))), 0, len(self._pyramid) - 1))
        if level != self._level:
            self._level = level
            self.image.setImage(self._pyramid[level], autoLevels=False)
            self.image.setRect(*self._image_rect)

    def _on_region_drawn(self, x0: float, x1: float):
        """On an item with a score, a drag says "the score events drawn in here start in here"."""
        sv = self.score_view
        if not self._score_shown or sv.score is None or sv.event_times is None:
            super()._on_region_drawn(x0, x1)
            return
        if self.item_id is None:
            return
        t0, t1 = max(0.0, float(x0)), max(0.0, float(x1))
        inside = np.flatnonzero((sv.event_times >= t0) & (sv.event_times <= t1))
        if inside.size == 0 or t1 <= t0:
            return
        self.labelCreateRequested.emit(EventSpanLabel(item_id=self.item_id, first=int(inside[0]),
                                                      last=int(inside[-1]), t0_s=t0, t1_s=t1))

    def set_cursor(self, t_s):
        """Playback cursor at ``t_s`` seconds; ``None`` hides it."""
        if t_s is None:
            self.cursor.setVisible(False)
        else:
            self.cursor.setValue(float(t_s))
            self.cursor.setVisible(True)

    def _structure_x(self, structure):
        if structure is None or self.mapping is None:
            return None
        if hasattr(structure, "breakpoints") and structure.n_samples == self.mapping.n_samples:
            return self.mapping.change_x(structure.breakpoints)
        if hasattr(structure, "onsets"):
            return self.mapping.sample_x(structure.onsets)
        return None

    def _draw_prediction(self, prediction, stale):
        xs = self._structure_x(getattr(prediction, "structure", None))
        if xs is None:
            self.bounds.setData([], [])
            self.runner.setData([], [])
            return
        onset_like = hasattr(prediction.structure, "onsets")
        # onsets: short ticks along the top edge (the score roll below shows the alignment);
        # boundaries: full-height lines
        bottom = self._n_rows * (0.93 if onset_like else 0.0)
        top = self._n_rows
        bx, by = vertical_segments(xs, bottom, top)
        self.bounds.setData(bx, by)
        self.bounds.setPen(theme.prediction_pen(stale, width=1.5 if onset_like else 2))
        rx = self._structure_x(prediction.runner_up)
        if rx is not None and rx.size == xs.size:
            rx = rx[rx != xs]
        if rx is not None and rx.size:
            a, b = vertical_segments(rx, bottom, top)
            self.runner.setData(a, b)
        else:
            self.runner.setData([], [])

    def _disagreement_x(self, prediction):
        s, r = prediction.structure, prediction.runner_up
        if hasattr(s, "onsets") and r is not None and hasattr(r, "onsets") and r.onsets.size == s.onsets.size:
            diff = np.flatnonzero(s.onsets != r.onsets)
            spans = []
            for e in diff:
                a, b = sorted((int(s.onsets[e]), int(r.onsets[e])))
                spans.append(self.mapping.region_x(a, b + 1))
            return spans
        return super()._disagreement_x(prediction)

    def set_labels(self, labels):
        super().set_labels(labels)
        anchors = tuple(lab for lab in labels if isinstance(lab, AnchorLabel))
        if anchors == getattr(self, "_anchors_shown", None):
            return
        self._anchors_shown = anchors
        # only the anchors that changed are redrawn: an answer adds one anchor to an item that may hold
        # dozens, and building a line with its caption costs about 3 ms
        drawn = {line.label.id: line for line in self._anchor_items}
        wanted = {lab.id: lab for lab in anchors}
        for label_id, line in drawn.items():
            if wanted.get(label_id) != line.label:
                self.main.removeItem(line)
        self._anchor_items = []
        for lab in anchors:
            line = drawn.get(lab.id)
            if line is None or line.label != lab:
                line = AnchorLine(lab)
                line.sigSelected.connect(self._set_selected)
                line.sigMoved.connect(self._on_anchor_moved)
                self.main.addItem(line, ignoreBounds=True)
            self._anchor_items.append(line)
        self._style_anchors()

    def _set_selected(self, label_id):
        super()._set_selected(label_id)
        self._style_anchors()

    def _style_anchors(self):
        for line in self._anchor_items:
            line.set_selected(line.label.id == self.selected_id)

    def anchor_lines(self) -> list:
        """The drawn anchor labels (one movable vertical line each)."""
        return list(self._anchor_items)

    def _on_anchor_moved(self, label_id: str, t_s: float):
        lab = self._labels.get(label_id)
        if lab is None or abs(t_s - lab.time_s) < 1e-6:
            return
        self.labelChangeRequested.emit(dataclasses.replace(lab, time_s=max(0.0, float(t_s))))
