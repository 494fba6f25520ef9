"""MIDI: known answers for tempo maps and pairing, round trips, aligned export and bad files."""

import struct

import mido
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from marginalia.exceptions import DataFormatError, ParameterError
from marginalia.io import midi
from marginalia.types import MidiScore


def _save(path, tracks, *, mtype=1, tpb=480):
    """tracks: list of lists of (delta_ticks, message) ; returns path."""
    mf = mido.MidiFile(type=mtype, ticks_per_beat=tpb)
    for msgs in tracks:
        tr = mido.MidiTrack()
        for dt, m in msgs:
            tr.append(m.copy(time=dt))
        mf.tracks.append(tr)
    mf.save(str(path))
    return path


def on(note, vel=64, ch=0):
    return mido.Message("note_on", note=note, velocity=vel, channel=ch)


def off(note, ch=0):
    return mido.Message("note_off", note=note, velocity=0, channel=ch)


def tempo(us):
    return mido.MetaMessage("set_tempo", tempo=us)


def test_tempo_changes_overlaps_and_zero_velocity_offs(tmp_path):
    # 120 bpm for 2 beats, then 60 bpm. tpb 480.
    p = _save(tmp_path / "a.mid", [
        [(0, tempo(500_000)), (960, tempo(1_000_000))],
        [(0, on(60)), (240, on(60)), (240, off(60)), (480, off(60)),        # overlapping C4s, FIFO pairing
         (0, on(64)), (480, on(64, vel=0))],                                  # zero-velocity note-off
        [(1440, on(67, ch=2)), (480, off(67, ch=2))],
    ])
    s = midi.read_midi(p)
    assert s.pitches.tolist() == [60, 60, 64, 67]
    np.testing.assert_allclose(s.onsets_s, [0.0, 0.25, 1.0, 2.0])
    np.testing.assert_allclose(s.offsets_s, [0.5, 1.0, 2.0, 3.0])
    np.testing.assert_allclose(s.onsets_beats, [0, 0.5, 2.0, 3.0])
    assert s.tracks.tolist() == [1, 1, 1, 2]
    assert s.meta["channels"] == (0, 0, 0, 2)
    np.testing.assert_allclose(s.tempo_map, [[0, 0, 500_000], [2, 1.0, 1_000_000]])
    assert s.name == "a" and s.meta["midi_type"] == 1
    assert s.meta["track_names"] == ("", "", "")


def test_track_names_and_time_signatures_survive_a_round_trip(tmp_path):
    p = _save(tmp_path / "ts.mid", [
        [(0, mido.MetaMessage("time_signature", numerator=3, denominator=4)), (0, tempo(600_000)),
         (1440, mido.MetaMessage("time_signature", numerator=6, denominator=8))],
        [(0, mido.MetaMessage("track_name", name="piano")), (0, on(60)), (1440, off(60)), (0, on(62)), (720, off(62))],
    ])
    s = midi.read_midi(p)
    assert s.meta["time_signatures"] == ((0.0, 3, 4), (3.0, 6, 8))
    assert s.meta["track_names"] == ("", "piano")
    midi.write_midi(tmp_path / "b.mid", s)
    b = midi.read_midi(tmp_path / "b.mid")
    assert b.meta["time_signatures"] == s.meta["time_signatures"]
    assert b.meta["track_names"] == ("ts", "piano")
    np.testing.assert_allclose(b.onsets_s, [0.0, 1.8])


def test_type0_running_status_and_note_open_at_end(tmp_path):
    # hand-written bytes: running status (status byte omitted), note 62 never released
    data = bytes([0x00, 0x90, 60, 80,        # note on C4
                  0x60, 60, 0,               # running status: note on vel 0 after 96 ticks
                  0x00, 62, 70,              # running status: note on D4
                  0x83, 0x60, 0xFF, 0x2F, 0x00])  # end of track after 480 ticks
    raw = b"MThd" + struct.pack(">IHHH", 6, 0, 1, 96) + b"MTrk" + struct.pack(">I", len(data)) + data
    p = tmp_path / "rs.mid"
    p.write_bytes(raw)
    s = midi.read_midi(p)
    assert s.pitches.tolist() == [60, 62]
    np.testing.assert_allclose(s.onsets_s, [0.0, 0.5])
    np.testing.assert_allclose(s.offsets_s, [0.5, 0.5 + 2.5])  # closed at the end of the track
    assert s.meta["midi_type"] == 0


