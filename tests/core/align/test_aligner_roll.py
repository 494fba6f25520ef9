"""marginalia.align.aligner on a rolled chord followed by repeated notes (the ending of many piano pieces).

The score writes a block chord whose top note is then repeated; the performer
rolls the chord upwards over 1.5 s (its top note struck last) and slows down
over the repeated notes. A frame-level decoder takes the roll's top note for
the first repeated note and shifts the run one strike early; counting the
strikes of the run and timing the chord per note fixes both.
"""

from __future__ import annotations

import numpy as np
import pytest

from marginalia.align import ScoreAligner
from tests.core.align.test_aligner import make_score as make_rows_score

SR = 11025
LEAD_S = 0.3

# melody, a block chord (F major, A4 on top), the A4 repeated four times
MELODY = [(60,), (64,), (67,), (65,), (62,), (64,), (60, 67)]
CHORD = (41, 48, 53, 57, 60, 65, 69)
RUN = 4


def make_score(ioi_s=0.4):
    return make_rows_score(MELODY + [CHORD] + [(69,)] * RUN, ioi_s, name="rolled-ending")


def performance(score, roll_s=1.5, run_ioi=(0.7, 0.75, 0.85, 1.0)):
    """Per-note onsets (s): melody at 0.4 s, the chord rolled upwards over ``roll_s``, a ritardando after."""
    n_mel = len(MELODY)
    ev = np.arange(n_mel) * 0.42
    chord_start = ev[-1] + 0.45
    roll = chord_start + np.linspace(0.0, roll_s, len(CHORD))
    run = roll[-1] + np.cumsum(run_ioi)
    note_on = np.empty(score.n_notes)
    for n in range(score.n_notes):
        e = int(score.note_event[n])
        if e < n_mel:
            note_on[n] = ev[e]
        elif e == n_mel:
            note_on[n] = roll[CHORD.index(int(score.pitches[n]))]
        else:
            note_on[n] = run[e - n_mel - 1]
    truth = np.array([np.median(note_on[score.note_event == e]) for e in range(score.n_events)])
    return note_on, truth


def render(score, note_on, gain=None, seed=0):
    """Additive piano-like tones held with the pedal until the end, or until their key is struck again."""
    rng = np.random.default_rng(seed)
    total = LEAD_S + float(note_on.max()) + 1.5
    y = np.zeros(int(total * SR))
    for n in range(score.n_notes):
        start = int(round((LEAD_S + note_on[n]) * SR))
        # a key struck again silences its string's previous tone (one string per pitch)
        later = note_on[(score.pitches == score.pitches[n]) & (note_on > note_on[n])]
        stop = y.shape[0] if later.size == 0 else int(round((LEAD_S + later.min()) * SR))
        t = np.arange(stop - start) / SR
        f0 = 440.0 * 2 ** ((score.pitches[n] - 69) / 12)
        env = np.exp(-t / 0.8) * np.minimum(t / 0.004, 1.0)
        tone = sum(np.sin(2 * np.pi * f0 * h * t + rng.uniform(0, 6.28)) / h
                   for h in range(1, 7) if f0 * h < SR / 2)
        y[start:stop] += (0.15 if gain is None else gain[n]) * env * tone
    y += 1e-4 * rng.standard_normal(y.shape[0])
    return y


@pytest.fixture(scope="module")
def ending():
    score = make_score()
    note_on, truth = performance(score)
    # the roll's top note rings out loudly; the repeated notes after it are softer
    chord = len(MELODY)
    gain = np.full(score.n_notes, 0.15)
    gain[(score.note_event == chord) & (score.pitches == 69)] = 0.3
    return score, render(score, note_on, gain=gain), LEAD_S + truth


def test_rolled_chord_and_repeated_notes_are_aligned(ending):
    score, y, truth = ending
    out = ScoreAligner().align(y, SR, score)
    err = np.abs(out.event_times_s - truth)
    assert err.max() < 0.1, err
    # the chord sits at the median of its rolled notes, not at its first note
    chord = len(MELODY)
    assert abs(out.event_times_s[chord] - truth[chord]) < 0.1


def test_without_counting_and_per_note_timing_the_run_slips(ending):
    score, y, truth = ending
    out = ScoreAligner(count_runs=False, rolled_chord_s=0.0).align(y, SR, score)
    err = np.abs(out.event_times_s - truth)
    # the old pipeline takes the roll's top note for the first repeated note
    assert err.max() > 0.3, err
