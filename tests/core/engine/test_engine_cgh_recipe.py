"""A full retrain on enough labelled aCGH chromosomes fits the recipe (metric + per-platform penalty laws)."""

import dataclasses

import numpy as np
import pytest

from marginalia.engine import Engine
from marginalia.exceptions import ParameterError
from marginalia.models.segmentation import PenaltyScaledModel
from marginalia.tasks import segmentation as segtask
from marginalia.types import RegionKind, RegionLabel


def _write(path, n_profiles=4, chroms=("1", "2", "3"), T=240, seed=3):
    """Profiles with one amplified block per chromosome; the noise differs from profile to profile."""
    rng = np.random.default_rng(seed)
    rows = ["profile.id,chromosome,position,logratio"]
    truth = {}
    for prof in range(1, n_profiles + 1):
        sigma = 0.1 + 0.05 * prof
        for chrom in chroms:
            a, b = sorted(rng.choice(np.arange(40, T - 40), 2, replace=False))
            while b - a < 20:
                a, b = sorted(rng.choice(np.arange(40, T - 40), 2, replace=False))
            mu = np.zeros(T)
            mu[a:b] = 1.0
            x = mu + sigma * rng.standard_normal(T)
            truth[f"{prof}:{chrom}"] = (int(a), int(b))
            rows += [f"{prof},{chrom},{1000 + 700 * i},{x[i]:.5f}" for i in range(T)]
    path.write_text("\n".join(rows) + "\n")
    return truth


def _true_labels(item_id, a, b, T=240):
    """The expert's regions of one chromosome: no change before/inside/after the block, one at each end."""
    return [RegionLabel(item_id=item_id, start=0, stop=a - 5, kind=RegionKind.ZERO),
            RegionLabel(item_id=item_id, start=a - 5, stop=a + 5, kind=RegionKind.ONE),
            RegionLabel(item_id=item_id, start=a + 5, stop=b - 5, kind=RegionKind.ZERO),
            RegionLabel(item_id=item_id, start=b - 5, stop=b + 5, kind=RegionKind.ONE),
            RegionLabel(item_id=item_id, start=b + 5, stop=T, kind=RegionKind.ZERO)]


@pytest.fixture
def labelled(tmp_path):
    truth = _write(tmp_path / "profiles.csv")
    eng = Engine.create(tmp_path / "p.marginalia")
    eng.import_files([tmp_path / "profiles.csv"])
    ids = {i.name: i.id for i in eng.items()}
    train = sorted(ids)[:segtask.RECIPE_MIN_ITEMS]
    eng.add_labels([lab for n in train for lab in _true_labels(ids[n], *truth[n])])
    yield eng, ids, truth, train
    eng.close()


def _task(eng, item_id):
    return eng._tasks.get(eng.session.item(item_id))


@pytest.mark.slow
def test_retrain_fits_the_recipe_and_finds_the_held_out_changes(labelled):
    eng, ids, truth, train = labelled
    model_id = eng.retrain()
    rec = [m for m in eng.session.models("segmentation") if m.id == model_id][0]
    assert rec.params["trained_by"] == "cgh-recipe"
    task = _task(eng, ids[train[0]])
    assert task.recipe is not None
    for name in sorted(set(ids) - set(train)):
        pred = eng.predict(ids[name])
        a, b = truth[name]
        assert len(pred.structure.breakpoints) == 2
        assert np.abs(pred.structure.breakpoints - np.array([a, b])).max() <= 2
        # the item's parameters are w (or its law's own) with its own penalty offset
        w_item = task.item_w(ids[name], task.w)
        factor, own = task._law_params(ids[name])
        base = task.w if own is None else own
        assert task.model.split_w(w_item)[1] == pytest.approx(task.model.split_w(base)[1] * factor)
        assert factor == pytest.approx(task.recipe.penalty_factor(eng.data(ids[name]).sequence))


@pytest.mark.slow
def test_fewer_labelled_chromosomes_keep_the_plain_ssvm(labelled, tmp_path):
    eng, ids, truth, train = labelled
    for lab in eng.labels(ids[train[-1]]):
        eng.delete_label(lab.id)
    model_id = eng.retrain()
    rec = [m for m in eng.session.models("segmentation") if m.id == model_id][0]
    assert rec.params["trained_by"] == "ssvm"
    assert _task(eng, ids[train[0]]).recipe is None


