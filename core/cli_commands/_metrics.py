"""Onset error of an alignment, the quality measure ``evaluate --alignment`` reports.

The predicted audio time of each score event is compared with the
ground-truth performed onset, after matching the events of both tables by
their pitches in score order (a monotone matching maximising pitch-set
overlap, so a ground truth with missing or extra notes still lines up).
(The labelled-region error of a segmentation is :func:`marginalia.metrics.region_errors`.)
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numba
import numpy as np

from ..exceptions import DataFormatError
from ..io.tables import read_csv_table

__all__ = [
    "AlignmentTable",
    "read_alignment_table",
    "read_truth_table",
    "match_events",
    "onset_error_summary",
    "ONSET_THRESHOLDS_S",
]

ONSET_THRESHOLDS_S = (0.05, 0.10, 0.25)


# --------------------------------------------------------------- onset error


@dataclass(frozen=True, eq=False)
class AlignmentTable:
    """Events of an alignment table.

    Attributes
    ----------
    score_time : ndarray, shape (E,)
        Event onsets in the score's time (seconds or beats), increasing.
    audio_time : ndarray, shape (E,)
        Onsets in the audio in seconds (NaN where unknown).
    pitches : list of tuple of int
        The MIDI pitches of each event.
    """

    score_time: np.ndarray
    audio_time: np.ndarray
    pitches: list

    @property
    def n_events(self) -> int:
        return int(self.score_time.shape[0])


def _float(value, column, path, line):
    try:
        x = float(value) if value not in (None, "") else math.nan
    except ValueError:
        raise DataFormatError(f"column {column!r}: expected a number, got {value!r}", path=str(path),
                              where=f"line {line}") from None
    return x


def _pitch_set(value, path, line) -> tuple:
    try:
        return tuple(sorted({int(float(v)) for v in str(value or "").replace(";", " ").split()}))
    except ValueError:
        raise DataFormatError(f"column 'pitches': expected space-separated MIDI numbers, got {value!r}",
                              path=str(path), where=f"line {line}") from None


def read_alignment_table(path) -> AlignmentTable:
    """Read an ``event,score_time_s,audio_time_s,pitches`` table (as written by ``align``)."""
    p, header, rows = read_csv_table(path)
    missing = [c for c in ("score_time_s", "audio_time_s", "pitches") if c not in header]
    if missing:   # pitches too: events are matched to the truth by their pitches
        raise DataFormatError(f"missing column(s) {missing}; expected event,score_time_s,audio_time_s,pitches "
                              f"as written by `marginalia-cli align` (found {header})", path=str(p))
    st, at, pitches = [], [], []
    for i, row in rows:
        st.append(_float(row["score_time_s"], "score_time_s", p, i))
        at.append(_float(row["audio_time_s"], "audio_time_s", p, i))
        pitches.append(_pitch_set(row.get("pitches"), p, i))
    if not rows:
        raise DataFormatError("the table has no events", path=str(p))
    return AlignmentTable(np.asarray(st), np.asarray(at), pitches)


_TRUTH_SCORE_COLS = ("score_time_s", "score_onset_quarter", "score_onset_beat", "score_onset_s", "score_time")
_TRUTH_AUDIO_COLS = ("audio_time_s", "perf_onset_sec", "perf_onset_s", "onset_s", "time_s")


def read_truth_table(path, *, tolerance: float = 1e-6) -> AlignmentTable:
    """Read a ground-truth onset table and group its notes into score events.

    Accepted columns: a score time (``score_time_s``, ``score_onset_quarter``,
    ``score_onset_beat``...), a performed time (``audio_time_s``,
    ``perf_onset_sec``...), and ``pitch`` (one note per row) or ``pitches``.
    Rows with a ``label`` other than ``match`` (deletions, insertions) and rows
    without a performed time are dropped. Notes sharing a score time form one
    event whose performed onset is the median of its notes' onsets.
    """
    p, header, rows = read_csv_table(path)
    s_col = next((c for c in _TRUTH_SCORE_COLS if c in header), None)
    a_col = next((c for c in _TRUTH_AUDIO_COLS if c in header), None)
    if s_col is None or a_col is None or not ({"pitch", "pitches"} & set(header)):
        raise DataFormatError(f"expected a score-time column (one of {list(_TRUTH_SCORE_COLS)}), a performed-time "
                              f"column (one of {list(_TRUTH_AUDIO_COLS)}) and 'pitch' or 'pitches'; found {header}",
                              path=str(p))
    notes = []
    for i, row in rows:
        if "label" in header and row.get("label", "match").strip() not in ("match", ""):
            continue
        s = _float(row[s_col], s_col, p, i)
        a = _float(row[a_col], a_col, p, i)
        if math.isnan(s) or math.isnan(a):
            continue
        ps = _pitch_set(row["pitch"] if "pitch" in header else row["pitches"], p, i)
        notes.append((s, a, ps))
    if not notes:
        raise DataFormatError("no usable ground-truth rows (need a score time and a performed time)", path=str(p))
    notes.sort(key=lambda n: n[0])
    st, at, pitches = [], [], []
    group: list = []
    for note in notes + [None]:
        if group and (note is None or note[0] - group[0][0] > tolerance):
            st.append(group[0][0])
            at.append(float(np.median([n[1] for n in group])))
            pitches.append(tuple(sorted({q for n in group for q in n[2]})))
            group = []
        if note is not None:
            group.append(note)
    return AlignmentTable(np.asarray(st), np.asarray(at), pitches)


def _pitch_matrix(pitches) -> np.ndarray:
    m = np.zeros((len(pitches), 128))
    for i, ps in enumerate(pitches):
        for q in ps:
            if 0 <= q < 128:
                m[i, q] = 1.0
    return m


@numba.njit(cache=True)
def _monotone_match(sim):  # pragma: no cover - compiled
    n, m = sim.shape
    best = np.zeros((n + 1, m + 1))
    move = np.zeros((n + 1, m + 1), dtype=np.int8)  # 0 diag, 1 skip a, 2 skip b
    for i in range(1, n + 1):
        move[i, 0] = 1
    for j in range(1, m + 1):
        move[0, j] = 2
    for i in range(1, n + 1):
        for j in range(1, m + 1):
            d = best[i - 1, j - 1] + sim[i - 1, j - 1] if sim[i - 1, j - 1] > 0 else -1.0
            u = best[i - 1, j]
            left = best[i, j - 1]
            if d >= u and d >= left:
                best[i, j] = d
                move[i, j] = 0
            elif u >= left:
                best[i, j] = u
                move[i, j] = 1
            else:
                best[i, j] = left
                move[i, j] = 2
    pairs = np.empty((min(n, m), 2), dtype=np.int64)
    k = 0
    i, j = n, m
    while i > 0 or j > 0:
        mv = move[i, j]
        if mv == 0:
            pairs[k, 0] = i - 1
            pairs[k, 1] = j - 1
            k += 1
            i -= 1
            j -= 1
        elif mv == 1:
            i -= 1
        else:
            j -= 1
    return pairs[:k][::-1].copy()


def match_events(predicted: AlignmentTable, truth: AlignmentTable) -> np.ndarray:
    """Monotone one-to-one matching of events maximising the summed pitch-set overlap (Jaccard).

    Returns
    -------
    pairs : ndarray of int, shape (M, 2)
        ``(predicted event, truth event)`` index pairs, increasing in both.
    """
    a = _pitch_matrix(predicted.pitches)
    b = _pitch_matrix(truth.pitches)
    inter = a @ b.T
    union = a.sum(1)[:, None] + b.sum(1)[None, :] - inter
    sim = np.where(union > 0, inter / np.maximum(union, 1.0), 0.0)
    return _monotone_match(np.ascontiguousarray(sim))


#: mir_eval.alignment's metric names, as papers report them
MIR_EVAL_ALIGNMENT_METRICS = ("pc", "mae", "aae", "pcs", "perceptual")


def alignment_metrics(reference_s, estimated_s, *, window_s: float = 0.3) -> dict:
    """The alignment metrics of ``mir_eval.alignment.evaluate`` under its names, computed here.

    ``pc`` share of events within ``window_s`` (0.3 s, mir_eval's default), ``mae`` median and ``aae``
    mean absolute error (s), ``pcs`` percentage of correct segments (the MIREX 2020 variant: segments
    between consecutive events, over the reference's first-to-last span), ``perceptual`` the karaoke
    perceptual score (a skew-normal of the signed offsets, Lizé-Masclef et al. 2021). Formulas follow
    mir_eval 0.8 (a test computes both); NaN when there are no events (pcs: fewer than two distinct
    reference times).

    Parameters
    ----------
    reference_s, estimated_s : array_like, shape (N,)
        Matched event times in seconds, sorted by reference time.
    """
    from scipy.stats import skewnorm
    ref = np.asarray(reference_s, dtype=np.float64)
    est = np.asarray(estimated_s, dtype=np.float64)
    if ref.size == 0:
        return {k: math.nan for k in MIR_EVAL_ALIGNMENT_METRICS}
    dev = np.abs(ref - est)
    span = ref[-1] - ref[0]
    if span > 0:
        overlap = np.maximum(np.minimum(ref[1:], est[1:]) - np.maximum(ref[:-1], est[:-1]), 0.0)
        pcs = float(np.sum(overlap) / span)
    else:
        pcs = math.nan
    perceptual = float(np.mean(skewnorm.pdf(est - ref, 1.12244251, loc=-0.22270315, scale=0.29779424) / 1.6857))
    return {"pc": float(np.mean(dev <= window_s)), "mae": float(np.median(dev)), "aae": float(np.mean(dev)),
            "pcs": pcs, "perceptual": perceptual}


def onset_error_summary(predicted: AlignmentTable, truth: AlignmentTable,
                        thresholds=ONSET_THRESHOLDS_S) -> dict:
    """Onset errors of matched events: count, median, mean, and the share within each threshold.

    Returns
    -------
    dict
        ``n_truth``, ``n_predicted``, ``n_matched``, ``median_s``, ``mean_s`` and ``within_<ms>ms``
        (percent of *ground-truth* events matched and within the threshold; an unmatched truth event
        counts as a miss), then mir_eval's names over the matched events (:func:`alignment_metrics`:
        ``pc``, ``mae``, ``aae``, ``pcs``, ``perceptual``).
    """
    pairs = match_events(predicted, truth)
    err = np.abs(predicted.audio_time[pairs[:, 0]] - truth.audio_time[pairs[:, 1]]) if len(pairs) else np.zeros(0)
    err = err[np.isfinite(err)]
    out = {"n_truth": truth.n_events, "n_predicted": predicted.n_events, "n_matched": int(err.shape[0]),
           "median_s": float(np.median(err)) if err.size else math.nan,
           "mean_s": float(np.mean(err)) if err.size else math.nan}
    for t in thresholds:
        # 1 µs slack so that an error of exactly the threshold (up to float rounding) counts as within
        out[f"within_{int(round(t * 1000))}ms"] = 100.0 * float(np.sum(err <= t + 1e-6)) / max(truth.n_events, 1)
    if len(pairs):
        ref, est = truth.audio_time[pairs[:, 1]], predicted.audio_time[pairs[:, 0]]
        ok = np.isfinite(ref) & np.isfinite(est)
        order = np.argsort(ref[ok], kind="stable")
        out.update(alignment_metrics(ref[ok][order], est[ok][order]))
    else:
        out.update(alignment_metrics([], []))
    return out
