"""Learned keep-or-drop rule on candidate changes (marginalia.cgh.change_pruning)."""

import copy
import json
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from marginalia.cgh.change_pruning import (
    DEFAULT_TOLERANCE,
    SPIKE_THRESHOLD,
    SPREAD_FLOOR,
    ChangePruner,
    despike,
    elimination_path,
    oversegment,
    prune_changes,
    with_changes_of,
)
from marginalia.exceptions import NotFittedError, ParameterError
from marginalia.metrics import region_errors
from marginalia.types import RegionKind, RegionLabel, Segmentation, Sequence


def _naive_prune(z, changes, tau, beta, gamma, delta=0.0):
    """Recompute every score from scratch at each step; drop the weakest while it is below tau."""
    kept = list(changes)
    T = z.shape[0]

    def score(k):
        b = [0] + kept + [T]
        a, c, d = b[k], b[k + 1], b[k + 2]
        nl, nr = c - a, d - c
        jump = abs(z[c:d].mean() - z[a:c].mean())
        shorter = z[a:c] if nl <= nr else z[c:d]
        spread = max(float(shorter.std()), SPREAD_FLOOR)
        return (math.log(jump + 1e-12) + beta * math.log(nl * nr / (nl + nr)) + gamma * math.log(min(nl, nr))
                + delta * math.log(spread))

    while kept:
        scores = [score(k) for k in range(len(kept))]
        k = int(np.argmin(scores))
        if scores[k] >= tau:
            break
        kept.pop(k)
    return kept


@pytest.mark.slow
@settings(max_examples=40, deadline=None)
@given(st.integers(0, 10_000), st.integers(6, 30), st.floats(-1.0, 2.0), st.sampled_from([0.0, 0.5, 1.0]),
       st.sampled_from([-0.3, 0.0, 0.3]), st.sampled_from([0.0, -1.0, -2.0]))
