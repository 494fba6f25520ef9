"""Brute-force oracles for the alignment and warping decoders (tiny inputs only).

They enumerate every structure, so they are exponential: use them in tests with
``T <= 12`` frames for alignments and ``TA, TB <= 5`` for warping paths.
"""

from __future__ import annotations

import itertools

import numpy as np

from ..exceptions import ParameterError
from ..types import Alignment, Warping

__all__ = ["all_alignments", "all_warpings", "brute_align", "brute_dtw"]

_MAX_ALIGN_FRAMES = 16
_MAX_WARP_SIDE = 6


def all_alignments(n_frames: int, n_events: int, *, min_frames: int = 1):
    """Yield every :class:`Alignment` of ``n_events`` events over ``n_frames`` frames.

    Event 0 starts at frame 0 and every event holds at least ``min_frames`` frames.
    """
    if n_frames > _MAX_ALIGN_FRAMES:
        raise ParameterError(f"n_frames: brute force is limited to {_MAX_ALIGN_FRAMES} frames, got {n_frames}")
    for rest in itertools.combinations(range(1, n_frames), n_events - 1):
        on = (0,) + rest
        durations = np.diff(on + (n_frames,))
        if durations.min() >= min_frames:
            yield Alignment(np.array(on), n_frames)


def _alignment_score(S, a):
    ev = a.frame_events()
    return float(S[np.arange(S.shape[0]), ev].sum())


def brute_align(S, *, min_frames: int = 1, accept=None, extra=None):
    """Every alignment with its value, best first.

    Parameters
    ----------
    S : ndarray, shape (T, E)
    accept : callable(Alignment) -> bool, optional
        Keep only the alignments it accepts (labels).
    extra : callable(Alignment) -> float, optional
        Added to the score (loss, duration prior...).

    Returns
    -------
    list of (float, Alignment)
        Sorted by decreasing value.
    """
    S = np.asarray(S, dtype=np.float64)
    T, E = S.shape
    out = []
    for a in all_alignments(T, E, min_frames=min_frames):
        if accept is not None and not accept(a):
            continue
        v = _alignment_score(S, a) + (extra(a) if extra is not None else 0.0)
        out.append((v, a))
    out.sort(key=lambda x: -x[0])
    return out


def all_warpings(n_a: int, n_b: int):
    """Yield every monotone warping path from ``(0, 0)`` to ``(n_a - 1, n_b - 1)``."""
    if max(n_a, n_b) > _MAX_WARP_SIDE:
        raise ParameterError(f"n_a, n_b: brute force is limited to {_MAX_WARP_SIDE}, got ({n_a}, {n_b})")

    def walk(i, j, acc):
        if i == n_a - 1 and j == n_b - 1:
            yield acc
            return
        for di, dj in ((1, 1), (1, 0), (0, 1)):
            a, b = i + di, j + dj
            if a < n_a and b < n_b:
                yield from walk(a, b, acc + [(a, b)])

    for p in walk(0, 0, [(0, 0)]):
        yield Warping(np.array(p))


def brute_dtw(C, *, accept=None, extra=None):
    """Every warping path with its cost ``sum C[path]`` (+ ``extra``), cheapest first.

    Parameters
    ----------
    C : ndarray, shape (TA, TB)
        Cost of matching frame ``i`` of A with frame ``j`` of B.
    accept : callable(Warping) -> bool, optional
    extra : callable(Warping) -> float, optional

    Returns
    -------
    list of (float, Warping)
    """
    C = np.asarray(C, dtype=np.float64)
    out = []
    for w in all_warpings(*C.shape):
        if accept is not None and not accept(w):
            continue
        v = float(C[w.path[:, 0], w.path[:, 1]].sum()) + (extra(w) if extra is not None else 0.0)
        out.append((v, w))
    out.sort(key=lambda x: x[0])
    return out
