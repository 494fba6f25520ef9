"""Exact DTW against brute-force path enumeration and a plain float DP."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from marginalia.decoders import warping as wp
from marginalia.decoders.brute_alignment import all_warpings, brute_dtw
from marginalia.decoders.warping import (
    WarpingConstraints,
    band_limits,
    dtw,
    dtw_from_cost,
    dtw_loss_augmented,
    dtw_second_best,
    warping_constraints_from_labels,
    warping_cost,
    warping_hamming,
)
from marginalia.exceptions import InfeasibleLabelsError, ParameterError
from marginalia.types import WarpAnchorLabel, Warping

TOL = 1e-9


def reference_dtw(C):
    """Textbook O(TA TB) DP on a full float matrix."""
    TA, TB = C.shape
    D = np.full((TA + 1, TB + 1), np.inf)
    D[0, 0] = 0.0
    for i in range(TA):
        for j in range(TB):
            D[i + 1, j + 1] = C[i, j] + min(D[i, j], D[i, j + 1], D[i + 1, j])
    return D[TA, TB]


def pairwise(A, B):
    return ((A[:, None, :] - B[None, :, :]) ** 2).sum(-1)


@st.composite
def cost_matrices(draw, max_side=5):
    TA = draw(st.integers(1, max_side))
    TB = draw(st.integers(1, max_side))
    vals = draw(st.lists(st.integers(0, 6), min_size=TA * TB, max_size=TA * TB))
    return np.array(vals, dtype=float).reshape(TA, TB)


@st.composite
def anchored(draw):
    C = draw(cost_matrices())
    TA, TB = C.shape
    n = draw(st.integers(0, 2))
    cells = sorted((draw(st.integers(0, TA - 1)), draw(st.integers(0, TB - 1))) for _ in range(n))
    cells = [c for t, c in enumerate(cells) if all(c[1] >= d[1] for d in cells[:t])]
    return C, WarpingConstraints(np.array(cells, np.int64).reshape(-1, 2))


# ------------------------------------------------------------------ optimum


@settings(max_examples=80)
@given(anchored())
@pytest.mark.slow
def test_dtw_equals_brute_force_and_visits_anchors(case):
    C, cons = case
    ranked = brute_dtw(C, accept=cons.is_satisfied_by)
    result = dtw_from_cost(C, constraints=cons)
    assert result.cost == pytest.approx(ranked[0][0], abs=TOL)
    assert cons.is_satisfied_by(result.warping)
    assert result.warping.shape == C.shape


@pytest.mark.slow
@settings(max_examples=80)
@given(anchored())
def test_second_best_is_the_cheapest_other_path(case):
    C, cons = case
    ranked = brute_dtw(C, accept=cons.is_satisfied_by)
    best, second = dtw_second_best(None, None, cost=C, constraints=cons)
    assert best.cost == pytest.approx(ranked[0][0], abs=TOL)
    if len(ranked) == 1:
        assert second is None
        return
    assert second.warping != best.warping
    assert cons.is_satisfied_by(second.warping)
    assert second.cost == pytest.approx(ranked[1][0], abs=TOL)


@pytest.mark.slow
@settings(max_examples=60)
@given(cost_matrices(), st.sampled_from([0.0, 0.5, 1.0, 4.0]), st.integers(0, 10**6))
def test_loss_augmented_equals_brute_force(C, scale, seed):
    paths = list(all_warpings(*C.shape))
    truth = paths[seed % len(paths)]
    result = dtw_loss_augmented(None, None, truth, loss_scale=scale, cost=C)
    ranked = brute_dtw(C, extra=lambda w: -scale * warping_hamming(w, truth))
    assert result.objective == pytest.approx(ranked[0][0], abs=TOL)
    assert result.loss == warping_hamming(result.warping, truth)
    assert result.cost == pytest.approx(warping_cost(None, None, result.warping, cost=C), abs=TOL)
    assert result.objective == pytest.approx(result.cost - scale * result.loss, abs=TOL)


@pytest.mark.slow
@settings(max_examples=40)
@given(st.integers(1, 5), st.integers(1, 5), st.integers(1, 3), st.integers(0, 10**6))
def test_features_and_metrics_give_the_mahalanobis_cost(TA, TB, p, seed):
    rng = np.random.default_rng(seed)
    A, B = rng.normal(size=(TA, p)), rng.normal(size=(TB, p))
    w = rng.uniform(0.1, 2.0, size=p)
    L = rng.normal(size=(p + 1, p))
    for metric, C in ((None, pairwise(A, B)), (w, pairwise(A * w, B * w)), (L, pairwise(A @ L.T, B @ L.T))):
        result = dtw(A, B, metric=metric)
        assert result.cost == pytest.approx(brute_dtw(C)[0][0], abs=1e-8)
        assert warping_cost(A, B, result.warping, metric=metric) == pytest.approx(result.cost, abs=1e-8)


def test_dtw_equals_plain_float_dp_on_medium_sizes():
    rng = np.random.default_rng(7)
    for TA, TB, p in ((37, 61, 3), (80, 45, 12), (1, 30, 2), (30, 1, 2)):
        A, B = rng.normal(size=(TA, p)), rng.normal(size=(TB, p))
        assert dtw(A, B).cost == pytest.approx(reference_dtw(pairwise(A, B)), rel=1e-10)


def test_threaded_cost_pipeline_gives_the_same_paths(monkeypatch):
    rng = np.random.default_rng(5)
    A, B = rng.normal(size=(120, 5)), rng.normal(size=(97, 5))
    plain = dtw(A, B)
    plain_band = dtw(A, B, band=0.2)
    monkeypatch.setattr(wp, "_THREADED_CELLS", 1)
    monkeypatch.setattr(wp, "_BLOCK_CELLS", 200)  # many small blocks handed between the threads
    threaded = dtw(A, B)
    assert threaded.warping == plain.warping
    assert threaded.cost == pytest.approx(reference_dtw(pairwise(A, B)), rel=1e-10)
    assert dtw(A, B, band=0.2).warping == plain_band.warping
    best, second = dtw_second_best(A, B)
    assert best.warping == plain.warping and second.warping != plain.warping


@pytest.mark.slow
def test_second_best_on_medium_sizes_uses_checkpoints_correctly(monkeypatch):
    # a large checkpoint budget gives the smallest tiles (32 x 32), so several tiles are recomputed
    # (a tiny budget would give one tile larger than the grid)
    monkeypatch.setattr(wp, "_CHECKPOINT_BYTES", 2**40)
    rng = np.random.default_rng(11)
    for TA, TB in ((50, 70), (64, 33), (90, 90)):
        A, B = rng.normal(size=(TA, 2)), rng.normal(size=(TB, 2))
        C = pairwise(A, B)
        best, second = dtw_second_best(A, B)
        # oracle (costs >= 0): another path either misses a cell of the best path
        # or adds one corner cell to one of its diagonal steps
        runner = np.inf
        P = best.warping.path
        for i, j in P[1:-1]:
            C2 = C.copy()
            C2[i, j] = 1e9
            runner = min(runner, reference_dtw(C2))
        for t in range(1, len(P)):
            if (P[t] - P[t - 1] == 1).all():
                i, j = P[t]
                runner = min(runner, best.cost + min(C[i - 1, j], C[i, j - 1]))
        assert second.warping != best.warping
        assert second.cost == pytest.approx(runner, rel=1e-9)


@pytest.mark.parametrize("band", [None, 0.2])
def test_recomputed_predecessors_equal_the_full_table(monkeypatch, band):
    # every path cell's three predecessors, recomputed on 32 x 32 tiles from the checkpoints (costs from
    # the forward pass's cost blocks), against the whole D table of the textbook DP
    monkeypatch.setattr(wp, "_CHECKPOINT_BYTES", 2**40)
    rng = np.random.default_rng(5)
    TA, TB = 150, 170
    A, B = rng.normal(size=(TA, 3)), rng.normal(size=(TB, 3))
    prob = wp._Problem(Af=A, Bf=B, band=band)
    loc = prob.segment(prob.segments[0])
    dec = wp._SegmentDecoder(prob, loc, checkpoints=True)
    assert dec.k == 32
    path = dec.best_path()
    C = wp.pairwise_cost(A, B)
    lo, hi = prob.lo, prob.hi
    for r in range(TA):
        C[r, :lo[r]] = np.inf
        C[r, hi[r] + 1:] = np.inf
    D = np.full((TA + 1, TB + 1), np.inf)
    D[0, 0] = 0.0
    for i in range(TA):
        for j in range(TB):
            D[i + 1, j + 1] = C[i, j] + min(D[i, j], D[i, j + 1], D[i + 1, j])
    preds = np.empty((len(path), 3))
    wp._k.path_predecessors(0, A, np.ascontiguousarray(B.T), prob.na, prob.nb, wp._EMPTY_2, lo, hi, 0.0,
                            wp._EMPTY_I, wp._EMPTY_I, 0.0, dec.k, dec.row_ck, dec.row_ck_off, dec.col_ck,
                            dec.col_ck_off, path, preds)
    i, j = path[:, 0], path[:, 1]
    np.testing.assert_allclose(preds[:, 0], D[i, j], rtol=1e-12)
    np.testing.assert_allclose(preds[:, 1], D[i, j + 1], rtol=1e-12)
    np.testing.assert_allclose(preds[:, 2], D[i + 1, j], rtol=1e-12)


# --------------------------------------------------------------------- band


def test_wide_band_equals_unbanded_and_narrow_band_stays_inside():
    rng = np.random.default_rng(3)
    A, B = rng.normal(size=(60, 3)), rng.normal(size=(90, 3))
    full = dtw(A, B)
    assert dtw(A, B, band=1.0).warping == full.warping
    assert dtw(A, B, band=90).warping == full.warping
    lo, hi = band_limits(60, 90, 0.1)
    banded = dtw(A, B, band=0.1)
    i, j = banded.warping.path.T
    assert np.all((lo[i] <= j) & (j <= hi[i]))
    C = pairwise(A, B)
    for r in range(60):
        C[r, :lo[r]] = 1e12
        C[r, hi[r] + 1:] = 1e12
    assert banded.cost == pytest.approx(reference_dtw(C), rel=1e-10)
    assert banded.cost >= full.cost - 1e-9
    best, second = dtw_second_best(A, B, band=0.1)
    assert best.warping == banded.warping
    i, j = second.warping.path.T
    assert np.all((lo[i] <= j) & (j <= hi[i]))


@settings(max_examples=60, deadline=None)
@given(st.integers(1, 40), st.integers(1, 40), st.integers(0, 10**6), st.sampled_from([None, 0, 1, 3, 0.3]))
def test_banded_rows_in_groups_of_four_give_the_masked_optimum(TA, TB, seed, extra):
    # rows go four at a time as a staircase; bands that move several columns per row (TB >> TA), that
    # barely overlap, or fewer than four rows exercise its prologue, epilogue and fallbacks
    rng = np.random.default_rng(seed)
    A, B = rng.normal(size=(TA, 2)), rng.normal(size=(TB, 2))
    band = None if extra is None else (wp._minimal_band(TA, TB) + extra if isinstance(extra, int) else extra)
    try:
        lo, hi = band_limits(TA, TB, band)
    except ParameterError:
        return
    C = pairwise(A, B)
    for r in range(TA):
        C[r, :lo[r]] = np.inf
        C[r, hi[r] + 1:] = np.inf
    ref = reference_dtw(C)
    res = dtw(A, B, band=band)
    assert res.cost == pytest.approx(ref, rel=1e-10, abs=1e-10)
    i, j = res.warping.path.T
    assert np.all((lo[i] <= j) & (j <= hi[i]))
    Cf = np.where(np.isfinite(C), C, 0.0)
    assert dtw_from_cost(Cf, band=band).cost == pytest.approx(ref, rel=1e-10, abs=1e-10)
    best, _ = dtw_second_best(A, B, band=band)
    assert best.cost == pytest.approx(ref, rel=1e-10, abs=1e-10)


def test_minimal_bands_give_the_masked_optimum():
    # at the minimal width consecutive rows barely touch (lo[i+1] == hi[i] + 1 happens)
    rng = np.random.default_rng(9)
    touching = 0
    for TA, TB in ((5, 20), (20, 5), (7, 31), (12, 12), (9, 40), (33, 10)):
        A, B = rng.normal(size=(TA, 2)), rng.normal(size=(TB, 2))
        w = wp._minimal_band(TA, TB)
        lo, hi = band_limits(TA, TB, w)
        touching += int(np.sum(lo[1:] == hi[:-1] + 1))
        C = pairwise(A, B)
        for r in range(TA):
            C[r, :lo[r]] = 1e12
            C[r, hi[r] + 1:] = 1e12
        assert dtw(A, B, band=w).cost == pytest.approx(reference_dtw(C), rel=1e-10)
        best, second = dtw_second_best(A, B, band=w)
        assert best.cost == pytest.approx(reference_dtw(C), rel=1e-10)
    assert touching > 0


def test_band_follows_the_scaled_diagonal():
    lo, hi = band_limits(5, 9, 1)
    assert lo.tolist() == [0, 1, 3, 5, 7]
    assert hi.tolist() == [1, 3, 5, 7, 8]


def test_too_narrow_band_reports_the_minimal_width():
    # centres 0, 5.5, 11: with 2 cells rows 0 and 1 allow [0, 2] and [4, 7], which do not touch
    with pytest.raises(ParameterError, match="expected at least 3 cells") as info:
        band_limits(3, 12, 2)
    assert "leaves no path through a 3 x 12 grid" in str(info.value)
    lo, hi = band_limits(3, 12, 3)
    assert lo.tolist() == [0, 3, 8] and hi.tolist() == [3, 8, 11]
    with pytest.raises(ParameterError, match="band: expected None, a fraction"):
        band_limits(3, 12, 1.5)
    with pytest.raises(ParameterError, match="band: expected a number of cells >= 0"):
        band_limits(3, 12, -1)


# ------------------------------------------------------------------- labels


def test_anchor_labels_become_constraints():
    labels = [WarpAnchorLabel("item", ta=30, tb=10), WarpAnchorLabel("item", ta=10, tb=5)]
    cons = warping_constraints_from_labels(labels, 40, 40)
    assert cons.anchors.tolist() == [[10, 5], [30, 10]]
    assert cons.label_ids == (labels[1].id, labels[0].id)
    rng = np.random.default_rng(0)
    A, B = rng.normal(size=(40, 2)), rng.normal(size=(40, 2))
    result = dtw(A, B, constraints=cons)
    assert cons.is_satisfied_by(result.warping)
    best, second = dtw_second_best(A, B, constraints=cons)
    assert best.cost == pytest.approx(result.cost)
    assert cons.is_satisfied_by(second.warping)


def test_bad_anchor_labels_are_named():
    out = WarpAnchorLabel("item", ta=40, tb=0)
    with pytest.raises(ParameterError, match=f"WarpAnchorLabel {out.id}: cell \\(40, 0\\) is outside"):
        warping_constraints_from_labels([out], 40, 40)
    a = WarpAnchorLabel("item", ta=5, tb=20)
    b = WarpAnchorLabel("item", ta=10, tb=3)
    with pytest.raises(InfeasibleLabelsError) as info:
        warping_constraints_from_labels([a, b], 40, 40)
    assert set(info.value.label_ids) == {a.id, b.id}
    far = WarpingConstraints([[0, 30]], (a.id,))
    with pytest.raises(InfeasibleLabelsError, match="outside the band"):
        dtw(np.zeros((40, 1)), np.zeros((40, 1)), band=3, constraints=far)


# ---------------------------------------------------------------- bad input


def test_bad_sequences_are_rejected_with_a_reason():
    ok = np.zeros((4, 2))
    with pytest.raises(ParameterError, match=r"A: expected a non-empty \(T, p\) array, got shape \(0, 2\)"):
        dtw(np.zeros((0, 2)), ok)
    with pytest.raises(ParameterError, match="B: contains NaN"):
        dtw(ok, np.array([[0.0, np.nan]]))
    with pytest.raises(ParameterError, match="A: contains NaN or infinite"):
        dtw(np.array([[np.inf, 0.0]]), ok)
    with pytest.raises(ParameterError, match="B: has 3 features per frame, expected 2 like A"):
        dtw(ok, np.zeros((4, 3)))
    with pytest.raises(ParameterError, match=r"metric: expected None, weights of shape \(2,\)"):
        dtw(ok, ok, metric=np.ones(3))
    with pytest.raises(ParameterError, match="C: contains NaN"):
        dtw_from_cost(np.array([[np.nan]]))
    truth = Warping([[0, 0], [1, 1]])
    with pytest.raises(ParameterError, match="truth: warps a 2 x 2 grid, expected 4 x 4"):
        dtw_loss_augmented(ok, ok, truth)
    with pytest.raises(ParameterError, match="loss_scale: expected a finite number >= 0"):
        dtw_loss_augmented(ok, ok, Warping([[0, 0], [1, 1], [2, 2], [3, 3]]), loss_scale=np.nan)
    with pytest.raises(ParameterError, match="loss: expected 'hamming'"):
        dtw_loss_augmented(ok, ok, truth, loss="area")


def test_known_small_warping():
    A = np.array([0.0, 1.0, 2.0, 2.0, 3.0])
    B = np.array([0.0, 1.0, 2.0, 3.0])
    result = dtw(A, B)
    assert result.cost == 0.0
    assert result.warping.path.tolist() == [[0, 0], [1, 1], [2, 2], [3, 2], [4, 3]]
    assert warping_hamming(result.warping, Warping([[0, 0], [1, 1], [2, 2], [3, 3], [4, 3]])) == 2
