"""Render MIDI to audio with fluidsynth + FluidR3_GM (cached), and measure the renderer's onset lag."""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from pathlib import Path

import numpy as np
import soundfile as sf

SOUNDFONT = "/usr/share/sounds/sf2/FluidR3_GM.sf2"
SR = 22050


def ensure_fluidsynth(log=print) -> bool:
    """True when fluidsynth and the soundfont are present, installing them with apt-get if needed."""
    if shutil.which("fluidsynth") and Path(SOUNDFONT).is_file():
        return True
    log("setup: installing fluidsynth + fluid-soundfont-gm with apt-get")
    try:
        subprocess.run(["apt-get", "install", "-y", "fluidsynth", "fluid-soundfont-gm"], check=True,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    except (OSError, subprocess.CalledProcessError) as exc:
        log(f"setup: apt-get failed ({exc}); only pre-rendered audio can be used")
        return False
    return bool(shutil.which("fluidsynth")) and Path(SOUNDFONT).is_file()


def render(midi: Path, wav: Path, sr: int = SR, font: str = SOUNDFONT) -> Path:
    """Render ``midi`` with soundfont ``font`` to a mono 16-bit ``wav`` (skipped when ``wav`` is newer than ``midi``)."""
    if wav.is_file() and wav.stat().st_mtime >= midi.stat().st_mtime:
        return wav
    wav.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as td:
        tmp = os.path.join(td, "stereo.wav")
        subprocess.run(["fluidsynth", "-n", "-i", "-q", "-g", "0.7", "-r", str(sr), "-F", tmp, font, str(midi)],
                       check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        x, fs = sf.read(tmp, dtype="float32")
    x = x.mean(axis=1) if x.ndim == 2 else x
    part = wav.with_suffix(".part.wav")
    sf.write(part, x, fs, subtype="PCM_16")
    os.replace(part, wav)
    return wav


def measure_lag(workdir: Path, sr: int = SR, font: str = SOUNDFONT, program: int = 0, pitches=None) -> float:
    """Median delay (s) between a MIDI note-on and the first sample of its rendered attack.

    Isolated notes (several pitches and velocities) of General MIDI ``program`` (0: the piano) are rendered with
    soundfont ``font``; the attack starts where the absolute signal first exceeds 5 % of the note's peak. Other
    instruments than the piano start more slowly: their notes are held longer so that the peak is reached.
    """
    import mido

    from marginalia.io.midi import write_midi
    from marginalia.types import MidiScore
    pitches = [36, 48, 55, 60, 64, 67, 72, 79, 84, 91] if pitches is None else [int(p) for p in pitches]
    vel = ([30, 50, 70, 90, 110] * (len(pitches) // 5 + 1))[:len(pitches)]
    hold, step = (0.3, 0.8) if program == 0 else (0.8, 1.4)
    on = 0.5 + step * np.arange(len(pitches))
    score = MidiScore(pitches=pitches, onsets_s=on, offsets_s=on + hold, velocities=vel, name="lag")
    workdir.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=workdir) as td:  # private: several benchmark processes may probe at once
        mid = Path(td) / "lag_probe.mid"
        wav = Path(td) / "lag_probe.wav"
        write_midi(mid, score)
        if program:
            m = mido.MidiFile(mid)
            for track in m.tracks:
                channels = {msg.channel for msg in track if msg.type == "note_on"}
                for ch in sorted(channels):
                    track.insert(0, mido.Message("program_change", channel=ch, program=int(program), time=0))
            m.save(mid)
        render(mid, wav, sr, font)
        y, fs = sf.read(wav, dtype="float64")
    lags = []
    for t in on:
        a, b = int((t - 0.1) * fs), int((t + hold) * fs)
        seg = np.abs(y[a:b])
        first = int(np.flatnonzero(seg > 0.05 * seg.max())[0])
        lags.append((a + first) / fs - t)
    return float(np.median(lags))
