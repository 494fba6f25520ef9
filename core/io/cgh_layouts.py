"""Which columns of a copy-number table hold what: the layouts users already have, and bedGraph input.

No library is used: the layouts are plain delimited text and the decision is a matter of names. The
reader in :mod:`marginalia.io.cgh` asks this module how to read a table, then reads it with its fast
scanner.

Layouts
-------
* **long**: one row per probe, with a position and a log ratio column, optionally a profile id and a
  chromosome column, under any of the usual spellings (``profile.id``/``sample``/``ID``/``signal``,
  ``chromosome``/``chrom``/``chr``, ``position``/``pos``/``base``/``maploc``/``start``,
  ``logratio``/``log2ratio``/``LRR``/``value``...). The SegAnnDB probe files (``position,logratio``) and
  the animint signals (``signal,base,logratio``) are long tables.
* **wide** (DNAcopy's ``CNA`` object as a table): ``Clone,Chromosome,Position,<one column per sample>``.
  Each sample becomes its own profiles; an empty or ``NA`` cell is a probe missing from that sample and is
  skipped, never imputed.
* **bedGraph** (SegAnnDB's upload format): ``chrom start end value`` lines, optionally grouped under
  ``track ... name="..."`` lines (one profile per track) and ``browser``/``#`` lines. A probe's position is
  ``start + 1`` (bedGraph intervals are 0-based, half-open; positions in the tables are 1-based).

A column naming can always be given explicitly as ``{"id": ..., "chromosome": ..., "position": ...,
"logratio": ...}`` (on the command line ``--columns id=COL,chromosome=COL,position=COL,logratio=COL``),
where ``logratio`` may list several columns (``logratio=S1+S2``) for a wide table.

Position units
--------------
Positions are base pairs unless said otherwise: DNAcopy's Coriell table gives them in kilobases and some
tables in megabases. ``unit=kb`` (or ``Mb``) in the naming -- on the command line ``--position-unit kb``,
which may also stand alone -- multiplies the positions by 1,000 (1,000,000) and rounds them to whole base
pairs, so every later table (segments, ``.seg``, bedGraph) is in base pairs. A bedGraph is always in base
pairs. When no unit is given and the positions of a table on human chromosomes look like kb or Mb (they
stay within a chromosome's length in that unit and span more than half of one),
:class:`PositionUnitWarning` says so once.
"""

from __future__ import annotations

import math
import re
import shlex
from dataclasses import dataclass
from typing import Optional

import numpy as np

from ..exceptions import DataFormatError, DataWarning, ParameterError

__all__ = [
    "ROLES",
    "COLUMNS_SYNTAX",
    "POSITION_UNITS",
    "PositionUnitWarning",
    "position_unit_hint",
    "MISSING_VALUES",
    "NO_CHROMOSOME",
    "ProfileLayout",
    "parse_columns",
    "format_columns",
    "detect_layout",
    "default_profile_id",
    "is_bedgraph",
    "read_bedgraph_profiles",
    "annotation_columns",
    "looks_like_profile_header",
    "describe_table",
    "with_unit",
    "TablePreview",
    "preview_table",
]

#: the roles a profile table's columns can play
ROLES = ("id", "chromosome", "position", "logratio")
#: how a column naming is written on the command line
COLUMNS_SYNTAX = "--columns id=COL,chromosome=COL,position=COL,logratio=COL"
#: position unit -> base pairs per unit
POSITION_UNITS = {"bp": 1, "kb": 1_000, "Mb": 1_000_000}
#: approximate lengths of the human chromosomes (GRCh38, base pairs), for telling kb/Mb positions from bp
_HUMAN_CHROMOSOME_BP = {
    "1": 248_956_422, "2": 242_193_529, "3": 198_295_559, "4": 190_214_555, "5": 181_538_259, "6": 170_805_979,
    "7": 159_345_973, "8": 145_138_636, "9": 138_394_717, "10": 133_797_422, "11": 135_086_622,
    "12": 133_275_309, "13": 114_364_328, "14": 107_043_718, "15": 101_991_189, "16": 90_338_345,
    "17": 83_257_441, "18": 80_373_285, "19": 58_617_616, "20": 64_444_167, "21": 46_709_983, "22": 50_818_468,
    "X": 156_040_895, "Y": 57_227_415, "23": 156_040_895, "24": 57_227_415}


class PositionUnitWarning(DataWarning):
    """A table's positions look like kilobases or megabases but are read as base pairs (no unit was given)."""


