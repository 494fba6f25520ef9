"""Numba kernels that scan a delimited text buffer without building one Python object per row.

The kernels only *locate* rows and parse the common decimal numbers exactly
(Clinger's fast path: an integer mantissa below 2**53 times an exact power of
ten, which gives the same correctly rounded double as :func:`float`). Anything
unusual (exponents out of range, ``nan``, ``NA``, long mantissas) is flagged
and re-parsed in Python by the caller, so results never depend on the path.
"""

from __future__ import annotations

import numba
import numpy as np

_POW10 = np.array([1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15, 1e16,
                   1e17, 1e18, 1e19, 1e20, 1e21, 1e22])

# error codes returned by _scan_rows
OK = 0
BAD_FIELD_COUNT = 1


@numba.njit(cache=True)
def _digits(buf, i, e, mant, ndig):
    """Append the decimal digits from ``buf[i]`` on (before ``e``) to the mantissa ``mant``.

    Leading zeros are not significant. Returns ``(i, mant, ndig, n_read, ok)``: the first non-digit,
    the mantissa, its significant digits, the digits read; ``ok`` False when more than 17 significant
    digits would not fit exactly ('ask Python').
    """
    n_read = 0
    while i < e and 48 <= buf[i] <= 57:
        d = buf[i] - 48
        n_read += 1
        if mant != 0 or d != 0:
            ndig += 1
            if ndig > 17:
                return i, mant, ndig, n_read, False
            mant = mant * 10 + d
        i += 1
    return i, mant, ndig, n_read, True


@numba.njit(cache=True)
def _parse_decimal(buf, s, e, pow10):
    """Parse ``buf[s:e]`` as a decimal number; return (value, ok). ``ok`` False means 'ask Python'."""
    while s < e and (buf[s] == 32 or buf[s] == 9):
        s += 1
    while e > s and (buf[e - 1] == 32 or buf[e - 1] == 9):
        e -= 1
    if e - s >= 2 and buf[s] == 34 and buf[e - 1] == 34:  # a quoted number: "1.5"
        s += 1
        e -= 1
    if s >= e:
        return 0.0, False
    neg = False
    if buf[s] == 45:  # '-'
        neg = True
        s += 1
    elif buf[s] == 43:  # '+'
        s += 1
    # typed zeros, not literals: a literal argument would compile _digits a second time
    zero = np.int64(0)
    i, mant, ndig, nany, ok = _digits(buf, s, e, zero, zero)   # ndig: significant digits kept in mant
    if not ok:
        return 0.0, False
    frac = 0
    if i < e and buf[i] == 46:  # '.'
        i, mant, ndig, frac, ok = _digits(buf, i + 1, e, mant, ndig)
        if not ok:
            return 0.0, False
        nany += frac
    if nany == 0:
        return 0.0, False
    exp = 0
    if i < e and (buf[i] == 101 or buf[i] == 69):  # 'e' / 'E'
        i += 1
        eneg = False
        if i < e and (buf[i] == 45 or buf[i] == 43):
            eneg = buf[i] == 45
            i += 1
        nexp = 0
        while i < e and 48 <= buf[i] <= 57:
            exp = exp * 10 + (buf[i] - 48)
            nexp += 1
            if exp > 10000:
                return 0.0, False
            i += 1
        if nexp == 0:
            return 0.0, False
        if eneg:
            exp = -exp
    if i != e:
        return 0.0, False
    if mant >= 9007199254740992:  # 2**53: not exactly representable
        return 0.0, False
    p = exp - frac
    v = float(mant)
    if mant == 0:
        v = 0.0
    elif 0 <= p <= 22:
        v = v * pow10[p]
    elif -22 <= p < 0:
        v = v / pow10[-p]
    else:
        return 0.0, False
    if neg:
        v = -v
    return v, True


@numba.njit(cache=True)
def _fields_equal(buf, a0, a1, b0, b1):
    if a1 - a0 != b1 - b0:
        return False
    for k in range(a1 - a0):
        if buf[a0 + k] != buf[b0 + k]:
            return False
    return True


