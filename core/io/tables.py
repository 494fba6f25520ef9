"""Small comma-separated tables with a header line: the CLI's pairs, anchors, onset and ground-truth tables.

One reader for all of them, so that every such table accepts the same files (UTF-8 with or without a
byte-order mark, gzip-compressed or not) and every error names the file and the line the same way.
The large numeric formats (aCGH profiles, label tracks) have readers of their own in this package.
"""

from __future__ import annotations

import csv
import io
import pathlib

from ..exceptions import DataFormatError
from ._common import decode_text, existing_file, read_bytes

__all__ = ["read_csv_table", "listed_file"]


def read_csv_table(path, *, argname: str = "path") -> tuple:
    """Read a comma-separated table whose first line names its columns.

    Parameters
    ----------
    path : str or path-like
    argname : str
        The argument named when ``path`` is not a path at all.

    Returns
    -------
    path : pathlib.Path
    header : list of str, shape (C,)
        The column names, surrounding spaces removed.
    rows : list of (int, dict), shape (R,)
        Each data row with the file line it ends on (1-based, the header being line 1), as a dict from
        column name to text (``None`` for a column the row is short of). Blank lines are skipped.

    Raises
    ------
    DataFormatError
        No such file, not UTF-8 text, an empty file, or a malformed quoted field (naming the line).
    """
    p: pathlib.Path = existing_file(path, argname)
    text = decode_text(read_bytes(p), p)
    reader = csv.DictReader(io.StringIO(text))
    try:
        if not reader.fieldnames:
            raise DataFormatError("empty file; expected a CSV table with a header line", path=str(p))
        header = [h.strip() for h in reader.fieldnames]
        reader.fieldnames = header
        rows = [(reader.line_num, row) for row in reader]
    except csv.Error as exc:
        raise DataFormatError(f"not a readable CSV table ({exc})", path=str(p),
                              where=f"line {reader.reader.line_num}") from None
    return p, header, rows


def listed_file(table_path: pathlib.Path, line: int, row: dict, column: str):
    """The file a table's cell names, relative to the table's folder unless absolute; ``None`` when the cell is empty.

    Parameters
    ----------
    table_path : pathlib.Path
        The table the cell is in (its folder resolves relative paths; it is named in errors).
    line : int
        The row's line in the table, for errors.
    row : dict
        The row, as :func:`read_csv_table` returns it.
    column : str

    Raises
    ------
    DataFormatError
        The cell names a file that does not exist (or is not a regular file).
    """
    value = (row.get(column) or "").strip()
    if not value:
        return None
    q = pathlib.Path(value)
    q = q if q.is_absolute() else table_path.parent / q
    if not q.is_file():
        raise DataFormatError(f"column {column!r}: no such file {str(q)!r}", path=str(table_path), where=f"line {line}")
    return q
