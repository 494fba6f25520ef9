"""RecipeTask: the engine's aCGH learner (perceptron steps, recipe refits) in the active loop."""

import warnings

import numpy as np
import pytest

from core.active.loop import ActiveSession
from core.active.parts import Part
from core.active.recipe_task import RecipeTask
from core.active.segmentation_task import region_error, segmentation_part_scores
from core.exceptions import ParameterError
from core.types import RegionLabel, Sequence


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


def test_refit_fits_the_recipe_from_min_items_and_predicts_with_it():
    items, labels = _chromosomes()
    task = RecipeTask(min_items=4)
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
    fp = fn = n = 0
    for data, labs in held:
        a, b, c = region_error(labs, task.recipe_.segment(data))
        fp, fn, n = fp + a, fn + b, n + c
    assert task.evaluate(held) == pytest.approx((fp + fn) / n)
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


def test_the_loop_learns_with_it_and_bad_input_is_refused():
    items, labels = _chromosomes(seed=3)
    names = list(items)
    pool = {k: items[k] for k in names[:8]}
    held = [(items[k], labels[k]) for k in names[8:]]
    session = ActiveSession(pool, RecipeTask(min_items=4), lambda q, p: labels[p.item_id], strategy="best-vs-2nd",
                            learner="combined", refit_every=4, held_out=held, random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        session.run(max_fraction=0.5)
    assert session.model.n_refits_ == 1 and session.model.recipe_ is not None
    assert len(session.curve_) == 5 and all(r["held_out_loss"] is not None for r in session.curve_)
    q = session.next_queries(2)
    assert all(0.0 <= x.uncertainty <= 1.0 for x in q)
    with pytest.raises(ParameterError, match="Sequence"):
        RecipeTask().initialize({"a": np.zeros(50)})
    with pytest.raises(ParameterError, match="min_items"):
        RecipeTask(min_items=1)
