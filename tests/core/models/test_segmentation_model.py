import itertools
import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from marginalia.decoders.segmentation import segmentation_cost
from marginalia.exceptions import InfeasibleLabelsError, ParameterError
from marginalia.metrics import RegionErrors, region_errors
from marginalia.models.segmentation import PartialTarget, SegmentationModel, label_violations, within_segment_scatter
from marginalia.types import BoundaryLabel, RegionKind, RegionLabel, Segmentation


def all_segmentations(T, min_size=1):
    for k in range(T):
        for cuts in itertools.combinations(range(1, T), k):
            ends = list(cuts) + [T]
            starts = [0] + list(cuts)
            if all(e - s >= min_size for s, e in zip(starts, ends)):
                yield Segmentation(ends, T)


def fitted_model(X, metric="diagonal", **kw):
    m = SegmentationModel(metric=metric, **kw)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        m.fit_scales([X])
    return m


def random_w(m, rng):
    p = m.n_features_
    if m.metric == "diagonal":
        return np.concatenate([rng.uniform(0, 2, p), [rng.uniform(0, 2)]])
    A = rng.normal(size=(p, p))
    return np.concatenate([(A @ A.T).ravel(), [rng.uniform(0, 2)]])


def assert_violation_decode_is_exact(T, seed, labels, scale):
    """On random data (T, 2) drawn from ``seed``, the violations decoder's answer to ``labels`` is worth as much as
    the best of every segmentation: ``scale * violations + score``, by brute force."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(T, 2))
    m = fitted_model(X, partial_loss="violations")
    w = random_w(m, rng)
    labels = tuple(labels)
    y = m.loss_augmented_decode(X, PartialTarget(labels, Segmentation([T]), T), w, loss_scale=scale)
    best = max(scale * label_violations(labels, z) + m.score(X, z, w) for z in all_segmentations(T))
    assert scale * label_violations(labels, y) + m.score(X, y, w) == pytest.approx(best, rel=1e-8, abs=1e-8)


data = st.tuples(st.integers(3, 7), st.integers(1, 2), st.integers(0, 10 ** 6))


@settings(max_examples=25)
@given(data, st.sampled_from(["diagonal", "full"]))
def test_score_is_minus_the_decoder_cost_and_decode_is_the_argmax(d, metric):
    T, p, seed = d
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(T, p)) + np.repeat(rng.normal(0, 3, (2, p)), [T // 2, T - T // 2], axis=0)
    m = fitted_model(X, metric)
    w = random_w(m, rng)
    L, pen = m.decoder_metric(w, T)
    segs = list(all_segmentations(T))
    for y in segs[:5]:
        assert m.score(X, y, w) == pytest.approx(-segmentation_cost(X, y, pen, metric=L), rel=1e-8, abs=1e-8)
    best = max(m.score(X, y, w) for y in segs)
    assert m.score(X, m.decode(X, w), w) == pytest.approx(best, rel=1e-8, abs=1e-8)


@settings(max_examples=25)
@given(data, st.sampled_from(["frobenius", "hamming"]))
def test_loss_augmented_decode_maximises_loss_plus_score(d, loss):
    T, p, seed = d
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(T, p))
    m = fitted_model(X, loss=loss)
    w = random_w(m, rng)
    segs = list(all_segmentations(T))
    truth = segs[rng.integers(len(segs))]
    y = m.loss_augmented_decode(X, truth, w)
    best = max(m.loss(truth, z) + m.score(X, z, w) for z in segs)
    assert m.loss(truth, y) + m.score(X, y, w) == pytest.approx(best, rel=1e-8, abs=1e-8)


@st.composite
def labelled(draw):
    T = draw(st.integers(3, 8))
    seed = draw(st.integers(0, 10 ** 6))
    labels = []
    pos = 0
    while pos < T - 1 and len(labels) < 3:
        start = draw(st.integers(pos, T - 2))
        stop = draw(st.integers(start + 2, T))
        kind = draw(st.sampled_from(list(RegionKind)))
        labels.append(RegionLabel(item_id="x", start=start, stop=stop, kind=kind))
        pos = stop
    if draw(st.booleans()):
        labels.append(BoundaryLabel(item_id="x", index=draw(st.integers(1, T - 1))))
    return T, seed, labels


@pytest.mark.slow
@settings(max_examples=40)
@given(labelled(), st.floats(0.1, 5.0))
def test_violation_loss_augmented_decode_is_exact(case, scale):
    T, seed, labels = case
    regions = [l for l in labels if isinstance(l, RegionLabel)]
    bounds = [b for b in labels if isinstance(b, BoundaryLabel) and not any(r.start < b.index < r.stop for r in regions)]
    assert_violation_decode_is_exact(T, seed, regions + bounds, scale)


@st.composite
def touching(draw):
    """Region labels sharing their end sample with the next one's start (revealed samples give these)."""
    T = draw(st.integers(4, 8))
    seed = draw(st.integers(0, 10 ** 6))
    labels = []
    start = draw(st.integers(0, T - 3))
    while start < T - 1 and len(labels) < 4:
        stop = draw(st.integers(start + 2, min(T, start + 4)))
        labels.append(RegionLabel(item_id="x", start=start, stop=stop, kind=draw(st.sampled_from(list(RegionKind)))))
        start = stop - 1
    return T, seed, labels


