"""From a project's item records to the data the engine works on.

:class:`ItemLoader` knows which files make which items (``describe``) and
loads an item's data lazily with a bounded cache (``load``): a 30-profile
``profiles.csv`` is parsed once for all its chromosomes, and an audio file
is decoded once for its spectrogram and its features.
"""

from __future__ import annotations

import os
import threading
from collections import OrderedDict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional

import numpy as np

from .exceptions import DataFormatError
from .types import MidiScore, Sequence

__all__ = ["ItemSpec", "ItemData", "ItemLoader", "AUDIO_SR", "AUDIO_HOP"]

AUDIO_SR = 22050
#: hop of the audio frames: 512 samples at 22.05 kHz = 23.2 ms per frame
AUDIO_HOP = 512
AUDIO_SUFFIXES = (".wav", ".flac", ".ogg", ".mp3", ".m4a", ".aiff", ".aif")


@dataclass(frozen=True)
class ItemSpec:
    """What an imported file contributes: one item each."""

    name: str
    kind: str
    task: str
    meta: dict = field(default_factory=dict)


@dataclass(frozen=True, eq=False)
class ItemData:
    """The loaded data of one item.

    Attributes
    ----------
    record : the session's item record
    sequence : Sequence
        What the views draw and the segmentation task works on: logratio (T, 1)
        in bp for aCGH; audio feature frames (T, p) with times in s for audio.
    score : MidiScore or None
    audio_path : str or None
    spectrogram : tuple or None
        ``(image (F, T) float32 dB, times_s (T,), freqs_hz (F,))``.
    chroma : ndarray (T, 12) or None
        Frame chroma for alignment to a score.
    frame_rate : float or None
        Frames per second of audio features.
    """

    record: object
    sequence: Sequence
    score: Optional[MidiScore] = None
    audio_path: Optional[str] = None
    spectrogram: Optional[tuple] = None
    chroma: Optional[np.ndarray] = None
    frame_rate: Optional[float] = None


def _file_key(path: Path):
    st = os.stat(path)
    return (str(path.resolve()), st.st_mtime_ns, st.st_size)


