"""aCGH copy-number tables: probe profiles, expert region annotations, predicted segments and breaks.

Formats (the neuroblastoma / SegAnnDB convention)
--------------------------------------------------
* profiles: ``profile.id,chromosome,position,logratio`` (extra columns allowed, comma or tab separated,
  optionally gzip-compressed). Each (profile.id, chromosome) pair is one :class:`~marginalia.types.Sequence`.
* annotations: ``profile.id,chromosome,min,max,annotation`` where ``[min, max]`` is a closed base-pair
  interval and annotation is one of ``0breakpoints``, ``normal`` (no change), ``1breakpoint`` (exactly
  one change), ``breakpoint``, ``>0breakpoints`` (at least one change).
* segments: ``profile.id,chromosome,first.position,last.position,probes,mean``, DNAcopy/IGV ``.seg`` and
  bedGraph (:mod:`marginalia.io.segments`); breaks: ``profile.id,chromosome,position``.
* other layouts of the probe table (any column names, DNAcopy wide tables, bedGraph input):
  :mod:`marginalia.io.cgh_layouts`.
"""

from __future__ import annotations

import csv
import difflib
import io
import math
import warnings
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

import numpy as np

from ..checks import check_choice
from ..exceptions import DataFormatError, ParameterError
from ..sanitize import csv_text_value
from ..text import with_article
from ..types import RegionKind, RegionLabel, Segmentation, Sequence
from . import _csvscan
from ._common import (
    UnterminatedTableWarning,
    decode_text,
    existing_file,
    fmt_number,
    output_file,
    read_bytes,
    warn_if_unterminated,
    write_text_file,
)
from .cgh_layouts import (
    MISSING_VALUES,
    NO_CHROMOSOME,
    POSITION_UNITS,
    PositionUnitWarning,
    annotation_columns,
    default_profile_id,
    detect_layout,
    is_bedgraph,
    parse_columns,
    position_unit_hint,
    read_bedgraph_profiles,
    sniff_delimiter,
    with_unit,
)
from .segments import SegmentRow, bedgraph_text, segment_csv_text, write_seg

__all__ = [
    "PROFILE_COLUMNS",
    "ANNOTATION_COLUMNS",
    "ANNOTATION_KINDS",
    "CghRegionLabel",
    "UnsortedPositionsWarning",
    "UnterminatedTableWarning",
    "PositionUnitWarning",
    "DroppedRegionsWarning",
    "read_profiles",
    "read_annotations",
    "write_profiles",
    "write_annotations",
    "write_segments",
    "write_breaks",
    "write_bedgraph",
    "write_seg_file",
    "segment_rows",
]

PROFILE_COLUMNS = ("profile.id", "chromosome", "position", "logratio")
ANNOTATION_COLUMNS = ("profile.id", "chromosome", "min", "max", "annotation")

#: annotation word -> region kind
ANNOTATION_KINDS = {
    "0breakpoints": RegionKind.ZERO,
    "normal": RegionKind.ZERO,
    "1breakpoint": RegionKind.ONE,
    "breakpoint": RegionKind.AT_LEAST_ONE,
    ">0breakpoints": RegionKind.AT_LEAST_ONE,
}
#: region kind -> word written for labels that do not remember their original word
_CANONICAL_WORD = {
    RegionKind.ZERO: "0breakpoints",
    RegionKind.SAME: "0breakpoints",
    RegionKind.ONE: "1breakpoint",
    RegionKind.AT_LEAST_ONE: ">0breakpoints",
}


class UnsortedPositionsWarning(UserWarning):
    """A profile's probes were not sorted by position in the file; they were sorted on reading."""


@dataclass(frozen=True)
class CghRegionLabel(RegionLabel):
    """A :class:`~marginalia.types.RegionLabel` read from an annotation table, remembering the table's values.

    It *is* a RegionLabel (``[start, stop)`` in probe-index space, ``item_id`` = sequence name); the extra
    fields let :func:`write_annotations` reproduce the original row exactly.

    Parameters
    ----------
    min_bp, max_bp : float
        The closed base-pair interval of the row.
    annotation : str
        The original annotation word (``normal`` and ``0breakpoints`` both mean ZERO).
    """

    min_bp: float = math.nan
    max_bp: float = math.nan
    annotation: str = ""

    def as_region_label(self) -> RegionLabel:
        """The same label as a plain :class:`RegionLabel` (drops the base-pair fields)."""
        return RegionLabel(item_id=self.item_id, id=self.id, author=self.author, created=self.created,
                           start=self.start, stop=self.stop, kind=self.kind)


# ------------------------------------------------------------------ reading helpers


def _column_indices(header: list, wanted: tuple, path, kind: str) -> list:
    names = [h.strip() for h in header]
    lowered = [n.lower() for n in names]
    idx = []
    for w in wanted:
        if w in names:
            idx.append(names.index(w))
        elif w.lower() in lowered:
            idx.append(lowered.index(w.lower()))
        else:
            close = difflib.get_close_matches(w, names, n=1, cutoff=0.6)
            hint = f" Did you mean {close[0]!r}? Rename it to {w!r}." if close else ""
            raise DataFormatError(
                f"missing column {w!r}; found columns {names}. {with_article(kind).capitalize()} table needs the columns "
                f"{','.join(wanted)} (extra columns are allowed).{hint}", path=str(path), where="line 1")
    return idx


