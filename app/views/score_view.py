"""Piano roll of the score drawn in audio time, under the spectrogram (shared x axis).

The roll places every score event at its predicted onset in the audio; notes are stretched with
the local tempo of the alignment. A ruler at the top shows the score's own timeline and links each
event to its aligned time (as Sonic Visualiser draws alignments). Dragging a note sideways anchors
its event at the time where it is dropped.
"""

from __future__ import annotations

import numpy as np
import pyqtgraph as pg
from PySide6 import QtCore
from PySide6.QtCore import Qt

from marginalia.types import AnchorLabel, EventSpanLabel

from .. import theme
from .profile_view import vertical_segments

NOTE_NAMES = ("C", "C#", "D", "D#", "E", "F", "F#", "G", "G#", "A", "A#", "B")


def event_audio_times(score, alignment, frame_times: np.ndarray) -> np.ndarray:
    """Audio time (s) of every score event: from ``alignment`` if given, else the score's own times."""
    if alignment is None or getattr(alignment, "onsets", None) is None or alignment.n_events != score.n_events:
        return np.asarray(score.event_onsets_s, dtype=float)
    idx = np.clip(alignment.onsets, 0, frame_times.size - 1)
    return np.asarray(frame_times[idx], dtype=float)


def note_audio_spans(score, event_times: np.ndarray):
    """Audio start and end (s) of every note given the audio time of every event.

    Returns
    -------
    starts, ends : ndarray, shape (N,)
    """
    s = np.asarray(score.event_onsets_s, dtype=float)
    a = np.asarray(event_times, dtype=float)
    starts = a[score.note_event]
    if s.size >= 2 and s[-1] > s[0]:
        rate = (a[-1] - a[0]) / (s[-1] - s[0]) if a[-1] > a[0] else 1.0
        # piecewise-linear warp between events, extended past the last one at the mean tempo
        ends = np.interp(score.offsets_s, s, a, right=np.nan)
        tail = np.isnan(ends)
        ends[tail] = a[-1] + (score.offsets_s[tail] - s[-1]) * rate
    else:
        ends = starts + (score.offsets_s - score.onsets_s)
    ends = np.maximum(ends, starts + 1e-3)
    return starts, ends


def note_name(pitch: int) -> str:
    return f"{NOTE_NAMES[pitch % 12]}{pitch // 12 - 1}"


class ScoreViewBox(pg.ViewBox):
    """ViewBox that lets a note be dragged along time; other drags pan."""

    sigNoteDropped = QtCore.Signal(int, float)   # note index, time in s

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.setMouseEnabled(x=True, y=False)
        self.hit_test = None  # callable (x, y) -> note index or None
        self._dragging = None
        self._ghost = None

    def mouseDragEvent(self, ev, axis=None):
        if axis is not None or ev.button() != Qt.MouseButton.LeftButton:
            super().mouseDragEvent(ev, axis)
            return
        p0 = self.mapSceneToView(ev.buttonDownScenePos())
        if ev.isStart():
            self._dragging = self.hit_test(p0.x(), p0.y()) if self.hit_test else None
        if self._dragging is None:
            ev.accept()
            d = self.mapSceneToView(ev.lastScenePos()) - self.mapSceneToView(ev.scenePos())
            self.translateBy(x=d.x(), y=0)
            return
        ev.accept()
        x = self.mapSceneToView(ev.scenePos()).x()
        if self._ghost is None:
            self._ghost = pg.InfiniteLine(pos=x, angle=90, pen=pg.mkPen(theme.ANCHOR, width=2,
                                                                         style=Qt.PenStyle.DashLine))
            self.addItem(self._ghost, ignoreBounds=True)
        self._ghost.setValue(x)
        if ev.isFinish():
            self.removeItem(self._ghost)
            self._ghost = None
            note, self._dragging = self._dragging, None
            self.sigNoteDropped.emit(int(note), float(max(x, 0.0)))


