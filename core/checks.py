"""Checks of the arguments a caller passes to a public function (scikit-learn's ``check_scalar`` style).

Every public function validates its inputs before any work and raises one
:class:`~marginalia.exceptions.ParameterError` whose message names the argument, says what
was expected and shows the value received (``"min_size: expected an integer >= 1, got 0"``).
The rules live here once: a ``bool`` is never accepted as a number (``True`` is an ``int`` to
Python, but passing it for a count is a mistake), numpy scalars are accepted like Python ones,
and real numbers must be finite. (Files read from others are checked by
:mod:`marginalia.validation`, which raises :class:`~marginalia.exceptions.DataFormatError`.)
"""

from __future__ import annotations

import math
import numbers
from typing import Optional

import numpy as np

from .exceptions import ParameterError

__all__ = ["is_number", "is_integer", "check_int", "check_scalar", "check_bool", "check_choice", "check_signal", "check_matrix",
           "check_features", "check_sample_rate", "check_audio"]

_BOUNDARIES = ("both", "left", "right", "neither")


def is_number(x) -> bool:
    """Whether ``x`` is a real number (Python or numpy), ``bool`` excluded."""
    return isinstance(x, numbers.Real) and not isinstance(x, (bool, np.bool_))


def is_integer(x) -> bool:
    """Whether ``x`` is an integer (Python or numpy), ``bool`` excluded."""
    return is_number(x) and isinstance(x, numbers.Integral)


def _range_text(min_val, max_val, include_boundaries: str) -> str:
    left = include_boundaries in ("both", "left")
    right = include_boundaries in ("both", "right")
    if min_val is not None and max_val is not None:
        return f" in {'[' if left else '('}{min_val}, {max_val}{']' if right else ')'}"
    if min_val is not None:
        return f" {'>=' if left else '>'} {min_val}"
    if max_val is not None:
        return f" {'<=' if right else '<'} {max_val}"
    return ""


def check_scalar(x, name: str, target_type, *, min_val=None, max_val=None, include_boundaries: str = "both",
                 what: Optional[str] = None):
    """Check that ``x`` is a scalar of ``target_type`` within ``[min_val, max_val]``; return it as that type.

    Parameters
    ----------
    x : object
        The value to check.
    name : str
        The argument's name, as the caller wrote it (it starts the message).
    target_type : {int, float}
        ``int``: an integer (Python or numpy); ``float``: any finite real number (an integer too).
        ``bool`` is refused for both.
    min_val, max_val : number, optional
        Bounds; ``None`` leaves that side open.
    include_boundaries : {"both", "left", "right", "neither"}
        Which bounds ``x`` may equal.
    what : str, optional
        What the value is, when "an integer" / "a finite number" says too little (e.g.
        ``"a finite number of seconds"``).

    Returns
    -------
    int or float

    Raises
    ------
    ParameterError
        ``"{name}: expected {what}{range}, got {x!r}"``.
    """
    if include_boundaries not in _BOUNDARIES:
        raise ValueError(f"include_boundaries: expected one of {_BOUNDARIES}, got {include_boundaries!r}")
    if target_type is int:
        ok = is_integer(x)
        kind = what or "an integer"
    elif target_type is float:
        ok = is_number(x) and math.isfinite(x)
        kind = what or "a finite number"
    else:
        raise ValueError(f"target_type: expected int or float, got {target_type!r}")
    if ok and min_val is not None:
        ok = x >= min_val if include_boundaries in ("both", "left") else x > min_val
    if ok and max_val is not None:
        ok = x <= max_val if include_boundaries in ("both", "right") else x < max_val
    if not ok:
        raise ParameterError(f"{name}: expected {kind}{_range_text(min_val, max_val, include_boundaries)}, got {x!r}")
    return int(x) if target_type is int else float(x)


def check_int(x, name: str, *, min_val=None, max_val=None, include_boundaries: str = "both",
              what: Optional[str] = None) -> int:
    """``check_scalar(x, name, int, ...)``: an integer (``bool`` refused), returned as a Python ``int``."""
    return check_scalar(x, name, int, min_val=min_val, max_val=max_val, include_boundaries=include_boundaries,
                        what=what)


def check_bool(x, name: str) -> bool:
    """Check that ``x`` is ``True`` or ``False`` (numpy's too); a number or a string is refused."""
    if not isinstance(x, (bool, np.bool_)):
        raise ParameterError(f"{name}: expected True or False, got {x!r}")
    return bool(x)


def check_choice(x, name: str, options: tuple):
    """Check that ``x`` is one of ``options`` (the strings of a mode argument) and return it.

    Raises
    ------
    ParameterError
        ``"name: expected 'a', 'b' or 'c', got 'd'"``.
    """
    if x not in options:
        said = [repr(o) for o in options]
        listed = said[0] if len(said) == 1 else ", ".join(said[:-1]) + " or " + said[-1]
        raise ParameterError(f"{name}: expected {listed}, got {x!r}")
    return x


