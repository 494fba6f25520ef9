"""Per-sequence penalty law on a learned metric, and the aCGH recipe built on it."""

import json
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from marginalia.cgh.penalty_law import PenaltyLaw, _thresholds_from_counts, count_thresholds
from marginalia.cgh.recipe import CghSegmenter, density_class, fit_cgh_recipe
from marginalia.exceptions import NotFittedError, ParameterError
from marginalia.metrics import region_errors
from marginalia.models.segmentation import PenaltyScaledModel, SegmentationModel
from marginalia.types import RegionKind, RegionLabel, Sequence

GRID = np.arange(-6.0, 6.01, 0.5)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(0, 6), min_size=2, max_size=12), st.lists(st.integers(0, 40), min_size=1, max_size=4,
                                                                       unique=True))
def test_bisection_thresholds_equal_the_full_scan(drops, counts):
    # a non-increasing change count along the grid, as penalised decoding gives
    n_changes = np.cumsum(drops[::-1])[::-1]
    grid = np.arange(len(n_changes), dtype=float) * 0.25 - 1.0
    counts = sorted(counts)
    calls = []
    got = count_thresholds(lambda j: calls.append(j) or n_changes[j], grid, counts)
    assert np.array_equal(got, _thresholds_from_counts(grid, n_changes, counts))
    assert len(set(calls)) <= len(counts) * (math.ceil(math.log2(len(grid))) + 2)


