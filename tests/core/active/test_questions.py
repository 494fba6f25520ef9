"""Questions narrow a part to where the best structure and its runner-up disagree (checked by brute force)."""

import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from marginalia.active.count_runner_up import PAIR_WIDTH
from marginalia.active.parts import Part
from marginalia.active.questions import alignment_question, count_kind, disputed_window, segmentation_question
from marginalia.active.segmentation_adapter import segmentation_part_pair
from marginalia.decoders.brute import brute_cost, brute_force_segmentations, brute_penalized
from marginalia.decoders.metric import metric_transform
from marginalia.exceptions import InfeasibleLabelsError
from marginalia.models.segmentation import SegmentationModel
from marginalia.types import AnchorLabel, MidiScore, Query, RegionKind, RegionLabel, Segmentation

from .test_count_runner_up import _neighbour_kind, _random_labels


def _holds(label: RegionLabel, changes) -> bool:
    n = sum(1 for c in changes if label.start < c < label.stop)
    lo, hi = label.kind.bounds
    return n >= lo and (hi is None or n <= hi)


def _brute_window(best, runner, start, stop):
    """Smallest [a, b) with a, b shared changes or part ends that holds every differing change."""
    b_set = {c for c in best if start < c < stop}
    r_set = {c for c in runner if start < c < stop}
    differ = b_set ^ r_set
    if not differ:
        return None
    ends = sorted({start, stop} | (b_set & r_set))
    fits = [(a, b) for a, b in itertools.combinations(ends, 2) if all(a < c < b for c in differ)]
    return min(fits, key=lambda ab: ab[1] - ab[0])


@pytest.mark.parametrize("seed", range(40))
def test_the_disputed_window_is_the_smallest_between_shared_changes(seed):
    rng = np.random.default_rng(seed)
    T = int(rng.integers(6, 40))
    best = sorted(rng.choice(np.arange(1, T), size=int(rng.integers(0, min(6, T - 1))), replace=False).tolist())
    runner = list(best)
    move = rng.integers(3)
    free = [c for c in range(1, T) if c not in best]
    if move == 0 and free:
        runner = sorted(runner + [int(rng.choice(free))])
    elif move == 1 and best:
        runner.remove(int(rng.choice(best)))
    elif len(free) >= 2:
        runner = sorted(runner + rng.choice(free, 2, replace=False).tolist())
    start, stop = 0, T
    assert disputed_window(best, runner, start, stop) == _brute_window(best, runner, start, stop)


@pytest.mark.parametrize("best, runner, kinds", [
    ([30], [30, 50], (RegionKind.ZERO, RegionKind.ONE)),            # the runner-up adds a change
    ([30, 50, 70], [30, 70], (RegionKind.ONE, RegionKind.ZERO)),    # the runner-up removes one
    ([30], [30, 50, 55], (RegionKind.ZERO, RegionKind.AT_LEAST_ONE)),  # a focal pair added
])
def test_each_answer_writes_one_count_label_that_only_its_structure_satisfies(best, runner, kinds):
    T = 100
    q = Query("it", 0, T, 0.5)
    positions = 1e6 + 1e5 * np.arange(T)
    question = segmentation_question(q, best, runner, 0.4, positions=positions, units="bp", item_name="1:2")
    model, = question.answers["model"]
    other, = question.answers["runner-up"]
    assert (model.kind, other.kind) == kinds
    assert (model.start, model.stop) == (other.start, other.stop) == question.region
    assert question.region == disputed_window(best, runner, 0, T)
    assert _holds(model, best) and not _holds(model, runner)
    assert _holds(other, runner) and not _holds(other, best)
    a, b = question.region
    assert question.sentence == (f"Is there a change between {positions[a] / 1e6:.1f} and "
                                 f"{positions[b - 1] / 1e6:.1f} Mb on 1:2?")
    v0, v1 = question.view
    assert v0 <= a and b <= v1
    assert set(question.best_marks) == {c for c in best if v0 < c < v1}


def test_no_question_when_they_agree_inside_the_part():
    q = Query("it", 0, 40, 0.5)
    assert segmentation_question(q, [10, 60], [10, 50], 1.0, positions=np.arange(100.0), units="index",
                                 item_name="x") is None


def test_count_kind():
    assert [count_kind(n) for n in (0, 1, 2, 5)] == [RegionKind.ZERO, RegionKind.ONE, RegionKind.AT_LEAST_ONE,
                                                    RegionKind.AT_LEAST_ONE]


