"""Carried times refined on the target's attacks: known shifts recovered, no attack no move, monotone, end to end."""

import numpy as np
import pytest

from marginalia.exceptions import ParameterError
from marginalia.sync import SyncAligner
from marginalia.sync.refine import TimeRefiner, attacks

from .synthetic import SR, stretched_pair

FRAME = 0.01


def impulses(T, events, q=12):
    """Attack frames: ``events`` of (frame, pitch class, strength), shape (T, q)."""
    A = np.zeros((T, q))
    for t, c, s in events:
        A[t, c] += s
    return A


def refiner(A, B, half=4, search=5):
    return TimeRefiner(A, B, (0.0, FRAME), (0.0, FRAME), half, search)


def test_attacks_are_the_rises_of_a_decaying_onset_descriptor():
    onset = np.zeros((8, 2))
    for t in range(3, 8):
        onset[t, 0] = 0.5 ** (t - 3)          # an attack at frame 3 in class 0, decaying
    onset[6, 1] = 2.0                          # and one at frame 6 in class 1
    expected = np.zeros((8, 2))
    expected[3, 0], expected[6, 1] = 1.0, 2.0
    np.testing.assert_allclose(attacks(onset), expected)


@pytest.mark.parametrize("shift", [-5, -2, 0, 1, 3, 5])
def test_a_known_shift_of_the_target_is_recovered_exactly(shift):
    events = [(20, 0, 1.0), (23, 4, 0.7), (26, 7, 1.3), (40, 2, 1.0), (44, 9, 0.5)]
    A = impulses(80, events)
    B = impulses(80, [(t + shift, c, s) for t, c, s in events])
    tr = np.array([0.20, 0.23, 0.40])
    out = refiner(A, B)(tr, tr)                 # the path put every time where the reference has it
    np.testing.assert_allclose(out, tr + shift * FRAME, atol=1e-12)


def test_a_shift_between_frames_is_interpolated():
    # a smooth attack (a bump three frames wide) moved by 2.5 frames
    t = np.arange(100, dtype=np.float64)
    bump = lambda c: np.exp(-0.5 * ((t - c) / 1.5) ** 2)  # noqa: E731
    A = np.zeros((100, 12))
    B = np.zeros((100, 12))
    A[:, 3], B[:, 3] = bump(50.0), bump(52.5)
    out = refiner(A, B)(np.array([0.50]), np.array([0.50]))
    assert abs(out[0] - 0.525) <= 0.25 * FRAME


def test_the_reference_times_offset_from_its_frame_is_kept():
    A = impulses(80, [(30, 0, 1.0)])
    B = impulses(80, [(33, 0, 1.0)])
    out = refiner(A, B)(np.array([0.304]), np.array([0.304]))
    np.testing.assert_allclose(out, [0.334], atol=1e-12)


def test_times_whose_windows_hold_no_attack_stay_where_the_path_put_them():
    A = impulses(200, [(20, 0, 1.0)])
    B = impulses(200, [(22, 0, 1.0)])
    tr = np.array([0.8, 1.5])                   # far from the only attack
    tm = np.array([0.83, 1.47])
    np.testing.assert_array_equal(refiner(A, B)(tr, tm), tm)
    # attacks in other pitch classes do not correlate either
    C = impulses(200, [(22, 5, 1.0)])
    np.testing.assert_array_equal(refiner(A, C)(np.array([0.2]), np.array([0.2])), [0.2])
    # nor do times past the end of a recording, whatever the attacks near its end
    D = impulses(30, [(28, 0, 1.0)])
    E = impulses(30, [(29, 0, 1.0)])
    np.testing.assert_array_equal(refiner(D, E)(np.array([0.29, 0.5]), np.array([0.31, 0.5])), [0.31, 0.5])


def test_no_time_moves_further_than_the_search():
    A = impulses(100, [(40, 0, 1.0)])
    B = impulses(100, [(49, 0, 1.0)])           # 9 frames away, search 5
    out = refiner(A, B, half=10, search=5)(np.array([0.40]), np.array([0.40]))
    assert abs(out[0] - 0.40) <= 5 * FRAME + 1e-12


def test_refined_times_are_monotone_in_reference_time_and_keep_the_input_shape():
    # two close reference attacks whose target counterparts come in the other order
    A = impulses(100, [(40, 0, 1.0), (42, 1, 1.0)])
    B = impulses(100, [(44, 0, 1.0), (38, 1, 1.0)])
    tr = np.array([[0.42, 0.40]])
    out = refiner(A, B, half=1)(tr, tr)
    assert out.shape == (1, 2)
    assert out[0, 0] >= out[0, 1] - 1e-12      # the later reference time is not carried before the earlier
    np.testing.assert_allclose(out[0, 1], 0.44, atol=1e-12)


def test_refinement_takes_a_path_that_is_off_back_to_the_onsets():
    from marginalia.sync import SyncResult
    ya, yb, on_a, on_b = stretched_pair(seed=1)
    aligner = SyncAligner(runner_up=False)
    fa, fb = aligner.compute_features(ya, SR), aligner.compute_features(yb, SR)
    good = aligner.predict(fa, fb)
    assert good.refiner is not None
    assert np.max(np.abs(good.map_times(on_a) - on_b)) <= 0.02
    # the same path moved 40 ms late in the target: alone it carries every onset about 40 ms late
    late = SyncResult(good.warping, good.reference_times_s, good.target_times_s + 0.04, good.cost)
    assert np.median(np.abs(late.map_times(on_a) - on_b)) >= 0.035
    fixed = SyncResult(good.warping, good.reference_times_s, good.target_times_s + 0.04, good.cost,
                       refiner=good.refiner)
    assert np.max(np.abs(fixed.map_times(on_a) - on_b)) <= 0.02
    # chroma features hold no onset descriptors: nothing to refine on
    assert SyncAligner(features="chroma", runner_up=False).predict((ya, SR), (yb, SR)).refiner is None
    assert SyncAligner(refine_s=0, runner_up=False).predict(fa, fb).refiner is None


@pytest.mark.parametrize("kw", [{"refine_s": -0.1}, {"refine_window_s": 0}, {"refine_s": float("nan")},
                                {"step_cost": -0.5}, {"step_cost": float("inf")}])
def test_bad_refinement_options_are_one_line(kw):
    with pytest.raises(ParameterError) as err:
        SyncAligner(**kw).predict(np.zeros((4, 25)), np.zeros((4, 25)))
    assert "\n" not in str(err.value) and next(iter(kw)) in str(err.value)
