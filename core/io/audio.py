"""Audio files: decoding (soundfile, librosa fallback), resampling, an LRU cache, WAV writing."""

from __future__ import annotations

import os
import threading
import warnings
from collections import OrderedDict
from typing import NamedTuple

import numpy as np
import soundfile

from ..checks import check_bool, check_choice, check_int
from ..exceptions import DataFormatError, ParameterError
from ._common import existing_file, output_file
from .wav_header import declared_wav_frames, truncation_message

__all__ = ["AudioInfo", "audio_info", "load_audio", "write_wav", "clear_audio_cache", "audio_cache_info",
           "clicked_excerpts", "AUDIO_EXTENSIONS"]

#: file extensions treated as audio (decoded by soundfile, or librosa/audioread for the rest)
AUDIO_EXTENSIONS = (".wav", ".wave", ".flac", ".ogg", ".oga", ".opus", ".mp3", ".aif", ".aiff", ".m4a", ".aac",
                    ".wma")
_SOUNDFILE_ONLY = (".wav", ".wave", ".flac", ".ogg", ".oga", ".aif", ".aiff")
_CACHE_MAX_BYTES = 512 * 2**20
#: the highest sample rate read or written (above the rates of studio audio)
MAX_SAMPLE_RATE = 768_000


class AudioInfo(NamedTuple):
    """What :func:`audio_info` tells without decoding the samples."""

    duration_s: float
    sr: int
    channels: int
    frames: int
    format: str


class _AudioCache:
    """Thread-safe LRU of decoded signals, bounded by total bytes."""

    def __init__(self, max_bytes: int):
        self.max_bytes = max_bytes
        self._data: OrderedDict = OrderedDict()
        self._bytes = 0
        self._lock = threading.Lock()
        self._inflight: dict = {}
        self.hits = 0
        self.misses = 0

    def key_lock(self, key) -> threading.Lock:
        """A lock per key, so threads asking for the same file decode it once."""
        with self._lock:
            lock = self._inflight.get(key)
            if lock is None:
                lock = self._inflight[key] = threading.Lock()
                if len(self._inflight) > 256:  # forget locks of long-finished loads
                    for old in list(self._inflight)[:128]:
                        if not self._inflight[old].locked():
                            del self._inflight[old]
            return lock

    def get(self, key):
        with self._lock:
            value = self._data.get(key)
            if value is None:
                self.misses += 1
                return None
            self._data.move_to_end(key)
            self.hits += 1
            return value

    def put(self, key, value):
        nbytes = value[0].nbytes
        if nbytes > self.max_bytes:
            return
        with self._lock:
            if key in self._data:
                return
            self._data[key] = value
            self._bytes += nbytes
            while self._bytes > self.max_bytes:
                _, old = self._data.popitem(last=False)
                self._bytes -= old[0].nbytes

    def clear(self):
        with self._lock:
            self._data.clear()
            self._bytes = 0
            self.hits = self.misses = 0


_cache = _AudioCache(_CACHE_MAX_BYTES)


def clear_audio_cache() -> None:
    """Forget every decoded signal kept by :func:`load_audio`."""
    _cache.clear()


def audio_cache_info() -> dict:
    """``{"hits", "misses", "entries", "bytes"}`` of the decoded-audio cache."""
    return {"hits": _cache.hits, "misses": _cache.misses, "entries": len(_cache._data), "bytes": _cache._bytes}


def _damaged(path, exc) -> DataFormatError:
    try:
        with open(path, "rb") as fh:
            head = fh.read(4)
    except OSError:
        head = b""
    if head == b"MThd":
        return DataFormatError("this is a MIDI score, not an audio recording; give the recording here (were the "
                               "score and the audio swapped?)", path=str(path))
    reason = " ".join(str(exc).split()) or type(exc).__name__
    return DataFormatError(f"cannot decode the audio ({reason}); expected a WAV, FLAC, OGG or MP3 file. The file "
                           f"may be truncated, damaged or in an unsupported codec: convert it to WAV or FLAC",
                           path=str(path))


def _check_complete(p, frames: int, sr: int) -> None:
    """Refuse a WAV holding fewer frames than its header declares (see :mod:`.wav_header`)."""
    try:
        declared = declared_wav_frames(p)
    except OSError:
        return
    message = truncation_message(declared, frames, sr)
    if message is not None:
        raise DataFormatError(message, path=str(p))


def audio_info(path) -> AudioInfo:
    """Duration, sample rate and channels of an audio file, read from its header.

    Parameters
    ----------
    path : str or path-like

    Returns
    -------
    info : AudioInfo
        ``duration_s``, ``sr``, ``channels``, ``frames`` and ``format`` (e.g. ``"WAV"``).

    Raises
    ------
    DataFormatError
        Unreadable, truncated or unsupported file (a WAV holding fewer samples than its
        header declares is truncated), or a file holding no samples.
    """
    p = existing_file(path)
    try:
        info = soundfile.info(str(p))
        result = AudioInfo(float(info.frames) / info.samplerate, int(info.samplerate), int(info.channels),
                           int(info.frames), str(info.format))
        _check_complete(p, result.frames, result.sr)
    except (soundfile.SoundFileError, RuntimeError, TypeError) as exc:
        if p.suffix.lower() in _SOUNDFILE_ONLY:
            raise _damaged(p, exc) from None
        y, sr = _decode_librosa(p)
        result = AudioInfo(y.shape[0] / sr, int(sr), int(y.shape[1]), int(y.shape[0]), p.suffix.lstrip(".").upper())
    if result.frames == 0:
        raise DataFormatError("the audio holds no samples (zero length); expected a recording", path=str(p))
    return result


