"""Audio features as (T, p) matrices with frame times, plus a small cache.

Every extractor takes a mono signal ``y`` (float, shape (n,)) and its sample
rate, and returns a :class:`FeatureMatrix` whose ``values`` are frames × features
(librosa returns features × frames; we transpose once here).
"""

from __future__ import annotations

import collections
import contextlib
import hashlib
import json
import os
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Optional

import librosa
import numpy as np

from ..checks import check_audio, check_int
from ..exceptions import DataFormatError, ParameterError

__all__ = [
    "FeatureMatrix",
    "log_mel",
    "mfcc",
    "chroma",
    "onset_strength",
    "frame_times",
    "compute_features",
    "FeatureCache",
    "signal_hash",
    "FEATURE_KINDS",
]


@dataclass(frozen=True, eq=False)
class FeatureMatrix:
    """Frames × features, with the time of each frame.

    Attributes
    ----------
    values : ndarray, shape (T, p)
    times : ndarray, shape (T,)
        Centre time of each frame in seconds.
    names : tuple of str, length p
    settings : dict
        The extraction settings (kind, sr, hop_length, ...), for provenance.
    """

    values: np.ndarray
    times: np.ndarray
    names: tuple
    settings: dict


def _check_hop(hop_length) -> int:
    return check_int(hop_length, "hop_length", min_val=1, what="an integer number of samples")


def frame_times(n_frames, sr, hop_length) -> np.ndarray:
    """Times in seconds of frames ``0..n_frames-1`` (``frame * hop_length / sr``).

    Returns
    -------
    times : ndarray, shape (n_frames,)
    """
    if int(n_frames) < 0:
        raise ParameterError(f"n_frames: expected >= 0, got {n_frames!r}")
    return librosa.frames_to_time(np.arange(int(n_frames)), sr=int(sr), hop_length=_check_hop(hop_length))


def _pack(values_pf, sr, hop, names, settings) -> FeatureMatrix:
    values = np.ascontiguousarray(np.asarray(values_pf, dtype=np.float64).T)
    times = frame_times(values.shape[0], sr, hop)
    values.setflags(write=False)
    times.setflags(write=False)
    return FeatureMatrix(values, times, tuple(names), dict(settings))


def _at_least_one_window(y: np.ndarray, n_fft: int, hop: int) -> tuple:
    """``(signal, frames)``: a recording shorter than one analysis window padded with silence to one window (librosa
    warns and pads it itself otherwise), and the frame count of the recording as it was, to cut the result to."""
    frames = 1 + len(y) // hop
    if len(y) < n_fft:
        y = np.pad(y, (0, n_fft - len(y)))
    return y, frames


def log_mel(y, sr, *, n_mels=64, hop_length=512, n_fft=2048, fmin=0.0, fmax=None) -> FeatureMatrix:
    """Log-power mel spectrogram in dB (ref = max), shape (T, n_mels)."""
    y, sr = check_audio(y, sr)
    hop = _check_hop(hop_length)
    check_int(n_mels, "n_mels", min_val=1)
    y, frames = _at_least_one_window(y, int(n_fft), hop)
    S = librosa.feature.melspectrogram(y=y, sr=sr, n_fft=int(n_fft), hop_length=hop, n_mels=int(n_mels),
                                       fmin=fmin, fmax=fmax)[:, :frames]
    db = librosa.power_to_db(S, ref=np.max)
    settings = dict(kind="log_mel", sr=sr, hop_length=hop, n_mels=int(n_mels), n_fft=int(n_fft), fmin=fmin, fmax=fmax)
    return _pack(db, sr, hop, [f"mel{k}" for k in range(db.shape[0])], settings)


