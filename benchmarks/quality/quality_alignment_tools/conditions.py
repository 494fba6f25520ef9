"""The recording conditions of the alignment grid: tempo-scaled MIDI, mixed noise, rooms, MP3, long scores.

Each function does one transformation the grid (``benchmarks/quality/alignment_grid.py``) applies to a
rendered performance or to its score, so that the transformation of the audio and of its truth stay in
one place. Rooms and MP3 use the tools a user would (``sox reverb``, ``lame``); noise is generated here,
seeded, because its level must be set against the signal it is mixed with.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from pathlib import Path

import numpy as np

#: the largest tempo a MIDI ``set_tempo`` message can hold (24 bits, microseconds per quarter note)
MAX_TEMPO = 2 ** 24 - 1
DEFAULT_TEMPO = 500_000


def scale_midi_time(src, dst, factor: float) -> Path:
    """Write a copy of a MIDI file in which every event happens ``factor`` times later.

    Only the tempo changes: every ``set_tempo`` is multiplied by ``factor`` (and one is added at
    tick 0 when the file has none there, since MIDI then plays at 120 beats per minute), so notes,
    pedals and controllers keep their ticks and their order. ``factor=2`` is the performance at half
    its tempo, ``factor=0.5`` at twice its tempo.

    Parameters
    ----------
    src, dst : str or path-like
        The MIDI file to read and the one to write (its folder is created).
    factor : float
        Time scale, > 0.

    Returns
    -------
    Path
        ``dst``.

    Raises
    ------
    ValueError
        When ``factor`` is not a positive finite number, or a scaled tempo does not fit a MIDI tempo
        message (more than 16.7 s per quarter note).
    """
    import mido
    if not (np.isfinite(factor) and factor > 0):
        raise ValueError(f"factor: expected a positive number, got {factor!r}")
    mid = mido.MidiFile(src)
    out = mido.MidiFile(type=mid.type, ticks_per_beat=mid.ticks_per_beat)

    def scaled(tempo):
        t = int(round(tempo * factor))
        if not 1 <= t <= MAX_TEMPO:
            raise ValueError(f"{src}: tempo {tempo} µs per quarter scaled by {factor} is {t}, outside 1..{MAX_TEMPO}")
        return t

    has_tempo_at_zero = False
    for track in mid.tracks:
        new = mido.MidiTrack()
        tick = 0
        for msg in track:
            tick += msg.time
            if msg.type == "set_tempo":
                has_tempo_at_zero |= tick == 0
                msg = msg.copy(tempo=scaled(msg.tempo))
            new.append(msg)
        out.tracks.append(new)
    if not has_tempo_at_zero:
        out.tracks[0].insert(0, mido.MetaMessage("set_tempo", tempo=scaled(DEFAULT_TEMPO), time=0))
    dst = Path(dst)
    dst.parent.mkdir(parents=True, exist_ok=True)
    out.save(dst)
    return dst


def noise(kind: str, n: int, seed: int) -> np.ndarray:
    """White or pink (power falling as 1/f) Gaussian noise of unit RMS.

    Parameters
    ----------
    kind : {"white", "pink"}
    n : int
        Number of samples.
    seed : int

    Returns
    -------
    ndarray, shape (n,), float64
    """
    if kind not in ("white", "pink"):
        raise ValueError(f"kind: expected 'white' or 'pink', got {kind!r}")
    rng = np.random.default_rng(seed)
    x = rng.standard_normal(n)
    if kind == "pink":
        spec = np.fft.rfft(x)
        f = np.arange(spec.shape[0], dtype=np.float64)
        f[0] = np.inf  # no DC
        x = np.fft.irfft(spec / np.sqrt(f), n)
    return x / np.sqrt(np.mean(x ** 2))


def mix_noise(y: np.ndarray, kind: str, db_down: float, seed: int) -> np.ndarray:
    """``y`` plus noise whose RMS is ``db_down`` dB below the RMS of the whole of ``y``.

    Parameters
    ----------
    y : ndarray, shape (n,)
        Mono signal.
    kind : {"white", "pink"}
    db_down : float
        Signal-to-noise ratio in dB (40: the noise is 40 dB down).
    seed : int

    Returns
    -------
    ndarray, shape (n,), float64
        Scaled down if needed so that no sample exceeds 0.99 in magnitude.
    """
    y = np.asarray(y, dtype=np.float64)
    rms = np.sqrt(np.mean(y ** 2))
    out = y + noise(kind, y.shape[0], seed) * rms * 10 ** (-db_down / 20)
    peak = np.max(np.abs(out))
    return out * (0.99 / peak) if peak > 0.99 else out


def sox_room(src, dst, reverb=(50, 50, 100)) -> Path:
    """``src`` played in a room: ``sox reverb`` (reverberance %, HF damping %, room scale %), mixed to mono.

    The dry signal passes undelayed (sox's pre-delay is 0), so onsets keep their times.
    """
    if not shutil.which("sox"):
        raise RuntimeError("sox is not installed (apt-get install sox)")
    dst = Path(dst)
    dst.parent.mkdir(parents=True, exist_ok=True)
    part = dst.with_suffix(".part.wav")
    subprocess.run(["sox", "-q", str(src), str(part), "gain", "-3", "reverb", *map(str, reverb), "remix", "-",
                    "gain", "-n", "-1"], check=True)
    os.replace(part, dst)
    return dst


def mp3_round_trip(src, mp3, kbps: int = 64) -> Path:
    """Encode ``src`` to an MP3 at ``kbps`` kbit/s constant bit rate with ``lame``."""
    if not shutil.which("lame"):
        raise RuntimeError("lame is not installed (apt-get install lame)")
    mp3 = Path(mp3)
    mp3.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=mp3.parent) as td:
        part = Path(td) / "part.mp3"
        subprocess.run(["lame", "--quiet", "-b", str(int(kbps)), str(src), str(part)], check=True)
        os.replace(part, mp3)
    return mp3


def delay_samples(reference: np.ndarray, other: np.ndarray) -> int:
    """The shift (samples) at which ``other`` best matches ``reference`` (positive: ``other`` is late)."""
    m = min(reference.shape[0], other.shape[0])
    n = 1 << int(np.ceil(np.log2(2 * m)))
    c = np.fft.irfft(np.fft.rfft(other[:m], n) * np.conj(np.fft.rfft(reference[:m], n)), n)
    k = int(np.argmax(c))
    return k if k < n // 2 else k - n


def concatenate_scores(scores, starts_s, name: str = "concatenated"):
    """One score that plays ``scores`` one after the other, score ``k`` starting at ``starts_s[k]``.

    Parameters
    ----------
    scores : sequence of MidiScore
    starts_s : sequence of float
        Start of each score in the result's seconds; each must come after the previous score ends.
    name : str

    Returns
    -------
    MidiScore
        Its events are the events of ``scores`` in order (the event count is the sum of theirs).
    """
    from marginalia.types import MidiScore
    if len(scores) != len(starts_s) or not scores:
        raise ValueError(f"expected one start per score, got {len(scores)} scores and {len(starts_s)} starts")
    for k in range(1, len(scores)):
        if starts_s[k] <= starts_s[k - 1] + scores[k - 1].duration_s:
            raise ValueError(f"score {k} starts at {starts_s[k]} s, before score {k - 1} ends")
    cat = MidiScore(pitches=np.concatenate([s.pitches for s in scores]),
                    onsets_s=np.concatenate([s.onsets_s + t for s, t in zip(scores, starts_s)]),
                    offsets_s=np.concatenate([s.offsets_s + t for s, t in zip(scores, starts_s)]),
                    velocities=np.concatenate([s.velocities for s in scores]), name=name)
    if cat.n_events != sum(s.n_events for s in scores):
        raise ValueError("the concatenated score merged events of different scores")
    return cat
