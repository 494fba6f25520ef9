"""Bad input and edge cases of the segmentation decoders and of the label constraints."""

import numpy as np
import pytest

from marginalia.decoders.seg_constraints import (
    BoundaryConstraint,
    RegionConstraint,
    SegmentConstraints,
    constraints_from_labels,
)
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
from marginalia.types import AnchorLabel, BoundaryLabel, RegionKind, RegionLabel, Segmentation, Sequence

X = np.random.default_rng(0).normal(size=(12, 2))


def region(a, b, kind, id):
    return RegionLabel("item", start=a, stop=b, kind=kind, id=id)


@pytest.mark.parametrize("bad, words", [
    (np.zeros((0, 2)), "empty"),
    (np.zeros((3, 0)), "feature"),
    (np.zeros((2, 2, 2)), "shape"),
    (np.array([[0.0], [np.nan]]), "non-finite"),
    (np.array([0.0, np.inf, 1.0]), "non-finite"),
    ("abc", "convert"),
])
def test_bad_sequences_are_rejected_with_a_reason(bad, words):
    with pytest.raises(ParameterError, match=words):
        segment_penalized(bad, 1.0)


@pytest.mark.parametrize("penalty", [-1.0, float("nan"), float("inf"), "x", None])
def test_bad_penalty(penalty):
    with pytest.raises(ParameterError, match="penalty"):
        segment_penalized(X, penalty)


@pytest.mark.parametrize("min_size", [0, -2, 1.5, 13, True])
def test_bad_min_size(min_size):
    with pytest.raises(ParameterError, match="min_size"):
        segment_penalized(X, 1.0, min_size=min_size)


@pytest.mark.parametrize("metric", [np.ones(3), np.ones((2, 3)), np.ones((2, 2, 2)), np.array([1.0, np.nan])])
def test_metric_of_wrong_shape(metric):
    with pytest.raises(ParameterError, match="metric"):
        segment_penalized(X, 1.0, metric=metric)


@pytest.mark.parametrize("K", [0, 13, -1, 2.0])
def test_bad_number_of_segments(K):
    with pytest.raises(ParameterError, match="n_segments"):
        segment_fixed_k(X, K)


def test_k_larger_than_t_over_min_size():
    with pytest.raises(ParameterError, match="T // min_size = 4"):
        segment_fixed_k(X, 5, min_size=3)
    assert segment_fixed_k(X, 4, min_size=3).segmentation.changes.tolist() == [3, 6, 9, 12]


def test_one_sample_sequence_has_one_segmentation():
    r = segment_penalized(np.array([[3.0, 1.0]]), 2.5)
    assert r.segmentation.changes.tolist() == [1] and r.cost == pytest.approx(2.5)
    best, second = segment_second_best(np.array([1.0]), 1.0)
    assert best.segmentation.changes.tolist() == [1] and second is None
    assert segment_fixed_k(np.array([1.0]), 1).segmentation.changes.tolist() == [1]


def test_sequence_objects_and_1d_input_are_accepted():
    seq = Sequence(values=np.r_[np.zeros(10), np.full(10, 4.0)])
    assert segment_penalized(seq, 1.0).segmentation.changes.tolist() == [10, 20]
    assert segment_penalized(seq.values[:, 0], 1.0).segmentation.changes.tolist() == [10, 20]


def test_metric_forms_agree():
    w = np.array([2.0, 0.5])
    a = segment_penalized(X, 1.0, metric=w)
    b = segment_penalized(X, 1.0, metric=np.diag(w))
    c = segment_penalized(X * w, 1.0)
    assert a.cost == pytest.approx(b.cost) == pytest.approx(c.cost)
    assert a.segmentation == b.segmentation == c.segmentation


@pytest.mark.parametrize("weights", [[0.0, 1.5, 0.0], [0.0, 0.0, 0.0], [2.0, 0.5, 1.0]])
def test_features_of_weight_zero_change_no_decoding(weights):
    rng = np.random.default_rng(5)
    Y = rng.normal(size=(40, 3)) + np.repeat(rng.normal(0, 3, size=(4, 3)), 10, axis=0)
    w = np.array(weights)
    used = np.flatnonzero(w)
    kept = Y[:, used] * w[used] if used.size else np.zeros((40, 1))
    for decode in (lambda Z, m: segment_penalized(Z, 2.0, metric=m, min_size=2),
                   lambda Z, m: segment_fixed_k(Z, 3, metric=m, min_size=2),
                   lambda Z, m: segment_second_best(Z, 2.0, metric=m, min_size=2)[1]):
        a, b = decode(Y, w), decode(kept, None)
        assert a.segmentation == b.segmentation and a.cost == pytest.approx(b.cost, abs=1e-9)
    seg = segment_penalized(kept, 2.0).segmentation
    assert segmentation_cost(Y, seg, 2.0, metric=w) == pytest.approx(segmentation_cost(kept, seg, 2.0))


def test_constraints_must_match_the_sequence_length():
    with pytest.raises(ParameterError, match="constraints"):
        segment_penalized(X, 1.0, constraints=SegmentConstraints(11))
    with pytest.raises(ParameterError, match="constraints"):
        segment_penalized(X, 1.0, constraints=[region(0, 3, RegionKind.ZERO, "a")])


