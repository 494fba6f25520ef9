"""The embedded demo: aCGH items with labels and an audio item aligned to its score."""

import csv
import math

import numpy as np
import pytest

from marginalia.engine import DEMO_DIR, Engine
from marginalia.exceptions import InfeasibleLabelsError, ParameterError
from marginalia.types import AnchorLabel, EventSpanLabel, RegionLabel


@pytest.fixture(scope="module")
def demo(tmp_path_factory):
    eng = Engine.open_demo(tmp_path_factory.mktemp("demo"))
    yield eng
    eng.close()


@pytest.fixture
def fresh_demo(tmp_path):
    """A demo project of its own, for tests that add labels the module's other tests must not see."""
    eng = Engine.open_demo(tmp_path / "demo")
    yield eng
    eng.close()


def _audio_item(eng):
    return next(i for i in eng.items() if i.kind == "audio")


@pytest.mark.slow
def test_demo_has_profiles_with_labels_and_an_audio_score_pair(demo):
    infos = demo.items()
    kinds = {i.kind for i in infos}
    assert kinds == {"cgh", "audio"}
    assert sum(i.n_labels for i in infos if i.kind == "cgh") > 0
    audio = _audio_item(demo)
    assert audio.task == "alignment"
    image, times, freqs = demo.spectrogram(audio.id)
    assert image.shape == (freqs.shape[0], times.shape[0]) and np.all(np.diff(times) > 0)
    assert demo.score(audio.id).n_events > 10


def test_demo_alignment_is_close_to_the_truth_and_anchors_are_obeyed(demo):
    audio = _audio_item(demo)
    truth = [float(r["audio_time_s"]) for r in csv.DictReader(open(DEMO_DIR / "melody_truth.csv"))]
    pred = demo.predict(audio.id)
    times = demo.sequence(audio.id).positions[pred.structure.onsets]
    err = np.abs(times - np.asarray(truth))
    assert np.median(err) < 0.1, err
    # anchor an event somewhere else (within the audio) and check the redraw obeys it
    e = len(truth) // 2
    target = truth[e] + 0.5
    demo.add_label(AnchorLabel(item_id=audio.id, event=e, time_s=target, tolerance_s=0.03))
    pred = demo.predict(audio.id)
    got = demo.sequence(audio.id).positions[pred.structure.onsets[e]]
    fr = demo.data(audio.id).frame_rate
    # the tolerance is rounded up to whole frames, the anchor time to the nearest frame
    assert abs(got - target) <= (np.ceil(0.03 * fr) + 0.5) / fr
    assert pred.runner_up is None or pred.runner_up != pred.structure
    assert demo.undo()


def test_an_event_span_label_moves_its_events_into_the_span(demo):
    audio = _audio_item(demo)
    positions = demo.sequence(audio.id).positions
    fr = demo.data(audio.id).frame_rate
    pred = demo.predict(audio.id)
    before = positions[pred.structure.onsets]
    e = len(before) // 2
    # events e and e+1 start in a window that the unlabelled alignment does not use for them
    t0, t1 = before[e + 1] + 0.25, before[e + 1] + 0.45
    demo.add_label(EventSpanLabel(item_id=audio.id, first=e, last=e + 1, t0_s=float(t0), t1_s=float(t1)))
    try:
        pred = demo.predict(audio.id)
        times = np.asarray(pred.times_s)
        assert np.all(times[e:e + 2] >= t0 - 1.0 / fr) and np.all(times[e:e + 2] <= t1 + 1.0 / fr), times[e:e + 2]
        assert np.all(np.diff(pred.structure.onsets) > 0)
        assert not (t0 - 1.0 / fr <= before[e] <= t1 + 1.0 / fr)   # the label did move event e
    finally:
        assert demo.undo()


def test_labels_of_the_wrong_kind_or_out_of_range_are_refused(demo):
    audio = _audio_item(demo)
    with pytest.raises(ParameterError, match="anchor"):
        demo.add_label(RegionLabel(item_id=audio.id, start=0, stop=5, kind="0"))
    n = demo.score(audio.id).n_events
    with pytest.raises(ParameterError, match="events"):
        demo.add_label(AnchorLabel(item_id=audio.id, event=n + 3, time_s=1.0))
    demo.add_label(AnchorLabel(item_id=audio.id, event=5, time_s=4.0, tolerance_s=0.02))
    with pytest.raises(InfeasibleLabelsError):
        demo.add_label(AnchorLabel(item_id=audio.id, event=6, time_s=2.0, tolerance_s=0.02))
    # a second anchor for an anchored event (say 4.02 s, inside the first one's tolerance) is refused too:
    # the anchor is moved instead, so an event is pinned at one time
    with pytest.raises(ParameterError, match="event 5 already has an anchor at 4.000 s"):
        demo.add_labels([AnchorLabel(item_id=audio.id, event=5, time_s=4.02)])
    assert demo.undo()


