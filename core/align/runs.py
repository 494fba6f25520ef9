"""Runs of repeated notes: their events placed on the strikes of their pitch, counted in order.

A frame-level decoder sees a run of repeated notes (the same pitch, or the
same chord, struck again and again) as one long stretch of the same
template: only the onset strength at each event's first frame tells the
events apart, and nothing makes it use every strike. When the run follows a
chord that holds the same pitch (a rolled final chord whose top note is the
pitch of the run is the classic case), the decoder may take that chord's own
strike for the first note of the run, shift the whole run one strike early,
and leave the last strike inside the last event.

:func:`place_run` counts instead: it finds the strikes of the run's pitches
between the event before the run and the event after it, gives the event
before its own strike first when it holds the same pitch, and puts the run's
events on the strongest remaining strikes in time order.
"""

from __future__ import annotations

import numpy as np

from ..checks import check_int
from ..exceptions import ParameterError

__all__ = ["repeated_runs", "strike_peaks", "place_run"]


def repeated_runs(pitch_sets, *, min_length: int = 2) -> list:
    """Maximal runs of consecutive events with the same pitches.

    Parameters
    ----------
    pitch_sets : sequence of frozenset of int, length E
        Distinct MIDI pitches of every event.
    min_length : int, default 2
        Shortest run reported (>= 2).

    Returns
    -------
    list of (int, int)
        ``(first, last)`` event of every run (inclusive), in score order.
    """
    check_int(min_length, "min_length", min_val=2)
    sets = list(pitch_sets)
    runs = []
    a = 0
    for e in range(1, len(sets) + 1):
        if e == len(sets) or sets[e] != sets[a]:
            if e - a >= min_length and sets[a]:
                runs.append((a, e - 1))
            a = e
    return runs


def strike_peaks(curve, lo: int, hi: int, *, min_gap: int = 3):
    """Local maxima of an onset-strength curve that lie in frames ``[lo, hi)``, at least ``min_gap`` apart.

    Parameters
    ----------
    curve : ndarray, shape (T,)
        Onset strength (>= 0).
    lo, hi : int
        Frame range (clipped to the curve).
    min_gap : int, default 3
        Of two maxima closer than this, the weaker is dropped.

    Returns
    -------
    frames : ndarray of int64, shape (K,)
        Increasing.
    heights : ndarray, shape (K,)
    """
    c = np.asarray(curve, dtype=np.float64)
    if c.ndim != 1 or not np.all(np.isfinite(c)):
        raise ParameterError(f"curve: expected a finite 1-d onset-strength curve, got shape {c.shape}")
    check_int(min_gap, "min_gap", min_val=1)
    lo, hi = max(int(lo), 0), min(int(hi), c.shape[0])
    if hi - lo < 1:
        return np.zeros(0, np.int64), np.zeros(0)
    seg = c[lo:hi]
    # maxima of the whole curve (a window edge on a slope is not a strike)
    left = np.concatenate([[c[lo - 1] if lo > 0 else -np.inf], seg[:-1]])
    right = np.concatenate([seg[1:], [c[hi] if hi < c.shape[0] else -np.inf]])
    cand = np.flatnonzero((seg > left) & (seg >= right) & (seg > 0))
    # strongest first; drop those within min_gap of a stronger kept one
    kept = []
    for i in cand[np.argsort(-seg[cand], kind="stable")]:
        if all(abs(int(i) - j) >= min_gap for j in kept):
            kept.append(int(i))
    kept = np.array(sorted(kept), dtype=np.int64)
    return kept + lo, seg[kept] if kept.size else np.zeros(0)


def place_run(curve, n: int, lo: int, hi: int, *, skip_first: bool, decoded=None, min_gap: int = 3,
              floor: float = 0.1):
    """Onset frames of a run of ``n`` repeated events from the strikes of its pitches.

    Parameters
    ----------
    curve : ndarray, shape (T,)
        Onset strength of the run's pitches.
    n : int
        Events in the run (>= 1).
    lo, hi : int
        The run lies in frames ``[lo, hi)``: ``lo`` the onset of the event
        before it (or 0), ``hi`` the onset of the event after it (or the end
        of the music).
    skip_first : bool
        The event before the run holds one of its pitches: its own strike
        (one within ``min_gap + 1`` frames of ``lo`` at least half as strong as the strongest up to the
        run's first decoded onset, else that strongest one: a rolled chord)
        does not count.
    decoded : array_like of int, shape (n,), optional
        The run's decoded onsets. When given, the run is re-placed only when
        its first event sits on the strike of the event before (with
        ``skip_first``); with too few strikes to count the whole run, that
        first event alone moves to the next strike.
    min_gap : int, default 3
        Frames between two strikes.
    floor : float, default 0.1
        Strikes weaker than this share of the strongest in the window are noise.

    Returns
    -------
    ndarray of int64, shape (n,) or None
        Increasing onset frames, or ``None`` to keep the decoded ones (no
        sign of a miscount, or fewer strikes than events).
    """
    c = np.asarray(curve, dtype=np.float64)
    check_int(n, "n", min_val=1)
    lo, hi = int(lo), int(hi)
    if decoded is not None:
        decoded = np.asarray(decoded, dtype=np.int64)
        if decoded.shape != (n,):
            raise ParameterError(f"decoded: expected {n} onset frames, got shape {decoded.shape}")
    if hi - lo < n:
        return None
    frames, heights = strike_peaks(c, lo - 2, hi, min_gap=min_gap)
    start = lo + min_gap if lo > 0 else 0
    own = None
    if skip_first:
        upto = hi if decoded is None else int(decoded[0]) + 2
        early = np.flatnonzero(frames <= upto)
        if early.size:
            top = float(heights[early].max())
            at_onset = early[(np.abs(frames[early] - lo) <= min_gap + 1) & (heights[early] >= 0.5 * top)]
            # a block chord's strike at its onset; else (a rolled chord) its strongest: weaker rises there
            # are often a lower octave's partials in this pitch's band
            own = int(frames[at_onset[0]] if at_onset.size else frames[early[np.argmax(heights[early])]])
            start = own + min_gap
    ok = (frames >= start) & (frames < hi)
    frames, heights = frames[ok], heights[ok]
    if frames.size:
        strong = heights >= floor * float(heights.max())
        frames, heights = frames[strong], heights[strong]
    if frames.size < n:
        if decoded is None or own is None or int(decoded[0]) > own + 1:
            return None
        # too few strikes to count the run, but its first event sits on the strike of the one before:
        # move that event alone to the first strike after it
        dec = decoded.copy()
        nxt = dec[1] if n > 1 else hi
        after = frames[(frames > own) & (frames < nxt)]
        if after.size == 0:
            return None
        dec[0] = after[0]
        return dec
    best = np.argsort(-heights, kind="stable")[:n]
    pick = np.sort(frames[best])
    if decoded is not None and (own is None or decoded[0] > own + 1):
        return None  # the decoded run does not start on the strike of the event before: trust it
    return pick.astype(np.int64)