def _decode_librosa(p):
    """Decode formats libsndfile cannot read with audioread (the decoder librosa itself falls back on).

    audioread is called directly because ``librosa.load`` pays a long first-call set-up for the same work.
    """
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)  # audioread imports aifc/audioop/sunau
            import audioread
    except ImportError:  # pragma: no cover - librosa always brings audioread
        audioread = None
    try:
        if audioread is None:
            import librosa

            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                y, sr = librosa.load(str(p), sr=None, mono=False)
            y = np.asarray(y, dtype=np.float32)
            return (y[:, None] if y.ndim == 1 else y.T), int(sr)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)  # its backends import aifc/audioop/sunau
            with audioread.audio_open(str(p)) as fh:
                sr, channels = int(fh.samplerate), int(fh.channels)
                data = b"".join(fh)
    except Exception as exc:  # audioread raises many unrelated types (NoBackendError, EOFError, ...)
        raise _damaged(p, exc) from None
    y = np.frombuffer(data, dtype="<i2").astype(np.float32) / 32768.0
    return y.reshape(-1, max(channels, 1)), sr


def _decode(p):
    """Decode to float32 of shape (n, channels) at the file's own rate."""
    try:
        y, sr = soundfile.read(str(p), dtype="float32", always_2d=True)
    except (soundfile.SoundFileError, RuntimeError, TypeError) as exc:
        if p.suffix.lower() in _SOUNDFILE_ONLY:
            raise _damaged(p, exc) from None
        y, sr = _decode_librosa(p)
    else:
        _check_complete(p, y.shape[0], int(sr))
    return y, int(sr)


def _resample(y, orig_sr: int, target_sr: int):
    """soxr high-quality resampling along axis 0 (what librosa's ``res_type="soxr_hq"`` runs)."""
    try:
        import soxr  # a librosa dependency; importing it directly avoids librosa's slow first import
    except ImportError:  # pragma: no cover - librosa always brings soxr
        import librosa

        return librosa.resample(y, orig_sr=orig_sr, target_sr=target_sr, res_type="soxr_hq", axis=0)
    return soxr.resample(np.ascontiguousarray(y, dtype=np.float32), orig_sr, target_sr, quality="HQ")


def load_audio(path, *, sr=22050, mono=True):
    """Decode an audio file, optionally mixed to mono and resampled.

    Parameters
    ----------
    path : str or path-like
        WAV/FLAC/OGG/MP3 are decoded by soundfile (libsndfile), other formats by audioread (the
        decoder behind librosa.load, which needs ffmpeg or GStreamer on the machine).
    sr : int or None
        Target sample rate; ``None`` keeps the file's rate. Resampling uses soxr (high quality).
    mono : bool
        Average the channels.

    Returns
    -------
    y : ndarray of float32, shape (n,) when ``mono`` else (n, channels)
        Read-only: the array is shared with the cache (copy it to modify it).
    sr : int
        Its sample rate.

    Notes
    -----
    Decoded signals are kept in a process-wide LRU cache (512 MB) keyed by (path, modification time,
    size, sr, mono), so a long file opened twice is decoded once and an edited file is decoded again.

    Raises
    ------
    DataFormatError
        Truncated header or samples (a WAV holding fewer samples than its header declares),
        unsupported codec or garbage, zero-length audio, non-finite samples.
    ParameterError
        Invalid ``sr`` or ``mono``.
    """
    if sr is not None:
        check_int(sr, "sr", min_val=1, max_val=MAX_SAMPLE_RATE, what="None or a sample rate in Hz")
    check_bool(mono, "mono")
    p = existing_file(path)
    st = os.stat(p)
    key = (str(p.resolve()), st.st_mtime_ns, st.st_size, None if sr is None else int(sr), bool(mono))
    hit = _cache.get(key)
    if hit is not None:
        return hit
    with _cache.key_lock(key):
        hit = _cache.get(key)  # another thread may have decoded it while this one waited
        if hit is not None:
            return hit
        return _decode_and_cache(p, key, sr, mono)


def _decode_and_cache(p, key, sr, mono):
    y, native = _decode(p)
    if y.shape[0] == 0:
        raise DataFormatError("the audio holds no samples (zero length); expected a recording", path=str(p))
    if not np.all(np.isfinite(y)):
        raise DataFormatError("the audio contains NaN or infinite samples; the file is damaged", path=str(p))
    if mono:
        y = y.mean(axis=1) if y.shape[1] > 1 else y[:, 0]
    out_sr = native
    if sr is not None and int(sr) != native:
        y = _resample(y, native, int(sr))
        out_sr = int(sr)
    y = np.ascontiguousarray(y, dtype=np.float32)
    y.setflags(write=False)
    _cache.put(key, (y, out_sr))
    return y, out_sr


