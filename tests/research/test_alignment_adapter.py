import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from benchmarks.research.active_loop import ActiveLoop, PartPool
from benchmarks.research.alignment_adapter import AlignmentAdapter, AlignmentItem, onset_errors
from marginalia.active.parts import Part
from marginalia.exceptions import InfeasibleLabelsError, ParameterError
from marginalia.tasks.alignment import N_FEATURES
from marginalia.types import AnchorLabel, MidiScore


def _templates(rng, E):
    """Silence + E events with 1-3 random pitch classes each (unit norm), shape (E + 1, 13)."""
    P = np.zeros((E + 1, N_FEATURES))
    P[0, 12] = 1.0
    for e in range(1, E + 1):
        pcs = rng.choice(12, size=rng.integers(1, 4), replace=False)
        P[e, pcs] = 1.0
    return P / np.linalg.norm(P, axis=1, keepdims=True)


def _item(rng, E, T, noise=0.3, fr=10.0, mix=None):
    """Frames drawn from a known alignment: template of the frame's state + noise.

    ``mix`` (13 × 13) distorts the frames so that ``W = I`` misaligns and learning helps.
    Returns the item and the true onsets of the silence + event states.
    """
    P = _templates(rng, E)
    cuts = np.sort(rng.choice(np.arange(1, T), size=E, replace=False))
    onsets = np.r_[0, cuts]
    ev = np.repeat(np.arange(E + 1), np.diff(np.r_[onsets, T]))
    X = P[ev] + noise * rng.normal(size=(T, N_FEATURES))
    if mix is not None:
        X = X @ mix
    return AlignmentItem(X, P, fr, 0.0, "synthetic"), onsets


def _all_onsets(T, E1):
    for cuts in itertools.combinations(range(1, T), E1 - 1):
        yield np.array((0,) + cuts)


def _value(S, on):
    T = S.shape[0]
    ev = np.repeat(np.arange(on.shape[0]), np.diff(np.r_[on, T]))
    return float(S[np.arange(T), ev].sum())


@settings(max_examples=15, deadline=None)
@given(seed=st.integers(0, 10_000), E=st.integers(2, 4), extra=st.integers(0, 4), anchor=st.booleans(),
       data=st.data())
def test_part_scores_match_brute_force_over_alignments_fixed_outside_the_part(seed, E, extra, anchor, data):
    rng = np.random.default_rng(seed)
    T = E + 2 + extra
    item, true_on = _item(rng, E, T, noise=0.8)
    task = AlignmentAdapter()
    task.initialize({"a": item})
    task.w_ = (np.eye(N_FEATURES) + 0.3 * rng.normal(size=(N_FEATURES, N_FEATURES))).ravel()
    start = data.draw(st.integers(0, E - 1))
    stop = data.draw(st.integers(start + 1, E))
    part = Part("a", start, stop, "phrase", "events")
    labels = []
    if anchor:
        e = data.draw(st.integers(0, E - 1))
        labels.append(AnchorLabel(item_id="a", event=e, time_s=float(true_on[e + 1]) / item.frame_rate,
                                  tolerance_s=0.1))
    cons = task.constraints(item, labels)
    S = task.scores(item)
    feasible = [on for on in _all_onsets(T, E + 1)
                if cons is None or np.all((on >= cons.onset_min) & (on <= cons.onset_max))]
    best_on = max(feasible, key=lambda on: _value(S, on))
    outside = [j for j in range(E + 1) if not (start + 1 <= j < stop + 1)]
    same_outside = [on for on in feasible if np.array_equal(on[outside], best_on[outside])]
    # the frames of the sub-problem: from the onset of the state before the part to that of the state after it
    f0 = best_on[start]
    f1 = best_on[stop + 1] + 1 if stop + 1 <= E else T
    window = np.zeros(T, bool)
    window[f0:f1] = True

    def local(on):
        ev = np.repeat(np.arange(on.shape[0]), np.diff(np.r_[on, T]))
        return float(S[np.arange(T), ev][window].sum())

    values = sorted((local(on) for on in same_outside), reverse=True)
    others = [local(on) for on in same_outside if not np.array_equal(on, best_on)]
    scores = task.part_scores(item, part, labels)
    assert scores.best == pytest.approx(values[0], abs=1e-9)
    assert scores.worst == pytest.approx(values[-1], abs=1e-9)
    assert scores.size == f1 - f0
    if others:
        assert scores.second == pytest.approx(max(others), abs=1e-9)
    else:
        assert scores.second is None
    # rescaling W leaves the scale-normalised margin unchanged
    task.w_ = 3.0 * task.w_
    s3 = task.part_scores(item, part, labels)
    assert s3.scale == pytest.approx(3 * scores.scale)
    assert s3.best / s3.scale == pytest.approx(scores.best / scores.scale, abs=1e-9)