def test_pruning_equals_the_naive_recomputation(seed, T, tau, beta, gamma, delta):
    rng = np.random.default_rng(seed)
    x = np.repeat(rng.normal(0, 2, 4), [T // 4] * 3 + [T - 3 * (T // 4)]) + rng.normal(0, 1, T)
    m = int(rng.integers(0, T - 1))
    changes = sorted(rng.choice(np.arange(1, T), size=m, replace=False).tolist())
    seg = Segmentation(np.array(changes + [T]), T)
    scale = 1.0
    z = x - np.median(x)
    got = prune_changes(x, seg, tau=tau, beta=beta, gamma=gamma, delta=delta, scale=scale)
    assert got.changes[:-1].tolist() == _naive_prune(z, changes, tau, beta, gamma, delta)
    # the elimination path lists every candidate once
    order, scores = elimination_path(x, seg, beta=beta, gamma=gamma, delta=delta, scale=scale)
    assert sorted(order.tolist()) == changes and scores.shape == (m,)


def _sequence(rng, kind, T=120):
    """Noise 1, two real steps (3σ) and two spurious changes: small shifts (0.4σ) or single-probe spikes (5σ)."""
    x = rng.normal(0, 1, T)
    x[40:] += 3.0
    x[80:] -= 3.0
    if kind == "shift":
        x[15:30] += 0.4          # a weak level shift inside the first flat part
        spurious = [15, 30]
    else:
        x[60] += 5.0             # a single-probe spike inside the middle part
        spurious = [60, 61]
    real = [40, 80]
    cand = Segmentation(np.array(sorted(real + spurious) + [T]), T)
    labels = [RegionLabel(item_id="s", start=spurious[0] - 5, stop=spurious[1] + 5, kind=RegionKind.ZERO),
              RegionLabel(item_id="s", start=35, stop=45, kind=RegionKind.ONE),
              RegionLabel(item_id="s", start=75, stop=85, kind=RegionKind.ONE)]
    return x, cand, labels


@pytest.mark.parametrize("kind", ["shift", "spike"])
def test_the_learned_rule_drops_the_spurious_changes_and_keeps_the_real_steps(kind):
    rng = np.random.default_rng(3)
    train = [_sequence(rng, kind) for _ in range(8)]
    p = ChangePruner().fit([t[0] for t in train], [t[1] for t in train], [t[2] for t in train])
    assert p.baseline_errors_ == 8 and p.train_errors_ == 0 and p.tau_ is not None
    for _ in range(5):
        x, cand, labels = _sequence(rng, kind)
        kept = p.prune(x, cand)
        assert kept.changes.tolist() == [40, 80, 120]
        assert region_errors(labels, kept).errors == 0
    if kind == "spike":
        # a spike's jump is larger than a step's: only a length term separates them
        assert p.beta_ > 0 or p.gamma_ > 0


@pytest.mark.slow
@settings(max_examples=25, deadline=None)
@given(st.integers(0, 10_000), st.lists(st.booleans(), min_size=10, max_size=10), st.sampled_from([0, 1, 2]))
def test_a_fit_from_the_tables_of_a_subset_is_the_fit_on_that_subset(seed, chosen, tolerance):
    # what makes cross-validating the rule one fit rather than one per fold
    rng = np.random.default_rng(seed)
    data = [_sequence(rng, kind) for kind in ("shift", "spike") * 5]
    for _x, _cand, labels in data[::3]:        # some labels the candidates cannot satisfy, some candidates none
        labels[1] = RegionLabel(item_id="s", start=1, stop=12, kind=RegionKind.ONE)
    index = [i for i, c in enumerate(chosen) if c] or [0]
    rule = ChangePruner(tolerance=tolerance)
    tables = rule.error_tables([d[0] for d in data], [d[1] for d in data], [d[2] for d in data])
    assert tables.errors.shape == (10, len(tables.rules), len(tables.taus)) and tables.baseline.shape == (10,)
    from_tables = ChangePruner(tolerance=tolerance).fit_tables(tables, index)
    direct = ChangePruner(tolerance=tolerance).fit([data[i][0] for i in index], [data[i][1] for i in index],
                                                   [data[i][2] for i in index])
    assert from_tables.to_dict() == direct.to_dict()
    assert (from_tables.train_errors_, from_tables.baseline_errors_) == (direct.train_errors_,
                                                                         direct.baseline_errors_)
    with pytest.raises(ParameterError, match="at least one"):
        rule.fit_tables(tables, [])
    with pytest.raises(ParameterError, match="ErrorTables"):
        rule.fit_tables({"errors": tables.errors}, index)


def _focal_or_scatter(rng, kind, T=150):
    """Noise 1 and one short segment of 6 probes raised by 3σ on average: a real focal event (every probe
    raised alike) or a scatter of outliers (probes raised by 0 or 6σ at random: the same mean jump, as spread
    as the outliers a rejected spike cluster holds). The labels call the first real and the second not."""
    x = rng.normal(0, 1, T)
    if kind == "focal":
        x[70:76] += 3.0
        labels = [RegionLabel(item_id="s", start=66, stop=73, kind=RegionKind.ONE),
                  RegionLabel(item_id="s", start=73, stop=80, kind=RegionKind.ONE)]
    else:
        x[70:76] += rng.permutation([0.0, 6.0] * 3)
        labels = [RegionLabel(item_id="s", start=60, stop=90, kind=RegionKind.ZERO)]
    return x, Segmentation(np.array([70, 76, T]), T), labels


def test_the_spread_of_the_short_segment_tells_a_focal_event_from_a_scatter_of_outliers():
    # same jump, same lengths: only the spread of the short segment separates them (the high-density aCGH
    # arrays' focal events the experts keep, against the spike clusters they reject)
    rng = np.random.default_rng(5)
    train = [_focal_or_scatter(rng, k) for k in ("focal", "scatter") * 10]
    args = [t[0] for t in train], [t[1] for t in train], [t[2] for t in train]
    # the raw signal: despiking would also flatten some of the scattered outliers
    without = ChangePruner(deltas=(0.0,), spike=None).fit(*args)
    with_spread = ChangePruner(spike=None).fit(*args)
    assert with_spread.delta_ < 0 and with_spread.train_errors_ == 0
    assert without.train_errors_ >= 5
    test = [_focal_or_scatter(rng, k) for k in ("focal", "scatter") * 5]
    errors = sum(region_errors(labels, with_spread.prune(x, cand)).errors for x, cand, labels in test)
    assert errors == 0


def test_no_pruning_when_it_does_not_help_and_round_trip():
    rng = np.random.default_rng(0)
    train = [_sequence(rng, "shift") for _ in range(4)]
    # labels that call every candidate real: keeping all of them is best
    labels = [[RegionLabel(item_id="s", start=c - 3, stop=c + 3, kind=RegionKind.ONE)
               for c in cand.changes[:-1]] for _, cand, _ in train]
    p = ChangePruner().fit([t[0] for t in train], [t[1] for t in train], labels)
    assert p.tau_ is None and p.train_errors_ == p.baseline_errors_ == 0
    x, cand, _ = train[0]
    assert p.prune(x, cand).changes.tolist() == cand.changes.tolist()
    again = ChangePruner.from_dict(json.loads(json.dumps(p.to_dict())))
    assert again.prune(x, cand).changes.tolist() == cand.changes.tolist()


def test_bad_input_is_refused_clearly():
    x = np.zeros(10)
    with pytest.raises(NotFittedError):
        ChangePruner().prune(x, Segmentation(np.array([10]), 10))
    with pytest.raises(ParameterError, match="segmentation"):
        prune_changes(x, Segmentation(np.array([5, 12]), 12), tau=0.0)
    with pytest.raises(ParameterError, match="tau"):
        prune_changes(x, Segmentation(np.array([10]), 10), tau=float("nan"))
    with pytest.raises(ParameterError, match="taus"):
        ChangePruner(taus=(1.0, 0.0)).fit([x], [Segmentation(np.array([10]), 10)], [[]])
    with pytest.raises(ParameterError, match="same non-zero number"):
        ChangePruner().fit([x], [], [])
    with pytest.raises(ParameterError, match="change pruner"):
        ChangePruner.from_dict({"beta": 0.0})
    for bad in (-1, 0.5, True, "1"):
        with pytest.raises(ParameterError, match="tolerance"):
            ChangePruner(tolerance=bad).fit([x], [Segmentation(np.array([10]), 10)], [[]])


def _one_step(rng, jump, real, T=400):
    """Noise 1 and one candidate change at T/2 of size ``jump``, labelled real or not."""
    x = rng.normal(0, 1, T)
    x[T // 2:] += jump
    kind = RegionKind.ONE if real else RegionKind.ZERO
    return x, Segmentation(np.array([T // 2, T]), T), [RegionLabel(item_id="s", start=T // 2 - 20,
                                                                     stop=T // 2 + 20, kind=kind)]


def test_the_threshold_aims_at_the_middle_of_the_near_best_ones():
    # real steps of 3-5 noise units (two of the smallest, so dropping them costs two errors), rejected ones
    # of 0.3-0.6 and one rejected step of 2.2: the thresholds without any training error are a narrow run
    # between log 2.2 and log 3, those within one error run from the rejected small steps up to log 3
    rng = np.random.default_rng(7)
    train = ([_one_step(rng, j, True) for j in (3.0, 3.0, 3.5, 4.0, 5.0)]
             + [_one_step(rng, j, False) for j in (0.3, 0.4, 0.5, 0.6)] + [_one_step(rng, 2.2, False)])
    args = [t[0] for t in train], [t[1] for t in train], [t[2] for t in train]
    only_best = ChangePruner(betas=(0.0,), gammas=(0.0,), deltas=(0.0,), tolerance=0).fit(*args)
    near_best = ChangePruner(betas=(0.0,), gammas=(0.0,), deltas=(0.0,)).fit(*args)
    assert only_best.train_errors_ == 0 and math.log(2.0) < only_best.tau_ < math.log(3.2)
    assert near_best.train_errors_ == 1 and 0.0 < near_best.tau_ < math.log(2.0)
    assert near_best.tau_ < only_best.tau_ - 0.2
    # a real step of 2.3 noise units: the threshold squeezed against the lone rejected 2.2 drops it
    x, cand, labels = _one_step(rng, 2.3, True)
    assert region_errors(labels, near_best.prune(x, cand)).errors == 0
    err = region_errors(labels, only_best.prune(x, cand))
    assert (err.fp, err.fn) == (0, 1)


@pytest.mark.slow
def test_recipe_with_pruning_saves_its_version_and_older_descriptions_still_load():
    from marginalia.cgh.recipe import CghSegmenter, fit_cgh_recipe

    from .test_penalty_law import _platform_item
    rng = np.random.default_rng(5)
    data = [_platform_item(rng, i, "high" if i % 2 else "low") for i in range(16)]
    seqs, labs = [s for s, _ in data], [l for _, l in data]
    seg = fit_cgh_recipe(seqs, labs, max_iter=2, min_class_sequences=8, counts=(0, 1), alphas=(1e-2,))
    assert set(seg.pruners_) == set(seg.laws_) == set(seg.pruner_candidates_) == {"all", "low", "high"}
    for k, cv in seg.pruner_cv_errors_.items():
        assert seg.pruner_candidates_[k] == ("union" if cv["union"] < cv["law"] else "law")
    d = json.loads(json.dumps(seg.to_dict()))
    union = "union" in seg.pruner_candidates_.values()
    assert d["recipe"] == "cgh-penalty-law/5" and d["spike_threshold"] == seg.pruning.spike_threshold == 4.0
    assert all(rule["spike"] == 4.0 for rule in d["pruners"].values())
    assert set(d["pruners"]) == {"all", "low", "high"}
    again = CghSegmenter.from_dict(seg.model_, seg.w_, d)
    assert again.pruner_candidates_ == seg.pruner_candidates_ and again.pruning.spike_threshold == 4.0
    for s in seqs:
        law_seg, got = seg.law_segment(s), seg.segment(s)
        # pruning only removes candidates, and the rebuilt recipe decodes the same
        assert set(got.changes.tolist()) <= set(seg.candidates_for(s, law_seg).changes.tolist())
        assert set(law_seg.changes.tolist()) <= set(seg.candidates_for(s, law_seg).changes.tolist())
        assert again.segment(s).changes.tolist() == got.changes.tolist()
    # a version-4 description (before despiking) loads with the logratio as measured, in the pruners too
    v4 = {k: v for k, v in d.items() if k != "spike_threshold"}
    v4 = dict(v4, recipe="cgh-penalty-law/4", pruners={k: {n: v for n, v in rule.items() if n != "spike"}
                                                       for k, rule in d["pruners"].items()})
    if not union:
        v4.update(pruner_candidates={"high": "union"}, overseg_penalty=2.0)
    four = CghSegmenter.from_dict(seg.model_, seg.w_, v4)
    assert four.pruning.spike_threshold is None and all(p._spike() is None for p in four.pruners_.values())
    assert four.to_dict()["recipe"] == "cgh-penalty-law/4"
    # a version-3 description (the law's candidates only) loads with them
    v3 = {k: v for k, v in v4.items() if k not in ("pruner_candidates", "overseg_penalty")}
    v3 = dict(v3, recipe="cgh-penalty-law/3")
    assert set(CghSegmenter.from_dict(seg.model_, seg.w_, v3).pruner_candidates_.values()) == {"law"}
    # a version-1 description (no pruners) loads and decodes with the law alone
    old = dict(v3, recipe="cgh-penalty-law/1")
    old.pop("pruners")
    v1 = CghSegmenter.from_dict(seg.model_, seg.w_, old)
    assert v1.pruners_ == {} and v1.segment(seqs[1]).changes.tolist() == seg.law_segment(seqs[1]).changes.tolist()
    with pytest.raises(ParameterError, match="pruners"):
        CghSegmenter.from_dict(seg.model_, seg.w_, dict(old, recipe="cgh-penalty-law/2"))
    # a version-2 description (pruners without the spread term) loads with no spread term
    v2 = dict(v3, recipe="cgh-penalty-law/2",
              pruners={k: {n: v for n, v in rule.items() if n != "delta"} for k, rule in d["pruners"].items()})
    assert all(p.delta_ == 0.0 for p in CghSegmenter.from_dict(seg.model_, seg.w_, v2).pruners_.values())
    with pytest.raises(ParameterError, match="newer Marginalia"):
        CghSegmenter.from_dict(seg.model_, seg.w_, dict(d, recipe="cgh-penalty-law/6"))
    with pytest.raises(ParameterError, match="spike"):
        CghSegmenter.from_dict(seg.model_, seg.w_, dict(d, spike_threshold=-1.0))
    for bad in ({"high": "law"}, {"elsewhere": "union"}, None):
        with pytest.raises(ParameterError, match="pruner_candidates"):
            CghSegmenter.from_dict(seg.model_, seg.w_, dict(v3, recipe="cgh-penalty-law/4", pruner_candidates=bad,
                                                            overseg_penalty=2.0))
    with pytest.raises(ParameterError, match="overseg_penalty"):
        CghSegmenter.from_dict(seg.model_, seg.w_, dict(v3, recipe="cgh-penalty-law/4",
                                                        pruner_candidates={"high": "union"}, overseg_penalty=-1))
    assert CghSegmenter(max_iter=2, min_class_sequences=8, counts=(0, 1), alphas=(1e-2,), prune=False).fit(
        seqs, labs).to_dict()["recipe"] == "cgh-penalty-law/1"


def test_despike_replaces_lone_spikes_and_keeps_focal_events_and_the_ends():
    z = np.zeros(20)
    z[5] = 9.0                      # a lone spike
    z[10:12] = 6.0                  # a two-probe focal event
    z[15] = 3.5                     # within the threshold
    z[0] = z[-1] = -8.0             # the ends have one neighbour: kept
    out = despike(z, 4.0)
    assert out[5] == 0.0 and np.array_equal(out[10:12], [6.0, 6.0]) and out[15] == 3.5
    assert out[0] == out[-1] == -8.0 and z[5] == 9.0            # a copy
    assert np.array_equal(np.delete(out, 5), np.delete(z, 5))
    assert np.array_equal(despike(z, 10.0), z) and np.array_equal(despike(z[:2], 1.0), z[:2])
    with pytest.raises(ParameterError, match="spike"):
        despike(z, 0.0)


def test_a_lone_spike_no_longer_makes_a_focal_event():
    rng = np.random.default_rng(8)
    x = rng.normal(0, 1, 120)
    x[60] += 14.0
    cand = Segmentation(np.array([59, 62, 120]), 120)       # a three-probe segment around the spike
    raw = elimination_path(x, cand, beta=0.5)[1]
    clean = elimination_path(x, cand, beta=0.5, spike=4.0)[1]
    assert clean.max() < raw.max() - 1.0 and clean.min() < raw.min() - 1.0
    assert oversegment(x, spike=4.0).n_segments == 1 and oversegment(x).n_segments > 1
    # a fitted rule keeps its threshold in its file; one saved without it reads the signal as given
    labels = [RegionLabel(item_id="s", start=50, stop=70, kind=RegionKind.ZERO)]
    p = ChangePruner().fit([x], [cand], [labels])
    assert p.spike_ == SPIKE_THRESHOLD and ChangePruner.from_dict(p.to_dict())._spike() == SPIKE_THRESHOLD
    old = {k: v for k, v in p.to_dict().items() if k != "spike"}
    assert ChangePruner.from_dict(old)._spike() is None


def _missed_step_item(rng, i):
    """A chromosome with a clear 3σ step (labelled) and a no-change stretch, 60 probes."""
    x = rng.normal(0, 1, 60)
    x[30:] += 3.0
    seq = Sequence(x, positions=np.arange(60) * 1e6, name=f"{i}", kind="cgh", meta={"profile_id": str(i)})
    labels = [RegionLabel(item_id=seq.name, start=25, stop=35, kind=RegionKind.ONE),
              RegionLabel(item_id=seq.name, start=2, stop=24, kind=RegionKind.ZERO),
              RegionLabel(item_id=seq.name, start=36, stop=58, kind=RegionKind.ZERO)]
    return seq, labels


def test_the_candidate_comparison_prunes_the_held_out_sequences_own_candidates():
    from marginalia.cgh.recipe import _pruner_cv_errors

    rng = np.random.default_rng(5)
    items = [_missed_step_item(rng, i) for i in range(8)]
    xs = [s.values[:, 0] for s, _ in items]
    labels = [l for _, l in items]
    found = [Segmentation(np.array([30, 60]), 60)] * 8          # the step, as a training law would have it
    missed = [Segmentation(np.array([60]), 60)] * 8              # no change: what an unseen sequence got
    folds = np.arange(8) % 4
    assert _pruner_cv_errors(xs, found, labels, folds) == 0
    # fitted on the training folds' candidates, scored on the held-out sequences' own
    assert _pruner_cv_errors(xs, found, labels, folds, held_out_segs=missed) == 8


@pytest.mark.slow
def test_pruners_choose_from_an_oversegmentation_when_the_law_misses_changes():
    from marginalia.cgh.recipe import CghSegmenter

    rng = np.random.default_rng(11)
    train = [_missed_step_item(rng, i) for i in range(16)]
    test = [_missed_step_item(rng, 100 + i) for i in range(8)]
    seqs, labs = [s for s, _ in train], [l for _, l in train]
    # a law whose only penalty is far too high: its segmentations hold no change at all
    kw = dict(max_iter=1, offsets=(8.0, 8.5), counts=(0, 1), alphas=(1e-2,), density_split=None, prune=True)
    law_only = CghSegmenter(candidates="law", **kw).fit(seqs, labs)
    auto = CghSegmenter(**kw).fit(seqs, labs)
    assert all(law_only.law_segment(s).n_segments == 1 for s, _ in test)
    assert auto.pruner_candidates_ == {"all": "union"}
    assert auto.pruner_cv_errors_["all"]["union"] < auto.pruner_cv_errors_["all"]["law"]
    errors = {name: sum(region_errors(l, r.segment(s)).errors for s, l in test)
              for name, r in (("law", law_only), ("auto", auto))}
    assert errors["law"] == len(test) and errors["auto"] <= 1
    # the choice is saved (a version-4 description) and the rebuilt recipe decodes the same
    d = json.loads(json.dumps(auto.to_dict()))
    assert d["recipe"] == "cgh-penalty-law/5" and d["pruner_candidates"] == {"all": "union"}
    again = CghSegmenter.from_dict(auto.model_, auto.w_, d)
    assert all(again.segment(s).changes.tolist() == auto.segment(s).changes.tolist() for s, _ in test)
    # the over-segmentation is computed once per sequence and reused, the training sequences' from the fit
    calls = []
    real = auto._oversegment
    auto._oversegment = lambda x: calls.append(1) or real(x)
    assert all(auto.segment(s) == auto.segment(s) for s in seqs) and calls == []
    s = _missed_step_item(rng, 999)[0]
    assert auto.segment(s).changes.tolist() == auto.segment(s).changes.tolist() and calls == [1]


@given(st.lists(st.integers(1, 39), max_size=8), st.lists(st.integers(1, 39), max_size=8))
def test_with_changes_of_is_the_sorted_union(a, b):
    sa = Segmentation(np.array(sorted(set(a)) + [40]), 40)
    sb = Segmentation(np.array(sorted(set(b)) + [40]), 40)
    assert with_changes_of(sa, sb).changes.tolist() == sorted(set(a) | set(b)) + [40]
    with pytest.raises(ParameterError, match="covers"):
        with_changes_of(sa, Segmentation(np.array([30]), 30))


def test_oversegment_is_the_exact_penalized_segmentation_in_noise_units():
    from marginalia.decoders import segment_penalized
    from marginalia.features.hermite import robust_noise_scale

    rng = np.random.default_rng(2)
    x = 0.3 * rng.normal(size=120) + np.repeat([0.0, 1.5, -0.5], 40)
    got = oversegment(x, penalty=2.0, min_size=3)
    z = (x - np.median(x)) / robust_noise_scale(x)
    assert got == segment_penalized(z, 2.0 * np.log(120), min_size=3).segmentation
    assert set(got.changes.tolist()) >= {40, 80}
    with pytest.raises(ParameterError, match="penalty"):
        oversegment(x, penalty=-1.0)


@settings(max_examples=40, deadline=None)
@given(st.integers(0, 10_000), st.integers(6, 30), st.floats(-1.0, 2.0), st.sampled_from([0.0, 0.5, 1.0]),
       st.sampled_from([-0.3, 0.0, 0.3]))
def test_decision_margin_is_the_distance_to_the_nearest_threshold_that_changes_the_kept_set(seed, T, tau, beta,
                                                                                              gamma):
    rng = np.random.default_rng(seed)
    x = np.repeat(rng.normal(0, 2, 3), [T // 3] * 2 + [T - 2 * (T // 3)]) + rng.normal(0, 1, T)
    m = int(rng.integers(0, T - 1))
    seg = Segmentation(np.array(sorted(rng.choice(np.arange(1, T), size=m, replace=False).tolist()) + [T]), T)
    rule = ChangePruner()
    rule.beta_, rule.gamma_, rule.delta_, rule.tau_ = beta, gamma, 0.0, tau
    margin = rule.decision_margin(x, seg, scale=1.0)
    if m == 0:
        assert margin == math.inf
        return
    assert margin >= 0
    kept = prune_changes(x, seg, tau=tau, beta=beta, gamma=gamma, scale=1.0)
    if margin > 1e-9:
        for t in (tau - 0.999 * margin, tau + 0.999 * margin):
            assert prune_changes(x, seg, tau=t, beta=beta, gamma=gamma, scale=1.0) == kept
    beyond = [prune_changes(x, seg, tau=t, beta=beta, gamma=gamma, scale=1.0)
              for t in (tau - 1.001 * margin - 1e-9, tau + 1.001 * margin + 1e-9)]
    assert any(b != kept for b in beyond)
    rule.tau_ = None  # a rule that keeps every change has no decision to flip
    assert rule.decision_margin(x, seg, scale=1.0) == math.inf


@pytest.mark.slow
def test_too_few_groups_keep_the_laws_candidates_without_cross_validation():
    # and their pruner aims at its best thresholds: one error is a large share of a few profiles' labels
    from marginalia.cgh.recipe import MIN_GROUPS_TO_COMPARE, CghSegmenter

    rng = np.random.default_rng(4)
    train = [_missed_step_item(rng, i) for i in range(16)]
    seqs, labs = [s for s, _ in train], [l for _, l in train]
    kw = dict(max_iter=1, offsets=(8.0, 8.5), counts=(0, 1), alphas=(1e-2,), density_split=None, prune=True)
    seg = CghSegmenter(**kw).fit(seqs, labs, groups=["one profile"] * len(seqs))
    assert seg.pruner_candidates_ == {"all": "law"} and seg.pruner_cv_errors_ == {}
    few = CghSegmenter(**kw).fit(seqs, labs, groups=[str(i % (MIN_GROUPS_TO_COMPARE - 1)) for i in range(16)])
    assert few.pruner_candidates_ == {"all": "law"} and few.pruner_cv_errors_ == {}
    assert seg.pruners_["all"].tolerance == few.pruners_["all"].tolerance == 0
    enough = CghSegmenter(**kw).fit(seqs, labs, groups=[str(i % MIN_GROUPS_TO_COMPARE) for i in range(16)])
    assert set(enough.pruner_cv_errors_["all"]) == {"law", "union"}
    assert enough.pruners_["all"].tolerance == DEFAULT_TOLERANCE == 1


def test_the_candidate_choice_reports_progress_and_can_be_cancelled():
    from marginalia.cgh.recipe import CANDIDATE_STAGE, CghSegmenter
    from marginalia.exceptions import CancelledError

    rng = np.random.default_rng(6)
    train = [_missed_step_item(rng, i) for i in range(8)]
    seqs, labs = [s for s, _ in train], [l for _, l in train]
    seen, stop = [], {"now": False}

    def progress(stage, done, total):
        seen.append((stage, done, total))
        stop["now"] = stage == CANDIDATE_STAGE and done == 3

    kw = dict(max_iter=1, offsets=(8.0, 8.5), counts=(0, 1), alphas=(1e-2,), density_split=None, prune=True)
    with pytest.raises(CancelledError):
        CghSegmenter(progress=progress, should_stop=lambda: stop["now"], **kw).fit(seqs, labs)
    # one pruner per left-out profile (8) and candidate set (2)
    assert [s for s in seen if s[0] == CANDIDATE_STAGE] == [(CANDIDATE_STAGE, k, 16) for k in (0, 1, 2, 3)]


@pytest.mark.slow
def test_a_platform_too_small_for_its_own_law_gets_its_own_pruner():
    from marginalia.cgh.recipe import CghSegmenter, density_class

    from .test_penalty_law import _platform_item
    rng = np.random.default_rng(3)
    # 12 high-density chromosomes (a 1.5σ bump the expert ignores) and 4 low-density ones (a 1.6σ step
    # the expert labels): the low platform is below min_class_sequences and is segmented by the pooled law
    train = [_platform_item(rng, i, "high") for i in range(12)] + \
        [_platform_item(rng, 100 + i, "low") for i in range(4)]
    test = [_platform_item(rng, 200 + i, p) for i in range(10) for p in ("low", "high")]
    seqs, labs = [s for s, _ in train], [l for _, l in train]
    kw = dict(max_iter=2, min_class_sequences=8, counts=(0, 1), alphas=(1e-2,), prune=True)

    def errors(seg):
        out = {"low": 0, "high": 0}
        for s, l in test:
            out[density_class(s)] += region_errors(l, seg.segment(s)).errors
        return out

    seg = CghSegmenter(**kw).fit(seqs, labs)
    assert set(seg.laws_) == {"all", "high"} and set(seg.pruners_) == {"all", "high", "low"}
    low = [i for i, s in enumerate(seqs) if density_class(s) == "low"]
    assert seg.law_for(seqs[low[0]]) is seg.laws_["all"] and seg.pruner_for(seqs[low[0]]) is seg.pruners_["low"]
    # the low pruner is fitted on the low chromosomes alone, from the pooled law's candidates
    cands = [seg.candidates_for(seqs[i], seg.law_segment(seqs[i])) for i in low]
    alone = ChangePruner(spike=seg.pruning.spike_threshold, tolerance=0).fit([seqs[i].values[:, 0] for i in low], cands,
                                                                     [labs[i] for i in low])
    assert seg.pruners_["low"].to_dict() == alone.to_dict()
    again = CghSegmenter.from_dict(seg.model_, seg.w_, json.loads(json.dumps(seg.to_dict())))
    assert all(again.segment(s).changes.tolist() == seg.segment(s).changes.tolist() for s, _ in test)
    # the pooled pruner, fitted mostly on high-density chromosomes, drops the low platform's real steps
    pooled = copy.deepcopy(seg)
    del pooled.pruners_["low"]
    assert pooled.pruner_for(seqs[low[0]]) is pooled.pruners_["all"]
    assert errors(seg) == {"low": 0, "high": 0} and errors(pooled)["low"] >= 4


@pytest.mark.slow
def test_one_platform_is_fitted_once_and_each_of_two_gets_its_own_law_from_4_profiles():
    from marginalia.cgh.recipe import CghSegmenter

    from .test_penalty_law import _platform_item
    rng = np.random.default_rng(4)
    kw = dict(max_iter=1, min_class_sequences=4, counts=(0, 1), alphas=(1e-2,), prune=True)
    one = [_platform_item(rng, i, "low") for i in range(8)]
    seg = CghSegmenter(**kw).fit([s for s, _ in one], [l for _, l in one])
    # a "low" law would be the pooled one again (same sequences, same metric)
    assert set(seg.laws_) == set(seg.pruners_) == {"all"}
    two = one[:4] + [_platform_item(rng, 50 + i, "high") for i in range(4)]
    seqs, labs = [s for s, _ in two], [l for _, l in two]
    assert {s.meta["profile_id"] for s in seqs} == {"0", "1", "25", "26"}     # 2 profiles per platform
    seg = CghSegmenter(**kw).fit(seqs, labs)
    # 4 chromosomes each, but of 2 profiles: the pooled law, a pruner per platform
    assert set(seg.laws_) == {"all"} and set(seg.pruners_) == {"all", "low", "high"}
    for fitted in (CghSegmenter(**kw).fit(seqs, labs, groups=[s.name for s in seqs]),
                   CghSegmenter(min_class_profiles=2, **kw).fit(seqs, labs)):
        assert set(fitted.laws_) == set(fitted.pruners_) == {"all", "low", "high"}
