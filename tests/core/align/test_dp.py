"""marginalia.align.dp: the per-event duration-cost decoder against brute force, and its cost table."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from marginalia.align.dp import align_with_duration_costs, duration_costs, onset_moves
from marginalia.decoders.brute_alignment import all_alignments
from marginalia.exceptions import InfeasibleLabelsError, ParameterError


def objective(S, cost, onsets, gain):
    T = S.shape[0]
    ends = np.append(onsets[1:], T)
    if np.any(ends - onsets >= cost.shape[1]):
        return -math.inf
    return sum(S[a:b, e].sum() - cost[e, b - a] + gain[a, e] for e, (a, b) in enumerate(zip(onsets, ends)))


@st.composite
def problems(draw):
    T = draw(st.integers(2, 9))
    E = draw(st.integers(1, min(T, 4)))
    S = np.array(draw(st.lists(st.floats(-3, 3), min_size=T * E, max_size=T * E))).reshape(T, E)
    expected = np.array(draw(st.lists(st.floats(0, 5), min_size=E, max_size=E)))
    limits = np.array(draw(st.lists(st.integers(1, T), min_size=E, max_size=E)))
    weight = draw(st.floats(0, 3))
    free = draw(st.lists(st.integers(0, E - 1), max_size=2))
    gain = np.array(draw(st.lists(st.floats(0, 2), min_size=T * E, max_size=T * E))).reshape(T, E)
    return S, expected, limits, weight, free, gain


@pytest.mark.slow
@settings(max_examples=60, deadline=None)
@given(problems())
def test_decoder_matches_brute_force(problem):
    S, expected, limits, weight, free, gain = problem
    T, E = S.shape
    cost = duration_costs(expected, weight=weight, max_frames=limits, smoothing=1.0, long_knee=0.5, free=free)
    best = -math.inf
    for a in all_alignments(T, E):
        v = objective(S, cost, a.onsets, gain)
        best = max(best, v)
    if best == -math.inf:
        with pytest.raises(InfeasibleLabelsError):
            align_with_duration_costs(S, cost, limits, onset_gain=gain)
        return
    onsets = align_with_duration_costs(S, cost, limits, onset_gain=gain)
    assert onsets[0] == 0 and np.all(np.diff(onsets) >= 1) and onsets[-1] < T
    assert objective(S, cost, onsets, gain) == pytest.approx(best, abs=1e-9)


@pytest.mark.slow
@settings(max_examples=80, deadline=None)
@given(problems(), st.data())
def test_decoder_with_onset_windows_matches_brute_force(problem, data):
    """Windows on a few events (anchors) narrow every other event's starts too; the optimum stays exact."""
    S, expected, limits, weight, free, gain = problem
    T, E = S.shape
    lo, hi = np.zeros(E, np.int64), np.full(E, T - 1, np.int64)
    for e in data.draw(st.lists(st.integers(0, E - 1), max_size=2, unique=True)):
        a = data.draw(st.integers(0, T - 1))
        lo[e], hi[e] = a, data.draw(st.integers(a, T - 1))
    cost = duration_costs(expected, weight=weight, max_frames=limits, smoothing=1.0, long_knee=0.5, free=free)
    best = -math.inf
    for al in all_alignments(T, E):
        if np.all((al.onsets >= lo) & (al.onsets <= hi)):
            best = max(best, objective(S, cost, al.onsets, gain))
    if best == -math.inf:
        with pytest.raises(InfeasibleLabelsError):
            align_with_duration_costs(S, cost, limits, lo, hi, onset_gain=gain)
        return
    onsets = align_with_duration_costs(S, cost, limits, lo, hi, onset_gain=gain)
    assert np.all((onsets >= lo) & (onsets <= hi))
    assert objective(S, cost, onsets, gain) == pytest.approx(best, abs=1e-9)


def test_onset_windows_are_obeyed():
    rng = np.random.default_rng(0)
    S = rng.normal(size=(12, 3))
    cost = duration_costs([4, 4, 4], weight=0.0, max_frames=[12, 12, 12], smoothing=1.0, long_knee=1.0)
    on = align_with_duration_costs(S, cost, [12, 12, 12], onset_min=[0, 7, 9], onset_max=[0, 8, 10])
    assert 7 <= on[1] <= 8 and 9 <= on[2] <= 10
    with pytest.raises(InfeasibleLabelsError):
        align_with_duration_costs(S, cost, [12, 12, 12], onset_min=[0, 9, 9], onset_max=[0, 9, 9])