@pytest.mark.slow
def test_the_recipe_survives_reopening(labelled):
    eng, ids, truth, train = labelled
    eng.retrain()
    held_out = sorted(set(ids) - set(train))
    before = {n: eng.predict(ids[n]).structure.breakpoints.tolist() for n in held_out}
    factors = dict(_task(eng, ids[train[0]])._factors)
    path = eng.path
    eng.close()
    again = Engine.open(path)
    try:
        after = {n: again.predict(ids[n]).structure.breakpoints.tolist() for n in held_out}
        assert after == before
        task = _task(again, ids[train[0]])
        assert task.recipe is not None
        assert {k: v[0] for k, v in task._factors.items()} == pytest.approx({k: v[0] for k, v in factors.items()})
    finally:
        again.close()
    labelled[0].session = again.session


def test_a_model_saved_for_other_inputs_is_not_reused(labelled):
    eng, ids, truth, train = labelled
    task = _task(eng, ids[train[0]])
    task.ensure_model()
    with pytest.raises(ParameterError, match="other aCGH inputs"):
        task._restore_arrays(task._state_arrays(), {"task": task.key, "format": 1})


def _learned_metric_laws(monkeypatch):
    """Retrains whose penalty laws all decode with the learned, perceptron-stepped metric."""
    from functools import partial

    from marginalia.cgh.recipe import CghSegmenter
    monkeypatch.setattr(segtask, "CghSegmenter", partial(CghSegmenter, law_metric="learned"))


@pytest.mark.slow
def test_the_item_view_of_the_model_scores_with_the_items_penalty(labelled, monkeypatch):
    _learned_metric_laws(monkeypatch)
    eng, ids, truth, train = labelled
    eng.retrain()
    task = _task(eng, ids[train[0]])
    name = sorted(set(ids) - set(train))[0]
    X, w = task.features(ids[name]), task.w
    factor = task._penalty_factor(ids[name])
    view = PenaltyScaledModel(task.model, factor)
    w_item = task.item_w(ids[name], w)
    for y in (task.model.decode(X, w), task.model.decode(X, w_item), view.decode(X, w)):
        assert float(w @ view.joint_feature(X, y)) == pytest.approx(float(w_item @ task.model.joint_feature(X, y)))
    assert view.decode(X, w) == task.model.decode(X, w_item)


@pytest.mark.slow
def test_a_label_the_items_redraw_already_obeys_leaves_the_model_alone(labelled, monkeypatch):
    _learned_metric_laws(monkeypatch)
    eng, ids, truth, train = labelled
    eng.retrain()
    name = sorted(set(ids) - set(train))[-1]           # the noisiest profile
    task = _task(eng, ids[name])
    X = task.features(ids[name])
    # the shared penalty 20x lower and this item's offset 20x up: the item sees the fitted model, under
    # which its two changes are right, while the shared parameters alone over-segment it
    B, pen = task.model.split_w(task.w)
    task._learner._start(task.model.join_w(B, pen / 20))
    assert task._law_params(ids[name])[1] is None     # the law decodes with the shared, stepped w
    task._factors[ids[name]] = (20.0, None)
    assert task.model.decode(X, task.w).n_segments > 3
    a, b = truth[name]
    assert set(eng.predict(ids[name]).structure.breakpoints.tolist()) <= set(range(a - 2, a + 3)) | set(range(b - 2, b + 3))
    w_before = task.w.copy()
    eng.add_labels(_true_labels(ids[name], a, b))
    eng.update_model(ids[name])
    np.testing.assert_allclose(task.w, w_before)


