"""marginalia.align.aligner: audio-to-score alignment on synthesised performances with known onsets."""

from __future__ import annotations

import numpy as np
import pytest

from marginalia.align import AlignmentOutput, ScoreAligner
from marginalia.exceptions import DataFormatError, InfeasibleLabelsError, ParameterError
from marginalia.types import AnchorLabel, MidiScore

SR = 11025


def make_score(pitch_rows, ioi_s=0.4, name="synthetic"):
    """A score whose event ``e`` sounds the pitches ``pitch_rows[e]`` at ``e * ioi_s``."""
    pitches, on, off = [], [], []
    for e, row in enumerate(pitch_rows):
        for p in row:
            pitches.append(p)
            on.append(e * ioi_s)
            off.append((e + 1) * ioi_s)
    return MidiScore(pitches=pitches, onsets_s=on, offsets_s=off, name=name)


MELODY = [(60, 64), (62,), (67, 71), (65,), (69, 72), (64,), (59, 62, 67), (72,), (66,), (61, 68), (63,), (60, 67)]


def render(score, onsets_s, *, lead_s=0.3, tail_s=0.5, seed=0, noise=1e-4):
    """Additive piano-like synthesis: 6 decaying partials per note, onsets at ``onsets_s`` (per event)."""
    rng = np.random.default_rng(seed)
    total = lead_s + float(onsets_s[-1]) + 1.0 + tail_s
    y = np.zeros(int(total * SR))
    ends = np.append(onsets_s[1:], onsets_s[-1] + 1.0)
    for n in range(score.n_notes):
        e = int(score.note_event[n])
        start = int(round((lead_s + onsets_s[e]) * SR))
        length = int((ends[e] - onsets_s[e] + 0.15) * SR)
        t = np.arange(min(length, y.shape[0] - start)) / SR
        f0 = 440.0 * 2 ** ((score.pitches[n] - 69) / 12)
        env = np.exp(-t / 0.6) * np.minimum(t / 0.004, 1.0)
        release = np.clip((t[-1] - t) / 0.05, 0.0, 1.0)
        tone = sum(np.sin(2 * np.pi * f0 * h * t + rng.uniform(0, 6.28)) / h
                   for h in range(1, 7) if f0 * h < SR / 2)
        y[start:start + t.shape[0]] += 0.2 * env * release * tone
    y += noise * rng.standard_normal(y.shape[0])
    return y, lead_s + np.asarray(onsets_s)


def warped_onsets(n, seed):
    """Rubato: inter-onset intervals 0.25–0.6 s with a slow tempo drift."""
    rng = np.random.default_rng(seed)
    drift = 1.0 + 0.35 * np.sin(np.linspace(0, 3, n))
    ioi = 0.4 * drift * rng.uniform(0.8, 1.2, n)
    return np.concatenate([[0.0], np.cumsum(ioi[:-1])])


@pytest.fixture(scope="module")
def example():
    score = make_score(MELODY)
    y, truth = render(score, warped_onsets(score.n_events, 1))
    return score, y, truth


def test_aligns_a_warped_synthetic_performance_within_50_ms(example):
    score, y, truth = example
    out = ScoreAligner().align(y, SR, score)
    assert isinstance(out, AlignmentOutput)
    assert out.event_times_s.shape == (score.n_events,)
    assert np.all(np.diff(out.event_times_s) > 0)
    err = np.abs(out.event_times_s - truth)
    assert err.max() < 0.05, err
    # the frame alignment places each onset within a frame of the truth, before refinement
    frame_err = np.abs(out.frame_alignment.onsets / out.frame_rate - truth)
    assert frame_err.max() < 2.5 / out.frame_rate
    assert out.margin >= 0
    assert out.runner_up_times_s is None or out.runner_up_times_s.shape == (score.n_events,)


