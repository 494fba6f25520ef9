"""SyncAligner: a tempo change is recovered, anchors are obeyed (brute force), the corridor, fit, model files."""

import io

import numpy as np
import pytest

import marginalia as mg
from marginalia.decoders.warping import dtw
from marginalia.exceptions import InfeasibleLabelsError, ParameterError, WrongTaskError
from marginalia.models.persistence import load_model_parts as load_raw
from marginalia.models.persistence import save_model_parts as save_raw
from marginalia.sync import SyncAligner, SyncFeatures, warping_from_times
from marginalia.types import Warping

from .synthetic import SR, all_paths, stretched_pair


@pytest.fixture(scope="module")
def pair():
    return stretched_pair(seed=0)


@pytest.mark.slow
@pytest.mark.parametrize("features,median_ms,worst_ms", [("aligner", 10.0, 25.0), ("chroma", 25.0, 60.0)])
def test_a_tempo_change_is_recovered(pair, features, median_ms, worst_ms):
    ya, yb, on_a, on_b = pair
    result = SyncAligner(features=features).predict((ya, SR), (yb, SR))
    err = np.abs(result.map_times(on_a) - on_b)
    assert np.median(err) * 1000 <= median_ms
    assert err.max() * 1000 <= worst_ms
    table = result.table()
    assert table.shape[1] == 2 and np.all(np.diff(table, axis=0) >= 0)   # monotone in both recordings
    assert result.margin is not None and result.margin >= 0


def test_the_corridor_of_long_pairs_finds_the_whole_grid_path(pair):
    ya, yb, _, _ = pair
    whole = SyncAligner(runner_up=False)
    fa, fb = whole.compute_features(ya, SR), whole.compute_features(yb, SR)
    narrow = SyncAligner(max_cells=1000, pyramid=4, corridor_s=0.3, runner_up=False)
    a = whole.predict(fa, fb)
    b = narrow.predict(fa, fb)
    assert b.cost == pytest.approx(a.cost, rel=1e-9)


@pytest.mark.parametrize("step_cost", [0.0, 0.5, 3.0])
@pytest.mark.parametrize("seed", range(4))
def test_anchors_are_obeyed_and_the_path_is_the_cheapest_through_them(seed, step_cost):
    rng = np.random.default_rng(seed)
    TA, TB = 5, 4
    fa = SyncFeatures(rng.normal(size=(TA, 12)), 0.1, 0.05, TA * 0.1)
    fb = SyncFeatures(rng.normal(size=(TB, 12)), 0.1, 0.05, TB * 0.1)
    w = rng.uniform(0.1, 2.0, 12)
    aligner = SyncAligner(features="chroma", step_cost=step_cost).with_metric_weights(w)
    ia, ib = sorted(rng.choice(TA, 2, replace=False)), sorted(rng.choice(TB, 2, replace=True))
    anchors = np.array([[fa.times()[i], fb.times()[j]] for i, j in zip(ia, ib)])
    result = aligner.predict(fa, fb, anchors=anchors)
    cells = {tuple(c) for c in result.warping.path.tolist()}
    assert all((i, j) in cells for i, j in zip(ia, ib))

    # every cell also costs step_cost times the median cell cost (the grid is small: its median is exact)
    step = aligner.step_cost * np.median([((x - y) ** 2 * w).sum() for x in fa.X for y in fb.X])

    def cost(path):
        d = fa.X[path[:, 0]] - fb.X[path[:, 1]]
        return float((d * d * w).sum()) + step * len(path)

    through = [p for p in all_paths(TA, TB) if all((i, j) in {tuple(c) for c in p.tolist()} for i, j in zip(ia, ib))]
    costs = sorted(cost(p) for p in through)
    assert result.cost == pytest.approx(costs[0])
    if result.margin is not None:
        assert result.margin == pytest.approx(costs[1] - costs[0])


@pytest.mark.parametrize("seed", range(3))
def test_dtw_inside_a_corridor_is_the_brute_force_minimum(seed):
    rng = np.random.default_rng(10 + seed)
    A, B = rng.normal(size=(5, 2)), rng.normal(size=(4, 2))
    lo = np.array([0, 0, 1, 1, 2])
    hi = np.array([1, 2, 2, 3, 3])
    got = dtw(A, B, band=(lo, hi))
    inside = [p for p in all_paths(5, 4) if np.all((p[:, 1] >= lo[p[:, 0]]) & (p[:, 1] <= hi[p[:, 0]]))]
    costs = [float(((A[p[:, 0]] - B[p[:, 1]]) ** 2).sum()) for p in inside]
    assert got.cost == pytest.approx(min(costs))
    with pytest.raises(ParameterError, match="corridor leaves no monotone path"):
        dtw(A, B, band=(np.array([0, 0, 3, 3, 3]), np.array([1, 1, 3, 3, 3])))


def _pairs(rng, n, TA=40, TB=50, p=25):
    """The 12 chroma descriptors follow one smooth signal at two warped clocks (plus noise); the others are noise."""
    out = []
    for _ in range(n):
        u = np.sort(rng.uniform(0, 1, TA))
        v = np.sort(rng.uniform(0, 1, TB))
        u[0] = v[0] = 0.0
        u[-1] = v[-1] = 1.0
        A, B = rng.normal(size=(TA, p)), rng.normal(size=(TB, p))
        A[:, :12] += 4 * np.sin(6 * u)[:, None]
        B[:, :12] += 4 * np.sin(6 * v)[:, None]
        fa, fb = SyncFeatures(A, 0.1, 0.05, TA * 0.1), SyncFeatures(B, 0.1, 0.05, TB * 0.1)
        # the same musical times: frame k of A sits at u[k] of the piece
        grid = np.linspace(0, 1, 30)
        matched = np.column_stack([np.interp(grid, u, fa.times()), np.interp(grid, v, fb.times())])
        out.append((fa, fb, matched))
    return out


