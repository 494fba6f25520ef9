"""Generic time series as CSV/TSV: one column of positions (times), the other numeric columns as features."""

from __future__ import annotations

import csv
import io
import math

import numpy as np

from ..checks import check_choice
from ..exceptions import DataFormatError, ParameterError
from ..types import Sequence
from . import _csvscan
from ._common import (
    decode_text,
    existing_file,
    fmt_number,
    is_number_text,
    output_file,
    read_bytes,
    warn_if_unterminated,
)

__all__ = ["read_series", "write_series"]

_SECONDS_NAMES = ("time", "t", "seconds", "second", "sec", "s", "time_s", "times")


def _sniff(lines: list) -> str:
    sample = "\n".join(lines[:20])
    try:
        return csv.Sniffer().sniff(sample, delimiters=",\t;| ").delimiter
    except csv.Error:
        counts = {d: lines[0].count(d) for d in ",\t;|"}
        best = max(counts, key=counts.get)
        return best if counts[best] else ","


def _units(name: str) -> str:
    low = name.strip().lower()
    if low in _SECONDS_NAMES or low.endswith(("_s", "(s)", "[s]", " s")):
        return "s"
    return name or "index"


def read_series(path, *, time_column=None) -> Sequence:
    """Read a delimited time series (delimiter sniffed among ``, TAB ; | space``).

    Parameters
    ----------
    path : str or path-like
    time_column : None, str, int or False
        The column of positions: ``None`` = the first column, a header name, a 0-based index, or
        ``False`` for none (positions ``0..T-1``).

    Returns
    -------
    sequence : Sequence
        ``values`` shape (T, p) from the other numeric columns (a column is numeric when its first value
        is a number; text columns are skipped and listed in ``meta["skipped_columns"]``), ``positions``
        (T,), ``feature_names`` from the header (``col1``... without one), ``units`` ``"s"`` when the time
        column is named like a time in seconds, else its name, ``kind="series"``, ``name`` = file stem.

    Raises
    ------
    DataFormatError
        Empty file, no numeric feature column, unknown time column, a missing or non-numeric value,
        NaN/inf, decreasing positions, rows with a different number of fields.
    """
    if not (time_column is None or time_column is False or isinstance(time_column, (str, int))) or \
            time_column is True:
        raise ParameterError(f"time_column: expected None, a column name, a column index or False, got "
                             f"{time_column!r}")
    p = existing_file(path)
    raw = read_bytes(p)
    if raw.startswith(b"\xef\xbb\xbf"):
        raw = raw[3:]
    # plain ASCII tables without quotes or comments go through the byte scanner; the rest through csv
    fast = raw.isascii() and b'"' not in raw and b"#" not in raw
    windowed = fast and len(raw) > 65536
    head_text = raw[:65536].decode("ascii") if fast else decode_text(raw, p)
    head_lines = [line.rstrip("\r") for line in head_text.split("\n")]
    if windowed:
        head_lines = head_lines[:-1]  # the last line may be cut by the window
    numbered = [(n, line) for n, line in enumerate(head_lines, start=1)
                if line.strip() and not line.lstrip().startswith("#")]
    if not numbered:
        raise DataFormatError("the file is empty; expected a table with a time column and numeric columns",
                              path=str(p))
    delim = _sniff([line for _, line in numbered[:21]])
    fast = fast and delim != " "

    def split(line):
        fields = next(csv.reader([line], delimiter=delim, skipinitialspace=True))
        return [f for f in fields if f != ""] if delim == " " else fields

    first_line_no, first = numbered[0][0], split(numbered[0][1])
    has_header = not all(is_number_text(f) for f in first)
    header = [h.strip() for h in first] if has_header else [f"col{j + 1}" for j in range(len(first))]
    ncols = len(header)
    if has_header and len(numbered) < 2:
        raise DataFormatError("the table has a header but no data rows", path=str(p))
    sample = split(numbered[1][1] if has_header else numbered[0][1])
    if len(sample) != ncols:
        raise DataFormatError(f"found {len(sample)} fields, expected {ncols} like the first line (delimiter "
                              f"{delim!r})", path=str(p), where=f"line {numbered[1 if has_header else 0][0]}")
    if time_column is None:
        tcol = 0
    elif time_column is False:
        tcol = None
    elif isinstance(time_column, str):
        if time_column not in header:
            raise DataFormatError(f"no column named {time_column!r}; found {header}", path=str(p), where="line 1")
        tcol = header.index(time_column)
    else:
        if not 0 <= time_column < ncols:
            raise ParameterError(f"time_column: index {time_column} is out of range for {ncols} columns")
        tcol = time_column
    feat_cols = [j for j in range(ncols) if j != tcol and is_number_text(sample[j])]
    skipped = [header[j] for j in range(ncols) if j != tcol and j not in feat_cols]
    if not feat_cols:
        raise DataFormatError(f"no numeric column besides the time column; found columns {header}", path=str(p))
    num_cols = ([] if tcol is None else [tcol]) + feat_cols
    names = [header[j] for j in num_cols]
    if fast:
        # offset of the first data line: just after the header line, or the first non-blank line
        lines_before = first_line_no if has_header else first_line_no - 1
        start = 0
        for _ in range(lines_before):
            start = raw.index(b"\n", start) + 1
        table, line_of_row = _scan_fast(raw, start, delim, ncols, num_cols, names, p)
    else:
        text = raw.decode("ascii") if windowed else head_text
        table, line_of_row = _parse_python(text, delim, split, has_header, ncols, num_cols, names, p)
    if tcol is None:
        positions = np.arange(table.shape[0], dtype=np.float64)
        values = table
        units = "index"
    else:
        positions, values = table[:, 0], table[:, 1:]
        bad = np.flatnonzero(np.diff(positions) < 0)
        if bad.size:
            i = int(bad[0]) + 1
            raise DataFormatError(f"{header[tcol]} goes back from {fmt_number(positions[i - 1])} to "
                                  f"{fmt_number(positions[i])}; expected non-decreasing positions (sort the file)",
                                  path=str(p), where=f"line {line_of_row(i)}, column {header[tcol]}")
        units = _units(header[tcol]) if has_header else "index"
    warn_if_unterminated(raw, p)   # read, but its last value may be cut short
    return Sequence(values=values, positions=positions, name=p.stem, units=units, kind="series",
                    feature_names=tuple(header[j] for j in feat_cols),
                    meta={"source": str(p), "time_column": None if tcol is None else header[tcol],
                          "skipped_columns": tuple(skipped), "delimiter": delim})