def _split_header(text: str, path):
    """Return (header fields, delimiter, offset of the first data line, header line number)."""
    pos = 0
    line_no = 0
    while pos < len(text):
        end = text.find("\n", pos)
        end = len(text) if end < 0 else end
        line_no += 1
        line = text[pos:end].rstrip("\r")
        if line.strip():
            delim = sniff_delimiter(line)
            header = next(csv.reader([line], delimiter=delim))
            return header, delim, end + 1, line_no
        pos = end + 1
    raise DataFormatError("the file is empty; expected a header line and data rows", path=str(path))


#: longest text read as one number (a 17-digit repr with exponent is ~25 characters)
MAX_NUMBER_CHARS = 400


def _number(text: str, column: str, path, line_no: int, *, finite: bool = True, missing_ok: bool = False) -> float:
    if len(text) > MAX_NUMBER_CHARS:
        raise DataFormatError(f"{column} holds {len(text):,} characters, which is not a number; expected a decimal "
                              "number such as 12345 or -0.25 (is the file damaged?)", path=str(path),
                              where=f"line {line_no}, column {column}")
    if missing_ok and text.strip().strip('"').lower() in MISSING_VALUES:
        return math.nan
    try:
        v = float(text)
    except ValueError:
        raise DataFormatError(f"{column} {text.strip()!r} is not a number; expected a decimal number "
                              f"such as 12345 or -0.25", path=str(path),
                              where=f"line {line_no}, column {column}") from None
    if finite and not math.isfinite(v):
        raise DataFormatError(f"{column} is {text.strip()!r}; expected a finite number. Remove this probe or "
                              f"fill in its value", path=str(path), where=f"line {line_no}, column {column}")
    return v


def _rows_python(text: str, start: int, first_line: int, delim: str, ncols: int, key_cols, num_cols,
                 num_names, path, missing_ok: bool = False):
    """Reference row parser (csv module): quoted fields, any oddity. Yields the same data as the kernel.

    Returns
    -------
    keys : list of tuple of str, one per row
    values : ndarray, shape (R, M)
    """
    keys, vals = [], []
    reader = csv.reader(io.StringIO(text[start:]), delimiter=delim)
    for row in reader:
        line_no = first_line + reader.line_num
        if not row or all(not f.strip() for f in row):
            continue
        if len(row) != ncols:
            raise DataFormatError(_field_count_message(len(row), ncols, delim), path=str(path),
                                  where=f"line {line_no}")
        keys.append(tuple(row[c].strip() for c in key_cols))
        vals.append([_number(row[c], name, path, line_no, missing_ok=missing_ok)
                     for c, name in zip(num_cols, num_names)])
    return keys, np.array(vals, dtype=np.float64).reshape(len(vals), len(num_cols))


def _field_count_message(found: int, expected: int, delim: str) -> str:
    return (f"found {found} fields, expected {expected} like the header; is the line cut short, or does a value "
            f"contain the delimiter {delim!r}?")


