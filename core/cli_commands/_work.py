"""Per-item work of ``predict``, ``evaluate`` and ``batch``: run on a worker, read its own input.

Every function here is module-level (picklable) and takes only paths and keys,
so a Dask worker reads the data itself. Parsed files and loaded models are
cached per process (keyed by path, size and modification time), so a worker
parses a 100 000-probe profile table once for all the sequences it handles.

The single-process commands call the same functions one item after another,
so a batch and a plain run write byte-identical files.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from pathlib import Path

import numpy as np

from ..atomic import publish
from ..batch import BatchTask, atomic_write_text, safe_key
from ..exceptions import DataFormatError

__all__ = [
    "profile_keys",
    "profile_tasks",
    "predict_profile",
    "evaluate_profile",
    "predict_audio",
    "merge_profile_outputs",
    "cached_profiles",
    "cached_annotations",
    "publish",
    "warm_imports",
    "PARTS_DIR",
]

PARTS_DIR = "parts"
BREAKS_HEADER = "profile.id,chromosome,position\n"

_lock = threading.Lock()
_file_locks: dict = {}
_profiles: OrderedDict = OrderedDict()
_annotations: OrderedDict = OrderedDict()
_MAX_FILES = 2


def _file_key(path) -> tuple:
    p = Path(path).resolve()
    try:
        st = p.stat()
    except OSError as exc:
        raise DataFormatError(f"cannot read the file ({exc.strerror or exc})", path=str(path)) from None
    return str(p), st.st_size, st.st_mtime_ns


def _cached(cache: OrderedDict, key: tuple, load):
    with _lock:
        if key in cache:
            cache.move_to_end(key)
            return cache[key]
        file_lock = _file_locks.setdefault(key, threading.Lock())
    with file_lock:  # two threads of one worker asking for the same file parse it once
        with _lock:
            if key in cache:
                return cache[key]
        value = load()
        with _lock:
            cache[key] = value
            while len(cache) > _MAX_FILES:
                cache.popitem(last=False)
            _file_locks.pop(key, None)
        return value


def cached_profiles(path, columns=None) -> dict:
    """``{sequence name: Sequence}`` of a profiles table, parsed once per process.

    ``columns`` is the table's column naming in ``--columns`` text (None: recognised from the header).
    """
    from ..io.cgh import read_profiles

    def load():
        # unsorted probes are sorted on reading and said once per file and process (the outputs follow
        # the sorted order, so the user must know the rows moved)
        return OrderedDict((s.name, s) for s in read_profiles(path, columns=columns))

    return _cached(_profiles, _file_key(path) + (columns,), load)


def cached_annotations(annotations_path, profiles_path, *, unknown_sequences: str = "skip", columns=None) -> dict:
    """``{sequence name: [RegionLabel, ...]}`` of an annotation table, parsed once per process.

    ``unknown_sequences="warn"`` (the driver's first read) warns about rows naming sequences that
    are not in the profiles; the workers' reads skip them quietly.
    """
    from ..io.cgh import read_annotations
    seqs = cached_profiles(profiles_path, columns)

    def load():
        out: dict = {}
        for lab in read_annotations(annotations_path, list(seqs.values()), unknown_sequences=unknown_sequences,
                                    empty_regions="warn"):
            out.setdefault(lab.item_id, []).append(lab)
        return out

    return _cached(_annotations, _file_key(annotations_path) + _file_key(profiles_path) + (columns,), load)


def warm_imports() -> str:
    """Import what the per-item functions need (on a worker, before the first item); returns the core version."""
    from ..features import hermite  # noqa: F401
    from ..io import cgh  # noqa: F401
    from ..models import files, persistence, segmentation  # noqa: F401
    return persistence.library_version()


def profile_keys(path, columns=None) -> list:
    """``[(profile id, chromosome), ...]`` of a profiles table, in file order."""
    return [(str(s.meta.get("profile_id")), str(s.meta.get("chromosome")))
            for s in cached_profiles(path, columns).values()]


def item_key(path, profile_id: str, chromosome: str) -> str:
    """The batch key of one sequence: ``"<file name>#<profile>:<chromosome>"``."""
    return f"{Path(path).name}#{profile_id}:{chromosome}"


def profile_tasks(model_path, model_sha, profiles_path, keys=None, annotations_path=None, columns=None) -> list:
    """One :class:`BatchTask` per sequence of a profiles table (or per given key).

    ``columns`` (``--columns`` text) goes to the workers with the task, so they read the table the same way.
    """
    keys = profile_keys(profiles_path, columns) if keys is None else keys
    seqs = cached_profiles(profiles_path, columns)
    tail = () if columns is None else (columns,)
    p = str(Path(profiles_path).resolve())
    extra = () if annotations_path is None else (str(Path(annotations_path).resolve()),)
    return [BatchTask(item_key(profiles_path, pid, chrom), (str(model_path), model_sha, p) + extra + (pid, chrom) + tail,
                      cost=float(getattr(seqs.get(f"{pid}:{chrom}"), "n_samples", 1)), inputs=(p,) + extra)
            for pid, chrom in keys]


def _sequence(profiles_path, profile_id, chromosome, columns=None):
    name = f"{profile_id}:{chromosome}"
    seqs = cached_profiles(profiles_path, columns)
    if name not in seqs:
        raise DataFormatError(f"no sequence for profile {profile_id!r}, chromosome {chromosome!r}",
                              path=str(profiles_path))
    return seqs[name]


def _segment(model_path, model_sha, seq):
    from ..models.files import load_model_cached
    model = load_model_cached(model_path, model_sha, task="segmentation")
    return model.segment(seq)


def predict_profile(model_path, model_sha, profiles_path, profile_id, chromosome, columns=None, *, out_dir) -> dict:
    """Segment one sequence; write its segments and breaks as part files under ``out_dir/parts``."""
    from ..io.cgh import write_breaks, write_segments
    seq = _sequence(profiles_path, profile_id, chromosome, columns)
    seg = _segment(model_path, model_sha, seq)
    parts = Path(out_dir) / PARTS_DIR
    parts.mkdir(parents=True, exist_ok=True)
    stem = safe_key(item_key(profiles_path, profile_id, chromosome))
    seg_name, brk_name = f"{PARTS_DIR}/{stem}.segments.csv", f"{PARTS_DIR}/{stem}.breaks.csv"
    publish(Path(out_dir) / seg_name, lambda p: write_segments(p, [(seq, seg)]))
    publish(Path(out_dir) / brk_name, lambda p: write_breaks(p, [(seq, seg)]))
    return {"files": [seg_name, brk_name], "n_samples": seq.n_samples, "n_changes": int(seg.n_segments - 1)}


def evaluate_profile(model_path, model_sha, profiles_path, annotations_path, profile_id, chromosome, columns=None, *,
                     out_dir) -> dict:
    """Segment one annotated sequence and count its label errors (nothing written but the marker)."""
    from ..metrics import region_errors
    seq = _sequence(profiles_path, profile_id, chromosome, columns)
    labels = cached_annotations(annotations_path, profiles_path, columns=columns).get(seq.name, [])
    seg = _segment(model_path, model_sha, seq)
    err = region_errors(labels, seg)
    return {"n_labels": err.n_labels, "fp": err.fp, "fn": err.fn, "n_changes": int(seg.n_segments - 1)}


def predict_audio(model_path, model_sha, audio_path, score_path, *, out_dir) -> dict:
    """Segment a recording (Audacity labels) or align it to its score (aligned MIDI and CSV)."""
    from ..models.files import load_model_cached
    from .align import load_recording, write_alignment_outputs
    model = load_model_cached(model_path, model_sha)
    rec = load_recording(audio_path, score_path)
    stem = Path(audio_path).stem
    if model.task == "alignment":
        if rec.score is None:
            raise DataFormatError("an alignment model needs the recording's MIDI score next to it (same file "
                                  "name, .mid)", path=str(audio_path))
        onset_times = model.align(rec)
        files = write_alignment_outputs(Path(out_dir), stem, rec.score, onset_times)
        return {"files": files, "n_events": int(rec.score.n_events)}
    from ..io.labels_audio import write_audacity_labels
    seg = model.segment(rec.features)
    times = np.asarray(rec.features.positions)
    bounds = times[seg.breakpoints]
    name = f"{stem}.txt"
    publish(Path(out_dir) / name, lambda p: write_audacity_labels(p, np.asarray(bounds, dtype=float)))
    return {"files": [name], "n_changes": int(seg.n_segments - 1)}


def merge_profile_outputs(out_dir, keys) -> list:
    """Gather the part files of ``keys`` (in that order) into the tables of the whole run.

    Writes ``segments.csv`` and ``breaks.csv`` (our tables), ``segments.seg`` (DNAcopy/IGV, for IGV,
    cBioPortal, GISTIC) and ``segments.bedGraph`` (genome browsers), all from the same segment rows.
    """
    from ..io.segments import bedgraph_text, read_segment_table, seg_text, segment_csv_text
    out_dir = Path(out_dir)
    rows = []
    breaks = [BREAKS_HEADER]
    for key in keys:
        part = out_dir / PARTS_DIR / f"{safe_key(key)}.segments.csv"
        if part.is_file():
            rows.extend(read_segment_table(part))
        part = out_dir / PARTS_DIR / f"{safe_key(key)}.breaks.csv"
        if part.is_file():
            breaks.extend(part.read_text(encoding="utf-8").splitlines(keepends=True)[1:])
    return [atomic_write_text(out_dir / "segments.csv", segment_csv_text(rows)),
            atomic_write_text(out_dir / "breaks.csv", "".join(breaks)),
            atomic_write_text(out_dir / "segments.seg", seg_text(rows)),
            atomic_write_text(out_dir / "segments.bedGraph", bedgraph_text(rows))]
