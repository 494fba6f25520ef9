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


def _concat(parts, start=0.2):
    pitches = np.concatenate([p for p, _ in parts])
    ioi = np.concatenate([i for _, i in parts])
    return pitches, np.r_[start, start + np.cumsum(ioi[:-1])]


def repeat_pair():
    """Phrases A P B against A P P B (one take plays the repeat): ``(ya, yb, onsets_a, onsets_b, n_a, n_p)``.

    Where the reference's P goes in the target is a true ambiguity: onto either of its two plays.
    ``n_a`` and ``n_p`` are the notes of A and of P.
    """
    A, P, B = note_plan(3, 8), note_plan(4, 6), note_plan(5, 8)
    pa, on_a = _concat([A, P, B])
    pb, on_b = _concat([A, P, P, B])
    ya = render(on_a, pa, on_a[-1] + 0.6)
    yb = render(on_b, pb, on_b[-1] + 0.6, harmonics=(1.0, 0.3, 0.5))
    return ya, yb, on_a, on_b, 8, 6


def pause_pair(pause_a=2.0, pause_b=3.0):
    """One melody with a pause after its 5th note, 2 s long in the reference and 3 s in the target."""
    pitches, ioi = note_plan(0, 10)
    on = np.r_[0.2, 0.2 + np.cumsum(ioi[:-1])]
    on_a, on_b = np.r_[on[:5], on[5:] + pause_a], np.r_[on[:5], on[5:] + pause_b]
    return render(on_a, pitches, on_a[-1] + 0.6), render(on_b, pitches, on_b[-1] + 0.6), on_a, on_b


def ringing_pair():
    """A melody ending on a long ringing note, with another lead-in, tempo and tail in each take.

    ``(ya, yb, onsets_a, onsets_b)``; the last onset is the ringing note's. The reference waits 1 s
    and rings 4 s, the target waits 2 s, plays 1.2 times slower and rings 3 s: in the lead-in and in
    the ring nothing tells where a moment of one take is in the other.
    """
    pitches, ioi = note_plan(1, 16)
    takes = []
    for lead, tempo, tail in ((1.0, 1.0, 4.0), (2.0, 1.2, 3.0)):
        on = lead + np.r_[0.0, np.cumsum(ioi[:-1] * tempo)]
        last = on[-1] + ioi[-1] * tempo
        y = render(on, pitches, last + tail).astype(np.float64)
        n = int(tail * SR)
        tt = np.arange(n) / SR
        f = 440.0 * 2 ** ((60 - 69) / 12)
        ring = sum(a * np.sin(2 * np.pi * (h + 1) * f * tt) for h, a in enumerate((1.0, 0.5, 0.33)))
        i = int(last * SR)
        y[i:i + n] += 0.1 * (ring * np.exp(-1.2 * tt))[:len(y) - i]
        takes.append((y.astype(np.float32), np.r_[on, last]))
    (ya, on_a), (yb, on_b) = takes
    return ya, yb, on_a, on_b


def three_takes_project(folder):
    """Takes a, b, c of one melody (b and c at other tempi) in a new project, a with 3 boundaries at its notes
    3, 8 and 15 and a no-change region between the first two; ``(engine, item id by name, onsets by name)``."""
    from marginalia.engine import Engine
    from marginalia.io.audio import write_wav
    from marginalia.types import BoundaryLabel, RegionKind, RegionLabel
    ya, yb, on_a, on_b = stretched_pair(0)
    _, yc, _, on_c = stretched_pair(0, start_b=0.5, stretch=(1.2, 0.9))
    for name, y in (("a", ya), ("b", yb), ("c", yc)):
        write_wav(folder / f"{name}.wav", y, SR)
    eng = Engine.create(folder / "p.marginalia")
    eng.import_files([folder / f"{n}.wav" for n in "abc"])
    ids = {it.name: it.id for it in eng.items()}
    pos = eng.sequence(ids["a"]).positions
    idx = [int(np.searchsorted(pos, t)) for t in on_a[[3, 8, 15]]]
    eng.add_labels([BoundaryLabel(item_id=ids["a"], index=i) for i in idx]
                   + [RegionLabel(item_id=ids["a"], start=idx[0] + 3, stop=idx[1] - 3, kind=RegionKind.ZERO)])
    return eng, ids, {"a": on_a, "b": on_b, "c": on_c}


def all_paths(TA, TB):
    """Every monotone warping path from ``(0, 0)`` to ``(TA - 1, TB - 1)``, each an int array of shape (L, 2).

    In the order of a depth-first walk trying a step down, right, then diagonal (the tests draw from this list
    by index).
    """
    out = []

    def rec(p):
        i, j = p[-1]
        if (i, j) == (TA - 1, TB - 1):
            out.append(np.array(p))
            return
        for di, dj in ((1, 0), (0, 1), (1, 1)):
            if i + di < TA and j + dj < TB:
                rec(p + [(i + di, j + dj)])

    rec([(0, 0)])
    return out
