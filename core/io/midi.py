"""Standard MIDI files <-> :class:`~marginalia.types.MidiScore`, aligned MIDI export and the alignment CSV.

Reading merges all tracks, follows the tempo map (ticks -> seconds), pairs note-on/note-off per
(track, channel, pitch) first-in first-out (so overlapping notes of one pitch keep their onsets),
treats a note-on of velocity 0 as a note-off, and closes notes left open at the end of their track.
"""

from __future__ import annotations

import csv
import io
import math
import struct
from collections import defaultdict, deque

import mido
import numpy as np

from ..exceptions import DataFormatError, ParameterError
from ..types import MidiScore
from ._common import decode_text, existing_file, fmt_number, output_file, read_bytes, warn_if_unterminated

__all__ = [
    "MIN_TEMPO_US",
    "MAX_DURATION_S",
    "read_midi",
    "write_midi",
    "warp_score_times",
    "write_alignment_csv",
    "read_alignment_csv",
]

#: fastest tempo accepted, in microseconds per quarter note (3000 bpm); faster is taken as corrupt data
MIN_TEMPO_US = 20_000
#: longest score accepted, in seconds; longer means a corrupt tempo or tick count
MAX_DURATION_S = 6 * 3600.0
_DEFAULT_TEMPO = 500_000
_ALIGNED_TPB = 960


# ------------------------------------------------------------------ reading


def _check_chunks(raw: bytes, path) -> tuple:
    """Validate the chunk structure mido would accept silently or fail on vaguely.

    Returns
    -------
    (midi_type, n_tracks, ticks_per_beat)
    """
    p = str(path)
    if len(raw) == 0:
        raise DataFormatError("the file is empty; expected a Standard MIDI File", path=p)
    if raw[:4] != b"MThd":
        audio = raw[:4] in (b"RIFF", b"fLaC", b"OggS", b"FORM") or raw[:3] == b"ID3"   # WAV FLAC OGG AIFF MP3
        hint = " (this is an audio recording: were the score and the audio swapped?)" if audio else ""
        raise DataFormatError(f"not a Standard MIDI File: it starts with {raw[:4]!r}, expected b'MThd'{hint}",
                              path=p, where="byte 0")
    if len(raw) < 14:
        raise DataFormatError(f"the MIDI header is truncated ({len(raw)} bytes, expected at least 14)", path=p,
                              where="header")
    hlen, mtype, ntrk, division = struct.unpack(">IHHH", raw[4:14])
    if hlen < 6:
        raise DataFormatError(f"MIDI header length {hlen} < 6", path=p, where="header")
    if mtype not in (0, 1):
        raise DataFormatError(f"MIDI type {mtype} is not supported; expected type 0 or 1 "
                              f"(type 2 holds independent sequences: split it first)", path=p, where="header")
    if division & 0x8000:
        raise DataFormatError("SMPTE time division is not supported; expected ticks per quarter note "
                              "(re-save the file from a sequencer)", path=p, where="header")
    if division == 0:
        raise DataFormatError("ticks per quarter note is 0; the header is corrupt", path=p, where="header")
    pos = 8 + hlen
    found = 0
    while pos < len(raw) and found < ntrk:
        if len(raw) - pos < 8:
            raise DataFormatError(f"track {found} is truncated: its chunk header is cut after "
                                  f"{len(raw) - pos} bytes", path=p, where=f"record {found} (track {found})")
        cid, clen = struct.unpack(">4sI", raw[pos:pos + 8])
        if cid == b"MTrk":
            found += 1
        if pos + 8 + clen > len(raw):
            raise DataFormatError(f"track {found - 1} is truncated: it declares {clen} bytes but only "
                                  f"{len(raw) - pos - 8} remain; the file was cut short (download it again)",
                                  path=p, where=f"record {found - 1} (track {found - 1})")
        pos += 8 + clen
    if found < ntrk:
        raise DataFormatError(f"the header announces {ntrk} tracks but the file holds {found}; the file was cut "
                              f"short", path=p, where=f"record {found} (track {found})")
    return mtype, ntrk, division