def test_reopening_the_demo_folder_keeps_the_project(tmp_path):
    first = Engine.open_demo(tmp_path)
    item = next(i for i in first.items() if i.kind == "cgh")
    first.add_label(RegionLabel(item_id=item.id, start=0, stop=10, kind="0"))
    n = len(first.labels())
    first.close()
    again = Engine.open_demo(tmp_path)
    try:
        assert len(again.labels()) == n
    finally:
        again.close()


def test_learning_curve_and_stopping_signal_are_the_items_task(demo):
    demo.next_queries(5)
    audio = _audio_item(demo)
    cgh = next(i for i in demo.items() if i.kind == "cgh")
    assert {row["task"] for row in demo.learning_curve(audio.id)} == {"alignment/audio"}
    assert {row["task"] for row in demo.learning_curve(cgh.id)} == {"segmentation/cgh"}
    assert "evidence" in demo.stopping_signal(audio.id)


@pytest.mark.slow
def test_each_phrase_of_the_audio_item_has_its_own_margin_and_an_anchored_phrase_asks_nothing(fresh_demo):
    eng = fresh_demo
    audio = _audio_item(eng)
    queries = [q for q in eng.next_queries(50) if q.item_id == audio.id]
    assert len(queries) >= 3
    # each phrase is scored on its own closest call, not the whole item's
    assert len({round(q.uncertainty, 12) for q in queries}) == len(queries)
    top = queries[0]
    times = np.asarray(eng.predict(audio.id).times_s)
    for e in range(top.start, top.stop):
        eng.add_label(AnchorLabel(item_id=audio.id, event=e, time_s=float(times[e]), tolerance_s=0.03))
    after = {(q.start, q.stop): q.uncertainty for q in eng.next_queries(50) if q.item_id == audio.id}
    assert after.get((top.start, top.stop), 0.0) == 0.0
    assert any(u > 0 for u in after.values())


@pytest.mark.slow
def test_the_first_event_can_be_anchored_after_the_recording_starts(fresh_demo):
    # the recording opens with 0.3 s of silence: the decoder has a rest state before event 0, so an anchor
    # on event 0 at its true onset is a fact like any other (it was refused as "must start at frame 0")
    eng = fresh_demo
    audio = _audio_item(eng)
    truth = [float(r["audio_time_s"]) for r in csv.DictReader(open(DEMO_DIR / "melody_truth.csv"))]
    eng.add_label(AnchorLabel(item_id=audio.id, event=0, time_s=truth[0] + 0.2, tolerance_s=0.02))
    got = float(eng.predict(audio.id).times_s[0])
    assert abs(got - (truth[0] + 0.2)) <= 0.02 + 1.0 / eng.data(audio.id).frame_rate
    duration = float(eng.sequence(audio.id).positions[-1])
    with pytest.raises(ParameterError, match="after the last frame"):
        eng.add_label(AnchorLabel(item_id=audio.id, event=1, time_s=duration + 5.0, tolerance_s=0.02))


@pytest.mark.slow
def test_a_phrase_has_its_own_runner_up_that_moves_only_its_events(fresh_demo):
    eng = fresh_demo
    audio = _audio_item(eng)
    pred = eng.predict(audio.id)
    queries = [q for q in eng.next_queries(50) if q.item_id == audio.id]
    for q in queries:
        own = pred.for_part(q.start, q.stop)
        assert own.margin == pytest.approx(-np.log(q.uncertainty), rel=1e-9, abs=1e-12)
        moved = np.flatnonzero(own.runner_up.onsets != pred.structure.onsets)
        assert moved.size and moved.min() >= q.start and moved.max() < q.stop, (q, moved)
    assert pred.for_part(10**6, 10**6 + 1) is pred     # not a part: the item's own runner-up


@pytest.mark.slow
def test_the_items_runner_up_differs_from_the_drawn_alignment_by_one_event(fresh_demo):
    audio = _audio_item(fresh_demo)
    pred = fresh_demo.predict(audio.id)
    moved = np.flatnonzero(pred.runner_up.onsets != pred.structure.onsets)
    assert moved.size == 1, moved


@pytest.mark.slow
def test_accepting_the_prediction_keeps_the_anchors_already_there(fresh_demo):
    audio = _audio_item(fresh_demo)
    E = fresh_demo.score(audio.id).n_events
    mine = fresh_demo.add_label(AnchorLabel(item_id=audio.id, event=E - 1, time_s=19.4, tolerance_s=0.02))
    added = fresh_demo.accept_prediction(audio.id, E - 5, E)
    assert sorted(lab.event for lab in added) == list(range(E - 5, E - 1))
    anchors = [lab for lab in fresh_demo.labels(audio.id) if isinstance(lab, AnchorLabel) and lab.event == E - 1]
    assert [lab.id for lab in anchors] == [mine.id]
    assert fresh_demo.accept_prediction(audio.id, E - 5, E) == []