def _read_table(path, wanted: tuple, n_key: int, kind: str, *, force_python: bool = False, resolve=None,
                missing_ok: bool = False):
    """Read a delimited table; the first ``n_key`` wanted columns are text keys, the rest numbers.

    ``resolve(header, first_rows, path)``, when given, chooses the columns instead of ``wanted``: it returns
    ``(key_cols, num_cols, num_names, extra)`` and ``extra`` is returned last. ``missing_ok`` reads empty
    and ``NA`` numbers as NaN instead of refusing them.

    Returns
    -------
    run_keys : list of tuple of str
        The key of each run of consecutive rows sharing a key.
    run_bounds : ndarray of int64, shape (n_runs + 1,)
        Row ranges of the runs.
    values : ndarray, shape (R, len(wanted) - n_key)
    """
    p = existing_file(path)
    raw = read_bytes(p)
    if not raw or (len(raw) < 65536 and not raw.strip()):
        raise DataFormatError(f"the file is empty; expected {with_article(kind)} table with the header "
                              f"{','.join(wanted)}", path=str(p))
    if raw.startswith(b"\xef\xbb\xbf"):
        raw = raw[3:]
    # ASCII (the usual case) needs no decoding for the byte scanner; anything else is validated as UTF-8.
    # Quotes (R's write.csv) are fine for the scanner as long as every quoted field is a plain "...".
    fast = not force_python and raw.isascii()
    text = raw[:65536].decode("ascii") if fast else decode_text(raw, p)
    header, delim, data_start, header_line = _split_header(text, p)
    if fast and b'"' in raw:
        fast = _csvscan.plain_quotes(np.frombuffer(raw, dtype=np.uint8), ord(delim))
        if not fast:
            text = decode_text(raw, p)
    extra = None
    if resolve is None:
        cols = _column_indices(header, wanted, p, kind)
        key_cols, num_cols = cols[:n_key], cols[n_key:]
        num_names = wanted[n_key:]
    else:
        first_rows = list(csv.reader(io.StringIO("\n".join(text[data_start:].splitlines()[:50])), delimiter=delim))
        key_cols, num_cols, num_names, extra, missing_ok = resolve(header, first_rows, p)
    ncols = len(header)
    if not fast and (force_python or '"' in text):  # quoted delimiters, escaped quotes, or on request
        keys, values = _rows_python(text, data_start, header_line, delim, ncols, key_cols, num_cols, num_names, p,
                                    missing_ok)
        bounds = [0] + [i for i in range(1, len(keys)) if keys[i] != keys[i - 1]] + [len(keys)]
        run_keys = [keys[b] for b in bounds[:-1]] if keys else []
        if not keys:
            bounds = [0]
    else:
        if not fast:
            raw = text.encode("utf-8")  # validated UTF-8 without quotes: scan its bytes
        buf = np.frombuffer(raw, dtype=np.uint8)
        byte_start = len(text[:data_start].encode("utf-8"))
        values, flagged, row_off, run_start, error = _csvscan.scan_rows(buf, byte_start, ord(delim), ncols,
                                                                      key_cols, num_cols)

        def line_of(offset):
            return int(np.count_nonzero(buf[:offset] == 10)) + 1

        def fields_at(offset):
            end = raw.find(b"\n", offset)
            return raw[offset:None if end < 0 else end].decode("utf-8").rstrip("\r").split(delim)

        if error is not None:
            off, nf = error
            raise DataFormatError(_field_count_message(nf, ncols, delim), path=str(p), where=f"line {line_of(off)}")
        for r, m in flagged.tolist():
            off = int(row_off[r])
            field = fields_at(off)[num_cols[m]]
            if missing_ok and field.strip().strip('"').lower() in MISSING_VALUES:
                values[r, m] = math.nan
                continue
            try:
                v = float(field.strip().strip('"'))
            except ValueError:
                v = math.nan
            if not math.isfinite(v):  # raises, naming the line (counted only now: it scans the buffer)
                _number(field.strip().strip('"'), num_names[m], p, line_of(off))
            values[r, m] = v
        run_keys = []
        for r in run_start:
            f = fields_at(int(row_off[r]))
            run_keys.append(tuple(f[c].strip().strip('"') for c in key_cols))
        bounds = list(run_start) + [values.shape[0]]
    if values.shape[0] == 0:
        raise DataFormatError(f"the table has a header but no data rows; expected one row per "
                              f"{'probe' if kind == 'profile' else 'region'}", path=str(p))
    warn_if_unterminated(raw, p)   # read, but its last value may be cut short
    if resolve is not None:
        return p, run_keys, np.asarray(bounds, dtype=np.int64), values, extra
    return p, run_keys, np.asarray(bounds, dtype=np.int64), values


# ------------------------------------------------------------------ profiles


def _first_line(p) -> str:
    """The first non-empty line of a (possibly gzipped) text file, for telling formats apart."""
    import gzip
    try:
        with open(p, "rb") as fh:
            gz = fh.read(2) == b"\x1f\x8b"
        with (gzip.open(p, "rb") if gz else open(p, "rb")) as fh:
            head = fh.read(8192)
    except (OSError, EOFError):
        return ""   # the reader reports what is wrong with the file
    for line in head.decode("utf-8", "replace").splitlines():
        if line.strip():
            return line
    return ""


