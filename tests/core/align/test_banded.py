"""marginalia.align.banded: the coarse-to-fine decode in a band against the full decoder on random problems."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from marginalia.align import banded
from marginalia.align.banded import align_in_band, align_multiresolution, duration_cost_rows, onset_moves_factored
from marginalia.align.dp import align_with_duration_costs, duration_costs, onset_moves
from marginalia.exceptions import InfeasibleLabelsError, ParameterError


def objective(S, cost, onsets, gain):
    T = S.shape[0]
    ends = np.append(onsets[1:], T)
    if np.any(ends - onsets >= cost.shape[1]) or np.any(ends - onsets < 1):
        return -math.inf
    return sum(S[a:b, e].sum() - cost[e, b - a] + gain[a, e] for e, (a, b) in enumerate(zip(onsets, ends)))


@st.composite
def problems(draw, max_T=60):
    """A planted alignment (events lasting 1-9 frames) seen through noisy factored scores."""
    seed = draw(st.integers(0, 2 ** 31 - 1))
    rng = np.random.default_rng(seed)
    E = draw(st.integers(1, 12))
    durations = rng.integers(1, 10, E)
    T = int(durations.sum())
    if T > max_T:
        durations = np.maximum(durations * max_T // T, 1)
        T = int(durations.sum())
    K = 4
    B = rng.normal(size=(E, K))
    truth = np.repeat(np.arange(E), durations)
    noise = draw(st.floats(0.0, 3.0))
    A = B[truth] + noise * rng.normal(size=(T, K))
    C = np.abs(rng.normal(size=(T, 2)))
    D = np.abs(rng.normal(size=(E, 2))) * draw(st.floats(0.0, 2.0))
    expected = durations * rng.uniform(0.5, 2.0, E)
    limits = np.minimum(rng.integers(3, 20, E), T)
    limits[-1] = T
    weight = draw(st.floats(0.0, 3.0))
    free = [0] if draw(st.booleans()) else []
    return A, B, C, D, expected, limits, weight, free


def solved(problem):
    """``(A, B, C, D, limits, S, gain, cost, rows, full)``: the factors, the dense and row tables of ``problem``
    and the full decoder's optimum on them (None when no alignment obeys the limits)."""
    A, B, C, D, expected, limits, weight, free = problem
    kw = dict(weight=weight, max_frames=limits, smoothing=1.0, long_knee=0.5, free=free)
    S, gain, cost = A @ B.T, C @ D.T, duration_costs(expected, **kw)
    try:
        full = align_with_duration_costs(S, cost, limits, onset_gain=gain)
    except InfeasibleLabelsError:
        full = None
    return A, B, C, D, limits, S, gain, cost, duration_cost_rows(expected, **kw), full


@settings(max_examples=150, deadline=None)
@given(problems(), st.data())
def test_a_band_that_holds_the_full_optimum_gives_it(problem, data):
    A, B, C, D, limits, S, gain, cost, rows, full = solved(problem)
    T, E = S.shape
    if full is None:
        with pytest.raises(InfeasibleLabelsError):
            align_in_band(A, B, rows, limits, np.zeros(E), np.full(E, T - 1), C=C, D=D)
        return
    best = objective(S, cost, full, gain)
    below = np.array(data.draw(st.lists(st.integers(0, 5), min_size=E, max_size=E)))
    above = np.array(data.draw(st.lists(st.integers(0, 5), min_size=E, max_size=E)))
    onsets, value = align_in_band(A, B, rows, limits, full - below, full + above, C=C, D=D)
    assert value == pytest.approx(best, abs=1e-9)
    assert objective(S, cost, onsets, gain) == pytest.approx(best, abs=1e-9)
    assert np.all((onsets >= full - below) & (onsets <= full + above))


@settings(max_examples=150, deadline=None)
@given(problems(), st.one_of(st.integers(1, 4), st.lists(st.integers(1, 4), min_size=2, max_size=3)),
       st.integers(1, 3))