class _TempoMap:
    """Piecewise-constant tempo: converts ticks <-> seconds.

    Parameters
    ----------
    ticks : ndarray of float, shape (M,)
        Tick of each tempo change, ``ticks[0] == 0``, strictly increasing.
    tempos : ndarray of float, shape (M,)
        Microseconds per quarter note from that tick on.
    tpb : int
    """

    def __init__(self, ticks, tempos, tpb):
        self.ticks = np.asarray(ticks, dtype=np.float64)
        self.tempos = np.asarray(tempos, dtype=np.float64)
        self.tpb = float(tpb)
        sec_per_tick = self.tempos / (1e6 * self.tpb)
        self.seconds = np.concatenate([[0.0], np.cumsum(np.diff(self.ticks) * sec_per_tick[:-1])])
        self._spt = sec_per_tick

    def to_seconds(self, ticks):
        t = np.asarray(ticks, dtype=np.float64)
        k = np.searchsorted(self.ticks, t, side="right") - 1
        return self.seconds[k] + (t - self.ticks[k]) * self._spt[k]

    def to_ticks(self, seconds):
        s = np.asarray(seconds, dtype=np.float64)
        k = np.maximum(np.searchsorted(self.seconds, s, side="right") - 1, 0)
        return self.ticks[k] + (s - self.seconds[k]) / self._spt[k]

    def rows(self) -> np.ndarray:
        """Rows ``(beat, seconds, microseconds_per_quarter)``, shape (M, 3)."""
        return np.column_stack([self.ticks / self.tpb, self.seconds, self.tempos])


def _tempo_map(mf, path) -> _TempoMap:
    changes = []
    for ti, track in enumerate(mf.tracks):
        tick = 0
        for k, msg in enumerate(track):
            tick += msg.time
            if msg.type == "set_tempo":
                if msg.tempo < MIN_TEMPO_US:
                    bpm = math.inf if msg.tempo == 0 else 6e7 / msg.tempo
                    raise DataFormatError(f"absurd tempo {msg.tempo} microseconds per quarter ({bpm:.0f} bpm); "
                                          f"expected at least {MIN_TEMPO_US} (at most {6e7 / MIN_TEMPO_US:.0f} bpm)",
                                          path=str(path), where=f"record {k} of track {ti} (tick {tick})")
                changes.append((tick, ti, k, msg.tempo))
    changes.sort()
    ticks, tempos = [0], [_DEFAULT_TEMPO]
    for tick, _, _, tempo in changes:
        if tick == ticks[-1]:
            tempos[-1] = tempo  # the last change at a tick wins
        else:
            ticks.append(tick)
            tempos.append(tempo)
    return _TempoMap(ticks, tempos, mf.ticks_per_beat)


