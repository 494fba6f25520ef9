"""WarpingFrankWolfe: recovers a relevant-coordinate metric, dual bookkeeping, duality, sklearn conventions."""

import numpy as np
import pytest

from marginalia.decoders.warping import dtw, warping_area_loss
from marginalia.exceptions import InfeasibleLabelsError, NotFittedError, ParameterError
from marginalia.learners.ssvm import SSVM
from marginalia.sync.frank_wolfe import WarpingFrankWolfe
from marginalia.sync.model import WarpingModel, warping_matrix
from marginalia.types import WarpAnchorLabel


def warp_times(T, rng):
    rates = np.convolve(np.exp(0.6 * rng.normal(size=T)), np.ones(5) / 5, mode="same")
    t = np.concatenate([[0.0], np.cumsum(rates[:-1])])
    return t / t[-1]


def make_pair(rng, TA, TB, p=3, noise=1.0):
    """Coordinate 0 samples one smooth signal at two warped clocks; the others are noise.

    The true warping matches the frames whose clock times are closest (a DTW on the times).
    """
    f, ph, a = rng.uniform(1, 4, 3), rng.uniform(0, 2 * np.pi, 3), rng.uniform(0.5, 1.0, 3)

    def signal(t):
        return (a[:, None] * np.sin(2 * np.pi * f[:, None] * t[None] + ph[:, None])).sum(0)

    u, v = warp_times(TA, rng), warp_times(TB, rng)
    A, B = rng.normal(scale=noise, size=(TA, p)), rng.normal(scale=noise, size=(TB, p))
    A[:, 0] = signal(u) + 0.05 * rng.normal(size=TA)
    B[:, 0] = signal(v) + 0.05 * rng.normal(size=TB)
    return (A, B), dtw(u[:, None], v[:, None]).warping


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(0)
    train = [make_pair(rng, 20, 24, p=5) for _ in range(6)]
    test = [make_pair(rng, 20, 24, p=5) for _ in range(6)]
    return [x for x, _ in train], [y for _, y in train], test


def mean_test_area(model, w, test):
    return np.mean([warping_area_loss(y, model.decode(x, w)) for x, y in test])


@pytest.mark.slow
@pytest.mark.parametrize("metric,loss,C", [("diagonal", "hamming", 10.0), ("diagonal", "area", 1000.0),
                                           ("full", "area", 1000.0)])
def test_learns_the_relevant_coordinate_and_beats_euclidean_dtw(data, metric, loss, C):
    Xs, Ys, test = data
    model = WarpingModel(metric, loss)
    fw = WarpingFrankWolfe(model, C=C, max_iter=40, random_state=0).fit(Xs, Ys)
    share = model.normalized_metric(fw.w_)
    assert share[0, 0] >= 0.8
    euclid = mean_test_area(model, model.initial_w(Xs), test)
    learned = mean_test_area(model, fw.w_, test)
    assert learned < 0.5 * euclid


@pytest.mark.parametrize("loss", ["hamming", "area"])
def test_dual_increases_and_matches_its_blocks(data, loss):
    Xs, Ys, _ = data
    model = WarpingModel("diagonal", loss)
    fw = WarpingFrankWolfe(model, C=100.0, max_iter=8, tol=0, random_state=1).fit(Xs, Ys)
    dual = np.array(fw.dual_curve_)
    assert np.all(np.diff(dual) >= -1e-9 * np.abs(dual[1:]).max())
    assert np.all(np.array(fw.gap_curve_) >= -1e-9)
    assert np.all(np.array(fw.loss_curve_) >= dual)
    # recompute D(Z) from scratch from the stored points of the hull (area) or ψ_i (Hamming)
    n, lam = len(Xs), 1.0 / (100.0 * len(Xs))
    s = np.zeros(model.n_params())
    f = 0.0
    for X, Y, b in zip(Xs, Ys, fw._blocks):
        if b.Z is not None:
            # a point of the hull: every path holds both corners
            assert b.Z[0, 0] == pytest.approx(1) and b.Z[-1, -1] == pytest.approx(1)
            assert b.Z.min() >= -1e-12 and b.Z.max() <= 1 + 1e-12
            psi = model.joint_feature(X, Y) - model.joint_feature_relaxed(X, b.Z)
            assert np.allclose(psi, b.psi)
            assert model.relaxed_loss(Y, b.Z) == pytest.approx(b.f, rel=1e-8, abs=1e-8)
        s += b.psi / n
        f += b.f / n
    ps = model.project(s)
    assert -ps @ ps / (2 * lam) + f == pytest.approx(dual[-1], rel=1e-8)
    assert np.allclose(fw.w_, ps / lam)


def exact_hamming_primal(model, Xs, Ys, w, lam):
    hinge = 0.0
    for X, Y in zip(Xs, Ys):
        y = model.loss_augmented_decode(X, Y, w)
        hinge += model.loss(Y, y) - w @ (model.joint_feature(X, Y) - model.joint_feature(X, y))
    return 0.5 * lam * w @ w + hinge / len(Xs)


