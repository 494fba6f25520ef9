"""marginalia.align.tempo and the aligner's second decode at the local tempo."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import marginalia.align.aligner as sa
from marginalia.align import ScoreAligner
from marginalia.align.tempo import local_expected_durations
from marginalia.exceptions import ParameterError
from tests.core.align.test_aligner import MELODY, SR, make_score, render


def brute_force(ioi, onsets, end, window):
    """Event by event: the decoded frames over the score seconds of the events whose onsets lie within
    ``window`` of its centre (itself always), the whole path's rate when those have no score length."""
    ioi, on = np.asarray(ioi, float), np.asarray(onsets, float)
    dur = np.diff(np.append(on, end))
    out = []
    for e in range(on.shape[0]):
        centre = on[e] + dur[e] / 2
        near = [j for j in range(on.shape[0]) if abs(on[j] - centre) <= window or j == e]
        a, b = min(near), max(near) + 1
        score_s = ioi[a:b].sum()
        rate = dur[a:b].sum() / score_s if score_s > 0 else dur.sum() / ioi.sum()
        out.append(ioi[e] * rate)
    return np.array(out)


@settings(max_examples=150, deadline=None)
@given(st.lists(st.tuples(st.integers(1, 40), st.sampled_from([0.0, 0.1, 0.25, 0.5, 1.0, 2.0])), min_size=1,
                max_size=30),
       st.integers(1, 40), st.floats(1.0, 120.0))
def test_local_expected_durations_match_brute_force(events, last, window):
    durations = np.array([d for d, _ in events])
    ioi = np.array([s for _, s in events])
    if ioi.sum() == 0:
        ioi[-1] = 1.0
    onsets = np.concatenate([[0], np.cumsum(durations[:-1])]) + 3
    end = int(onsets[-1]) + last
    got = local_expected_durations(ioi, onsets, end, window)
    np.testing.assert_allclose(got, brute_force(ioi, onsets, end, window), rtol=1e-12, atol=1e-9)


def test_a_steady_path_gives_the_score_at_its_tempo_and_bad_input_is_refused():
    ioi = np.array([0.5, 0.25, 0.25, 1.0])
    onsets = np.array([0, 10, 15, 20])  # 20 frames per score second throughout
    np.testing.assert_allclose(local_expected_durations(ioi, onsets, 40, 7.0), 20 * ioi)
    with pytest.raises(ParameterError, match="increasing"):
        local_expected_durations(ioi, onsets[::-1], 40, 7.0)
    with pytest.raises(ParameterError, match="window"):
        local_expected_durations(ioi, onsets, 40, 0.0)
    with pytest.raises(ParameterError, match="shape"):
        local_expected_durations(ioi[:3], onsets, 40, 7.0)


def two_tempi_take(seed=0):
    """``(score, y, truth)``: 24 events played three times slower than written, then 48 played four times
    faster and 26 dB softer, in one recording (one ratio of performed to score time fits neither half)."""
    score = make_score((MELODY * 6)[:72])
    rng = np.random.default_rng(seed)
    ioi = np.r_[np.full(24, 1.2), np.full(48, 0.1)] * rng.uniform(0.85, 1.15, 72)
    onsets = np.concatenate([[0.0], np.cumsum(ioi[:-1])])
    y, truth = render(score, onsets, seed=seed)
    y[int((truth[24] - 0.05) * SR):] *= 0.05
    return score, y, truth


def test_a_soft_fast_half_after_a_slow_one_is_aligned_at_its_own_tempo(monkeypatch):
    score, y, truth = two_tempi_take()
    err = np.abs(ScoreAligner().align(y, SR, score).event_times_s - truth)
    assert err.max() < 0.05, err
    # one decode at the recording's tempo expects every fast event three times too long, and drags them
    monkeypatch.setattr(sa, "_TEMPO_WINDOW_S", 0.0)
    err_once = np.abs(ScoreAligner().align(y, SR, score).event_times_s - truth)
    assert err_once.max() > 0.1, err_once


def test_an_event_may_last_a_multiple_of_its_own_expected_duration_not_of_the_longest():
    aligner = ScoreAligner()
    frame_rate = 43.0
    d = np.array([10.0, 5.0, 400.0, 5.0, 20.0])  # rest, events (one long pause), rest
    _, limits = aligner._robust_costs(d, frame_rate, 5000, 5, rows=True)
    floor = int(sa._LONGEST_EVENT_S * frame_rate)
    assert limits[1] == floor and limits[2] == int(aligner.prior_span * 400 + 8)
    assert limits[0] == limits[3] == limits[4] == 5000  # the rests and the last event: the whole recording
