"""Generated recordings for the sync tests: the same notes played at two tempi (no data files needed)."""

import numpy as np

SR = 22050


def note_plan(seed=0, n=24):
    """Pitches (MIDI) and inter-onset intervals (s) of a short random melody."""
    rng = np.random.default_rng(seed)
    return rng.integers(48, 80, n), rng.uniform(0.15, 0.35, n)


def render(onsets_s, pitches, duration_s, *, harmonics=(1.0, 0.5, 0.33), sr=SR):
    """Decaying harmonic notes at the given onsets, shape (n,) float32."""
    y = np.zeros(int(duration_s * sr))
    n = int(0.4 * sr)
    tt = np.arange(n) / sr
    for t, p in zip(onsets_s, pitches):
        f = 440.0 * 2 ** ((p - 69) / 12)
        note = sum(a * np.sin(2 * np.pi * (h + 1) * f * tt) for h, a in enumerate(harmonics)) * np.exp(-6 * tt)
        i = int(t * sr)
        y[i:i + n] += note[:max(0, len(y) - i)]
    return (0.1 * y).astype(np.float32)


def stretched_pair(seed=0, n=24, start_b=0.3, stretch=(0.8, 1.3)):
    """A melody and the same melody with a smooth tempo change: ``(ya, yb, onsets_a, onsets_b)``."""
    pitches, ioi = note_plan(seed, n)
    on_a = np.r_[0.2, 0.2 + np.cumsum(ioi[:-1])]
    factor = np.linspace(stretch[0], stretch[1], n)
    on_b = np.r_[start_b, start_b + np.cumsum(ioi[:-1] * factor[:-1])]
    ya = render(on_a, pitches, on_a[-1] + 0.6)
    yb = render(on_b, pitches, on_b[-1] + 0.6, harmonics=(1.0, 0.3, 0.5))  # another "instrument"
    return ya, yb, on_a, on_b
