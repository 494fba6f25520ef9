"""Tell what kind of file a path holds, from its first bytes (and its extension as a last resort)."""

from __future__ import annotations

import gzip
import re

from ..exceptions import DataFormatError
from ._common import GZIP_MAGIC, existing_file, is_number_text
from .audio import AUDIO_EXTENSIONS

__all__ = ["FILE_KINDS", "sniff_kind"]

#: the kinds :func:`sniff_kind` returns
FILE_KINDS = ("cgh", "cgh_annotations", "audio", "midi", "series", "labels")

_AUDACITY_LINE = re.compile(r"^\s*[-+]?\d+(\.\d*)?([eE][-+]?\d+)?\t[-+]?\d+(\.\d*)?([eE][-+]?\d+)?(\t.*)?$")


def _head(path, n=8192) -> bytes:
    with open(path, "rb") as fh:
        head = fh.read(n)
    if head[:2] == GZIP_MAGIC:
        try:
            with gzip.open(path, "rb") as fh:
                head = fh.read(n)
        except (OSError, EOFError):
            head = b""
    return head


def _looks_like_series(lines: list) -> bool:
    """A delimited table whose data rows share one field count (>= 2) and hold at least one number each."""
    rows = lines[1:6] or lines[:1]
    for delim in (",", "\t", ";", "|"):
        counts = {line.count(delim) for line in [lines[0], *rows]}
        if len(counts) != 1 or counts == {0}:
            continue
        if all(any(is_number_text(f.strip().strip('"')) for f in line.split(delim)) for line in rows):
            return True
    return all(is_number_text(f) for line in rows for f in line.split())  # space-separated numbers


def sniff_kind(path) -> str:
    """Guess the kind of a data file.

    Parameters
    ----------
    path : str or path-like

    Returns
    -------
    kind : {"cgh", "cgh_annotations", "audio", "midi", "series", "labels"}
        ``cgh``: a probe table with ``profile.id`` and ``logratio`` columns; ``cgh_annotations``: a
        region table with ``min``, ``max``, ``annotation``; ``labels``: an Audacity label track or a
        Praat TextGrid; ``series``: any other delimited numeric table.

    Raises
    ------
    DataFormatError
        Empty file, or content of none of these kinds.
    """
    p = existing_file(path)
    head = _head(p)
    if not head:
        raise DataFormatError("the file is empty", path=str(p))
    if head[:2] in (b"\xff\xfe", b"\xfe\xff") and "ooTextFile" in head.decode("utf-16", errors="ignore"):
        return "labels"  # a Praat TextGrid saved as UTF-16
    if head[:4] == b"MThd":
        return "midi"
    if (head[:4] == b"RIFF" and head[8:12] == b"WAVE") or head[:4] in (b"fLaC", b"OggS", b"FORM") or \
            head[:3] == b"ID3" or (len(head) > 1 and head[0] == 0xFF and head[1] & 0xE0 == 0xE0):
        return "audio"
    try:
        text = head.decode("utf-8-sig", errors="strict")
    except UnicodeDecodeError as exc:
        if exc.start > len(head) - 4:  # a multi-byte character cut by the 8 KB window
            text = head[:exc.start].decode("utf-8-sig")
        elif p.suffix.lower() in AUDIO_EXTENSIONS:
            return "audio"
        else:
            raise DataFormatError("binary content of an unknown kind; expected a CSV table, an audio file or a "
                                  "MIDI file", path=str(p)) from None
    if "ooTextFile" in text[:100]:
        return "labels"
    lines = [line for line in text.splitlines() if line.strip()]
    if not lines:
        raise DataFormatError("the file holds only blank lines", path=str(p))
    header = re.split(r"[,\t;|]", lines[0].lower().replace('"', ""))
    header = [h.strip() for h in header]
    if "profile.id" in header and "logratio" in header:
        return "cgh"
    if {"min", "max", "annotation"} <= set(header):
        return "cgh_annotations"
    sample = lines[:20] if len(lines) < 20 else lines[:-1]  # the last line may be cut by the window
    if all(_AUDACITY_LINE.match(line) or line.startswith("\\") for line in sample):
        return "labels"
    if _looks_like_series(lines):
        return "series"
    if p.suffix.lower() in AUDIO_EXTENSIONS:
        return "audio"
    raise DataFormatError(f"cannot tell what this file holds (first line {lines[0][:80]!r}); expected an aCGH "
                          f"table, a time series CSV, a label track, an audio or a MIDI file", path=str(p))
