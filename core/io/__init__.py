"""File formats: one module per format. The only package (with ``marginalia.features``) importing the format
libraries (librosa, soundfile, mido; partitura for MusicXML, lazily, from the ``[music]`` extra)."""

from .audio import AudioInfo, audio_info, clear_audio_cache, load_audio, write_wav
from .cgh import (
    CghRegionLabel,
    DroppedRegionsWarning,
    DuplicateAnnotationsWarning,
    UnmatchedAnnotationsWarning,
    UnsortedPositionsWarning,
    UnterminatedTableWarning,
    read_annotations,
    read_profiles,
    write_annotations,
    write_bedgraph,
    write_breaks,
    write_profiles,
    write_seg_file,
    write_segments,
)
from .cgh_layouts import PositionUnitWarning
from .jams_files import read_jams, write_jams_alignment, write_jams_segments
from .labels_audio import (
    LabelTrack,
    read_audacity_labels,
    read_sonic_visualiser_csv,
    read_textgrid,
    write_audacity_labels,
    write_sonic_visualiser_csv,
    write_textgrid,
)
from .midi import read_alignment_csv, read_midi, warp_score_times, write_alignment_csv, write_midi
from .musicxml import RepeatsWarning, read_musicxml, read_notation, read_score
from .segments import read_segment_table
from .series_csv import read_series, write_series
from .sniff import FILE_KINDS, sniff_kind

__all__ = [
    "FILE_KINDS",
    "sniff_kind",
    "read_series",
    "write_series",
    "LabelTrack",
    "read_audacity_labels",
    "read_sonic_visualiser_csv",
    "read_textgrid",
    "write_audacity_labels",
    "write_sonic_visualiser_csv",
    "write_textgrid",
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
    "DroppedRegionsWarning",
    "DuplicateAnnotationsWarning",
    "UnmatchedAnnotationsWarning",
    "UnsortedPositionsWarning",
    "UnterminatedTableWarning",
    "read_annotations",
    "read_profiles",
    "write_annotations",
    "write_bedgraph",
    "write_breaks",
    "write_profiles",
    "write_segments",
    "write_seg_file",
    "read_segment_table",
    "read_jams",
    "write_jams_segments",
    "write_jams_alignment",
    "read_musicxml",
    "read_notation",
    "read_score",
    "PositionUnitWarning",
    "RepeatsWarning",
]