def _value(text: str, name: str, path, line_no) -> float:
    """Parse one field the Python way; raise naming the line and column when it is not a finite number."""
    try:
        v = float(text)
    except ValueError:
        what = "empty value" if not text.strip() else f"{text.strip()!r} is not a number"
        raise DataFormatError(f"{what}; expected a number in every row of a numeric column", path=str(path),
                              where=f"line {line_no}, column {name}") from None
    if not math.isfinite(v):
        raise DataFormatError(f"value {text.strip()!r} is not finite; fill or remove it", path=str(path),
                              where=f"line {line_no}, column {name}")
    return v


def _field_count_error(found, ncols, delim, path, line_no):
    return DataFormatError(f"found {found} fields, expected {ncols} like the first line (delimiter {delim!r})",
                           path=str(path), where=f"line {line_no}")


def _parse_python(text, delim, split, has_header, ncols, num_cols, names, path):
    """Reference parser (csv module, comments and quotes allowed). Returns (table (R, M), row -> line)."""
    rows = [(n, line.rstrip("\r")) for n, line in enumerate(text.split("\n"), start=1)
            if line.strip() and not line.lstrip().startswith("#")]
    rows = rows[1:] if has_header else rows
    if not rows:
        raise DataFormatError("the table has a header but no data rows", path=str(path))
    table = np.empty((len(rows), len(num_cols)))
    for i, (n, line) in enumerate(rows):
        r = split(line)
        if len(r) != ncols:
            raise _field_count_error(len(r), ncols, delim, path, n)
        for m, j in enumerate(num_cols):
            table[i, m] = _value(r[j], names[m], path, n)
    return table, lambda i: rows[i][0]


def _scan_fast(raw, start, delim, ncols, num_cols, names, path):
    """Byte-scanner parser for plain ASCII tables. Returns (table (R, M), row -> line)."""
    buf = np.frombuffer(raw, dtype=np.uint8)
    table, flagged, row_off, _, error = _csvscan.scan_rows(buf, start, ord(delim), ncols, [], num_cols)

    def line_of(offset):
        return raw.count(b"\n", 0, offset) + 1

    if error is not None:
        raise _field_count_error(error[1], ncols, delim, path, line_of(error[0]))
    for r, m in flagged.tolist():
        off = int(row_off[r])
        end = raw.find(b"\n", off)
        field = raw[off:None if end < 0 else end].decode("ascii").rstrip("\r").split(delim)[num_cols[m]]
        try:
            v = float(field)
        except ValueError:
            v = math.nan
        table[r, m] = v if math.isfinite(v) else _value(field, names[m], path, line_of(off))
    if table.shape[0] == 0:
        raise DataFormatError("the table has a header but no data rows", path=str(path))
    return table, lambda i: line_of(int(row_off[i]))


def write_series(path, sequence, *, delimiter=",", time_name=None) -> None:
    """Write a sequence as a delimited table: the positions, then one column per feature.

    Parameters
    ----------
    path : str or path-like
    sequence : Sequence
    delimiter : {",", "\\t", ";"}
    time_name : str, optional
        Header of the positions column; default ``meta["time_column"]``, else ``"time_s"`` for
        ``units="s"``, else ``"position"``.

    Notes
    -----
    Numbers are written with the shortest text that reads back to the same float, so
    ``read_series(write_series(s))`` reproduces values and positions exactly.
    """
    p = output_file(path)
    if not isinstance(sequence, Sequence):
        raise ParameterError(f"sequence: expected a Sequence, got {type(sequence).__name__}")
    check_choice(delimiter, "delimiter", (",", "\t", ";"))
    if time_name is None:
        time_name = sequence.meta.get("time_column") or ("time_s" if sequence.units == "s" else "position")
    names = list(sequence.feature_names) or [f"x{j + 1}" for j in range(sequence.n_features)]
    header = [str(time_name)] + [str(n) for n in names]
    if len(set(header)) != len(header):
        raise ParameterError(f"sequence.feature_names: column names must be distinct from each other and from "
                             f"the time column {time_name!r}, got {header}")
    buf = io.StringIO()
    w = csv.writer(buf, delimiter=delimiter, lineterminator="\n")
    w.writerow(header)
    for t, row in zip(sequence.positions.tolist(), sequence.values.tolist()):
        w.writerow([fmt_number(t)] + [fmt_number(v) for v in row])
    p.write_text(buf.getvalue(), encoding="utf-8")