def test_an_alignment_question_asks_about_the_one_event_that_moves_most():
    score = MidiScore(pitches=[60, 64, 67, 62, 65], onsets_s=[0, 0.5, 0.5, 1.0, 1.5], offsets_s=[0.5, 1, 1, 1.5, 2])
    best = np.array([0, 10, 20, 30])
    runner = np.array([0, 10, 26, 30])
    fr = 20.0
    q = Query("rec", 0, 4, 0.7)
    question = alignment_question(q, best, runner, best / fr, runner / fr, 0.3, score=score, n_frames=50)
    assert question.event == 2
    assert question.sentence == "Does this note (D4, event 2) start at 1.00 s or at 1.30 s?"
    model, = question.answers["model"]
    other, = question.answers["runner-up"]
    assert isinstance(model, AnchorLabel) and (model.event, model.time_s) == (2, 1.0)
    assert (other.event, other.time_s) == (2, 1.3)
    assert model.tolerance_s <= 0.15 and abs(other.time_s - model.time_s) > model.tolerance_s
    assert question.region == (20, 27) and question.view[0] <= 10 and question.view[1] >= 31
    # an anchored event is never asked about
    assert alignment_question(q, best, runner, best / fr, runner / fr, 0.3, n_frames=50, anchored=[2]) is None


@settings(max_examples=60, deadline=None)
@given(data=st.data(), T=st.integers(3, 9), min_size=st.integers(1, 2), warm=st.booleans())
def test_the_asked_region_is_where_the_best_and_its_brute_force_runner_up_differ(data, T, min_size, warm):
    """End to end on tiny labelled problems: the region a question asks about (what the engine asks on a
    chromosome, and what the active-learning replay's region questions ask) is the disputed window between the
    exact constrained optimum and a cheapest feasible neighbour with one or two changes more or fewer."""
    model = SegmentationModel(metric="diagonal", min_size=min_size)
    model.set_state({"feature_scale": np.ones(1), "penalty_scale": np.ones(1)}, n_features=1)
    rng = np.random.default_rng(data.draw(st.integers(0, 10_000)))
    X = rng.normal(size=(T, 1))
    X[T // 2:, 0] += data.draw(st.floats(0, 3))
    w = model.join_w(np.ones(1), data.draw(st.floats(0.01, 1.0)))
    labels = [lab for lab in _random_labels(data, T) if isinstance(lab, RegionLabel)]
    try:
        cons = model.constraints(labels, T)
        if cons is not None:
            cons.check_feasible(min_size)
    except InfeasibleLabelsError:
        return
    part = Part("x", 0, T)
    best, runner, margin = segmentation_part_pair(model, w, X, part, labels, warm=warm)
    metric, pen = model.decoder_metric(w, T)
    Z = metric_transform(X, metric)
    best_cost, _ = brute_penalized(Z, pen, min_size=min_size, constraints=cons)
    best_seg = Segmentation(changes=np.r_[best, T])
    assert brute_cost(Z, best_seg, pen) == pytest.approx(best_cost, rel=1e-9, abs=1e-9)
    rows = [(brute_cost(Z, s, pen), s) for s in brute_force_segmentations(T, min_size)
            if (cons is None or cons.is_satisfied_by(s)) and _neighbour_kind(best_seg, s, PAIR_WIDTH) is not None]
    if not rows:
        assert runner is None
        return
    cheapest = min(c for c, _ in rows)
    assert margin == pytest.approx((cheapest - best_cost) / pen, rel=1e-7, abs=1e-7)
    windows = {_brute_window(best.tolist(), s.breakpoints.tolist(), 0, T) for c, s in rows if c <= cheapest + 1e-9}
    question = segmentation_question(Query("x", 0, T, 0.5), best, runner, margin, positions=np.arange(T, dtype=float),
                                     units="index", item_name="x")
    assert question is not None and question.region in windows
    # each answer's count label holds for its own structure only, so the answer decides between the two
    a, b = question.region
    differ = set(best.tolist()) ^ set(runner.tolist())
    assert differ and all(a < c < b for c in differ)
    model_label, = question.answers["model"]
    runner_label, = question.answers["runner-up"]
    assert _holds(model_label, best) and not _holds(model_label, runner)
    assert _holds(runner_label, runner) and not _holds(runner_label, best)