def test_coarse_to_fine_is_exact_in_its_final_band_and_the_full_optimum_when_that_holds_it(problem, factor, margin):
    A, B, C, D, limits, S, gain, cost, rows, full = solved(problem)
    T, E = S.shape
    if full is None:
        with pytest.raises(InfeasibleLabelsError):
            align_multiresolution(A, B, rows, limits, C=C, D=D, factor=factor, margin=margin)
        return
    info = {}
    onsets = align_multiresolution(A, B, rows, limits, C=C, D=D, factor=factor, margin=margin, info=info)
    lo, hi = info["onset_min"], info["onset_max"]
    assert np.all((onsets >= lo) & (onsets <= hi))
    # no onset sits on an edge of the band (the recording's own bounds aside), and the band holds every
    # alignment within the radius (2 x margin x factor frames) of the result
    strict_lo, strict_hi = banded._strict_windows(np.zeros(E, np.int64), np.full(E, T - 1, np.int64), T)
    assert not np.any((onsets == lo) & (lo > strict_lo) | (onsets == hi) & (hi < strict_hi))
    radius = 2 * margin * max(np.atleast_1d(factor))
    near_lo, near_hi = banded._strict_windows(onsets - radius, onsets + radius, T)
    assert np.all((lo <= near_lo) & (hi >= near_hi))
    # the exact optimum inside the final band ...
    _, in_band = align_in_band(A, B, rows, limits, lo, hi, C=C, D=D)
    got, best = objective(S, cost, onsets, gain), objective(S, cost, full, gain)
    assert got == pytest.approx(in_band, abs=1e-9)
    assert got <= best + 1e-9
    # ... which is the full optimum whenever the band holds it
    if np.all((full >= lo) & (full <= hi)):
        assert got == pytest.approx(best, abs=1e-9)


@settings(max_examples=60, deadline=None)
@given(problems())
def test_a_band_as_wide_as_the_recording_is_the_full_decoder(problem):
    A, B, C, D, limits, S, gain, cost, rows, full = solved(problem)
    T, E = S.shape
    if full is None:
        return
    for factor, margin in ((1, 1), (2, T)):
        onsets = align_multiresolution(A, B, rows, limits, C=C, D=D, factor=factor, margin=margin)
        assert objective(S, cost, onsets, gain) == pytest.approx(objective(S, cost, full, gain), abs=1e-9)


def test_planted_alignments_of_long_recordings_are_found_coarse_to_fine():
    """Thousands of frames: the coarse path lands near the planted one and the band decode equals the full one."""
    rng = np.random.default_rng(3)
    for _ in range(10):
        E = 150
        durations = rng.integers(2, 40, E)
        T = int(durations.sum())
        B = rng.normal(size=(E, 6))
        A = B[np.repeat(np.arange(E), durations)] + 1.5 * rng.normal(size=(T, 6))
        C = np.abs(rng.normal(size=(T, 3)))
        D = np.abs(rng.normal(size=(E, 3)))
        limits = np.full(E, 80)
        limits[[0, -1]] = T
        kw = dict(weight=2.0, max_frames=limits, smoothing=2.0, long_knee=math.log(2.0), free=[0])
        cost, rows = duration_costs(durations, **kw), duration_cost_rows(durations, **kw)
        full = align_with_duration_costs(A @ B.T, cost, limits, onset_gain=C @ D.T)
        info = {}
        got = align_multiresolution(A, B, rows, limits, C=C, D=D, factor=8, margin=4, info=info)
        np.testing.assert_array_equal(got, full)
        assert info["coarse"] and info["cells"] < 0.3 * T * E


