"""The accelerations of the segmentation decoders are exact: pruned/bounded == plain O(T^2) DP."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from marginalia.decoders import _segmentation_kernels as kern
from marginalia.decoders import segmentation as seg
from marginalia.decoders._seg_fixed_k_bound import fixed_k_bounds
from marginalia.decoders.seg_constraints import constraints_from_labels
from marginalia.types import BoundaryLabel, RegionKind, RegionLabel, Segmentation


def close(a, b):
    return abs(a - b) <= 1e-9 * max(1.0, abs(a), abs(b))


@st.composite
def labelled_sequences(draw):
    """A noisy piecewise-constant sequence and partial labels that agree with its true changes."""
    seed = draw(st.integers(0, 2 ** 32 - 1))
    rng = np.random.default_rng(seed)
    T = draw(st.integers(20, 240))
    p = draw(st.integers(1, 3))
    min_size = draw(st.integers(1, 3))
    n_cp = draw(st.integers(0, T // 12))
    cps = np.unique(rng.integers(1, T, size=n_cp))
    # keep true segments >= 3 samples so min_size <= 3 is always feasible
    kept = []
    for c in cps:
        if c - (kept[-1] if kept else 0) >= 3 and T - c >= 3:
            kept.append(int(c))
    truth = Segmentation(kept + [T], T)
    scale = draw(st.sampled_from([0.0, 0.5, 3.0]))
    means = rng.normal(scale=scale, size=(len(kept) + 1, p))
    X = means[truth.labels()] + rng.normal(size=(T, p))
    labels = []
    bounds = [0] + kept + [T]
    for _ in range(draw(st.integers(0, 6))):
        kind = draw(st.sampled_from(["zero", "one", "many", "boundary"]))
        if kind == "zero":
            k = int(rng.integers(len(bounds) - 1))
            a, b = bounds[k], bounds[k + 1]
            lo = int(rng.integers(a, b))
            hi = int(rng.integers(lo + 1, b + 1))
            labels.append(RegionLabel("s", start=lo, stop=hi, kind=RegionKind.ZERO))
        elif kept and kind == "one":
            k = int(rng.integers(len(kept)))
            a = int(rng.integers(bounds[k], kept[k]))
            b = int(rng.integers(kept[k] + 1, bounds[k + 2] + 1))
            labels.append(RegionLabel("s", start=a, stop=b, kind=RegionKind.ONE))
        elif kept and kind == "many":
            k = int(rng.integers(len(kept)))
            a = int(rng.integers(0, kept[k]))
            b = int(rng.integers(kept[k] + 1, T + 1))
            labels.append(RegionLabel("s", start=a, stop=b, kind=RegionKind.AT_LEAST_ONE))
        elif kept:
            labels.append(BoundaryLabel("s", index=int(rng.choice(kept))))
    cons = constraints_from_labels(labels, T)
    metric = draw(st.sampled_from([None, "diag", "full"]))
    if metric == "diag":
        metric = rng.uniform(0.2, 2.0, size=p)
    elif metric == "full":
        metric = rng.normal(size=(2, p))
    penalty = float(draw(st.sampled_from([0.5, 2.0, 8.0, 30.0]))) * p
    return X, truth, cons, min_size, metric, penalty


def _variants():
    # (prune, bound, leaf, fanout): one-start leaves and binary trees test every level of the bound
    return [(True, True, 16, 4), (True, False, 3, 2), (False, True, 1, 2), (True, True, 1, 2), (True, True, 5, 3),
            (True, True, 2, 7)]


@settings(max_examples=25)
@given(labelled_sequences(), st.booleans())
def test_penalized_accelerations_are_exact(case, second):
    X, truth, cons, m, metric, penalty = case
    pb = seg._Problem(X, metric, m, cons)
    ref = seg._run_penalized(pb, penalty, second=second, prune=False, bound=False)
    T = pb.T
    for prune, bound, leaf, fanout in _variants():
        out = seg._run_penalized(pb, penalty, second=second, prune=prune, bound=bound, leaf=leaf, fanout=fanout)
        assert close(out[0][T], ref[0][T])
        if second:
            assert (out[1][T] == np.inf) == (ref[1][T] == np.inf)
            if ref[1][T] < np.inf:
                assert close(out[1][T], ref[1][T])
    # the public second best (the plain decoding, then its cheapest last deviation) against the
    # two-value recursion without any acceleration
    ref2 = ref if second else seg._run_penalized(pb, penalty, second=True, prune=False, bound=False)
    best, second_res = seg.segment_second_best(X, penalty, metric=metric, min_size=m, constraints=cons)
    assert close(best.cost, ref2[0][T])
    assert cons.is_satisfied_by(best.segmentation)
    assert (second_res is None) == (ref2[1][T] == np.inf)
    if second_res is not None:
        assert second_res.segmentation != best.segmentation
        assert cons.is_satisfied_by(second_res.segmentation)
        assert close(second_res.cost, ref2[1][T])
        assert close(second_res.cost, seg.segmentation_cost(X, second_res.segmentation, penalty, metric=metric))


@settings(max_examples=20)
@given(labelled_sequences(), st.sampled_from(["frobenius", "hamming"]), st.sampled_from([0.5, 3.0, 20.0]))
def test_loss_augmented_pruning_is_exact(case, loss, scale):
    X, truth, cons, m, metric, penalty = case
    pb = seg._Problem(X, metric, m, cons)
    T = pb.T
    if loss == "hamming":
        end_term = np.full(T + 1, -scale)
        end_term[truth.breakpoints] = scale
        end_term[T] = 0.0
        kw = dict(end_term=end_term)
        beta = penalty
    else:
        kw = dict(truth=truth, frob_w=2 * scale, slack=2 * scale)
        beta = penalty - scale
    ref = seg._run_penalized(pb, beta, prune=False, bound=False, **kw)
    for prune, bound, leaf, fanout in _variants():
        out = seg._run_penalized(pb, beta, prune=prune, bound=bound, leaf=leaf, fanout=fanout, **kw)
        assert close(out[0][T], ref[0][T])
    res = seg.segment_loss_augmented(X, penalty, truth, loss=loss, loss_scale=scale, metric=metric,
                                     min_size=m, constraints=cons)
    const = -scale * (truth.n_segments if loss == "frobenius" else len(truth.breakpoints))
    assert close(res.objective, ref[0][T] + const)


@settings(max_examples=20)
@given(labelled_sequences(), st.integers(1, 6), st.booleans())
def test_fixed_k_bound_is_exact(case, K, second):
    X, truth, cons, m, metric, _ = case
    pb = seg._Problem(X, metric, m, cons)
    T = pb.T
    if K * m > T:
        return
    inf = np.inf
    none = (np.zeros(T + 1), 0.0, inf)
    ref = kern._fixed_k(pb.S, pb.Q, K, m, pb.lo, pb.hi, pb.end_ok, 4, second, False, 1e-10, *none)
    for group in (1, 3, 16):
        future, lam, ub, _ = fixed_k_bounds(pb, K, second, seg._unconstrained_runner(pb))
        out = kern._fixed_k(pb.S, pb.Q, K, m, pb.lo, pb.hi, pb.end_ok, group, second, True, 1e-10,
                            future, lam, ub)
        for a, b in ((out[0][K, T], ref[0][K, T]), (out[1][K, T], ref[1][K, T])):
            assert (a == np.inf) == (b == np.inf)
            if b < np.inf:
                assert close(a, b)


def _piecewise(T, p, every, seed):
    rng = np.random.default_rng(seed)
    lab = np.arange(T) // every
    return rng.normal(scale=3.0, size=(lab[-1] + 1, p))[lab] + rng.normal(size=(T, p))


def test_pruning_makes_piecewise_sequences_linear():
    T = 3000
    X = _piecewise(T, 3, 60, 0)
    pb = seg._Problem(X, None, 1, None)
    out = seg._run_penalized(pb, 3 * 3 * np.log(T))
    plain = seg._run_penalized(pb, 3 * 3 * np.log(T), prune=False, bound=False)
    assert close(out[0][T], plain[0][T])
    assert plain[-1] == T * (T + 1) // 2
    assert out[-1] < 150 * T  # about one segment's worth of starts per end, not T/2


@pytest.mark.parametrize("T", [3000, 30000])
def test_bound_keeps_sequences_without_change_fast(T):
    # pruning removes nothing here: only the tree's bounds avoid evaluating every start; a few leaves
    # per end, however long the sequence (the flat groups evaluated ~2 sqrt(T) starts per end)
    X = np.random.default_rng(1).normal(size=(T, 5))
    pb = seg._Problem(X, None, 1, None)
    out = seg._run_penalized(pb, 3 * 5 * np.log(T))
    assert out[-1] < 4 * seg.LEAF * T
    r = seg.segment_penalized(X, 3 * 5 * np.log(T))
    assert r.segmentation.n_segments == 1


@pytest.mark.slow
@pytest.mark.parametrize("T", [3000, 30000])
def test_second_best_without_change_stays_within_a_few_times_the_plain_work(T):
    # the second best of a change-free stretch is a near-tie among all starts; seeded with the last
    # end's runner-up, an end costs ~2.5x the plain decoder's evaluations (7-11x without the seed)
    X = np.random.default_rng(3).normal(size=(T, 4))
    pb = seg._Problem(X, None, 1, None)
    beta = 2 * 4 * np.log(T)
    plain = seg._run_penalized(pb, beta)
    second = seg._run_penalized(pb, beta, second=True)
    assert second[-1] < 4 * plain[-1]
    ref = seg._run_penalized(pb, beta, second=True, prune=False, bound=False) if T <= 3000 else None
    if ref is not None:
        assert close(second[1][T], ref[1][T])


@pytest.mark.parametrize("every, T", [(None, 2000), (None, 20000), (40, 3000), (7, 2000)])
def test_second_best_reads_the_plain_pass_exactly(every, T):
    # without change (one end to search, no start ever removed) and with many changes (most starts
    # skipped because the plain decoder removed them): the two-value recursion gives the same value
    rng = np.random.default_rng(T + (every or 0))
    X = rng.normal(size=(T, 3)) if every is None else _piecewise(T, 3, every, 4)
    beta = 2 * 3 * np.log(T)
    best, second = seg.segment_second_best(X, beta)
    pb = seg._Problem(X, None, 1, None)
    ref = seg._run_penalized(pb, beta, second=True)
    assert close(best.cost, ref[0][T])
    assert close(second.cost, ref[1][T])
    assert second.segmentation != best.segmentation
    assert close(second.cost, seg.segmentation_cost(X, second.segmentation, beta))


def test_second_best_of_a_constant_sequence_is_one_change_anywhere():
    # every split of a constant sequence costs exactly one penalty more: ties between all starts
    X = np.full((50, 2), 1.5)
    best, second = seg.segment_second_best(X, 3.0)
    assert best.segmentation.changes.tolist() == [50]
    assert second.segmentation.n_segments == 2
    assert close(second.cost, best.cost + 3.0)
    best, second = seg.segment_second_best(X, 3.0, n_segments=2)
    assert best.segmentation.n_segments == second.segmentation.n_segments == 2
    assert best.segmentation != second.segmentation
    assert close(best.cost, 0.0) and close(second.cost, 0.0)


@pytest.mark.parametrize("K, every", [(2, None), (6, 200), (10, 100), (12, 100)])
def test_fixed_k_second_best_with_a_tight_bound_is_exact(K, every):
    # the Lagrangian bound leaves a few dozen prefixes near the optimal paths: the same best and
    # second values as the whole table without bounds
    T = 1200
    X = np.random.default_rng(K).normal(size=(T, 3)) if every is None else _piecewise(T, 3, every, K)
    best, second = seg.segment_second_best(X, n_segments=K)
    pb = seg._Problem(X, None, 1, None)
    F1, F2, n_all = kern._fixed_k(pb.S, pb.Q, K, 1, pb.lo, pb.hi, pb.end_ok, 16, True, False, 1e-10,
                                  np.zeros(T + 1), 0.0, np.inf)
    assert close(best.cost, F1[K, T])
    assert close(second.cost, F2[K, T])
    assert second.segmentation.n_segments == K and second.segmentation != best.segmentation
    future, lam, ub, _ = fixed_k_bounds(pb, K, True, seg._unconstrained_runner(pb))
    out = kern._fixed_k(pb.S, pb.Q, K, 1, pb.lo, pb.hi, pb.end_ok, 16, True, True, 1e-10, future, lam, ub)
    if every is not None:
        assert out[-1] < n_all / 100


@pytest.mark.parametrize("T, K, m, n_second", [(9, 1, 1, 0), (9, 9, 1, 0), (9, 8, 1, 1), (9, 3, 3, 0),
                                                (10, 3, 3, 1), (2, 2, 1, 0)])
def test_fixed_k_second_best_when_few_segmentations_exist(T, K, m, n_second):
    # K = 1, K = T and min_size * K = T leave a single segmentation; one sample more leaves others
    X = np.random.default_rng(T * K).normal(size=(T, 2))
    best, second = seg.segment_second_best(X, n_segments=K, min_size=m)
    assert best.segmentation.n_segments == K
    assert (second is not None) == bool(n_second)
    if second is not None:
        assert second.segmentation.n_segments == K and second.segmentation != best.segmentation
        assert second.cost >= best.cost - 1e-12


def test_fixed_k_recovers_clear_changes():
    X = _piecewise(1200, 4, 200, 2)
    r = seg.segment_fixed_k(X, 6)
    assert r.segmentation.changes.tolist() == [200, 400, 600, 800, 1000, 1200]
    pb = seg._Problem(X, None, 1, None)
    future, lam, ub, _ = fixed_k_bounds(pb, 6, False, seg._unconstrained_runner(pb))
    out = kern._fixed_k(pb.S, pb.Q, 6, 1, pb.lo, pb.hi, pb.end_ok, 16, False, True, 1e-10, future, lam, ub)
    assert out[-1] < 6 * 1200 * 1201 // 2 // 20


@pytest.mark.parametrize("m", [1, 3])
def test_penalized_segments_respect_min_size_on_long_input(m):
    X = _piecewise(500, 2, 7, 3)
    r = seg.segment_penalized(X, 1.0, min_size=m)
    assert np.diff(np.r_[0, r.segmentation.changes]).min() >= m
    pb = seg._Problem(X, None, m, None)
    plain = seg._run_penalized(pb, 1.0, prune=False, bound=False)
    assert close(r.cost, plain[0][500])


def test_pruning_keeps_starts_needed_inside_an_exactly_one_region():
    # s=0 loses to s'=10 at u=20 (the change at 10 explains [10, 20)), but inside the
    # "exactly one" region (10, 50) only starts <= 10 may follow, and at v=45 s=0 wins again.
    X = np.r_[np.zeros(10), np.full(10, 5.0), np.zeros(25), np.full(15, 10.0)]
    X = X + 1e-3 * np.sin(np.arange(60))
    cons = constraints_from_labels([RegionLabel("s", start=10, stop=50, kind=RegionKind.ONE, id="one")], 60)
    r = seg.segment_penalized(X, 20.0, constraints=cons)
    pb = seg._Problem(X, None, 1, cons)
    plain = seg._run_penalized(pb, 20.0, prune=False, bound=False)
    assert close(r.cost, plain[0][60])
    assert r.segmentation.changes.tolist() == [45, 60]


@pytest.mark.parametrize("leaf", [1, 4, 32])
def test_pruning_waits_min_size_before_dropping_a_start(leaf):
    # found by search: dropping a start right after the test fires (instead of min_size later)
    # loses the optimum here
    X = np.array([3.0, 2.0, 1.0, -2.0, 2.0, -3.0, 0.0, -1.0, 3.0, -2.0, 3.0, -3.0])
    pb = seg._Problem(X, None, 2, None)
    plain = seg._run_penalized(pb, 4.0, prune=False, bound=False)
    out = seg._run_penalized(pb, 4.0, leaf=leaf, fanout=2)
    assert close(plain[0][12], 58.0)
    assert close(out[0][12], 58.0)
    assert close(seg.segment_penalized(X, 4.0, min_size=2).cost, 58.0)
