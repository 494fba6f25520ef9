"""Carried times refined on the target's own attacks, below the DTW's frame.

The warping path puts a carried time on the target's frame grid (11.6 ms frames), and where the two
recordings differ in timbre it may sit a frame or a few off the attack it should land on. The
refinement registers, around every carried time, the reference's attack pattern (which pitch classes
start when, over a short window) on the target's near the carried time: the shift with the largest
correlation, interpolated between frames, moves the time. Times that the window shows no attack in
stay where the path put them. The refined times are then made monotone in reference time again.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = ["attacks", "TimeRefiner"]

_CHUNK = 4096


def attacks(onset: np.ndarray) -> np.ndarray:
    """Rises of a decaying onset descriptor: what starts in every frame, shape (T, q).

    Parameters
    ----------
    onset : ndarray, shape (T, q)
        Onset descriptors that jump at an attack and decay after it.
    """
    onset = np.asarray(onset, dtype=np.float64)
    if onset.shape[0] == 0:
        return onset.copy()
    return np.maximum(onset - np.vstack([onset[:1], onset[:-1]]), 0.0)


@dataclass(frozen=True, eq=False)
class TimeRefiner:
    """Moves carried target times onto the target's attacks that match the reference's.

    Attributes
    ----------
    reference_attacks, target_attacks : ndarray, shapes (TA, q) and (TB, q)
        :func:`attacks` of both recordings.
    reference_grid, target_grid : tuple of float
        ``(offset_s, frame_s)`` of both recordings' frames.
    half_window : int
        Frames on either side of the carried time that are compared.
    search : int
        Largest shift (frames) tried either way.
    """

    reference_attacks: np.ndarray
    target_attacks: np.ndarray
    reference_grid: tuple
    target_grid: tuple
    half_window: int
    search: int

    def shifts(self, reference_times_s: np.ndarray, target_times_s: np.ndarray) -> np.ndarray:
        """Shift (s) from every carried time's target frame to the best match, shape (N,) (NaN: no attack)."""
        tr = np.asarray(reference_times_s, dtype=np.float64).ravel()
        tm = np.asarray(target_times_s, dtype=np.float64).ravel()
        (oa, fa), (ob, fb) = self.reference_grid, self.target_grid
        A, B = self.reference_attacks, self.target_attacks
        H, S = int(self.half_window), int(self.search)
        i = np.rint((tr - oa) / fa).astype(np.int64)
        j = np.rint((tm - ob) / fb).astype(np.int64)
        out = np.full(tr.size, np.nan)
        if tr.size == 0 or A.shape[0] == 0 or B.shape[0] == 0:
            return out
        # times outside either recording stay where the path put them
        inside = (i >= 0) & (i < A.shape[0]) & (j >= 0) & (j < B.shape[0])
        # zero-padded so that every window is whole
        pad = H + S + 1
        Ap = np.vstack([np.zeros((pad, A.shape[1])), A, np.zeros((pad, A.shape[1]))])
        Bp = np.vstack([np.zeros((pad, B.shape[1])), B, np.zeros((pad, B.shape[1]))])
        i = np.clip(i, 0, A.shape[0] - 1) + pad
        j = np.clip(j, 0, B.shape[0] - 1) + pad
        ka = np.arange(-H, H + 1)
        kb = np.arange(-H - S, H + S + 1)
        for s0 in range(0, tr.size, _CHUNK):
            sl = slice(s0, s0 + _CHUNK)
            wa = Ap[i[sl, None] + ka]                          # (n, 2H+1, q)
            wb = Bp[j[sl, None] + kb]                          # (n, 2H+2S+1, q)
            # corr[n, s] = sum_k <wa[n, k], wb[n, k + s]>
            views = np.lib.stride_tricks.sliding_window_view(wb, 2 * H + 1, axis=1)  # (n, 2S+1, q, 2H+1)
            corr = np.einsum("nkq,nsqk->ns", wa, views)
            best = np.argmax(corr, axis=1)
            top = corr[np.arange(corr.shape[0]), best]
            frac = np.zeros(corr.shape[0])
            inner = (best > 0) & (best < 2 * S)
            if np.any(inner):
                r = np.nonzero(inner)[0]
                y0, y1, y2 = corr[r, best[r] - 1], corr[r, best[r]], corr[r, best[r] + 1]
                den = y0 - 2.0 * y1 + y2
                ok = den < 0
                frac[r[ok]] = 0.5 * (y0[ok] - y2[ok]) / den[ok]
            shift = (best - S + frac) * fb
            out[sl] = np.where(top > 0, shift, np.nan)
        out[~inside] = np.nan
        return out

    def __call__(self, reference_times_s, target_times_s) -> np.ndarray:
        """Refined target times, monotone in reference time, shape like ``target_times_s``."""
        tr = np.asarray(reference_times_s, dtype=np.float64)
        tm = np.asarray(target_times_s, dtype=np.float64)
        (oa, fa), (ob, fb) = self.reference_grid, self.target_grid
        # the frames the correlation registers, and the reference time's offset from its frame
        sub = tr.ravel() - (oa + fa * np.rint((tr.ravel() - oa) / fa))
        frame_b = ob + fb * np.rint((tm.ravel() - ob) / fb)
        shift = self.shifts(tr, tm)
        found = np.isfinite(shift)
        out = tm.ravel().copy()
        out[found] = frame_b[found] + shift[found] + sub[found]
        order = np.argsort(tr.ravel(), kind="stable")
        out[order] = np.maximum.accumulate(out[order])
        return np.maximum(out, 0.0).reshape(tm.shape)
