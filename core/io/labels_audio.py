"""Label tracks of audio segmentations: Audacity, Sonic Visualiser CSV and Praat TextGrid.

Every reader returns a :class:`LabelTrack` (starts, ends, names; a point label has ``start == end``).
Writers take *boundaries* in seconds: by default each boundary becomes a point label (a change
point); with ``regions=True`` consecutive boundaries delimit region labels.
"""

from __future__ import annotations

import csv
import io
import math
import re
from typing import NamedTuple

import numpy as np

from ..checks import is_number
from ..exceptions import DataFormatError, ParameterError
from ._common import decode_text, existing_file, fmt_number, output_file, read_bytes, warn_if_unterminated

__all__ = [
    "LabelTrack",
    "write_audacity_labels",
    "read_audacity_labels",
    "write_sonic_visualiser_csv",
    "read_sonic_visualiser_csv",
    "write_textgrid",
    "read_textgrid",
]


class LabelTrack(NamedTuple):
    """Labels of one track.

    Attributes
    ----------
    starts, ends : ndarray of float, shape (K,)
        Seconds; ``ends >= starts`` (equal for point labels).
    names : tuple of str, length K
    """

    starts: np.ndarray
    ends: np.ndarray
    names: tuple


def _boundaries(boundaries_s, argname="boundaries_s") -> np.ndarray:
    try:
        b = np.asarray(boundaries_s, dtype=np.float64)
    except (TypeError, ValueError):
        raise ParameterError(f"{argname}: expected an array of times in seconds, got "
                             f"{type(boundaries_s).__name__}") from None
    if b.ndim != 1:
        raise ParameterError(f"{argname}: expected shape (K,), got {b.shape}")
    if not np.all(np.isfinite(b)) or np.any(b < 0):
        raise ParameterError(f"{argname}: expected finite times >= 0, got {b.tolist()[:10]}")
    if np.any(np.diff(b) < 0):
        raise ParameterError(f"{argname}: times must be non-decreasing (sorted), got {b.tolist()[:10]}")
    return b


def _names(names, n: int, forbidden: str, argname="names") -> list:
    if names is None:
        return [str(k + 1) for k in range(n)]
    if isinstance(names, str):
        raise ParameterError(f"{argname}: expected a list of {n} strings, got a single string {names!r}")
    out = [str(x) for x in names]
    if len(out) != n:
        raise ParameterError(f"{argname}: expected {n} names (one per label), got {len(out)}")
    for i, x in enumerate(out):
        if any(c in x for c in forbidden):
            raise ParameterError(f"{argname}[{i}]: {x!r} contains a tab or line break, which the format cannot hold")
    return out


def _spans(boundaries_s, names, regions: bool, forbidden: str):
    b = _boundaries(boundaries_s)
    if regions:
        if b.shape[0] < 2:
            raise ParameterError(f"boundaries_s: regions need at least 2 boundaries, got {b.shape[0]}")
        starts, ends = b[:-1], b[1:]
    else:
        starts, ends = b, b
    return starts, ends, _names(names, starts.shape[0], forbidden)


def _read_text(path):
    p = existing_file(path)
    raw = read_bytes(p)
    if raw[:2] in (b"\xff\xfe", b"\xfe\xff"):  # Praat saves non-ASCII TextGrids as UTF-16
        try:
            return p, raw.decode("utf-16")
        except UnicodeDecodeError:
            raise DataFormatError("damaged UTF-16 text", path=str(p)) from None
    text = decode_text(raw, p)
    warn_if_unterminated(raw, p)
    return p, text


def _time(text: str, what: str, path, where: str) -> float:
    try:
        v = float(text)
    except ValueError:
        raise DataFormatError(f"{what} {text.strip()!r} is not a time in seconds; expected a number such as 1.25",
                              path=str(path), where=where) from None
    if not math.isfinite(v) or v < 0:
        raise DataFormatError(f"{what} {text.strip()!r} is not a finite time >= 0", path=str(path), where=where)
    return v


def _track(starts, ends, names) -> LabelTrack:
    return LabelTrack(np.asarray(starts, dtype=np.float64), np.asarray(ends, dtype=np.float64), tuple(names))