def test_perceptron_from_anchors_fixes_a_distorted_item_and_generalises_to_another():
    rng = np.random.default_rng(3)
    # frames whose chroma is rotated by two semitones: W = I matches the wrong pitch classes
    mix = np.eye(N_FEATURES)
    mix[:12, :12] = np.roll(np.eye(12), 2, axis=1)
    train, true_train = _item(rng, 12, 80, noise=0.2, fr=10.0, mix=mix)
    test, true_test = _item(rng, 12, 80, noise=0.2, fr=10.0, mix=mix)
    truth_test_s = true_test[1:] / test.frame_rate
    task = AlignmentAdapter(loss_scale=0.3, max_step=1.0)  # a large margin: the distortion is strong
    task.initialize({"train": train, "test": test})
    before = task.evaluate([(test, truth_test_s)])
    labels = [AnchorLabel(item_id="train", event=e, time_s=float(true_train[e + 1]) / train.frame_rate,
                          tolerance_s=0.0) for e in range(12)]
    for _ in range(20):
        task.perceptron_step(train, labels)
    assert task.n_updates_ >= 1
    # the learned W respects the anchors without them and transfers to the other item
    np.testing.assert_array_equal(task.predict_onsets(train), true_train[1:])
    after = task.evaluate([(test, truth_test_s)])
    assert after < before
    assert after <= 0.1 + 1e-9  # within one frame
    assert task.last_evaluation_["n"] == 12


def test_refit_averages_and_is_what_predicts():
    rng = np.random.default_rng(5)
    mix = np.eye(N_FEATURES)
    mix[:12, :12] = np.roll(np.eye(12), 1, axis=1)
    item, on = _item(rng, 8, 50, noise=0.2, mix=mix)
    labels = [AnchorLabel(item_id="x", event=e, time_s=float(on[e + 1]) / item.frame_rate, tolerance_s=0.0)
              for e in range(8)]
    task = AlignmentAdapter(loss_scale=0.3, max_step=1.0, refit_epochs=10)
    task.initialize({"x": item})
    w0 = task.w_.copy()
    task.refit([item], [labels])
    np.testing.assert_array_equal(task.w_, w0)  # the query parameters are the perceptron's
    assert not np.array_equal(task.model_w_, w0)
    assert task.n_refits_ == 1
    errs = onset_errors(task.predict_times(item), on[1:] / item.frame_rate)
    assert np.median(errs) <= 0.1 + 1e-9


@pytest.mark.parametrize("strategy", ["random", "scoring", "best-vs-worst", "best-vs-2nd"])
def test_active_session_runs_every_strategy_and_learns(strategy):
    rng = np.random.default_rng(11)
    mix = np.eye(N_FEATURES)
    mix[:12, :12] = np.roll(np.eye(12), 2, axis=1)
    items, truths = {}, {}
    for k in range(2):
        items[f"i{k}"], on = _item(rng, 8, 60, noise=0.2, mix=mix)
        truths[f"i{k}"] = on[1:] / 10.0
    held, on_h = _item(rng, 8, 60, noise=0.2, mix=mix)
    parts = [Part(i, s, s + 4, "phrase", "events") for i in items for s in (0, 4)]

    def oracle(query, part):
        return part.anchor_labels(truths[part.item_id], tolerance_s=0.0)

    task = AlignmentAdapter(loss_scale=0.3, max_step=1.0)
    session = ActiveLoop(PartPool(items, parts), task, oracle, strategy=strategy, learner="combined",
                            refit_every=2, held_out=[(held, on_h[1:] / 10.0)], random_state=0)
    session.run()
    session.finish()
    curve = session.curve_
    assert curve[-1]["fraction_parts"] == 1.0
    assert curve[-1]["held_out_loss"] < curve[0]["held_out_loss"]
    assert all(r["mean_uncertainty"] is None or 0 <= r["mean_uncertainty"] <= 1 for r in curve)


