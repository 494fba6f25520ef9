"""RecipeAdapter: the engine's aCGH learner (perceptron steps, recipe refits) in the active loop; retrain policies."""

import json
import warnings

import numpy as np
import pytest

from benchmarks.research.active_loop import ActiveLoop
from benchmarks.research.recipe_adapter import RecipeAdapter, retrain_metric_mode
from marginalia.active.parts import Part
from marginalia.active.segmentation_adapter import OutputPruning, segmentation_part_scores
from marginalia.cgh.change_pruning import ChangePruner, elimination_path
from marginalia.cgh.recipe import CghSegmenter, fit_cgh_recipe
from marginalia.decoders.segmentation import segment_penalized
from marginalia.exceptions import ParameterError
from marginalia.metrics import RegionErrors, region_errors
from marginalia.models.segmentation import SegmentationModel
from marginalia.types import RegionLabel, Sequence
from tests.core.cgh.test_penalty_law import _platform_set


def _chromosomes(n=10, T=150, seed=0):
    """Low-density aCGH-like chromosomes: one step change (or none) in noise, with the expert's region labels."""
    rng = np.random.default_rng(seed)
    items, labels = {}, {}
    for i in range(n):
        mu = np.zeros(T)
        name = f"{i // 2 + 1}:{i % 2 + 1}"
        labs = []
        if i % 3 != 0:
            a = int(rng.integers(40, T - 40))
            mu[a:] = rng.choice([-1.0, 1.0]) * rng.uniform(0.4, 1.0)
            labs += [RegionLabel(item_id=name, start=a - 5, stop=a + 5, kind="1"),
                     RegionLabel(item_id=name, start=5, stop=a - 10, kind="0")]
        else:
            labs.append(RegionLabel(item_id=name, start=5, stop=T - 5, kind="0"))
        x = mu + rng.normal(scale=0.25, size=T)
        pos = 1_000_000 + 1_000_000 * np.arange(T)  # one probe per Mb: a low-density array
        items[name] = Sequence(values=x[:, None], positions=pos, name=name, units="bp", kind="cgh",
                               meta={"profile_id": str(i // 2 + 1)})
        labels[name] = labs
    return items, labels


@pytest.mark.slow
def test_refit_fits_the_recipe_from_min_items_and_predicts_with_it():
    items, labels = _chromosomes()
    task = RecipeAdapter(min_items=4, recipe_params={"law_metric": "learned"})   # the perceptron's w draws the items
    task.initialize(items)
    names = list(items)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        task.refit([items[k] for k in names[:2]], [labels[k] for k in names[:2]])
        assert task.recipe_ is None and task.n_refits_ == 1  # too few chromosomes: a warm SSVM
        task.refit([items[k] for k in names[:6]], [labels[k] for k in names[:6]])
    assert task.recipe_ is not None and task.n_refits_ == 2
    held = [(items[k], labels[k]) for k in names[6:]]
    for data, _ in held:
        assert task.predict(data) == task.recipe_.segment(data)
    total = sum((region_errors(labs, task.recipe_.segment(data)) for data, labs in held), RegionErrors())
    assert task.evaluate(held) == pytest.approx(total.errors / total.n_labels)
    # part scores: the perceptron's parameters with the chromosome's own penalty factor, as the engine scores
    data = items[names[7]]
    factor = task.penalty_factor(data)
    assert factor > 0 and factor != 1.0
    part = Part(names[7], 0, 150, "chromosome")
    got = task.part_scores(data, part, [])
    B, pen = task.model.split_w(task.w_)
    want = segmentation_part_scores(task.model, task.model.join_w(B, pen * factor), task.features_of(data), part, [],
                                    warm=False)
    assert got.best == pytest.approx(want.best) and got.second == pytest.approx(want.second)
    assert got.scale == pytest.approx(want.scale)


@pytest.mark.slow
def test_chromosomes_whose_law_decodes_the_plain_logratio_are_scored_with_its_parameters():
    items, labels = _chromosomes(seed=5)
    task = RecipeAdapter(min_items=4, recipe_params={"law_metric": "logratio"})
    task.initialize(items)
    names = list(items)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        task.refit([items[k] for k in names[:6]], [labels[k] for k in names[:6]])
    data = items[names[7]]
    law_w = task.recipe_.law_for(data).w
    assert task.own_law_w(data) is law_w
    want = task.model.scale_penalty(law_w, task.penalty_factor(data))
    np.testing.assert_array_equal(task.item_w(data, task.w_), want)
    part = Part(names[7], 0, 150, "chromosome")
    got = task.part_scores(data, part, [])
    ref = segmentation_part_scores(task.model, want, task.features_of(data), part, [], warm=False)
    assert got.best == pytest.approx(ref.best) and got.second == pytest.approx(ref.second)
    # a label on it takes no perceptron step: the shared parameters do not draw it
    w_before = task.w_.copy()
    wrong = [RegionLabel(item_id=names[7], start=10, stop=30, kind="1")]
    task.perceptron_step(data, wrong)
    np.testing.assert_array_equal(task.w_, w_before)
    assert task.predict(data, wrong).n_segments >= 2       # the label still holds in its redraw


def test_the_loop_learns_with_it_and_bad_input_is_refused():
    items, labels = _chromosomes(seed=3)
    names = list(items)
    pool = {k: items[k] for k in names[:8]}
    held = [(items[k], labels[k]) for k in names[8:]]
    session = ActiveLoop(pool, RecipeAdapter(min_items=4), lambda q, p: labels[p.item_id], strategy="best-vs-2nd",
                            learner="combined", refit_every=4, held_out=held, random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        session.run(max_fraction=0.5)
    assert session.model.n_refits_ == 1 and session.model.recipe_ is not None
    assert len(session.curve_) == 5 and all(r["held_out_loss"] is not None for r in session.curve_)
    q = session.next_queries(2)
    assert all(0.0 <= x.uncertainty <= 1.0 for x in q)
    with pytest.raises(ParameterError, match="Sequence"):
        RecipeAdapter().initialize({"a": np.zeros(50)})
    with pytest.raises(ParameterError, match="min_items"):
        RecipeAdapter(min_items=1)
    with pytest.raises(ParameterError, match="query_margin"):
        RecipeAdapter(query_margin="pruned")


def _rule(tau):
    rule = ChangePruner()
    rule.beta_, rule.gamma_, rule.delta_, rule.tau_ = 0.5, 0.0, 0.0, tau
    return rule


def test_output_margin_follows_the_pruned_prediction():
    rng = np.random.default_rng(4)
    T = 200
    x = rng.normal(0.0, 1.0, T)
    x[100:] += 0.9  # one modest step: the decoder's add/remove decision is close
    X = x[:, None]
    model = SegmentationModel(metric="diagonal", min_size=3)
    model.fit_scales([X])
    w = model.join_w(np.array([1.0]), 2.0 * np.log(T) / 4)
    part = Part("a", 0, T, "chromosome")
    plain = segmentation_part_scores(model, w, X, part, [], warm=False)
    decoder_margin = (plain.best - plain.second) / plain.scale

    def margin(tau):
        s = segmentation_part_scores(model, w, X, part, [], warm=False,
                                     pruning=OutputPruning(_rule(tau), x, 1.0))
        assert s.best == pytest.approx(plain.best) and s.scale == pytest.approx(plain.scale)
        return (s.best - s.second) / s.scale

    # a rule that keeps every change: the prediction is the decoder's best, so is its margin
    assert margin(None) == pytest.approx(decoder_margin)
    # a rule that drops every change far below its threshold: best and runner-up both prune to "no change",
    # so the prediction only flips with the pruning decision as well
    best = segment_penalized(X * model.decoder_metric(w, T)[0], model.decoder_metric(w, T)[1], min_size=3)
    _, scores = elimination_path(x, best.segmentation, beta=0.5, scale=1.0)
    assert scores.size == 1  # the decoder finds the step
    far = margin(50.0)
    assert far > decoder_margin
    assert far <= 2.0 * (50.0 - scores[0]) + 1e-9
    # a threshold right at a decision of the best segmentation: the prediction is on the edge
    assert margin(float(np.maximum.accumulate(scores)[0]) + 1e-6) == pytest.approx(0.0, abs=1e-5)


@pytest.mark.slow
def test_metric_refit_keeps_the_previous_metric_until_the_label_set_grows_by_half():
    items, labels = _chromosomes(n=14, seed=5)
    names = list(items)
    task = RecipeAdapter(min_items=4, metric_refit="keep-x1.5")
    task.initialize(items)

    def refit(k):
        task.refit([items[n] for n in names[:k]], [labels[n] for n in names[:k]])
        return task.recipe_

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        first = refit(6)
        kept = refit(8)          # 8 < 1.5 x 6: the metric stays
        relearned = refit(12)    # 12 >= 1.5 x 6: learned afresh on 12
    np.testing.assert_array_equal(kept.w_, first.w_)
    assert kept.laws_["all"].errors_.shape[0] == 8
    assert relearned.metric_n_items_ == 12 and not np.array_equal(relearned.w_, first.w_)
    with pytest.raises(ParameterError, match="metric_refit"):
        RecipeAdapter(metric_refit="never")


@pytest.mark.slow
def test_retrain_policies_choose_how_the_metric_is_refitted():
    seqs, labs = _platform_set(7, 16)
    params = dict(max_iter=2, min_class_sequences=4, counts=(0, 1), alphas=(1e-2,), prune=False)
    first = fit_cgh_recipe(seqs[:8], labs[:8], **params)
    assert first.metric_n_items_ == 8
    kept = fit_cgh_recipe(seqs[:11], labs[:11], previous=first, metric="keep", **params)
    assert kept.metric_n_items_ == 8                 # the metric is still the one learned on 8
    assert retrain_metric_mode("keep-x1.5", kept, 11) == "keep"
    assert retrain_metric_mode("keep-x1.5", kept, 12) == "learn"
    assert retrain_metric_mode("keep-x1.5", None, 12) == "learn"
    assert retrain_metric_mode("anchor", kept, 12) == "anchor"
    assert retrain_metric_mode("anchor", None, 12) == "learn"
    assert retrain_metric_mode("learn", kept, 9) == "learn"
    loaded = CghSegmenter.from_dict(first.model_, first.w_, json.loads(json.dumps(first.to_dict())))
    assert retrain_metric_mode("keep-x1.5", loaded, 9) == "learn"   # unknown history: learn afresh
    with pytest.raises(ParameterError, match="policy"):
        retrain_metric_mode("sometimes", first, 9)