@pytest.mark.slow
@settings(max_examples=40)
@given(touching(), st.floats(0.1, 5.0))
def test_violation_decode_counts_every_label_of_touching_regions(case, scale):
    T, seed, labels = case
    assert_violation_decode_is_exact(T, seed, labels, scale)


def test_min_size_respected_by_violation_decoder():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(9, 1))
    m = fitted_model(X, min_size=3)
    lab = RegionLabel(item_id="x", start=0, stop=9, kind=RegionKind.ZERO)
    y = m.loss_augmented_decode(X, PartialTarget((lab,), Segmentation([9]), 9), m.join_w([1.0], 0.0), loss_scale=10)
    assert np.all(np.diff(np.concatenate([[0], y.changes])) >= 3) and y.n_segments > 1


def test_projection():
    m = SegmentationModel(metric="full")
    m.n_features_ = 2
    w = m.project(np.array([1.0, 2.0, 0.0, -3.0, -1.0]))
    B = w[:4].reshape(2, 2)
    assert np.allclose(B, B.T) and np.linalg.eigvalsh(B).min() >= -1e-12 and w[-1] == 0
    d = SegmentationModel()
    d.n_features_ = 2
    assert d.project(np.array([-1.0, 2.0, -0.5])).tolist() == [0.0, 2.0, 0.0]


def test_label_errors_known_answers():
    seg = Segmentation([5, 12, 20])
    labs = [RegionLabel(item_id="a", start=0, stop=8, kind=RegionKind.ZERO),     # change at 5 -> FP
            RegionLabel(item_id="a", start=8, stop=14, kind=RegionKind.ONE),     # change at 12 -> ok
            RegionLabel(item_id="a", start=14, stop=20, kind=RegionKind.ONE),    # none -> FN
            RegionLabel(item_id="a", start=0, stop=20, kind=RegionKind.AT_LEAST_ONE)]
    assert region_errors(labs, seg) == RegionErrors(fp=1, fn=1, n_labels=4)
    assert label_violations(labs + [BoundaryLabel(item_id="a", index=12), BoundaryLabel(item_id="a", index=3)], seg) == 3


def test_scatter_matches_definition():
    X = np.arange(12.0).reshape(6, 2) ** 1.5
    seg = Segmentation([2, 6])
    full = within_segment_scatter(X, seg, full=True)
    assert np.allclose(np.diag(full), within_segment_scatter(X, seg))
    D = np.vstack([X[:2] - X[:2].mean(0), X[2:] - X[2:].mean(0)])
    assert np.allclose(full, D.T @ D)


def test_initial_w_tunes_the_penalty_on_labels():
    rng = np.random.default_rng(3)
    Xs, Ys = [], []
    for _ in range(4):
        X = rng.normal(size=(60, 1))
        X[30:] += 4
        Xs.append(X)
        Ys.append(Segmentation([30, 60]))
    m = SegmentationModel()
    w = m.initial_w(Xs, Ys)
    assert all(m.decode(X, w) == y for X, y in zip(Xs, Ys))


