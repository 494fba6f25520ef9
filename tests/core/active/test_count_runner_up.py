"""The count runner-up (one or two changes added or removed) and the local search that follows the optimum."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from marginalia.active.count_runner_up import count_runner_up, refine_with_runner_up, segment_count_runner_up
from marginalia.decoders.brute import brute_cost, brute_force_segmentations, brute_penalized
from marginalia.decoders.seg_constraints import constraints_from_labels
from marginalia.decoders.segmentation import segment_penalized
from marginalia.exceptions import InfeasibleLabelsError, ParameterError
from marginalia.types import BoundaryLabel, RegionLabel, Segmentation


def _neighbour_kind(best: Segmentation, other: Segmentation, width: int):
    """'add'/'remove'/'add-pair'/'remove-pair' when ``other`` is that move away from ``best``, else None."""
    b, o = set(best.breakpoints.tolist()), set(other.breakpoints.tolist())
    if b < o and len(o - b) == 1:
        return "add"
    if o < b and len(b - o) == 1:
        return "remove"
    ends = best.changes.tolist()
    if b < o and len(o - b) == 2:
        t1, t2 = sorted(o - b)
        same_segment = not any(t1 < c < t2 for c in b)
        return "add-pair" if same_segment and t2 - t1 <= width else None
    if o < b and len(b - o) == 2:
        c1, c2 = sorted(b - o)
        return "remove-pair" if ends.index(c2) == ends.index(c1) + 1 else None
    return None


def _random_labels(data, T):
    labels = []
    for _ in range(data.draw(st.integers(0, 2))):
        a = data.draw(st.integers(0, T - 2))
        b = data.draw(st.integers(a + 2, T))
        labels.append(RegionLabel(item_id="x", start=a, stop=b, kind=data.draw(st.sampled_from(["0", "1", ">=1"]))))
    if data.draw(st.booleans()):
        labels.append(BoundaryLabel(item_id="x", index=data.draw(st.integers(1, T - 1))))
    return labels


def _drawn_problem(data, T, p, start, min_size):
    """``(X, pen, cons)``: a (T, p) signal whose first column shifts at ``start``, a penalty and the
    constraints of drawn labels (None without labels); None when those labels cannot all hold."""
    rng = np.random.default_rng(data.draw(st.integers(0, 10_000)))
    X = rng.normal(size=(T, p))
    X[start:, 0] += data.draw(st.floats(0, 3))
    pen = data.draw(st.floats(0.05, 4.0))
    try:
        cons = constraints_from_labels(_random_labels(data, T), T)
        cons.check_feasible(min_size)
    except InfeasibleLabelsError:
        return None
    return X, pen, None if cons.is_empty else cons


@settings(max_examples=40, deadline=None)
@given(data=st.data(), T=st.integers(2, 9), p=st.integers(1, 2), min_size=st.integers(1, 2),
       width=st.integers(0, 3))
@pytest.mark.slow
def test_runner_up_is_the_cheapest_feasible_neighbour_by_brute_force(data, T, p, min_size, width):
    problem = _drawn_problem(data, T, p, T // 2, min_size)
    if problem is None:
        return
    X, pen, cons = problem
    best_cost, best = brute_penalized(X, pen, min_size=min_size, constraints=cons)
    r = count_runner_up(X, best, pen, min_size=min_size, constraints=cons, pair_width=width)
    rows = [(brute_cost(X, s, pen), s, _neighbour_kind(best, s, width))
            for s in brute_force_segmentations(T, min_size)
            if cons is None or cons.is_satisfied_by(s)]
    rows = [row for row in rows if row[2] is not None]
    if not rows:
        assert r.segmentation is None and r.delta == np.inf and r.move is None
        return
    cheapest = min(c for c, _, _ in rows)
    assert r.delta == pytest.approx(cheapest - best_cost, rel=1e-9, abs=1e-9)
    assert r.delta >= -1e-9  # best is optimal, so no allowed move is cheaper
    assert (cons is None or cons.is_satisfied_by(r.segmentation)) and min(np.diff(np.r_[0, r.segmentation.changes])) >= min_size
    assert brute_cost(X, r.segmentation, pen) == pytest.approx(cheapest, rel=1e-9, abs=1e-9)
    assert _neighbour_kind(best, r.segmentation, width) == r.move


@settings(max_examples=30, deadline=None)
@given(data=st.data(), T=st.integers(2, 9), min_size=st.integers(1, 2), width=st.integers(0, 3),
       reach=st.sampled_from([None, 1, 2]))
@pytest.mark.slow
def test_local_search_never_worsens_keeps_labels_and_stops_at_a_local_optimum(data, T, min_size, width, reach):
    problem = _drawn_problem(data, T, 1, T // 3, min_size)
    if problem is None:
        return
    X, pen, cons = problem
    feasible = [s for s in brute_force_segmentations(T, min_size) if cons is None or cons.is_satisfied_by(s)]
    start = feasible[data.draw(st.integers(0, len(feasible) - 1))]
    res, r = refine_with_runner_up(X, start, pen, min_size=min_size, constraints=cons, pair_width=width,
                                   move_reach=reach)
    assert res.cost <= brute_cost(X, start, pen) + 1e-9
    assert res.cost == pytest.approx(brute_cost(X, res.segmentation, pen), rel=1e-9, abs=1e-9)
    assert cons is None or cons.is_satisfied_by(res.segmentation)
    # a local optimum: no feasible add / remove (/ pair) move is cheaper, and the runner-up is the oracle's
    assert r == count_runner_up(X, res.segmentation, pen, min_size=min_size, constraints=cons, pair_width=width)
    assert r.delta >= -1e-9
    # from the exact optimum it stays there
    best_cost, best = brute_penalized(X, pen, min_size=min_size, constraints=cons)
    again, _ = refine_with_runner_up(X, best, pen, min_size=min_size, constraints=cons, pair_width=width,
                                     move_reach=reach)
    assert again.cost == pytest.approx(best_cost, rel=1e-9, abs=1e-9)


def test_a_focal_aberration_is_found_by_a_pair_move_not_by_single_moves():
    rng = np.random.default_rng(3)
    X = rng.normal(0, 0.1, (120, 1))
    X[60:66] += 3.0  # six probes up, then back: neither change alone pays its price
    start = Segmentation([120])
    alone, _ = refine_with_runner_up(X, start, 10.0, pair_width=0)
    paired, _ = refine_with_runner_up(X, start, 10.0, pair_width=8)
    assert alone.segmentation == start
    assert paired.segmentation.breakpoints.tolist() == [60, 66]
    assert paired.cost == pytest.approx(segment_penalized(X, 10.0).cost)


def test_segment_count_runner_up_pairs_the_exact_best_with_its_neighbour():
    rng = np.random.default_rng(0)
    X = rng.normal(0, 1, (200, 2))
    X[80:, 0] += 2.0
    best, second = segment_count_runner_up(X, 12.0)
    assert best.segmentation.breakpoints.tolist() == [80]
    assert second.cost >= best.cost
    assert abs(second.segmentation.n_segments - best.segmentation.n_segments) in (1, 2)
    # a part that cannot hold another segment has no runner-up
    best1, none = segment_count_runner_up(X[:1], 1.0)
    assert none is None and best1.segmentation.n_segments == 1


def test_bad_input_names_the_argument():
    X = np.zeros((10, 1))
    with pytest.raises(ParameterError, match="best"):
        count_runner_up(X, Segmentation([5]), 1.0)
    with pytest.raises(ParameterError, match="penalty"):
        count_runner_up(X, Segmentation([10]), -1.0)
    with pytest.raises(ParameterError, match="pair_width"):
        count_runner_up(X, Segmentation([10]), 1.0, pair_width=-1)
    with pytest.raises(ParameterError, match="metric"):
        count_runner_up(X, Segmentation([10]), 1.0, metric=np.ones(3))
    cons = constraints_from_labels([RegionLabel(item_id="x", start=0, stop=10, kind="0")], 10)
    with pytest.raises(ParameterError, match="start"):
        refine_with_runner_up(X, Segmentation([4, 10]), 1.0, constraints=cons)
    with pytest.raises(ParameterError, match="move_reach"):
        refine_with_runner_up(X, Segmentation([10]), 1.0, move_reach=0)


def test_local_search_takes_a_pair_removal_when_no_single_move_helps():
    """Found by hypothesis: two neighbouring changes cost more than none, yet each alone is worth keeping.

    The runner-up counts removing both as a move; the search must take it too, or its result is not a local
    optimum of its own move set (the runner-up then has a negative margin).
    """
    X = np.random.default_rng(3956).normal(size=(8, 1))
    res, r = refine_with_runner_up(X, Segmentation(np.array([1, 4, 8]), 8), 0.5, min_size=1, pair_width=0)
    assert res.segmentation.changes.tolist() == [8]
    assert res.cost == pytest.approx(brute_penalized(X, 0.5, min_size=1)[0])
    assert r.delta >= 0 and r == count_runner_up(X, res.segmentation, 0.5, min_size=1, pair_width=0)
