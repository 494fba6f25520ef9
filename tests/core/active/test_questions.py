"""Questions narrow a part to where the best structure and its runner-up disagree (checked by brute force)."""

import itertools

import numpy as np
import pytest

from marginalia.active.questions import alignment_question, count_kind, disputed_window, segmentation_question
from marginalia.types import AnchorLabel, MidiScore, Query, RegionKind, RegionLabel


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