#: cells meaning "no measurement" in a wide table (R writes NA; spreadsheets leave the cell empty)
MISSING_VALUES = frozenset({"", "na", "nan", "n/a", "null", "none", "-"})
#: the chromosome of the sequences of a table without a chromosome column
NO_CHROMOSOME = "NA"

# spellings in order of preference, compared after removing case and everything but letters and digits
_SYNONYMS = {
    "id": ("profile.id", "profile_id", "profile", "sample", "sample.id", "sample_id", "sample.name", "id",
           "signal", "track"),
    "chromosome": ("chromosome", "chrom", "chr", "chromosome.name", "seqnames", "seqname", "contig"),
    "position": ("position", "pos", "base", "maploc", "loc", "location", "bp", "position.bp", "coordinate",
                 "start", "chromstart", "loc.start"),
    "logratio": ("logratio", "log.ratio", "log2ratio", "log2.ratio", "log2", "lrr", "log.r.ratio", "cn",
                 "copy.number", "copynumber", "value", "signal.value"),
}


def _norm(name: str) -> str:
    return re.sub(r"[^0-9a-z]", "", name.lower())


_ROLE_OF = {}
for _role, _names in _SYNONYMS.items():
    for _rank, _n in enumerate(_names):
        _ROLE_OF.setdefault(_norm(_n), (_role, _rank))


@dataclass(frozen=True)
class ProfileLayout:
    """How to read a profile table.

    Attributes
    ----------
    kind : {"long", "wide"}
    id_col, chrom_col : int or None
        Column index of the profile id / chromosome, None when the table has none.
    pos_col : int
    value_cols : tuple of int
        The log ratio column (long), or one column per sample (wide).
    samples : tuple of str
        The header names of ``value_cols`` (wide: the profile ids).
    """

    kind: str
    id_col: Optional[int]
    chrom_col: Optional[int]
    pos_col: int
    value_cols: tuple
    samples: tuple = ()

    def describe(self, header) -> str:
        """The mapping in ``--columns`` syntax (what a preview shows)."""
        parts = []
        if self.id_col is not None:
            parts.append(f"id={header[self.id_col].strip()}")
        if self.chrom_col is not None:
            parts.append(f"chromosome={header[self.chrom_col].strip()}")
        parts.append(f"position={header[self.pos_col].strip()}")
        parts.append("logratio=" + "+".join(header[c].strip() for c in self.value_cols))
        return ",".join(parts)


def parse_columns(spec) -> Optional[dict]:
    """A column naming from ``"id=A,chromosome=B,position=C,logratio=D"`` or a mapping; None stays None.

    Returns
    -------
    dict role -> str or tuple of str
        ``logratio`` is always a tuple (several columns mean a wide table).

    Raises
    ------
    ParameterError
        An unknown role, an entry without ``=``, or a role given twice.
    """
    if spec is None:
        return None
    if isinstance(spec, str):
        items = []
        for part in (p for p in spec.split(",") if p.strip()):
            if "=" not in part:
                raise ParameterError(f"columns: {part.strip()!r} has no '='; expected {COLUMNS_SYNTAX} "
                                     "(id and chromosome are optional)")
            role, name = part.split("=", 1)
            items.append((role.strip(), name.strip()))
    elif isinstance(spec, dict):
        items = list(spec.items())
    else:
        raise ParameterError(f"columns: expected a mapping role -> column name or a string like "
                             f"'{COLUMNS_SYNTAX.split(' ', 1)[1]}', got {type(spec).__name__}")
    out: dict = {}
    for role, name in items:
        role = {"profile.id": "id", "chrom": "chromosome", "pos": "position", "position_unit": "unit",
                "position-unit": "unit"}.get(role, role)
        if role == "unit":
            if role in out:
                raise ParameterError("columns: 'unit' is given twice")
            out[role] = _unit(name)
            continue
        if role not in ROLES:
            raise ParameterError(f"columns: unknown role {role!r}; expected some of {', '.join(ROLES)} or unit "
                                 f"({COLUMNS_SYNTAX}[,unit=kb])")
        if role in out:
            raise ParameterError(f"columns: {role!r} is given twice")
        if role == "logratio":
            names = tuple(n.strip() for n in (name.split("+") if isinstance(name, str) else name) if n.strip())
            if not names:
                raise ParameterError("columns: logratio= names no column")
            out[role] = names
        else:
            if not isinstance(name, str) or not name.strip():
                raise ParameterError(f"columns: {role}= names no column")
            out[role] = name.strip()
    if set(out) == {"unit"}:
        return out      # only the unit: the columns are recognised from their names
    if "position" not in out or "logratio" not in out:
        missing = [r for r in ("position", "logratio") if r not in out]
        raise ParameterError(f"columns: {' and '.join(missing)} missing; expected {COLUMNS_SYNTAX} "
                             "(id and chromosome are optional)")
    return out