def test_refinement_goes_below_the_frame_size(example):
    score, y, truth = example
    coarse = ScoreAligner(refine_frames=0).align(y, SR, score)
    fine = ScoreAligner().align(y, SR, score)
    coarse_err = np.median(np.abs(coarse.event_times_s - truth))
    fine_err = np.median(np.abs(fine.event_times_s - truth))
    assert fine_err < 0.5 / fine.frame_rate
    assert fine_err < coarse_err


def test_anchors_are_obeyed_even_when_wrong(example):
    score, y, truth = example
    # deliberately misplaced anchors (0.2 s late): the result must still honour them
    anchors = [AnchorLabel(item_id="x", event=e, time_s=float(truth[e] + 0.2), tolerance_s=0.02) for e in (3, 8)]
    out = ScoreAligner().align(y, SR, score, anchors=anchors)
    for a in anchors:
        assert abs(out.event_times_s[a.event] - a.time_s) <= a.tolerance_s + 1e-9
    assert np.all(np.diff(out.event_times_s) > 0)


def test_anchors_out_of_order_are_refused(example):
    score, y, truth = example
    anchors = [AnchorLabel(item_id="x", event=2, time_s=3.0), AnchorLabel(item_id="x", event=5, time_s=1.0)]
    with pytest.raises(InfeasibleLabelsError, match="event 5 is anchored at 1.000 s, before event 2"):
        ScoreAligner().align(y, SR, score, anchors=anchors)
    # two events pinned to one instant cannot both start there (each lasts at least a frame)
    same = [AnchorLabel(item_id="x", event=2, time_s=1.0, tolerance_s=0.0),
            AnchorLabel(item_id="x", event=3, time_s=1.0, tolerance_s=0.0)]
    with pytest.raises(InfeasibleLabelsError, match="no later than event 2"):
        ScoreAligner().align(y, SR, score, anchors=same)


def test_anchor_on_a_missing_event_names_it(example):
    score, y, _ = example
    with pytest.raises(ParameterError, match="event 99"):
        ScoreAligner().align(y, SR, score, anchors=[AnchorLabel(item_id="x", event=99, time_s=1.0)])


