"""Marginalia: label the structure of sequences cheaply.

The engine and its public API. ``import marginalia as mg`` gives:

* readers and writers of the formats users have: :func:`read_profiles`, :func:`read_annotations`,
  :func:`write_segments`, :func:`write_bedgraph` (copy number), :func:`read_midi`, :func:`write_midi`,
  :func:`load_audio` (music), :func:`read_audacity_labels` and the other label tracks;
* learners with one verb convention, ``fit(...)`` then ``predict(...)``: :class:`CghSegmenter` (the
  copy-number recipe, its stages set by :class:`LearningSettings`, :class:`WindowSettings`,
  :class:`PlatformSettings`, :class:`LawSettings` and :class:`PruningSettings`), :class:`ScoreAligner`
  (audio-to-score alignment), :class:`SyncAligner` (audio-to-audio alignment with a learned DTW cost),
  :class:`SSVM`;
* :func:`load_model` / :func:`save_model` for the model files ``marginalia-cli train`` writes;
* :func:`region_errors`, the labelled-region error (false positives and negatives) of a segmentation;
* the exact decoders a change-point or DTW user calls directly: :func:`segment_penalized`,
  :func:`segment_fixed_k`, :func:`segment_second_best`, :func:`dtw`, :func:`dtw_second_best`;
* the data and label types (:class:`Sequence`, :class:`MidiScore`, :class:`Segmentation`,
  :class:`RegionLabel`, ...) and the project facade :class:`Engine` that the app and the CLI use.

Names are loaded on first use, so ``import marginalia`` stays fast and imports neither Qt nor Dask.
Everything not listed in ``__all__`` is private by convention and may change between releases.
"""

from __future__ import annotations

import importlib

from ._version import library_version as _library_version

__version__ = _library_version()

#: public name -> module (relative to this package) that defines it
_API = {
    # copy-number files
    "read_profiles": "io.cgh", "read_annotations": "io.cgh", "write_profiles": "io.cgh",
    "write_annotations": "io.cgh", "write_segments": "io.cgh", "write_bedgraph": "io.cgh",
    # music files
    "read_midi": "io.midi", "write_midi": "io.midi", "load_audio": "io.audio",
    "read_audacity_labels": "io.labels_audio", "write_audacity_labels": "io.labels_audio",
    "read_sonic_visualiser_csv": "io.labels_audio", "write_sonic_visualiser_csv": "io.labels_audio",
    "read_textgrid": "io.labels_audio", "write_textgrid": "io.labels_audio", "LabelTrack": "io.labels_audio",
    # learners and model files
    "CghSegmenter": "cgh.recipe", "ScoreAligner": "align", "SyncAligner": "sync", "SSVM": "learners.ssvm",
    "LearningSettings": "cgh.settings", "WindowSettings": "cgh.settings", "PlatformSettings": "cgh.settings",
    "LawSettings": "cgh.settings", "PruningSettings": "cgh.settings",
    "load_model": "models.files", "save_model": "models.files", "TrainedModel": "models.files",
    # the labelled-region error every accuracy figure counts
    "region_errors": "metrics", "RegionErrors": "metrics",
    # decoders
    "segment_penalized": "decoders.segmentation", "segment_fixed_k": "decoders.segmentation",
    "segment_second_best": "decoders.segmentation", "dtw": "decoders.warping",
    "dtw_second_best": "decoders.warping",
    # data and label types
    "Sequence": "types", "MidiScore": "types", "Score": "types", "Segmentation": "types", "Alignment": "types",
    "Warping": "types",
    "RegionKind": "types", "RegionLabel": "types", "BoundaryLabel": "types", "AnchorLabel": "types",
    "EventSpanLabel": "types", "SyncAnchorLabel": "types", "Prediction": "types",
    # the project facade and errors
    "Engine": "engine", "MarginaliaError": "exceptions", "DataFormatError": "exceptions",
    "ParameterError": "exceptions", "InfeasibleLabelsError": "exceptions", "NotFittedError": "exceptions",
}

#: old names still importable (with a DeprecationWarning) but no longer documented
_DEPRECATED = {"Score"}

__all__ = sorted([*(name for name in _API if name not in _DEPRECATED), "demo_file", "__version__"])


def demo_file(name: str) -> str:
    """Path of a file of the embedded demo: ``"profiles.csv"``, ``"annotations.csv"``, ``"melody.wav"``,
    ``"melody.mid"``.

    Raises
    ------
    DataFormatError
        No such demo file (the message lists the files there are).
    """
    from . import resources
    from .exceptions import DataFormatError

    path = resources.path("demo", name)
    if not path.is_file():
        there = sorted(p.name for p in resources.path("demo").iterdir() if not p.name.endswith(".py"))
        raise DataFormatError(f"no demo file {name!r}; the demo has {', '.join(there)}", path=str(path))
    return str(path)


def __getattr__(name: str):
    module = _API.get(name)
    if module is None:
        raise AttributeError(f"module 'marginalia' has no attribute {name!r}")
    value = getattr(importlib.import_module(f".{module}", __name__), name)
    globals()[name] = value
    return value


def __dir__():
    return sorted(set(globals()) | set(__all__))