@numba.njit(cache=True)
def _scan_rows(buf, start, delim, ncols, key_cols, num_cols, pow10, values, flag_rm, flag_span, row_off, run_start):
    """Scan data lines of a delimited table.

    Parameters
    ----------
    buf : uint8 array, shape (B,)
    start : int
        Offset of the first data line (just after the header line).
    delim : int
        Delimiter byte.
    ncols : int
        Number of fields every non-blank line must have.
    key_cols : int64 array, shape (K,)
        Columns whose text forms the grouping key; a new *run* starts whenever it changes.
    num_cols : int64 array, shape (M,)
        Columns parsed as numbers into ``values[:, m]``.
    values : float64 array, shape (R, M)   (output)
    flag_rm : int64 array, shape (R * M, 2)   (output) (row, m) of each field the kernel left to Python
    flag_span : int64 array, shape (R * M, 2) (output) byte range of that field
    row_off : int64 array, shape (R,)      (output) offset of each row's line
    run_start : int64 array, shape (R,)    (output) first row of each run

    Returns
    -------
    n_rows, n_runs, n_flagged, error_code, error_offset, error_nfields
    """
    n = buf.shape[0]
    K = key_cols.shape[0]
    M = num_cols.shape[0]
    fs = np.empty(ncols + 1, dtype=np.int64)
    fe = np.empty(ncols + 1, dtype=np.int64)
    prev_ks = np.zeros(K, dtype=np.int64)
    prev_ke = np.zeros(K, dtype=np.int64)
    row = 0
    nruns = 0
    nflagged = 0
    pos = start
    while pos < n:
        # one pass over the line: split fields and notice blank lines
        ls = pos
        nf = 0
        s = pos
        blank = True
        k = pos
        while k < n:
            c = buf[k]
            if c == 10:
                break
            if c == delim:
                if nf < ncols:
                    fs[nf] = s
                    fe[nf] = k
                nf += 1
                s = k + 1
                blank = False
            elif blank and c != 32 and c != 9 and c != 13:
                blank = False
            k += 1
        pos = k + 1
        if blank:
            continue
        ce = k
        if ce > s and buf[ce - 1] == 13:
            ce -= 1
        if nf < ncols:
            fs[nf] = s
            fe[nf] = ce
        nf += 1
        if nf != ncols:
            return row, nruns, nflagged, BAD_FIELD_COUNT, ls, nf
        row_off[row] = ls
        for m in range(M):
            c = num_cols[m]
            v, ok = _parse_decimal(buf, fs[c], fe[c], pow10)
            values[row, m] = v
            if not ok:
                flag_rm[nflagged, 0] = row
                flag_rm[nflagged, 1] = m
                flag_span[nflagged, 0] = fs[c]
                flag_span[nflagged, 1] = fe[c]
                nflagged += 1
        new_run = row == 0
        if not new_run:
            for j in range(K):
                c = key_cols[j]
                if not _fields_equal(buf, fs[c], fe[c], prev_ks[j], prev_ke[j]):
                    new_run = True
                    break
        if new_run:
            run_start[nruns] = row
            nruns += 1
            for j in range(K):
                prev_ks[j] = fs[key_cols[j]]
                prev_ke[j] = fe[key_cols[j]]
        row += 1
    return row, nruns, nflagged, OK, 0, 0


@numba.njit(cache=True)
def _plain_quotes(buf, delim):
    """True when every ``"`` opens a field and closes it just before a delimiter or line end,
    with no delimiter, quote or line break inside (so splitting at delimiters stays correct)."""
    n = buf.shape[0]
    k = 0
    at_field_start = True
    while k < n:
        c = buf[k]
        if c == 34:
            if not at_field_start:
                return False
            k += 1
            while k < n and buf[k] != 34:
                if buf[k] == delim or buf[k] == 10 or buf[k] == 13:
                    return False
                k += 1
            if k >= n:
                return False
            k += 1  # past the closing quote
            if k < n and buf[k] != delim and buf[k] != 10 and buf[k] != 13:
                return False
            at_field_start = False
            continue
        at_field_start = c == delim or c == 10
        k += 1
    return True


def plain_quotes(buf: np.ndarray, delim: int) -> bool:
    """Whether a buffer's quotes are all simple ``"field"`` wrappers (see :func:`_plain_quotes`)."""
    return bool(_plain_quotes(buf, delim))