def read_midi(path) -> MidiScore:
    """Read a type 0 or type 1 Standard MIDI File into a :class:`~marginalia.types.MidiScore`.

    Parameters
    ----------
    path : str or path-like

    Returns
    -------
    score : MidiScore
        ``onsets_s``/``offsets_s`` from the tempo map, ``onsets_beats``/``offsets_beats`` in quarter notes,
        ``tracks`` = MIDI track index, ``tempo_map`` rows ``(beat, seconds, microseconds_per_quarter)``,
        ``ticks_per_beat`` from the file, ``name`` = file stem, ``meta`` with ``source``, ``midi_type``,
        ``channels`` (tuple, one per note in the score's sorted order), ``unmatched_note_offs``,
        ``track_names`` (one per MIDI track), ``time_signatures`` (tuple of ``(beat, numerator,
        denominator)``, for drawing bar lines) and ``other_events``: every message that is not a note, a
        tempo or an end of track (program and control changes such as the sustain pedal, pitch bends,
        lyrics, text, key and time signatures, system exclusive...) as ``(track, score seconds, mido
        message)``, so that an aligned MIDI can keep them.

    Raises
    ------
    DataFormatError
        Not a MIDI file, truncated header or track, type 2 or SMPTE timing, absurd tempo (faster than
        3000 bpm), a duration beyond 6 hours, or no notes at all.
    """
    p = existing_file(path)
    raw = read_bytes(p)
    mtype, _, tpb = _check_chunks(raw, p)
    try:
        mf = mido.MidiFile(file=io.BytesIO(raw))
    except (EOFError, OSError, ValueError, KeyError, IndexError, TypeError) as exc:
        raise DataFormatError(f"cannot parse the MIDI data ({type(exc).__name__}: {exc or 'unexpected end'}); "
                              f"the file is damaged", path=str(p)) from None
    tmap = _tempo_map(mf, p)
    on_t, off_t, pitch, vel, trk, chan = [], [], [], [], [], []
    unmatched = 0
    track_names, time_sigs, others = [], [], []
    for ti, track in enumerate(mf.tracks):
        tick = 0
        open_notes = defaultdict(deque)
        track_names.append("")
        for msg in track:
            tick += msg.time
            if msg.type not in _NOT_KEPT and not (msg.type == "track_name" and not track_names[ti]) \
                    and msg.type not in ("note_on", "note_off"):
                others.append((ti, tick, msg.copy(time=0)))
            if msg.type == "track_name" and not track_names[ti]:
                track_names[ti] = msg.name
            elif msg.type == "time_signature":
                time_sigs.append((tick / tpb, msg.numerator, msg.denominator))
            elif msg.type == "note_on" and msg.velocity > 0:
                open_notes[(msg.channel, msg.note)].append((tick, msg.velocity))
            elif msg.type == "note_off" or msg.type == "note_on":
                queue = open_notes.get((msg.channel, msg.note))
                if queue:
                    start, v = queue.popleft()
                    on_t.append(start), off_t.append(tick), pitch.append(msg.note)
                    vel.append(v), trk.append(ti), chan.append(msg.channel)
                else:
                    unmatched += 1
        for (channel, note), queue in open_notes.items():
            for start, v in queue:
                on_t.append(start), off_t.append(tick), pitch.append(note)
                vel.append(v), trk.append(ti), chan.append(channel)
    if not pitch:
        raise DataFormatError(f"the MIDI file has no notes ({len(mf.tracks)} tracks, no note-on with a velocity "
                              f"> 0); expected a score with at least one note", path=str(p))
    on_t = np.asarray(on_t, dtype=np.float64)
    off_t = np.asarray(off_t, dtype=np.float64)
    on_s, off_s = tmap.to_seconds(on_t), tmap.to_seconds(off_t)
    if off_s.max() > MAX_DURATION_S:
        raise DataFormatError(f"the score lasts {off_s.max() / 3600:.1f} hours; expected at most "
                              f"{MAX_DURATION_S / 3600:.0f} hours: the tempo or tick values are corrupt", path=str(p))
    pitch_a = np.asarray(pitch, dtype=np.int64)
    order = np.lexsort((pitch_a, on_s))  # the order MidiScore stores its notes in
    return MidiScore(pitches=pitch_a, onsets_s=on_s, offsets_s=off_s, onsets_beats=on_t / tpb,
                 offsets_beats=off_t / tpb, velocities=np.asarray(vel), tracks=np.asarray(trk), name=p.stem,
                 tempo_map=tmap.rows(), ticks_per_beat=int(tpb),
                 meta={"source": str(p), "midi_type": mtype,
                       "channels": tuple(int(c) for c in np.asarray(chan)[order]),
                       "unmatched_note_offs": unmatched, "track_names": tuple(track_names),
                       "time_signatures": tuple(sorted(set(time_sigs))),
                       "other_events": tuple((ti, float(s), m) for (ti, _, m), s in
                                             zip(others, tmap.to_seconds(np.asarray([t for _, t, _ in others],
                                                                                    dtype=np.float64))))})


# ------------------------------------------------------------------ writing


def _check_score(score, argname="score") -> MidiScore:
    if not isinstance(score, MidiScore):
        raise ParameterError(f"{argname}: expected a MidiScore, got {type(score).__name__}")
    return score