@pytest.mark.slow
def test_the_pruning_rule_never_drops_a_change_a_label_needs(labelled):
    eng, ids, truth, train = labelled
    eng.retrain()
    task = _task(eng, ids[train[0]])
    assert set(task.recipe.pruners_) >= {"all"}
    for name in train:
        pred = eng.predict(ids[name])
        assert task.model.violations(eng.labels(ids[name]), pred.structure) == 0
    # a rule that drops every change: the labelled chromosomes keep their labelled changes, the others lose theirs
    for pruner in task.recipe.pruners_.values():
        pruner.beta_, pruner.gamma_, pruner.delta_, pruner.tau_ = 0.0, 0.0, 0.0, 50.0
    for name in train:
        assert task.model.violations(eng.labels(ids[name]), eng.predict(ids[name]).structure) == 0
    held_out = sorted(set(ids) - set(train))[0]
    pred = eng.predict(ids[held_out])
    assert pred.structure.n_segments == 1 and pred.runner_up is not None and pred.runner_up.n_segments == 3


@pytest.mark.slow
def test_an_oversegmentations_change_never_contradicts_a_label(labelled):
    eng, ids, truth, train = labelled
    eng.retrain()
    task = _task(eng, ids[train[0]])
    # every pruner keeps every candidate, and the candidates include a change every few probes
    for k, pruner in task.recipe.pruners_.items():
        pruner.tau_ = None
        task.recipe.pruner_candidates_[k] = "union"
    task.recipe.pruning = dataclasses.replace(task.recipe.pruning, overseg_penalty=0.0)
    task.recipe._oversegmentations.clear()
    for name in train:
        pred = eng.predict(ids[name])
        assert task.model.violations(eng.labels(ids[name]), pred.structure) == 0
        assert pred.structure.n_segments <= 5
    held_out = sorted(set(ids) - set(train))[0]
    assert eng.predict(ids[held_out]).structure.n_segments > 20    # nothing there says no


@pytest.mark.slow
def test_when_an_extra_candidate_breaks_a_label_the_rule_still_prunes_the_decoders_changes(labelled, monkeypatch):
    from marginalia.types import Segmentation
    eng, ids, truth, train = labelled
    eng.retrain()
    held_out = sorted(set(ids) - set(train))[0]
    eng.add_label(RegionLabel(item_id=ids[held_out], start=0, stop=30, kind=RegionKind.ZERO))
    task = _task(eng, ids[held_out])
    for pruner in task.recipe.pruners_.values():       # a rule that drops every change
        pruner.beta_, pruner.gamma_, pruner.delta_, pruner.tau_ = 0.0, 0.0, 0.0, 50.0
    real = task.recipe.pruned

    def pruned(seq, seg, *, extra_candidates=True):
        out = real(seq, seg, extra_candidates=extra_candidates)
        if extra_candidates:                           # an over-segmentation's change inside the "no change" region
            return Segmentation(np.union1d(out.changes, [10]), out.n_samples)
        return out

    monkeypatch.setattr(task.recipe, "pruned", pruned)
    pred = eng.predict(ids[held_out])
    # not the decoder's two block edges: the rule dropped them, as nothing labelled needs them
    assert pred.structure.n_segments == 1
    assert task.model.violations(eng.labels(ids[held_out]), pred.structure) == 0


@pytest.mark.slow
def test_the_apps_model_exported_for_the_cli_segments_as_the_app_does(labelled, tmp_path):
    from marginalia.models.files import load_model
    eng, ids, truth, train = labelled
    eng.retrain()
    held_out = sorted(set(ids) - set(train))
    eng.add_label(RegionLabel(item_id=ids[train[0]], start=0, stop=20, kind=RegionKind.ZERO))
    eng.update_model(ids[train[0]])                 # a perceptron step after the retrain goes along too
    out = tmp_path / "cgh.model"
    assert eng.export("cgh-model", out) == [out]
    m = load_model(out, task="segmentation")
    assert m.features == "cgh-pointwise" and m.penalty_law() is not None
    assert m.provenance["n_labels"] == len(eng.labels())
    for name in held_out:                             # unlabelled chromosomes: nothing constrains the app
        seq = eng.data(ids[name]).sequence
        assert m.segment(seq).breakpoints.tolist() == eng.predict(ids[name]).structure.breakpoints.tolist()
    empty = Engine.create(tmp_path / "e.marginalia")
    with pytest.raises(ParameterError, match="no aCGH items"):
        empty.export("cgh-model", tmp_path / "none.model")
    empty.close()