def mfcc(y, sr, *, n_mfcc=13, deltas=True, hop_length=512, n_fft=2048, n_mels=64) -> FeatureMatrix:
    """MFCC (and first/second deltas when ``deltas``), shape (T, n_mfcc * (3 if deltas else 1))."""
    y, sr = check_audio(y, sr)
    hop = _check_hop(hop_length)
    check_int(n_mfcc, "n_mfcc", min_val=1)
    y, frames = _at_least_one_window(y, int(n_fft), hop)
    M = librosa.feature.mfcc(y=y, sr=sr, n_mfcc=int(n_mfcc), hop_length=hop, n_fft=int(n_fft),
                             n_mels=int(n_mels))[:, :frames]
    names = [f"mfcc{k}" for k in range(M.shape[0])]
    blocks = [M]
    if deltas:
        # delta needs an odd window no longer than the signal
        width = min(9, M.shape[1] if M.shape[1] % 2 else M.shape[1] - 1)
        if width >= 3:
            d1 = librosa.feature.delta(M, width=width, order=1)
            d2 = librosa.feature.delta(M, width=width, order=2)
        else:
            d1 = np.zeros_like(M)
            d2 = np.zeros_like(M)
        blocks += [d1, d2]
        names += [f"d_mfcc{k}" for k in range(M.shape[0])] + [f"dd_mfcc{k}" for k in range(M.shape[0])]
    settings = dict(kind="mfcc", sr=sr, hop_length=hop, n_mfcc=int(n_mfcc), deltas=bool(deltas), n_fft=int(n_fft),
                    n_mels=int(n_mels))
    return _pack(np.vstack(blocks), sr, hop, names, settings)


_PITCH_CLASSES = ("C", "C#", "D", "D#", "E", "F", "F#", "G", "G#", "A", "A#", "B")


def chroma(y, sr, *, hop_length=512, norm=2, bins_per_octave=36) -> FeatureMatrix:
    """Constant-Q chroma, shape (T, 12); column 0 is pitch class C."""
    y, sr = check_audio(y, sr)
    hop = _check_hop(hop_length)
    fmin = librosa.note_to_hz("C1")
    # the CQT's highest filter must stay below Nyquist: fewer octaves at low sample rates
    n_octaves = int(max(1, min(7, np.floor(np.log2(0.45 * sr / fmin)))))
    C = librosa.feature.chroma_cqt(y=y, sr=sr, hop_length=hop, norm=norm, bins_per_octave=int(bins_per_octave),
                                   fmin=fmin, n_octaves=n_octaves)
    settings = dict(kind="chroma", sr=sr, hop_length=hop, norm=norm, bins_per_octave=int(bins_per_octave))
    return _pack(C, sr, hop, _PITCH_CLASSES, settings)


def onset_strength(y, sr, *, hop_length=512, n_mels=128) -> FeatureMatrix:
    """Spectral-flux onset strength envelope, shape (T, 1)."""
    y, sr = check_audio(y, sr)
    hop = _check_hop(hop_length)
    env = librosa.onset.onset_strength(y=y, sr=sr, hop_length=hop, n_mels=int(n_mels))
    settings = dict(kind="onset_strength", sr=sr, hop_length=hop, n_mels=int(n_mels))
    return _pack(env[None, :], sr, hop, ["onset_strength"], settings)


FEATURE_KINDS = {"log_mel": log_mel, "mfcc": mfcc, "chroma": chroma, "onset_strength": onset_strength}


def signal_hash(y, sr) -> str:
    """SHA-1 of the samples and sample rate: a cache key for a decoded signal."""
    arr = np.ascontiguousarray(np.asarray(y, dtype=np.float32))
    h = hashlib.sha1(arr.tobytes())
    h.update(str(int(sr)).encode())
    return h.hexdigest()


def _settings_key(kind, settings) -> str:
    return json.dumps({"kind": kind, **settings}, sort_keys=True, default=str)


