"""File formats: one module per format. The only package (with ``core.features``) importing librosa/soundfile/mido."""

from .cgh import (
    CghRegionLabel,
    UnsortedPositionsWarning,
    read_annotations,
    read_profiles,
    write_annotations,
    write_bedgraph,
    write_breaks,
    write_profiles,
    write_segments,
)

__all__ = [
    "CghRegionLabel",
    "UnsortedPositionsWarning",
    "read_annotations",
    "read_profiles",
    "write_annotations",
    "write_bedgraph",
    "write_breaks",
    "write_profiles",
    "write_segments",
]