def format_columns(columns) -> Optional[str]:
    """The ``--columns`` text of a naming (None for None): a picklable, hashable key for caches."""
    cols = parse_columns(columns)
    if cols is None:
        return None
    text = ",".join(f"{r}={'+'.join(cols[r]) if r == 'logratio' else cols[r]}" for r in ROLES if r in cols)
    if "unit" in cols:
        text += ("," if text else "") + f"unit={cols['unit']}"
    return text


def _unit(name) -> str:
    """A position unit's canonical spelling (``bp``, ``kb``, ``Mb``; case and a trailing ``p`` are forgiven)."""
    spellings = {"bp": "bp", "b": "bp", "kb": "kb", "kbp": "kb", "mb": "Mb", "mbp": "Mb"}
    unit = spellings.get(str(name).strip().lower())
    if unit is None:
        raise ParameterError(f"columns: unit {name!r} is not a position unit; expected one of "
                             f"{', '.join(POSITION_UNITS)}")
    return unit


def with_unit(columns, unit: Optional[str]) -> Optional[str]:
    """``columns`` (``--columns`` text, a mapping or None) with the position ``unit`` added, as ``--columns`` text.

    Raises
    ------
    ParameterError
        An unknown unit, or a naming that already states a different unit.
    """
    if unit is None:
        return format_columns(columns)
    unit = _unit(unit)
    cols = dict(parse_columns(columns) or {})
    if cols.get("unit", unit) != unit:
        raise ParameterError(f"columns: the naming says unit={cols['unit']} but the position unit is {unit}; "
                             "give it once")
    cols["unit"] = unit
    return format_columns(cols)


def position_unit_hint(chromosomes, max_positions, *, fractional: bool = True) -> Optional[str]:
    """``"kb"`` or ``"Mb"`` when positions read as bp look like that unit on human chromosomes, else None.

    Parameters
    ----------
    chromosomes : sequence of str
        The chromosome of each sequence (``chr`` prefixes allowed).
    max_positions : sequence of float
        The largest position of each sequence, in the table's numbers.
    fractional : bool
        Whether some positions are not whole numbers; Mb is only suggested then (a real array has many
        probes per megabase, a small whole-numbered test table none).

    A unit is suggested when every human chromosome's positions stay within its length in that unit (30 %
    slack) and at least one spans more than half of it: a bp table of a whole genome reaches tens of
    millions, a small test table covers a tiny part of a chromosome.
    """
    pairs = []
    for chrom, top in zip(chromosomes, max_positions):
        name = str(chrom).strip()
        name = name[3:] if name.lower().startswith("chr") else name
        length = _HUMAN_CHROMOSOME_BP.get(name.upper())
        if length is not None and math.isfinite(float(top)):
            pairs.append((float(top), length))
    if not pairs:
        return None
    for unit in ("Mb", "kb") if fractional else ("kb",):
        per = POSITION_UNITS[unit]
        if all(top <= 1.3 * length / per for top, length in pairs) and \
                any(top > 0.5 * length / per for top, length in pairs):
            return unit
    return None


def _find(header, name: str, path) -> int:
    names = [h.strip() for h in header]
    if name in names:
        return names.index(name)
    lowered = [n.lower() for n in names]
    if name.lower() in lowered:
        return lowered.index(name.lower())
    raise DataFormatError(f"no column {name!r}; found columns {names}. Name the columns with {COLUMNS_SYNTAX}",
                          path=str(path), where="line 1")


def _numeric_or_missing(text: str) -> bool:
    t = text.strip().strip('"')
    if t.lower() in MISSING_VALUES:
        return True
    try:
        float(t)
    except ValueError:
        return False
    return True