@pytest.mark.slow
@settings(max_examples=25, deadline=None)
@given(st.integers(0, 10_000), st.integers(1, 3))
def test_grid_decoding_that_skips_equal_stretches_equals_decoding_every_offset(seed, min_size):
    rng = np.random.default_rng(seed)
    T = int(rng.integers(8, 60))
    X = rng.normal(size=(T, 2)) + np.repeat(rng.normal(0, 2, size=(4, 2)), -(-T // 4), axis=0)[:T]
    model = SegmentationModel(min_size=min_size, penalty_per="log_length")
    model.fit_scales([X])
    w = model.initial_w([X])
    law = PenaltyLaw(model, w, offsets=np.arange(-4.0, 4.01, 0.25))
    calls = []
    decode = model.decode
    model.decode = lambda X_, w_, **kw: calls.append(1) or decode(X_, w_, **kw)
    fast = law.decode_grid(X)
    model.decode = decode
    every = [model.decode(X, law.w_at(d)) for d in law.offsets]
    assert [s.changes.tolist() for s in fast] == [s.changes.tolist() for s in every]
    assert len(calls) <= len(every)


def test_a_grid_decoding_stops_between_decodings_when_asked():
    from marginalia.exceptions import CancelledError
    rng = np.random.default_rng(2)
    X = np.r_[rng.normal(0, 1, (40, 1)), rng.normal(3, 1, (40, 1))]
    model = SegmentationModel(min_size=2, penalty_per="log_length")
    law = PenaltyLaw(model, model.initial_w([X]), offsets=GRID)
    polls = []
    with pytest.raises(CancelledError):
        law.grid_summary(X, [RegionLabel(item_id="s", start=30, stop=50, kind=RegionKind.ONE)],
                         should_stop=lambda: polls.append(1) or len(polls) > 3)
    assert len(polls) == 4            # three decodings, then the fourth poll stopped it


def test_a_grid_is_decoded_once_per_content_whatever_the_labels():
    rng = np.random.default_rng(5)
    X = np.r_[rng.normal(0, 1, (40, 1)), rng.normal(3, 1, (40, 1))]
    model = SegmentationModel(min_size=2, penalty_per="log_length")
    w = model.initial_w([X])
    calls = []
    decode = model.decode
    model.decode = lambda X_, w_, **kw: calls.append(1) or decode(X_, w_, **kw)
    one = [RegionLabel(item_id="s", start=30, stop=50, kind=RegionKind.ONE)]
    zero = [RegionLabel(item_id="s", start=30, stop=50, kind=RegionKind.ZERO)]
    first = PenaltyLaw(model, w, offsets=GRID).grid_summary(X, one)
    n_first = len(calls)
    again = PenaltyLaw(model, w, offsets=GRID).grid_summary(X, zero)     # another law object, other labels
    assert n_first > 0 and len(calls) == n_first
    assert np.array_equal(first[1], again[1])                             # same decodings ...
    law = PenaltyLaw(model, w, offsets=GRID)
    for labels, summary in ((one, first), (zero, again)):                 # ... scored on each label set
        assert summary[0].tolist() == [region_errors(labels, decode(X, law.w_at(d))).errors for d in GRID]
    assert first[0].tolist() != again[0].tolist()
    PenaltyLaw(model, model.scale_penalty(w, 2.0), offsets=GRID).grid_summary(X, one)
    assert len(calls) > n_first                                           # other parameters: decoded anew
    n_second = len(calls)
    PenaltyLaw(model, w, offsets=GRID).grid_summary(X + 1e-9, one)
    assert len(calls) > n_second                                          # other input: decoded anew


def _noisy_step(rng, T=48):
    """A step of 2.5σ whose noise σ varies by sequence, labelled around the step and on the flat sides.

    The model input is NOT rescaled per sequence, so the right penalty grows like σ².
    """
    sigma = math.exp(rng.uniform(-1.5, 1.0))
    h = T // 2
    x = np.r_[np.zeros(h), np.full(T - h, 2.5 * sigma)] + rng.normal(0, sigma, T)
    labels = [RegionLabel(item_id="s", start=h - 6, stop=h + 6, kind=RegionKind.ONE),
              RegionLabel(item_id="s", start=0, stop=h - 6, kind=RegionKind.ZERO),
              RegionLabel(item_id="s", start=h + 6, stop=T, kind=RegionKind.ZERO)]
    return x[:, None], labels, math.log(sigma ** 2)


def test_law_recovers_the_noise_variance_scaling_of_the_penalty():
    rng = np.random.default_rng(0)
    train = [_noisy_step(rng) for _ in range(24)]
    test = [_noisy_step(rng) for _ in range(12)]
    model = SegmentationModel(min_size=2, penalty_per="constant")
    w = model.initial_w([X for X, _, _ in train])
    # a margin of about half the intervals' width centres the law in them
    law = PenaltyLaw(model, w, offsets=GRID, counts=(), alphas=(1e-3,), margin=1.0).fit(
        [X for X, _, _ in train], [l for _, l, _ in train], np.array([[f] for _, _, f in train]))
    # cost and penalty both scale with σ², so the law's slope on log σ² is 1
    assert law.regression_.coef_[0] == pytest.approx(1.0, abs=0.2)
    fixed = sum(region_errors(l, model.decode(X, w)).errors for X, l, _ in test)
    learned = sum(region_errors(l, law.decode(X, [f])).errors for X, l, f in test)
    assert fixed >= 5 and learned <= 1


def _noisy_step_set(seed, n):
    """``n`` noisy steps on a constant-penalty model, two per profile: (model, w, Xs, Ys, F, groups)."""
    rng = np.random.default_rng(seed)
    data = [_noisy_step(rng) for _ in range(n)]
    model = SegmentationModel(min_size=2, penalty_per="constant")
    w = model.initial_w([X for X, _, _ in data])
    Xs, Ys, F = [X for X, _, _ in data], [l for _, l, _ in data], np.array([[f] for _, _, f in data])
    return model, w, Xs, Ys, F, np.arange(n) // 2


@pytest.mark.slow
def test_the_margin_is_chosen_with_the_ridge_by_cross_validated_label_errors():
    model, w, Xs, Ys, F, groups = _noisy_step_set(3, 24)
    summaries = [PenaltyLaw(model, w, offsets=GRID, counts=(0, 1)).grid_summary(X, l) for X, l in zip(Xs, Ys)]
    margins, alphas = (0.25, 0.5, 1.0, 2.0), (1e-3, 1e-1)
    law = PenaltyLaw(model, w, offsets=GRID, counts=(0, 1), alphas=alphas, margin=margins, cv=4).fit(
        Xs, Ys, F, groups=groups, summaries=summaries)
    assert set(law.cv_errors_) == {(m, a) for m in margins for a in alphas}
    # each margin's errors are those of a law given that margin alone
    for m in margins:
        alone = PenaltyLaw(model, w, offsets=GRID, counts=(0, 1), alphas=alphas, margin=m, cv=4).fit(
            Xs, Ys, F, groups=groups, summaries=summaries)
        assert alone.cv_errors_ == {(m, a): e for (mm, a), e in law.cv_errors_.items() if mm == m}
    best = min(law.cv_errors_.values())
    assert (law.margin_, law.alpha_) == max(k for k, e in law.cv_errors_.items() if e == best)
    # the final law is the one refitted on every sequence with the chosen pair
    chosen = PenaltyLaw(model, w, offsets=GRID, counts=(0, 1), alphas=(law.alpha_,), margin=law.margin_, cv=4).fit(
        Xs, Ys, F, groups=groups, summaries=summaries)
    assert np.allclose(chosen.regression_.coef_, law.regression_.coef_)
    again = PenaltyLaw.from_dict(model, w, json.loads(json.dumps(law.to_dict())))
    assert again.margin_ == law.margin_ and again.to_dict() == law.to_dict()
    for X, f in zip(Xs[:3], F[:3, 0]):
        assert again.predict_offset(X, [f]) == law.predict_offset(X, [f])


@pytest.mark.slow
@pytest.mark.parametrize("margin", [-1.0, (), "wide", float("nan"), (0.25, -0.5)])
def test_an_impossible_margin_is_refused_by_name(margin):
    rng = np.random.default_rng(4)
    data = [_noisy_step(rng) for _ in range(6)]
    model = SegmentationModel(min_size=2, penalty_per="constant")
    w = model.initial_w([X for X, _, _ in data])
    with pytest.raises(ParameterError, match="margin"):
        PenaltyLaw(model, w, offsets=GRID, counts=(), margin=margin).fit(
            [X for X, _, _ in data], [l for _, l, _ in data], np.array([[f] for _, _, f in data]))


@pytest.mark.slow
def test_thresholds_cross_validation_and_round_trip():
    rng = np.random.default_rng(1)
    data = [_noisy_step(rng) for _ in range(16)]
    model = SegmentationModel(min_size=2, penalty_per="constant")
    w = model.initial_w([X for X, _, _ in data])
    law = PenaltyLaw(model, w, offsets=GRID, counts=(0, 1, 3), alphas=(1e-2, 1.0), cv=3)
    with pytest.raises(NotFittedError):
        law.predict_offset(data[0][0], [0.0])
    law.fit([X for X, _, _ in data], [l for _, l, _ in data], np.array([[f] for _, _, f in data]),
            groups=np.arange(16) // 2)
    assert set(law.cv_errors_) == {(0.25, 1e-2), (0.25, 1.0)} and (law.margin_, law.alpha_) in law.cv_errors_
    assert law.errors_.shape == (16, GRID.size) and law.design_.shape == (16, 4)
    # thresholds by bisection equal those read from the full grid during fit, which a training
    # sequence's thresholds are then read from without decoding
    X = data[3][0]
    full = _thresholds_from_counts(GRID, [s.n_segments - 1 for s in law.decode_grid(X)], (0, 1, 3))
    known, law.known_thresholds_ = law.known_thresholds_, {}
    assert np.array_equal(law.thresholds(X), full) and np.array_equal(full, law.design_[3, 1:])
    law.known_thresholds_ = known
    calls = []
    decode = model.decode
    model.decode = lambda *a, **k: calls.append(1) or decode(*a, **k)
    assert np.array_equal(law.thresholds(X.copy()), full) and not calls and len(known) == 16
    X_new = X.copy()
    X_new[5, 0] += 1e-9                                  # another input: bisected, not looked up
    law.thresholds(X_new)
    model.decode = decode
    assert calls
    again = PenaltyLaw.from_dict(model, w, json.loads(json.dumps(law.to_dict())))
    for X, _, f in data[:4]:
        assert again.predict_offset(X, [f]) == law.predict_offset(X, [f])
    # decodings computed once and handed over give the same law
    summaries = [law.grid_summary(X, l) for X, l, _ in data]
    shared = PenaltyLaw(model, w, offsets=GRID, counts=(0, 1, 3), alphas=(1e-2, 1.0), cv=3).fit(
        [X for X, _, _ in data], [l for _, l, _ in data], np.array([[f] for _, _, f in data]),
        groups=np.arange(16) // 2, summaries=summaries)
    assert np.array_equal(shared.errors_, law.errors_) and np.array_equal(shared.design_, law.design_)
    assert shared.to_dict() == law.to_dict()
    with pytest.raises(ParameterError, match="summaries"):
        law.fit([X for X, _, _ in data], [l for _, l, _ in data], np.array([[f] for _, _, f in data]),
                summaries=summaries[:-1])
    with pytest.raises(ParameterError, match="penalty law"):
        PenaltyLaw.from_dict(model, w, {"offsets": [0.0, 1.0]})
    with pytest.raises(ParameterError, match="offsets"):
        PenaltyLaw(model, w, offsets=[1.0, 0.0]).decode_grid(X)
    with pytest.raises(ParameterError, match="counts"):
        PenaltyLaw(model, w, counts=(3, 1)).thresholds(X)


@pytest.mark.slow
def test_out_of_fold_offsets_are_what_a_law_fitted_without_each_fold_predicts():
    model, w, Xs, Ys, F, groups = _noisy_step_set(4, 12)
    law = PenaltyLaw(model, w, offsets=GRID, counts=(0, 1), alphas=(1e-2,), cv=3)
    with pytest.raises(NotFittedError):
        law.out_of_fold_offsets()
    law.fit(Xs, Ys, F, groups=groups)
    held_out = law.out_of_fold_offsets()
    assert held_out.shape == (12,) and np.unique(law.folds_).size == 3
    for f in np.unique(law.folds_):
        tr, te = np.flatnonzero(law.folds_ != f), np.flatnonzero(law.folds_ == f)
        alone = PenaltyLaw(model, w, offsets=GRID, counts=(0, 1), alphas=(1e-2,), cv=3).fit(
            [Xs[i] for i in tr], [Ys[i] for i in tr], F[tr], groups=groups[tr])
        for i in te:
            assert held_out[i] == pytest.approx(alone.predict_offset(Xs[i], F[i]), abs=1e-9)
    # a sequence's own offset is fitted to its labels; held out, the law does not see them
    assert not np.allclose(held_out, [law.predict_offset(X, f) for X, f in zip(Xs, F)])
    one_group = PenaltyLaw(model, w, offsets=GRID, counts=(0, 1), alphas=(1e-2,), cv=3).fit(
        Xs, Ys, F, groups=np.zeros(12))
    assert np.allclose(one_group.out_of_fold_offsets(), [one_group.predict_offset(X, f) for X, f in zip(Xs, F)])


def _platform_item(rng, i, platform):
    """One chromosome of a low (1 probe/Mb) or high (25 probes/Mb) density array.

    Both have a clear 4σ step. High-density ones also carry a short 1.5σ bump inside a region
    labelled "no change" (an artefact the expert ignores); low-density ones a weaker true 1.6σ
    step that the expert labels. One penalty cannot serve both platforms.
    """
    T = 90
    x = rng.normal(0, 1, T)
    x[45:] += 4.0
    if platform == "high":
        x[15:25] += 1.5
        labels = [(40, 50, RegionKind.ONE), (5, 38, RegionKind.ZERO), (52, 90, RegionKind.ZERO)]
    else:
        x[70:] += 1.6
        labels = [(40, 50, RegionKind.ONE), (5, 38, RegionKind.ZERO), (60, 80, RegionKind.ONE)]
    step = 1e6 if platform == "low" else 4e4
    seq = Sequence(x, positions=np.arange(T) * step, name=f"{i}", kind="cgh", meta={"profile_id": str(i // 2)})
    return seq, [RegionLabel(item_id=seq.name, start=a, stop=b, kind=k) for a, b, k in labels]


def _platform_set(seed, n):
    """``n`` chromosomes alternating low / high density: (sequences, label lists)."""
    rng = np.random.default_rng(seed)
    data = [_platform_item(rng, i, "high" if i % 2 else "low") for i in range(n)]
    return [s for s, _ in data], [l for _, l in data]


@pytest.mark.slow
def test_recipe_learns_one_law_per_array_platform():
    rng = np.random.default_rng(3)
    train = [_platform_item(rng, i, "high" if i % 2 else "low") for i in range(28)]
    test = [_platform_item(rng, 100 + i, "high" if i % 2 else "low") for i in range(12)]
    assert density_class(train[0][0]) == "low" and density_class(train[1][0]) == "high"
    seqs, labs = [s for s, _ in train], [l for _, l in train]
    with pytest.raises(NotFittedError):
        CghSegmenter(prune=False).segment(seqs[0])
    seg = fit_cgh_recipe(seqs, labs, max_iter=2, min_class_sequences=8, counts=(0, 1, 3), alphas=(1e-2, 1.0))
    assert set(seg.laws_) == {"all", "low", "high"}
    # the artefact-laden platform gets the larger penalty
    assert np.mean([seg.offset(s) for s, _ in test if density_class(s) == "high"]) > \
        np.mean([seg.offset(s) for s, _ in test if density_class(s) == "low"])

    def errors(segment):
        return sum(region_errors(l, segment(s)).errors for s, l in test)

    metric_only = errors(lambda s: seg.model_.decode(seg.model_input(s), seg.w_))
    recipe = errors(seg.segment)
    assert recipe <= 2 and recipe < metric_only
    again = CghSegmenter.from_dict(seg.model_, seg.w_, json.loads(json.dumps(seg.to_dict())))
    assert all(again.segment(s).changes.tolist() == seg.segment(s).changes.tolist() for s, _ in test)
    # the per-sequence factor on the law's parameters redraws the law's segmentation (what the app steps through)
    for s, _ in test[:4]:
        w_item = seg.model_.scale_penalty(seg.law_for(s).w, seg.penalty_factor(s))
        assert seg.model_.decode(seg.model_input(s), w_item) == seg.law_segment(s)
        np.testing.assert_array_equal(seg.item_w(s), w_item)
    law = seg.law_for(test[0][0])
    law.regression_.intercept_ += 100.0          # an offset far past the grid is clipped to its end
    assert seg.penalty_factor(test[0][0]) == pytest.approx(np.exp(max(law.offsets)))
    with pytest.raises(ParameterError, match="factor"):
        PenaltyScaledModel(seg.model_, 0.0)
    with pytest.raises(ParameterError, match="unknown recipe"):
        CghSegmenter.from_dict(seg.model_, seg.w_, {"recipe": "other"})
    with pytest.raises(ParameterError, match="at least 2"):
        fit_cgh_recipe(seqs[:1], labs[:1])
    with pytest.raises(ParameterError, match="no label"):
        fit_cgh_recipe(seqs[:2], [labs[0], []])


@pytest.mark.slow
def test_law_only_sequences_train_the_laws_and_pruners_but_not_the_metric():
    rng = np.random.default_rng(4)
    train = [_platform_item(rng, i, "high" if i % 2 else "low") for i in range(16)]
    extra = [_platform_item(rng, 200 + i, "high") for i in range(10)]
    seqs, labs = [s for s, _ in train], [l for _, l in train]
    params = dict(max_iter=2, min_class_sequences=4, counts=(0, 1), alphas=(1e-2,), prune=False)
    plain = fit_cgh_recipe(seqs, labs, **params)
    more = fit_cgh_recipe(seqs, labs, law_only=([s for s, _ in extra], [l for _, l in extra]), **params)
    np.testing.assert_array_equal(more.w_, plain.w_)
    assert more.laws_["high"].errors_.shape[0] == plain.laws_["high"].errors_.shape[0] + len(extra)
    assert more.laws_["low"].errors_.shape[0] == plain.laws_["low"].errors_.shape[0]
    assert more.laws_["all"].errors_.shape[0] == len(train) + len(extra)
    with pytest.raises(ParameterError, match="law_only"):
        fit_cgh_recipe(seqs, labs, law_only=([extra[0][0]], []), **params)
    with pytest.raises(ParameterError, match="law_only"):
        fit_cgh_recipe(seqs, labs, law_only=([extra[0][0]], [[]]), **params)


@pytest.mark.slow
def test_threads_give_the_same_recipe_report_progress_per_stage_and_stop_on_cancel():
    seqs, labs = _platform_set(6, 16)
    params = dict(max_iter=2, min_class_sequences=4, counts=(0, 1), alphas=(1e-2,), prune=True)
    one = fit_cgh_recipe(seqs, labs, **params)
    calls = []
    two = fit_cgh_recipe(seqs, labs, n_jobs=2, progress=lambda *a: calls.append(a), **params)
    assert one.to_dict() == two.to_dict()
    probes = 16 * 90
    # the pruners' candidate choice: 3 pruners x 2 candidate sets x 8 left-out profiles
    assert [a for a in calls if a[1] == 0] == [("penalty laws", 0, probes),
                                               ("penalty laws on the plain logratio", 0, probes),
                                               ("change pruners", 0, probes), ("pruner candidates", 0, 48)]
    assert ("change pruners", probes, probes) in calls and ("penalty laws", probes, probes) in calls
    assert calls[-1] == ("pruner candidates", 48, 48)
    from marginalia.exceptions import CancelledError
    for n_jobs in (1, 2):
        seen = []
        stop = lambda: len(seen) >= 5           # noqa: E731 - a cancel five sequences into the laws
        with pytest.raises(CancelledError):
            CghSegmenter(n_jobs=n_jobs, should_stop=stop, progress=lambda *a: seen.append(a) if a[1] else None,
                         **params).fit(seqs, labs)
        assert len(seen) <= 5 + n_jobs


@pytest.mark.slow
def test_a_long_chromosome_teaches_the_metric_through_windows_around_its_labels(monkeypatch):
    from marginalia.cgh import training_windows as tw
    rng = np.random.default_rng(8)
    seqs, labs = _platform_set(8, 12)
    T = 3 * tw.MAX_WINDOW
    x = rng.normal(0, 1, T)
    x[T // 2:] += 4.0
    x[:200] += 1.5    # a bump far from every label: outside every window
    long_seq = Sequence(x, positions=np.arange(T) * 4e4, name="long", kind="cgh", meta={"profile_id": "L"})
    long_labels = [RegionLabel(item_id="long", start=T // 2 - 5, stop=T // 2 + 5, kind=RegionKind.ONE),
                   RegionLabel(item_id="long", start=T // 2 + 10, stop=T - 10, kind=RegionKind.ZERO)]
    decoded = []
    violation_decode = SegmentationModel._violation_decode

    def spy(self, X, labels, w, scale):
        decoded.append(X.shape[0])
        return violation_decode(self, X, labels, w, scale)

    monkeypatch.setattr(SegmentationModel, "_violation_decode", spy)
    rec = fit_cgh_recipe(seqs + [long_seq], labs + [long_labels], max_iter=2, min_class_sequences=4,
                         counts=(0, 1), alphas=(1e-2,))
    assert decoded and max(decoded) <= tw.MAX_WINDOW     # the SSVM's oracle never saw the whole chromosome
    # the window is a parameter; None learns on whole chromosomes
    for window, longest in ((60, range(31, 61)), (None, [90])):
        decoded.clear()
        fit_cgh_recipe(seqs, labs, max_iter=1, min_class_sequences=4, counts=(0, 1), alphas=(1e-2,),
                       metric_window=window)
        assert max(decoded) in longest
    assert rec.laws_["all"].errors_.shape[0] == len(seqs) + 1      # the law sees it whole
    assert rec.segment(long_seq).n_segments >= 2


@pytest.mark.slow
def test_transfer_learner_keeps_one_metric_per_platform_through_the_json():
    seqs, labs = _platform_set(5, 20)
    seg = fit_cgh_recipe(seqs, labs, max_iter=2, min_class_sequences=8, counts=(0, 1), alphas=(1e-2,),
                         learner="transfer", rho=0.5, law_metric="learned")
    assert set(seg.w_by_class_) == {"low", "high"}
    assert not np.allclose(seg.w_by_class_["low"], seg.w_by_class_["high"])
    assert np.array_equal(seg.laws_["high"].w, seg.w_by_class_["high"])
    again = CghSegmenter.from_dict(seg.model_, seg.w_, json.loads(json.dumps(seg.to_dict())))
    assert np.array_equal(again.laws_["high"].w, seg.w_by_class_["high"])
    assert all(again.segment(s).changes.tolist() == seg.segment(s).changes.tolist() for s in seqs[:6])
    with pytest.raises(ParameterError, match="learner"):
        fit_cgh_recipe(seqs, labs, learner="boosting")


def test_a_penalty_that_changes_nothing_gives_a_constant_law():
    rng = np.random.default_rng(2)
    data = [_noisy_step(rng) for _ in range(6)]
    model = SegmentationModel(min_size=2, penalty_per="constant")
    w = model.initial_w([X for X, _, _ in data])
    w0 = model.join_w(model.split_w(w)[0], 0.0)          # penalty 0: every offset decodes alike
    law = PenaltyLaw(model, w0, offsets=GRID, counts=(0,), alphas=(1e-2, 1.0), cv=3).fit(
        [X for X, _, _ in data], [l for _, l, _ in data], np.array([[f] for _, _, f in data]))
    assert np.all(np.isinf(law.intervals_)) and np.all(law.regression_.coef_ == 0)
    assert law.predict_offset(data[0][0], [data[0][2]]) in GRID


@pytest.mark.slow
def test_a_retrain_can_keep_or_anchor_the_previous_metric():
    seqs, labs = _platform_set(6, 24)
    params = dict(max_iter=3, min_class_sequences=6, counts=(0, 1), alphas=(1e-2,), prune=False)
    first = fit_cgh_recipe(seqs[:12], labs[:12], **params)
    kept = fit_cgh_recipe(seqs, labs, previous=first, metric="keep", **params)
    np.testing.assert_array_equal(kept.w_, first.w_)
    np.testing.assert_array_equal(kept.model_.get_state()["feature_scale"], first.model_.get_state()["feature_scale"])
    assert kept.w_ is not first.w_ and kept.model_ is not first.model_
    assert kept.laws_["all"].errors_.shape[0] == len(seqs)          # the laws saw every label
    # with a vanishing data term the SSVM returns its centre: the previous metric when anchored, ~0 otherwise
    tiny = dict(params, C=1e-9)
    anchored = fit_cgh_recipe(seqs, labs, previous=first, metric="anchor", **tiny)
    scratch = fit_cgh_recipe(seqs, labs, **tiny)
    np.testing.assert_allclose(anchored.w_, first.w_, atol=1e-5)
    assert np.abs(scratch.w_ - first.w_).max() > 100 * np.abs(anchored.w_ - first.w_).max()
    # with labels that matter the anchored metric still moves
    moved = fit_cgh_recipe(seqs, labs, previous=first, metric="anchor", **params)
    assert not np.allclose(moved.w_, first.w_)
    with pytest.raises(ParameterError, match="previous"):
        fit_cgh_recipe(seqs, labs, metric="keep", **params)
    with pytest.raises(ParameterError, match="metric"):
        fit_cgh_recipe(seqs, labs, previous=first, metric="freeze", **params)
    with pytest.raises(ParameterError, match="ssvm"):
        fit_cgh_recipe(seqs, labs, previous=first, metric="anchor", learner="partial", **params)
    with pytest.raises(ParameterError, match="min_size"):
        fit_cgh_recipe(seqs, labs, previous=first, metric="keep", min_size=5, **params)


@pytest.mark.slow
def test_each_law_keeps_the_learned_metric_only_when_it_saves_law_metric_margin_errors():
    seqs, labs = _platform_set(6, 24)
    params = dict(max_iter=2, min_class_sequences=6, counts=(0, 1), alphas=(1e-2, 1.0), prune=False)
    seg = fit_cgh_recipe(seqs, labs, **params)
    assert seg.law.law_metric_margin == 2
    assert set(seg.law_cv_errors_) == set(seg.laws_) == {"all", "low", "high"}
    for key, cv in seg.law_cv_errors_.items():
        assert set(cv) == {"learned", "logratio"}
        chosen = seg.law_metrics_[key]
        assert (chosen == "learned") == (cv["learned"] <= cv["logratio"] - 2)
        assert (chosen == "learned") == (seg.laws_[key].w is seg.w_)
    # here both metrics' laws make no cross-validated error: a tie keeps the logratio, unless the margin is 0
    assert set(seg.law_metrics_.values()) == {"logratio"}
    for margin in (0, 1):
        other = fit_cgh_recipe(seqs, labs, law_metric_margin=margin, **params)
        assert other.law_cv_errors_ == seg.law_cv_errors_      # the metric and the laws' fits do not depend on it
        for key, cv in other.law_cv_errors_.items():
            kept = "learned" if cv["learned"] <= cv["logratio"] - margin else "logratio"
            assert other.law_metrics_[key] == kept
        assert set(other.law_metrics_.values()) == {"learned" if margin == 0 else "logratio"}
    for bad in (-1, 1.5, True, "2"):
        with pytest.raises(ParameterError, match="law_metric_margin"):
            fit_cgh_recipe(seqs, labs, law_metric_margin=bad, **params)
    # a learned metric blind to everything (every weight 0) decodes no change, so it misses every labelled one:
    # each law then decodes the plain logratio, and the recipe finds the clear 4σ steps of new chromosomes
    blind = fit_cgh_recipe(seqs, labs, **params)
    blind.w_ = blind.model_.join_w(np.zeros(blind.model_._p()), 1.0)
    seg = fit_cgh_recipe(seqs, labs, previous=blind, metric="keep", **params)
    assert seg.law_metrics_ == {"all": "logratio", "low": "logratio", "high": "logratio"}
    logratio_w = seg.logratio_w()
    assert np.array_equal(seg.model_.split_w(logratio_w)[0], np.eye(seg.model_._p())[0])
    new_seqs, new_labs = _platform_set(60, 8)
    for s, _l in zip(new_seqs, new_labs):
        assert seg.own_w(s) is seg.laws_[density_class(s)].w
        np.testing.assert_array_equal(seg.item_w(s, shared_w=seg.w_), seg.item_w(s))   # its own w, whatever is shared
        assert seg.model_.decode(seg.model_input(s), seg.item_w(s)) == seg.law_segment(s)
        assert 45 in seg.segment(s).breakpoints.tolist()
    again = CghSegmenter.from_dict(seg.model_, seg.w_, json.loads(json.dumps(seg.to_dict())))
    assert again.law_metrics_ == seg.law_metrics_
    assert all(again.segment(s) == seg.segment(s) and again.own_w(s) is not None for s in new_seqs)
    damaged = seg.to_dict()
    damaged["laws"]["low"]["metric"] = "cosine"
    with pytest.raises(ParameterError, match="unknown metric"):
        CghSegmenter.from_dict(seg.model_, seg.w_, damaged)


@pytest.mark.slow
def test_a_law_metric_can_be_imposed():
    seqs, labs = _platform_set(6, 16)
    params = dict(max_iter=2, min_class_sequences=4, counts=(0, 1), alphas=(1e-2,), prune=False)
    learned = fit_cgh_recipe(seqs, labs, law_metric="learned", **params)
    assert all(cv.keys() == {"learned"} for cv in learned.law_cv_errors_.values())
    assert all(law.w is learned.w_ for law in learned.laws_.values())
    plain = fit_cgh_recipe(seqs, labs, law_metric="logratio", **params)
    assert set(plain.law_metrics_.values()) == {"logratio"}
    assert all(np.array_equal(law.w, plain.logratio_w()) for law in plain.laws_.values())
    with pytest.raises(ParameterError, match="law_metric"):
        fit_cgh_recipe(seqs, labs, law_metric="euclidean", **params)


@pytest.mark.slow
def test_a_law_chooses_its_margin_only_from_enough_profiles():
    from marginalia.cgh.recipe import LAW_MARGINS, MIN_GROUPS_TO_COMPARE
    seqs, labs = _platform_set(7, 16)
    params = dict(max_iter=1, density_split=None, counts=(0, 1), alphas=(1e-2,), law_metric="logratio",
                  prune=True)
    few = CghSegmenter(**params).fit(seqs, labs, groups=[str(i % (MIN_GROUPS_TO_COMPARE - 1)) for i in range(16)])
    law = few.laws_["all"]
    assert law.margin_ == LAW_MARGINS[0] and set(law.cv_errors_) == {(LAW_MARGINS[0], 1e-2)}
    enough = CghSegmenter(**params).fit(seqs, labs, groups=[str(i % MIN_GROUPS_TO_COMPARE) for i in range(16)])
    law = enough.laws_["all"]
    assert set(law.cv_errors_) == {(m, 1e-2) for m in LAW_MARGINS} and law.margin_ in LAW_MARGINS
    imposed = CghSegmenter(**params, margin=0.75).fit(seqs, labs,
                                                       groups=[str(i % MIN_GROUPS_TO_COMPARE) for i in range(16)])
    assert imposed.laws_["all"].margin_ == 0.75


def test_an_impossible_margin_is_refused_by_name_also_on_few_profiles():
    seqs, labs = _platform_set(8, 8)
    with pytest.raises(ParameterError, match="margin"):
        CghSegmenter(max_iter=1, density_split=None, counts=(0, 1), alphas=(1e-2,), law_metric="logratio", prune=False,
                     margin="wide").fit(seqs, labs)
