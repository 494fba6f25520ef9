"""The aligner's pitch bands in the low register: every piano semitone from C2 up gets its own band power."""

from __future__ import annotations

import numpy as np
import pytest

from marginalia.align.aligner import _LOW_PITCH, _LOW_SPLIT_PITCH, _band_power, _fft_size, _pitch_band_power

SR = 22050


def _tone(pitch: int, seconds: float = 2.0, amp: float = 0.1) -> np.ndarray:
    t = np.arange(int(seconds * SR)) / SR
    return amp * np.sin(2 * np.pi * 440.0 * 2 ** ((pitch - 69) / 12) * t)


def _bands(y: np.ndarray) -> np.ndarray:
    n_fft = _fft_size(SR)
    return _pitch_band_power(y, SR, n_fft, n_fft // 16, _band_power(y, SR, n_fft, n_fft // 16))


@pytest.mark.parametrize("pitch", list(range(36, 72)))
def test_a_low_sine_is_loudest_in_its_own_semitone_band(pitch):
    P = _bands(_tone(pitch))
    steady = P[100:-100].mean(axis=0)  # away from the padded edges
    assert int(np.argmax(steady)) == pitch - _LOW_PITCH
    assert steady[pitch - _LOW_PITCH] > 0.5 * steady.sum()


def test_the_long_and_short_windows_agree_in_scale_across_the_split():
    below = _bands(_tone(_LOW_SPLIT_PITCH))[100:-100].sum(axis=1).mean()
    above = _bands(_tone(_LOW_SPLIT_PITCH + 1))[100:-100].sum(axis=1).mean()
    assert 0.8 < below / above < 1.25


def test_the_bands_keep_the_fine_frame_count_and_follow_a_note_start():
    n_fft = _fft_size(SR)
    hop = n_fft // 16
    y = np.concatenate([np.zeros(SR), _tone(40, 1.0)])
    P = _pitch_band_power(y, SR, n_fft, hop, _band_power(y, SR, n_fft, hop))
    assert P.shape == (1 + y.shape[0] // hop, 88)
    band = P[:, 40 - _LOW_PITCH]
    # half the steady power is reached within the long window's half length of the true start
    start = SR / hop
    half = int(np.flatnonzero(band > 0.5 * band[-200:-100].mean())[0])
    assert abs(half - start) < 4 * n_fft / 2 / hop