@st.composite
def _midi_spec(draw):
    tempos = draw(st.lists(st.tuples(st.integers(1, 2000), st.integers(200_000, 1_500_000)), max_size=3))
    notes = draw(st.lists(st.tuples(st.integers(0, 3000), st.integers(0, 900), st.sampled_from([48, 60, 61, 72]),
                                    st.integers(1, 2)), min_size=1, max_size=12))
    return tempos, notes


def _build(path, spec, tpb=480):
    tempos, notes = spec
    tracks = [[], [], []]
    last = 0
    for t, us in sorted(tempos):  # absolute ticks -> delta times
        tracks[0].append((t - last, tempo(us)))
        last = t
    for track in (1, 2):
        evs = []
        for start, dur, pitch, tr in notes:
            if tr == track:
                evs.append((start, 1, on(pitch)))
                evs.append((start + dur, 0, off(pitch)))
        evs.sort(key=lambda e: (e[0], e[1]))
        last = 0
        for t, _, m in evs:
            tracks[track].append((t - last, m))
            last = t
    return _save(path, tracks, tpb=tpb)


@settings(max_examples=25)
@given(_midi_spec())
def test_midi_score_midi_round_trip_keeps_pitch_and_onset(tmp_path_factory, spec):
    d = tmp_path_factory.mktemp("rt")
    a = midi.read_midi(_build(d / "a.mid", spec))
    midi.write_midi(d / "b.mid", a)
    b = midi.read_midi(d / "b.mid")
    assert b.pitches.tolist() == a.pitches.tolist()
    np.testing.assert_allclose(b.onsets_s, a.onsets_s, atol=1e-3)
    np.testing.assert_allclose(b.onsets_beats, a.onsets_beats, atol=1e-9)
    # overlapping notes of one pitch may swap their ends, but the multiset of ends is kept
    np.testing.assert_allclose(np.sort(b.offsets_s), np.sort(a.offsets_s), atol=1e-3)
    assert sorted(b.tracks.tolist()) == sorted(a.tracks.tolist())


def test_score_without_tempo_map_round_trips(tmp_path):
    s = MidiScore(pitches=[60, 64, 67, 60], onsets_s=[0.0, 0.0, 0.7333, 2.0], offsets_s=[0.5, 1.0, 1.9, 2.0])
    midi.write_midi(tmp_path / "s.mid", s)
    b = midi.read_midi(tmp_path / "s.mid")
    assert b.pitches.tolist() == s.pitches.tolist()
    np.testing.assert_allclose(b.onsets_s, s.onsets_s, atol=1e-3)
    np.testing.assert_allclose(b.offsets_s, s.offsets_s, atol=1e-3)  # incl. the zero-length note


def test_aligned_midi_follows_the_audio_times(tmp_path):
    s = MidiScore(pitches=[60, 64, 62, 65], onsets_s=[0.0, 0.0, 1.0, 2.0], offsets_s=[1.0, 0.5, 2.0, 3.0])
    times = np.array([0.5, 2.5, 3.0])  # events at 0, 1, 2 s of the score
    midi.write_midi(tmp_path / "al.mid", s, times_s=times)
    b = midi.read_midi(tmp_path / "al.mid")
    assert b.pitches.tolist() == [60, 64, 62, 65]
    np.testing.assert_allclose(b.onsets_s, [0.5, 0.5, 2.5, 3.0], atol=1e-3)
    # ends follow the local tempo: span 0..1 stretched x2, 1..2 x0.5, after the end x0.5
    np.testing.assert_allclose(b.offsets_s, [2.5, 1.5, 3.0, 3.5], atol=1e-3)
    with pytest.raises(ParameterError, match=r"expected shape \(3,\)"):
        midi.write_midi(tmp_path / "x.mid", s, times_s=[1.0, 2.0])
    with pytest.raises(ParameterError, match="non-decreasing"):
        midi.write_midi(tmp_path / "x.mid", s, times_s=[1.0, 0.5, 2.0])


def test_alignment_csv_round_trip(tmp_path):
    s = MidiScore(pitches=[60, 64, 67, 62], onsets_s=[0.0, 0.0, 0.0, 0.5], offsets_s=[0.5, 0.5, 0.5, 1.0])
    midi.write_alignment_csv(tmp_path / "a.csv", s, [0.25, 0.875])
    assert (tmp_path / "a.csv").read_text() == ("event,score_time_s,audio_time_s,pitches\n"
                                                "0,0,0.25,60 64 67\n1,0.5,0.875,62\n")
    t = midi.read_alignment_csv(tmp_path / "a.csv")
    assert t["pitches"] == [(60, 64, 67), (62,)]
    np.testing.assert_array_equal(t["audio_time_s"], [0.25, 0.875])