def read_profiles(path, *, columns=None, position_unit=None, _force_python: bool = False) -> list:
    """Read a copy-number probe table (or bedGraph) into one sequence per (profile, chromosome).

    Parameters
    ----------
    path : str or path-like
        A CSV (comma, tab or semicolon separated, ``.gz`` allowed) in one of the layouts of
        :mod:`marginalia.io.cgh_layouts`: a long table ``profile.id,chromosome,position,logratio`` under
        any usual spelling (the id and chromosome columns may be absent: the file name is then the profile
        id and the chromosome ``NA``), a DNAcopy wide table (one column per sample; empty/``NA`` cells
        skipped), or a bedGraph (``.bedGraph``/``.bg``, or a first line ``track ...``).
    columns : mapping or str, optional
        Which column holds what, e.g. ``{"id": "Sample", "chromosome": "Chr", "position": "Start",
        "logratio": "LRR"}`` or the same as ``"id=Sample,chromosome=Chr,position=Start,logratio=LRR"``;
        ``logratio="S1+S2"`` reads a wide table. Without it the usual spellings are recognised. It may
        also hold the position unit (``unit=kb``), alone or with the columns.
    position_unit : {"bp", "kb", "Mb"}, optional
        The unit of the table's positions (the same as ``unit=`` in ``columns``): positions are multiplied
        by 1,000 (kb) or 1,000,000 (Mb) and rounded to whole base pairs. Default bp. Ignored for a bedGraph,
        which is always in base pairs.

    Returns
    -------
    sequences : list of Sequence
        In order of first appearance in the file (a wide table: sample by sample). Each has ``values`` of
        shape (T, 1) (the logratio), ``positions`` of shape (T,) sorted ascending (in base pairs),
        ``kind="cgh"``, ``units="bp"``, ``group=chromosome``, ``name=f"{profile}:{chromosome}"``,
        ``feature_names=("logratio",)`` and ``meta`` with ``profile_id``, ``chromosome``, ``source`` (the
        path) and ``layout`` (``long``, ``wide`` or ``bedgraph``).

    Warns
    -----
    UnsortedPositionsWarning
        When a profile's probes are not sorted by position; they are sorted (stably) and a warning
        names the sequences concerned.
    PositionUnitWarning
        No unit was given, but the positions on human chromosomes look like kb or Mb (see
        :func:`~marginalia.io.cgh_layouts.position_unit_hint`).

    Notes
    -----
    Probes sharing a position are *all kept* (in file order): a duplicate is a real second
    measurement and averaging would hide it from the user; ``Sequence`` allows equal positions.
    Rows of one sequence need not be contiguous.

    Large tables are scanned by a numba kernel (about the CPU cost of ``pandas.read_csv``); tables
    with quoted delimiters or escaped quotes go through the csv module. ``_force_python=True`` forces
    that exact reference path (used by the tests and the benchmark to compare both).

    Raises
    ------
    DataFormatError
        Empty file, columns that cannot be mapped (the message names the columns found and the
        ``--columns`` syntax), wrong number of fields on a line, non-numeric or non-finite
        position/logratio in a long table -- the message names the line and column.
    """
    p = existing_file(path)
    try:
        columns = with_unit(columns, position_unit)
    except ParameterError as exc:
        raise ParameterError(f"position_unit: {str(exc).removeprefix('columns: ')}") from None
    if is_bedgraph(p, _first_line(p)):
        text = decode_text(read_bytes(p), p)
        blocks = [(pid, chrom, pos, lr[:, None]) for pid, chrom, pos, lr in read_bedgraph_profiles(p, text)]
        return _sequences(p, blocks, "bedgraph")
    unit = (parse_columns(columns) or {}).get("unit")

    def resolve(header, first_rows, where):
        lay = detect_layout(header, first_rows, where, columns)
        key_cols = [c for c in (lay.id_col, lay.chrom_col) if c is not None]
        num_cols = [lay.pos_col, *lay.value_cols]
        names = [header[c].strip().strip('"') for c in num_cols]
        return key_cols, num_cols, names, lay, lay.kind == "wide"

    p, run_keys, bounds, values, lay = _read_table(p, PROFILE_COLUMNS, 2, "profile", force_python=_force_python,
                                                   resolve=resolve)
    default_id = default_profile_id(p)

    def keys_of(key):
        k = list(key)
        pid = k.pop(0) if lay.id_col is not None else default_id
        chrom = k.pop(0) if lay.chrom_col is not None else NO_CHROMOSOME
        return pid, chrom

    groups: dict = {}
    for k, key in enumerate(run_keys):
        groups.setdefault(keys_of(key), []).append((int(bounds[k]), int(bounds[k + 1])))
    blocks = []
    if lay.kind == "long":
        for (pid, chrom), spans in groups.items():
            block = values[spans[0][0]:spans[0][1]] if len(spans) == 1 else np.concatenate(
                [values[a:b] for a, b in spans])
            blocks.append((pid, chrom, block[:, 0], block[:, 1:2]))
    else:
        bad = np.flatnonzero(~np.isfinite(values[:, 0]))
        if bad.size:
            raise DataFormatError("a probe without a position; every probe of a wide table needs one (the samples' "
                                  "cells may be empty)", path=str(p), where=f"data row {int(bad[0]) + 1}")
        for j, sample in enumerate(lay.samples):
            for (_, chrom), spans in groups.items():
                block = values[spans[0][0]:spans[0][1]] if len(spans) == 1 else np.concatenate(
                    [values[a:b] for a, b in spans])
                keep = np.isfinite(block[:, 1 + j])
                if np.any(keep):
                    blocks.append((sample, chrom, block[keep, 0], block[keep, 1 + j:2 + j]))
    if unit is None:
        _warn_if_unit_looks_wrong(p, blocks)
    elif unit != "bp":
        blocks = [(pid, chrom, np.round(pos * POSITION_UNITS[unit]), lr) for pid, chrom, pos, lr in blocks]
    return _sequences(p, blocks, lay.kind)


def _warn_if_unit_looks_wrong(p, blocks) -> None:
    """One :class:`PositionUnitWarning` when positions read as bp look like kb or Mb (see position_unit_hint)."""
    tops = [float(np.max(pos)) for _, _, pos, _ in blocks if pos.shape[0]]
    fractional = any(bool(np.any(pos != np.floor(pos))) for _, _, pos, _ in blocks)
    hint = position_unit_hint([chrom for _, chrom, pos, _ in blocks if pos.shape[0]], tops, fractional=fractional)
    if hint is not None:
        warnings.warn(f"{p}: positions go up to {fmt_number(max(tops))} only, which looks like {hint} on human "
                      f"chromosomes, but they are read as bp; if they are {hint}, read the table with "
                      f"--position-unit {hint}, or choose {hint} as the position unit of the import dialog (bp silences this)",
                      PositionUnitWarning, stacklevel=3)


