import numpy as np
import pytest

from marginalia.exceptions import ParameterError
from marginalia.learners.weak import WeakAlignment
from marginalia.models.alignment import AlignmentModel, alignment_assignment
from marginalia.types import Alignment


def performance(rng, E=8, p=5, frames_per_event=8):
    """A score played with random tempo: true onsets deviate from the strict (expected) ones."""
    classes = rng.permutation(np.tile(np.arange(p), E // p + 1))[:E]
    Phi = np.eye(p)[classes]
    expected_dur = np.full(E, frames_per_event)
    true_dur = np.maximum(2, np.round(expected_dur * rng.uniform(0.5, 1.6, E))).astype(int)
    T = int(true_dur.sum())
    truth = Alignment(np.concatenate([[0], np.cumsum(true_dur)[:-1]]), T)
    exp_on = np.round(np.concatenate([[0], np.cumsum(expected_dur)[:-1]]) * T / expected_dur.sum()).astype(int)
    expected = Alignment(exp_on, T)
    mix = rng.normal(size=(p, p)) + 2 * np.eye(p)
    X = (alignment_assignment(truth) @ Phi) @ mix + rng.normal(0, 0.3, (T, p))
    return (X, Phi), truth, expected


def frame_error(a, b):
    return np.mean(a.frame_events() != b.frame_events())


def test_weak_learning_beats_the_expected_alignment():
    rng = np.random.default_rng(0)
    data = [performance(rng) for _ in range(6)]
    learner = WeakAlignment(lam=1e-2, mu=0.1, nu=1.0, max_iter=100, rounding="nearest")
    learner.fit([d[0] for d in data], [d[2] for d in data])
    base = np.mean([frame_error(d[2], d[1]) for d in data])
    got = np.mean([frame_error(a, d[1]) for a, d in zip(learner.alignments_, data)])
    assert got < 0.6 * base
    # objective decreases (exact line search on a convex quadratic) and the gap shrinks
    curve = np.array(learner.objective_curve_)
    assert np.all(np.diff(curve) <= 1e-9 * (1 + np.abs(curve[:-1])))
    assert learner.gap_curve_[-1] < 0.5 * learner.gap_curve_[0]
    # the other roundings give valid alignments of every training item
    for rounding in ("decode", "classifiers"):
        learner.rounding = rounding
        for (item, truth, _), Y in zip(data, learner.Y_):
            a = learner._round(item[0], item[1], Y)
            assert a.n_frames == truth.n_frames and a.n_events == truth.n_events
    # the learned scorers plug into the alignment model unchanged
    model = AlignmentModel(n_classes=5)
    w = learner.to_model_w(model)
    item = performance(rng)[0]
    assert model.decode(item, w) == learner.predict(item)


def test_bad_inputs():
    rng = np.random.default_rng(2)
    item, _, expected = performance(rng)
    with pytest.raises(ParameterError, match="lam"):
        WeakAlignment(lam=0).fit([item], [expected])
    with pytest.raises(ParameterError, match="rounding"):
        WeakAlignment(rounding="floor").fit([item], [expected])
    with pytest.raises(ParameterError, match="expected"):
        WeakAlignment().fit([item], [])
    X = item[0].copy()
    X[0, 0] = np.nan
    with pytest.raises(ParameterError, match="non-finite"):
        WeakAlignment().fit([(X, item[1])], [expected])
