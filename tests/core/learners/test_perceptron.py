import numpy as np
import pytest

from marginalia.exceptions import NotFittedError, ParameterError
from marginalia.learners.perceptron import StructuredPerceptron
from marginalia.metrics import region_errors
from marginalia.models.segmentation import SegmentationModel
from marginalia.types import RegionKind, RegionLabel, Segmentation


def data(rng, n=5, T=120):
    Xs, Ys, labels = [], [], []
    for i in range(n):
        X = rng.normal(0, 1, (T, 2))
        X[60:, 0] += 2.0
        X[25:, 1] += 2.0   # irrelevant
        Xs.append(X)
        Ys.append(Segmentation([60, T]))
        labels.append([RegionLabel(item_id=str(i), start=5, stop=45, kind=RegionKind.ZERO),
                       RegionLabel(item_id=str(i), start=50, stop=70, kind=RegionKind.ONE)])
    return Xs, Ys, labels


def test_fit_learns_a_better_metric_than_euclidean():
    rng = np.random.default_rng(0)
    Xs, Ys, _ = data(rng)
    model = SegmentationModel(loss="frobenius")
    p = StructuredPerceptron(model, max_iter=15, random_state=0).fit(Xs, Ys)
    assert len(p.mistakes_) >= 1 and p.n_updates_ >= 1
    Xt, Yt, _ = data(rng, n=3)
    learned = np.mean([model.loss(y, p.predict(X)) for X, y in zip(Xt, Yt)])
    w0 = SegmentationModel().initial_w(Xs)
    euclid = np.mean([model.loss(y, model.decode(X, w0)) for X, y in zip(Xt, Yt)])
    assert learned < euclid and learned < 0.2


def test_partial_fit_from_labels_fixes_the_labelled_item():
    rng = np.random.default_rng(1)
    Xs, _, labels = data(rng, n=4)
    model = SegmentationModel()
    p = StructuredPerceptron(model, averaged=False)
    for _ in range(5):
        for X, lab in zip(Xs, labels):
            p.partial_fit(X, lab)
    errs = [region_errors(l, p.predict(X)).errors for X, l in zip(Xs, labels)]
    assert sum(errs) == 0 and p.n_updates_ >= 1
    B = np.diag(model.metric_matrix(p.w_))
    assert B[0] > B[1]


def test_fixed_step_rule():
    rng = np.random.default_rng(4)
    X = rng.normal(0, 1, (30, 2))
    X[15:, 0] += 3
    model = SegmentationModel(loss="hamming")
    p = StructuredPerceptron(model, step="perceptron", learning_rate=0.01, averaged=False)
    y = Segmentation([15, 30])
    w0 = model.default_w([X])
    y_hat = model.decode(X, w0)
    p.partial_fit(X, y)
    expected = w0 if y_hat == y else model.project(w0 + 0.01 * (model.joint_feature(X, y) - model.joint_feature(X, y_hat)))
    assert np.allclose(p.w_, expected)


def test_no_update_when_already_right():
    rng = np.random.default_rng(2)
    X = rng.normal(0, 0.1, (40, 1))
    X[20:] += 5
    model = SegmentationModel(loss="hamming")
    p = StructuredPerceptron(model, loss_augmented=False)
    p.partial_fit(X, Segmentation([20, 40]))
    assert p.n_updates_ == 0 and np.allclose(p.w_, model.default_w())


def test_errors():
    m = SegmentationModel()
    with pytest.raises(NotFittedError):
        StructuredPerceptron(m).predict(np.zeros((4, 1)))
    with pytest.raises(ParameterError, match="step"):
        StructuredPerceptron(m, step="adam").partial_fit(np.zeros((4, 1)), Segmentation([4]))


def test_labels_already_respected_cost_one_decode_and_no_update(monkeypatch):
    rng = np.random.default_rng(5)
    X = rng.normal(0, 0.1, (60, 1))
    X[30:] += 5
    model = SegmentationModel()
    p = StructuredPerceptron(model)
    labels = [RegionLabel(item_id="x", start=20, stop=40, kind=RegionKind.ONE)]
    p.partial_fit(X, labels)
    calls = {"n": 0}
    orig = model.decode

    def counting(*a, **k):
        calls["n"] += 1
        return orig(*a, **k)
    monkeypatch.setattr(model, "decode", counting)
    w_before = p.w_.copy()
    p.partial_fit(X, labels)
    assert calls["n"] == 1 and np.allclose(p.w_, w_before)


def test_two_threads_make_the_same_updates_as_one():
    rng = np.random.default_rng(7)
    Xs, _, labels = data(rng, n=4)
    runs = []
    for n_jobs in (1, 2):
        model = SegmentationModel()
        p = StructuredPerceptron(model, n_jobs=n_jobs)
        for _ in range(3):
            for X, lab in zip(Xs, labels):
                p.partial_fit(X, lab)
        runs.append((p.w_.copy(), p.n_updates_))
    assert runs[0][1] == runs[1][1] >= 1
    np.testing.assert_array_equal(runs[0][0], runs[1][0])
    with pytest.raises(ParameterError, match="n_jobs"):
        StructuredPerceptron(SegmentationModel(), n_jobs=0).partial_fit(Xs[0], labels[0])