@pytest.mark.slow
def test_hamming_fit_closes_the_duality_gap_and_agrees_with_the_generic_ssvm(data):
    Xs, Ys, _ = data
    C = 1.0
    lam = 1.0 / (C * len(Xs))
    model = WarpingModel("diagonal", "hamming")
    fw = WarpingFrankWolfe(model, C=C, max_iter=150, tol=1e-3, random_state=0).fit(Xs, Ys)
    primal = exact_hamming_primal(model, Xs, Ys, fw.w_, lam)
    dual = fw.dual_curve_[-1]
    assert dual <= primal + 1e-9
    assert primal - dual <= 0.03 * primal
    ssvm = SSVM(WarpingModel("diagonal", "hamming"), C=C, max_iter=60, tol=1e-3, averaging=False,
                random_state=0).fit(Xs, Ys)
    p_ssvm = exact_hamming_primal(model, Xs, Ys, ssvm.w_, lam)
    assert dual <= p_ssvm + 1e-9  # weak duality against another learner's w
    assert primal == pytest.approx(p_ssvm, rel=0.05)


def test_sklearn_conventions_callback_stop_and_warm_start(data):
    Xs, Ys, _ = data
    model = WarpingModel("diagonal", "area")
    with pytest.raises(NotFittedError):
        WarpingFrankWolfe(model).predict(Xs)
    seen = []
    fw = WarpingFrankWolfe(model, C=100.0, max_iter=3, tol=0, random_state=0,
                           callback=lambda learner, it: seen.append(it))
    assert fw.fit(Xs, Ys) is fw and seen == [0, 1, 2] and fw.n_iter_ == 3
    first = fw.dual_curve_[-1]
    fw.warm_start = True
    fw.fit(Xs, Ys)
    assert fw.dual_curve_[0] >= first - 1e-9  # continued from the previous dual state
    preds = fw.predict(Xs)
    assert len(preds) == len(Xs) and preds[0].shape == Ys[0].shape
    calls = []
    stopper = WarpingFrankWolfe(model, C=100.0, max_iter=50, tol=0,
                                should_stop=lambda: calls.append(1) or len(calls) > 4).fit(Xs, Ys)
    assert stopper.stopped_early_ and stopper.n_iter_ == 1 and hasattr(stopper, "w_")


def test_anchor_labels_as_targets(data):
    Xs, Ys, _ = data
    labels = [[WarpAnchorLabel("p", ta=int(c[0]), tb=int(c[1])) for c in y.path[::4]] for y in Ys]
    model = WarpingModel("diagonal", "hamming")
    fw = WarpingFrankWolfe(model, C=10.0, max_iter=5, random_state=0).fit(Xs, labels)
    for t, labs in zip(fw.targets_, labels):
        cells = {tuple(c) for c in t.path}
        assert all((lab.ta, lab.tb) in cells for lab in labs)


def test_bad_parameters_and_data():
    rng = np.random.default_rng(2)
    (X, Y) = make_pair(rng, 6, 7)
    model = WarpingModel()
    with pytest.raises(ParameterError, match="C"):
        WarpingFrankWolfe(model, C=0).fit([X, X], [Y, Y])
    with pytest.raises(ParameterError, match="max_iter"):
        WarpingFrankWolfe(model, max_iter=0).fit([X, X], [Y, Y])
    with pytest.raises(ParameterError, match="Ys has"):
        WarpingFrankWolfe(model).fit([X, X], [Y])
    with pytest.raises(ParameterError, match="non-finite"):
        WarpingFrankWolfe(model).fit([(np.full_like(X[0], np.nan), X[1]), X], [Y, Y])
    with pytest.warns(UserWarning, match="single"):
        WarpingFrankWolfe(model, max_iter=2).fit([X], [Y])
    assert warping_matrix(Y).sum() == Y.path.shape[0]


def test_constant_features_warn_instead_of_a_silent_zero_metric():
    rng = np.random.default_rng(3)
    (_, Y) = make_pair(rng, 6, 7)
    X = (np.ones((6, 2)), np.ones((7, 2)))
    for loss in ("hamming", "area"):
        with pytest.warns(UserWarning, match="metric is zero"):
            fw = WarpingFrankWolfe(WarpingModel(loss=loss), max_iter=3).fit([X, X], [Y, Y])
        assert np.all(np.isfinite(fw.w_))


def test_crossing_anchor_labels_are_infeasible():
    rng = np.random.default_rng(4)
    (X, Y) = make_pair(rng, 6, 7)
    labels = [WarpAnchorLabel("p", ta=1, tb=5, id="a"), WarpAnchorLabel("p", ta=4, tb=2, id="b")]
    with pytest.raises(InfeasibleLabelsError) as err:
        WarpingFrankWolfe(WarpingModel(), max_iter=2).fit([X, X], [labels, Y])
    assert set(err.value.label_ids) == {"a", "b"}
