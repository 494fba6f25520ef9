"""Item views on data built from marginalia.types: mapping, drawing, and labels made with the mouse and keys."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from PySide6.QtCore import Qt

from marginalia.app import theme
from marginalia.app.views.axis_mapping import AxisMapping
from marginalia.app.views.profile_view import ProfileView, segment_means
from marginalia.app.views.score_view import event_audio_times, note_audio_spans
from marginalia.app.views.spectrogram_view import SpectrogramView
from marginalia.types import Alignment, AnchorLabel, BoundaryLabel, RegionKind, RegionLabel

from .helpers import click, drag
from .synthetic import alignment_prediction, audio_item, cgh_sequence, segmentation_prediction

positions_st = st.lists(st.integers(1, 50), min_size=2, max_size=30).map(lambda d: np.cumsum(d).astype(float))


@pytest.mark.slow
@settings(max_examples=40)
@given(positions_st, st.data())
def test_region_x_and_back_gives_the_same_samples(pos, data):
    m = AxisMapping(pos)
    T = pos.size
    start = data.draw(st.integers(0, T - 1))
    stop = data.draw(st.integers(start + 1, T))
    x0, x1 = m.region_x(start, stop)
    assert m.region_indices(x0, x1) == (start, stop)


@settings(max_examples=40)
@given(positions_st, st.data())
def test_nearest_change_inverts_change_x(pos, data):
    m = AxisMapping(pos)
    c = data.draw(st.integers(1, pos.size - 1))
    assert m.nearest_change(float(m.change_x(c))) == c


@settings(max_examples=30)
@given(st.lists(st.floats(-5, 5), min_size=1, max_size=25), st.data())
def test_segment_means_match_brute_force(values, data):
    T = len(values)
    cuts = sorted(data.draw(st.sets(st.integers(1, max(T - 1, 1)), max_size=T - 1))) if T > 1 else []
    changes = np.array(cuts + [T])
    got = segment_means(np.array(values), changes)
    starts = [0] + cuts
    want = [np.mean(values[s:e]) for s, e in zip(starts, list(changes))]
    np.testing.assert_allclose(got, want, atol=1e-12)


def test_score_laid_out_on_its_own_times_without_alignment():
    _, _, times, _, score = audio_item()
    ev_t = event_audio_times(score, None, times)
    starts, ends = note_audio_spans(score, ev_t)
    np.testing.assert_allclose(starts, score.onsets_s)
    np.testing.assert_allclose(ends, score.offsets_s)


def test_score_follows_the_alignment():
    _, _, times, _, score = audio_item()
    al = Alignment([0, 10, 20, 30, 40, 50], times.size)
    ev_t = event_audio_times(score, al, times)
    np.testing.assert_allclose(ev_t, times[[0, 10, 20, 30, 40, 50]])
    starts, ends = note_audio_spans(score, ev_t)
    # each note ends where the next event starts (legato score), stretched with the alignment
    np.testing.assert_allclose(ends[:-1], starts[1:])


def _shown(qtbot, view, width, height):
    """``view`` shown at ``width`` x ``height`` in the app's plot theme, once it is on screen."""
    theme.configure_pyqtgraph()
    qtbot.addWidget(view)
    view.resize(width, height)
    view.show()
    qtbot.waitExposed(view)
    return view


@pytest.fixture
def profile(qtbot):
    view = _shown(qtbot, ProfileView(), 900, 420)
    seq = cgh_sequence()
    view.set_sequence(seq, "item")
    return view, seq


def test_whole_profile_overview_keeps_narrow_events_within_its_budget():
    from marginalia.app.views.genome_view import overview_indices
    rng = np.random.default_rng(1)
    v = 0.2 * rng.standard_normal(100_000)
    v[51_000:51_003] += 3.0                            # a 3-probe focal amplification
    idx = overview_indices(v, 4000)
    assert idx.size <= 4000 and np.all(np.diff(idx) > 0)
    assert np.any((idx >= 51_000) & (idx < 51_003))   # still drawn
    assert np.std(v[idx]) < 1.5 * np.std(v)            # the noise keeps its spread (not only extremes)
    assert overview_indices(v[:300], 4000).tolist() == list(range(300))


@pytest.mark.slow
def test_drag_creates_a_region_label_over_the_dragged_samples(qtbot, profile):
    view, seq = profile
    got = []
    view.labelCreateRequested.connect(got.append)
    drag(qtbot, view, view.vb, seq.positions[20], seq.positions[50], 0.0)
    assert len(got) == 1
    lab = got[0]
    assert isinstance(lab, RegionLabel) and lab.kind == RegionKind.ZERO and lab.item_id == "item"
    assert abs(lab.start - 20) <= 1 and abs(lab.stop - 51) <= 1


def test_ctrl_click_places_a_boundary_at_the_nearest_change(qtbot, profile):
    view, seq = profile
    got = []
    view.labelCreateRequested.connect(got.append)
    x = 0.5 * (seq.positions[99] + seq.positions[100])
    click(qtbot, view, view.vb, x, 0.0, modifier=Qt.KeyboardModifier.ControlModifier)
    assert len(got) == 1 and isinstance(got[0], BoundaryLabel)
    assert got[0].index == 100