def _sequences(p, blocks, layout: str) -> list:
    """Sequences of ``(profile id, chromosome, positions, values (T, 1))`` blocks, sorted by position."""
    out, unsorted = [], []
    for pid, chrom, pos, lr in blocks:
        if pos.shape[0] > 1 and np.any(pos[1:] < pos[:-1]):
            order = np.argsort(pos, kind="stable")
            pos, lr = pos[order], lr[order]
            unsorted.append(f"{pid}:{chrom}")
        out.append(Sequence(values=np.ascontiguousarray(lr), positions=np.ascontiguousarray(pos),
                            name=f"{pid}:{chrom}", units="bp", group=chrom, kind="cgh", feature_names=("logratio",),
                            meta={"profile_id": pid, "chromosome": chrom, "source": str(p), "layout": layout}))
    if unsorted:
        shown = ", ".join(unsorted[:5]) + (f" and {len(unsorted) - 5} more" if len(unsorted) > 5 else "")
        warnings.warn(f"{p}: probes of {shown} were not sorted by position; they were sorted on reading",
                      UnsortedPositionsWarning, stacklevel=3)
    return out


def _csv_keys(seq: Sequence) -> tuple:
    """Profile id and chromosome as CSV text cells (formula-like ids neutralised for spreadsheets)."""
    from ..sanitize import csv_text_cell
    return tuple(csv_text_cell(k) for k in _profile_keys(seq))


def _profile_keys(seq: Sequence) -> tuple:
    pid = seq.meta.get("profile_id")
    chrom = seq.meta.get("chromosome")
    if pid is None or chrom is None:
        if ":" in seq.name:
            pid, chrom = seq.name.rsplit(":", 1)
        else:
            pid, chrom = seq.name or "profile", seq.group or ""
    return str(pid), str(chrom)


def _check_sequences(sequences, argname="sequences") -> list:
    if isinstance(sequences, Sequence):
        sequences = [sequences]
    if not isinstance(sequences, Iterable):
        raise ParameterError(f"{argname}: expected a list of Sequence, got {type(sequences).__name__}")
    seqs = list(sequences)
    for i, s in enumerate(seqs):
        if not isinstance(s, Sequence):
            raise ParameterError(f"{argname}[{i}]: expected a Sequence, got {type(s).__name__}")
    return seqs


def write_profiles(path, sequences) -> None:
    """Write sequences as a ``profile.id,chromosome,position,logratio`` table (first feature as logratio).

    Parameters
    ----------
    path : str or path-like
    sequences : list of Sequence
        Profile id and chromosome come from ``meta`` (``profile_id``, ``chromosome``) or the name
        ``"profile:chromosome"``.
    """
    p = output_file(path)
    seqs = _check_sequences(sequences)
    with open(p, "w", newline="", encoding="utf-8") as fh:
        fh.write(",".join(PROFILE_COLUMNS) + "\n")
        for s in seqs:
            pid, chrom = _profile_keys(s)
            prefix = f"{pid},{chrom},"
            fh.write("".join(f"{prefix}{fmt_number(a)},{fmt_number(b)}\n"
                             for a, b in zip(s.positions.tolist(), s.values[:, 0].tolist())))


# ------------------------------------------------------------------ annotations


class DroppedRegionsWarning(UserWarning):
    """Annotation rows were dropped because their region covers too few probes (``empty_regions="warn"``)."""


class UnmatchedAnnotationsWarning(UserWarning):
    """Annotation rows name sequences that are not among the profiles (``unknown_sequences="warn"``)."""


class DuplicateAnnotationsWarning(UserWarning):
    """Annotation rows repeating an earlier row exactly were dropped (a repeat adds no information)."""


