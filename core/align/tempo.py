"""Expected event durations that follow the performance's local tempo, read from a first decoded path.

The aligner's duration prior stretches the score's inter-onset intervals by one ratio, the recording's music
frames over the score's length. Where the performed tempo strays far from that ratio for a long stretch (a
score file that keeps one tempo where the pianist does not, several pieces or movements in one recording) the
prior pulls every event of the stretch the same wrong way, and a passage whose frames match its templates only
weakly (a soft opening, a low ostinato) is dragged by seconds. A first decode already places most events
right, so the performed frames per score second around each event, measured on that path over a window of a
few seconds, give each event an expected duration at its local tempo; a second decode then uses them.
"""

from __future__ import annotations

import numpy as np

from ..exceptions import ParameterError

__all__ = ["local_expected_durations"]


def local_expected_durations(ioi_s, onsets, end, window) -> np.ndarray:
    """Every event's score interval at the tempo of the decoded events around it.

    The rate around event ``e`` is the decoded frames of the events whose onsets lie within ``window`` frames
    of ``e``'s centre (the middle of its decoded span, so ``e`` itself always counts) over their score
    seconds; an event whose neighbourhood has no score length keeps the path's overall rate.

    Parameters
    ----------
    ioi_s : array_like, shape (E,)
        Score seconds from each event's onset to the next (the last: to the score's end), >= 0.
    onsets : array_like of int, shape (E,)
        Decoded onset frame of every event, strictly increasing.
    end : int
        The frame where the last event ends (> ``onsets[-1]``).
    window : float
        Half-width of the neighbourhood, in frames (> 0).

    Returns
    -------
    ndarray, shape (E,)
        Expected duration of every event in frames (>= 0).
    """
    ioi = np.asarray(ioi_s, dtype=np.float64)
    on = np.asarray(onsets, dtype=np.float64)
    if ioi.ndim != 1 or on.shape != ioi.shape or ioi.size == 0 or np.any(ioi < 0) or not np.all(np.isfinite(ioi)):
        raise ParameterError(f"ioi_s/onsets: expected two arrays of shape (E,), intervals >= 0, got shapes "
                             f"{ioi.shape} and {on.shape}")
    if np.any(np.diff(on) <= 0) or not float(end) > on[-1]:
        raise ParameterError("onsets: expected strictly increasing onset frames ending before `end`")
    if not float(window) > 0:
        raise ParameterError(f"window: expected a positive number of frames, got {window!r}")
    dur = np.diff(np.append(on, float(end)))
    cum_frames = np.r_[0.0, np.cumsum(dur)]
    cum_score = np.r_[0.0, np.cumsum(ioi)]
    centre = on + 0.5 * dur
    own = np.arange(on.shape[0])
    a = np.minimum(np.searchsorted(on, centre - float(window), side="left"), own)
    b = np.maximum(np.searchsorted(on, centre + float(window), side="right"), own + 1)
    score_s = cum_score[b] - cum_score[a]
    overall = cum_frames[-1] / cum_score[-1] if cum_score[-1] > 0 else 0.0
    rate = np.where(score_s > 0, (cum_frames[b] - cum_frames[a]) / np.where(score_s > 0, score_s, 1.0), overall)
    return ioi * rate
