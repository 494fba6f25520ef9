"""SyncAligner.question: cheapest path through every cell (brute force), a repeat taken in one take, pauses."""

import numpy as np
import pytest

from marginalia.exceptions import ParameterError
from marginalia.sync import SyncAligner, SyncQuestion
from marginalia.sync.question import anchor_mask, ask, sounding_frames, through_costs

from .synthetic import SR, all_paths, pause_pair, repeat_pair, ringing_pair


@pytest.mark.parametrize("seed", range(4))
def test_through_costs_are_the_cheapest_path_through_every_cell(seed):
    rng = np.random.default_rng(seed)
    TA, TB = 4, 5
    C = rng.random((TA, TB))
    if seed % 2:
        anchor_mask(C, [(2, 1)])
    paths = [p for p in all_paths(TA, TB) if np.isfinite(C[p[:, 0], p[:, 1]].sum())]
    costs = np.array([C[p[:, 0], p[:, 1]].sum() for p in paths])
    through, lo, hi = through_costs(C)
    for i in range(TA):
        for j in range(TB):
            via = [c for c, p in zip(costs, paths) if any((p[:, 0] == i) & (p[:, 1] == j))]
            assert (np.isinf(through[i, j]) if not via else np.isclose(through[i, j], min(via)))
    best = paths[int(np.argmin(costs))]
    for i in range(TA):
        cols = best[best[:, 0] == i, 1]
        assert (lo[i], hi[i]) == (cols.min(), cols.max())


def test_on_silence_the_margin_is_not_zero():
    # a grid where every cell costs the same (both recordings silent): every monotone path used to tie
    C = np.full((30, 45), 0.3)
    i, j_best, j_alt, margin = ask(C, separation=4)
    assert margin > 0
    # the best path spreads the longer recording evenly: on the straight line between the corners
    assert abs(j_best - i * 44 / 29) <= 1.0
    assert abs(j_alt - j_best) >= 4


@pytest.fixture(scope="module")
def repeat():
    return repeat_pair()


@pytest.mark.slow
@pytest.mark.parametrize("max_cells", [2_000_000, 200_000])  # the whole grid; frames pooled twice
def test_a_repeat_taken_in_one_take_is_the_question(repeat, max_cells):
    ya, yb, on_a, on_b, n_a, n_p = repeat
    aligner = SyncAligner()
    q = aligner.question((ya, SR), (yb, SR), max_cells=max_cells)
    assert isinstance(q, SyncQuestion)
    p_start, p_end = on_a[n_a], on_a[n_a + n_p]
    assert p_start <= q.reference_s <= p_end
    # the two candidates: the reference's moment in P's first and second play
    first = np.interp(q.reference_s, on_a[n_a:n_a + n_p], on_b[n_a:n_a + n_p])
    second = np.interp(q.reference_s, on_a[n_a:n_a + n_p], on_b[n_a + n_p:n_a + 2 * n_p])
    got = sorted([q.best_target_s, q.alternative_target_s])
    assert abs(got[0] - first) < 0.05 and abs(got[1] - second) < 0.05
    # nearly as good as each other: the margin is a small part of the path's cost
    cost = aligner.predict((ya, SR), (yb, SR), runner_up=False).cost
    assert 0 < q.margin < 0.05 * cost


@pytest.mark.slow
def test_an_anchor_on_the_repeat_settles_it(repeat):
    ya, yb, on_a, on_b, n_a, n_p = repeat
    aligner = SyncAligner()
    before = aligner.question((ya, SR), (yb, SR))
    # the user says: the reference's P starts where the target's second play starts
    anchors = [[on_a[n_a], on_b[n_a + n_p]]]
    after = aligner.question((ya, SR), (yb, SR), anchors=anchors)
    assert after is None or after.margin > 3 * before.margin


@pytest.mark.slow
def test_an_answered_question_is_not_asked_again(repeat):
    ya, yb, on_a, on_b, n_a, n_p = repeat
    aligner = SyncAligner()
    fa, fb = aligner.compute_features(ya, SR), aligner.compute_features(yb, SR)
    anchors = []
    for _ in range(3):      # the person answers with a time between the two candidates, as a true onset can be
        q = aligner.question(fa, fb, anchors=anchors or None)
        if q is None:
            break
        assert all(abs(q.reference_s - r) > 0.25 for r, _ in anchors)
        anchors = sorted(anchors + [(q.reference_s, 0.5 * (q.best_target_s + q.alternative_target_s))])


@pytest.mark.slow
def test_a_pause_of_another_length_has_a_margin_and_is_asked_where_there_is_sound():
    ya, yb, on_a, on_b = pause_pair()
    aligner = SyncAligner()
    q = aligner.question((ya, SR), (yb, SR))
    assert q.margin > 0
    # audible: within the notes' ring (0.4 s) of an onset, not in the middle of the pause
    assert np.min(np.abs(q.reference_s - on_a)[on_a <= q.reference_s + 0.05]) < 0.5


def test_neither_the_lead_in_nor_the_ring_of_the_last_note_is_asked_about():
    ya, yb, on_a, on_b = ringing_pair()
    aligner = SyncAligner()
    q = aligner.question((ya, SR), (yb, SR))
    # the decoder's own runner-up leaves the path in the lead-in, where every path costs the same
    assert aligner.predict((ya, SR), (yb, SR)).margin == 0
    # the question: where the reference sounds, from its first attack to its last
    assert on_a[0] - 0.05 <= q.reference_s <= on_a[-1] + 0.05
    assert q.margin > 0


def test_sounding_frames_run_from_the_first_attack_to_the_last():
    ya, _, on_a, _ = ringing_pair()
    f = SyncAligner().compute_features(ya, SR)
    sounding = f.times()[sounding_frames(f.X)]
    assert abs(sounding.min() - on_a[0]) < 0.06 and abs(sounding.max() - on_a[-1]) < 0.06  # a frame or so
    # silence has no sounding frame, nor does a constant tone (no attack after its first frame)
    assert not sounding_frames(np.zeros((50, 25))).any()
    tone = np.ones((50, 25))
    assert sounding_frames(tone).sum() <= 1


def test_bad_separation_is_one_line(repeat):
    ya, yb, *_ = repeat
    with pytest.raises(ParameterError, match=r"separation_s: expected a finite number of seconds > 0"):
        SyncAligner().question((ya, SR), (yb, SR), separation_s=0)