def check_signal(x, name: str, *, min_length: int = 1, dtype=np.float64, allow_row: bool = False,
                 what: str = "1-d signal", fix: str = "") -> np.ndarray:
    """Check a one-channel signal and return it as a 1-d array of ``dtype``.

    Parameters
    ----------
    x : array_like
        Shape ``(T,)`` or ``(T, 1)`` (and ``(1, T)`` with ``allow_row``: audio libraries put the
        channels first).
    name : str
        The argument's name.
    min_length : int
        Fewest samples.
    dtype : numpy dtype
    allow_row : bool
        Also accept one row ``(1, T)``.
    what : str
        What the signal is (``"1-d signal"``, ``"mono signal"``), for the messages.
    fix : str
        Said after a wrong shape (e.g. ``"mix down first"``).

    Returns
    -------
    ndarray, shape (T,)

    Raises
    ------
    ParameterError
        Not numeric, a wrong shape, too short, or a NaN/inf sample (the first one is named).
    """
    try:
        arr = np.asarray(x, dtype=dtype)
    except (TypeError, ValueError):
        raise ParameterError(f"{name}: expected a {what} of numbers, got {type(x).__name__}") from None
    if arr.ndim == 2 and (arr.shape[1] == 1 or (allow_row and arr.shape[0] == 1)):
        arr = arr.reshape(-1)
    if arr.ndim != 1:
        shapes = "(T,), (T, 1) or (1, T)" if allow_row else "(T,) or (T, 1)"
        raise ParameterError(f"{name}: expected a {what} of shape {shapes}, got shape {arr.shape}"
                             + (f"; {fix}" if fix else ""))
    if arr.shape[0] < min_length:
        at_least = "at least one sample" if min_length == 1 else f"at least {min_length} samples"
        raise ParameterError(f"{name}: expected a {what} of {at_least}, got {arr.shape[0]}")
    finite = np.isfinite(arr)
    if not finite.all():
        bad = int(np.flatnonzero(~finite)[0])
        raise ParameterError(f"{name}: non-finite value (NaN or inf) at sample {bad}; interpolate or drop "
                             "those samples first")
    return arr


def check_matrix(X, name: str, *, shape: str = "(T, p)", allow_1d: bool = True, finite: bool = True,
                 axes: tuple = ("sample", "feature"), fix: str = "interpolate or drop NaN/inf first") -> np.ndarray:
    """Check a non-empty 2-d array of numbers and return it as float64.

    Parameters
    ----------
    X : array_like, shape (T, p) or (T,)
    name : str
        The argument's name.
    shape : str
        The expected shape as said in the messages (``"(T, p)"``, ``"2-d (T frames, E events)"``).
    allow_1d : bool
        Take a 1-d ``X`` as one column.
    finite : bool
        Refuse NaN/inf (callers that check row by row in a kernel pass False).
    axes : (str, str)
        What a row and a column are, to name the first non-finite value.
    fix : str
        Said after a non-finite value.

    Returns
    -------
    X : ndarray, shape (T, p), float64
        ``X`` itself when it already is one (not a copy).

    Raises
    ------
    ParameterError
        Not numeric, not 2-d (or 1-d with ``allow_1d``), empty, or holding NaN/inf (the first is named).
    """
    try:
        arr = np.asarray(X, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise ParameterError(f"{name}: cannot convert {type(X).__name__} to a {shape} array of numbers ({exc})"
                             ) from None
    if allow_1d and arr.ndim == 1:
        arr = arr[:, None]
    if arr.ndim != 2 or arr.shape[0] < 1 or arr.shape[1] < 1:
        raise ParameterError(f"{name}: expected a non-empty {shape} array, got shape {arr.shape}; it needs at "
                             f"least one {axes[0]} and one {axes[1]}")
    # min and max propagate NaN and show inf: no (T, p) temporary for large score matrices
    if finite and not (np.isfinite(arr.min()) and np.isfinite(arr.max())):
        t, j = np.argwhere(~np.isfinite(arr))[0]
        raise ParameterError(f"{name}: contains NaN or infinite values (the first non-finite value, {arr[t, j]}, "
                             f"at {axes[0]} {int(t)}, {axes[1]} {int(j)}); {fix}")
    return arr


def check_features(X, name: str = "X", *, fix: str = "interpolate or drop NaN/inf before learning") -> np.ndarray:
    """Check a feature matrix and return it as float64, shape (T, p) (a 1-d ``X`` is one feature).

    :func:`check_matrix` with the features' wording; see there for the parameters, returns and errors.
    """
    return check_matrix(X, name, shape="(T, p) feature", fix=fix)


def check_sample_rate(sr, name: str = "sr", *, min_val: int = 1, max_val: Optional[int] = None) -> int:
    """A sample rate in Hz: an integer, or a real number with an integral value (``22050.0``), in range."""
    ok = is_number(sr) and math.isfinite(sr) and sr == int(sr) and sr >= min_val and (max_val is None or sr <= max_val)
    if not ok:
        raise ParameterError(f"{name}: expected an integer sample rate in Hz{_range_text(min_val, max_val, 'both')}, "
                             f"got {sr!r}")
    return int(sr)


def check_audio(y, sr, *, name: str = "y", dtype=np.float32, min_sr: int = 1, max_sr: Optional[int] = None) -> tuple:
    """A mono signal (shape ``(n,)``, ``(n, 1)`` or ``(1, n)``, finite) and its integer sample rate in Hz.

    Returns
    -------
    (y, sr) : (ndarray of ``dtype``, shape (n,), int)
    """
    arr = check_signal(y, name, dtype=dtype, allow_row=True, what="mono signal", fix="mix down first")
    return arr, check_sample_rate(sr, "sr", min_val=min_sr, max_val=max_sr)
