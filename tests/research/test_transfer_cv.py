"""Transfer on a synthetic two-domain segmentation problem, and rho chosen by cross-validation.

Every sequence has two features. In the source domain the change sits on feature 0 and feature 1 has
an irrelevant jump elsewhere, so the source teaches "feature 1 does not matter". The target's few
labelled sequences have the same relevant feature but a smaller jump (its own penalty) and feature 1
jumping together with feature 0: alone they cannot tell which feature matters, and on test sequences
(irrelevant jumps on feature 1) a target-only model places changes at the wrong jump.
"""

import numpy as np
import pytest

from benchmarks.research.transfer_cv import TransferRhoCV, group_folds, select_rho
from marginalia.exceptions import NotFittedError, ParameterError
from marginalia.learners.ssvm import SSVM
from marginalia.learners.transfer import TransferSSVM
from marginalia.models.segmentation import SegmentationModel
from marginalia.types import Segmentation


def domain(rng, n, jump, mode, relevant=0, T=40):
    Xs, Ys = [], []
    for _ in range(n):
        X = rng.normal(0, 1, (T, 2))
        c = int(rng.integers(10, 30))
        X[c:, relevant] += jump
        other = 1 - relevant
        if mode == "confounded":
            X[c:, other] += 3.0
        else:
            X[int(rng.integers(6, 34)):, other] += 3.0
        Xs.append(X)
        Ys.append(Segmentation([c, T]))
    return Xs, Ys


def n_wrong(model, w, Xs, Ys, tol=2):
    """Sequences whose decoded segmentation is not one change within ``tol`` of the true one."""
    wrong = 0
    for X, Y in zip(Xs, Ys):
        ch = model.decode(X, w).changes[:-1]
        wrong += not (len(ch) == 1 and abs(int(ch[0]) - int(Y.changes[0])) <= tol)
    return wrong


@pytest.mark.slow
def test_transfer_with_two_target_sequences_beats_target_only():
    kw = dict(C=1.0, max_iter=20, random_state=0)
    got_transfer = got_target = 0
    for seed in range(3):
        rng = np.random.default_rng(seed)
        Xs_s, Ys_s = domain(rng, 6, 3.0, "irrelevant")
        Xs_t, Ys_t = domain(rng, 2, 2.0, "confounded")
        X_te, Y_te = domain(rng, 12, 2.0, "irrelevant")
        model = SegmentationModel(loss="hamming")
        t = TransferSSVM(model, rho=1000.0, **kw).fit(Xs_s + Xs_t, Ys_s + Ys_t, ["src"] * 6 + ["tgt"] * 2)
        e_transfer = n_wrong(model, t.w_datasets_["tgt"], X_te, Y_te)
        s = SSVM(model, **kw).fit(Xs_t, Ys_t)
        e_target = n_wrong(model, s.w_, X_te, Y_te)
        assert e_transfer <= e_target
        got_transfer += e_transfer
        got_target += e_target
    assert got_transfer <= 0.6 * got_target


@pytest.mark.slow
def test_cv_chooses_zero_when_the_domains_are_unrelated():
    rng = np.random.default_rng(5)
    # source: the change is on feature 1 and feature 0 jumps irrelevantly; target: the other way round
    Xs_s, Ys_s = domain(rng, 8, 3.0, "irrelevant", relevant=1)
    Xs_t, Ys_t = domain(rng, 6, 3.0, "irrelevant", relevant=0)
    model = SegmentationModel(loss="hamming")
    cv = TransferRhoCV(model, rhos=(0.0, 1000.0, np.inf), cv=3, C=1.0, max_iter=15, random_state=0,
                       error=lambda m, w, X, Y: n_wrong(m, w, [X], [Y]))
    cv.fit(Xs_s + Xs_t, Ys_s + Ys_t, ["src"] * 8 + ["tgt"] * 6, groups=list(range(8)) + [0, 0, 1, 1, 2, 2])
    assert cv.target_ == "tgt"
    assert cv.rho_ == 0.0
    assert cv.cv_errors_[0.0] < cv.cv_errors_[np.inf]
    # rho = 0 is the target learning alone: the same vector as a target-only SSVM
    alone = SSVM(SegmentationModel(loss="hamming"), C=1.0, max_iter=15, random_state=0).fit(Xs_t, Ys_t)
    np.testing.assert_allclose(cv.w_, alone.w_, rtol=1e-9)
    assert len(cv.predict(Xs_t[:2])) == 2


