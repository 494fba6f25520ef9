import numpy as np
import pytest

from marginalia.exceptions import ParameterError
from marginalia.learners.ssvm import SSVM
from marginalia.learners.transfer import TransferSSVM
from marginalia.models.segmentation import SegmentationModel
from marginalia.types import Segmentation


def dataset(rng, shift, n=3, T=60):
    Xs, Ys = [], []
    for _ in range(n):
        X = rng.normal(0, 1, (T, 2))
        X[30:, 0] += shift[0]
        X[30:, 1] += shift[1]
        Xs.append(X)
        Ys.append(Segmentation([30, T]))
    return Xs, Ys


def setup():
    rng = np.random.default_rng(0)
    Xa, Ya = dataset(rng, (2.5, 1.0))
    Xb, Yb = dataset(rng, (1.0, 2.5))
    model = SegmentationModel(loss="frobenius")
    model.initial_w(Xa + Xb)  # shared units for every learner below
    return model, Xa, Ya, Xb, Yb


def close(a, b, rel):
    return np.linalg.norm(a - b) <= rel * max(np.linalg.norm(a), np.linalg.norm(b))


@pytest.mark.slow
def test_rho_zero_is_independent_training_and_infinity_is_union(monkeypatch):
    model, Xa, Ya, Xb, Yb = setup()
    monkeypatch.setattr(model, "fit_scales", lambda Xs: model)
    kw = dict(C=1.0, max_iter=120, tol=1e-4, random_state=0)
    t0 = TransferSSVM(model, rho=0.0, averaging=False, **kw).fit(Xa + Xb, Ya + Yb, ["a"] * 3 + ["b"] * 3)
    sa = SSVM(model, averaging=False, **kw).fit(Xa, Ya)
    sb = SSVM(model, averaging=False, **kw).fit(Xb, Yb)
    assert np.all(t0.w_raw_["a"] > 0) and np.all(t0.w_raw_["b"] > 0)  # interior: projection inactive
    assert close(t0.w_datasets_["a"], sa.w_, 0.05) and close(t0.w_datasets_["b"], sb.w_, 0.05)
    tinf = TransferSSVM(model, rho=np.inf, averaging=False, **kw).fit(Xa + Xb, Ya + Yb, ["a"] * 3 + ["b"] * 3)
    su = SSVM(model, averaging=False, **dict(kw, C=0.5)).fit(Xa + Xb, Ya + Yb)
    assert close(tinf.w_datasets_["a"], tinf.w_datasets_["b"], 1e-9)
    assert close(tinf.w_, su.w_, 0.05)
    # in between: the per-dataset vectors are pulled together
    tmid = TransferSSVM(model, rho=1.0, averaging=False, **kw).fit(Xa + Xb, Ya + Yb, ["a"] * 3 + ["b"] * 3)
    def dist(t):
        return np.linalg.norm(t.w_datasets_["a"] - t.w_datasets_["b"])

    assert dist(tinf) < dist(tmid) < dist(t0)


def test_errors():
    model, Xa, Ya, _, _ = setup()
    with pytest.raises(ParameterError, match="rho"):
        TransferSSVM(model, rho=-1).fit(Xa, Ya, ["a"] * 3)
    with pytest.raises(ParameterError, match="datasets"):
        TransferSSVM(model).fit(Xa, Ya, ["a"])


def cone_setup():
    """Two datasets whose third feature carries an irrelevant change: its learned weight hits the cone (0)."""
    rng = np.random.default_rng(1)

    def ds(shift, n=3, T=50):
        Xs, Ys = [], []
        for _ in range(n):
            X = rng.normal(0, 1, (T, 3))
            c = int(rng.integers(15, 35))
            X[c:, :2] += shift
            X[int(rng.integers(5, 45)):, 2] += 2.5
            Xs.append(X)
            Ys.append(Segmentation([c, T]))
        return Xs, Ys

    Xa, Ya = ds((2.5, 1.0))
    Xb, Yb = ds((1.0, 2.5))
    model = SegmentationModel(loss="frobenius")
    model.initial_w(Xa + Xb)
    return model, Xa + Xb, Ya + Yb, ["a"] * 3 + ["b"] * 3


@pytest.mark.slow
def test_infinite_coupling_is_union_training_on_the_cone(monkeypatch):
    # the iterates cross the cone's faces: a learner that only projects at the end drifts from union training
    model, Xs, Ys, keys = cone_setup()
    monkeypatch.setattr(model, "fit_scales", lambda Xs: model)
    for averaging in (False, True):
        kw = dict(max_iter=20, tol=1e-6, random_state=0, averaging=averaging)
        t = TransferSSVM(model, rho=np.inf, C=1.0, **kw).fit(Xs, Ys, keys)
        s = SSVM(model, C=0.5, **kw).fit(Xs, Ys)
        np.testing.assert_allclose(t.w_datasets_["a"], s.w_, rtol=1e-6, atol=1e-12)
        np.testing.assert_allclose(t.w_datasets_["b"], s.w_, rtol=1e-6, atol=1e-12)
        assert len(t.loss_curve_) == len(t.gap_curve_) == t.n_iter_


@pytest.mark.slow
def test_one_dataset_is_plain_ssvm_for_any_coupling(monkeypatch):
    model, Xs, Ys, _ = cone_setup()
    monkeypatch.setattr(model, "fit_scales", lambda Xs: model)
    s = SSVM(model, C=1.0, max_iter=15, random_state=3).fit(Xs, Ys)
    for rho in (0.0, 2.0):
        t = TransferSSVM(model, rho=rho, C=1.0, max_iter=15, random_state=3).fit(Xs, Ys, ["x"] * len(Xs))
        np.testing.assert_allclose(t.w_datasets_["x"], s.w_, rtol=1e-6, atol=1e-12)
        np.testing.assert_allclose(np.array(t.loss_curve_) / len(Xs), s.loss_curve_, rtol=1e-6)


def test_uncoupled_penalty_stays_per_dataset_while_the_metric_is_shared(monkeypatch):
    model, Xs, Ys, keys = cone_setup()
    monkeypatch.setattr(model, "fit_scales", lambda Xs: model)
    t = TransferSSVM(model, rho=np.inf, uncoupled=[-1], C=1.0, max_iter=10, random_state=0).fit(Xs, Ys, keys)
    wa, wb = t.w_datasets_["a"], t.w_datasets_["b"]
    np.testing.assert_allclose(wa[:-1], wb[:-1], rtol=1e-12)
    assert abs(wa[-1] - wb[-1]) > 1e-3 * max(wa[-1], wb[-1])
