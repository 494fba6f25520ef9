import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from benchmarks.research.active_loop import ActiveLoop
from benchmarks.research.penalty_adapter import PenaltyPathAdapter
from marginalia.active.parts import Part
from marginalia.active.uncertainty import uncertainty_from_scores
from marginalia.decoders.brute import brute_cost, brute_force_segmentations
from marginalia.exceptions import InfeasibleLabelsError, ParameterError
from marginalia.types import RegionLabel
from tests.core.active.test_segmentation_adapter import one_change_labels


def _step_signal(rng, T, jump, at=None, noise=1.0):
    x = rng.normal(scale=noise, size=T)
    at = T // 2 if at is None else at
    x[at:] += jump
    return x, at


@settings(max_examples=15, deadline=None)
@given(seed=st.integers(0, 10_000), T=st.integers(4, 8), jump=st.floats(0.0, 4.0))
@pytest.mark.slow
def test_part_scores_match_brute_force_over_every_segmentation(seed, T, jump):
    rng = np.random.default_rng(seed)
    x, _ = _step_signal(rng, T, jump)
    task = PenaltyPathAdapter(k_max=T)
    task.initialize({"a": x})
    scores = task.part_scores(x, Part("a", 0, T))
    lam = math.exp(task.log_penalty(x, w=task.w_))
    by_k = {}
    for seg in brute_force_segmentations(T):
        k = seg.n_segments
        c = brute_cost(x[:, None], seg) + lam * (k - 1)
        by_k[k] = min(by_k.get(k, np.inf), c)
    best_k = min(by_k, key=by_k.get)
    second = min(v for k, v in by_k.items() if k != best_k)
    assert -scores.best == pytest.approx(by_k[best_k], rel=1e-9, abs=1e-9)
    assert -scores.second == pytest.approx(second, rel=1e-9, abs=1e-9)
    assert -scores.worst == pytest.approx(max(by_k.values()), rel=1e-9, abs=1e-9)
    assert scores.scale == pytest.approx(lam) and scores.size == T


def test_margins_do_not_change_when_the_signal_is_rescaled():
    rng = np.random.default_rng(3)
    x, _ = _step_signal(rng, 40, 2.0)
    q = []
    for c in (1.0, 7.0):
        task = PenaltyPathAdapter()
        task.initialize({"a": c * x})
        q.append(uncertainty_from_scores(task.part_scores(c * x, Part("a", 0, 40)), "best-vs-2nd"))
    assert q[0] == pytest.approx(q[1], rel=1e-6)
    assert 0 < q[0] < 1


def test_a_perceptron_step_moves_the_prediction_into_the_target_interval():
    rng = np.random.default_rng(0)
    x, at = _step_signal(rng, 60, 3.0)
    other, _ = _step_signal(rng, 80, 0.0)
    task = PenaltyPathAdapter(margin=0.5)
    task.initialize({"a": x, "b": other})
    # a label that wants no change at all: the target is a high penalty
    labels = [RegionLabel(item_id="a", start=0, stop=60, kind="0")]
    lo, hi = task.target_interval(x, labels)
    assert np.isfinite(lo) and hi == np.inf
    task.w_ = task.w_ - np.r_[np.zeros(task.w_.size - 1), 10.0]  # far too small a penalty
    assert task.log_penalty(x, w=task.w_) < lo
    task.perceptron_step(x, labels)
    assert task.log_penalty(x, w=task.w_) == pytest.approx(lo + 0.5)
    before = task.w_.copy()
    task.perceptron_step(x, labels)  # inside the interval now: no step
    assert np.array_equal(task.w_, before)


def _labelled_pool(seed=0, n=12):
    rng = np.random.default_rng(seed)
    items, labels = {}, {}
    for i in range(n):
        T = int(rng.integers(30, 80))
        noise = float(rng.choice([0.3, 1.0, 3.0]))
        x, at = _step_signal(rng, T, 4.0 * noise, at=T // 2, noise=noise)
        name = f"c{i}"
        items[name] = x
        labels[name] = one_change_labels(name, at, 3, T)
    return items, labels


def test_refit_learns_the_penalty_from_labels_and_predicts_them():
    items, labels = _labelled_pool()
    task = PenaltyPathAdapter()
    task.initialize(items)
    held = [(items[k], labels[k]) for k in items]
    task.w_ = task.w_ - np.r_[np.zeros(task.w_.size - 1), 6.0]  # start from a penalty far too small
    before = task.evaluate(held)
    task.refit(list(items.values()), list(labels.values()))
    assert task.n_refits_ == 1 and np.array_equal(task.w_, task.model_w_)
    assert before > 0.3 and task.evaluate(held) == 0.0
    seg = task.predict(items["c0"])
    assert seg.n_segments == 2


def test_the_loop_runs_with_the_penalty_task_and_refuses_conflicting_labels():
    items, labels = _labelled_pool(seed=1, n=8)
    task = PenaltyPathAdapter()
    held = [(items[k], labels[k]) for k in list(items)[:3]]
    session = ActiveLoop(items, task, lambda q, p: labels[p.item_id], strategy="best-vs-2nd",
                            learner="combined", refit_every=2, held_out=held, random_state=0)
    session.run(max_steps=4)
    assert [r["n_parts_labelled"] for r in session.curve_] == list(range(5))
    assert task.n_refits_ == 2
    assert session.curve_[-1]["held_out_loss"] <= session.curve_[0]["held_out_loss"]
    name = session.unlabelled[0].item_id
    T = items[name].shape[0]
    bad = [RegionLabel(item_id=name, start=0, stop=T, kind="0"), RegionLabel(item_id=name, start=5, stop=15,
                                                                              kind="1")]
    with pytest.raises(InfeasibleLabelsError):
        session.teach([(session.unlabelled[0], bad)])
    assert len(session.labelled_parts_) == 4
    session.step()
    assert len(session.labelled_parts_) == 5


def test_bad_arguments_name_the_argument():
    with pytest.raises(ParameterError, match="k_max"):
        PenaltyPathAdapter(k_max=0)
    with pytest.raises(ParameterError, match="step"):
        PenaltyPathAdapter(step=0.0)
    task = PenaltyPathAdapter()
    with pytest.raises(ParameterError, match="1-d signal"):
        task.initialize({"a": np.zeros((5, 2))})
    with pytest.raises(ParameterError, match="items"):
        task.initialize({})
    x = np.arange(10.0)
    task.initialize({"a": x})
    with pytest.raises(ParameterError, match="ends after"):
        task.part_scores(x, Part("a", 0, 12))
