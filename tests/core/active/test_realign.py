"""marginalia.active.realign: anchor windows of one synthetic performance, re-align with ScoreAligner."""

import numpy as np
import pytest

from benchmarks.research.active_loop import ActiveLoop, PartPool
from marginalia.active.parts import Part
from marginalia.active.realign import Performance, RealignAdapter, within_tolerance
from marginalia.active.uncertainty import uncertainty_from_scores
from marginalia.align import ScoreAligner
from marginalia.exceptions import InfeasibleLabelsError, ParameterError
from marginalia.types import AnchorLabel, MidiScore

SR = 11025
IOI = 0.35
# events 0-5: distinct pitches; events 6-11: the same pitch, rendered as ONE held tone (no re-strike),
# so nothing in the audio says where events 7..11 start
PITCHES = [60, 64, 67, 71, 62, 65, 69, 69, 69, 69, 69, 69]


def _score():
    on = np.arange(len(PITCHES)) * IOI
    return MidiScore(pitches=PITCHES, onsets_s=on, offsets_s=on + IOI, name="synthetic")


def _render(lead=0.3):
    n = int((lead + len(PITCHES) * IOI + 0.6) * SR)
    y = np.zeros(n)
    rng = np.random.default_rng(0)

    def tone(p, t0, dur):
        t = np.arange(int(dur * SR)) / SR
        f0 = 440.0 * 2 ** ((p - 69) / 12)
        env = np.exp(-t / 1.5) * np.minimum(t / 0.004, 1.0) * np.clip((t[-1] - t) / 0.03, 0, 1)
        s = int(t0 * SR)
        y[s:s + t.size] += 0.2 * env * sum(np.sin(2 * np.pi * f0 * h * t) / h for h in range(1, 5))

    for e in range(6):
        tone(PITCHES[e], lead + e * IOI, IOI + 0.05)
    tone(69, lead + 6 * IOI, 6 * IOI)
    y += 1e-4 * rng.standard_normal(n)
    return y, lead + np.arange(len(PITCHES)) * IOI


@pytest.fixture(scope="module")
def perf():
    y, truth = _render()
    aligner = ScoreAligner()
    feats = aligner.features(y, SR)
    return Performance(aligner, feats, _score()), truth


def test_within_tolerance_counts_known_events():
    t = np.array([0.0, 1.0, 2.2, 3.0])
    g = np.array([0.01, 1.2, 2.2, np.nan])
    assert within_tolerance(t, g, 0.05) == pytest.approx(2 / 3)
    assert within_tolerance(t, g, 0.05, events=[1]) == 0.0
    assert np.isnan(within_tolerance(t, g, 0.05, events=[3]))
    with pytest.raises(ParameterError, match="tolerance_s"):
        within_tolerance(t, g, 0.0)


def test_the_held_tone_window_is_the_closest_call(perf):
    p, _ = perf
    task = RealignAdapter()
    task.initialize({"s": p})
    distinct, held = Part("s", 0, 6, "phrase", "events"), Part("s", 6, 12, "phrase", "events")
    sd, sh = task.part_scores(p, distinct, []), task.part_scores(p, held, [])
    for s in (sd, sh):
        assert s.second is not None and s.worst <= s.second <= s.best
    assert uncertainty_from_scores(sh, "best-vs-2nd") > uncertainty_from_scores(sd, "best-vs-2nd")
    assert task.n_alignments_ == 1  # both windows reuse the one alignment


@pytest.mark.slow
def test_anchors_hold_and_the_loop_runs(perf):
    p, truth = perf
    parts = [Part("s", 0, 4, "phrase", "events"), Part("s", 4, 8, "phrase", "events"),
             Part("s", 8, 12, "phrase", "events")]

    def oracle(query, part):
        return part.anchor_labels(truth, tolerance_s=0.02)

    task = RealignAdapter()
    session = ActiveLoop(PartPool({"s": p}, parts), task, oracle, strategy="best-vs-2nd", random_state=0)
    session.step()
    labels = session.labels_["s"]
    times = task.predict_times(p, labels)
    for a in labels:
        assert abs(times[a.event] - a.time_s) <= a.tolerance_s + 1e-9
    session.run()
    assert not session.unlabelled
    assert within_tolerance(task.predict_times(p, session.labels_["s"]), truth, 0.05) == 1.0
    assert task.evaluate([(p, truth, session.labels_["s"])]) == 0.0


def test_conflicting_anchors_are_refused_and_the_session_stays_usable(perf):
    p, truth = perf
    parts = [Part("s", 0, 6, "phrase", "events"), Part("s", 6, 12, "phrase", "events")]
    task = RealignAdapter()
    session = ActiveLoop(PartPool({"s": p}, parts), task, lambda q, part: part.anchor_labels(truth),
                            strategy="random", random_state=0)
    first = session.unlabelled[0]
    session.teach([(first, first.anchor_labels(truth))])
    other = session.unlabelled[0]
    # an anchor placing a later event before the earliest one
    bad = [AnchorLabel(item_id="s", event=other.start, time_s=0.0, tolerance_s=0.01)]
    if other.start == 0:
        bad = [AnchorLabel(item_id="s", event=other.stop - 1, time_s=0.0, tolerance_s=0.01)]
    with pytest.raises(InfeasibleLabelsError):
        session.teach([(other, bad)])
    session.step()
    assert not session.unlabelled
    with pytest.raises(ParameterError, match="Performance"):
        task.initialize({"s": np.zeros(3)})