def test_a_fast_passage_misread_at_one_resolution_is_found_in_the_union_with_a_finer_one():
    """Sixty events of 1-3 frames between slow ones: pooled 8 frames at a time the coarse decode misplaces the
    passage by about 100 frames, and no band around it holds the optimum; joined with the band of frames
    pooled 4 at a time, the decode finds the full optimum."""
    rng = np.random.default_rng(1)
    durations = np.concatenate([rng.integers(15, 40, 30), rng.integers(1, 4, 60), rng.integers(15, 40, 30)])
    E, T = durations.size, int(durations.sum())
    B = rng.normal(size=(E, 6))
    A = B[np.repeat(np.arange(E), durations)] + 1.5 * rng.normal(size=(T, 6))
    C, D = np.abs(rng.normal(size=(T, 3))), np.abs(rng.normal(size=(E, 3)))
    limits = np.full(E, 80)
    limits[[0, -1]] = T
    kw = dict(weight=2.0, max_frames=limits, smoothing=2.0, long_knee=math.log(2.0), free=[0])
    cost, rows = duration_costs(durations, **kw), duration_cost_rows(durations, **kw)
    S, gain = A @ B.T, C @ D.T
    full = align_with_duration_costs(S, cost, limits, onset_gain=gain)
    best = objective(S, cost, full, gain)
    one = align_multiresolution(A, B, rows, limits, C=C, D=D, factor=8, margin=4, slack=5.0)
    assert objective(S, cost, one, gain) < best - 100 and np.abs(one - full).max() > 50
    info = {}
    both = align_multiresolution(A, B, rows, limits, C=C, D=D, factor=(8, 4), margin=4, slack=5.0, info=info)
    np.testing.assert_array_equal(both, full)
    # a later decode of the same scores under other duration costs reads at 8 frames only, its first band
    # joined with this final band: the passage is still found
    kw2 = dict(kw, weight=1.0)
    cost2, rows2 = duration_costs(durations * 1.2, **kw2), duration_cost_rows(durations * 1.2, **kw2)
    full2 = align_with_duration_costs(S, cost2, limits, onset_gain=gain)
    alone = align_multiresolution(A, B, rows2, limits, C=C, D=D, factor=8, margin=4, slack=5.0)
    assert np.abs(alone - full2).max() > 50
    seeded = align_multiresolution(A, B, rows2, limits, C=C, D=D, factor=8, margin=4, slack=5.0,
                                   band=(info["onset_min"], info["onset_max"]))
    np.testing.assert_array_equal(seeded, full2)
    with pytest.raises(ParameterError, match="band"):
        align_multiresolution(A, B, rows2, limits, C=C, D=D, band=(info["onset_min"][:3], info["onset_max"]))


def test_anchors_bind_the_band_and_an_empty_window_is_infeasible():
    rng = np.random.default_rng(0)
    T, E = 200, 20
    A, B = rng.normal(size=(T, 3)), rng.normal(size=(E, 3))
    kw = dict(weight=0.5, max_frames=np.full(E, T), smoothing=1.0, long_knee=1.0)
    rows = duration_cost_rows(np.full(E, 10.0), **kw)
    lo, hi = np.zeros(E, np.int64), np.full(E, T - 1, np.int64)
    lo[7], hi[7] = 150, 152
    on = align_multiresolution(A, B, rows, np.full(E, T), lo, hi, factor=4, margin=1)
    assert 150 <= on[7] <= 152 and np.all(np.diff(on) >= 1)
    S, dense = A @ B.T, duration_costs(np.full(E, 10.0), **kw)
    full = align_with_duration_costs(S, dense, np.full(E, T), lo, hi)
    assert objective(S, dense, on, np.zeros((T, E))) <= objective(S, dense, full, np.zeros((T, E))) + 1e-9
    lo[19], hi[19] = 100, 120    # the last event before the anchored seventh
    with pytest.raises(InfeasibleLabelsError):
        align_multiresolution(A, B, rows, np.full(E, T), lo, hi)


def test_widening_stops_at_the_callers_windows(monkeypatch):
    """With one round of widening allowed, the touched events open to their whole window at once."""
    monkeypatch.setattr(banded, "_MAX_ROUNDS", 1)
    rng = np.random.default_rng(1)
    T, E = 300, 10
    A, B = rng.normal(size=(T, 3)), rng.normal(size=(E, 3))
    limits = np.full(E, T)
    kw = dict(weight=0.0, max_frames=limits, smoothing=1.0, long_knee=1.0)
    rows = duration_cost_rows(np.full(E, 30.0), **kw)
    full = align_with_duration_costs(A @ B.T, duration_costs(np.full(E, 30.0), **kw), limits)
    got = align_multiresolution(A, B, rows, limits, factor=10, margin=1)
    S, dense = A @ B.T, duration_costs(np.full(E, 30.0), **kw)
    assert objective(S, dense, got, np.zeros((T, E))) <= objective(S, dense, full, np.zeros((T, E))) + 1e-9