def test_cost_table_shape():
    cost = duration_costs([10.0, 10.0, 3.0], weight=2.0, max_frames=[30, 40, 5], smoothing=2.0,
                          long_knee=math.log(2.0), free=[2])
    assert cost.shape == (3, 41)
    assert np.all(np.isinf(cost[:, 0]))
    assert cost[0, 10] == 0.0 and np.isinf(cost[0, 31]) and np.isfinite(cost[1, 40])
    # the same |log ratio| costs the same up to the knee (ratio 2), and beyond it less for a long event:
    # (22 + 2) / 12 = 2 vs (4 + 2) / 12 = 1/2; (34 + 2) / 12 = 3 vs (2 + 2) / 12 = 1/3
    assert cost[1, 22] == pytest.approx(cost[1, 4])
    assert 0 < cost[1, 34] < cost[1, 2]
    assert cost[1, 2] == pytest.approx(2.0 * math.log(3.0) ** 2)
    assert np.all(np.diff(cost[1, 10:41]) > 0) and np.all(np.diff(cost[1, 1:11]) < 0)
    assert np.all(cost[2, 1:6] == 0.0) and np.all(np.isinf(cost[2, 6:]))


def test_bad_inputs_raise_parameter_errors():
    with pytest.raises(ParameterError, match="weight"):
        duration_costs([1.0], weight=-1.0, max_frames=[3], smoothing=1.0, long_knee=1.0)
    with pytest.raises(ParameterError, match="max_frames"):
        duration_costs([1.0, 2.0], weight=1.0, max_frames=[3], smoothing=1.0, long_knee=1.0)
    with pytest.raises(ParameterError, match="S"):
        align_with_duration_costs(np.full((3, 1), np.nan), np.zeros((1, 4)), [3])
    with pytest.raises(ParameterError, match="onset_gain"):
        align_with_duration_costs(np.zeros((3, 1)), np.zeros((1, 4)), [3], onset_gain=np.zeros((2, 1)))


def test_onset_gain_separates_repeated_notes():
    # two events with the same template: the frame scores cannot tell where the second starts, the gain can
    S = np.ones((10, 2))
    gain = np.zeros((10, 2))
    gain[7, 1] = 1.0
    cost = duration_costs([5, 5], weight=0.0, max_frames=[10, 10], smoothing=1.0, long_knee=1.0)
    assert align_with_duration_costs(S, cost, [10, 10], onset_gain=gain)[1] == 7


@pytest.mark.slow
@settings(max_examples=80, deadline=None)
@given(problems(), st.data())
def test_onset_moves_are_the_best_single_onset_changes(problem, data):
    """Each state's best move alone, within its window, scored by the whole objective: as enumerated."""
    S, expected, limits, weight, free, gain = problem
    T, E = S.shape
    cost = duration_costs(expected, weight=weight, max_frames=limits, smoothing=1.0, long_knee=0.5, free=free)
    alignments = list(all_alignments(T, E))
    feasible = [a for a in alignments if objective(S, cost, a.onsets, gain) > -math.inf]
    if not feasible:   # a move changes two durations only: its loss is defined from a feasible alignment
        return
    onsets = feasible[data.draw(st.integers(0, len(feasible) - 1))].onsets
    lo = np.array([data.draw(st.integers(0, T - 1)) for _ in range(E)])
    hi = np.minimum(lo + np.array([data.draw(st.integers(0, T)) for _ in range(E)]), T - 1)
    loss, moved_to, own = onset_moves(S, cost, limits, onsets, lo, hi, onset_gain=gain)
    here = objective(S, cost, onsets, gain)
    assert own.sum() == pytest.approx(here, abs=1e-9)
    assert loss[0] == math.inf and moved_to[0] == -1
    for e in range(1, E):
        moves = [a.onsets for a in alignments
                 if lo[e] <= a.onsets[e] <= hi[e] and a.onsets[e] != onsets[e]
                 and np.array_equal(np.delete(a.onsets, e), np.delete(onsets, e))]
        values = [objective(S, cost, m, gain) for m in moves]
        finite = [v for v in values if v > -math.inf]
        if not finite:
            assert loss[e] == math.inf and moved_to[e] == -1
            continue
        best = max(finite)
        assert loss[e] == pytest.approx(here - best, abs=1e-9)
        moved = onsets.copy()
        moved[e] = moved_to[e]
        assert objective(S, cost, moved, gain) == pytest.approx(best, abs=1e-9)
