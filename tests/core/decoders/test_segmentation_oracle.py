"""Segmentation decoders against brute-force enumeration on tiny inputs (hypothesis)."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from marginalia.decoders import brute
from marginalia.decoders.seg_constraints import SegmentConstraints, constraints_from_labels
from marginalia.decoders.segmentation import (
    frobenius_loss,
    hamming_loss,
    segment_fixed_k,
    segment_loss_augmented,
    segment_penalized,
    segment_second_best,
    segmentation_cost,
)
from marginalia.exceptions import InfeasibleLabelsError, ParameterError
from marginalia.types import BoundaryLabel, RegionKind, RegionLabel, Segmentation

EXAMPLES = 60


def close(a, b):
    return abs(a - b) <= 1e-9 * max(1.0, abs(a), abs(b))


@st.composite
def problems(draw, max_T=8):
    T = draw(st.integers(1, max_T))
    p = draw(st.integers(1, 2))
    # small integers make exact ties common, which is where tie-breaking bugs hide
    vals = draw(st.lists(st.integers(-3, 3), min_size=T * p, max_size=T * p))
    X = np.array(vals, dtype=float).reshape(T, p) + draw(st.floats(-2, 2)) * np.arange(T)[:, None] / T
    kind = draw(st.sampled_from(["none", "diag", "full"]))
    if kind == "none":
        metric = None
    elif kind == "diag":
        metric = np.array(draw(st.lists(st.floats(0, 2), min_size=p, max_size=p)))
    else:
        metric = np.array(draw(st.lists(st.floats(-2, 2), min_size=2 * p, max_size=2 * p))).reshape(2, p)
    min_size = draw(st.integers(1, 2))
    labels = []
    if T >= 2:
        for _ in range(draw(st.integers(0, 3))):
            if draw(st.booleans()):
                a = draw(st.integers(0, T - 2))
                b = draw(st.integers(a + 2, T))
                k = draw(st.sampled_from(list(RegionKind)))
                labels.append(RegionLabel("x", start=a, stop=b, kind=k))
            else:
                labels.append(BoundaryLabel("x", index=draw(st.integers(1, T - 1))))
    return X, metric, min_size, labels


def build_constraints(labels, T):
    """Constraints without the feasibility check of constraints_from_labels."""
    try:
        return constraints_from_labels(labels, T), True
    except InfeasibleLabelsError:
        from marginalia.decoders.seg_constraints import BoundaryConstraint, RegionConstraint
        regions = tuple(RegionConstraint(l.start, l.stop, *l.kind.bounds, l.id)
                        for l in labels if isinstance(l, RegionLabel))
        bounds = tuple(BoundaryConstraint(l.index, l.id) for l in labels if isinstance(l, BoundaryLabel))
        return SegmentConstraints(T, regions, bounds), False


@settings(max_examples=EXAMPLES)
@given(problems(), st.floats(0, 4))
def test_penalized_matches_oracle_and_respects_labels(prob, penalty):
    X, metric, m, labels = prob
    T = X.shape[0]
    if m > T:
        with pytest.raises(ParameterError):
            segment_penalized(X, penalty, metric=metric, min_size=m)
        return
    cons, _ = build_constraints(labels, T)
    oracle = brute.brute_penalized(X, penalty, metric=metric, min_size=m, constraints=cons)
    if oracle is None:
        with pytest.raises(InfeasibleLabelsError) as err:
            segment_penalized(X, penalty, metric=metric, min_size=m, constraints=cons)
        # the named labels really conflict on their own
        ids = set(err.value.label_ids)
        assert ids and ids <= {l.id for l in labels}
        sub = cons.subset(i for i, lid in enumerate(cons.label_ids) if lid in ids)
        assert brute.brute_penalized(X, penalty, metric=metric, min_size=m, constraints=sub) is None
        return
    res = segment_penalized(X, penalty, metric=metric, min_size=m, constraints=cons)
    assert close(res.cost, oracle[0])
    assert close(res.cost, brute.brute_cost(X, res.segmentation, penalty, metric=metric))
    assert cons.is_satisfied_by(res.segmentation)
    assert np.diff(np.r_[0, res.segmentation.changes]).min() >= m


@pytest.mark.slow
@settings(max_examples=EXAMPLES)
@given(problems(), st.integers(1, 8))
def test_fixed_k_matches_oracle(prob, K):
    X, metric, m, labels = prob
    T = X.shape[0]
    if m > T:
        return
    cons, feasible = build_constraints(labels, T)
    if K * m > T:
        with pytest.raises(ParameterError):
            segment_fixed_k(X, K, metric=metric, min_size=m, constraints=cons)
        return
    oracle = brute.brute_fixed_k(X, K, metric=metric, min_size=m, constraints=cons)
    if oracle is None:
        with pytest.raises(ParameterError):
            segment_fixed_k(X, K, metric=metric, min_size=m, constraints=cons)
        return
    res = segment_fixed_k(X, K, metric=metric, min_size=m, constraints=cons)
    assert res.segmentation.n_segments == K
    assert close(res.cost, oracle[0])
    assert cons.is_satisfied_by(res.segmentation)


@st.composite
def flat_problems(draw, max_T=8):
    """Sequences without change: a constant (every split ties) or a constant plus small noise."""
    T = draw(st.integers(1, max_T))
    p = draw(st.integers(1, 2))
    X = np.full((T, p), draw(st.floats(-3, 3)))
    if draw(st.booleans()):
        X = X + 0.05 * np.array(draw(st.lists(st.integers(-2, 2), min_size=T * p, max_size=T * p))).reshape(T, p)
    min_size = draw(st.integers(1, 2))
    labels = []
    if T >= 2 and draw(st.booleans()):
        a = draw(st.integers(0, T - 2))
        labels.append(RegionLabel("x", start=a, stop=draw(st.integers(a + 2, T)),
                                  kind=draw(st.sampled_from(list(RegionKind)))))
    return X, None, min_size, labels


@settings(max_examples=EXAMPLES)
@given(flat_problems(), st.floats(0, 4), st.booleans(), st.integers(1, 5))
def test_second_best_without_change_matches_oracle(prob, penalty, fixed, K):
    test_second_best_matches_oracle.hypothesis.inner_test(prob, penalty, fixed, K)


@settings(max_examples=EXAMPLES)
@given(problems(), st.floats(0, 4), st.booleans(), st.integers(1, 4))
def test_second_best_matches_oracle(prob, penalty, fixed, K):
    X, metric, m, labels = prob
    T = X.shape[0]
    if m > T:
        return
    cons, _ = build_constraints(labels, T)
    n_segments = K if fixed else None
    rows = brute.brute_second_best(X, penalty, metric=metric, min_size=m, constraints=cons, n_segments=n_segments)
    if not rows:
        with pytest.raises(ParameterError):
            segment_second_best(X, penalty, metric=metric, min_size=m, constraints=cons, n_segments=n_segments)
        return
    best, second = segment_second_best(X, penalty, metric=metric, min_size=m, constraints=cons,
                                       n_segments=n_segments)
    assert close(best.cost, rows[0][0])
    if len(rows) == 1:
        assert second is None
        return
    assert second is not None
    assert second.segmentation != best.segmentation
    assert close(second.cost, rows[1][0])
    pen = 0.0 if fixed else penalty
    assert close(second.cost, brute.brute_cost(X, second.segmentation, pen, metric=metric))
    assert cons.is_satisfied_by(second.segmentation)
    if fixed:
        assert second.segmentation.n_segments == K


@pytest.mark.slow
@settings(max_examples=EXAMPLES)
@given(problems(), st.floats(0, 3), st.sampled_from(["frobenius", "hamming"]), st.floats(0, 3), st.data())
def test_loss_augmented_matches_oracle(prob, penalty, loss, scale, data):
    X, metric, m, labels = prob
    T = X.shape[0]
    if m > T:
        return
    cons, feasible = build_constraints(labels, T)
    if not feasible:
        return
    cuts = data.draw(st.sets(st.integers(1, max(1, T - 1)), max_size=3)) if T > 1 else set()
    truth = Segmentation(sorted(c for c in cuts if c < T) + [T], T)
    oracle = brute.brute_loss_augmented(X, penalty, truth, loss=loss, loss_scale=scale, metric=metric,
                                        min_size=m, constraints=cons)
    if oracle is None:
        with pytest.raises(InfeasibleLabelsError):
            segment_loss_augmented(X, penalty, truth, loss=loss, loss_scale=scale, metric=metric,
                                   min_size=m, constraints=cons)
        return
    res = segment_loss_augmented(X, penalty, truth, loss=loss, loss_scale=scale, metric=metric,
                                 min_size=m, constraints=cons)
    assert close(res.objective, oracle[0])
    assert close(res.objective, res.cost - scale * res.loss)
    assert close(res.cost, brute.brute_cost(X, res.segmentation, penalty, metric=metric))
    fn = brute.brute_frobenius_loss if loss == "frobenius" else brute.brute_hamming_loss
    assert close(res.loss, fn(truth, res.segmentation))
    assert cons.is_satisfied_by(res.segmentation)


@settings(max_examples=EXAMPLES)
@given(st.integers(1, 9), st.data())
def test_losses_match_dense_definitions(T, data):
    segs = list(brute.brute_force_segmentations(T))
    a = data.draw(st.sampled_from(segs))
    b = data.draw(st.sampled_from(segs))
    assert close(frobenius_loss(a, b), brute.brute_frobenius_loss(a, b))
    assert hamming_loss(a, b) == brute.brute_hamming_loss(a, b)
    assert frobenius_loss(a, a) == pytest.approx(0.0, abs=1e-12)
    assert frobenius_loss(a, b) >= abs(a.n_segments - b.n_segments) - 1e-9


@settings(max_examples=30)
@given(problems(), st.floats(0, 4))
def test_segmentation_cost_matches_oracle(prob, penalty):
    X, metric, m, _ = prob
    for seg in list(brute.brute_force_segmentations(X.shape[0]))[:20]:
        assert close(segmentation_cost(X, seg, penalty, metric=metric),
                     brute.brute_cost(X, seg, penalty, metric=metric))


def test_brute_force_enumeration_counts():
    # compositions of T into parts >= m
    assert sum(1 for _ in brute.brute_force_segmentations(6)) == 2 ** 5
    assert sum(1 for _ in brute.brute_force_segmentations(6, 2)) == 5  # 6, 2+4, 4+2, 3+3, 2+2+2
    with pytest.raises(ParameterError):
        list(brute.brute_force_segmentations(40))
