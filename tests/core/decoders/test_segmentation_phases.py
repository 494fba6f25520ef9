"""The penalized kernel's three searches are exact: the flat list of live starts, its hand-off to the tree
of bounded starts, and the functional pruning of one feature without labels, against a plain scan of every
start and against brute force (hypothesis)."""

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from marginalia.decoders import brute
from marginalia.decoders import segmentation as seg
from marginalia.decoders.segmentation import segment_penalized, segment_second_best

from .test_segmentation_pruning import close, labelled_sequences


def _plain(pb, beta, **kw):
    return seg._run_penalized(pb, beta, prune=False, bound=False, functional=False, **kw)


@settings(max_examples=25)
@given(labelled_sequences(), st.sampled_from([0, 1, 5, 40, 10 ** 6]), st.sampled_from(["plain", "hamming",
                                                                                        "frobenius"]))
def test_flat_list_hands_over_to_the_tree_exactly(case, max_live, loss):
    # max_live = 0: the tree from the first end; 10**6: the flat list to the last; else a hand-off
    # somewhere (the leaf and fanout of the tree vary too)
    X, truth, cons, m, metric, penalty = case
    pb = seg._Problem(X, metric, m, cons)
    T = pb.T
    kw = {}
    if loss == "hamming":
        end_term = np.full(T + 1, -2.0)
        end_term[truth.breakpoints] = 2.0
        end_term[T] = 0.0
        kw = dict(end_term=end_term)
    elif loss == "frobenius":
        kw = dict(truth=truth, frob_w=4.0, slack=4.0)
    ref = _plain(pb, penalty, **kw)
    for leaf, fanout in ((16, 4), (1, 2), (3, 3)):
        kill_t = np.empty(T + 1, np.int64)
        out = seg._run_penalized(pb, penalty, leaf=leaf, fanout=fanout, max_live=max_live, kill_t=kill_t,
                                 functional=False, **kw)
        assert close(out[0][T], ref[0][T])
        if loss == "frobenius":
            continue
        # every recorded removal is justified: the start loses to the end that removed it at every later end
        F = out[0]
        for s in np.flatnonzero(kill_t < T)[:20]:
            t = kill_t[s]
            for u in range(t + 1, T + 1):
                assert F[s] + _scatter(pb, s, u) >= F[t] + _scatter(pb, t, u) - 1e-9 * max(1.0, abs(F[t]))


def _scatter(pb, s, u):
    d = pb.S[u] - pb.S[s]
    return pb.Q[u] - pb.Q[s] - float(d @ d) / (u - s)


@st.composite
def one_feature(draw, max_T=300):
    """One feature without labels: noisy steps, rounded values (exact ties) or constant runs."""
    rng = np.random.default_rng(draw(st.integers(0, 2 ** 32 - 1)))
    T = draw(st.integers(1, max_T))
    kind = draw(st.sampled_from(["steps", "rounded", "constant", "noise"]))
    if kind == "steps":
        every = draw(st.integers(1, 60))
        X = rng.normal(scale=draw(st.sampled_from([0.5, 3.0])), size=T // every + 1)[np.arange(T) // every]
        X = X + rng.normal(size=T)
    elif kind == "rounded":
        X = np.round(rng.normal(scale=1.5, size=T))
    elif kind == "constant":
        X = np.full(T, draw(st.sampled_from([0.0, 1.5, -7.25])))
    else:
        X = rng.normal(size=T)
    penalty = float(draw(st.sampled_from([0.0, 0.1, 1.0, 4.0, 2.0 * np.log(max(T, 2)), 50.0])))
    return X, penalty


@settings(max_examples=150)
@given(one_feature())
def test_functional_pruning_equals_a_scan_of_every_start(case):
    X, penalty = case
    pb = seg._Problem(X, None, 1, None)
    assert seg._functional_applies(pb, 0.0, False, True, True)
    T = pb.T
    ref = _plain(pb, penalty)
    out = seg._run_penalized(pb, penalty)
    assert close(out[0][T], ref[0][T])
    # the decoded segmentation costs what the optimum costs, and the PELT kernel agrees
    res = segment_penalized(X, penalty)
    assert close(res.cost, ref[0][T])
    assert close(res.cost, seg.segmentation_cost(X, res.segmentation, penalty))
    assert close(seg._run_penalized(pb, penalty, functional=False)[0][T], ref[0][T])
    # its removals recorded for the second best are the PELT test's: the second best stays exact
    best, second = segment_second_best(X, penalty)
    ref2 = seg._run_penalized(pb, penalty, second=True, prune=False, bound=False)
    assert close(best.cost, ref2[0][T])
    assert (second is None) == (ref2[1][T] == np.inf)
    if second is not None:
        assert close(second.cost, ref2[1][T])


@settings(max_examples=60)
@given(one_feature(max_T=9))
def test_functional_pruning_matches_brute_force(case):
    X, penalty = case
    cost, _ = brute.brute_penalized(X, penalty)
    assert close(segment_penalized(X, penalty).cost, cost)


def test_functional_pruning_keeps_few_starts_without_change():
    # PELT removes no start of a sequence without change (every end scans all earlier starts); the
    # functional pruning keeps a few dozen
    T = 20_000
    X = np.random.default_rng(5).normal(size=T)
    pb = seg._Problem(X, None, 1, None)
    beta = 2 * np.log(T)
    out = seg._run_penalized(pb, beta)
    assert out[-1] < 40 * T
    pelt = seg._run_penalized(pb, beta, functional=False, max_live=10 ** 9)
    assert pelt[-1] > 1000 * T
    assert close(out[0][T], pelt[0][T])


def test_functional_pruning_applies_only_where_it_is_exact():
    X = np.random.default_rng(6).normal(size=(50, 2))
    assert not seg._functional_applies(seg._Problem(X, None, 1, None), 0.0, False, True, True)  # two features
    one = X[:, :1]
    assert not seg._functional_applies(seg._Problem(one, None, 2, None), 0.0, False, True, True)  # min_size 2
    pb = seg._Problem(one, None, 1, None)
    assert seg._functional_applies(pb, 0.0, False, True, True)
    assert not seg._functional_applies(pb, 1.0, False, True, True)   # the Frobenius overlap term
    assert not seg._functional_applies(pb, 0.0, True, True, True)    # the two-value second best
    assert not seg._functional_applies(pb, 0.0, False, False, True)  # pruning switched off