def read_annotations(path, sequences, *, unknown_sequences: str = "error", empty_regions: str = "error") -> list:
    """Read region annotations and map them to probe-index space.

    Parameters
    ----------
    path : str or path-like
        A table with columns ``profile.id,chromosome,min,max,annotation`` (extra columns ignored).
    sequences : list of Sequence
        The profiles the annotations refer to (as returned by :func:`read_profiles`); a row matches the
        sequence named ``f"{profile.id}:{chromosome}"``.
    unknown_sequences : {"error", "warn", "skip"}
        What to do with rows whose profile/chromosome is not among ``sequences``: raise, drop them
        with one :class:`UnmatchedAnnotationsWarning` naming the lines and sequences, or drop them
        silently (when the caller reads a table against a subset of its profiles on purpose).
    empty_regions : {"error", "warn"}
        What to do with a region that must hold a change but covers fewer than 2 probes: raise, or
        drop the row and emit one :class:`DroppedRegionsWarning` naming the lines. A no-change region
        covering no probe (real tables hold a few, e.g. beyond the last probe of a chromosome) is
        always dropped with that warning: no segmentation can contradict it.

    Returns
    -------
    labels : list of CghRegionLabel
        In file order. ``[start, stop)`` are the probes with ``min <= position <= max``; ``kind`` follows
        :data:`ANNOTATION_KINDS`; ``item_id`` is the sequence name; ``min_bp``, ``max_bp`` and
        ``annotation`` keep the row's values so :func:`write_annotations` writes it back unchanged.

    Raises
    ------
    DataFormatError
        Unknown annotation word, ``min > max``, non-numeric bounds, a region that must hold a change but
        covers fewer than 2 probes, an unknown profile/chromosome.
    """
    check_choice(unknown_sequences, "unknown_sequences", ("error", "warn", "skip"))
    check_choice(empty_regions, "empty_regions", ("error", "warn"))
    dropped, vacuous, unmatched, repeated, seen = [], [], {}, [], {}
    seqs = _check_sequences(sequences)
    by_name = {s.name: s for s in seqs}
    p = existing_file(path)
    text = decode_text(read_bytes(p), p)
    if not text.strip():
        raise DataFormatError("the file is empty; expected an annotation table with the header "
                              f"{','.join(ANNOTATION_COLUMNS)}", path=str(p))
    header, delim, data_start, header_line = _split_header(text, p)
    cols = annotation_columns(header)
    if cols is None:
        cols = tuple(_column_indices(header, ANNOTATION_COLUMNS, p, "annotation"))  # raises, naming what is missing
    fixed_pid = fixed_chrom = None
    if cols[0] is None or cols[1] is None:
        keys = sorted({_profile_keys(s) for s in seqs})
        if cols[0] is None and cols[1] is None:
            if len(keys) != 1:
                raise DataFormatError(f"the table names no profile and no chromosome, so it can only label a single "
                                      f"sequence, but {len(keys)} were given; add the columns profile.id,chromosome "
                                      "or pass only the profile it belongs to", path=str(p), where="line 1")
            fixed_pid, fixed_chrom = keys[0]
        elif cols[0] is None:
            pids = {k[0] for k in keys}
            if len(pids) != 1:
                raise DataFormatError(f"the table names no profile, so it can only label one profile, but {len(pids)} "
                                      "were given; add a profile.id column", path=str(p), where="line 1")
            fixed_pid = pids.pop()
        else:
            fixed_chrom = NO_CHROMOSOME
    reader = csv.reader(io.StringIO(text[data_start:]), delimiter=delim)
    labels = []
    n_rows = 0
    for row in reader:
        line_no = header_line + reader.line_num
        where = f"line {line_no}"
        if not row or all(not f.strip() for f in row):
            continue
        n_rows += 1
        if len(row) != len(header):
            raise DataFormatError(_field_count_message(len(row), len(header), delim), path=str(p), where=where)
        pid, chrom, lo_t, hi_t, word = (None if c is None else row[c].strip() for c in cols)
        pid = fixed_pid if pid is None else csv_text_value(pid)   # undo the formula escape of our writers
        chrom = fixed_chrom if chrom is None else csv_text_value(chrom)
        lo = _number(lo_t, "min", p, line_no)
        hi = _number(hi_t, "max", p, line_no)
        if word not in ANNOTATION_KINDS and word.lower() in ANNOTATION_KINDS:
            word = word.lower()          # "0Breakpoints" is what a spreadsheet's autocorrect makes of it
        if word not in ANNOTATION_KINDS:
            close = difflib.get_close_matches(word.lower(), list(ANNOTATION_KINDS), n=1)
            hint = f" (did you mean {close[0]!r}?)" if close else ""
            raise DataFormatError(f"unknown annotation {word!r}{hint}; expected one of {sorted(ANNOTATION_KINDS)}",
                                  path=str(p), where=f"{where}, column annotation")
        if lo > hi:
            raise DataFormatError(f"min={lo_t} is greater than max={hi_t}; expected min <= max (swap them?)",
                                  path=str(p), where=where)
        name = f"{pid}:{chrom}"
        seq = by_name.get(name)
        if seq is None:
            if unknown_sequences != "error":
                unmatched.setdefault(name, []).append(line_no)
                continue
            raise DataFormatError(f"profile {pid!r} chromosome {chrom!r} is not among the {len(seqs)} sequences "
                                  f"given; pass the profiles these annotations belong to, or "
                                  f"unknown_sequences='skip'", path=str(p), where=where)
        start = int(np.searchsorted(seq.positions, lo, side="left"))
        stop = int(np.searchsorted(seq.positions, hi, side="right"))
        kind = ANNOTATION_KINDS[word]
        if stop <= start and kind is RegionKind.ZERO:
            vacuous.append(line_no)     # no change can fall between no probes: the row says nothing
            continue
        if empty_regions == "warn" and (stop <= start or (kind in (RegionKind.ONE, RegionKind.AT_LEAST_ONE)
                                                          and stop - start < 2)):
            dropped.append(line_no)
            continue
        if stop <= start:
            raise DataFormatError(f"region [{lo_t}, {hi_t}] covers no probe of {name} (probes span "
                                  f"{fmt_number(seq.positions[0])}..{fmt_number(seq.positions[-1])}); "
                                  f"widen it or remove the row", path=str(p), where=where)
        if kind in (RegionKind.ONE, RegionKind.AT_LEAST_ONE) and stop - start < 2:
            raise DataFormatError(f"region [{lo_t}, {hi_t}] labelled {word!r} covers a single probe of {name}, "
                                  f"so it cannot contain a change; widen it to at least 2 probes",
                                  path=str(p), where=where)
        first = seen.setdefault((name, lo, hi, word), line_no)
        if first != line_no:
            repeated.append((line_no, first))
            continue
        labels.append(CghRegionLabel(item_id=name, start=start, stop=stop, kind=kind, min_bp=lo, max_bp=hi,
                                     annotation=word))
    if n_rows == 0:
        raise DataFormatError("the table has a header but no rows; expected one row per labelled region",
                              path=str(p))
    if vacuous:
        warnings.warn(f"{p}: dropped {len(vacuous)} no-change row(s) whose region covers no probe, so no "
                      f"segmentation can break them (lines {_first_lines(vacuous)}); check the genome build of the "
                      f"positions if you expected probes there", DroppedRegionsWarning, stacklevel=2)
    if dropped:
        warnings.warn(f"{p}: dropped {len(dropped)} rows whose region covers too few probes "
                      f"(lines {_first_lines(dropped)})",
                      DroppedRegionsWarning, stacklevel=2)
    if unmatched and unknown_sequences == "warn":
        lines = sorted(n for ns in unmatched.values() for n in ns)
        names = ", ".join(sorted(unmatched, key=str)[:5]) + (f" and {len(unmatched) - 5} more" if len(unmatched) > 5
                                                              else "")
        warnings.warn(f"{p}: skipped {len(lines)} annotation row(s) naming sequences that are not in the profiles "
                      f"({names}; lines {_first_lines(lines)}); pass the profiles they belong to",
                      UnmatchedAnnotationsWarning, stacklevel=2)
    if repeated:
        shown = ", ".join(f"{n} (= line {f})" for n, f in repeated[:5]) + (" ..." if len(repeated) > 5 else "")
        warnings.warn(f"{p}: dropped {len(repeated)} row(s) repeating an earlier row exactly (lines {shown})",
                      DuplicateAnnotationsWarning, stacklevel=2)
    return labels


