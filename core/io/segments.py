"""Predicted copy-number segments as tables: our CSV, DNAcopy/IGV ``.seg`` and bedGraph.

A segment is one row ``(profile id, chromosome, first probe position, last probe position, number of
probes, mean log ratio)``; every output is a rendering of these rows, so ``predict`` writes all of them
from the same rows. No library is used: the three formats are a few tab- or comma-separated columns.

Formats
-------
* ``segments.csv``: ``profile.id,chromosome,first.position,last.position,probes,mean``, positions as in
  the profiles table (1-based, the first and last probe of the segment). Files of earlier versions named
  the positions ``chromStart,chromEnd`` (and had no ``probes``); :func:`read_segment_table` reads both.
* ``segments.seg`` (DNAcopy's ``segment()`` output, loaded by IGV, cBioPortal and GISTIC): tab-separated
  ``ID chrom loc.start loc.end num.mark seg.mean`` with a header line; IGV reads the first four columns
  as sample, chromosome, 1-based start and end, the last as the value and the one before it, when there
  are more than five, as the number of markers.
* bedGraph: ``chrom start end value`` in 0-based half-open coordinates, one ``track`` line per profile;
  a segment from probe position ``a`` to ``b`` is ``[a - 1, b)``. Chromosomes get a ``chr`` prefix, and the
  numbered sex chromosomes 23 and 24 become ``chrX`` and ``chrY`` (:func:`ucsc_chromosome`), the names the
  UCSC browser and IGV know. Read back, a bedGraph's chromosomes keep the names it gives (``chrX``).
"""

from __future__ import annotations

import math
from typing import NamedTuple

from ..exceptions import DataFormatError, ParameterError
from ..sanitize import csv_text_cell
from ._common import decode_text, existing_file, fmt_number, read_bytes, write_text_file

__all__ = [
    "SEGMENT_COLUMNS",
    "SEG_COLUMNS",
    "SegmentRow",
    "segment_csv_text",
    "seg_text",
    "bedgraph_text",
    "ucsc_chromosome",
    "read_segment_table",
    "write_seg",
]

SEGMENT_COLUMNS = ("profile.id", "chromosome", "first.position", "last.position", "probes", "mean")
_OLD_SEGMENT_COLUMNS = ("profile.id", "chromosome", "chromStart", "chromEnd", "mean")
SEG_COLUMNS = ("ID", "chrom", "loc.start", "loc.end", "num.mark", "seg.mean")


class SegmentRow(NamedTuple):
    """One predicted segment (``probes`` is None for a table of an earlier version, which did not say)."""

    profile_id: str
    chromosome: str
    first: float
    last: float
    probes: "int | None"
    mean: float


def segment_csv_text(rows, *, header: bool = True) -> str:
    """Rows as ``segments.csv`` text."""
    out = [",".join(SEGMENT_COLUMNS) + "\n"] if header else []
    out.extend(f"{csv_text_cell(r.profile_id)},{csv_text_cell(r.chromosome)},{fmt_number(r.first)},{fmt_number(r.last)},"
               f"{'NA' if r.probes is None else r.probes},{fmt_number(r.mean)}\n" for r in rows)
    return "".join(out)


def _no_tabs(text: str, what: str) -> str:
    if "\t" in text or "\n" in text:
        raise ParameterError(f"{what} {text!r} contains a tab or a line break, which the tab-separated .seg format "
                             "cannot hold; rename it")
    return text


def seg_text(rows) -> str:
    """Rows as DNAcopy/IGV ``.seg`` text (tab-separated, with its header line)."""
    out = ["\t".join(SEG_COLUMNS) + "\n"]
    for r in rows:
        out.append(f"{_no_tabs(r.profile_id, 'profile id')}\t{_no_tabs(r.chromosome, 'chromosome')}\t"
                   f"{fmt_number(r.first)}\t{fmt_number(r.last)}\t{'NA' if r.probes is None else r.probes}\t"
                   f"{fmt_number(r.mean)}\n")
    return "".join(out)


