import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from marginalia.exceptions import ParameterError
from marginalia.features.hermite import hermite_features, hermite_values, robust_noise_scale


def test_polynomials_match_the_printed_formulas():
    z = np.linspace(-3, 3, 13)
    H = hermite_values(z, orders=(0, 1, 2, 3, 4), kind="polynomial")
    np.testing.assert_allclose(H[:, 0], 1.0)
    np.testing.assert_allclose(H[:, 1], z)
    np.testing.assert_allclose(H[:, 2], z ** 2 - 1)
    np.testing.assert_allclose(H[:, 3], z ** 3 - 3 * z)
    np.testing.assert_allclose(H[:, 4], z ** 4 - 6 * z ** 2 + 3, atol=1e-12)


def test_hermite_functions_are_orthonormal():
    z = np.linspace(-20, 20, 40001)
    H = hermite_values(z, orders=range(6), kind="function")
    gram = (H.T @ H) * (z[1] - z[0])
    np.testing.assert_allclose(gram, np.eye(6), atol=1e-6)


def test_functions_stay_bounded_on_outliers():
    H = hermite_values(np.array([0.0, 1e3, -1e4]), orders=(0, 4, 7), kind="function")
    assert np.all(np.isfinite(H)) and np.abs(H).max() < 1.0


@pytest.mark.slow
@settings(max_examples=30)
@given(st.lists(st.floats(-5, 5), min_size=1, max_size=12), st.integers(0, 4))
def test_window_average_matches_brute_force(xs, hw):
    x = np.array(xs)
    F = hermite_features(x, orders=(0, 2), half_width=hw, center=0.0, scale=1.0)
    P = hermite_values(x, orders=(0, 2))
    for t in range(len(x)):
        lo, hi = max(0, t - hw), min(len(x), t + hw + 1)
        np.testing.assert_allclose(F[t], P[lo:hi].mean(axis=0), atol=1e-12)


def test_variance_change_appears_as_a_mean_change():
    rng = np.random.default_rng(0)
    x = np.concatenate([rng.normal(0, 1, 400), rng.normal(0, 3, 400)])
    F = hermite_features(x, orders=(0, 2), half_width=0, kind="polynomial", center=0.0, scale=1.0)
    # E[He2(z)] = sigma^2 - 1: 0 before, 8 after
    assert abs(F[:400, 1].mean()) < 0.5 and abs(F[400:, 1].mean() - 8) < 1.5


def test_noise_scale_ignores_a_step():
    rng = np.random.default_rng(1)
    x = np.concatenate([rng.normal(0, 0.5, 500), rng.normal(10, 0.5, 500)])
    assert 0.4 < robust_noise_scale(x) < 0.6
    assert math.isclose(robust_noise_scale(np.ones(10)), 1.0)


@pytest.mark.parametrize("bad, match", [
    (np.array([0.0, np.nan, 1.0]), "non-finite"),
    (np.zeros((3, 2)), "1-d"),
    (np.array([]), "at least one"),
])
def test_bad_signals_are_refused(bad, match):
    with pytest.raises(ParameterError, match=match):
        hermite_features(bad)


def test_bad_options_are_refused():
    with pytest.raises(ParameterError, match="half_width"):
        hermite_features(np.zeros(5), half_width=-1)
    with pytest.raises(ParameterError, match="orders"):
        hermite_features(np.zeros(5), orders=())
    with pytest.raises(ParameterError, match="kind"):
        hermite_values(np.zeros(5), kind="physicists")