def write_wav(path, y, sr, *, subtype="PCM_16") -> None:
    """Write a signal as WAV.

    Parameters
    ----------
    path : str or path-like
    y : array_like of float, shape (n,) or (n, channels)
        Samples in [-1, 1]; values outside are clipped.
    sr : int
        Sample rate in Hz.
    subtype : {"PCM_16", "PCM_24", "FLOAT"}
    """
    p = output_file(path)
    check_int(sr, "sr", min_val=1, max_val=MAX_SAMPLE_RATE, what="a sample rate in Hz")
    check_choice(subtype, "subtype", ("PCM_16", "PCM_24", "FLOAT"))
    try:
        a = np.asarray(y, dtype=np.float64)
    except (TypeError, ValueError):
        raise ParameterError(f"y: expected a numeric array of samples, got {type(y).__name__}") from None
    if a.ndim not in (1, 2) or a.shape[0] == 0:
        raise ParameterError(f"y: expected shape (n,) or (n, channels) with n >= 1, got {a.shape}")
    if not np.all(np.isfinite(a)):
        raise ParameterError("y: contains NaN or inf samples")
    soundfile.write(str(p), np.clip(a, -1.0, 1.0), int(sr), subtype=subtype, format="WAV")


def clicked_excerpts(y, sr, times_s, *, before_s: float = 0.8, after_s: float = 0.6, gap_s: float = 0.4,
                     click_hz: float = 1760.0, click_s: float = 0.03) -> tuple:
    """The recording around each of several candidate times, one after the other, a click at each candidate.

    So a person *hears* which candidate onset of a note is right: the same excerpt is played once
    per candidate, with a short tone burst mixed in where that candidate puts the onset (a click
    that lands on the note's attack merges with it; one early or late is heard apart).

    Parameters
    ----------
    y : array_like of float, shape (n,)
        The mono recording.
    sr : int
        Its sample rate in Hz.
    times_s : sequence of float
        The candidate times (s), at least one.
    before_s, after_s : float
        Context played before and after the span of all candidates (s, >= 0).
    gap_s : float
        Silence between two excerpts (s, >= 0).
    click_hz, click_s : float
        Pitch (Hz) and length (s) of the click, an exponentially decaying sine.

    Returns
    -------
    signal : ndarray of float32, shape (m,)
        The excerpts one after the other, each ``before_s + span + after_s`` long, scaled into [-1, 1].
    click_at_s : ndarray of float, shape (len(times_s),)
        Where each candidate's click sounds in ``signal`` (s).
    """
    check_int(sr, "sr", min_val=1, max_val=MAX_SAMPLE_RATE, what="a sample rate in Hz")
    a = np.asarray(y, dtype=np.float64)
    if a.ndim != 1 or a.shape[0] == 0 or not np.all(np.isfinite(a)):
        raise ParameterError(f"y: expected a finite mono signal of shape (n,), got shape {a.shape}")
    t = np.asarray(times_s, dtype=np.float64).ravel()
    if t.size == 0 or not np.all(np.isfinite(t)):
        raise ParameterError("times_s: expected at least one finite time in seconds")
    for name, v in (("before_s", before_s), ("after_s", after_s), ("gap_s", gap_s), ("click_s", click_s),
                    ("click_hz", click_hz)):
        if not np.isfinite(v) or v < 0 or (name in ("click_s", "click_hz") and v == 0):
            raise ParameterError(f"{name}: expected a finite number {'> 0' if name.startswith('click') else '>= 0'}, "
                                 f"got {v!r}")
    n = a.shape[0]
    start = int(np.clip(np.floor((t.min() - before_s) * sr), 0, n - 1))
    stop = int(np.clip(np.ceil((t.max() + after_s) * sr), start + 1, n))
    excerpt = a[start:stop]
    peak = float(np.max(np.abs(excerpt))) or 1.0
    k = np.arange(int(round(click_s * sr)))
    click = np.sin(2 * np.pi * click_hz * k / sr) * np.exp(-k / (0.25 * max(k.size, 1)))
    gap = np.zeros(int(round(gap_s * sr)))
    pieces, click_at = [], []
    offset = 0
    for ti in t:
        part = 0.7 * excerpt / peak
        at = int(np.clip(round(ti * sr) - start, 0, part.shape[0] - 1))
        end = min(at + click.shape[0], part.shape[0])
        part = part.copy()
        part[at:end] += 0.5 * click[:end - at]
        pieces += [part, gap]
        click_at.append((offset + at) / sr)
        offset += part.shape[0] + gap.shape[0]
    signal = np.concatenate(pieces[:-1])
    return np.clip(signal, -1.0, 1.0).astype(np.float32), np.asarray(click_at)