def test_ctrl_click_on_a_data_point_or_inside_a_label_places_a_boundary(qtbot, profile):
    view, seq = profile
    got = []
    view.labelCreateRequested.connect(got.append)
    values = np.asarray(seq.values)[:, 0]
    for k in (60, 140):   # right on a drawn point: the points' scatter must not swallow the click
        click(qtbot, view, view.vb, seq.positions[k], values[k], modifier=Qt.KeyboardModifier.ControlModifier)
    assert [type(lab) for lab in got] == [BoundaryLabel, BoundaryLabel]
    assert abs(got[0].index - 60) <= 1 and abs(got[1].index - 140) <= 1
    lab = RegionLabel(item_id="item", start=10, stop=40, kind=RegionKind.ONE)
    view.set_labels([lab])
    click(qtbot, view, view.vb, 0.5 * (seq.positions[24] + seq.positions[25]), 0.0,
          modifier=Qt.KeyboardModifier.ControlModifier)
    assert isinstance(got[-1], BoundaryLabel) and got[-1].index == 25 and view.selected_id is None


def test_plain_click_does_not_label(qtbot, profile):
    view, seq = profile
    got = []
    view.labelCreateRequested.connect(got.append)
    click(qtbot, view, view.vb, seq.positions[30], 0.0)
    assert got == []


def test_kind_key_changes_the_selected_region(qtbot, profile):
    view, seq = profile
    lab = RegionLabel(item_id="item", start=10, stop=40, kind=RegionKind.ZERO)
    view.set_labels([lab])
    click(qtbot, view, view.vb, seq.positions[25], 0.0)  # click inside the region selects it
    assert view.selected_id == lab.id
    changed = []
    view.labelChangeRequested.connect(changed.append)
    view.set_region_kind(RegionKind.ONE)
    assert len(changed) == 1 and changed[0].id == lab.id and changed[0].kind == RegionKind.ONE
    assert (changed[0].start, changed[0].stop) == (10, 40)
    deleted = []
    view.labelDeleteRequested.connect(deleted.append)
    assert view.delete_selected() and deleted == [lab.id]


def test_moving_a_region_edge_resizes_the_label(qtbot, profile):
    view, seq = profile
    lab = RegionLabel(item_id="item", start=10, stop=40, kind=RegionKind.ONE)
    view.set_labels([lab])
    item = view._label_items[lab.id]
    changed = []
    view.labelChangeRequested.connect(changed.append)
    x0, _ = item.getRegion()
    item.setRegion((x0, float(seq.positions[59]) + 1.0))
    item.sigRegionChangeFinished.emit(item)
    assert changed and changed[-1].start == 10 and changed[-1].stop == 60 and changed[-1].id == lab.id


def test_prediction_draws_means_and_stale_predictions_are_dashed_grey(qtbot, profile):
    view, seq = profile
    pred = segmentation_prediction("item", [60, 140], seq.n_samples, runner=[60])
    view.set_prediction(pred)
    xs, ys = view.means.getData()
    assert xs.size == 6  # 3 segments, 2 points each
    np.testing.assert_allclose(ys[0::2], segment_means(seq.values[:, 0], np.array([60, 140, 200])))
    assert view.means.opts["pen"].color().name() == theme.PREDICTION
    bx, _ = view.changes.getData()
    assert bx.size == 4
    view.set_prediction(pred, stale=True, current_model="m2")
    assert view.means.opts["pen"].color().name() == theme.STALE
    assert view.means.opts["pen"].style() == Qt.PenStyle.DashLine
    assert "stale" in view.main.toolTip()


@pytest.mark.slow
def test_spectrogram_view_draws_onsets_and_score_note_drag_anchors(qtbot):
    view = _shown(qtbot, SpectrogramView(), 900, 600)
    seq, image, times, freqs, score = audio_item()
    view.set_audio(seq, image, times, freqs, "aud")
    view.show_score(score, times)
    pred = alignment_prediction("aud", [0, 40, 80, 120, 160, 200], seq.n_samples, runner=[0, 41, 80, 120, 160, 200])
    view.set_prediction(pred)
    view.score_view.set_prediction(pred)
    bx, _ = view.bounds.getData()
    np.testing.assert_allclose(bx[0::2], times[[0, 40, 80, 120, 160, 200]])
    assert view.score_view._runner_notes is not None  # event 1 differs: drawn faintly
    got = []
    view.score_view.labelCreateRequested.connect(got.append)
    sv = view.score_view
    x, y = sv.note_center(2)
    assert sv.note_at(x, y) == 2
    drag(qtbot, view, sv.vb, x, 7.5, y)
    assert len(got) == 1 and isinstance(got[0], AnchorLabel)
    assert got[0].event == int(score.note_event[2])
    assert abs(got[0].time_s - 7.5) < 0.2
    view.set_labels(got)
    assert len(view._anchor_items) == 1
    # a new anchor adds one line and keeps the drawn ones; a moved anchor is redrawn, a deleted one goes
    first = view.anchor_lines()[0]
    more = [AnchorLabel(item_id="aud", event=4, time_s=9.0), AnchorLabel(item_id="aud", event=5, time_s=11.0)]
    view.set_labels(got + more)
    lines = view.anchor_lines()
    assert len(lines) == 3 and lines[0] is first and [ln.value() for ln in lines[1:]] == [9.0, 11.0]
    moved = dataclasses.replace(more[0], time_s=9.5)
    view.set_labels([got[0], moved])
    lines = view.anchor_lines()
    assert len(lines) == 2 and lines[0] is first and lines[1].value() == 9.5
    in_scene = [it for it in view.main.items if isinstance(it, type(first))]
    assert sorted(it.value() for it in in_scene) == sorted(ln.value() for ln in lines)
    # in the score under the spectrogram an anchor is a filled diamond, a suggestion an outlined one
    view.score_view.set_labels([got[0], dataclasses.replace(more[1], suggested=True)])
    spots = view.score_view._anchors.points()
    assert [p.brush().style() for p in spots] == [Qt.BrushStyle.SolidPattern, Qt.BrushStyle.NoBrush]
    # shown again, the same recording keeps its lines; another recording starts without them
    view.set_audio(seq, image, times, freqs, "aud")
    view.set_labels([got[0], moved])
    assert view.anchor_lines()[0] is first
    view.set_audio(seq, image, times, freqs, "other")
    assert view.anchor_lines() == [] and not [it for it in view.main.items if isinstance(it, type(first))]