@pytest.mark.parametrize("metric", ["tied", "diagonal"])
def test_fit_learns_the_informative_descriptors_and_beats_the_euclidean_cost(metric):
    rng = np.random.default_rng(0)
    train, test = _pairs(rng, 4), _pairs(rng, 3)
    learned = SyncAligner(metric=metric, train_pool=1, C=10.0, max_iter=30, runner_up=False).fit(train)
    assert learned.w_[:12].mean() > 2 * learned.w_[12:24].mean()
    if metric == "tied":
        np.testing.assert_allclose(learned.w_[:12], learned.w_[0])
    euclid = SyncAligner(runner_up=False)

    def error(aligner):
        errs = []
        for fa, fb, matched in test:
            errs.append(np.abs(aligner.predict(fa, fb).map_times(matched[:, 0]) - matched[:, 1]))
        return float(np.mean(np.concatenate(errs)))

    assert error(learned) < error(euclid)


def test_warping_from_times_is_a_path_through_the_matched_cells():
    fa = SyncFeatures(np.zeros((20, 12)), 0.1, 0.05, 2.0)
    fb = SyncFeatures(np.zeros((30, 12)), 0.1, 0.05, 3.0)
    w = warping_from_times([[0.55, 0.85], [1.05, 2.05]], fa, fb)
    assert isinstance(w, Warping) and w.shape == (20, 30)
    cells = {tuple(c) for c in w.path.tolist()}
    assert (5, 8) in cells and (10, 20) in cells


def test_warping_from_times_does_not_depend_on_the_order_of_a_chords_rows():
    fa = SyncFeatures(np.zeros((40, 12)), 0.1, 0.05, 4.0)
    fb = SyncFeatures(np.zeros((40, 12)), 0.1, 0.05, 4.0)
    # a chord played at once in the reference and rolled in the target, then a note a little earlier than its end
    matched = np.array([[0.5, 0.5], [1.5, 1.5], [1.5, 2.1], [1.5, 1.8], [2.5, 1.9], [3.0, 3.0]])
    paths = {warping_from_times(matched[order], fa, fb).path.tobytes()
             for order in (range(6), [0, 1, 2, 3, 4, 5][::-1], [0, 2, 3, 1, 4, 5], [0, 3, 1, 2, 5, 4])}
    assert len(paths) == 1


def test_model_file_round_trip_and_other_tasks_refused(tmp_path):
    rng = np.random.default_rng(1)
    fitted = SyncAligner(train_pool=1, max_iter=5, runner_up=False).fit(_pairs(rng, 2))
    path = tmp_path / "sync.model"
    mg.save_model(path, fitted)
    loaded = mg.load_model(path, task="sync")
    assert loaded.task == "sync" and loaded.features == "sync-aligner"
    again = loaded.sync_aligner()
    np.testing.assert_allclose(again.w_, fitted.w_)
    fa, fb, _ = _pairs(rng, 1)[0]
    np.testing.assert_array_equal(again.predict(fa, fb).warping.path, fitted.predict(fa, fb).warping.path)
    with pytest.raises(WrongTaskError, match=r"is a sync model; this command needs an alignment model"):
        mg.load_model(path, task="alignment")
    assert loaded.sync_aligner() is again   # built once
    with pytest.raises(WrongTaskError, match=r"model '.*sync.model': is a sync model; expected an alignment model"):
        loaded.aligner()
    with pytest.raises(WrongTaskError, match=r"is a sync model; expected a segmentation model"):
        loaded.segment(None)
    buf = io.BytesIO()
    save_raw(buf, fitted, fitted.w_, {})
    buf.seek(0)
    with pytest.raises(ParameterError, match=r"model file is for the 'sync' task, expected 'segmentation'"):
        load_raw(buf, task="segmentation")


def test_bad_input_is_one_line(pair):
    ya, yb, _, _ = pair
    with pytest.raises(ParameterError, match="features: expected one of"):
        SyncAligner(features="mfcc").predict((ya, SR), (yb, SR))
    aligner = SyncAligner(runner_up=False)
    fa, fb = aligner.compute_features(ya, SR), aligner.compute_features(yb, SR)
    with pytest.raises(InfeasibleLabelsError, match=r"anchors: \(1.000 s -> 2.000 s\) and \(2.000 s -> 1.000 s\) "
                                                    r"cross"):
        aligner.predict(fa, fb, anchors=[[1.0, 2.0], [2.0, 1.0]])
    with pytest.raises(ParameterError, match=r"anchors: expected \(N, 2\)"):
        aligner.predict(fa, fb, anchors=[1.0, 2.0, 3.0])
    with pytest.raises(ParameterError, match="past the end"):
        aligner.predict(fa, fb, anchors=[[100.0, 1.0]])
    with pytest.raises(ParameterError, match="reference: expected"):
        aligner.predict("a.wav", fb)
    with pytest.raises(ParameterError, match="has 12 descriptors per frame, expected 25"):
        aligner.predict(SyncFeatures(np.zeros((5, 12)), 0.1, 0.0, 0.5), fb)
    with pytest.raises(ParameterError, match=r"pairs\[0\].matched: expected at least 2"):
        aligner.fit([(fa, fb, [[0.1, 0.1]])])
    for err in (InfeasibleLabelsError, ParameterError):
        try:
            aligner.predict(fa, fb, anchors=[[1.0, 2.0], [2.0, 1.0]])
        except err as exc:
            assert "\n" not in str(exc)
