"""Penalty path, target intervals and max-margin interval regression of the penalty."""

import itertools
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from marginalia.cgh.penalty_path import error_intervals, min_error_interval, penalty_path
from marginalia.cgh.penalty_regression import PenaltyIntervalRegression, sequence_features
from marginalia.exceptions import NotFittedError, ParameterError
from marginalia.types import RegionKind, RegionLabel


def _brute_costs(x, k_max):
    """Least-squares cost of the best K-segmentation by enumeration, K = 1..k_max."""
    T = len(x)
    out = []
    for k in range(1, k_max + 1):
        best = np.inf
        for cuts in itertools.combinations(range(1, T), k - 1):
            b = (0,) + cuts + (T,)
            c = sum(((x[b[i]:b[i + 1]] - x[b[i]:b[i + 1]].mean()) ** 2).sum() for i in range(k))
            best = min(best, c)
        out.append(best)
    return np.array(out)


@settings(max_examples=25, deadline=None)
@given(st.lists(st.floats(-3, 3, allow_nan=False), min_size=2, max_size=7), st.floats(-4, 3))
@pytest.mark.slow
def test_path_matches_brute_force(values, log_pen):
    x = np.array(values)
    k_max = len(x)
    path = penalty_path(x, k_max=k_max)
    assert np.allclose(path.costs, _brute_costs(x, k_max), atol=1e-9)
    seg = path.segmentation_at(log_pen)
    lam = math.exp(log_pen)
    best = min(c + lam * (k + 1) for k, c in enumerate(path.costs))
    k = seg.n_segments
    # the chosen segmentation attains the penalized optimum (ties allowed)
    got = sum(((x[a:b] - x[a:b].mean()) ** 2).sum()
              for a, b in zip(np.r_[0, seg.changes[:-1]], seg.changes))
    assert got + lam * k <= best + 1e-7


def test_path_is_monotone_and_starts_at_minus_inf():
    rng = np.random.default_rng(0)
    x = np.r_[rng.normal(0, 1, 40), rng.normal(4, 1, 40), rng.normal(-2, 1, 40)]
    path = penalty_path(x, k_max=6)
    assert path.log_lower[0] == -np.inf
    assert np.all(np.diff(path.log_lower) >= 0)
    assert np.all(np.diff(path.n_segments) < 0)
    assert path.n_segments[-1] == 1
    # a moderate penalty finds the two true changes
    assert path.segmentation_at(math.log(20.0)).breakpoints.tolist() == [40, 80]


def test_min_error_interval_picks_the_widest_best_run():
    lo = np.array([-np.inf, 0.0, 1.0, 2.0, 5.0])
    err = np.array([3, 1, 2, 1, 1])
    assert min_error_interval(lo, err) == (2.0, np.inf, 1.0)
    assert min_error_interval(lo, [3, 1, 1, 2, 2]) == (0.0, 2.0, 1.0)
    with pytest.raises(ParameterError, match="same non-zero length"):
        min_error_interval(lo, err[:2])


def test_error_intervals_count_label_errors_along_the_path():
    x = np.r_[np.zeros(30), np.full(30, 5.0)] + np.random.default_rng(1).normal(0, 0.3, 60)
    labels = [RegionLabel(item_id="s", start=20, stop=40, kind=RegionKind.ONE),
              RegionLabel(item_id="s", start=0, stop=20, kind=RegionKind.ZERO)]
    path = penalty_path(x, k_max=5)
    lo, fp, fn, n = error_intervals(path, labels)
    assert n == 2
    assert fp[-1] == 0 and fn[-1] == 1          # one segment: the change is missed
    assert (fp + fn).min() == 0                  # some penalty gets both labels right


def _synthetic_intervals(rng, n, law):
    """Sequences whose best log-penalty follows ``law(features)``: intervals around it."""
    F = np.column_stack([rng.uniform(1.5, 2.3, n), rng.uniform(-4, 0, n), rng.uniform(-3, 1, n)])
    centre = law(F)
    half = rng.uniform(0.2, 0.4, n)
    iv = np.column_stack([centre - half, centre + half])
    # some intervals are open on one side, as real ones are
    iv[rng.random(n) < 0.2, 0] = -np.inf
    iv[rng.random(n) < 0.2, 1] = np.inf
    return F, iv, centre


