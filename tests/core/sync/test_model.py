"""WarpingModel: joint feature map, losses and their concave extension, loss-augmented DTW vs brute force."""

import io

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from marginalia.decoders.warping import dtw_linear, pairwise_cost, warping_area_loss, warping_cost, warping_hamming
from marginalia.exceptions import ParameterError
from marginalia.models.persistence import save_model_parts
from marginalia.sync.model import WarpingModel, area_curvature_bound, warping_matrix
from marginalia.types import WarpAnchorLabel, Warping

from .synthetic import all_paths

PATHS = {(4, 4): [Warping(p) for p in all_paths(4, 4)], (5, 4): [Warping(p) for p in all_paths(5, 4)]}


def dense_area(a, b):
    TA, TB = a.shape
    E = warping_matrix(a) - warping_matrix(b)
    LA, LB = np.tril(np.ones((TA, TA))), np.tril(np.ones((TB, TB)))
    return 0.5 * (np.sum((LA @ E) ** 2) + np.sum((E @ LB) ** 2))


def random_w(model, rng):
    w = model.initial_w([(np.zeros((2, 3)), np.zeros((2, 3)))])
    return model.project(w + rng.normal(size=w.shape))


def hull_point(paths, rng, k=4):
    lam = rng.dirichlet(np.ones(k))
    return sum(l * warping_matrix(paths[i]) for l, i in zip(lam, rng.choice(len(paths), k)))


def test_delannoy_counts_of_the_brute_force_grids():
    assert len(PATHS[(4, 4)]) == 63 and len(PATHS[(5, 4)]) == 129


@pytest.mark.parametrize("n", [1, 2, 3, 7, 12])
def test_area_curvature_bound_is_the_largest_eigenvalue(n):
    L = np.tril(np.ones((n, n)))
    assert area_curvature_bound(n) == pytest.approx(np.linalg.eigvalsh(L.T @ L).max(), rel=1e-10)


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 2**31 - 1), shape=st.sampled_from([(4, 4), (5, 4)]))
def test_area_loss_matches_the_matrix_formula(seed, shape):
    rng = np.random.default_rng(seed)
    P = PATHS[shape]
    a, b = P[rng.integers(len(P))], P[rng.integers(len(P))]
    assert warping_area_loss(a, b) == pytest.approx(dense_area(a, b))
    assert warping_area_loss(a, b) == pytest.approx(warping_area_loss(b, a))
    assert (warping_area_loss(a, b) == 0) == (a == b)


def test_area_loss_is_the_area_between_paths_without_vertical_moves():
    # one cell per column: the L_A term is the sum of the row offsets
    a = Warping(np.array([(0, 0), (1, 1), (2, 2), (2, 3), (2, 4)]))
    b = Warping(np.array([(0, 0), (0, 1), (0, 2), (1, 3), (2, 4)]))
    E = warping_matrix(a) - warping_matrix(b)
    assert np.sum((np.tril(np.ones((3, 3))) @ E) ** 2) == 0 + 1 + 2 + 1 + 0
    assert warping_area_loss(a, b) == pytest.approx(dense_area(a, b))


@pytest.mark.parametrize("metric", ["diagonal", "full"])
def test_score_is_minus_the_dtw_cost_and_decode_is_the_cheapest_path(metric):
    rng = np.random.default_rng(1)
    A, B = rng.normal(size=(5, 3)), rng.normal(size=(4, 3))
    model = WarpingModel(metric)
    w = random_w(model, rng)
    L = model.decoder_metric(w)
    for y in PATHS[(5, 4)][::7]:
        assert model.score((A, B), y, w) == pytest.approx(-warping_cost(A, B, y, metric=L))
        assert np.allclose(model.joint_feature_relaxed((A, B), warping_matrix(y)), model.joint_feature((A, B), y))
    best = max(PATHS[(5, 4)], key=lambda y: model.score((A, B), y, w))
    assert model.score((A, B), model.decode((A, B), w), w) == pytest.approx(model.score((A, B), best, w))
    M = model.metric_matrix(w)
    C = model.cost_matrix((A, B), w)
    d = A[2] - B[3]
    assert C[2, 3] == pytest.approx(d @ M @ d)