def _check_times(times_s, score: MidiScore, argname="times_s") -> np.ndarray:
    try:
        t = np.asarray(times_s, dtype=np.float64)
    except (TypeError, ValueError):
        raise ParameterError(f"{argname}: expected an array of event times in seconds, got "
                             f"{type(times_s).__name__}") from None
    if t.shape != (score.n_events,):
        raise ParameterError(f"{argname}: expected shape ({score.n_events},) (one time per score event), "
                             f"got {t.shape}")
    if not np.all(np.isfinite(t)) or np.any(t < 0):
        raise ParameterError(f"{argname}: expected finite times >= 0, got min={np.nanmin(t) if t.size else 0}")
    if np.any(np.diff(t) < 0):
        k = int(np.argmax(np.diff(t) < 0))
        raise ParameterError(f"{argname}: event times must be non-decreasing, got {t[k]} then {t[k + 1]} at "
                             f"events {k}, {k + 1}")
    return t


#: MIDI messages read_midi does not keep in ``other_events``: the notes (kept as notes), the tempo (an aligned
#: file has its own) and the end of a track
_NOT_KEPT = ("set_tempo", "end_of_track")


def _warp(score: MidiScore, t: np.ndarray, s: np.ndarray) -> np.ndarray:
    """Score seconds ``s`` mapped piecewise-linearly through (event onset -> audio onset), extrapolated
    with the tempo of the first/last inter-event span, never below 0."""
    ev = score.event_onsets_s
    if ev.shape[0] >= 2 and ev[-1] > ev[-2] and ev[1] > ev[0]:
        slope_end = (t[-1] - t[-2]) / (ev[-1] - ev[-2])
        slope_start = (t[1] - t[0]) / (ev[1] - ev[0])
    else:
        slope_end = slope_start = 1.0
    out = np.interp(s, ev, t)
    out = np.where(s > ev[-1], t[-1] + (s - ev[-1]) * slope_end, out)
    out = np.where(s < ev[0], t[0] + (s - ev[0]) * slope_start, out)
    return np.maximum(out, 0.0)


def warp_score_times(score: MidiScore, times_s) -> tuple:
    """Map every note of ``score`` to audio time, given the audio onset of every event.

    A note keeps its small offset from its event's onset; its end is mapped piecewise-linearly
    through the (score event onset -> audio onset) anchors, so durations stretch with the local
    tempo (beyond the last event, with the tempo of the last inter-event span).

    Parameters
    ----------
    score : MidiScore
    times_s : array_like, shape (E,)
        Audio onset of each event, non-decreasing.

    Returns
    -------
    onsets_s, offsets_s : ndarray, shape (N,)
        In the score's note order.
    """
    score = _check_score(score)
    t = _check_times(times_s, score)
    ev = score.event_onsets_s
    ne = score.note_event
    onsets = t[ne] + (score.onsets_s - ev[ne])
    if ev.shape[0] >= 2:
        slope_end = (t[-1] - t[-2]) / (ev[-1] - ev[-2])
        slope_start = (t[1] - t[0]) / (ev[1] - ev[0])
    else:
        slope_end = slope_start = 1.0
    off = score.offsets_s
    offsets = np.interp(off, ev, t)
    offsets = np.where(off > ev[-1], t[-1] + (off - ev[-1]) * slope_end, offsets)
    offsets = np.where(off < ev[0], t[0] + (off - ev[0]) * slope_start, offsets)
    onsets = np.maximum(onsets, 0.0)
    offsets = np.maximum(offsets, onsets)
    return onsets, offsets


def _valid_tempo_map(score: MidiScore):
    tm = score.tempo_map
    if tm is None or tm.ndim != 2 or tm.shape[0] < 1 or tm.shape[1] != 3 or not np.all(np.isfinite(tm)):
        return None
    beats, tempos = tm[:, 0], tm[:, 2]
    if beats[0] != 0 or np.any(np.diff(beats) <= 0) or np.any(tempos < MIN_TEMPO_US) or np.any(tempos > 0xFFFFFF):
        return None
    return beats, tempos