@pytest.mark.slow
def test_cv_transfers_when_the_domains_share_the_relevant_feature():
    rng = np.random.default_rng(0)
    Xs_s, Ys_s = domain(rng, 6, 3.0, "irrelevant")
    # two confounded target sequences and two that show the irrelevant jump: the folds can tell
    Xc, Yc = domain(rng, 2, 2.0, "confounded")
    Xi, Yi = domain(rng, 2, 2.0, "irrelevant")
    model = SegmentationModel(loss="hamming")
    cv = TransferRhoCV(model, rhos=(0.0, 1000.0), cv=2, C=1.0, max_iter=15, random_state=0,
                       error=lambda m, w, X, Y: n_wrong(m, w, [X], [Y]))
    cv.fit(Xs_s + Xc + Xi, Ys_s + Yc + Yi, ["src"] * 6 + ["tgt"] * 4, groups=list(range(6)) + [0, 1, 0, 1])
    assert cv.cv_errors_[1000.0] < cv.cv_errors_[0.0]
    assert cv.rho_ == 1000.0
    assert set(cv.cv_item_errors_) == {0.0, 1000.0} and cv.cv_item_errors_[0.0].shape == (4,)
    assert cv.cv_errors_[0.0] == cv.cv_item_errors_[0.0].sum()
    w_transfer = cv.w_.copy()
    assert cv.refit(0.0).rho_ == 0.0 and not np.allclose(cv.w_, w_transfer)


def test_select_rho_rules():
    errs = {0.0: np.array([1, 1, 0, 1, 0, 1]), 10.0: np.array([1, 0, 0, 1, 0, 0]), np.inf: np.array([0, 0, 0, 0, 0, 0])}
    assert select_rho(errs, "min") == np.inf
    # inf beats 0 by 4 errors; the sd of their per-item difference is 0.52, so its standard error is 1.26
    assert select_rho(errs, "1se") == np.inf
    close = {0.0: np.array([1, 0, 1, 0]), 10.0: np.array([0, 0, 1, 0]), 1.0: np.array([0, 0, 0, 1])}
    assert select_rho(close, "min") == 10.0          # first of the tied minima in the listed order
    assert select_rho(close, "1se") == 0.0           # one error better is within one standard error (1.0)
    with pytest.raises(ParameterError, match="rule"):
        select_rho(close, "best")


def test_group_folds_keep_groups_whole():
    folds = group_folds(["a", "a", "b", "c", "c", "d"], 3, random_state=0)
    assert folds[0] == folds[1] and folds[3] == folds[4]
    assert set(folds.tolist()) == {0, 1, 2}
    assert set(group_folds(["a", "b", "a"], 5).tolist()) == {0, 1}


def test_errors():
    model = SegmentationModel()
    rng = np.random.default_rng(0)
    Xs, Ys = domain(rng, 3, 3.0, "irrelevant")
    with pytest.raises(ParameterError, match="groups"):
        group_folds(["a", "a"], 2)
    with pytest.raises(ParameterError, match="cv"):
        group_folds(["a", "b"], 1)
    with pytest.raises(ParameterError, match="rhos"):
        TransferRhoCV(model, rhos=(-1.0,)).fit(Xs, Ys, ["a", "b", "b"])
    with pytest.raises(ParameterError, match="target"):
        TransferRhoCV(model, target="zzz").fit(Xs, Ys, ["a", "b", "b"])
    with pytest.raises(NotFittedError):
        TransferRhoCV(model).predict(Xs)
