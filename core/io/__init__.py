"""File formats: one module per format. The only package (with ``core.features``) importing librosa/soundfile/mido."""

from .audio import AudioInfo, audio_info, clear_audio_cache, load_audio, write_wav
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
from .midi import read_alignment_csv, read_midi, warp_score_times, write_alignment_csv, write_midi

__all__ = [
    "AudioInfo",
    "audio_info",
    "clear_audio_cache",
    "load_audio",
    "write_wav",
    "read_alignment_csv",
    "read_midi",
    "warp_score_times",
    "write_alignment_csv",
    "write_midi",
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
