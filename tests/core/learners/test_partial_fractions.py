"""Partial labels in the sense of thesis §4.5.3: the segment of a fraction of the samples is revealed."""

import numpy as np
import pytest

from benchmarks.speed.learning import revealed_labels as benchmark_revealed_labels
from marginalia.learners.partial import PartialLabelSSVM
from marginalia.learners.ssvm import SSVM
from marginalia.models.segmentation import SegmentationModel, label_violations
from marginalia.types import Segmentation


def revealed_labels(rng, y, fraction, item_id="x"):
    """The partial labels benchmarks/speed/learning.py measures with (so this tests the ones it uses)."""
    return benchmark_revealed_labels(rng, y, y.n_samples, fraction, item_id)


def series(rng, n, T=80, p=4):
    """Changes in features 0-1; feature 2 has one irrelevant change; feature 3 is noise."""
    Xs, Ys = [], []
    for _ in range(n):
        a = int(rng.integers(15, 35))
        b = int(rng.integers(a + 15, T - 12))
        X = rng.normal(0, 1, (T, p))
        X[a:b, :2] += 1.6        # the middle segment stands out in features 0 and 1
        X[int(rng.integers(10, T - 10)):, 2] += 2.5
        Xs.append(X)
        Ys.append(Segmentation([a, b, T]))
    return Xs, Ys


def test_revealed_labels_hold_for_the_truth_and_determine_it_at_full_fraction():
    rng = np.random.default_rng(0)
    Xs, Ys = series(rng, 3)
    model = SegmentationModel(loss="frobenius", partial_loss="completion")
    for X, y in zip(Xs, Ys):
        for frac in (0.1, 0.3, 1.0):
            assert label_violations(revealed_labels(rng, y, frac), y) == 0
        # all samples revealed: the only segmentation respecting the labels is the truth, whatever w
        target = model.make_target(X, revealed_labels(rng, y, 1.0))
        assert target.completion == y


def test_complete_strategy_with_every_sample_revealed_is_the_full_label_ssvm():
    rng = np.random.default_rng(1)
    Xs, Ys = series(rng, 5)
    labels = [revealed_labels(rng, y, 1.0, str(i)) for i, y in enumerate(Ys)]
    model = SegmentationModel(loss="frobenius", partial_loss="completion")
    full = SSVM(model, C=1.0, max_iter=10, random_state=0).fit(Xs, Ys)
    part = PartialLabelSSVM(model, C=1.0, strategy="complete", max_outer=3, inner_max_iter=10,
                            random_state=0).fit(Xs, labels)
    # the SSVM starts from the penalty tuned on its own targets; the completion round from the one tuned on the
    # labels: both regularise towards 0, so the solutions agree
    np.testing.assert_allclose(part.w_, full.w_, rtol=1e-6, atol=1e-9)


@pytest.mark.slow
@pytest.mark.parametrize("strategy,inner,loss", [("complete", "bundle", "completion"),
                                                 ("bridge", "bcfw", "completion"),
                                                 ("bridge", "bcfw", "violations")])
def test_half_the_samples_revealed_learn_about_as_well_as_full_labels(strategy, inner, loss):
    rng = np.random.default_rng(2)
    Xs, Ys = series(rng, 8)
    Xt, Yt = series(rng, 12)
    fmodel = SegmentationModel(loss="frobenius")
    full = SSVM(fmodel, C=0.1, max_iter=15, random_state=0).fit(Xs, Ys)
    full_loss = np.mean([fmodel.loss(y, fmodel.decode(X, full.w_)) for X, y in zip(Xt, Yt)])
    euclid = fmodel.initial_w(Xs, Ys)
    euclid_loss = np.mean([fmodel.loss(y, fmodel.decode(X, euclid)) for X, y in zip(Xt, Yt)])
    labels = [revealed_labels(rng, y, 0.5, str(i)) for i, y in enumerate(Ys)]
    model = SegmentationModel(loss="frobenius", partial_loss=loss)
    learner = PartialLabelSSVM(model, C=0.1, strategy=strategy, inner=inner,
                               max_outer=4, inner_max_iter=15, random_state=0).fit(Xs, labels)
    loss_partial = np.mean([model.loss(y, model.decode(X, learner.w_)) for X, y in zip(Xt, Yt)])
    assert euclid_loss > 2 * full_loss + 0.05          # the problem needs a learned metric
    # 12 test series: one extra mistake moves the mean Frobenius loss by ~0.1
    assert loss_partial <= full_loss + 0.15
    assert loss_partial < 0.4 * euclid_loss
    B = np.diag(model.metric_matrix(learner.w_))
    assert min(B[0], B[1]) > B[2]        # the irrelevant change is not followed
    curve = np.array(learner.objective_curve_)
    assert np.all(np.diff(curve) <= 1e-9 * np.maximum(1, np.abs(curve[:-1]))) or strategy == "complete"


def test_bcfw_inner_rejects_bad_parameters():
    from marginalia.exceptions import ParameterError
    X = np.random.default_rng(0).normal(size=(20, 1))
    with pytest.raises(ParameterError, match="inner"):
        PartialLabelSSVM(SegmentationModel(), inner="newton").fit([X], [[]])
    with pytest.raises(ParameterError, match="n_jobs"):
        PartialLabelSSVM(SegmentationModel(), n_jobs=0).fit([X], [[]])