def test_validation_names_the_argument():
    rng = np.random.default_rng(0)
    item, on = _item(rng, 3, 10)
    task = AlignmentAdapter()
    with pytest.raises(ParameterError, match="initialize"):
        task.scores(item)
    task.initialize({"a": item})
    with pytest.raises(ParameterError, match="event 5 does not exist"):
        task.check_labels("a", item, [AnchorLabel(item_id="a", event=5, time_s=0.1)])
    with pytest.raises(InfeasibleLabelsError):
        task.check_labels("a", item, [AnchorLabel(item_id="a", event=0, time_s=0.8, tolerance_s=0.0),
                                      AnchorLabel(item_id="a", event=2, time_s=0.2, tolerance_s=0.0)])
    with pytest.raises(ParameterError, match="expected an AlignmentItem"):
        task.part_scores(np.zeros((10, 13)), Part("a", 0, 2, "phrase", "events"), [])
    with pytest.raises(ParameterError, match="axis"):
        task.part_scores(item, Part("a", 0, 2, "window", "frames"), [])
    with pytest.raises(ParameterError, match="max_step"):
        AlignmentAdapter(max_step=0).initialize({"a": item})
    with pytest.raises(ParameterError, match="templates"):
        AlignmentItem(np.zeros((10, 13)), np.zeros((1, 13)), 10.0)
    with pytest.raises(ParameterError, match="frame_rate"):
        AlignmentItem(np.zeros((10, 13)), np.zeros((3, 13)), -1.0)
    with pytest.raises(ParameterError, match="true onsets"):
        task.evaluate([(item, np.zeros(2))])


def test_from_audio_times_follow_centred_frames():
    score = MidiScore(pitches=[60, 64, 67], onsets_s=[0.0, 0.5, 1.0], offsets_s=[0.5, 1.0, 1.5])
    T = 20
    chroma = np.zeros((T, 12))
    chroma[:, 0] = 1.0
    item = AlignmentItem.from_audio(chroma, np.zeros(T), score, 10.0)
    assert item.n_events == 3 and item.n_frames == T
    assert item.time_offset_s == pytest.approx(-0.05)
    np.testing.assert_allclose(item.frame_to_time([0, 10]), [-0.05, 0.95])
    # an anchor at the start of frame 10 pins the event's onset to frame 10
    task = AlignmentAdapter()
    task.initialize({"s": item})
    lab = AnchorLabel(item_id="s", event=1, time_s=0.95, tolerance_s=0.0)
    assert task.predict_onsets(item, [lab])[1] == 10


def test_shift_is_the_median_anchor_residual_and_moves_predicted_times():
    rng = np.random.default_rng(2)
    train, on_train = _item(rng, 6, 40, noise=0.05)
    test, on_test = _item(rng, 6, 40, noise=0.05)
    # the annotator hears every onset 30 ms after the frame boundary (0.3 frame: same frame after rounding)
    labels = [AnchorLabel(item_id="t", event=e, time_s=float(on_train[e + 1]) / 10.0 + 0.03, tolerance_s=0.0)
              for e in range(6)]
    task = AlignmentAdapter()
    task.initialize({"t": train})
    assert task.shift_s_ == 0.0
    np.testing.assert_array_equal(task.predict_onsets(train), on_train[1:])  # clean frames: already right
    task.perceptron_step(train, labels)
    assert task.shift_s_ == pytest.approx(0.03)
    np.testing.assert_allclose(task.predict_times(test), on_test[1:] / 10.0 + 0.03)
    task.refit([train], [labels])
    assert task.shift_s_ == pytest.approx(0.03)
    plain = AlignmentAdapter(learn_shift=False)
    plain.initialize({"t": train})
    plain.perceptron_step(train, labels)
    assert plain.shift_s_ == 0.0
    with pytest.raises(ParameterError, match="learn_shift"):
        AlignmentAdapter(learn_shift="yes").initialize({"t": train})