@pytest.mark.slow
def test_a_contradicting_anchor_is_refused_naming_the_labels_it_contradicts(fresh_demo):
    # the decoder names conflicts by label id (an event span by one id per event); the person reads them
    # as the Labels panel shows them, and the ids stay on the error
    eng = fresh_demo
    audio = _audio_item(eng)
    span = eng.add_label(EventSpanLabel(item_id=audio.id, first=10, last=20, t0_s=5.0, t1_s=13.0))
    late = AnchorLabel(item_id=audio.id, event=15, time_s=17.5)
    with pytest.raises(InfeasibleLabelsError) as err:
        eng.add_label(late)
    text = str(err.value)
    assert "new label: event 15 at 17.500 s; events 10\u201320 in [5.00, 13.00] s" in text
    assert span.id not in text and late.id not in text
    assert set(err.value.label_ids) == {span.id, late.id}
    early = eng.add_label(AnchorLabel(item_id=audio.id, event=5, time_s=3.0))
    with pytest.raises(InfeasibleLabelsError, match="new label: event 6 at 2.500 s; event 5 at 3.000 s") as err:
        eng.add_label(AnchorLabel(item_id=audio.id, event=6, time_s=2.5))
    assert early.id in err.value.label_ids


@pytest.mark.slow
def test_an_audio_question_anchors_one_event_at_the_onset_its_answer_names(fresh_demo):
    eng = fresh_demo
    audio = _audio_item(eng)
    query = next(q for q in eng.next_queries(10) if q.item_id == audio.id)
    question = eng.question(query)
    e = question.event
    assert query.start <= e < query.stop
    model, = question.answers["model"]
    other, = question.answers["runner-up"]
    assert model.event == other.event == e and model.time_s != other.time_s
    assert f"{model.time_s:.2f} s or at {other.time_s:.2f} s" in question.sentence
    n = len(eng.labels(audio.id))
    stored = eng.answer(question, "runner-up")
    assert [(lab.event, lab.time_s) for lab in stored] == [(e, other.time_s)]
    assert len(eng.labels(audio.id)) == n + 1          # one event, not the whole phrase
    pred = eng.predict(audio.id)
    assert abs(pred.times_s[e] - other.time_s) <= other.tolerance_s + 1e-9


def test_the_queue_the_prediction_and_the_browser_show_one_margin(demo):
    # on the demo's chromosomes the exact decode and the queue's followed one differ (0.428 against 0.408 on 2:7)
    queries = [q for q in demo.next_queries(10) if demo.item_info(q.item_id).kind == "cgh"]
    assert len(queries) >= 3
    for q in queries:
        pred = demo.predict(q.item_id)
        assert pred.margin == pytest.approx(-math.log(q.uncertainty), rel=1e-9, abs=1e-12)
        assert demo.item_info(q.item_id).uncertainty == pytest.approx(q.uncertainty, rel=1e-12)


@pytest.mark.slow
def test_two_threads_asking_for_the_same_alignment_decode_it_once(fresh_demo, monkeypatch):
    """After an anchor the app's model update and its next question ask at once: one decode serves both."""
    import threading
    import time

    audio = _audio_item(fresh_demo)
    fresh_demo.predict(audio.id)
    task = fresh_demo._tasks.get(fresh_demo.session.item(audio.id))
    real_align, calls = task.aligner.align, []

    def slow_align(*args, **kwargs):
        calls.append(threading.get_ident())
        time.sleep(0.2)                      # long enough for the other thread to ask meanwhile
        return real_align(*args, **kwargs)

    monkeypatch.setattr(task.aligner, "align", slow_align)
    fresh_demo.add_label(AnchorLabel(item_id=audio.id, event=3, time_s=float(
        fresh_demo.prediction(audio.id).times_s[3])))
    out = []
    threads = [threading.Thread(target=lambda: out.append(fresh_demo.predict(audio.id))) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    assert len(calls) == 1 and len(out) == 2
    assert np.array_equal(out[0].structure.onsets, out[1].structure.onsets)


@pytest.mark.slow
def test_a_question_prepared_ahead_needs_no_decode_after_either_answer(fresh_demo, monkeypatch):
    """While a person reads an audio question the item is decoded under each answer's anchor; after the answer the
    redraw and the next question come from memory, equal to a decode made after it."""
    eng = fresh_demo
    audio = _audio_item(eng)
    query = next(q for q in eng.next_queries(10) if q.item_id == audio.id)
    question = eng.question(query)
    assert eng.prepare_answers(question) == 2
    task = eng._tasks.get(eng.session.item(audio.id))
    real_align, calls = task.aligner.align, []
    monkeypatch.setattr(task.aligner, "align", lambda *a, **k: calls.append(1) or real_align(*a, **k))
    eng.answer(question, "runner-up")
    pred = eng.predict(audio.id)
    nxt = next((q for q in eng.next_queries(10) if q.item_id == audio.id), None)
    if nxt is not None:
        eng.question(nxt)
    assert calls == []                                   # no decode after the answer
    task._decoded.clear()
    assert np.array_equal(eng.predict(audio.id).times_s, pred.times_s) and len(calls) == 1
    # a cgh question: its task learns from the answer, nothing to prepare
    cgh = next(q for q in eng.next_queries(10) if eng.item_info(q.item_id).kind == "cgh")
    assert eng.prepare_answers(eng.question(cgh)) == 0
