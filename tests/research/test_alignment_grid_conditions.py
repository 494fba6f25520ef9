"""The alignment grid's transformations: a time-scaled MIDI file and its truth, noise at a level, long scores."""

import mido
import numpy as np
import pytest

from benchmarks.quality.quality_alignment_tools.conditions import (
    concatenate_scores,
    delay_samples,
    mix_noise,
    noise,
    scale_midi_time,
)
from marginalia.io.midi import read_midi
from marginalia.types import MidiScore


def _write(path, *, tempo_track=True):
    """A type-1 file: a tempo change at beat 2 (when ``tempo_track``), four notes and a sustain pedal."""
    mid = mido.MidiFile(type=1, ticks_per_beat=480)
    meta = mido.MidiTrack()
    if tempo_track:
        meta += [mido.MetaMessage("set_tempo", tempo=600_000, time=0),
                 mido.MetaMessage("set_tempo", tempo=400_000, time=960)]
    mid.tracks.append(meta)
    notes = mido.MidiTrack()
    notes.append(mido.Message("control_change", control=64, value=127, time=0))
    for k, pitch in enumerate((60, 64, 67, 72)):
        notes.append(mido.Message("note_on", note=pitch, velocity=70, time=0 if k == 0 else 240))
        notes.append(mido.Message("note_off", note=pitch, velocity=0, time=480))
    notes.append(mido.Message("control_change", control=64, value=0, time=0))
    mid.tracks.append(notes)
    mid.save(path)
    return path


@pytest.mark.parametrize("factor", [0.5, 2.0, 1 / 3])
@pytest.mark.parametrize("tempo_track", [True, False])
def test_every_event_of_a_scaled_midi_file_happens_factor_times_later(tmp_path, factor, tempo_track):
    src = _write(tmp_path / "perf.mid", tempo_track=tempo_track)
    dst = scale_midi_time(src, tmp_path / "out" / "scaled.mid", factor)
    before, after = read_midi(src), read_midi(dst)
    assert np.array_equal(before.pitches, after.pitches)
    # the grid scales a performance's truth by the same factor; tempos are whole microseconds per quarter,
    # so the file can differ from it by half a microsecond per quarter (a few parts per million)
    np.testing.assert_allclose(after.onsets_s, before.onsets_s * factor, rtol=1e-5, atol=1e-9)
    np.testing.assert_allclose(after.offsets_s, before.offsets_s * factor, rtol=1e-5, atol=1e-9)
    assert mido.MidiFile(dst).length == pytest.approx(mido.MidiFile(src).length * factor, rel=1e-5)
    kinds = [[m.type for m in t if not m.is_meta] for t in mido.MidiFile(dst).tracks]
    assert kinds == [[m.type for m in t if not m.is_meta] for t in mido.MidiFile(src).tracks]


def test_a_tempo_that_does_not_fit_a_midi_file_is_refused(tmp_path):
    src = _write(tmp_path / "perf.mid")
    with pytest.raises(ValueError, match="outside"):
        scale_midi_time(src, tmp_path / "slow.mid", 40.0)
    with pytest.raises(ValueError, match="positive"):
        scale_midi_time(src, tmp_path / "zero.mid", 0.0)


@pytest.mark.parametrize("kind", ["white", "pink"])
@pytest.mark.parametrize("db", [20.0, 40.0])
def test_noise_is_mixed_the_given_number_of_decibels_down(kind, db):
    t = np.arange(44100) / 22050
    y = 0.3 * np.sin(2 * np.pi * 440 * t) * (t < 1.0)  # a note, then silence: the level is the whole signal's
    out = mix_noise(y, kind, db, seed=3)
    ratio = np.sqrt(np.mean((out - y) ** 2) / np.mean(y ** 2))
    assert 20 * np.log10(ratio) == pytest.approx(-db, abs=1e-6)
    assert np.array_equal(out, mix_noise(y, kind, db, seed=3))


def test_pink_noise_has_the_same_power_in_every_octave_and_white_noise_doubles_per_octave():
    def octave_powers(x):
        p = np.abs(np.fft.rfft(x)) ** 2
        return np.array([p[2 ** k:2 ** (k + 1)].sum() for k in range(9, 15)])

    pink, white = octave_powers(noise("pink", 2 ** 16, 0)), octave_powers(noise("white", 2 ** 16, 0))
    assert np.ptp(np.log2(pink)) < 0.3
    np.testing.assert_allclose(np.diff(np.log2(white)), 1.0, atol=0.15)


def test_delay_samples_finds_a_shift():
    x = noise("white", 5000, 1)
    assert delay_samples(x, np.concatenate([np.zeros(37), x])) == 37
    assert delay_samples(np.concatenate([np.zeros(12), x]), x) == -12


def test_concatenated_scores_keep_every_event_in_order():
    a = MidiScore(pitches=[60, 64, 67], onsets_s=[0.0, 0.0, 1.0], offsets_s=[1.0, 1.0, 2.0])
    b = MidiScore(pitches=[50, 55], onsets_s=[0.5, 1.5], offsets_s=[1.5, 3.0])
    cat = concatenate_scores([a, b], [0.0, 4.0])
    assert cat.n_events == a.n_events + b.n_events
    np.testing.assert_allclose(cat.event_onsets_s, [0.0, 1.0, 4.5, 5.5])
    with pytest.raises(ValueError, match="before score 0 ends"):
        concatenate_scores([a, b], [0.0, 1.5])
