"""The SSVM's fast paths agree with the plain computations they replace."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from marginalia.learners.ssvm import SSVM, _orthant_line_search
from marginalia.models.segmentation import SegmentationModel
from marginalia.types import RegionKind, RegionLabel, Segmentation


def _bisection_root(u, d, dl, lam):
    def deriv(g):
        return dl - lam * float(np.maximum(u + g * d, 0.0) @ d)
    if deriv(0.0) <= 0:
        return 0.0
    if deriv(1.0) >= 0:
        return 1.0
    lo, hi = 0.0, 1.0
    for _ in range(80):
        mid = 0.5 * (lo + hi)
        lo, hi = (mid, hi) if deriv(mid) > 0 else (lo, mid)
    return 0.5 * (lo + hi)


@settings(max_examples=60, deadline=None)
@given(st.integers(1, 6), st.integers(0, 10_000), st.floats(-3, 3), st.floats(0.01, 5))
def test_orthant_line_search_matches_bisection(p, seed, dl, lam):
    rng = np.random.default_rng(seed)
    u = rng.normal(0, 1, p) * rng.integers(0, 2, p)   # some coordinates exactly at the kink
    d = rng.normal(0, 1, p)
    got = _orthant_line_search(u, d, dl, lam)
    want = _bisection_root(u, d, dl, lam)
    assert 0.0 <= got <= 1.0
    # the derivative is flat on some pieces: compare the dual values, not only the roots
    def dual(g):
        z = np.maximum(u + g * d, 0.0)
        return g * dl - 0.5 * lam * float(z @ z)
    assert dual(got) >= dual(want) - 1e-9 * (1 + abs(dual(want)))


def _data(rng, n=5, T=90):
    Xs, Ys, Ls = [], [], []
    for i in range(n):
        X = rng.normal(0, 1, (T, 2))
        a, b = sorted(rng.choice(np.arange(15, T - 15), 2, replace=False))
        X[a:b, 0] += 2.0
        Xs.append(X)
        Ys.append(Segmentation([a, b, T]) if b - a >= 1 else Segmentation([T]))
        Ls.append([RegionLabel(item_id=str(i), start=max(0, a - 5), stop=a + 5, kind=RegionKind.ONE),
                   RegionLabel(item_id=str(i), start=0, stop=max(1, a - 8), kind=RegionKind.ZERO)])
    return Xs, Ys, Ls


def _plain_initial_w(model, Xs, Ys, grid):
    model.fit_scales(Xs)
    B = np.ones(Xs[0].shape[1])
    best, best_loss = None, np.inf
    for f in grid:
        cand = model.join_w(B, f)
        total = sum(model.loss(Y, model.decode(X, cand)) for X, Y in zip(Xs, Ys))
        if total < best_loss - 1e-12:
            best, best_loss = cand, total
    return best


@pytest.mark.slow
@settings(max_examples=8, deadline=None)
@given(st.integers(0, 10_000), st.booleans())
def test_initial_w_bisection_equals_the_plain_grid_scan(seed, partial):
    rng = np.random.default_rng(seed)
    Xs, Ys, Ls = _data(rng)
    grid = rng.permutation(np.exp2(np.arange(-4, 5, 0.5)))   # any order
    model = SegmentationModel(loss="hamming")
    targets = Ls if partial else Ys
    want = _plain_initial_w(model, Xs, targets, grid)
    np.testing.assert_allclose(model.initial_w(Xs, targets, grid=grid), want)
    np.testing.assert_allclose(model.initial_w(Xs, targets, grid=grid, n_jobs=2), want)


@pytest.mark.slow
def test_parallel_decoding_learns_as_well_as_sequential():
    rng = np.random.default_rng(4)
    Xs, Ys, _ = _data(rng, n=8)
    Xt, Yt, _ = _data(rng, n=6)
    model = SegmentationModel(loss="hamming")
    seq = SSVM(model, C=1.0, max_iter=20, random_state=0).fit(Xs, Ys)
    par = SSVM(model, C=1.0, max_iter=20, random_state=0, n_jobs=2).fit(Xs, Ys)
    loss = {name: np.mean([model.loss(y, model.decode(X, s.w_)) for X, y in zip(Xt, Yt)])
            for name, s in (("seq", seq), ("par", par))}
    assert loss["par"] <= loss["seq"] + 1.0

    def primal(w):
        lam = 1.0 / len(Xs)
        hinge = 0.0
        for X, y in zip(Xs, Ys):
            y_hat = model.loss_augmented_decode(X, y, w)
            hinge += max(0.0, model.loss(y, y_hat) - w @ (model.joint_feature(X, y) - model.joint_feature(X, y_hat)))
        return 0.5 * lam * float(w @ w) + hinge / len(Xs)
    assert primal(par.w_) <= 1.25 * primal(seq.w_) + 0.1
    # both fit their own data: every learned metric puts more weight on the changing coordinate
    for s in (seq, par):
        B = np.diag(model.metric_matrix(s.w_))
        assert B[0] > B[1]