@settings(max_examples=60, deadline=None)
@given(problems(), st.data())
def test_moves_from_the_factors_are_the_moves_from_the_tables(problem, data):
    A, B, C, D, limits, S, gain, cost, rows, onsets = solved(problem)
    T, E = S.shape
    if onsets is None:
        return
    band = data.draw(st.integers(1, 6))
    lo, hi = np.maximum(onsets - band, 0), np.minimum(onsets + band, T - 1)
    want = onset_moves(S, cost, limits, onsets, lo, hi, onset_gain=gain)
    got = onset_moves_factored(A, B, rows, limits, onsets, lo, hi, C=C, D=D)
    for w, g in zip(want, got):
        np.testing.assert_allclose(g, w, atol=1e-9)


def test_cost_rows_are_the_rows_of_the_table():
    kw = dict(weight=2.0, max_frames=[30, 40, 5], smoothing=2.0, long_knee=math.log(2.0), free=[2])
    table = duration_costs([10.0, 10.0, 3.0], **kw)
    values, offsets = duration_cost_rows([10.0, 10.0, 3.0], **kw)
    for e, m in enumerate([30, 40, 5]):
        np.testing.assert_array_equal(values[offsets[e]:offsets[e] + m + 1], table[e, :m + 1])
    with pytest.raises(ParameterError, match="weight"):
        duration_cost_rows([1.0], weight=-1.0, max_frames=[3], smoothing=1.0, long_knee=1.0)


def test_bad_inputs_raise_parameter_errors():
    rows = duration_cost_rows([2.0], weight=1.0, max_frames=[5], smoothing=1.0, long_knee=1.0)
    with pytest.raises(ParameterError, match="A/B"):
        align_multiresolution(np.full((5, 2), np.nan), np.zeros((1, 2)), rows, [5])
    with pytest.raises(ParameterError, match="C/D"):
        align_multiresolution(np.zeros((5, 2)), np.zeros((1, 2)), rows, [5], C=np.zeros((4, 1)), D=np.zeros((1, 1)))
    with pytest.raises(ParameterError, match="factor"):
        align_multiresolution(np.zeros((5, 2)), np.zeros((1, 2)), rows, [5], factor=0)
    with pytest.raises(ParameterError, match="cost_rows"):
        align_multiresolution(np.zeros((5, 2)), np.zeros((1, 2)), rows[0], [5])
    A, B = np.zeros((5, 2)), np.zeros((1, 2))
    for bad in ([0], [5, 5], [[5]]):      # every entry point refuses limits the kernels would index past
        with pytest.raises(ParameterError, match="max_frames"):
            align_multiresolution(A, B, rows, bad)
        with pytest.raises(ParameterError, match="max_frames"):
            align_in_band(A, B, rows, bad, [0], [4])
        with pytest.raises(ParameterError, match="max_frames"):
            onset_moves_factored(A, B, rows, bad, [0])


def test_it_gives_up_when_the_band_widens_for_too_many_events():
    gave_up = 0
    for seed in range(10):
        rng = np.random.default_rng(seed)
        T, E = 300, 10
        A, B = rng.normal(size=(T, 3)), rng.normal(size=(E, 3))
        limits = np.full(E, T)
        rows = duration_cost_rows(np.full(E, 30.0), weight=0.0, max_frames=limits, smoothing=1.0, long_knee=1.0)
        plain, tried = {}, {}
        got = align_multiresolution(A, B, rows, limits, factor=10, margin=1, info=plain)
        quit_ = align_multiresolution(A, B, rows, limits, factor=10, margin=1, give_up=0.0, info=tried)
        if plain["widened"]:
            assert quit_ is None and tried["gave_up"]
            gave_up += 1
        else:
            np.testing.assert_array_equal(quit_, got)
    assert gave_up > 0