class FeatureCache:
    """In-memory LRU of feature matrices keyed by (source hash, kind, settings), optionally on disk.

    Parameters
    ----------
    max_items : int, default 32
        Matrices kept in memory (least recently used dropped first).
    directory : str or path, optional
        When given, matrices are also stored as ``<key>.npz`` there and read
        back on a memory miss (e.g. after a restart).

    Thread-safe: the app computes features on worker threads.
    """

    def __init__(self, max_items=32, directory=None):
        self.max_items = check_int(max_items, "max_items", min_val=1)
        self.directory = None if directory is None else os.fspath(directory)
        self._items: "collections.OrderedDict[str, FeatureMatrix]" = collections.OrderedDict()
        self._lock = threading.Lock()
        self.hits = 0
        self.misses = 0

    @staticmethod
    def key(source_hash: str, kind: str, settings: dict) -> str:
        """Cache key (a hex digest) of one extraction."""
        return hashlib.sha1((str(source_hash) + "|" + _settings_key(kind, settings)).encode()).hexdigest()

    def __len__(self):
        return len(self._items)

    def get(self, key: str) -> Optional[FeatureMatrix]:
        with self._lock:
            if key in self._items:
                self._items.move_to_end(key)
                self.hits += 1
                return self._items[key]
        fm = self._read_disk(key)
        with self._lock:
            if fm is None:
                self.misses += 1
                return None
            self.hits += 1
            self._put_locked(key, fm)
        return fm

    def put(self, key: str, fm: FeatureMatrix) -> None:
        with self._lock:
            self._put_locked(key, fm)
        if self.directory is not None:
            path = os.path.join(self.directory, key + ".npz")
            # one temporary name per writer: two threads computing the same item's features (a retrain
            # and a question ranking) each rename their own copy, the second replacing the first
            tmp = f"{path}.{os.getpid()}-{threading.get_ident()}.tmp.npz"
            try:
                os.makedirs(self.directory, exist_ok=True)
                np.savez(tmp, values=fm.values, times=fm.times, names=np.array(fm.names, dtype=str),
                         settings=np.array(json.dumps(fm.settings, default=str)))
                os.replace(tmp, path)
            except OSError:   # the disk cache only saves time: a read-only or full disk must not stop the work
                with contextlib.suppress(OSError):
                    os.remove(tmp)

    def _put_locked(self, key, fm):
        self._items[key] = fm
        self._items.move_to_end(key)
        while len(self._items) > self.max_items:
            self._items.popitem(last=False)

    def _read_disk(self, key) -> Optional[FeatureMatrix]:
        if self.directory is None:
            return None
        path = os.path.join(self.directory, key + ".npz")
        if not os.path.exists(path):
            return None
        try:
            with np.load(path, allow_pickle=False) as z:
                values, times = z["values"], z["times"]
                names = tuple(str(n) for n in z["names"])
                settings = json.loads(str(z["settings"]))
        except Exception as exc:  # a damaged cache file is recomputed, never trusted
            raise DataFormatError(f"feature cache file is damaged ({exc}); delete it to recompute",
                                  path=path) from None
        values.setflags(write=False)
        times.setflags(write=False)
        return FeatureMatrix(values, times, names, settings)

    def clear(self) -> None:
        with self._lock:
            self._items.clear()


def compute_features(y, sr, kind="log_mel", *, cache: Optional[FeatureCache] = None, source_hash=None,
                     **settings) -> FeatureMatrix:
    """Compute (or fetch from ``cache``) one kind of feature.

    Parameters
    ----------
    y : array_like, shape (n,)
    sr : int
    kind : {"log_mel", "mfcc", "chroma", "onset_strength"}
    cache : FeatureCache, optional
    source_hash : str, optional
        Identity of the signal (e.g. the file's content hash); computed from
        the samples when omitted.
    **settings
        Keyword options of the extractor.

    Returns
    -------
    FeatureMatrix
    """
    if kind not in FEATURE_KINDS:
        raise ParameterError(f"kind: expected one of {sorted(FEATURE_KINDS)}, got {kind!r}")
    fn: Callable = FEATURE_KINDS[kind]
    if cache is None:
        return fn(y, sr, **settings)
    key = cache.key(source_hash or signal_hash(y, sr), kind, {"sr": int(sr), **settings})
    hit = cache.get(key)
    if hit is not None:
        return hit
    fm = fn(y, sr, **settings)
    cache.put(key, fm)
    return fm