@pytest.mark.slow
@settings(max_examples=30, deadline=None)
@given(seed=st.integers(0, 2**31 - 1), shape=st.sampled_from([(4, 4), (5, 4)]),
       metric=st.sampled_from(["diagonal", "full"]), loss=st.sampled_from(["hamming", "area"]),
       scale=st.sampled_from([0.0, 0.3, 1.0, 5.0]), relaxed=st.booleans())
def test_loss_augmented_decode_matches_brute_force(seed, shape, metric, loss, scale, relaxed):
    rng = np.random.default_rng(seed)
    P = PATHS[shape]
    A, B = rng.normal(size=(shape[0], 3)), rng.normal(size=(shape[1], 3))
    model = WarpingModel(metric, loss)
    w = random_w(model, rng)
    truth = P[rng.integers(len(P))]
    Z = hull_point(P, rng) if relaxed else warping_matrix(truth)
    got = model.loss_augmented_decode((A, B), truth, w, loss_scale=scale, at=Z)
    if loss == "hamming":
        def obj(y):
            return model.score((A, B), y, w) + scale * warping_hamming(truth, y)
    else:
        Zt = Z
        G = model.loss_gradient(truth, Zt)
        f0 = model.relaxed_loss(truth, Zt)

        def obj(y):
            return model.score((A, B), y, w) + scale * (f0 + np.sum(G * (warping_matrix(y) - Zt)))
    assert obj(got) == pytest.approx(max(obj(y) for y in P), abs=1e-9)