# ------------------------------------------------------------------ Audacity


def write_audacity_labels(path, boundaries_s, names=None, *, regions=False) -> None:
    """Write an Audacity label track (``start<TAB>end<TAB>label`` per line).

    Parameters
    ----------
    path : str or path-like
    boundaries_s : array_like, shape (K,)
        Sorted times in seconds.
    names : sequence of str, optional
        One per label (K point labels, or K-1 regions); default ``"1", "2", ...``.
    regions : bool
        False: a point label at every boundary. True: a region between consecutive boundaries.
    """
    p = output_file(path)
    starts, ends, labels = _spans(boundaries_s, names, regions, "\t\r\n")
    with open(p, "w", newline="", encoding="utf-8") as fh:
        for a, b, n in zip(starts.tolist(), ends.tolist(), labels):
            fh.write(f"{fmt_number(a)}\t{fmt_number(b)}\t{n}\n")


def read_audacity_labels(path) -> LabelTrack:
    """Read an Audacity label track; spectral-selection lines (starting with ``\\``) are skipped.

    Returns
    -------
    track : LabelTrack

    Raises
    ------
    DataFormatError
        A line without two numeric times, or with ``end < start``.
    """
    p, text = _read_text(path)
    starts, ends, names = [], [], []
    for n, line in enumerate(text.splitlines(), start=1):
        if not line.strip() or line.startswith("\\"):
            continue
        fields = line.split("\t")
        where = f"line {n}"
        if len(fields) < 2:
            raise DataFormatError(f"expected 'start<TAB>end<TAB>label', got {line!r}", path=str(p), where=where)
        a = _time(fields[0], "start", p, where)
        b = _time(fields[1], "end", p, where)
        if b < a:
            raise DataFormatError(f"end {fields[1]} is before start {fields[0]}", path=str(p), where=where)
        starts.append(a), ends.append(b), names.append(fields[2] if len(fields) > 2 else "")
    return _track(starts, ends, names)


# ------------------------------------------------------------------ Sonic Visualiser


def write_sonic_visualiser_csv(path, boundaries_s, names=None, *, regions=False) -> None:
    """Write labels as the CSV Sonic Visualiser imports: ``time,label`` or ``time,duration,label`` rows.

    Parameters
    ----------
    path : str or path-like
    boundaries_s : array_like, shape (K,)
    names : sequence of str, optional
    regions : bool
        As in :func:`write_audacity_labels`.
    """
    p = output_file(path)
    starts, ends, labels = _spans(boundaries_s, names, regions, "\r\n")
    with open(p, "w", newline="", encoding="utf-8") as fh:
        w = csv.writer(fh, lineterminator="\n")
        for a, b, n in zip(starts.tolist(), ends.tolist(), labels):
            w.writerow([fmt_number(a), fmt_number(b - a), n] if regions else [fmt_number(a), n])


def read_sonic_visualiser_csv(path) -> LabelTrack:
    """Read a Sonic Visualiser CSV: ``time``, ``time,label``, ``time,duration,label`` or
    ``time,value,duration,label`` rows (the layout of its instant and region layer exports).

    Returns
    -------
    track : LabelTrack
    """
    p, text = _read_text(path)
    starts, ends, names = [], [], []
    reader = csv.reader(io.StringIO(text))
    for row in reader:
        where = f"line {reader.line_num}"
        if not row or not "".join(row).strip():
            continue
        t = _time(row[0], "time", p, where)
        dur, name = 0.0, ""
        if len(row) == 2:
            name = row[1]
        elif len(row) == 3:
            dur, name = _time(row[1], "duration", p, where), row[2]
        elif len(row) >= 4:
            dur, name = _time(row[2], "duration", p, where), row[3]
        starts.append(t), ends.append(t + dur), names.append(name)
    return _track(starts, ends, names)


# ------------------------------------------------------------------ Praat TextGrid


def _quote(text: str) -> str:
    return '"' + text.replace('"', '""') + '"'