def detect_layout(header, sample_rows, path, columns=None) -> ProfileLayout:
    """Decide how to read a table from its header (and its first rows, for a wide table's sample columns).

    Parameters
    ----------
    header : list of str
    sample_rows : list of list of str
        The first data rows (a few dozen are plenty), split like the header.
    path : path-like
        Named in errors.
    columns : mapping or str, optional
        An explicit naming (see :func:`parse_columns`); without it the usual spellings are recognised.

    Raises
    ------
    DataFormatError
        When the columns cannot be mapped: the message names the columns found and the ``--columns`` syntax.
    """
    cols = parse_columns(columns)
    names = [h.strip().strip('"') for h in header]
    if cols is not None and "position" in cols:
        idc = _find(names, cols["id"], path) if "id" in cols else None
        chc = _find(names, cols["chromosome"], path) if "chromosome" in cols else None
        poc = _find(names, cols["position"], path)
        vals = tuple(_find(names, n, path) for n in cols["logratio"])
        if len(vals) > 1:
            return ProfileLayout("wide", None, chc, poc, vals, tuple(names[c] for c in vals))
        return ProfileLayout("long", idc, chc, poc, vals)
    best: dict = {}
    for i, n in enumerate(names):
        hit = _ROLE_OF.get(_norm(n))
        if hit is None:
            continue
        role, rank = hit
        if role not in best or rank < best[role][1]:
            best[role] = (i, rank)
    idc = best["id"][0] if "id" in best else None
    chc = best["chromosome"][0] if "chromosome" in best else None
    poc = best["position"][0] if "position" in best else None
    if poc is not None and "logratio" in best:
        return ProfileLayout("long", idc, chc, poc, (best["logratio"][0],))
    if poc is not None and idc is None:
        used = {poc, chc}
        rows = [r for r in sample_rows if len(r) == len(names)]
        samples = tuple(i for i in range(len(names)) if i not in used and rows
                        and all(_numeric_or_missing(r[i]) for r in rows)
                        and any(r[i].strip().strip('"').lower() not in MISSING_VALUES for r in rows))
        if samples:
            return ProfileLayout("wide", None, chc, poc, samples, tuple(names[c] for c in samples))
    missing = [r for r in ("position", "logratio") if r not in best]
    what = " and ".join(f"column {r!r}" for r in missing) or "sample columns"
    raise DataFormatError(
        f"missing {what} (no column has a name this reader knows for it); found columns {names}. "
        f"Name them with {COLUMNS_SYNTAX} (id and chromosome are optional; logratio=S1+S2 for a table with one "
        f"column per sample)", path=str(path), where="line 1")


def default_profile_id(path) -> str:
    """The profile id of a file that names none: its name without the format's suffixes."""
    name = str(getattr(path, "name", path))
    for suffix in (".gz", ".bedgraph", ".bedGraph", ".bg", ".csv", ".tsv", ".txt"):
        if name.lower().endswith(suffix.lower()):
            name = name[: -len(suffix)]
    return name or "profile"


def is_bedgraph(path, first_line: str) -> bool:
    """True for a bedGraph: by its name (``.bedGraph``, ``.bg``, ``.gz`` after them) or its first line."""
    name = str(path).lower()
    if name.endswith(".gz"):
        name = name[:-3]
    if name.endswith((".bedgraph", ".bg")):
        return True
    head = first_line.lstrip()
    return head.startswith(("browser ", "browser\t")) or (head.startswith(("track ", "track\t")) and "=" in head)


def _track_name(line: str) -> Optional[str]:
    try:
        words = shlex.split(line)
    except ValueError:
        words = line.split()
    for w in words[1:]:
        if w.startswith("name="):
            return w[5:] or None
    return None


