"""Exact template alignment against brute-force enumeration and known answers."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from marginalia.decoders import alignment as al
from marginalia.decoders.alignment import (
    AlignmentConstraints,
    align,
    align_loss_augmented,
    align_second_best,
    align_with_duration_prior,
    alignment_constraints_from_labels,
    alignment_hamming,
    alignment_onset_loss,
    alignment_score,
)
from marginalia.decoders.brute_alignment import all_alignments, brute_align
from marginalia.exceptions import InfeasibleLabelsError, ParameterError
from marginalia.types import Alignment, AnchorLabel, EventSpanLabel

TOL = 1e-9


@st.composite
def problems(draw, max_frames=8):
    """A small score matrix with a feasible minimal duration."""
    T = draw(st.integers(1, max_frames))
    E = draw(st.integers(1, T))
    m = draw(st.integers(1, T // E))
    values = draw(st.lists(st.integers(-4, 4), min_size=T * E, max_size=T * E))
    return np.array(values, dtype=float).reshape(T, E), m


@st.composite
def problems_with_windows(draw):
    S, m = draw(problems())
    T, E = S.shape
    lo = np.array([draw(st.integers(0, T - 1)) for _ in range(E)])
    width = np.array([draw(st.integers(0, T)) for _ in range(E)])
    return S, m, AlignmentConstraints(lo, np.minimum(lo + width, T - 1))


# ------------------------------------------------------------------ optimum


@settings(max_examples=80)
@given(problems())
@pytest.mark.slow
def test_align_equals_brute_force_optimum(problem):
    S, m = problem
    result = align(S, min_frames=m)
    ranked = brute_align(S, min_frames=m)
    assert result.score == pytest.approx(ranked[0][0], abs=TOL)
    assert alignment_score(S, result.alignment) == pytest.approx(result.score, abs=TOL)
    durations = np.diff(np.r_[result.alignment.onsets, S.shape[0]])
    assert durations.min() >= m
    assert result.alignment.onsets[0] == 0


@pytest.mark.slow
@settings(max_examples=80)
@given(problems_with_windows())
def test_constrained_align_respects_windows_and_is_optimal(case):
    S, m, cons = case
    ranked = brute_align(S, min_frames=m, accept=cons.is_satisfied_by)
    if not ranked:
        with pytest.raises(InfeasibleLabelsError):
            align(S, min_frames=m, constraints=cons)
        return
    result = align(S, min_frames=m, constraints=cons)
    assert cons.is_satisfied_by(result.alignment)
    assert result.score == pytest.approx(ranked[0][0], abs=TOL)


@settings(max_examples=80)
@given(problems_with_windows())
@pytest.mark.slow
def test_second_best_is_the_best_other_alignment(case):
    S, m, cons = case
    ranked = brute_align(S, min_frames=m, accept=cons.is_satisfied_by)
    if not ranked:
        return
    best, second = align_second_best(S, min_frames=m, constraints=cons)
    assert best.score == pytest.approx(ranked[0][0], abs=TOL)
    if len(ranked) == 1:
        assert second is None
        return
    assert second is not None
    assert second.alignment != best.alignment
    assert cons.is_satisfied_by(second.alignment)
    assert second.score == pytest.approx(alignment_score(S, second.alignment), abs=TOL)
    assert second.score == pytest.approx(ranked[1][0], abs=TOL)


def _runner_up_by_constraints(S, best, m):
    """Oracle: the best score of an alignment that moves one onset of ``best`` (every event's onset forced
    before or after the best's, one at a time)."""
    T, E = S.shape
    runner = -np.inf
    for e in range(1, E):
        o = int(best.alignment.onsets[e])
        for lo_e, hi_e in ((0, o - 1), (o + 1, T - 1)):
            lo = np.zeros(E, int)
            hi = np.full(E, T - 1)
            lo[e], hi[e] = lo_e, hi_e
            try:
                runner = max(runner, align(S, min_frames=m, constraints=AlignmentConstraints(lo, hi)).score)
            except InfeasibleLabelsError:
                pass
    return runner


@pytest.mark.parametrize("m", [1, 2, 3])
def test_second_best_on_longer_sequences_uses_checkpoints_correctly(monkeypatch, m):
    # a large checkpoint budget gives the shortest segments (32 rows): many recomputed segments
    # (a tiny budget would give one segment longer than the sequence, and no checkpoint at all)
    monkeypatch.setattr(al, "_CHECKPOINT_BYTES", 2**40)
    rng = np.random.default_rng(m)
    for _ in range(6):
        E = int(rng.integers(2, 9))
        T = E * m + int(rng.integers(20, 70))
        S = rng.normal(size=(T, E)).round(2)
        best, second = align_second_best(S, min_frames=m)
        assert best.score == pytest.approx(align(S, min_frames=m).score, abs=TOL)
        # oracle: the runner-up differs from the best in at least one onset
        assert second.alignment != best.alignment
        assert second.score == pytest.approx(_runner_up_by_constraints(S, best, m), abs=1e-7)


@pytest.mark.parametrize("m", [1, 2, 3])
def test_second_best_with_many_more_events_than_a_checkpoint_segment(monkeypatch, m):
    # E >> 32: each recomputed segment restores and computes only a narrow cone of events around the
    # path; a cone too narrow, or a column left stale, would change the candidates
    monkeypatch.setattr(al, "_CHECKPOINT_BYTES", 2**40)
    rng = np.random.default_rng(10 + m)
    E, T = 90, 90 * m + 260
    onsets = np.r_[0, np.sort(rng.choice(np.arange(1, T - m * E), E - 1, replace=False))] + m * np.arange(E)
    truth = Alignment(onsets, T)
    S = rng.normal(size=(T, E)).round(1)
    S[np.arange(T), truth.frame_events()] += 0.7
    best, second = align_second_best(S, min_frames=m)
    assert second.alignment != best.alignment
    assert second.score == pytest.approx(_runner_up_by_constraints(S, best, m), abs=1e-7)
    assert second.score == pytest.approx(alignment_score(S, second.alignment), abs=1e-7)
    # every candidate recomputed in the cones equals the one of a single pass over all events
    S, m_, lo, hi = al._check_problem(S, m, None)
    dec = al._Decoder(S, m, lo, hi, checkpoints=True)
    assert dec.k == 32
    ev, rec_c, rec_s = dec.path_candidates(best.alignment.onsets)
    ring, win = dec._fresh()
    ref_c = np.full(T, -np.inf)
    ref_s = np.full(T, -np.inf)
    dec._run(ring, win, 0, T, 0, E - 1, False, 0, ev, best.alignment.onsets, ref_c, ref_s)
    np.testing.assert_array_equal(rec_c, ref_c)
    np.testing.assert_array_equal(rec_s, ref_s)


# ----------------------------------------------------------- loss-augmented


@settings(max_examples=60)
@given(problems(), st.sampled_from(["hamming", "onset"]), st.sampled_from([0.0, 0.5, 1.0, 3.0]),
       st.integers(0, 10**6))
def test_loss_augmented_equals_brute_force(problem, loss, scale, seed):
    S, m = problem
    T, E = S.shape
    choices = list(all_alignments(T, E, min_frames=m))
    truth = choices[seed % len(choices)]
    lossf = alignment_hamming if loss == "hamming" else alignment_onset_loss
    result = align_loss_augmented(S, truth, loss=loss, loss_scale=scale, min_frames=m)
    ranked = brute_align(S, min_frames=m, extra=lambda a: scale * lossf(a, truth))
    assert result.objective == pytest.approx(ranked[0][0], abs=TOL)
    assert result.loss == lossf(result.alignment, truth)
    assert result.score == pytest.approx(alignment_score(S, result.alignment), abs=TOL)
    assert result.objective == pytest.approx(result.score + scale * result.loss, abs=TOL)


def test_loss_augmented_with_zero_scores_finds_the_farthest_alignment():
    S = np.zeros((6, 3))
    truth = Alignment([0, 1, 2], 6)
    ham = align_loss_augmented(S, truth, loss="hamming")
    assert ham.loss == max(alignment_hamming(a, truth) for a in all_alignments(6, 3))
    onset = align_loss_augmented(S, truth, loss="onset")
    assert onset.loss == max(alignment_onset_loss(a, truth) for a in all_alignments(6, 3))


# ----------------------------------------------------------- duration prior


@settings(max_examples=60)
@given(problems(), st.lists(st.floats(0, 5), min_size=8, max_size=8), st.sampled_from([0.0, 0.3, 2.0]),
       st.integers(0, 8))
@pytest.mark.slow
def test_duration_prior_equals_brute_force(problem, expected, weight, extra_frames):
    S, m = problem
    T, E = S.shape
    d = np.array(expected[:E])
    dmax = min(T, m + extra_frames)
    if dmax * E < T:
        dmax = T
    result = align_with_duration_prior(S, d, weight=weight, min_frames=m, max_frames=dmax)

    def penalty(a):
        dur = np.diff(np.r_[a.onsets, T])
        return -np.inf if dur.max() > dmax else -weight * float(((dur - d) ** 2).sum())

    ranked = brute_align(S, min_frames=m, extra=penalty)
    assert result.score == pytest.approx(ranked[0][0], abs=1e-7)
    assert np.diff(np.r_[result.alignment.onsets, T]).max() <= dmax


def test_strong_duration_prior_imposes_expected_durations():
    rng = np.random.default_rng(3)
    S = rng.normal(size=(12, 3))
    result = align_with_duration_prior(S, [2, 7, 3], weight=1e3)
    assert result.alignment.onsets.tolist() == [0, 2, 9]


# -------------------------------------------------------------- known answers


def test_align_recovers_a_planted_alignment():
    onsets = [0, 3, 4, 9, 15]
    truth = Alignment(onsets, 20)
    S = np.full((20, 5), -1.0)
    S[np.arange(20), truth.frame_events()] = 1.0
    assert align(S).alignment == truth
    assert align(S).score == 20.0


def test_losses_known_values():
    a = Alignment([0, 2, 5], 8)  # events 0 0 1 1 1 2 2 2
    b = Alignment([0, 4, 6], 8)  # events 0 0 0 0 1 1 2 2
    assert alignment_hamming(a, b) == 3
    assert alignment_onset_loss(a, b) == 3
    c = Alignment([0, 1, 2], 8)  # events 0 1 2 2 2 2 2 2
    assert alignment_onset_loss(c, b) == 0 + 1 + 2 + 2 + 1 + 1 + 0 + 0


# ------------------------------------------------------------------- labels


def test_labels_become_onset_windows_and_decoding_obeys_them():
    rng = np.random.default_rng(0)
    S = rng.normal(size=(100, 5))
    labels = [AnchorLabel("item", event=2, time_s=4.0, tolerance_s=0.1),
              EventSpanLabel("item", first=3, last=4, t0_s=6.0, t1_s=7.0)]
    cons = alignment_constraints_from_labels(labels, 100, 5, frame_rate=10.0)
    assert (cons.onset_min[2], cons.onset_max[2]) == (39, 41)
    assert (cons.onset_min[3], cons.onset_max[3]) == (60, 70)
    on = align(S, constraints=cons).alignment.onsets
    assert 39 <= on[2] <= 41 and 60 <= on[3] <= 70 and 60 <= on[4] <= 70
    best, second = align_second_best(S, constraints=cons)
    assert cons.is_satisfied_by(second.alignment)


def test_anchor_on_missing_event_or_after_the_audio_is_rejected():
    lab = AnchorLabel("item", event=5, time_s=1.0)
    with pytest.raises(ParameterError, match=f"AnchorLabel {lab.id}: event 5"):
        alignment_constraints_from_labels([lab], 100, 5, frame_rate=10.0)
    late = AnchorLabel("item", event=1, time_s=20.0, tolerance_s=0.0)
    with pytest.raises(ParameterError, match="after the last frame 99"):
        alignment_constraints_from_labels([late], 100, 5, frame_rate=10.0)
    span = EventSpanLabel("item", first=2, last=7, t0_s=0.0, t1_s=1.0)
    with pytest.raises(ParameterError, match="events 2..7 do not exist"):
        alignment_constraints_from_labels([span], 100, 5, frame_rate=10.0)


def test_anchors_out_of_order_name_both_labels():
    first = AnchorLabel("item", event=1, time_s=5.0, tolerance_s=0.1)
    second = AnchorLabel("item", event=3, time_s=2.0, tolerance_s=0.1)
    with pytest.raises(InfeasibleLabelsError) as info:
        alignment_constraints_from_labels([first, second], 100, 5, frame_rate=10.0)
    assert set(info.value.label_ids) == {first.id, second.id}
    # within tolerance of each other they are compatible
    close = AnchorLabel("item", event=2, time_s=4.9, tolerance_s=0.2)
    alignment_constraints_from_labels([first, close], 100, 5, frame_rate=10.0)


def test_event_zero_anchored_late_is_infeasible():
    lab = AnchorLabel("item", event=0, time_s=3.0, tolerance_s=0.0)
    with pytest.raises(InfeasibleLabelsError) as info:
        alignment_constraints_from_labels([lab], 100, 5, frame_rate=10.0)
    assert info.value.label_ids == (lab.id,)


# ---------------------------------------------------------------- bad input


@pytest.mark.parametrize("S, match", [
    (np.zeros((0, 3)), "non-empty 2-d"),
    (np.zeros(5), "non-empty 2-d"),
    (np.zeros((3, 4)), "4 events need at least 4 frames"),
    (np.array([[0.0, np.nan], [1.0, 2.0], [0.0, 0.0]]), "row 0 contains NaN"),
    (np.array([[0.0, 1.0], [1.0, 2.0], [np.inf, 0.0]]), "row 2 contains NaN or infinite"),
])
def test_bad_scores_are_rejected_with_a_reason(S, match):
    with pytest.raises(ParameterError, match=match):
        align(S)


def test_bad_options_are_rejected_with_a_reason():
    S = np.zeros((6, 3))
    with pytest.raises(ParameterError, match="3 events need at least 9 frames with min_frames=3"):
        align(S, min_frames=3)
    with pytest.raises(ParameterError, match="min_frames: expected an integer >= 1, got 0"):
        align(S, min_frames=0)
    with pytest.raises(ParameterError, match="constraints: made for 2 events"):
        align(S, constraints=AlignmentConstraints([0, 1], [5, 5]))
    truth = Alignment([0, 2, 4], 6)
    with pytest.raises(ParameterError, match="loss: expected 'hamming' or 'onset', got 'l2'"):
        align_loss_augmented(S, truth, loss="l2")
    with pytest.raises(ParameterError, match="loss_scale: expected a finite number >= 0, got -1"):
        align_loss_augmented(S, truth, loss_scale=-1)
    with pytest.raises(ParameterError, match="truth: aligns 2 events over 6 frames"):
        align_loss_augmented(S, Alignment([0, 3], 6))
    with pytest.raises(ParameterError, match=r"expected_durations: expected shape \(3,\)"):
        align_with_duration_prior(S, [1, 2], weight=1.0)
    with pytest.raises(ParameterError, match="max_frames: 3 events of at most 1 frames cannot cover T=6"):
        align_with_duration_prior(S, [1, 2, 3], weight=1.0, max_frames=1)
    with pytest.raises(ParameterError, match="S: contains NaN"):
        align_with_duration_prior(np.full((6, 3), np.nan), [1, 2, 3], weight=1.0)