def bedgraph_text(rows, *, track_name: str = "marginalia") -> str:
    """Rows as bedGraph text, one ``track`` line per profile (profiles in order of first appearance)."""
    if not isinstance(track_name, str) or '"' in track_name:
        raise ParameterError(f"track_name: expected a str without double quotes, got {track_name!r}")
    by_profile: dict = {}
    for r in rows:
        by_profile.setdefault(r.profile_id, []).append(r)
    out = []
    for pid, items in by_profile.items():
        out.append(f'track type=bedGraph name="{track_name} {pid}" description="segment means of profile {pid}"\n')
        for r in items:
            chrom = ucsc_chromosome(r.chromosome)
            start = max(int(math.floor(r.first)) - 1, 0)
            end = max(int(math.ceil(r.last)), start + 1)
            out.append(f"{chrom}\t{start}\t{end}\t{fmt_number(r.mean)}\n")
    return "".join(out)


#: numbered sex chromosomes (DNAcopy's and the Coriell table's 23 and 24) -> the names genome browsers know
_SEX_CHROMOSOMES = {"23": "X", "24": "Y"}


def ucsc_chromosome(name: str) -> str:
    """A chromosome as UCSC and IGV name it in a bedGraph: ``chr`` prefixed, 23 and 24 as ``chrX``/``chrY``.

    ``"7"`` -> ``"chr7"``, ``"23"`` -> ``"chrX"``, ``"chrX"`` and ``"chr23"`` -> ``"chrX"``, ``"x"`` -> ``"chrX"``.
    """
    text = str(name).strip()
    bare = text[3:] if text.lower().startswith("chr") else text
    bare = _SEX_CHROMOSOMES.get(bare, bare)
    if bare.lower() in ("x", "y", "m", "mt"):
        bare = {"mt": "M"}.get(bare.lower(), bare.upper())
    return f"chr{bare}"


def write_seg(path, rows) -> None:
    """Write rows as a DNAcopy/IGV ``.seg`` file (see :func:`seg_text`)."""
    write_text_file(path, seg_text(rows))


def read_segment_table(path) -> list:
    """Read a ``segments.csv`` of this or an earlier version (``chromStart,chromEnd``) into SegmentRow.

    Raises
    ------
    DataFormatError
        A header that is neither layout, a row with the wrong number of fields, a non-numeric value.
    """
    import csv
    import io
    p = existing_file(path)
    text = decode_text(read_bytes(p), p)
    reader = csv.reader(io.StringIO(text))
    header = next(reader, None)
    if header is None:
        raise DataFormatError("the file is empty; expected a segments table", path=str(p))
    names = tuple(h.strip() for h in header)
    if names == SEGMENT_COLUMNS:
        old = False
    elif names == _OLD_SEGMENT_COLUMNS:
        old = True
    else:
        raise DataFormatError(f"header {','.join(names)!r} is not a segments table; expected "
                              f"{','.join(SEGMENT_COLUMNS)} (or {','.join(_OLD_SEGMENT_COLUMNS)})", path=str(p),
                              where="line 1")
    rows = []
    for row in reader:
        if not row:
            continue
        where = f"line {reader.line_num}"
        if len(row) != len(names):
            raise DataFormatError(f"found {len(row)} fields, expected {len(names)}", path=str(p), where=where)
        try:
            if old:
                pid, chrom, a, b, m = row
                rows.append(SegmentRow(pid, chrom, float(a), float(b), None, float(m)))
            else:
                pid, chrom, a, b, n, m = row
                rows.append(SegmentRow(pid, chrom, float(a), float(b), None if n == "NA" else int(n), float(m)))
        except ValueError:
            raise DataFormatError(f"a value of {row!r} is not a number", path=str(p), where=where) from None
    return rows
