"""Small synthetic items built from marginalia.types for the app tests (no files, no engine)."""

from __future__ import annotations

import numpy as np

from marginalia.types import Alignment, MidiScore, Prediction, Segmentation, Sequence


def cgh_sequence(T: int = 200, seed: int = 0, changes=(60, 140)) -> Sequence:
    """A piecewise-constant logratio profile with changes at ``changes`` (positions in bp)."""
    rng = np.random.default_rng(seed)
    means = np.zeros(T)
    level = 0.0
    last = 0
    for k, c in enumerate(list(changes) + [T]):
        means[last:c] = level
        level = 0.6 if k % 2 == 0 else -0.4
        last = c
    values = means + 0.08 * rng.standard_normal(T)
    positions = np.cumsum(rng.integers(5_000, 15_000, size=T)).astype(float)
    return Sequence(values, positions, name="profile 1, chr 2", units="bp", group="2", kind="cgh")


def audio_item(T: int = 300, F: int = 32, hop_s: float = 0.05):
    """Feature sequence, spectrogram (F, T) dB, times, freqs and a 6-event score."""
    rng = np.random.default_rng(1)
    times = np.arange(T) * hop_s
    seq = Sequence(rng.standard_normal((T, 4)), times, name="tune.wav", units="s", kind="audio")
    image = (rng.standard_normal((F, T)) * 6 - 40).astype(np.float32)
    freqs = np.geomspace(60, 8000, F)
    score = MidiScore(pitches=[60, 64, 67, 65, 62, 60], onsets_s=[0, 2, 4, 6, 8, 10],
                  offsets_s=[2, 4, 6, 8, 10, 12], name="tune")
    return seq, image, times, freqs, score


def segmentation_prediction(item_id: str, changes, T: int, runner=None, model_id: str = "m1") -> Prediction:
    best = Segmentation(list(changes) + [T])
    ru = Segmentation(list(runner) + [T]) if runner is not None else None
    return Prediction(item_id=item_id, structure=best, model_id=model_id, score=1.0, runner_up=ru,
                      margin=0.5 if ru is not None else float("inf"))


def alignment_prediction(item_id: str, onsets, T: int, runner=None, model_id: str = "m1") -> Prediction:
    best = Alignment(onsets, T)
    ru = Alignment(runner, T) if runner is not None else None
    return Prediction(item_id=item_id, structure=best, model_id=model_id, runner_up=ru, margin=0.2)