@pytest.mark.parametrize("loss", ["squared_hinge", "hinge"])
def test_interval_regression_recovers_a_known_penalty_law(loss):
    rng = np.random.default_rng(3)

    def law(F):
        return 0.7 + 1.0 * F[:, 0] + 1.0 * F[:, 1]   # log λ = log(2 σ² log T)

    F, iv, _ = _synthetic_intervals(rng, 300, law)
    reg = PenaltyIntervalRegression(alpha=1e-4, margin=0.1, loss=loss).fit(F, iv)
    Ft, ivt, centre = _synthetic_intervals(np.random.default_rng(4), 200, law)
    pred = reg.predict(Ft)
    inside = (pred >= ivt[:, 0]) & (pred <= ivt[:, 1])
    assert inside.mean() >= 0.95
    assert np.abs(pred - centre).max() < 0.45
    assert np.allclose(reg.coef_, [1.0, 1.0, 0.0], atol=0.25)
    assert reg.intercept_ == pytest.approx(0.7, abs=0.5)


def test_interval_regression_from_real_paths_beats_a_wrong_constant():
    """End to end: noise level varies, intervals come from label errors on the path."""
    rng = np.random.default_rng(5)
    F, iv = [], []
    tests = []
    for i in range(40):
        sigma = math.exp(rng.uniform(-2, 0.5))
        T = 60
        x = np.r_[np.zeros(T // 2), np.full(T // 2, 3 * sigma)] + rng.normal(0, sigma, T)
        labels = [RegionLabel(item_id="s", start=T // 2 - 8, stop=T // 2 + 8, kind=RegionKind.ONE),
                  RegionLabel(item_id="s", start=0, stop=T // 2 - 8, kind=RegionKind.ZERO),
                  RegionLabel(item_id="s", start=T // 2 + 8, stop=T, kind=RegionKind.ZERO)]
        path = penalty_path(x, k_max=6)
        lo, fp, fn, _ = error_intervals(path, labels)
        a, b, _ = min_error_interval(lo, fp + fn)
        if i < 30:
            F.append(sequence_features(x))
            iv.append((a, b))
        else:
            tests.append((x, labels, path))
    reg = PenaltyIntervalRegression(alpha=1e-3, margin=0.3).fit(np.array(F), np.array(iv))
    # the penalty grows with the noise variance (here the total variance is proportional to it too)
    assert reg.coef_[1] + reg.coef_[2] > 0.5

    def errors(log_pens):
        tot = 0
        for (_x, labels, path), lp in zip(tests, log_pens):
            _, fp, fn, _ = error_intervals(path, labels)
            j = max(int(np.searchsorted(path.log_lower, lp, side="right")) - 1, 0)
            tot += fp[j] + fn[j]
        return tot

    learned = errors(reg.predict(np.array([sequence_features(x) for x, _, _ in tests])))
    constant = errors([float(np.median(np.array(iv)[np.isfinite(np.array(iv)).all(1)].mean(1)))] * len(tests))
    assert learned <= constant
    assert learned <= 3


def test_sequence_features_shape_and_validation():
    x = np.random.default_rng(0).normal(0, 0.5, 100)
    f = sequence_features(x)
    assert f.shape == (3,)
    assert f[0] == pytest.approx(math.log(math.log(100)))
    assert f[1] == pytest.approx(math.log(0.25), abs=0.5)
    assert np.allclose(sequence_features(x[:, None]), f)
    with pytest.raises(ParameterError, match="at least 3 samples"):
        sequence_features([1.0, 2.0])
    with pytest.raises(ParameterError, match="NaN"):
        sequence_features([1.0, np.nan, 2.0])


def test_regression_validation():
    F = np.zeros((3, 2))
    with pytest.raises(NotFittedError):
        PenaltyIntervalRegression().predict(F)
    with pytest.raises(ParameterError, match="intervals: expected shape"):
        PenaltyIntervalRegression().fit(F, np.zeros((2, 2)))
    with pytest.raises(ParameterError, match="lower <= upper"):
        PenaltyIntervalRegression().fit(F, [[1, 0]] * 3)
    with pytest.raises(ParameterError, match="nothing to learn"):
        PenaltyIntervalRegression().fit(F, [[-np.inf, np.inf]] * 3)
    with pytest.raises(ParameterError, match="loss"):
        PenaltyIntervalRegression(loss="l1").fit(F, [[0, 1]] * 3)
    with pytest.raises(ParameterError, match="k_max"):
        penalty_path(np.zeros(5), k_max=0)
