import numpy as np
import pytest

from marginalia.exceptions import NotFittedError, ParameterError
from marginalia.learners.ssvm import SSVM
from marginalia.metrics import region_errors
from marginalia.models.segmentation import SegmentationModel
from marginalia.types import RegionKind, RegionLabel, Segmentation


def toy(rng, n=8, T=200):
    """Thesis §4.5.1: only coordinate 0 carries the true changes (first and third segment share a mean),
    coordinate 1 is noise, coordinate 2 has an irrelevant change."""
    Xs, Ys = [], []
    for _ in range(n):
        X = rng.normal(0, 1, (T, 3))
        X[85:130, 0] += 2.0
        X[60:, 2] += 2.0
        Xs.append(X)
        Ys.append(Segmentation([85, 130, T]))
    return Xs, Ys


@pytest.mark.slow
def test_toy_metric_selects_the_relevant_coordinate():
    rng = np.random.default_rng(0)
    Xs, Ys = toy(rng)
    model = SegmentationModel(metric="diagonal", loss="hamming")
    learner = SSVM(model, C=0.1, max_iter=40, random_state=0).fit(Xs, Ys)
    B = np.diag(model.metric_matrix(learner.w_))
    assert B[0] / B.sum() >= 0.9
    Xt, Yt = toy(rng, n=4)
    learned = np.mean([model.loss(y, model.decode(X, learner.w_)) for X, y in zip(Xt, Yt)])
    euclid = np.mean([model.loss(y, model.decode(X, model.initial_w(Xs, Ys))) for X, y in zip(Xt, Yt)])
    assert learned < euclid


def test_duality_gap_closes_and_curves_are_recorded():
    rng = np.random.default_rng(1)
    Xs = [rng.normal(0, 1, (120, 2)) for _ in range(4)]
    Ys = [Segmentation([50, 80, 120])] * 4
    for X in Xs:
        X[50:80, 0] += 3
    calls = []
    s = SSVM(SegmentationModel(loss="hamming"), C=0.1, max_iter=60, tol=1e-2, random_state=0,
             callback=lambda l, it: calls.append(it)).fit(Xs, Ys)
    assert len(s.loss_curve_) == len(s.gap_curve_) == s.n_iter_ == len(calls)
    assert s.n_iter_ < 60 and s.gap_curve_[-1] <= 1e-2 * max(1.0, s.loss_curve_[-1])
    assert s.gap_curve_[-1] < 0.05 * s.gap_curve_[0]
    assert np.all(s.w_ >= 0)


def test_learns_from_region_labels_only():
    rng = np.random.default_rng(2)
    Xs, labels = [], []
    for i in range(6):
        X = rng.normal(0, 1, (150, 2))
        X[70:, 0] += 1.5       # the labelled change
        X[30:, 1] += 1.5       # a change the labels say is not there
        Xs.append(X)
        labels.append([RegionLabel(item_id=str(i), start=10, stop=50, kind=RegionKind.ZERO),
                       RegionLabel(item_id=str(i), start=55, stop=90, kind=RegionKind.ONE)])
    model = SegmentationModel(partial_loss="violations")
    s = SSVM(model, C=1.0, max_iter=30, random_state=0).fit(Xs, labels)
    errs = sum(region_errors(l, model.decode(X, s.w_)).errors for X, l in zip(Xs, labels))
    assert errs == 0
    B = np.diag(model.metric_matrix(s.w_))
    assert B[0] > B[1]


def test_should_stop_ends_early_with_usable_parameters():
    rng = np.random.default_rng(3)
    Xs = [rng.normal(0, 1, (80, 2)) for _ in range(3)]
    Ys = [Segmentation([40, 80])] * 3
    count = {"n": 0}

    def stop():
        count["n"] += 1
        return count["n"] > 4
    s = SSVM(SegmentationModel(), max_iter=50, should_stop=stop).fit(Xs, Ys)
    assert s.stopped_early_ and s.n_iter_ <= 2 and np.all(np.isfinite(s.w_))


def test_bad_training_sets():
    X = np.random.default_rng(0).normal(size=(30, 2))
    m = SegmentationModel()
    with pytest.raises(ParameterError, match="2 targets"):
        SSVM(m).fit([X], [Segmentation([30]), Segmentation([30])])
    with pytest.raises(ParameterError, match="at least one"):
        SSVM(m).fit([], [])
    with pytest.raises(ParameterError, match="C"):
        SSVM(m, C=-1).fit([X], [Segmentation([30])])
    bad = X.copy()
    bad[3, 1] = np.nan
    with pytest.raises(ParameterError, match="non-finite"):
        SSVM(m).fit([bad, X], [Segmentation([30])] * 2)
    with pytest.warns(UserWarning, match="single labelled"):
        SSVM(m, max_iter=3).fit([X], [Segmentation([15, 30])])
    with pytest.raises(NotFittedError):
        SSVM(m).predict([X])


def test_unit_step_root_finds_the_root_of_a_decreasing_derivative():
    from marginalia.learners.ssvm import unit_step_root
    kinked = lambda g: 1.0 - 3.0 * min(g, 0.2) - 0.25 * max(g - 0.2, 0.0)  # noqa: E731 - 0.2 > 0 at g = 1
    assert unit_step_root(kinked, 1 / 3, 1.0, bisections=50) == 1.0      # still >= 0 at 1: the full step
    steep = lambda g: 1.0 - 5.0 * g if g < 0.1 else 0.5 - 2.0 * g       # noqa: E731 - root at 0.25
    assert abs(unit_step_root(steep, 0.2, 1.0, bisections=50) - 0.25) < 1e-12
    assert abs(unit_step_root(steep, 0.2, 1.0, bisections=40) - 0.25) < 1e-9
    affine = lambda g: 0.6 - 2.0 * g                                       # noqa: E731
    assert unit_step_root(affine, 0.3, 0.6, bisections=50) == 0.3         # the closed-form guess is kept


def test_predict_before_fit_is_refused_by_every_learner():
    from marginalia.learners.partial import PartialLabelSSVM
    from marginalia.sync.frank_wolfe import WarpingFrankWolfe
    from marginalia.sync.model import WarpingModel
    for learner in (SSVM(SegmentationModel()), PartialLabelSSVM(SegmentationModel()), WarpingFrankWolfe(WarpingModel())):
        with pytest.raises(NotFittedError, match=f"{type(learner).__name__}: call fit"):
            learner.predict([np.zeros((3, 1))])