def read_bedgraph_profiles(path, text: str) -> list:
    """Parse bedGraph text into ``(profile id, chromosome, positions, values)`` tuples, in order of appearance.

    Parameters
    ----------
    path : path-like
        Named in errors and used as the profile id of data before any ``track name=`` line.
    text : str
        The file's text (already un-gzipped and decoded).

    Raises
    ------
    DataFormatError
        A data line without 4 fields, a non-integer start/end, ``end <= start``, a non-finite value.
    """
    from collections import OrderedDict
    profile = default_profile_id(path)
    groups: OrderedDict = OrderedDict()
    for line_no, line in enumerate(text.splitlines(), 1):
        s = line.strip()
        if not s or s.startswith("#"):
            continue
        if s.startswith("track"):
            profile = _track_name(s) or profile
            continue
        if s.startswith("browser"):
            continue
        f = s.split()
        if len(f) != 4:
            raise DataFormatError(f"found {len(f)} fields, expected 4 (chrom start end value) in a bedGraph line",
                                  path=str(path), where=f"line {line_no}")
        try:
            start, end = int(f[1]), int(f[2])
        except ValueError:
            raise DataFormatError(f"start {f[1]!r} / end {f[2]!r} are not whole numbers; bedGraph coordinates are "
                                  "0-based integers", path=str(path), where=f"line {line_no}") from None
        if end <= start or start < 0:
            raise DataFormatError(f"interval [{start}, {end}) is empty or negative; expected 0 <= start < end",
                                  path=str(path), where=f"line {line_no}")
        try:
            v = float(f[3])
        except ValueError:
            v = math.nan
        if not math.isfinite(v):
            raise DataFormatError(f"value {f[3]!r} is not a finite number; remove the line or fill in its value",
                                  path=str(path), where=f"line {line_no}, column 4")
        pos, vals = groups.setdefault((profile, f[0]), ([], []))
        pos.append(start + 1)
        vals.append(v)
    if not groups:
        raise DataFormatError("the bedGraph holds no data line (chrom start end value)", path=str(path))
    return [(pid, chrom, np.asarray(pos, dtype=np.float64), np.asarray(vals, dtype=np.float64))
            for (pid, chrom), (pos, vals) in groups.items()]


_ANNOTATION_SYNONYMS = {
    "id": _SYNONYMS["id"],
    "chromosome": _SYNONYMS["chromosome"],
    "min": ("min", "first.base", "start", "chromstart", "loc.start", "from"),
    "max": ("max", "last.base", "end", "chromend", "loc.end", "to"),
    "annotation": ("annotation", "label", "annotations"),
}


def annotation_columns(header) -> Optional[tuple]:
    """Column indices ``(id, chromosome, min, max, annotation)`` of a region table under the usual spellings.

    ``id`` and ``chromosome`` are None when absent (the animint labels ``signal,first.base,last.base,annotation``
    have no chromosome, SegAnnDB's ``min,max,annotation`` neither); None when min, max or annotation is missing.
    """
    names = [_norm(h.strip().strip('"')) for h in header]
    found = {}
    for role, spellings in _ANNOTATION_SYNONYMS.items():
        for sp in spellings:
            if _norm(sp) in names:
                found[role] = names.index(_norm(sp))
                break
    if not all(r in found for r in ("min", "max", "annotation")):
        return None
    return found.get("id"), found.get("chromosome"), found["min"], found["max"], found["annotation"]


def looks_like_profile_header(header_line: str, *, strict: bool = False) -> bool:
    """True when a header line names copy-number columns: a chromosome column, an id column with a position
    or log ratio column, or a position with a log ratio (the SegAnnDB and animint files).

    A table with a chromosome column but others missing counts, so that the profile reader's error names
    what is missing (read as a generic series it would become a meaningless sequence). ``strict`` asks for a
    position or log ratio column too (a folder scan then passes over annotation tables)."""
    cells = [c.strip().strip('"') for c in header_line.replace("\t", ",").replace(";", ",").split(",")]
    roles = {_ROLE_OF[_norm(c)][0] for c in cells if _norm(c) in _ROLE_OF}
    if strict and not roles & {"position", "logratio"}:
        return False
    if "chromosome" in roles or ("position" in roles and "logratio" in roles):
        return True
    return "id" in roles and bool(roles & {"position", "logratio"})