def _valid_time_signatures(score: MidiScore) -> list:
    """``meta["time_signatures"]`` rows that mido can write; anything malformed is left out."""
    out = []
    for item in score.meta.get("time_signatures") or ():
        try:
            beat, num, den = float(item[0]), int(item[1]), int(item[2])
        except (TypeError, ValueError, IndexError):
            continue
        if math.isfinite(beat) and beat >= 0 and 1 <= num <= 255 and den in (1, 2, 4, 8, 16, 32, 64, 128):
            out.append((beat, num, den))
    return out


def _keeps_track_numbers(score: MidiScore) -> bool:
    """Whether :func:`write_midi` keeps the score's track numbers (0..64) as MIDI track numbers."""
    return bool(score.tracks.min() >= 0 and score.tracks.max() <= 64)


def write_midi(path, score, *, times_s=None) -> None:
    """Write a score as a type 1 MIDI file; track 0 holds the tempo map, notes keep their track number.

    Parameters
    ----------
    path : str or path-like
    score : MidiScore
    times_s : array_like, shape (E,), optional
        Audio onset of each score event. When given, the *aligned* MIDI is written: notes follow the
        audio (see :func:`warp_score_times`) at a constant 120 bpm with 960 ticks per quarter (0.52 ms
        per tick). Otherwise notes keep the score's seconds, written against its tempo map (a constant
        120 bpm when it has none) with its ``ticks_per_beat``.

    Notes
    -----
    Time signatures in ``score.meta["time_signatures"]`` are written too, and ``meta["track_names"]``
    name the tracks. The aligned MIDI writes instead every message of ``meta["other_events"]`` (what
    :func:`read_midi` keeps: program and control changes, pedal, pitch bends, lyrics, key and time
    signatures...) on its track, its time mapped like the notes' (piecewise-linearly through the event
    onsets), just before the notes of the same tick.
    MidiScore track numbers 0..64 are kept (so MIDI -> MidiScore -> MIDI keeps tracks); others are renumbered
    from 1. Channels come from ``score.meta["channels"]`` when it holds one channel per note, else 0. At one
    tick, note-offs are written before note-ons (a re-struck pitch stays two notes), and zero-length
    notes are closed right after they start.
    """
    p = output_file(path)
    score = _check_score(score)
    if times_s is None and score.onsets_s.min() < 0:
        raise ParameterError(f"score: a MIDI file cannot hold notes before 0 s, got an onset at "
                             f"{score.onsets_s.min()} s; shift the score first")
    if times_s is not None:
        onsets, offsets = warp_score_times(score, times_s)
        tpb = _ALIGNED_TPB
        tmap = _TempoMap([0], [_DEFAULT_TEMPO], tpb)
    else:
        onsets, offsets = score.onsets_s, score.offsets_s
        tpb = int(score.ticks_per_beat) if 0 < int(score.ticks_per_beat) < 0x8000 else 480
        valid = _valid_tempo_map(score)
        if valid is None:
            tmap = _TempoMap([0], [_DEFAULT_TEMPO], tpb)
        else:
            tmap = _TempoMap(np.round(valid[0] * tpb), valid[1], tpb)
    on_tick = np.round(tmap.to_ticks(onsets)).astype(np.int64)
    off_tick = np.maximum(np.round(tmap.to_ticks(offsets)).astype(np.int64), on_tick)
    channels = score.meta.get("channels")
    if channels is None or len(channels) != score.n_notes:
        channels = np.zeros(score.n_notes, dtype=np.int64)
    channels = np.clip(np.asarray(channels, dtype=np.int64), 0, 15)
    velocities = np.clip(score.velocities, 1, 127)

    time_sigs = [] if times_s is not None else _valid_time_signatures(score)
    # the aligned file keeps every other event of the score file (program changes, pedal, pitch bends,
    # lyrics, key and time signatures...), moved in time with the notes
    others = list(score.meta.get("other_events") or ()) if times_s is not None else []
    if others:
        o_ticks = np.round(tmap.to_ticks(_warp(score, np.asarray(times_s, dtype=np.float64),
                                               np.asarray([s for _, s, _ in others], dtype=np.float64))))
        o_ticks = o_ticks.astype(np.int64)
    names = score.meta.get("track_names") or ()
    names = [str(n) for n in names] if _keeps_track_numbers(score) else []
    if _keeps_track_numbers(score):
        midi_track = score.tracks  # keep the score's track numbers (track 0 also holds the tempo map)
        other_track = [int(ti) for ti, _, _ in others]
    else:
        midi_track = np.searchsorted(np.unique(score.tracks), score.tracks) + 1
        known = {int(v): k + 1 for k, v in enumerate(np.unique(score.tracks).tolist())}
        other_track = [known.get(int(ti), 0) for ti, _, _ in others]
    mf = mido.MidiFile(type=1, ticks_per_beat=tpb)
    for track_no in range(max([int(midi_track.max())] + other_track) + 1):
        events = []  # (tick, order at the tick, kind, note index or tempo)
        if track_no > 0 and track_no < len(names) and names[track_no]:
            events.append((0, -3, "track_name", track_no))
        if track_no == 0:
            events.append((0, -3, "track_name", 0))
            for tick, tempo in zip(tmap.ticks.astype(np.int64).tolist(), tmap.tempos.astype(np.int64).tolist()):
                events.append((tick, -1, "set_tempo", int(tempo)))
            for k, (beat, _, _) in enumerate(time_sigs):
                events.append((int(round(beat * tpb)), -2, "time_signature", k))
        for k, tr in enumerate(other_track):
            if tr == track_no:   # before the notes of the same tick: a program change or pedal comes first
                events.append((int(o_ticks[k]), -1 if others[k][2].is_meta else -0.5, "other", k))
        for i in np.flatnonzero(midi_track == track_no).tolist():
            zero = off_tick[i] == on_tick[i]
            events.append((int(on_tick[i]), 1, "note_on", i))
            events.append((int(off_tick[i]), 2 if zero else 0, "note_off", i))
        events.sort()
        track = mido.MidiTrack()
        last = 0
        for tick, _, kind, i in events:
            if kind == "track_name":  # MIDI text is Latin-1: other characters become '?'
                name = names[i] if i else (score.name or "marginalia")
                msg = mido.MetaMessage("track_name", name=name.encode("latin-1", "replace").decode("latin-1"))
            elif kind == "set_tempo":
                msg = mido.MetaMessage("set_tempo", tempo=i)
            elif kind == "time_signature":
                msg = mido.MetaMessage("time_signature", numerator=time_sigs[i][1], denominator=time_sigs[i][2])
            elif kind == "other":
                msg = others[i][2]
            else:
                msg = mido.Message(kind, channel=int(channels[i]), note=int(score.pitches[i]),
                                   velocity=int(velocities[i]) if kind == "note_on" else 0)
            track.append(msg.copy(time=tick - last))
            last = tick
        track.append(mido.MetaMessage("end_of_track", time=0))
        mf.tracks.append(track)
    try:
        mf.save(str(p))
    except OSError as exc:
        raise ParameterError(f"path: cannot write {str(p)!r} ({exc})") from None


