"""marginalia.align.runs: runs of repeated notes, strike picking, and counting a run onto its strikes."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from marginalia.align.runs import place_run, repeated_runs, strike_peaks
from marginalia.exceptions import ParameterError


def brute_runs(sets, min_length):
    out = []
    for a in range(len(sets)):
        for b in range(a + min_length - 1, len(sets)):
            same = all(sets[i] == sets[a] for i in range(a, b + 1)) and sets[a]
            maximal = (a == 0 or sets[a - 1] != sets[a]) and (b == len(sets) - 1 or sets[b + 1] != sets[a])
            if same and maximal:
                out.append((a, b))
    return out


@settings(max_examples=60, deadline=None)
@given(st.lists(st.sampled_from([frozenset({60}), frozenset({62}), frozenset({60, 64})]), max_size=12),
       st.integers(2, 4))
def test_repeated_runs_match_a_brute_force_search(sets, min_length):
    assert repeated_runs(sets, min_length=min_length) == brute_runs(sets, min_length)


def test_repeated_runs_known_answer_and_checks():
    a, b = frozenset({69}), frozenset({41, 69})
    assert repeated_runs([b, a, a, a, b, b]) == [(1, 3), (4, 5)]
    assert repeated_runs([a, b, a]) == []
    with pytest.raises(ParameterError, match="min_length"):
        repeated_runs([a, a], min_length=1)


def bumps(T, at, heights, width=1.5):
    t = np.arange(T)[:, None]
    return (np.asarray(heights)[None, :] * np.exp(-0.5 * ((t - np.asarray(at)[None, :]) / width) ** 2)).sum(axis=1)


def test_strike_peaks_finds_separated_maxima_in_the_window():
    c = bumps(100, [10, 12, 40, 70], [1.0, 0.5, 0.8, 0.3])
    frames, heights = strike_peaks(c, 5, 80, min_gap=4)
    assert frames.tolist() == [10, 40, 70]  # 12 is within 4 frames of the stronger 10
    assert np.allclose(heights, c[[10, 40, 70]])
    assert strike_peaks(c, 41, 60)[0].tolist() == []
    with pytest.raises(ParameterError, match="curve"):
        strike_peaks(np.array([1.0, np.nan]), 0, 2)


# a chord holding the run's pitch struck at frame 20 (loud), then the run's four strikes
CHORD_AT, RUN_AT = 20, [50, 75, 100, 130]


def run_curve(leak=0.2):
    # a weaker rise before the chord's strike: a lower octave's partial in this pitch's band
    return bumps(200, [8, CHORD_AT] + RUN_AT, [leak, 1.0, 0.5, 0.6, 0.45, 0.4])


def test_a_run_shifted_onto_the_chords_strike_is_moved_to_its_own_strikes():
    shifted = np.array([CHORD_AT, 50, 75, 100])  # the last strike (130) left inside the last event
    placed = place_run(run_curve(), 4, 5, 180, skip_first=True, decoded=shifted)
    assert placed.tolist() == RUN_AT


def test_a_correct_run_is_left_alone():
    assert place_run(run_curve(), 4, 5, 180, skip_first=True, decoded=np.array(RUN_AT)) is None


def test_without_a_shared_pitch_the_first_strike_counts():
    c = bumps(200, RUN_AT, [0.5, 0.6, 0.45, 0.4])
    assert place_run(c, 4, 5, 180, skip_first=False).tolist() == RUN_AT
    # a decoded run that does not sit on the strike of the event before is trusted
    assert place_run(c, 4, 5, 180, skip_first=False, decoded=np.array([75, 100, 130, 160])) is None


def test_too_few_strikes_keep_the_decoded_run():
    c = bumps(200, [CHORD_AT, 50, 75], [1.0, 0.5, 0.6])
    assert place_run(c, 4, 5, 180, skip_first=True, decoded=np.array([CHORD_AT, 50, 75, 120])) is None
    with pytest.raises(ParameterError, match="decoded"):
        place_run(run_curve(), 4, 5, 180, skip_first=True, decoded=np.array([1, 2]))


def test_with_a_strike_too_weak_to_count_only_the_first_event_leaves_the_chords_strike():
    c = bumps(200, [CHORD_AT, 50, 75, 100], [1.0, 0.5, 0.6, 0.45])  # the last strike is lost in the noise
    placed = place_run(c, 4, 5, 180, skip_first=True, decoded=np.array([CHORD_AT, 75, 100, 130]))
    assert placed.tolist() == [50, 75, 100, 130]


def test_a_run_that_ends_the_piece_counts_strikes_past_the_decoded_closing_silence():
    """A chord holding A4, then four A4s, the last one struck after a long fermata: the decode put the run one
    strike early (its first event on the chord's own A4) and the closing silence before the last strike. The
    strikes are counted to the recording's end, and the closing silence moves after the last of them."""
    import marginalia.align.aligner as sa
    from marginalia.types import MidiScore
    coarse, T = 4, 400
    flux = np.zeros((T * coarse, sa._N_BANDS))
    key = 69 - sa._LOW_PITCH
    chord, strikes = 100, [130, 160, 190, 330]      # decoding frames of the chord and of the run's strikes
    for f in [chord + 3] + strikes:                 # the chord's A4 sounds a little after its lowest note
        flux[f * coarse, key] = 1.0
    for p in (45, 57, 60):
        flux[chord * coarse, p - sa._LOW_PITCH] = 1.0
    feats = sa.AlignmentFeatures(X=np.zeros((T, 25)), quiet=np.zeros(T), onset_fine=np.zeros((T * coarse, 12)),
                                 sr=22050, hop_fine=128, coarse=coarse, duration_s=T * coarse * 128 / 22050,
                                 flux_bands=flux)
    score = MidiScore(pitches=[45, 57, 60, 69, 69, 69, 69, 69], onsets_s=[0, 0, 0, 0, 1, 2, 3, 4],
                      offsets_s=[1, 1, 1, 1, 2, 3, 4, 5], name="fermata run")
    decoded = np.array([0, chord, chord + 3, 130, 160, 190, 250])   # lead, chord, run (one early), silence
    fixed = sa.ScoreAligner()._fix_runs(feats, score, decoded, None)
    np.testing.assert_array_equal(fixed[2:6], strikes)
    assert fixed[6] > strikes[-1] and np.all(np.diff(fixed) > 0)