def test_segmentation_on_spectrogram_draws_boundaries(qtbot):
    theme.configure_pyqtgraph()
    view = SpectrogramView()
    qtbot.addWidget(view)
    seq, image, times, freqs, _ = audio_item()
    view.set_audio(seq, image, times, freqs, "aud")
    view.set_prediction(segmentation_prediction("aud", [100], seq.n_samples))
    bx, _ = view.bounds.getData()
    assert bx.size == 2 and abs(bx[0] - 0.5 * (times[99] + times[100])) < 1e-9
    view.set_prediction(None)
    assert view.bounds.getData()[0] is None or len(view.bounds.getData()[0]) == 0



def test_time_pyramid_halves_time_and_keeps_peaks():
    from marginalia.app.views.spectrogram_view import time_pyramid

    image = np.zeros((3, 20), dtype=np.float32)
    image[1, 13] = 5.0   # one loud, short event
    levels = time_pyramid(image, min_columns=4)
    assert [lvl.shape for lvl in levels] == [(3, 20), (3, 10), (3, 5)]
    for lvl in levels:
        assert lvl.max() == 5.0 and np.argmax(lvl.max(axis=1)) == 1   # the event survives every level
    np.testing.assert_array_equal(levels[1], np.maximum(image[:, 0::2], image[:, 1::2]))


@settings(max_examples=30, deadline=None)
@given(st.lists(st.tuples(st.floats(0, 1e8), st.floats(0, 1e8)), min_size=1, max_size=8))
def test_genome_offsets_put_chromosomes_side_by_side_in_order(pairs):
    from marginalia.app.views.genome_view import genome_offsets

    starts = np.array([min(p) for p in pairs])
    stops = np.array([max(p) for p in pairs])
    off = genome_offsets(starts, stops, gap_fraction=0.01)
    left, right = starts + off, stops + off
    assert left[0] == 0.0
    np.testing.assert_allclose(right - left, stops - starts, rtol=1e-9, atol=1e-6)   # shapes kept
    gap = 0.01 * max((stops - starts).sum(), 1.0)
    np.testing.assert_allclose(left[1:] - right[:-1], gap, rtol=1e-6, atol=1e-3)   # in order, one gap apart


@pytest.mark.slow
@settings(max_examples=60, deadline=None)
@given(st.data())
def test_provisional_onsets_move_the_anchored_event_and_keep_the_rest_in_order(data):
    from marginalia.app.labelling import provisional_onsets

    E = data.draw(st.integers(1, 8), label="E")
    T = data.draw(st.integers(E, 40), label="T")
    onsets = np.sort(np.random.default_rng(data.draw(st.integers(0, 99))).choice(T, size=E, replace=False))
    event = data.draw(st.integers(0, E - 1), label="event")
    frame = data.draw(st.integers(0, T - 1), label="frame")
    others = [e for e in range(E) if e != event]
    fixed = data.draw(st.lists(st.sampled_from(others), unique=True) if others else st.just([]), label="fixed")
    new = provisional_onsets(onsets, event, frame, fixed, n_frames=T)
    assert new.shape == (E,) and np.all(np.diff(new) > 0) and new[0] >= 0 and new[-1] <= T - 1
    assert new[event] == min(max(frame, event), T - E + event)     # as close as the other events allow
    left = max([e for e in fixed if e < event], default=-1)
    right = min([e for e in fixed if e > event], default=E)
    # when the new frame keeps clear of the fixed neighbours, they and everything beyond them stay put
    if (left < 0 or new[event] - onsets[left] > event - left) and \
            (right >= E or onsets[right] - new[event] > right - event):
        outside = [e for e in range(E) if e <= left or e >= right]
        np.testing.assert_array_equal(new[outside], onsets[outside])
