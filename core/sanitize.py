"""Names from a project that become file names, and text that becomes a spreadsheet cell.

Item ids and names come from imported files, from the public API or from a project someone
sent: they may hold ``/``, ``..``, control characters or thousands of characters. Every export
turns them into file names with :func:`safe_name` (one path component, never hidden, never a
reserved device name, at most :data:`MAX_NAME_BYTES` bytes of UTF-8) and gives each item its own
file with :class:`UniqueNames` (collisions, including those only case-insensitive file systems
see, get ``-2``, ``-3`` ... suffixes).

CSV text fields go through :func:`csv_text_cell`: a cell starting with ``=``, ``+``, ``-``,
``@``, a tab or a carriage return is read as a formula by spreadsheets, so it is prefixed with
a single quote (the convention spreadsheets themselves use); :func:`csv_text_value` undoes it.
No library is used: the rules are a few lines and must be the same for every exporter.
"""

from __future__ import annotations

import re
import unicodedata

__all__ = ["safe_name", "UniqueNames", "MAX_NAME_BYTES", "csv_text_cell", "csv_text_value", "formula_safe", "check_relative_path"]

#: longest file name written (bytes of UTF-8); file systems allow 255, room is left for suffixes
MAX_NAME_BYTES = 120

_FORBIDDEN = re.compile(r'[\x00-\x1f\x7f-\x9f/\\<>:"|?*]')
_RESERVED = {"con", "prn", "aux", "nul", *(f"com{i}" for i in range(10)), *(f"lpt{i}" for i in range(10))}
_FORMULA_START = ("=", "+", "-", "@", "\t", "\r")


def _cap(text: str, max_bytes: int) -> str:
    data = text.encode("utf-8")
    if len(data) <= max_bytes:
        return text
    return data[:max_bytes].decode("utf-8", "ignore")


def safe_name(name, *, fallback: str = "item", max_bytes: int = MAX_NAME_BYTES) -> str:
    """One safe path component made from ``name``.

    Parameters
    ----------
    name : object
        An item id or name (``str()`` of it is used).
    fallback : str
        Used when nothing printable is left (``""``, ``"."``, ``".."``, only separators).
    max_bytes : int
        Longest result, in bytes of UTF-8.

    Returns
    -------
    str
        No path separator, no control character, no characters Windows refuses, no leading dot
        or space (so never ``..`` nor hidden), no trailing dot or space, not a reserved device name.
    """
    text = unicodedata.normalize("NFC", str(name))
    text = _FORBIDDEN.sub("_", text)
    text = text.strip(" .")
    text = _cap(text, max_bytes).rstrip(" .")
    if not text.strip("_"):
        text = fallback
    if text.split(".")[0].lower() in _RESERVED:
        text = "_" + text
    return _cap(text, max_bytes)


class UniqueNames:
    """Hands out safe, distinct file names (case-insensitively distinct) for one folder.

    Parameters
    ----------
    max_bytes : int
        Longest name stem, suffix included.

    Examples
    --------
    >>> names = UniqueNames()
    >>> names.take("a/b", ".txt"), names.take("a\\\\b", ".txt"), names.take("A_B", ".txt")
    ('a_b.txt', 'a_b-2.txt', 'A_B-3.txt')
    """

    def __init__(self, *, max_bytes: int = MAX_NAME_BYTES):
        self.max_bytes = max_bytes
        self._taken: set = set()

    def take(self, name, suffix: str = "", *, fallback: str = "item") -> str:
        """A new file name for ``name`` ending in ``suffix`` (``suffix`` must itself be safe)."""
        stem = safe_name(name, fallback=fallback, max_bytes=self.max_bytes)
        n = 1
        while True:
            tag = "" if n == 1 else f"-{n}"
            candidate = _cap(stem, self.max_bytes - len(tag.encode())).rstrip(" .") + tag + suffix
            if candidate.casefold() not in self._taken:
                self._taken.add(candidate.casefold())
                return candidate
            n += 1


def check_relative_path(text, *, field: str) -> str:
    """``text`` if it is a safe relative path inside a folder (``a/b.npz``), else a ValueError naming ``field``.

    Used on paths read from a bundle manifest: no absolute path, no ``..``, no empty or hidden
    component, no control characters.
    """
    if not isinstance(text, str) or not text:
        raise ValueError(f"{field}: expected a relative file path, got {text!r}")
    if text.startswith(("/", "\\")) or re.match(r"^[A-Za-z]:", text):
        raise ValueError(f"{field}: {text!r} is an absolute path; expected a path inside the bundle")
    for part in re.split(r"[/\\]", text):
        if part in ("", ".", "..") or part.startswith(".") or _FORBIDDEN.search(part):
            raise ValueError(f"{field}: {text!r} leaves the bundle folder or has a forbidden component "
                             f"({part!r}); expected a path inside the bundle")
        if len(part.encode("utf-8")) > 255:
            raise ValueError(f"{field}: a component of {text[:40]!r}... is longer than 255 bytes")
    return text


def formula_safe(text) -> str:
    """``text`` with a single quote before a formula-like start (``=``, ``+``, ``-``, ``@``, tab, CR).

    For cells a CSV writer quotes itself (``csv.writer``); see :func:`csv_text_cell` otherwise.
    """
    text = str(text)
    return "'" + text if text.startswith(_FORMULA_START) else text


def csv_text_cell(text) -> str:
    """A text field for a CSV file: formula-like starts neutralised, quoted when it holds ``,`` ``"`` or a newline."""
    text = formula_safe(text)
    if any(c in text for c in ',"\n\r'):
        text = '"' + text.replace('"', '""') + '"'
    return text


def csv_text_value(cell: str) -> str:
    """Inverse of the formula escape of :func:`csv_text_cell` on a cell already unquoted by a CSV reader."""
    if len(cell) >= 2 and cell[0] == "'" and cell[1] in "=+-@\t\r":
        return cell[1:]
    return cell
