"""Conversions between plot x coordinates (bp or seconds) and sample / change indices."""

from __future__ import annotations

import numpy as np


class AxisMapping:
    """Maps sample indices of a sequence to x positions and back.

    Parameters
    ----------
    positions : ndarray, shape (T,)
        Non-decreasing position of each sample (base pairs, seconds).
    """

    def __init__(self, positions: np.ndarray):
        pos = np.asarray(positions, dtype=np.float64).reshape(-1)
        if pos.size == 0:
            raise ValueError("AxisMapping: positions must not be empty")
        self.positions = pos
        step = float(np.median(np.diff(pos))) if pos.size > 1 else 1.0
        self.step = step if step > 0 else 1.0

    @property
    def n_samples(self) -> int:
        return int(self.positions.size)

    def sample_x(self, index) -> np.ndarray:
        """x of sample ``index`` (clipped to the valid range)."""
        idx = np.clip(np.asarray(index, dtype=np.int64), 0, self.n_samples - 1)
        return self.positions[idx]

    def change_x(self, change) -> np.ndarray:
        """x of change index ``c``: half-way between samples ``c-1`` and ``c``."""
        c = np.asarray(change, dtype=np.int64)
        T = self.n_samples
        left = self.positions[np.clip(c - 1, 0, T - 1)]
        right = np.where(c < T, self.positions[np.clip(c, 0, T - 1)], self.positions[-1] + self.step)
        return 0.5 * (left + right)

    def start_x(self, start) -> np.ndarray:
        """x of the left edge of sample ``start`` (vectorised)."""
        start = np.asarray(start, dtype=np.int64)
        return np.where(start > 0, self.change_x(np.maximum(start, 1)), self.positions[0] - 0.5 * self.step)

    def region_x(self, start: int, stop: int) -> tuple:
        """x extent drawn for the samples ``[start, stop)``: from before ``start`` to after ``stop-1``."""
        return float(self.change_x(start) if start > 0 else self.positions[0] - 0.5 * self.step), \
            float(self.change_x(stop))

    def region_indices(self, x0: float, x1: float) -> tuple:
        """Samples ``[start, stop)`` whose positions lie in ``[x0, x1]`` (at least one sample)."""
        lo, hi = min(x0, x1), max(x0, x1)
        start = int(np.searchsorted(self.positions, lo, side="left"))
        stop = int(np.searchsorted(self.positions, hi, side="right"))
        start = min(start, self.n_samples - 1)
        stop = max(stop, start + 1)
        return start, min(stop, self.n_samples)

    def nearest_change(self, x: float) -> int:
        """Change index ``c`` in ``[1, T-1]`` whose drawn position is closest to ``x``."""
        T = self.n_samples
        if T < 2:
            return 1
        mids = 0.5 * (self.positions[:-1] + self.positions[1:])
        j = int(np.searchsorted(mids, x))
        cands = [c for c in (j, j + 1) if 1 <= c <= T - 1]
        return min(cands, key=lambda c: abs(mids[c - 1] - x))

    def nearest_sample(self, x: float) -> int:
        j = int(np.searchsorted(self.positions, x))
        cands = [i for i in (j - 1, j) if 0 <= i < self.n_samples]
        return min(cands, key=lambda i: abs(self.positions[i] - x))