def test_bad_inputs_are_refused():
    m = SegmentationModel()
    with pytest.raises(ParameterError, match="metric"):
        SegmentationModel(metric="cosine")
    with pytest.raises(ParameterError, match="sample 1, feature 0"):
        m.initial_w([np.array([[0.0], [np.nan], [1.0]])])
    with pytest.raises(ParameterError, match="constant"):
        m.initial_w([np.ones((10, 2))])
    X = np.random.default_rng(0).normal(size=(10, 2))
    m.initial_w([X])
    with pytest.raises(ParameterError, match="shape"):
        m.decode(X, np.ones(5))
    with pytest.raises(ParameterError, match="NaN"):
        m.decode(X, np.array([1.0, np.nan, 1.0]))
    with pytest.raises(ParameterError, match="expected 2 features"):
        m.decode(np.zeros((10, 3)), np.ones(3))


def test_one_constant_feature_warns_and_is_ignored():
    rng = np.random.default_rng(0)
    X = np.column_stack([rng.normal(size=20), np.full(20, 7.0)])
    m = SegmentationModel()
    with pytest.warns(UserWarning, match=r"\[1\]"):
        w = m.initial_w([X])
    assert m.metric_matrix(w)[1, 1] == 0


def test_contradictory_labels_raise():
    X = np.random.default_rng(0).normal(size=(10, 1))
    m = fitted_model(X)
    labs = [RegionLabel(item_id="a", start=0, stop=6, kind=RegionKind.ZERO),
            RegionLabel(item_id="a", start=2, stop=5, kind=RegionKind.ONE)]
    with pytest.raises(InfeasibleLabelsError):
        m.complete(X, labs, m.default_w())


@pytest.mark.slow
@settings(max_examples=40)
@given(st.one_of(labelled(), touching()), st.floats(0.1, 5.0))
def test_count_loss_augmented_decode_is_exact(case, scale):
    from marginalia.models.segmentation import label_change_errors
    T, seed, labels = case
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(T, 2))
    m = fitted_model(X, partial_loss="counts")
    w = random_w(m, rng)
    regions = [l for l in labels if isinstance(l, RegionLabel)]
    bounds = [b for b in labels if isinstance(b, BoundaryLabel) and not any(r.start < b.index < r.stop for r in regions)]
    used = tuple(regions + bounds)
    target = PartialTarget(used, Segmentation([T]), T)
    y = m.loss_augmented_decode(X, target, w, loss_scale=scale)
    best = max(scale * label_change_errors(used, z) + m.score(X, z, w) for z in all_segmentations(T))
    assert m.loss(target, y) == label_change_errors(used, y)
    assert scale * label_change_errors(used, y) + m.score(X, y, w) == pytest.approx(best, rel=1e-8, abs=1e-8)


def test_count_loss_known_answers():
    from marginalia.models.segmentation import label_change_errors
    seg = Segmentation([3, 5, 6, 9, 12], 12)          # changes at 3, 5, 6, 9
    zero = RegionLabel(item_id="x", start=2, stop=8, kind=RegionKind.ZERO)       # holds 3, 5, 6
    one = RegionLabel(item_id="x", start=2, stop=8, kind=RegionKind.ONE)
    some = RegionLabel(item_id="x", start=9, stop=12, kind=RegionKind.AT_LEAST_ONE)  # holds none
    assert label_change_errors([zero], seg) == 3
    assert label_change_errors([one], seg) == 2
    assert label_change_errors([some], seg) == 1
    assert label_change_errors([BoundaryLabel(item_id="x", index=4)], seg) == 1
    assert label_violations([zero, one, some], seg) == 3


@settings(max_examples=30, deadline=None)
@given(st.integers(3, 40), st.integers(1, 4), st.integers(0, 10 ** 6))
def test_joint_feature_from_cumulative_sums_equals_the_plain_one(T, p, seed):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(T, p)) * rng.uniform(0.1, 10, p) + rng.normal(0, 50, p)
    m = fitted_model(X)
    stats = m.feature_stats(X)
    for _ in range(3):
        cuts = np.sort(rng.choice(np.arange(1, T), rng.integers(0, T), replace=False))
        y = Segmentation(list(cuts) + [T], T)
        np.testing.assert_allclose(m.joint_feature(X, y, stats=stats), m.joint_feature(X, y), rtol=1e-9, atol=1e-8)
    assert fitted_model(X, metric="full").feature_stats(X) is None
    m.fit_scales([X * 2.0])           # new units: the old statistics are refused, not silently reused
    with pytest.raises(ParameterError, match="stats"):
        m.joint_feature(X, y, stats=stats)
