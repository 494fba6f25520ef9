"""WarmSegmenter: exact when it must be, local refinement between, same answers as the exact decoder on small steps."""

import numpy as np
import pytest

from marginalia.active.warm_segmenter import WarmSegmenter
from marginalia.decoders.seg_constraints import constraints_from_labels
from marginalia.decoders.segmentation import segment_penalized
from marginalia.exceptions import ParameterError
from marginalia.types import RegionLabel


def _signal(seed=0, T=400):
    rng = np.random.default_rng(seed)
    X = rng.normal(0, 1, (T, 2))
    X[120:, 0] += 2.0
    X[250:262, 1] -= 3.0  # a short aberration in the second feature
    return X


def test_small_steps_are_followed_locally_and_match_the_exact_decoder():
    X = _signal()
    warm = WarmSegmenter(refresh=0.25)
    rng = np.random.default_rng(1)
    metric, pen = np.array([1.0, 1.0]), 20.0
    for _step in range(12):
        best = warm.decode("p", X, X, pen, metric=metric)
        exact = segment_penalized(X, pen, metric=metric)
        assert best.segmentation == exact.segmentation
        assert best.cost == pytest.approx(exact.cost, rel=1e-9)
        metric = metric * np.exp(0.01 * rng.standard_normal(2))
        pen *= float(np.exp(0.01 * rng.standard_normal()))
    assert warm.n_exact_ == 1 and warm.n_refined_ == 11


def test_exact_again_after_a_large_drift_new_labels_or_another_owner():
    X = _signal()
    warm = WarmSegmenter(refresh=0.2)
    m = np.array([1.0, 1.0])
    warm.decode("p", X, X, 20.0, metric=m)
    warm.decode("p", X, X, 20.0, metric=m)
    assert (warm.n_exact_, warm.n_reused_) == (1, 1)
    warm.decode("p", X, X, 30.0, metric=m)  # +50 % penalty
    assert warm.n_exact_ == 2
    cons = constraints_from_labels([RegionLabel(item_id="x", start=100, stop=140, kind="0")], X.shape[0])
    res = warm.decode("p", X, X, 30.0, metric=m, constraints=cons)
    assert warm.n_exact_ == 3 and cons.is_satisfied_by(res.segmentation)
    Y = X.copy()
    warm.decode("p", Y, Y, 30.0, metric=m, constraints=cons)
    assert warm.n_exact_ == 4
    warm.clear()
    warm.decode("p", Y, Y, 30.0, metric=m, constraints=cons)
    assert warm.n_exact_ == 5


def test_runner_up_comes_with_the_best():
    X = _signal()
    warm = WarmSegmenter()
    best, r = warm.best_and_runner_up("p", X, X, 20.0, metric=np.ones(2))
    assert r.segmentation is not None and r.delta >= 0
    assert abs(r.segmentation.n_segments - best.segmentation.n_segments) in (1, 2)


def test_bad_parameters_are_refused():
    with pytest.raises(ParameterError, match="refresh"):
        WarmSegmenter(refresh=-1)
    with pytest.raises(ParameterError, match="max_entries"):
        WarmSegmenter(max_entries=0)
    with pytest.raises(ParameterError, match="move_reach"):
        WarmSegmenter(move_reach=0)
    with pytest.raises(ParameterError, match="owner"):
        WarmSegmenter().decode("p", 3, np.zeros((5, 1)), 1.0)