def describe_annotation(label) -> str:
    """A label as the table states it: ``'1breakpoint' at 15205091-57300279 bp`` (probe indices otherwise)."""
    lo, hi, word = getattr(label, "min_bp", None), getattr(label, "max_bp", None), getattr(label, "annotation", "")
    where = f"{lo:.0f}-{hi:.0f} bp" if lo is not None else f"probes {label.start}-{label.stop - 1}"
    return f"{word or label.kind.value!r} at {where}"


def _first_lines(lines, n: int = 10) -> str:
    return ", ".join(str(k) for k in lines[:n]) + (" ..." if len(lines) > n else "")


def _label_row(label, seq: Sequence) -> tuple:
    """(min, max, word) for a label: the remembered values when still consistent with the label."""
    if isinstance(label, CghRegionLabel) and math.isfinite(label.min_bp) and math.isfinite(label.max_bp):
        start = int(np.searchsorted(seq.positions, label.min_bp, side="left"))
        stop = int(np.searchsorted(seq.positions, label.max_bp, side="right"))
        word = label.annotation if ANNOTATION_KINDS.get(label.annotation) == label.kind else _CANONICAL_WORD[label.kind]
        if (start, stop) == (label.start, label.stop):
            return label.min_bp, label.max_bp, word
    return seq.positions[label.start], seq.positions[label.stop - 1], _CANONICAL_WORD[label.kind]


def write_annotations(path, labels, sequences) -> None:
    """Write region labels as an annotation table ``profile.id,chromosome,min,max,annotation``.

    Parameters
    ----------
    path : str or path-like
    labels : list of RegionLabel
        In the order to write. A :class:`CghRegionLabel` whose base-pair interval still maps to its
        ``[start, stop)`` is written with its original ``min``, ``max`` and word, so reading a table and
        writing it back reproduces its values (and its bytes, for a table this function wrote). Other
        labels are written with ``min``/``max`` = positions of their first/last probe and the words
        ``0breakpoints``, ``1breakpoint``, ``>0breakpoints``.
    sequences : list of Sequence
        The sequences the labels' ``item_id`` refer to (by name).
    """
    p = output_file(path)
    seqs = _check_sequences(sequences)
    by_name = {s.name: s for s in seqs}
    if isinstance(labels, RegionLabel) or not isinstance(labels, Iterable):
        raise ParameterError(f"labels: expected a list of RegionLabel, got {type(labels).__name__}")
    rows = []
    for i, lab in enumerate(labels):
        if not isinstance(lab, RegionLabel):
            raise ParameterError(f"labels[{i}]: only RegionLabel can be written to an annotation table, "
                                 f"got {type(lab).__name__}")
        seq = by_name.get(lab.item_id)
        if seq is None:
            raise ParameterError(f"labels[{i}]: item_id {lab.item_id!r} is not the name of any of the "
                                 f"{len(seqs)} sequences given")
        if lab.stop > seq.n_samples:
            raise ParameterError(f"labels[{i}]: region [{lab.start}, {lab.stop}) exceeds the {seq.n_samples} "
                                 f"probes of {seq.name}")
        pid, chrom = _csv_keys(seq)
        lo, hi, word = _label_row(lab, seq)
        rows.append(f"{pid},{chrom},{fmt_number(lo)},{fmt_number(hi)},{word}\n")
    with open(p, "w", newline="", encoding="utf-8") as fh:
        fh.write(",".join(ANNOTATION_COLUMNS) + "\n")
        fh.writelines(rows)


# ------------------------------------------------------------------ predictions