@pytest.mark.slow
def test_area_loss_augmented_ascent_climbs_and_mostly_finds_the_brute_force_optimum():
    exact = 0
    for seed in range(40):
        rng = np.random.default_rng(seed)
        shape = [(4, 4), (5, 4)][seed % 2]
        P = PATHS[shape]
        A, B = rng.normal(size=(shape[0], 3)), rng.normal(size=(shape[1], 3))
        model = WarpingModel(["diagonal", "full"][seed // 2 % 2], "area")
        w = random_w(model, rng)
        truth = P[rng.integers(len(P))]
        scale = [0.3, 1.0, 5.0][seed % 3]

        def obj(y):
            return model.score((A, B), y, w) + scale * warping_area_loss(truth, y)

        got = obj(model.loss_augmented_decode((A, B), truth, w, loss_scale=scale))
        best = max(obj(y) for y in P)
        assert obj(model.decode((A, B), w)) - 1e-9 <= got <= best + 1e-9
        exact += got >= best - 1e-9
    assert exact >= 24  # a local method: 27/40 on these seeds


@pytest.mark.slow
@settings(max_examples=20, deadline=None)
@given(seed=st.integers(0, 2**31 - 1), shape=st.sampled_from([(4, 4), (5, 4)]),
       loss=st.sampled_from(["hamming", "area"]))
def test_relaxed_loss_extends_the_loss_concavely(seed, shape, loss):
    rng = np.random.default_rng(seed)
    P = PATHS[shape]
    model = WarpingModel("diagonal", loss)
    truth = P[rng.integers(len(P))]
    for y in P[::5]:
        assert model.relaxed_loss(truth, warping_matrix(y)) == pytest.approx(model.loss(truth, y))
    Z = hull_point(P, rng)
    G = model.loss_gradient(truth, Z)
    D = rng.normal(size=Z.shape)
    eps = 1e-5
    fd = (model.relaxed_loss(truth, Z + eps * D) - model.relaxed_loss(truth, Z - eps * D)) / (2 * eps)
    assert fd == pytest.approx(np.sum(G * D), rel=1e-6, abs=1e-6)
    # exact quadratic: f(Z + D) = f(Z) + <G, D> + curvature / 2
    assert model.relaxed_loss(truth, Z + D) == pytest.approx(
        model.relaxed_loss(truth, Z) + np.sum(G * D) + 0.5 * model.loss_curvature(D), rel=1e-9, abs=1e-9)
    assert model.loss_curvature(D) <= 1e-9
    fz = model.relaxed_loss(truth, Z)
    for y in P:  # the tangent bounds the loss from above on every path (concavity)
        assert model.loss(truth, y) <= fz + np.sum(G * (warping_matrix(y) - Z)) + 1e-9


def test_area_tangent_at_the_truth_is_a_scaled_hamming_loss():
    P = PATHS[(5, 4)]
    model = WarpingModel("diagonal", "area")
    truth = P[40]
    Yt = warping_matrix(truth)
    G = model.loss_gradient(truth, Yt)
    d = area_curvature_bound(5) + area_curvature_bound(4)
    for y in P[::9]:
        assert np.sum(G * (warping_matrix(y) - Yt)) == pytest.approx(0.5 * d * warping_hamming(truth, y))


def test_dtw_linear_and_pairwise_cost_match_brute_force():
    rng = np.random.default_rng(3)
    A, B = rng.normal(size=(5, 2)), rng.normal(size=(4, 2))
    L = np.array([[1.0, 0.5], [0.0, 2.0]])
    C = pairwise_cost(A, B, metric=L)
    assert C[1, 2] == pytest.approx(np.sum((L @ (A[1] - B[2])) ** 2))
    off = rng.normal(size=(5, 4)) * 3
    res = dtw_linear(A, B, off, metric=L)
    best = min(np.sum((C + off)[y.path[:, 0], y.path[:, 1]]) for y in PATHS[(5, 4)])
    assert res.cost == pytest.approx(best)
    with pytest.raises(ParameterError, match="offset"):
        dtw_linear(A, B, off[:4], metric=L)


def test_project_gives_a_psd_metric_and_is_idempotent():
    rng = np.random.default_rng(4)
    model = WarpingModel("full")
    model.set_state({}, 3)
    w = rng.normal(size=9) + np.array([2.0, 0, 0, 0, -3.0, 0, 0, 0, 0])  # one eigenvalue of each sign
    pw = model.project(w)
    M = pw.reshape(3, 3)
    assert np.allclose(M, M.T) and np.linalg.eigvalsh(M).min() >= -1e-10
    assert np.allclose(model.project(pw), pw)
    diag = WarpingModel("diagonal").set_state({}, 3)
    assert np.array_equal(diag.project([-1.0, 2.0, 0.0]), [0.0, 2.0, 0.0])
    assert np.trace(model.normalized_metric(pw)) == pytest.approx(1.0)


def test_anchor_labels_become_a_completed_target():
    rng = np.random.default_rng(5)
    A, B = rng.normal(size=(6, 2)), rng.normal(size=(7, 2))
    model = WarpingModel()
    t = model.make_target((A, B), [WarpAnchorLabel("pair", ta=2, tb=5), WarpAnchorLabel("pair", ta=4, tb=6)])
    cells = {tuple(c) for c in t.completion.path}
    assert (2, 5) in cells and (4, 6) in cells


def test_bad_inputs_are_refused_with_clear_messages():
    with pytest.raises(ParameterError, match="metric"):
        WarpingModel(metric="low-rank")
    with pytest.raises(ParameterError, match="loss"):
        WarpingModel(loss="frobenius")
    model = WarpingModel()
    with pytest.raises(ParameterError, match="features per frame"):
        model.decode((np.zeros((3, 2)), np.zeros((3, 3))), np.ones(2))
    A = np.zeros((3, 2))
    with pytest.raises(ParameterError, match="shape"):
        model.decode((A, A), np.ones(3))
    with pytest.raises(ParameterError, match="non-finite"):
        model.decode((np.full((3, 2), np.nan), A), np.ones(2))
    with pytest.raises(ParameterError, match="grid"):
        model.loss(Warping(np.array([(0, 0), (1, 1)])), Warping(np.array([(0, 0), (1, 1), (2, 2)])))
    with pytest.raises(ParameterError, match="loss_scale"):
        model.loss_augmented_decode((A, A), Warping(np.array([(0, 0), (1, 1), (2, 2)])), np.ones(2), loss_scale=-1)


def test_model_files_refuse_the_bare_warping_model_in_one_line():
    """Model files hold the sync aligner (its options and metric), not the learner's bare joint feature map."""
    model = WarpingModel("diagonal", "area", band=0.5)
    w = random_w(model, np.random.default_rng(6))
    with pytest.raises(ParameterError, match=r"model: expected one of \['ScoreAligner', 'SegmentationModel', "
                                             r"'SyncAligner'\], got WarpingModel"):
        save_model_parts(io.BytesIO(), model, w, {"learner": "WarpingFrankWolfe"})


def test_second_best_is_the_brute_force_runner_up():
    rng = np.random.default_rng(7)
    A, B = rng.normal(size=(5, 3)), rng.normal(size=(4, 3))
    model = WarpingModel("full")
    w = random_w(model, rng)
    best, second = model.second_best((A, B), w)
    scores = sorted((model.score((A, B), y, w) for y in PATHS[(5, 4)]), reverse=True)
    assert best != second
    assert model.score((A, B), best, w) == pytest.approx(scores[0])
    assert model.score((A, B), second, w) == pytest.approx(scores[1])


@pytest.mark.slow
@settings(max_examples=15, deadline=None)
@given(seed=st.integers(0, 2**31 - 1), scale=st.sampled_from([0.5, 2.0, 10.0]))
def test_anchor_violation_loss_augmented_decode_matches_brute_force(seed, scale):
    rng = np.random.default_rng(seed)
    P = PATHS[(5, 4)]
    A, B = rng.normal(size=(5, 3)), rng.normal(size=(4, 3))
    model = WarpingModel("diagonal", "area")
    w = random_w(model, rng)
    truth = P[rng.integers(len(P))]
    cells = truth.path[rng.permutation(len(truth.path))[:2]]
    labels = [WarpAnchorLabel("pair", ta=int(i), tb=int(j)) for i, j in cells]
    target = model.make_target((A, B), labels, w)
    assert model.loss(target, target.completion) == 0
    got = model.loss_augmented_decode((A, B), target, w, loss_scale=scale)

    def obj(y):
        return model.score((A, B), y, w) + scale * model.violations(labels, y)

    assert obj(got) == pytest.approx(max(obj(y) for y in P))
    assert model.loss(target, got) == model.violations(labels, got)
    completion_model = WarpingModel("diagonal", "area", partial_loss="completion")
    assert completion_model.loss(target, got) == pytest.approx(warping_area_loss(target.completion, got))


def test_anchor_outside_the_grid_is_refused_like_the_decoder_refuses_it():
    from marginalia.decoders.warping import warping_constraints_from_labels
    y = Warping(np.array([(0, 0), (1, 1), (2, 2)]))
    outside = [WarpAnchorLabel("pair", ta=1, tb=3)]
    with pytest.raises(ParameterError) as from_decoder:
        warping_constraints_from_labels(outside, 3, 3)
    with pytest.raises(ParameterError) as from_model:
        WarpingModel().violations(outside, y)
    assert str(from_model.value) == str(from_decoder.value)
    assert "outside the 3 x 3 grid" in str(from_model.value)
    assert WarpingModel().violations([WarpAnchorLabel("pair", ta=1, tb=1), WarpAnchorLabel("pair", ta=1, tb=2)], y) == 1