def test_labels_out_of_range():
    with pytest.raises(ParameterError, match="out of range"):
        constraints_from_labels([region(5, 13, RegionKind.ZERO, "r")], 12)
    with pytest.raises(ParameterError, match="out of range"):
        constraints_from_labels([BoundaryLabel("item", index=12, id="b")], 12)
    with pytest.raises(ParameterError, match="RegionLabel or BoundaryLabel"):
        constraints_from_labels([AnchorLabel("item", event=0, time_s=1.0)], 12)
    with pytest.raises(ParameterError, match="n_samples"):
        constraints_from_labels([], 0)
    with pytest.raises(ParameterError, match="out of range"):
        SegmentConstraints(12, (RegionConstraint(0, 20, 0, 0, "z"),))
    with pytest.raises(ParameterError):
        RegionConstraint(0, 5, 2, 3, "bad counts")


@pytest.mark.parametrize("labels, ids", [
    # exactly one inside a region with none
    ([region(2, 10, RegionKind.ZERO, "zero"), region(4, 7, RegionKind.ONE, "one"),
      region(0, 2, RegionKind.ZERO, "unrelated")], {"zero", "one"}),
    # two boundaries inside an exactly-one region
    ([region(2, 9, RegionKind.ONE, "one"), BoundaryLabel("item", index=4, id="b4"),
      BoundaryLabel("item", index=6, id="b6"), BoundaryLabel("item", index=10, id="b10")], {"one", "b4", "b6"}),
    # a boundary where the same segment was asserted
    ([region(0, 6, RegionKind.SAME, "same"), BoundaryLabel("item", index=3, id="b3")], {"same", "b3"}),
    # at least one inside a region with none
    ([region(3, 9, RegionKind.AT_LEAST_ONE, "some"), region(2, 11, RegionKind.ZERO, "none")], {"some", "none"}),
])
def test_infeasible_labels_name_the_conflict(labels, ids):
    with pytest.raises(InfeasibleLabelsError) as err:
        constraints_from_labels(labels, 12)
    assert set(err.value.label_ids) == ids
    for i in ids:
        assert i in str(err.value)


def test_min_size_can_make_labels_infeasible():
    cons = constraints_from_labels([BoundaryLabel("item", index=4, id="b4"),
                                    BoundaryLabel("item", index=6, id="b6"),
                                    region(8, 12, RegionKind.ZERO, "z")], 12)
    assert segment_penalized(X, 1.0, constraints=cons, min_size=2).segmentation.breakpoints[:2].tolist() == [4, 6]
    with pytest.raises(InfeasibleLabelsError, match="min_size=3") as err:
        segment_penalized(X, 1.0, constraints=cons, min_size=3)
    assert set(err.value.label_ids) == {"b4", "b6"}


def test_fixed_k_infeasible_with_labels_is_a_parameter_error():
    cons = constraints_from_labels([BoundaryLabel("item", index=3, id="b3"),
                                    BoundaryLabel("item", index=8, id="b8")], 12)
    with pytest.raises(ParameterError, match="exactly 2 segments"):
        segment_fixed_k(X, 2, constraints=cons)
    assert segment_fixed_k(X, 3, constraints=cons).segmentation.changes.tolist() == [3, 8, 12]


def test_labels_are_obeyed_against_the_data():
    # the data say one change at 10; the labels force it to 7 and forbid it in [8, 14)
    Y = np.r_[np.zeros(10), np.full(10, 5.0)]
    cons = constraints_from_labels([region(4, 9, RegionKind.ONE, "one"),
                                    region(8, 14, RegionKind.ZERO, "zero")], 20)
    r = segment_penalized(Y, 1.0, constraints=cons)
    assert cons.is_satisfied_by(r.segmentation)
    assert r.segmentation.changes.tolist() == [8, 14, 20]


def test_loss_augmented_bad_arguments():
    truth = Segmentation([6, 12])
    with pytest.raises(ParameterError, match="loss"):
        segment_loss_augmented(X, 1.0, truth, loss="zero-one")
    with pytest.raises(ParameterError, match="loss_scale"):
        segment_loss_augmented(X, 1.0, truth, loss_scale=-1)
    with pytest.raises(ParameterError, match="truth"):
        segment_loss_augmented(X, 1.0, Segmentation([5, 10]))


def test_losses_and_cost_helpers():
    a = Segmentation([4, 12])
    b = Segmentation([4, 8, 12])
    assert hamming_loss(a, b) == 1
    assert hamming_loss([4, 12], [12]) == 1
    # K + K* - 2 sum overlap^2/(n n*): 2 + 3 - 2 (16/16 + 16/32 + 16/32) = 1
    assert frobenius_loss(a, b) == pytest.approx(1.0)
    with pytest.raises(ParameterError, match="b"):
        frobenius_loss(a, Segmentation([4, 10]))
    with pytest.raises(ParameterError, match="segmentation"):
        segmentation_cost(X, Segmentation([4, 10]))
    assert segmentation_cost(X, [12]) == pytest.approx(((X - X.mean(0)) ** 2).sum())


def test_constraint_objects():
    cons = constraints_from_labels([region(0, 5, RegionKind.ZERO, "z"), BoundaryLabel("item", index=7, id="b")], 12)
    assert cons.label_ids == ("z", "b")
    assert cons.violations(Segmentation([3, 12])) == ["z", "b"]
    assert cons.is_satisfied_by(Segmentation([7, 12]))
    assert isinstance(cons.boundaries[0], BoundaryConstraint)
    lo, hi, end_ok, _, _ = cons.transition_bounds(1)
    assert not end_ok[1:5].any() and end_ok[5] and lo[8] == 7 and lo[7] == 0
