"""Vienna 4x22: performances, scores and per-event ground truth."""

from __future__ import annotations

import csv
from dataclasses import dataclass
from pathlib import Path

import numpy as np


@dataclass
class Performance:
    piece: str
    pianist: str
    midi: Path
    score_midi: Path
    truth_median: np.ndarray  # (E,) median performed onset of the event's matched notes (NaN if none)
    truth_first: np.ndarray  # (E,) earliest performed onset


def event_truth(score, gt_csv: Path):
    """Per score event: median and earliest performed onset of its matched notes.

    Score events and ground-truth score onsets correspond in order (the score
    MIDI starts at beat 0, the ground truth may start with an upbeat); they are
    matched through the beat offset of the first onsets.
    """
    rows = list(csv.DictReader(open(gt_csv)))
    by_q = {}
    all_q = set()
    for r in rows:
        if r["label"] == "insertion" or not r["score_onset_quarter"]:
            continue
        q = float(r["score_onset_quarter"])
        all_q.add(q)
        if r["label"] == "match" and r["perf_onset_sec"]:
            by_q.setdefault(q, []).append(float(r["perf_onset_sec"]))
    qs = np.array(sorted(all_q))
    beats = np.asarray(score.event_onsets_beats, dtype=np.float64)
    E = beats.shape[0]
    shifted = qs - qs[0] + beats[0]
    med = np.full(E, np.nan)
    first = np.full(E, np.nan)
    for q, b in zip(qs, shifted):
        e = int(np.argmin(np.abs(beats - b)))
        if abs(beats[e] - b) > 1e-3 or q not in by_q:
            continue
        med[e] = float(np.median(by_q[q]))
        first[e] = float(np.min(by_q[q]))
    return med, first


def performances(root: Path, pieces=None, pianists=None):
    from marginalia.io.midi import read_midi
    out = []
    for gt in sorted((root / "ground_truth").glob("*_p*.csv")):
        piece, pianist = gt.stem.rsplit("_", 1)
        if pieces is not None and piece not in pieces:
            continue
        if pianists is not None and pianist not in pianists:
            continue
        score_midi = root / "score_midi" / f"{piece}.mid"
        score = read_midi(score_midi)
        med, first = event_truth(score, gt)
        out.append(Performance(piece, pianist, root / "midi" / f"{gt.stem}.mid", score_midi, med, first))
    return out