# ------------------------------------------------------------------ alignment CSV

ALIGNMENT_COLUMNS = ("event", "score_time_s", "audio_time_s", "pitches")
#: optional columns: how sure the aligner is of each onset, and its closest rival onset
ALIGNMENT_MARGIN_COLUMNS = ("margin", "rival_time_s")


def write_alignment_csv(path, score, times_s, *, margins=None, rival_times_s=None) -> None:
    """Write one row per score event: ``event,score_time_s,audio_time_s,pitches[,margin,rival_time_s]``.

    Parameters
    ----------
    path : str or path-like
    score : MidiScore
    times_s : array_like, shape (E,)
        Audio onset of each event (non-decreasing).
    margins, rival_times_s : array_like, shape (E,), optional
        How sure the aligner is of each onset and where its closest rival onset lies
        (:attr:`marginalia.align.AlignmentOutput.event_margins`); both or neither. ``inf`` margins
        (an event that may not move) are written as ``inf``, missing rivals as empty fields.

    Notes
    -----
    ``pitches`` lists the event's distinct MIDI pitches separated by spaces, e.g. ``"60 64 67"``.
    """
    p = output_file(path)
    score = _check_score(score)
    t = _check_times(times_s, score)
    ev = score.event_onsets_s
    extra = margins is not None or rival_times_s is not None
    if extra:
        m = np.asarray(margins, dtype=np.float64).reshape(-1)
        r = np.asarray(rival_times_s, dtype=np.float64).reshape(-1)
        if m.shape != (score.n_events,) or r.shape != (score.n_events,) or np.any(np.isnan(m)) or np.any(m < 0):
            raise ParameterError(f"margins/rival_times_s: expected {score.n_events} margins >= 0 and as many "
                                 f"times, got shapes {m.shape} and {r.shape}")
    with open(p, "w", newline="", encoding="utf-8") as fh:
        fh.write(",".join(ALIGNMENT_COLUMNS + (ALIGNMENT_MARGIN_COLUMNS if extra else ())) + "\n")
        for e in range(score.n_events):
            pitches = " ".join(str(x) for x in score.event_pitches(e))
            row = f"{e},{fmt_number(ev[e])},{fmt_number(t[e])},{pitches}"
            if extra:
                rival = "" if not np.isfinite(r[e]) else fmt_number(r[e])
                row += f",{'inf' if np.isinf(m[e]) else f'{m[e]:.4g}'},{rival}"
            fh.write(row + "\n")