@dataclass(frozen=True)
class TablePreview:
    """The head of a copy-number table, enough to show its columns and to try namings without reading it again.

    Attributes
    ----------
    path : str
    header : tuple of str
        The column names.
    rows : tuple of tuple of str
        The first data rows (at most 50), split like the header.
    detected : dict or None
        The naming recognised without ``--columns`` (role -> column name; ``logratio`` a tuple), None when
        the columns cannot be mapped (``error`` then says why).
    error : str or None
    unit_hint : str or None
        ``"kb"``/``"Mb"`` when the whole table's positions look like that unit (set by the import plan, which
        reads the table; see :func:`position_unit_hint`).
    """

    path: str
    header: tuple
    rows: tuple
    detected: Optional[dict]
    error: Optional[str] = None
    unit_hint: Optional[str] = None

    def naming(self, columns=None) -> dict:
        """The naming a ``columns`` choice (None: the recognised one) gives, role -> column name(s).

        Raises
        ------
        DataFormatError, ParameterError
            As the reader would: a column that does not exist, columns that cannot be mapped.
        """
        lay = detect_layout(list(self.header), [list(r) for r in self.rows], self.path, columns)
        out = {}
        if lay.id_col is not None:
            out["id"] = self.header[lay.id_col]
        if lay.chrom_col is not None:
            out["chromosome"] = self.header[lay.chrom_col]
        out["position"] = self.header[lay.pos_col]
        out["logratio"] = tuple(self.header[c] for c in lay.value_cols)
        return out

    def describe(self, columns=None) -> str:
        """How the table reads with ``columns``, in the words of :func:`describe_table` (raises like it).

        The first rows are checked too: a position or log ratio column holding text is refused, naming it.
        """
        lay = detect_layout(list(self.header), [list(r) for r in self.rows], self.path, columns)
        for c in (lay.pos_col, *lay.value_cols):
            for k, row in enumerate(self.rows):
                cell = row[c]
                if not _numeric_or_missing(cell) or (c == lay.pos_col and cell.strip().lower() in MISSING_VALUES):
                    role = "position" if c == lay.pos_col else "log ratio"
                    raise DataFormatError(f"column {self.header[c]!r} holds {cell!r}, not a number; it cannot be "
                                          f"the {role}. Choose another column", path=self.path,
                                          where=f"data row {k + 1}")
        return _layout_text(lay, list(self.header), columns)


def _layout_text(lay, names: list, columns) -> str:
    """The one-line description :func:`describe_table` gives of a detected layout."""
    unit = (parse_columns(columns) or {}).get("unit")
    tail = f", positions in {unit}" if unit else ""
    if lay.kind == "wide":
        return f"DNAcopy wide table, {len(lay.samples)} samples: {lay.describe(names)}{tail}"
    return f"long table: {lay.describe(names)}{tail}"


def sniff_delimiter(header_line: str) -> str:
    """A copy-number table's delimiter, from its header line: the first of ``,``, tab, ``;`` it holds, else ``,``."""
    for delim in (",", "\t", ";"):
        if delim in header_line:
            return delim
    return ","


def _head_lines(p) -> list:
    import gzip
    with open(p, "rb") as fh:
        gz = fh.read(2) == b"\x1f\x8b"
    with (gzip.open(p, "rb") if gz else open(p, "rb")) as fh:
        head = fh.read(65536).decode("utf-8", "replace")
    lines = [ln for ln in head.splitlines() if ln.strip()]
    if len(head) == 65536 and len(lines) > 2:
        lines = lines[:-1]   # the last line read may be cut short
    return lines


def _head_rows(lines: list) -> list:
    """The header and up to 50 data rows of :func:`_head_lines`, split at the table's delimiter."""
    import csv
    import io
    return list(csv.reader(io.StringIO("\n".join(lines[:51])), delimiter=sniff_delimiter(lines[0])))


def preview_table(path) -> Optional[TablePreview]:
    """The head of a delimited copy-number table (None for a bedGraph or an empty file), from its first 64 KB."""
    import pathlib
    p = pathlib.Path(path)
    lines = _head_lines(p)
    if not lines or is_bedgraph(p, lines[0]):
        return None
    rows = _head_rows(lines)
    header = tuple(h.strip().strip('"') for h in rows[0])
    body = tuple(tuple(c.strip() for c in r) for r in rows[1:] if len(r) == len(header))
    preview = TablePreview(str(p), header, body, None)
    try:
        detected = preview.naming()
    except (DataFormatError, ParameterError) as exc:
        return TablePreview(str(p), header, body, None, error=str(exc))
    return TablePreview(str(p), header, body, detected, )


def describe_table(path, columns=None) -> str:
    """How a copy-number file will be read, in one line (what an import dialog shows), without reading it all.

    Returns e.g. ``"DNAcopy wide table, 2 samples: chromosome=Chromosome,position=Position,logratio=A+B"``,
    ``"long table: id=profile.id,chromosome=chromosome,position=position,logratio=logratio"`` or
    ``"bedGraph"``.

    Raises
    ------
    DataFormatError
        As the reader would: the columns cannot be mapped (the message names them and the syntax).
    """
    import pathlib
    p = pathlib.Path(path)
    lines = _head_lines(p)
    if not lines:
        raise DataFormatError("the file is empty; expected a header line and data rows", path=str(p))
    if is_bedgraph(p, lines[0]):
        return "bedGraph"
    rows = _head_rows(lines)
    lay = detect_layout(rows[0], rows[1:], p, columns)
    return _layout_text(lay, [h.strip().strip('"') for h in rows[0]], columns)