@pytest.mark.slow
def test_a_recipe_retrain_reports_each_stage(labelled):
    eng, ids, truth, train = labelled
    seen = []
    eng.retrain(progress=lambda done, total, message: seen.append((done, total, message)))
    messages = [m for _, _, m in seen]
    assert messages[0] == f"metric: learning from {len(train)} labelled chromosomes"
    assert "metric: 1 of 5 passes done" in messages
    laws = [(d, t) for d, t, m in seen if m.startswith("penalty laws:")]
    pruners = [(d, t) for d, t, m in seen if m.startswith("change pruners:")]
    probes = len(train) * 240
    assert laws[-1] == (probes, probes) and pruners[-1] == (probes, probes)
    # then the choice of the pruner's candidates: two candidate sets, each refitted without each profile
    choice = [(d, t, m) for d, t, m in seen if m.startswith("pruner candidates:")]
    # (the 8 chromosomes come from 3 profiles, too few to group by: each chromosome is its own group)
    n_fits = 2 * len(train)
    assert [(d, t) for d, t, _ in choice] == [(k, n_fits) for k in range(0, n_fits + 1)]
    assert choice[-1][2] == "pruner candidates: 100 % of the pruner fits"
    assert messages.index(choice[0][2]) > max(i for i, m in enumerate(messages) if m.startswith("change pruners"))
    assert messages.index(next(m for m in messages if m.startswith("penalty laws"))) > messages.index(
        "metric: 1 of 5 passes done")


def test_a_cancelled_recipe_fit_stops_within_the_pass_and_keeps_the_model(labelled):
    import threading

    from marginalia.cgh.recipe import CghSegmenter
    from marginalia.exceptions import CancelledError
    eng, ids, truth, train = labelled
    before = eng.model_id(ids[train[0]])
    seqs = [eng.data(ids[n]).sequence for n in train]
    labels = [eng.labels(ids[n]) for n in train]
    polls = []

    def stop_after_three():
        polls.append(1)
        return len(polls) > 3                      # three sequences into the first pass

    with pytest.raises(CancelledError):
        CghSegmenter(max_iter=50, prune=False, should_stop=stop_after_three).fit(seqs, labels)
    assert len(polls) <= 5                         # not 50 passes of 9 sequences: within the first pass
    cancel = threading.Event()
    cancel.set()
    with pytest.raises(CancelledError):
        eng.retrain(cancel=cancel)
    assert eng.model_id(ids[train[0]]) == before     # nothing half-fitted was adopted


@pytest.mark.slow
def test_chromosomes_whose_law_decodes_the_plain_logratio_use_its_parameters(labelled, monkeypatch, tmp_path):
    from functools import partial

    from marginalia.cgh.recipe import CghSegmenter
    from marginalia.models.files import load_model
    monkeypatch.setattr(segtask, "CghSegmenter", partial(CghSegmenter, law_metric="logratio"))
    eng, ids, truth, train = labelled
    eng.retrain()
    task = _task(eng, ids[train[0]])
    assert set(task.recipe.law_metrics_.values()) == {"logratio"}
    held_out = sorted(set(ids) - set(train))
    for name in held_out:
        seq = eng.data(ids[name]).sequence
        np.testing.assert_array_equal(task.item_w(ids[name], task.w), task.recipe.item_w(seq))
        a, b = truth[name]
        assert np.abs(eng.predict(ids[name]).structure.breakpoints - np.array([a, b])).max() <= 2
    # a label on such a chromosome takes no perceptron step on the shared w (its redraw obeys the label anyway)
    name = held_out[0]
    a, b = truth[name]
    w_before = task.w.copy()
    eng.add_label(RegionLabel(item_id=ids[name], start=a - 15, stop=a - 5, kind=RegionKind.ONE))
    eng.update_model(ids[name])
    np.testing.assert_array_equal(task.w, w_before)
    assert task.model.violations(eng.labels(ids[name]), eng.predict(ids[name]).structure) == 0
    # the exported model segments the unlabelled chromosomes as the app draws them
    out = tmp_path / "plain.model"
    eng.export("cgh-model", out)
    m = load_model(out, task="segmentation")
    for other in held_out[1:]:
        seq = eng.data(ids[other]).sequence
        assert m.segment(seq).breakpoints.tolist() == eng.predict(ids[other]).structure.breakpoints.tolist()
