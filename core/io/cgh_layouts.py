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
"""

from __future__ import annotations

import math
import re
import shlex
from dataclasses import dataclass
from typing import Optional

import numpy as np

from ..exceptions import DataFormatError, ParameterError

__all__ = [
    "ROLES",
    "COLUMNS_SYNTAX",
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
]

#: the roles a profile table's columns can play
ROLES = ("id", "chromosome", "position", "logratio")
#: how a column naming is written on the command line
COLUMNS_SYNTAX = "--columns id=COL,chromosome=COL,position=COL,logratio=COL"
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
        role = {"profile.id": "id", "chrom": "chromosome", "pos": "position"}.get(role, role)
        if role not in ROLES:
            raise ParameterError(f"columns: unknown role {role!r}; expected some of {', '.join(ROLES)} "
                                 f"({COLUMNS_SYNTAX})")
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
    return ",".join(f"{r}={'+'.join(cols[r]) if r == 'logratio' else cols[r]}" for r in ROLES if r in cols)


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
    if cols is not None:
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
    import csv
    import gzip
    import io
    import pathlib
    p = pathlib.Path(path)
    with open(p, "rb") as fh:
        gz = fh.read(2) == b"\x1f\x8b"
    with (gzip.open(p, "rb") if gz else open(p, "rb")) as fh:
        head = fh.read(65536).decode("utf-8", "replace")
    lines = [ln for ln in head.splitlines() if ln.strip()]
    if len(head) == 65536 and len(lines) > 2:
        lines = lines[:-1]   # the last line read may be cut short
    if not lines:
        raise DataFormatError("the file is empty; expected a header line and data rows", path=str(p))
    if is_bedgraph(p, lines[0]):
        return "bedGraph"
    first = lines[0]
    delim = "," if "," in first else "\t" if "\t" in first else ";" if ";" in first else ","
    rows = list(csv.reader(io.StringIO("\n".join(lines[:51])), delimiter=delim))
    lay = detect_layout(rows[0], rows[1:], p, columns)
    names = [h.strip().strip('"') for h in rows[0]]
    if lay.kind == "wide":
        return f"DNAcopy wide table, {len(lay.samples)} samples: {lay.describe(names)}"
    return f"long table: {lay.describe(names)}"
