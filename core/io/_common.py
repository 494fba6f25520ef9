"""Helpers shared by the file-format modules: path checks, text decoding, number formatting."""

from __future__ import annotations

import math
import os
import pathlib
import warnings
import zlib

from ..exceptions import DataFormatError, DataWarning, ParameterError

GZIP_MAGIC = b"\x1f\x8b"


def existing_file(path, argname: str = "path") -> pathlib.Path:
    """Return ``path`` as a :class:`pathlib.Path` after checking that it names a readable file.

    Raises
    ------
    ParameterError
        ``path`` is not a str or path-like.
    DataFormatError
        The file does not exist or is a directory.
    """
    if not isinstance(path, (str, os.PathLike)):
        raise ParameterError(f"{argname}: expected a file path (str or os.PathLike), got {type(path).__name__}")
    p = pathlib.Path(path)
    if not p.exists():
        raise DataFormatError("no such file; check the path", path=str(p))
    if p.is_dir():
        raise DataFormatError("is a directory, expected a file", path=str(p))
    return p


def output_file(path, argname: str = "path") -> pathlib.Path:
    """Return ``path`` as a Path for writing, checking that its folder exists."""
    if not isinstance(path, (str, os.PathLike)):
        raise ParameterError(f"{argname}: expected a file path (str or os.PathLike), got {type(path).__name__}")
    p = pathlib.Path(path)
    if not p.parent.exists():
        raise ParameterError(f"{argname}: folder {str(p.parent)!r} does not exist; create it first")
    if p.is_dir():
        raise ParameterError(f"{argname}: {str(p)!r} is a directory, expected a file name")
    return p


def write_text_file(path, text: str, argname: str = "path") -> None:
    """Write ``text`` as UTF-8 to ``path`` (checked by :func:`output_file`), line ends as given.

    Not atomic by itself: the CLI and the exports call the writers through :func:`marginalia.atomic.publish`.
    """
    p = output_file(path, argname)
    with open(p, "w", newline="", encoding="utf-8") as fh:
        fh.write(text)


def read_bytes(path: pathlib.Path) -> bytes:
    """Read a file, transparently un-gzipping it when it starts with the gzip magic number."""
    with open(path, "rb") as fh:
        head = fh.read(2)
    try:
        data = path.read_bytes()
        if head != GZIP_MAGIC:
            return data
        # one-shot zlib is ~1.5x faster than gzip.open().read(); members are concatenated like gzip does
        parts = []
        while data:
            d = zlib.decompressobj(16 + zlib.MAX_WBITS)
            parts.append(d.decompress(data))
            if not d.eof:
                raise EOFError("compressed file ended before the end-of-stream marker was reached")
            data = d.unused_data
            if data and data[:2] != GZIP_MAGIC:
                break  # trailing garbage after the last member: ignored, as gzip does for zero padding
        return b"".join(parts) if len(parts) > 1 else parts[0]
    except (OSError, EOFError, zlib.error) as exc:
        raise DataFormatError(f"cannot read the file ({exc}); is the .gz archive complete?", path=str(path)) from None


def decode_text(raw: bytes, path: pathlib.Path) -> str:
    """Decode UTF-8 text (a leading byte-order mark is dropped)."""
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = raw[: exc.start].count(b"\n") + 1
        raise DataFormatError(f"not UTF-8 text (byte {exc.start}); expected a text table. Is this a binary file?",
                              path=str(path), where=f"line {line}") from None


def is_number_text(text: str) -> bool:
    """Whether a file's field reads as a number (``float`` accepts it: ``"1e-3"``, ``"nan"``, ``" 2 "``)."""
    try:
        float(text)
        return True
    except ValueError:
        return False


def fmt_number(x: float) -> str:
    """Format a number the shortest way that reads back to the same float (integers without ``.0``)."""
    x = float(x)
    if math.isfinite(x) and x == int(x) and abs(x) < 1e15:
        return str(int(x))
    return repr(x)


class UnterminatedTableWarning(DataWarning):
    """A table's last line has no line end: the file may have been cut short, and its last value with it."""


def warn_if_unterminated(raw: bytes, path) -> None:
    """Warn (:class:`UnterminatedTableWarning`) when a text table's last line has no line end.

    A number cut short still reads as a number (``-0.153`` cut to ``-0.``), so a copy or download
    interrupted mid-row is otherwise read without a word; the usual writers of these tables (R,
    pandas, this package) end every row with a line end.
    """
    if raw.endswith((b"\n", b"\r")):
        return
    tail = raw[raw.rfind(b"\n") + 1:].decode("utf-8", "replace").strip()
    if not tail:
        return
    line = raw.count(b"\n") + 1
    warnings.warn(f"{path}, line {line}: the last line has no line end ({tail[-60:]!r}); "
                  f"if the file was cut short (an interrupted download or copy), that row's last value may be "
                  f"incomplete. Compare the end of the file with its source.", UnterminatedTableWarning, stacklevel=4)