class ScoreView(pg.PlotItem):
    """Piano roll of a :class:`marginalia.types.MidiScore` in audio time (a plot placed under the spectrogram).

    Signals
    -------
    labelCreateRequested(AnchorLabel)
        A note was dragged to a time: its event starts there.
    """

    labelCreateRequested = QtCore.Signal(object)

    def __init__(self):
        self.vb = ScoreViewBox()
        super().__init__(viewBox=self.vb)
        self.vb.hit_test = self.note_at
        self.main = self
        self.setMenuEnabled(False)
        self.hideButtons()
        self.getAxis("left").setWidth(56)
        self.setLabel("left", "pitch")
        self.setLabel("bottom", "audio time (s)")
        self.showGrid(x=True, y=False, alpha=theme.GRID_ALPHA)
        theme.light_axes(self)
        self.vb.sigNoteDropped.connect(self._on_note_dropped)
        self.item_id = None
        self.score = None
        self.frame_times = None
        self._starts = self._ends = None
        self.event_times = None      # (E,) audio time (s) where each event is drawn
        self._notes = None
        self._labels = []
        self._runner_notes = None
        self._links = pg.PlotCurveItem([], [], pen=pg.mkPen(theme.MUTED, width=1), connect="pairs")
        self._ruler = pg.PlotCurveItem([], [], pen=pg.mkPen(theme.FOREGROUND, width=1), connect="pairs")
        self._anchors = pg.ScatterPlotItem([], [], symbol="d", size=11, brush=pg.mkBrush(theme.ANCHOR), pen=None)
        self._anchors.setZValue(40)
        # event-span labels: a bracket over their time span and the outline of their notes
        self._span_bars = pg.PlotCurveItem([], [], pen=pg.mkPen(theme.ANCHOR, width=3), connect="pairs")
        self._span_bars.setZValue(41)
        self._span_notes = None
        for it in (self._links, self._ruler, self._anchors, self._span_bars):
            self.addItem(it, ignoreBounds=True)
        self._ylim = (0, 1)

    def set_score(self, score, item_id: str, frame_times: np.ndarray):
        """Show ``score`` for item ``item_id``; ``frame_times`` (T,) are the audio frame times in s."""
        self.item_id = item_id
        self.score = score
        self.frame_times = np.asarray(frame_times, dtype=float)
        lo, hi = int(score.pitches.min()), int(score.pitches.max())
        self._ylim = (lo - 1.5, hi + 6.5)
        self.setYRange(*self._ylim, padding=0)
        self.vb.setLimits(yMin=self._ylim[0], yMax=self._ylim[1])
        ticks = [(p, note_name(p)) for p in range(lo, hi + 1) if p % 12 == 0]
        if not ticks:
            ticks = [(lo, note_name(lo)), (hi, note_name(hi))]
        self.getAxis("left").setTicks([ticks, []])
        self._labels = []
        self.set_prediction(None)

    def note_at(self, x: float, y: float):
        """Index of the note drawn under (x s, y pitch), or None."""
        if self.score is None or self._starts is None:
            return None
        hit = np.flatnonzero((np.abs(self.score.pitches - y) <= 0.5) & (self._starts <= x) & (self._ends >= x))
        return int(hit[0]) if hit.size else None

    def note_center(self, note: int) -> tuple:
        """(x, y) view coordinates of the middle of a drawn note."""
        return (0.5 * (self._starts[note] + self._ends[note]), float(self.score.pitches[note]))

    def set_prediction(self, prediction, *, stale: bool = False, current_model: str | None = None):
        """Lay the score out along the predicted alignment (identity when there is none)."""
        if self.score is None:
            return
        structure = getattr(prediction, "structure", None)
        ev_t = event_audio_times(self.score, structure, self.frame_times)
        self.event_times = ev_t
        self._starts, self._ends = note_audio_spans(self.score, ev_t)
        if self._notes is not None:
            self.removeItem(self._notes)
        colour = theme.STALE if (stale or prediction is None) else theme.DATA
        self._notes = pg.BarGraphItem(x0=self._starts, width=self._ends - self._starts,
                                      y0=self.score.pitches - 0.4, height=np.full(self.score.n_notes, 0.8),
                                      brush=pg.mkBrush(colour), pen=pg.mkPen(theme.BACKGROUND, width=0.5))
        self._notes.setZValue(10)
        self.addItem(self._notes)
        if self._runner_notes is not None:
            self.removeItem(self._runner_notes)
            self._runner_notes = None
        ru = getattr(prediction, "runner_up", None)
        if ru is not None and getattr(ru, "onsets", None) is not None and ru.n_events == self.score.n_events:
            rt = event_audio_times(self.score, ru, self.frame_times)
            differ = np.abs(rt - ev_t)[self.score.note_event] > 1e-9
            if differ.any():
                rs, re_ = note_audio_spans(self.score, rt)
                self._runner_notes = pg.BarGraphItem(
                    x0=rs[differ], width=(re_ - rs)[differ], y0=self.score.pitches[differ] - 0.4,
                    height=np.full(int(differ.sum()), 0.8), brush=pg.mkBrush(0, 0, 0, 0),
                    pen=pg.mkPen(theme.RUNNER_UP, width=1, style=Qt.PenStyle.DashLine))
                self._runner_notes.setOpacity(0.6)
                self._runner_notes.setZValue(9)
                self.addItem(self._runner_notes)
        # ruler: score timeline scaled to the audio span, linked to aligned event times
        top = self._ylim[1] - 1.0
        base = top - 3.0
        s = np.asarray(self.score.event_onsets_s, dtype=float)
        if s.size > 1 and s[-1] > s[0]:
            s_x = ev_t[0] + (s - s[0]) * (ev_t[-1] - ev_t[0]) / (s[-1] - s[0])
        else:
            s_x = ev_t.copy()
        rx, ry = vertical_segments(s_x, top - 0.6, top)
        self._ruler.setData(rx, ry)
        lx = np.empty(2 * s_x.size)
        ly = np.empty(2 * s_x.size)
        lx[0::2], lx[1::2] = s_x, ev_t
        ly[0::2], ly[1::2] = top - 0.6, base
        self._links.setData(lx, ly)
        self._links.setPen(theme.prediction_pen(stale, width=1) if prediction is not None
                           else pg.mkPen(theme.MUTED, width=1))
        self._draw_spans()

    def set_labels(self, labels):
        """Draw anchor labels (diamonds at their time) and event-span labels (a bracket and note outlines)."""
        self._labels = list(labels)
        anchors = [lab for lab in labels if isinstance(lab, AnchorLabel)]
        if not anchors or self.score is None:
            self._anchors.setData([], [])
        else:
            base = self._ylim[1] - 4.0
            # a suggestion (not accepted yet) is an outlined diamond, an anchor a filled one
            self._anchors.setData([a.time_s for a in anchors], [base] * len(anchors), data=[a.id for a in anchors],
                                  brush=[pg.mkBrush(None) if a.suggested else pg.mkBrush(theme.ANCHOR)
                                         for a in anchors],
                                  pen=[pg.mkPen(theme.ANCHOR, width=1.5) if a.suggested else pg.mkPen(None) for a in anchors])
        self._draw_spans()

    def span_labels(self) -> list:
        """The event-span labels drawn."""
        return [lab for lab in self._labels if isinstance(lab, EventSpanLabel)]

    def span_note_mask(self) -> np.ndarray:
        """(N,) bool: the notes outlined because an event-span label names their event."""
        if self.score is None:
            return np.zeros(0, dtype=bool)
        mask = np.zeros(self.score.n_notes, dtype=bool)
        for lab in self.span_labels():
            mask |= (self.score.note_event >= lab.first) & (self.score.note_event <= lab.last)
        return mask

    def _draw_spans(self):
        if self._span_notes is not None:
            self.removeItem(self._span_notes)
            self._span_notes = None
        spans = self.span_labels()
        if not spans or self.score is None or self._starts is None:
            self._span_bars.setData([], [])
            return
        y = self._ylim[1] - 4.0
        xs = np.array([[lab.t0_s, lab.t1_s] for lab in spans], dtype=float).reshape(-1)
        self._span_bars.setData(xs, np.full(xs.size, y))
        mask = self.span_note_mask()
        if mask.any():
            self._span_notes = pg.BarGraphItem(
                x0=self._starts[mask], width=(self._ends - self._starts)[mask], y0=self.score.pitches[mask] - 0.45,
                height=np.full(int(mask.sum()), 0.9), brush=pg.mkBrush(0, 0, 0, 0),
                pen=pg.mkPen(theme.ANCHOR, width=1.5))
            self._span_notes.setZValue(11)
            self.addItem(self._span_notes)

    def _on_note_dropped(self, note: int, t: float):
        if self.item_id is None or self.score is None:
            return
        event = int(self.score.note_event[note])
        self.labelCreateRequested.emit(AnchorLabel(item_id=self.item_id, event=event, time_s=t))