class ItemLoader:
    """Describe files as items and load item data with an LRU cache.

    Parameters
    ----------
    max_items : int
        How many loaded items to keep in memory.
    """

    def __init__(self, max_items: int = 64, cache_dir=None):
        from .features.audio import FeatureCache
        self._features = FeatureCache(max_items=16, directory=cache_dir)
        self._cache_dir = Path(cache_dir) if cache_dir is not None else None
        self._lock = threading.RLock()
        self._items: OrderedDict = OrderedDict()
        self._profiles: OrderedDict = OrderedDict()
        self._max_items = max_items

    # -------------------------------------------------------------- describe
    def describe(self, path: Path, *, score_path: Optional[Path] = None, columns: Optional[str] = None) -> list:
        """The items a file makes, without keeping its data.

        ``columns`` (``--columns`` text) names the columns of a copy-number table; it is kept in the items'
        meta so that the table is read the same way when the project is opened again.
        """
        path = Path(path)
        if not path.exists():
            raise DataFormatError("no such file; check the path", path=str(path))
        suffix = "".join(path.suffixes[-2:]).lower() if path.suffix.lower() == ".gz" else path.suffix.lower()
        if suffix in AUDIO_SUFFIXES:
            return [self._describe_audio(path, score_path)]
        if suffix in (".csv", ".csv.gz", ".tsv", ".txt", ".tsv.gz", ".bedgraph", ".bedgraph.gz", ".bg", ".bg.gz"):
            # a column naming says the file is a copy-number table; a position unit alone does not
            names_columns = columns is not None and not columns.startswith("unit=")
            if names_columns or self._looks_like_profiles(path):
                extra = {} if columns is None else {"columns": columns}
                return [ItemSpec(seq.name, "cgh", "segmentation",
                                 {"profile_id": seq.meta.get("profile_id"), "chromosome": seq.group,
                                  "group": seq.group, "n_samples": seq.n_samples, "sequence_name": seq.name,
                                  **extra})
                        for seq in self._read_profiles(path, columns).values()]
            from .io.series_csv import read_series
            seq = read_series(path)
            return [ItemSpec(path.stem, "series", "segmentation", {"n_samples": seq.n_samples})]
        raise DataFormatError(f"unsupported file type {suffix!r}; expected an aCGH profiles CSV, a CSV/TSV "
                              f"series, or audio ({', '.join(AUDIO_SUFFIXES)}) with an optional MIDI score",
                              path=str(path))

    def _describe_audio(self, path: Path, score_path: Optional[Path]) -> ItemSpec:
        from .io.audio import audio_info
        info = audio_info(path)
        duration = float(info.duration_s)
        n_frames = 1 + int(round(duration * AUDIO_SR)) // AUDIO_HOP
        meta = {"n_samples": n_frames, "sr": AUDIO_SR, "hop": AUDIO_HOP, "duration_s": duration}
        if score_path is not None:
            from .io.musicxml import read_score
            score = read_score(score_path)  # validate now: a broken score is refused at import
            meta.update(score_path=str(Path(score_path).resolve()), n_events=score.n_events)
            return ItemSpec(path.stem, "audio", "alignment", meta)
        return ItemSpec(path.stem, "audio", "segmentation", meta)

    @staticmethod
    def _looks_like_profiles(path: Path) -> bool:
        import gzip
        opener = gzip.open if path.suffix.lower() == ".gz" else open
        try:
            with opener(path, "rt", encoding="utf-8", errors="replace") as fh:
                header = fh.readline()
        except OSError as exc:
            raise DataFormatError(f"cannot read the file ({exc})", path=str(path)) from None
        from .io.cgh_layouts import is_bedgraph, looks_like_profile_header
        # a table with aCGH columns but one of them missing goes to the profiles reader, whose error names
        # the missing column (read as a generic series it became a meaningless one-column sequence)
        return is_bedgraph(path, header) or looks_like_profile_header(header)

    def _read_profiles(self, path: Path, columns: Optional[str] = None) -> dict:
        key = _file_key(path) + (() if columns is None else (columns,))
        with self._lock:
            if key in self._profiles:
                self._profiles.move_to_end(key)
                return self._profiles[key]
        seqs = self._cached_profiles(key)
        if seqs is None:
            from .io.cgh import read_profiles
            seqs = {s.name: s for s in read_profiles(path, columns=columns)}
            self._store_profiles(key, seqs)
        with self._lock:
            self._profiles[key] = seqs
            while len(self._profiles) > 4:
                self._profiles.popitem(last=False)
        return seqs

    # --------------------------------------------------- parsed profiles on disk
    # A project reopens on the item it showed last: reading that chromosome back from the arrays
    # parsed at import keeps the CSV parser (and its compiled kernels) off the path to the first
    # drawn item. The file's path, size and modification time name the copy, so an edited file is
    # parsed afresh.
    def _profiles_path(self, key) -> Optional[Path]:
        if self._cache_dir is None:
            return None
        import hashlib
        return self._cache_dir / f"profiles-{hashlib.sha1(repr(key).encode()).hexdigest()[:20]}.npz"

    def _cached_profiles(self, key) -> Optional[dict]:
        path = self._profiles_path(key)
        if path is None or not path.exists():
            return None
        import json
        try:
            with np.load(path, allow_pickle=False) as z:
                index = json.loads(str(z["index"]))
                return {row["name"]: Sequence(values=z[f"v{i}"], positions=z[f"p{i}"], name=row["name"],
                                              units=row["units"], group=row["group"], kind=row["kind"],
                                              feature_names=tuple(row["feature_names"]), meta=row["meta"])
                        for i, row in enumerate(index)}
        except Exception:  # an unreadable copy is only a missed shortcut: parse the file instead
            return None

    def _store_profiles(self, key, seqs: dict) -> None:
        path = self._profiles_path(key)
        if path is None:
            return
        import json
        try:
            index = json.dumps([{"name": s.name, "units": s.units, "group": s.group, "kind": s.kind,
                                 "feature_names": list(s.feature_names), "meta": s.meta} for s in seqs.values()])
            arrays = {}
            for i, s in enumerate(seqs.values()):
                arrays[f"v{i}"], arrays[f"p{i}"] = s.values, s.positions
            path.parent.mkdir(parents=True, exist_ok=True)
            tmp = path.with_name(path.name + f".tmp{os.getpid()}-{threading.get_ident()}")
            with open(tmp, "wb") as fh:
                np.savez(fh, index=np.array(index), **arrays)
            os.replace(tmp, path)
        except (OSError, TypeError, ValueError):  # read-only folder, odd metadata: keep working without it
            return

    # ------------------------------------------------------------------ load
    def load(self, record) -> ItemData:
        """Load (or fetch from cache) the data of an item record."""
        with self._lock:
            if record.id in self._items:
                self._items.move_to_end(record.id)
                return self._items[record.id]
        path = Path(record.source_path)
        if not path.exists():
            raise DataFormatError(f"the source of item {record.name!r} is missing; relocate it "
                                  "(File > Relocate) or restore the file", path=str(path))
        if record.kind == "cgh":
            seqs = self._read_profiles(path, (record.meta or {}).get("columns"))
            name = (record.meta or {}).get("sequence_name", record.name)
            if name not in seqs:
                raise DataFormatError(f"sequence {name!r} is no longer in the file; relocate the item",
                                      path=str(path))
            data = ItemData(record=record, sequence=seqs[name])
        elif record.kind == "audio":
            data = self._load_audio(record, path)
        else:
            from .io.series_csv import read_series
            data = ItemData(record=record, sequence=read_series(path))
        with self._lock:
            self._items[record.id] = data
            while len(self._items) > self._max_items:
                self._items.popitem(last=False)
        return data

    def _load_audio(self, record, path: Path) -> ItemData:
        from .features.audio import compute_features
        from .io.audio import load_audio
        y, sr = load_audio(path, sr=AUDIO_SR)
        # features are cached next to the project, keyed by the file's content hash and the settings
        opts = dict(cache=self._features, source_hash=record.source_hash, hop_length=AUDIO_HOP)
        mel = compute_features(y, sr, "log_mel", n_mels=96, **opts)
        cep = compute_features(y, sr, "mfcc", n_mfcc=13, deltas=True, **opts)
        chro = compute_features(y, sr, "chroma", **opts)
        T = min(mel.values.shape[0], cep.values.shape[0], chro.values.shape[0])
        times = np.asarray(mel.times[:T])
        # segmentation features: MFCCs with deltas and chroma, standardised per feature
        feats = np.hstack([cep.values[:T], chro.values[:T]])
        scale = feats.std(axis=0)
        feats = (feats - feats.mean(axis=0)) / np.where(scale > 1e-9, scale, 1.0)
        freqs = _mel_frequencies(96, sr)
        score = None
        score_path = (record.meta or {}).get("score_path")
        if score_path:
            from .io.musicxml import read_score
            score = read_score(score_path)
        seq = Sequence(feats, positions=times, name=record.name, units="s", kind="audio",
                       feature_names=tuple(cep.names) + tuple(chro.names), meta={"source": str(path)})
        image = np.ascontiguousarray(mel.values[:T].T, dtype=np.float32)
        return ItemData(record=record, sequence=seq, score=score, audio_path=str(path),
                        spectrogram=(image, times, freqs), chroma=np.asarray(chro.values[:T]),
                        frame_rate=sr / AUDIO_HOP)

    def forget(self, item_id: str):
        with self._lock:
            self._items.pop(item_id, None)


def _mel_frequencies(n_mels: int, sr: int) -> np.ndarray:
    """Centre frequencies (Hz) of ``n_mels`` mel bands from 0 to sr/2 (Slaney mel scale)."""
    def hz_to_mel(f):
        f = np.asarray(f, dtype=float)
        lin = f / (200.0 / 3)
        log = 15.0 + np.log(np.maximum(f, 1e-9) / 1000.0) / (np.log(6.4) / 27.0)
        return np.where(f >= 1000.0, log, lin)

    def mel_to_hz(m):
        m = np.asarray(m, dtype=float)
        lin = m * (200.0 / 3)
        log = 1000.0 * np.exp((np.log(6.4) / 27.0) * (m - 15.0))
        return np.where(m >= 15.0, log, lin)

    mels = np.linspace(hz_to_mel(0.0), hz_to_mel(sr / 2.0), n_mels + 2)[1:-1]
    return mel_to_hz(mels)