def test_alignment_csv_margins_round_trip_and_are_both_or_neither(tmp_path):
    s = MidiScore(pitches=[60, 64, 62, 65], onsets_s=[0.0, 0.0, 0.5, 1.0], offsets_s=[0.5, 0.5, 1.0, 1.5])
    midi.write_alignment_csv(tmp_path / "a.csv", s, [0.25, 0.875, 1.5], margins=[0.5, np.inf, 2.25],
                             rival_times_s=[0.3, np.nan, 1.45])
    assert (tmp_path / "a.csv").read_text().splitlines() == [
        "event,score_time_s,audio_time_s,pitches,margin,rival_time_s",
        "0,0,0.25,60 64,0.5,0.3", "1,0.5,0.875,62,inf,", "2,1,1.5,65,2.25,1.45"]
    t = midi.read_alignment_csv(tmp_path / "a.csv")
    np.testing.assert_array_equal(t["margin"], [0.5, np.inf, 2.25])
    np.testing.assert_array_equal(t["rival_time_s"], [0.3, np.nan, 1.45])
    (tmp_path / "b.csv").write_text("event,score_time_s,audio_time_s,pitches,margin\n0,0,0.25,60,0.5\n")
    with pytest.raises(DataFormatError, match="without the other"):
        midi.read_alignment_csv(tmp_path / "b.csv")
    with pytest.raises(ParameterError, match="margins"):
        midi.write_alignment_csv(tmp_path / "c.csv", s, [0.25, 0.875, 1.5], margins=[0.5, -1.0, 2.0],
                                 rival_times_s=[0.3, 0.8, 1.4])


def test_no_notes(tmp_path):
    p = _save(tmp_path / "n.mid", [[(0, tempo(500_000))], [(0, off(60)), (10, mido.Message("program_change"))]])
    with pytest.raises(DataFormatError, match="no notes") as info:
        midi.read_midi(p)
    assert info.value.path == str(p)


def test_truncated_track(tmp_path):
    good = _save(tmp_path / "g.mid", [[(0, tempo(500_000))],
                                      [(0, on(60)), (480, off(60)), (0, on(62)), (480, off(62))]])
    raw = good.read_bytes()
    p = tmp_path / "t.mid"
    p.write_bytes(raw[:-7])
    with pytest.raises(DataFormatError, match="track 1 is truncated") as info:
        midi.read_midi(p)
    assert info.value.where == "record 1 (track 1)"
    p.write_bytes(raw[:30])  # cut inside track 0's chunk header region of track 1
    with pytest.raises(DataFormatError, match="truncated|cut short"):
        midi.read_midi(p)


@pytest.mark.parametrize("us", [0, 1, 19_999])
def test_absurd_tempo(tmp_path, us):
    p = _save(tmp_path / "t.mid", [[(0, tempo(500_000)), (100, tempo(us))], [(0, on(60)), (480, off(60))]])
    with pytest.raises(DataFormatError, match="absurd tempo") as info:
        midi.read_midi(p)
    assert info.value.where == "record 1 of track 0 (tick 100)"


def test_empty_garbage_type2_and_smpte(tmp_path):
    cases = {"empty.mid": (b"", "empty"), "g.mid": (b"RIFF1234WAVEfmt ", "not a Standard MIDI File"),
             "h.mid": (b"MThd\x00\x00", "header is truncated"),
             "t2.mid": (b"MThd" + struct.pack(">IHHH", 6, 2, 0, 96), "type 2"),
             "smpte.mid": (b"MThd" + struct.pack(">IHHH", 6, 1, 0, 0xE728), "SMPTE")}
    for name, (raw, match) in cases.items():
        (tmp_path / name).write_bytes(raw)
        with pytest.raises(DataFormatError, match=match):
            midi.read_midi(tmp_path / name)


def test_absurd_duration(tmp_path):
    # a 0x0FFFFFFF-tick delta at the slowest tempo lasts days: corrupt timing
    p = _save(tmp_path / "long.mid", [[(0, tempo(16_000_000))], [(0, on(60)), (0x0FFFFFFF, off(60))]], tpb=24)
    with pytest.raises(DataFormatError, match="hours"):
        midi.read_midi(p)


@settings(max_examples=40)
@given(st.lists(st.tuples(st.integers(0, 20), st.integers(0, 8), st.integers(40, 80)), min_size=1, max_size=10),
       st.lists(st.floats(0.0, 3.0), min_size=20, max_size=20))