@numba.njit(cache=True)
def _count_byte(buf, start, byte):
    count = 0
    for k in range(start, buf.shape[0]):
        if buf[k] == byte:
            count += 1
    return count


def scan_rows(buf: np.ndarray, start: int, delim: int, ncols: int, key_cols, num_cols):
    """Validated wrapper of :func:`_scan_rows`; allocates the outputs and trims them.

    Returns
    -------
    values : ndarray, shape (R, M)
    flagged : ndarray of int64, shape (F, 2)
        (row, number column) of the fields still to parse in Python: empty unless one of the fields the
        kernel could not parse is not a finite number (then all of them, so errors name the first).
    row_off : ndarray of int64, shape (R,)
    run_start : ndarray of int64, shape (n_runs,)
    error : None or (offset, n_fields)
        Set when a line has a number of fields different from ``ncols``.
    """
    key_cols = np.asarray(key_cols, dtype=np.int64)
    num_cols = np.asarray(num_cols, dtype=np.int64)
    cap = int(_count_byte(buf, start, 10)) + 1
    values = np.empty((cap, num_cols.shape[0]), dtype=np.float64)
    # np.empty pages are only committed when written, so the flag arrays cost memory only when used
    flag_rm = np.empty((cap * num_cols.shape[0], 2), dtype=np.int64)
    flag_span = np.empty((cap * num_cols.shape[0], 2), dtype=np.int64)
    row_off = np.empty(cap, dtype=np.int64)
    run_start = np.empty(cap, dtype=np.int64)
    nrows, nruns, nflagged, code, eoff, enf = _scan_rows(buf, start, delim, ncols, key_cols, num_cols, _POW10,
                                                         values, flag_rm, flag_span, row_off, run_start)
    error = None if code == OK else (int(eoff), int(enf))
    flagged = flag_rm[:nflagged]
    values = values[:nrows]
    if nflagged and error is None:
        flagged = _convert_in_bulk(buf, flag_span[:nflagged], flagged, values)
    return values, flagged, row_off[:nrows], run_start[:nruns], error


@numba.njit(cache=True)
def _gather_fields(buf, spans):
    """Copy the fields ``buf[s:e]`` (spaces and wrapping quotes removed), one per line, into one buffer."""
    total = 0
    for k in range(spans.shape[0]):
        total += spans[k, 1] - spans[k, 0] + 1
    out = np.empty(total, dtype=np.uint8)
    j = 0
    for k in range(spans.shape[0]):
        s, e = spans[k, 0], spans[k, 1]
        while s < e and (buf[s] == 32 or buf[s] == 9):
            s += 1
        while e > s and (buf[e - 1] == 32 or buf[e - 1] == 9):
            e -= 1
        if e - s >= 2 and buf[s] == 34 and buf[e - 1] == 34:
            s += 1
            e -= 1
        for i in range(s, e):
            out[j] = buf[i]
            j += 1
        out[j] = 10
        j += 1
    return out[:j]


def _convert_in_bulk(buf, spans, flagged, values):
    """Parse the kernel's leftovers (e.g. 17-digit ``repr`` output) with numpy's exact string conversion.

    Returns the (row, m) pairs still unresolved -- empty, or every flagged field when one of them is not
    a finite number, so that the caller's per-field parser reports the first bad one precisely.
    """
    if spans.shape[0] and int((spans[:, 1] - spans[:, 0]).max()) > 400:
        return flagged      # an absurdly long field: the per-field parser refuses it without a huge array
    joined = _gather_fields(buf, spans).tobytes()
    try:
        parsed = np.array(joined.split(b"\n")[:-1]).astype(np.float64)
    except ValueError:
        return flagged
    if parsed.shape[0] != flagged.shape[0] or not np.all(np.isfinite(parsed)):
        return flagged
    values[flagged[:, 0], flagged[:, 1]] = parsed
    return flagged[:0]


def parse_decimal(text: str):
    """Parse one number with the kernel's rules (exposed for tests); returns ``None`` when Python must decide."""
    b = np.frombuffer(text.encode("utf-8"), dtype=np.uint8)
    v, ok = _parse_decimal(b, 0, b.shape[0], _POW10)
    return float(v) if ok else None
