import numpy as np
import pytest

from core.exceptions import ParameterError
from core.learners.ssvm import SSVM
from core.learners.transfer import TransferSSVM
from core.models.segmentation import SegmentationModel
from core.types import Segmentation


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


def test_rho_zero_is_independent_training_and_infinity_is_union(monkeypatch):
    model, Xa, Ya, Xb, Yb = setup()
    monkeypatch.setattr(model, "fit_scales", lambda Xs: model)
    kw = dict(C=1.0, max_iter=120, tol=1e-4, random_state=0)
    t0 = TransferSSVM(model, rho=0.0, **kw).fit(Xa + Xb, Ya + Yb, ["a"] * 3 + ["b"] * 3)
    sa = SSVM(model, averaging=False, **kw).fit(Xa, Ya)
    sb = SSVM(model, averaging=False, **kw).fit(Xb, Yb)
    assert np.all(t0.w_raw_["a"] > 0) and np.all(t0.w_raw_["b"] > 0)  # interior: projection inactive
    assert close(t0.w_datasets_["a"], sa.w_, 0.05) and close(t0.w_datasets_["b"], sb.w_, 0.05)
    tinf = TransferSSVM(model, rho=np.inf, **kw).fit(Xa + Xb, Ya + Yb, ["a"] * 3 + ["b"] * 3)
    su = SSVM(model, averaging=False, **dict(kw, C=0.5)).fit(Xa + Xb, Ya + Yb)
    assert close(tinf.w_datasets_["a"], tinf.w_datasets_["b"], 1e-9)
    assert close(tinf.w_, su.w_, 0.05)
    # in between: the per-dataset vectors are pulled together
    tmid = TransferSSVM(model, rho=1.0, **kw).fit(Xa + Xb, Ya + Yb, ["a"] * 3 + ["b"] * 3)
    dist = lambda t: np.linalg.norm(t.w_datasets_["a"] - t.w_datasets_["b"])
    assert dist(tinf) < dist(tmid) < dist(t0)


def test_errors():
    model, Xa, Ya, _, _ = setup()
    with pytest.raises(ParameterError, match="rho"):
        TransferSSVM(model, rho=-1).fit(Xa, Ya, ["a"] * 3)
    with pytest.raises(ParameterError, match="datasets"):
        TransferSSVM(model).fit(Xa, Ya, ["a"])