def test_warp_puts_events_at_their_times_and_keeps_notes_ordered(notes, gaps):
    s = MidiScore(pitches=[p for _, _, p in notes], onsets_s=[0.25 * a for a, _, _ in notes],
              offsets_s=[0.25 * (a + d) for a, d, _ in notes])
    times = np.cumsum(gaps[: s.n_events])
    on, off = midi.warp_score_times(s, times)
    np.testing.assert_allclose(on, times[s.note_event])
    assert np.all(off >= on)
    # a note ending at a later score time never ends earlier in the audio
    order = np.argsort(s.offsets_s, kind="stable")
    assert np.all(np.diff(off[order]) >= -1e-12)


def test_writer_refuses_negative_onsets_and_encodes_names(tmp_path):
    s = MidiScore(pitches=[60], onsets_s=[-0.5], offsets_s=[0.5])
    with pytest.raises(ParameterError, match="before 0 s"):
        midi.write_midi(tmp_path / "n.mid", s)
    s = MidiScore(pitches=[60], onsets_s=[0.0], offsets_s=[0.5], name="曲", tracks=[1],
              meta={"track_names": ("", "piano día")})
    midi.write_midi(tmp_path / "u.mid", s)
    assert midi.read_midi(tmp_path / "u.mid").meta["track_names"] == ("?", "piano día")


def test_aligned_midi_keeps_every_event_moved_with_the_notes(tmp_path):
    import mido

    from marginalia.io.midi import read_midi, write_midi
    tpb = 480
    mf = mido.MidiFile(type=1, ticks_per_beat=tpb)
    meta = mido.MidiTrack([mido.MetaMessage("set_tempo", tempo=500000), mido.MetaMessage("key_signature", key="G"),
                           mido.MetaMessage("time_signature", numerator=3, denominator=4),
                           mido.MetaMessage("time_signature", numerator=4, denominator=4, time=3 * tpb)])
    piano = mido.MidiTrack([mido.MetaMessage("track_name", name="piano"),
                            mido.Message("program_change", program=5, channel=1),
                            mido.Message("control_change", control=64, value=127, channel=1),
                            mido.Message("note_on", note=60, velocity=80, channel=1),
                            mido.MetaMessage("lyrics", text="la", time=0),
                            mido.Message("pitchwheel", pitch=2000, channel=1, time=tpb // 2),
                            mido.Message("note_off", note=60, channel=1, time=tpb // 2),
                            mido.Message("note_on", note=64, velocity=80, channel=1),
                            mido.Message("control_change", control=64, value=0, channel=1, time=tpb),
                            mido.Message("note_off", note=64, channel=1),
                            mido.Message("note_on", note=67, velocity=80, channel=1, time=tpb),
                            mido.MetaMessage("marker", text="end", time=tpb),
                            mido.Message("note_off", note=67, channel=1)])
    mf.tracks.extend([meta, piano])
    mf.save(str(tmp_path / "s.mid"))
    score = read_midi(tmp_path / "s.mid")
    kept = [m.type for _, _, m in score.meta["other_events"]]
    assert sorted(kept) == sorted(["key_signature", "time_signature", "time_signature", "program_change",
                                   "control_change", "lyrics", "pitchwheel", "control_change", "marker"])
    # notes at 0, 1 and 3 beats (0, 0.5, 1.5 s); the audio plays them twice slower, 1 s late
    times = 2.0 * score.event_onsets_s + 1.0
    write_midi(tmp_path / "aligned.mid", score, times_s=times)
    out = mido.MidiFile(str(tmp_path / "aligned.mid"))
    got = []
    for _ti, track in enumerate(out.tracks):
        tick = 0
        for msg in track:
            tick += msg.time
            if msg.type not in ("note_on", "note_off", "set_tempo", "end_of_track", "track_name"):
                got.append((msg.type, mido.tick2second(tick, out.ticks_per_beat, 500000)))
    expected = [(m.type, 2.0 * s + 1.0) for _, s, m in score.meta["other_events"]]
    assert sorted(t for t, _ in got) == sorted(t for t, _ in expected)
    for (t1, s1), (t2, s2) in zip(sorted(got), sorted(expected)):
        assert t1 == t2 and abs(s1 - s2) < 1e-3
    # a program change and the pedal come before the first note of their tick, and keep their channel
    piano_out = [m for m in out.tracks[1] if m.type in ("program_change", "control_change", "note_on")]
    assert [m.type for m in piano_out[:3]] == ["program_change", "control_change", "note_on"]
    assert piano_out[0].channel == 1 and piano_out[0].program == 5
    assert read_midi(tmp_path / "aligned.mid").onsets_s == pytest.approx(times[score.note_event], abs=1e-3)
