"""Training windows cut around the labels of long sequences (the metric step of the aCGH recipe)."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from marginalia.cgh.training_windows import training_windows, window_training_set
from marginalia.exceptions import ParameterError
from marginalia.models.segmentation import label_violations
from marginalia.types import BoundaryLabel, RegionKind, RegionLabel, Segmentation

K = RegionKind


def _region(a, b, kind=K.ZERO):
    return RegionLabel(item_id="s", start=a, stop=b, kind=kind)


def test_a_short_sequence_is_one_window_with_its_labels_unchanged():
    labels = [_region(10, 50), _region(60, 70, K.ONE)]
    (win,) = training_windows(500, labels, max_length=600, margin=100)
    assert (win.start, win.stop) == (0, 500) and list(win.labels) == labels


def test_labels_far_apart_get_their_own_windows_with_context():
    labels = [_region(1000, 1100, K.ONE), BoundaryLabel(item_id="s", index=5000), _region(5100, 5200)]
    wins = training_windows(20_000, labels, max_length=1000, margin=200)
    assert [(w.start, w.stop) for w in wins] == [(800, 1300), (4799, 5400)]
    assert [(lab.start, lab.stop) for lab in wins[0].labels] == [(200, 300)]
    bound, region = wins[1].labels
    assert bound.index == 201 and (region.start, region.stop) == (301, 401)


def test_a_long_no_change_region_is_cut_at_its_end_facing_another_label():
    labels = [_region(100, 30_000), _region(30_010, 30_100, K.ONE)]
    (win,) = training_windows(97_000, labels, max_length=6000, margin=1000)
    zero, one = win.labels
    assert win.start + zero.stop == 30_000 and zero.stop - zero.start == 2000
    assert (win.start + one.start, win.start + one.stop) == (30_010, 30_100)


def test_a_change_holding_region_too_long_for_a_window_is_left_out():
    labels = [_region(100, 9000, K.ONE), _region(20_000, 20_300)]
    (win,) = training_windows(50_000, labels, max_length=6000, margin=1000)
    assert [(win.start + lab.start, lab.kind) for lab in win.labels] == [(20_000, K.ZERO)]
    assert training_windows(50_000, labels[:1], max_length=6000, margin=1000) == []


def test_bad_window_sizes_are_refused():
    with pytest.raises(ParameterError, match="margin"):
        training_windows(100, [], max_length=100, margin=50)


@settings(max_examples=60, deadline=None)
@given(st.integers(0, 10_000))
def test_windows_never_state_more_than_the_labels(seed):
    # any segmentation obeying the sequence's labels obeys every window's labels
    rng = np.random.default_rng(seed)
    T = int(rng.integers(200, 3000))
    changes = np.unique(rng.integers(1, T, size=int(rng.integers(0, 12))))
    cuts = np.r_[0, changes, T]
    labels = []
    for _ in range(int(rng.integers(1, 8))):
        a = int(rng.integers(0, T - 2))
        b = int(rng.integers(a + 2, min(T, a + 800) + 1))
        n = int(np.sum((changes > a) & (changes < b)))
        kind = K.ZERO if n == 0 else (K.ONE if n == 1 else K.AT_LEAST_ONE)
        labels.append(_region(a, b, kind))
    if changes.size:
        labels.append(BoundaryLabel(item_id="s", index=int(changes[0])))
    truth = Segmentation(cuts[1:], T)
    assert label_violations(labels, truth) == 0
    wins = training_windows(T, labels, max_length=400, margin=60)
    assert all(0 <= w.start < w.stop <= T and w.n_samples <= 400 and w.labels for w in wins)
    for w in wins:
        inside = changes[(changes > w.start) & (changes < w.stop)] - w.start
        assert label_violations(list(w.labels), Segmentation(np.r_[inside, w.n_samples], w.n_samples)) == 0
    # every label that fits in a window is in one
    kept = sum(len(w.labels) for w in wins)
    fits = sum(1 for lab in labels if not isinstance(lab, RegionLabel) or lab.stop - lab.start <= 280
               or lab.kind in (K.ZERO, K.SAME))
    assert kept == (len(labels) if T <= 400 else fits)


def test_window_training_set_slices_features_and_records_sources():
    X_short, X_long = np.arange(20.0)[:, None], np.arange(3000.0)[:, None]
    Xw, Yw, source = window_training_set([X_short, X_long], [[_region(2, 8)], [_region(100, 120), _region(2500, 2600)]],
                                         max_length=400, margin=50)
    assert source.tolist() == [0, 1, 1] and Xw[0] is X_short
    assert Xw[1][0, 0] == 50.0 and Xw[1].shape == (120, 1) and Xw[2][0, 0] == 2450.0
    assert [(lab.start, lab.stop) for lab in Yw[2]] == [(50, 150)]