def _pairs(segmentations_by_sequence, sequences=None, argname="segmentations_by_sequence") -> list:
    if isinstance(segmentations_by_sequence, Mapping):
        items = list(segmentations_by_sequence.items())
        if sequences is not None:
            by_name = {s.name: s for s in _check_sequences(sequences)}
            resolved = []
            for key, seg in items:
                if isinstance(key, str):
                    if key not in by_name:
                        raise ParameterError(f"{argname}: key {key!r} is not the name of any of the "
                                             f"{len(by_name)} sequences given")
                    key = by_name[key]
                resolved.append((key, seg))
            items = resolved
    elif isinstance(segmentations_by_sequence, Iterable):
        items = list(segmentations_by_sequence)
    else:
        raise ParameterError(f"{argname}: expected a mapping Sequence -> Segmentation or a list of "
                             f"(Sequence, Segmentation) pairs, got {type(segmentations_by_sequence).__name__}")
    out = []
    for i, item in enumerate(items):
        try:
            seq, seg = item
        except (TypeError, ValueError):
            raise ParameterError(f"{argname}[{i}]: expected a (Sequence, Segmentation) pair, got {item!r}") from None
        if not isinstance(seq, Sequence) or not isinstance(seg, Segmentation):
            raise ParameterError(f"{argname}[{i}]: expected (Sequence, Segmentation), got "
                                 f"({type(seq).__name__}, {type(seg).__name__})")
        if seg.n_samples != seq.n_samples:
            raise ParameterError(f"{argname}[{i}]: segmentation of {seg.n_samples} samples does not fit "
                                 f"{seq.name!r} with {seq.n_samples} probes")
        out.append((seq, seg))
    return out


def _segments(seq: Sequence, seg: Segmentation):
    """Yield (first probe position, last probe position, number of probes, mean of the first feature)."""
    starts = np.concatenate([[0], seg.changes[:-1]])
    csum = np.concatenate([[0.0], np.cumsum(seq.values[:, 0])])
    for a, b in zip(starts.tolist(), seg.changes.tolist()):
        yield seq.positions[a], seq.positions[b - 1], b - a, (csum[b] - csum[a]) / (b - a)


def segment_rows(segmentations_by_sequence, sequences=None) -> list:
    """The predicted segments as :class:`~marginalia.io.segments.SegmentRow`, sequence by sequence.

    Parameters
    ----------
    segmentations_by_sequence : mapping Sequence -> Segmentation, or list of (Sequence, Segmentation)
        A mapping may also be keyed by sequence name when ``sequences`` is given.
    sequences : list of Sequence, optional
        Resolves names used as keys of ``segmentations_by_sequence``.
    """
    rows = []
    for seq, seg in _pairs(segmentations_by_sequence, sequences):
        pid, chrom = _profile_keys(seq)
        rows.extend(SegmentRow(pid, chrom, float(a), float(b), int(n), float(m)) for a, b, n, m in _segments(seq, seg))
    return rows


def write_segments(path, segmentations_by_sequence, sequences=None) -> None:
    """Write predicted segments ``profile.id,chromosome,first.position,last.position,probes,mean``.

    ``first.position``/``last.position`` are the positions of a segment's first and last probe (as in the
    profiles table), ``probes`` how many probes it holds, ``mean`` the mean of the first feature (the
    logratio) over the segment.

    Parameters
    ----------
    path : str or path-like
    segmentations_by_sequence : mapping Sequence -> Segmentation, or list of (Sequence, Segmentation)
        A mapping may also be keyed by sequence name when ``sequences`` is given.
    sequences : list of Sequence, optional
        Resolves names used as keys of ``segmentations_by_sequence``.
    """
    write_text_file(path, segment_csv_text(segment_rows(segmentations_by_sequence, sequences)))


def write_seg_file(path, segmentations_by_sequence, sequences=None) -> None:
    """Write predicted segments as a DNAcopy/IGV ``.seg`` file (``ID chrom loc.start loc.end num.mark seg.mean``).

    Parameters are those of :func:`write_segments`; the format is described in :mod:`marginalia.io.segments`.
    """
    write_seg(path, segment_rows(segmentations_by_sequence, sequences))


def write_breaks(path, segmentations_by_sequence, sequences=None) -> None:
    """Write predicted breaks ``profile.id,chromosome,position``.

    A break at change index ``c`` is written at ``(positions[c-1] + positions[c]) / 2``, midway between the
    last probe of the left segment and the first probe of the right one.

    Parameters are those of :func:`write_segments`.
    """
    p = output_file(path)
    pairs = _pairs(segmentations_by_sequence, sequences)
    with open(p, "w", newline="", encoding="utf-8") as fh:
        fh.write("profile.id,chromosome,position\n")
        for seq, seg in pairs:
            pid, chrom = _csv_keys(seq)
            for c in seg.breakpoints.tolist():
                mid = (seq.positions[c - 1] + seq.positions[c]) / 2.0
                fh.write(f"{pid},{chrom},{fmt_number(mid)}\n")


def write_bedgraph(path, segmentations_by_sequence, sequences=None, *, track_name: str = "marginalia") -> None:
    """Write segment means as bedGraph, one ``track`` per profile, for genome browsers.

    Positions are taken as 1-based probe coordinates, so a segment from probe position ``a`` to ``b`` is
    the 0-based half-open interval ``[a - 1, b)``. Chromosomes get a ``chr`` prefix when missing; 23 and 24
    are written ``chrX`` and ``chrY`` (see :func:`marginalia.io.segments.ucsc_chromosome`).

    Parameters
    ----------
    path, segmentations_by_sequence, sequences
        As in :func:`write_segments`.
    track_name : str
        Prefix of each track's name (followed by the profile id).
    """
    write_text_file(path, bedgraph_text(segment_rows(segmentations_by_sequence, sequences), track_name=track_name))
