"""The partial-label loss decoder (start values, range minima, tree bounds) equals the textbook DP on
sequences too long to enumerate."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from numba import njit

from marginalia.models._violation_dp import _label_loss, violation_dp


@njit
def reference_dp(Z, penalty, m, rid, lo, hi, start, stop, gain, scale, counts):
    """The textbook DP over (last change, state): every start of every end, labels scanned directly.

    Returns the optimum and its changes; exact ties go to the first (start, state) scanned.
    """
    T, q = Z.shape
    S1 = np.zeros((T + 1, q))
    S2 = np.zeros((T + 1, q))
    for t in range(T):
        S1[t + 1] = S1[t] + Z[t]
        S2[t + 1] = S2[t] + Z[t] ** 2
    F = np.full((T + 1, 3), np.inf)
    arg = np.full((T + 1, 3, 2), -1, np.int64)
    F[0, 0] = -scale * gain.sum()
    for t in range(1, T + 1):
        rt = rid[t] if t < T else -1
        for s in range(0, t - m + 1):
            rs = rid[s] if s > 0 else -1
            d = S1[t] - S1[s]
            base = (S2[t] - S2[s]).sum() - (d * d).sum() / (t - s) + penalty
            if t < T:
                base += scale * gain[t]
            for k in range(3):
                if F[s, k] == np.inf:
                    continue
                v = F[s, k] + base
                if rt >= 0 and rt == rs:
                    nk = min(k + 1, 2)
                    if counts and k == 2 and hi[rt] >= 0:
                        v -= scale
                else:
                    if rs >= 0:
                        v -= scale * _label_loss(lo[rs], hi[rs], k, counts)
                    skipped = 0.0  # labels jumped over, closed with no change
                    for r in range(lo.shape[0]):
                        if start[r] >= s and stop[r] <= t:
                            skipped += _label_loss(lo[r], hi[r], 0, counts)
                    v -= scale * skipped
                    nk = 1 if rt >= 0 else 0
                if v < F[t, nk]:
                    F[t, nk] = v
                    arg[t, nk, 0] = s
                    arg[t, nk, 1] = k
    changes = [T]
    t, k = T, 0
    while arg[t, k, 0] > 0:
        t, k = arg[t, k, 0], arg[t, k, 1]
        changes.append(t)
    return F[T, 0], np.array(changes[::-1])


@st.composite
def problems(draw):
    """Piecewise-constant features, disjoint (possibly touching) region labels and boundary labels."""
    seed = draw(st.integers(0, 2 ** 32 - 1))
    rng = np.random.default_rng(seed)
    T = draw(st.integers(20, 220))
    q = draw(st.integers(1, 3))
    every = draw(st.sampled_from([5, 15, 40, 1000]))
    lab = np.arange(T) // every
    Z = rng.normal(scale=draw(st.sampled_from([0.5, 2.0])), size=(lab[-1] + 1, q))[lab] + rng.normal(size=(T, q))
    rid = np.full(T + 1, -1, np.int64)
    lo, hi, start, stop = [], [], [], []
    pos = int(rng.integers(0, 10))
    while pos < T - 2 and len(lo) < 12:
        a = pos
        b = int(min(T, a + rng.integers(2, 40)))
        k = int(rng.integers(3))  # 0breakpoints, 1breakpoint, at least one
        lo.append(0 if k == 0 else 1)
        hi.append(0 if k == 0 else (1 if k == 1 else -1))
        start.append(a)
        stop.append(b)
        rid[a + 1:b] = len(lo) - 1
        # the next label touches this one (shares its last sample) or starts further on
        pos = b - 1 if rng.random() < 0.3 else b + int(rng.integers(0, 25))
    gain = np.zeros(T + 1)
    for c in rng.integers(1, T, size=int(rng.integers(0, 4))):
        gain[c] = 1.0
    arr = lambda v: np.array(v, np.int64)  # noqa: E731
    penalty = float(draw(st.sampled_from([0.5, 3.0, 10.0, 40.0])))
    scale = float(draw(st.sampled_from([0.3, 2.0, 8.0, 30.0])))
    min_size = draw(st.integers(1, 3))
    return Z, penalty, min_size, rid, arr(lo), arr(hi), arr(start), arr(stop), gain, scale


@settings(max_examples=60, deadline=None)
@given(problems(), st.booleans())
@pytest.mark.slow
def test_violation_dp_equals_the_textbook_dp(pb, counts):
    Z, penalty, m, rid, lo, hi, start, stop, gain, scale = pb
    ref, _ = reference_dp(Z, penalty, m, rid, lo, hi, start, stop, gain, scale, counts)
    assert np.isfinite(ref)
    for bound in (False, True):
        changes, val = violation_dp(Z, penalty, m, rid, lo, hi, start, stop, gain, scale, counts, bound)
        assert abs(val - ref) <= 1e-9 * max(1.0, abs(ref))
    assert changes[-1] == Z.shape[0]
    assert np.diff(np.r_[0, changes]).min() >= m



@pytest.mark.slow
@settings(max_examples=30, deadline=None)
@given(problems(), st.booleans())
def test_exact_ties_go_to_the_earliest_start(pb, counts):
    # all-zero features: every segment costs 0, so whole families of segmentations tie exactly and
    # only the tie rule (the textbook scan's first start and state) decides which one is returned
    Z, penalty, m, rid, lo, hi, start, stop, gain, scale = pb
    Z = np.zeros_like(Z)
    ref, ref_changes = reference_dp(Z, penalty, m, rid, lo, hi, start, stop, gain, scale, counts)
    changes, val = violation_dp(Z, penalty, m, rid, lo, hi, start, stop, gain, scale, counts, True)
    assert val == ref
    assert changes.tolist() == ref_changes.tolist()