def write_textgrid(path, boundaries_s, names=None, *, end_s, start_s=0.0, tier_name="segments") -> None:
    """Write one interval tier of a Praat TextGrid (long text format).

    Parameters
    ----------
    path : str or path-like
    boundaries_s : array_like, shape (K,)
        Change times; those at or outside ``[start_s, end_s]`` are dropped, so the change indices of a
        segmentation (ending with T) can be passed as they are.
    names : sequence of str, optional
        One per interval (``K' + 1`` for ``K'`` inner boundaries); default ``"1", "2", ...``.
    end_s : float
        End of the sound (the tier's ``xmax``).
    start_s : float
    tier_name : str
    """
    p = output_file(path)
    b = _boundaries(boundaries_s)
    if not (is_number(end_s) and math.isfinite(end_s) and end_s > start_s):
        raise ParameterError(f"end_s: expected a finite time > start_s={start_s}, got {end_s!r}")
    inner = np.unique(b[(b > start_s) & (b < end_s)])
    edges = np.concatenate([[start_s], inner, [end_s]])
    labels = _names(names, edges.shape[0] - 1, "\r\n")
    out = ['File type = "ooTextFile"', 'Object class = "TextGrid"', "",
           f"xmin = {fmt_number(start_s)}", f"xmax = {fmt_number(end_s)}", "tiers? <exists>", "size = 1", "item []:",
           "    item [1]:", '        class = "IntervalTier"', f"        name = {_quote(str(tier_name))}",
           f"        xmin = {fmt_number(start_s)}", f"        xmax = {fmt_number(end_s)}",
           f"        intervals: size = {len(labels)}"]
    for k, name in enumerate(labels):
        out += [f"        intervals [{k + 1}]:", f"            xmin = {fmt_number(edges[k])}",
                f"            xmax = {fmt_number(edges[k + 1])}", f"            text = {_quote(name)}"]
    p.write_text("\n".join(out) + "\n", encoding="utf-8")


_TOKEN = re.compile(r'"((?:[^"]|"")*)"|(<exists>|<absent>)|\[\s*\d+\s*\]|'
                    r'([-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?)|[A-Za-z_][A-Za-z_0-9?]*|\S')


def read_textgrid(path) -> dict:
    """Read a Praat TextGrid (long or short text format).

    Returns
    -------
    tiers : dict of str -> LabelTrack
        Interval tiers give regions; point (text) tiers give point labels.

    Raises
    ------
    DataFormatError
        Not a TextGrid, or a truncated one.
    """
    p, text = _read_text(path)
    if "ooTextFile" not in text[:200] or "TextGrid" not in text[:200]:
        raise DataFormatError("not a Praat TextGrid text file (no 'ooTextFile'/'TextGrid' header)", path=str(p),
                              where="line 1")
    # Like Praat, keep only strings, numbers and flags: keys ("xmin =") and indices ("[3]") are comments,
    # which makes the long and the short layouts the same token stream.
    tokens = []
    for m in _TOKEN.finditer(text):
        if m.group(1) is not None:
            tokens.append(m.group(1).replace('""', '"'))
        elif m.group(2) is not None or m.group(3) is not None:
            tokens.append(m.group(2) or m.group(3))
    tokens = tokens[2:]  # "ooTextFile", "TextGrid"
    try:
        it = iter(tokens)
        next(it), next(it)  # xmin, xmax
        if next(it) != "<exists>":
            return {}
        n_tiers = int(next(it))
        tiers = {}
        for _ in range(n_tiers):
            cls, name = next(it), next(it)
            next(it), next(it)
            n = int(next(it))
            starts, ends, names = [], [], []
            for _ in range(n):
                if cls == "IntervalTier":
                    a, b, lab = float(next(it)), float(next(it)), next(it)
                else:
                    a, lab = float(next(it)), next(it)
                    b = a
                starts.append(a), ends.append(b), names.append(lab)
            tiers[name] = _track(starts, ends, names)
    except (StopIteration, ValueError) as exc:
        raise DataFormatError(f"the TextGrid is truncated or malformed ({type(exc).__name__}); re-save it from Praat",
                              path=str(p)) from None
    return tiers