def read_alignment_csv(path) -> dict:
    """Read a file written by :func:`write_alignment_csv`.

    Returns
    -------
    table : dict
        ``event`` (E,) int, ``score_time_s`` (E,), ``audio_time_s`` (E,), ``pitches`` list of E tuples;
        with the optional columns, also ``margin`` (E,) and ``rival_time_s`` (E,) (NaN where empty).
    """
    p = existing_file(path)
    raw = read_bytes(p)
    text = decode_text(raw, p)
    warn_if_unterminated(raw, p)
    rows = list(csv.reader(io.StringIO(text)))
    if not rows:
        raise DataFormatError("the file is empty; expected the header " + ",".join(ALIGNMENT_COLUMNS), path=str(p))
    header = [h.strip() for h in rows[0]]
    missing = [c for c in ALIGNMENT_COLUMNS if c not in header]
    if missing:
        raise DataFormatError(f"missing column {missing[0]!r}; found {header}, expected "
                              f"{','.join(ALIGNMENT_COLUMNS)}", path=str(p), where="line 1")
    cols = [header.index(c) for c in ALIGNMENT_COLUMNS]
    extra = [header.index(c) for c in ALIGNMENT_MARGIN_COLUMNS if c in header]
    if len(extra) == 1:
        raise DataFormatError(f"found one of {','.join(ALIGNMENT_MARGIN_COLUMNS)} without the other; expected "
                              f"both or neither", path=str(p), where="line 1")
    ev, st, at, pitches, margins, rivals = [], [], [], [], [], []
    for n, row in enumerate(rows[1:], start=2):
        if not row:
            continue
        try:
            ev.append(int(row[cols[0]]))
            st.append(float(row[cols[1]]))
            at.append(float(row[cols[2]]))
            pitches.append(tuple(int(x) for x in row[cols[3]].split()))
            if extra:
                margins.append(float(row[extra[0]]))
                rivals.append(float(row[extra[1]]) if row[extra[1]].strip() else math.nan)
        except (ValueError, IndexError):
            raise DataFormatError(f"cannot read {row!r}; expected an integer event, two times in seconds and "
                                  f"space-separated MIDI pitches" + (", then a margin and a time (or nothing)"
                                                                     if extra else ""),
                                  path=str(p), where=f"line {n}") from None
    table = {"event": np.asarray(ev, dtype=np.int64), "score_time_s": np.asarray(st),
             "audio_time_s": np.asarray(at), "pitches": pitches}
    if extra:
        table["margin"], table["rival_time_s"] = np.asarray(margins), np.asarray(rivals)
    return table
