"""The coupled regulariser's argmax against a brute-force oracle (every active set on tiny inputs)."""

import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from marginalia.exceptions import ParameterError
from marginalia.learners.transfer_coupling import coupled_argmax, coupled_penalty, coupling_strengths


def objective(Theta, U, C, rhos):
    return float(np.sum(Theta * U)) - coupled_penalty(Theta, C, rhos)


def brute_force(U, C, rhos, nonneg):
    """Maximiser per coordinate: solve K x = u on every free set and keep the best feasible point."""
    D, P = U.shape
    out = np.zeros((D, P))
    for j in range(P):
        if np.isinf(rhos[j]):
            x = np.full(D, C * U[:, j].mean())
            out[:, j] = np.maximum(x, 0) if nonneg else x
            continue
        K = np.eye(D) / C + rhos[j] * (np.eye(D) - np.full((D, D), 1.0 / D))
        best, best_val = np.zeros(D), 0.0
        sets = itertools.chain.from_iterable(itertools.combinations(range(D), m) for m in range(1, D + 1))
        for F in (sets if nonneg else [tuple(range(D))]):
            F = list(F)
            x = np.zeros(D)
            x[F] = np.linalg.solve(K[np.ix_(F, F)], U[F, j])
            if nonneg and np.any(x < -1e-12):
                continue
            val = x @ U[:, j] - 0.5 * x @ K @ x
            if val > best_val or not nonneg:
                best, best_val = x, val
        out[:, j] = best
    return out


@settings(max_examples=60, deadline=None)
@given(D=st.integers(1, 4), seed=st.integers(0, 10**6), C=st.floats(0.1, 10), rho=st.floats(0, 100),
       nonneg=st.booleans())
def test_argmax_matches_brute_force(D, seed, C, rho, nonneg):
    rng = np.random.default_rng(seed)
    U = rng.normal(0, 3, (D, 4))
    rhos = np.array([0.0, rho, rho * 10, np.inf])
    got = coupled_argmax(U, C, rhos, nonneg)
    want = brute_force(U, C, rhos, nonneg)
    assert objective(got, U, C, rhos) >= objective(want, U, C, rhos) - 1e-9 * (1 + np.abs(U).sum())
    np.testing.assert_allclose(got, want, atol=1e-8 * (1 + np.abs(U).max() * C))
    if nonneg:
        assert np.all(got >= 0)


def test_zero_coupling_is_independent_and_infinite_is_shared():
    U = np.array([[1.0, -2.0], [3.0, 0.5]])
    np.testing.assert_allclose(coupled_argmax(U, 2.0, np.zeros(2), True), 2.0 * np.maximum(U, 0))
    np.testing.assert_allclose(coupled_argmax(U, 2.0, np.full(2, np.inf), False), [[4.0, -1.5], [4.0, -1.5]])


def test_strengths():
    np.testing.assert_array_equal(coupling_strengths(3.0, 4, uncoupled=[-1, 0]), [0, 3, 3, 0])
    with pytest.raises(ParameterError, match="rho"):
        coupling_strengths(-1.0, 3)
    with pytest.raises(ParameterError, match="uncoupled"):
        coupling_strengths(1.0, 3, uncoupled=[3])
