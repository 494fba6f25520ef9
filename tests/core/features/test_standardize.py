import numpy as np
import pytest

from marginalia.exceptions import NotFittedError, ParameterError
from marginalia.features.standardize import RobustStandardizer, check_features, robust_standardize


def test_median_and_mad_are_zero_and_one_after_scaling():
    rng = np.random.default_rng(0)
    X = rng.standard_t(3, size=(501, 3)) * [1, 10, 100] + [5, -3, 0]
    Z = robust_standardize(X)
    np.testing.assert_allclose(np.median(Z, axis=0), 0, atol=1e-12)
    np.testing.assert_allclose(1.4826 * np.median(np.abs(Z), axis=0), 1, atol=1e-12)


def test_outliers_do_not_move_the_scale():
    x = np.concatenate([np.linspace(-1, 1, 99), [1e6]])[:, None]
    Z = robust_standardize(x)
    assert np.abs(Z[:99]).max() < 2.0


def test_constant_feature_warns_and_becomes_zero():
    X = np.column_stack([np.arange(10.0), np.full(10, 3.0)])
    with pytest.warns(UserWarning, match=r"\[1\]"):
        st = RobustStandardizer().fit(X)
    Z = st.transform(X)
    assert np.all(np.isfinite(Z)) and np.all(Z[:, 1] == 0)
    assert st.constant_features_.tolist() == [1]


def test_mostly_constant_feature_falls_back_to_std():
    x = np.zeros(20)
    x[-3:] = 1.0
    Z = robust_standardize(x[:, None])
    assert np.all(np.isfinite(Z)) and Z[-1, 0] > 0


def test_fit_on_several_sequences_and_check_widths():
    st = RobustStandardizer().fit([np.ones((3, 2)) * [1, 2], np.arange(8.0).reshape(4, 2)])
    with pytest.raises(ParameterError, match="expected 2 features"):
        st.transform(np.zeros((3, 3)))
    with pytest.raises(ParameterError, match=r"Xs\[1\]"):
        RobustStandardizer().fit([np.zeros((3, 2)), np.zeros((3, 1))])


def test_nan_is_named():
    X = np.zeros((4, 2))
    X[2, 1] = np.nan
    with pytest.raises(ParameterError, match="sample 2, feature 1"):
        check_features(X)
    with pytest.raises(NotFittedError):
        RobustStandardizer().transform(np.zeros((2, 2)))