def test_bad_inputs_raise_project_errors(example):
    score, y, _ = example
    al = ScoreAligner()
    with pytest.raises(ParameterError, match="audio_y"):
        al.align(np.zeros(0), SR, score)
    with pytest.raises(ParameterError, match="audio_y"):
        al.align(np.full(100, np.nan), SR, score)
    with pytest.raises(ParameterError, match="sr"):
        al.align(y, -5, score)
    with pytest.raises(ParameterError, match="score"):
        al.align(y, SR, "not a score")
    long_score = make_score([(60 + k % 12,) for k in range(400)], ioi_s=0.1)
    with pytest.raises(ParameterError, match="400 events"):
        al.align(y[: SR // 2], SR, long_score)
    with pytest.raises(ParameterError, match="prior_weight"):
        ScoreAligner(prior_weight=-1).align(y, SR, score)


@pytest.mark.slow
def test_fit_round_trips_through_bytes(example):
    score, y, truth = example
    other = make_score(MELODY[::-1])
    y2, _ = render(other, warped_onsets(other.n_events, 7), seed=3)
    al = ScoreAligner(n_iter=2).fit([(y2, SR, other)])
    assert al.W_.shape == (25, 12)
    assert al.provenance_["n_pairs"] == 1
    blob = al.to_bytes(provenance={"note": "test"})
    back = ScoreAligner.from_bytes(blob)
    np.testing.assert_array_equal(back.W_, al.W_)
    assert back.get_params() == al.get_params()
    assert back.provenance_["note"] == "test"
    a = al.align(y, SR, score)
    b = back.align(y, SR, score)
    np.testing.assert_array_equal(a.event_times_s, b.event_times_s)
    # trained on another piece, it still aligns this one
    assert np.abs(b.event_times_s - truth).max() < 0.05


def test_from_bytes_rejects_garbage():
    with pytest.raises(DataFormatError):
        ScoreAligner.from_bytes(b"not an aligner")


def test_align_recording_reads_an_audio_file(tmp_path, example):
    from marginalia.align import align_recording
    from marginalia.io.audio import write_wav
    score, y, truth = example
    path = tmp_path / "take.wav"
    write_wav(path, (y / np.abs(y).max() * 0.5).astype(np.float32), SR)
    out = align_recording(path, score)
    assert np.abs(out.event_times_s - truth).max() < 0.05


def test_learned_scorers_are_transposition_invariant(example):
    score, y, _ = example
    al = ScoreAligner(n_iter=1, ridge=1e-3).fit([(y, SR, score)])
    W = al.W_
    for block in (W[:12], W[12:24]):
        for shift in range(1, 12):
            np.testing.assert_allclose(np.roll(np.roll(block, shift, axis=0), shift, axis=1), block, atol=1e-12)
    assert not np.allclose(W, ScoreAligner()._initial_W())  # it did learn something


# ------------------------------------------------- rolled/leading chords, fermatas, held endings


def render_notes(score, note_on, note_off, *, lead_s=0.3, tail_s=0.5, seed=0, noise=1e-4):
    """Like :func:`render`, but every note has its own onset/offset (s, before ``lead_s``)."""
    rng = np.random.default_rng(seed)
    y = np.zeros(int((lead_s + float(np.max(note_off)) + 0.2 + tail_s) * SR))
    for n in range(score.n_notes):
        start = int(round((lead_s + note_on[n]) * SR))
        t = np.arange(min(int((note_off[n] - note_on[n] + 0.15) * SR), y.shape[0] - start)) / SR
        f0 = 440.0 * 2 ** ((score.pitches[n] - 69) / 12)
        env = np.exp(-t / 0.6) * np.minimum(t / 0.004, 1.0) * np.clip((t[-1] - t) / 0.05, 0.0, 1.0)
        tone = sum(np.sin(2 * np.pi * f0 * h * t + rng.uniform(0, 6.28)) / h for h in range(1, 7) if f0 * h < SR / 2)
        y[start:start + t.shape[0]] += 0.2 * env * tone
    return y + noise * rng.standard_normal(y.shape[0])


CHORDS = [(48, 55, 64, 72), (50, 57, 65, 74), (47, 55, 62, 71), (48, 57, 64, 76), (53, 60, 69, 77),
          (52, 59, 67, 76), (50, 57, 65, 81), (47, 55, 62, 79), (48, 55, 64, 72), (45, 52, 60, 69)]


def test_a_melody_note_played_ahead_of_its_chord_does_not_drag_the_chord():
    # the top note of every chord sounds 70 ms before the other three (a common expressive "melody lead");
    # the event's true onset is the median of its notes' onsets. Timing the chord on pitch classes puts it at
    # the melody note; timing each note on its own partials does not.
    score = make_score(CHORDS, ioi_s=0.6)
    ev_on = warped_onsets(score.n_events, 3) * 1.5
    lead = np.where(score.pitches == np.array([max(CHORDS[e]) for e in score.note_event]), -0.07, 0.0)
    note_on = ev_on[score.note_event] + lead
    note_off = np.append(ev_on[1:], ev_on[-1] + 1.0)[score.note_event]
    y = render_notes(score, note_on, note_off, seed=5)
    truth = 0.3 + np.array([np.median(note_on[score.note_event == e]) for e in range(score.n_events)])
    err = np.abs(ScoreAligner().align(y, SR, score).event_times_s - truth)
    assert err.max() < 0.025, err


def fermata_take():
    """``(score, y, truth)``: MELODY with event 6 held four times its written length and the final chord
    ringing for 3 s; ``truth`` are the event onsets (s) in ``y``."""
    score = make_score(MELODY, ioi_s=0.4)
    ioi = np.full(score.n_events, 0.4)
    ioi[6] *= 4.0
    ev_on = np.concatenate([[0.0], np.cumsum(ioi[:-1])])
    ends = np.append(ev_on[1:], ev_on[-1] + 3.0)
    y = render_notes(score, ev_on[score.note_event], ends[score.note_event], seed=2)
    return score, y, 0.3 + ev_on


def test_a_fermata_and_a_long_held_final_chord_keep_every_onset_within_50_ms():
    # a quadratic prior on durations at the global tempo drags the events after the fermata and before the end
    score, y, truth = fermata_take()
    err = np.abs(ScoreAligner().align(y, SR, score).event_times_s - truth)
    assert err.max() < 0.05, err


def test_the_quadratic_prior_is_still_available(example):
    score, y, truth = example
    out = ScoreAligner(prior_shape="quadratic", prior_weight=10.0).align(y, SR, score)
    assert np.abs(out.event_times_s - truth).max() < 0.05
    with pytest.raises(ParameterError, match="prior_shape"):
        ScoreAligner(prior_shape="cubic").align(y, SR, score)


def test_every_event_reports_its_margin_and_rival_and_a_fixed_one_may_not_move(example):
    score, y, truth = example
    out = ScoreAligner().align(y, SR, score)
    assert out.event_margins.shape == out.event_rival_times_s.shape == (score.n_events,)
    assert np.all(out.event_margins >= 0)
    # the closest call of the whole alignment is the least sure event's
    assert out.margin == pytest.approx(out.event_margins.min())
    near = np.isfinite(out.event_rival_times_s)
    assert np.all(np.abs(out.event_rival_times_s[near] - out.event_times_s[near]) <= 0.55)
    held = ScoreAligner().align(y, SR, score, fixed_events=[3])
    assert np.isinf(held.event_margins[3]) and np.isnan(held.event_rival_times_s[3])


def test_anchors_still_bind_with_the_robust_prior(example):
    score, y, truth = example
    anchors = [AnchorLabel(item_id="x", event=5, time_s=float(truth[5]), tolerance_s=0.01)]
    out = ScoreAligner().align(y, SR, score, anchors=anchors)
    assert abs(out.event_times_s[5] - truth[5]) <= 0.01 + 1e-9


def test_fit_blends_the_learned_scorers_with_the_untrained_ones(example):
    score, y, _ = example
    base = ScoreAligner(n_iter=1)
    feats = base.features(y, SR)
    full = ScoreAligner(n_iter=1, blend=1.0).fit([(feats, score)]).W_
    none = ScoreAligner(n_iter=1, blend=0.0).fit([(feats, score)]).W_
    half = ScoreAligner(n_iter=1, blend=0.5).fit([(feats, score)]).W_
    assert np.allclose(none, base._initial_W())
    assert not np.allclose(full, none)
    assert np.allclose(half, 0.5 * (full + none))
    with pytest.raises(ParameterError, match="blend"):
        ScoreAligner(blend=1.5).fit([(feats, score)])


def test_fit_from_a_prior_aligner_starts_from_its_scorers_and_keeps_them_under_a_strong_ridge(example):
    score, y, _ = example
    feats = ScoreAligner().features(y, SR)
    w = ScoreAligner().scorer_weights()
    w[1], w[13] = 0.4, 0.3                          # a prior that also credits the next semitone
    prior = ScoreAligner().with_scorer_weights(w)
    plain = ScoreAligner(n_iter=1).fit([(feats, score)]).W_
    held = ScoreAligner(n_iter=1, ridge=1e6).fit([(feats, score)], start=prior).W_
    assert np.allclose(held, prior.W_, atol=1e-4)   # the ridge pulls towards the prior, not the untrained scorers
    started = ScoreAligner(n_iter=1).fit([(feats, score)], start=prior)
    assert not np.allclose(started.W_, plain)
    assert started.provenance_["started_from_prior"] and not ScoreAligner(n_iter=1).fit(
        [(feats, score)]).provenance_["started_from_prior"]
    with pytest.raises(ParameterError, match="start: expected a fitted ScoreAligner"):
        ScoreAligner().fit([(feats, score)], start=w)
    with pytest.raises(Exception, match="call fit"):
        ScoreAligner().fit([(feats, score)], start=ScoreAligner())


@pytest.mark.slow
def test_runner_up_is_the_closest_one_onset_move_and_anchored_events_stay(example):
    score, y, truth = example
    aligner = ScoreAligner()
    out = aligner.align(y, SR, score)
    moves = out.moves
    assert moves is not None and np.isfinite(out.margin)
    # the runner-up moves exactly one event, and it is the event whose best move loses least
    moved = np.flatnonzero(np.abs(out.runner_up_times_s - aligner.features(y, SR).frame_boundary_s(
        out.frame_alignment.onsets)) > 1e-9)
    assert moved.size == 1
    assert out.margin == pytest.approx(max(float(moves.loss[1:-1].min()), 0.0))
    assert moved[0] == int(np.argmin(moves.loss[1:-1]))
    # each phrase's own closest call, and the whole item's is the closest of them
    spans = [(0, 4), (4, 8), (8, score.n_events)]
    margins = [moves.span(a, b).margin for a, b in spans]
    assert min(margins) == pytest.approx(out.margin)
    # an event held fixed is never the one moved
    held = aligner.align(y, SR, score, fixed_events=[moved[0]])
    assert held.moves.loss[moved[0] + 1] == np.inf
    assert held.margin >= out.margin
    with pytest.raises(ParameterError, match="span"):
        moves.span(3, 3)
    with pytest.raises(ParameterError, match="fixed_events"):
        aligner.align(y, SR, score, fixed_events=[score.n_events])


def render_timbre(score, onsets_s, partials, *, lead_s=0.3, seed=0):
    """Like :func:`render`, with the partials' amplitudes given (``partials[h - 1]`` for harmonic ``h``)."""
    rng = np.random.default_rng(seed)
    y = np.zeros(int((lead_s + float(onsets_s[-1]) + 1.5) * SR))
    ends = np.append(onsets_s[1:], onsets_s[-1] + 1.0)
    for n in range(score.n_notes):
        e = int(score.note_event[n])
        start = int(round((lead_s + onsets_s[e]) * SR))
        t = np.arange(min(int((ends[e] - onsets_s[e] + 0.15) * SR), y.shape[0] - start)) / SR
        f0 = 440.0 * 2 ** ((score.pitches[n] - 69) / 12)
        env = np.exp(-t / 0.6) * np.minimum(t / 0.004, 1.0)
        y[start:start + t.shape[0]] += 0.2 * env * sum(a * np.sin(2 * np.pi * f0 * h * t + rng.uniform(0, 6.28))
                                                       for h, a in enumerate(partials, 1) if f0 * h < SR / 2)
    return y + 1e-4 * rng.standard_normal(y.shape[0]), lead_s + np.asarray(onsets_s)


@pytest.mark.slow
def test_a_model_trained_on_an_unusual_timbre_aligns_another_piece_in_it(tmp_path):
    """An instrument whose third harmonic (a twelfth up) dominates: the untrained scorers read each note as
    the pitch class a fifth above and misplace half the events; scorers fitted, without timing, on another
    melody in that timbre and read back from a model file place every event within 50 ms."""
    import marginalia as mg
    partials = [0.05, 0.1, 1.0, 0.1, 0.5, 0.05]
    train, test = (make_score([(int(p),) for p in np.random.default_rng(seed).integers(55, 75, n)])
                   for seed, n in ((3, 40), (11, 24)))
    y_train, _ = render_timbre(train, warped_onsets(train.n_events, 5), partials, seed=1)
    y_test, truth = render_timbre(test, warped_onsets(test.n_events, 7), partials, seed=2)
    mg.save_model(tmp_path / "timbre.model", ScoreAligner().fit([(y_train, SR, train)]))
    trained = mg.load_model(tmp_path / "timbre.model", task="alignment").aligner()
    err_default = np.abs(ScoreAligner().align(y_test, SR, test).event_times_s - truth)
    err_trained = np.abs(trained.align(y_test, SR, test).event_times_s - truth)
    assert (err_trained <= 0.05).all()
    assert (err_default <= 0.05).sum() <= test.n_events - 6
