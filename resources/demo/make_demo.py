"""Generate the embedded demo data (our own synthetic data, seeded, no third-party content).

Writes into this folder:

* ``profiles.csv`` -- 3 aCGH-like profiles x 4 chromosomes, piecewise-constant noisy logratio,
  200..2000 probes per chromosome; ``profiles_truth_breaks.csv`` -- the true change positions.
* ``annotations.csv`` -- region labels using all five words of the SegAnnDB convention, consistent with
  the truth.
* ``melody.mid`` -- a ~20 s two-track score (melody + chords) with a tempo change (100 -> 80 bpm).
* ``melody.wav`` -- that score rendered by additive synthesis with a slight tempo warp, 22050 Hz mono
  16-bit; ``melody_truth.csv`` -- the true audio onset of every score event.

Run ``python resources/demo/make_demo.py`` with Marginalia installed (``make install``); the output is byte-identical
from run to run.
"""

from __future__ import annotations

import pathlib

import numpy as np

from marginalia.io import audio, cgh, midi
from marginalia.types import MidiScore, Segmentation, Sequence

HERE = pathlib.Path(__file__).resolve().parent

SEED = 20261123
SR = 22050

# ------------------------------------------------------------------ aCGH

CHROMOSOMES = (("1", 248_956_422), ("2", 242_193_529), ("7", 159_345_973), ("17", 83_257_441))
LEVELS = np.array([-0.6, -0.3, 0.0, 0.0, 0.3, 0.6])


def make_profiles(rng):
    """Return (sequences, true segmentations) of 3 profiles x 4 chromosomes."""
    seqs, segs = [], []
    for pid in ("1", "2", "3"):
        noise = rng.uniform(0.12, 0.22)
        for chrom, length in CHROMOSOMES:
            n = int(rng.integers(200, 2001))
            pos = np.sort(rng.choice(np.arange(50_000, length, 997), size=n, replace=False)).astype(np.float64)
            k = int(rng.integers(0, 4))  # number of changes
            changes = np.sort(rng.choice(np.arange(20, n - 20), size=k, replace=False)) if k else np.array([], int)
            bounds = np.concatenate([[0], changes, [n]])
            level = np.empty(n)
            prev = None
            for a, b in zip(bounds[:-1], bounds[1:]):
                choices = LEVELS if prev is None else LEVELS[LEVELS != prev]
                prev = float(rng.choice(choices))
                level[a:b] = prev
            lr = np.round(level + rng.normal(0, noise, n), 6)
            seqs.append(Sequence(values=lr, positions=pos, name=f"{pid}:{chrom}", units="bp", group=chrom, kind="cgh",
                                 feature_names=("logratio",), meta={"profile_id": pid, "chromosome": chrom}))
            segs.append(Segmentation(np.concatenate([changes, [n]]).astype(np.int64)))
    return seqs, segs


def make_annotations(rng, seqs, segs):
    """Two or three labels per sequence that agree with the true changes, using all five words."""
    labels = []
    zero_words, many_words = ("0breakpoints", "normal"), ("breakpoint", ">0breakpoints")
    for seq, seg in zip(seqs, segs):
        n = seq.n_samples
        bps = seg.breakpoints.tolist()
        edges = [0] + bps + [n]
        # a ZERO region well inside the longest segment
        k = int(np.argmax(np.diff(edges)))
        a, b = edges[k], edges[k + 1]
        lo, hi = a + (b - a) // 4, a + 3 * (b - a) // 4
        labels.append((seq, lo, hi, zero_words[len(labels) % 2]))
        if bps:
            c = bps[0]
            left = edges[0]
            right = edges[2] if len(edges) > 2 else n
            lo, hi = max(left + 1, c - 15), min(right - 1, c + 15)
            labels.append((seq, lo, hi, "1breakpoint"))
        if len(bps) >= 2:
            labels.append((seq, max(bps[0] - 5, 0), min(bps[-1] + 5, n), many_words[len(labels) % 2]))
    out = []
    for seq, lo, hi, word in labels:
        # bp bounds halfway between probes, as an expert dragging a rectangle would give
        p = seq.positions
        min_bp = int((p[lo - 1] + p[lo]) // 2) if lo > 0 else int(p[0]) - 100
        max_bp = int((p[hi - 1] + p[hi]) // 2) if hi < len(p) else int(p[-1]) + 100
        out.append(cgh.CghRegionLabel(item_id=seq.name, start=lo, stop=hi, kind=cgh.ANNOTATION_KINDS[word],
                                      min_bp=float(min_bp), max_bp=float(max_bp), annotation=word,
                                      id=f"demo{len(out):03d}", created=1.0))
    return out


# ------------------------------------------------------------------ score and audio

# (beat, duration in beats, pitch) of the melody: a small tune in C major
MELODY = [
    (0, 1, 67), (1, 0.5, 69), (1.5, 0.5, 67), (2, 1, 65), (3, 1, 64),
    (4, 1, 62), (5, 1, 64), (6, 2, 60),
    (8, 1, 64), (9, 0.5, 65), (9.5, 0.5, 67), (10, 1, 69), (11, 1, 67),
    (12, 1, 65), (13, 1, 64), (14, 2, 62),
    (16, 1, 67), (17, 1, 72), (18, 1, 71), (19, 1, 69),
    (20, 1, 67), (21, 0.5, 65), (21.5, 0.5, 64), (22, 2, 62),
    (24, 1, 64), (25, 1, 65), (26, 1, 67), (27, 1, 62), (28, 2, 60),
]
# (beat, duration, pitches) of the accompaniment chords
CHORDS = [(0, 2, (48, 52, 55)), (4, 2, (43, 47, 50)), (6, 2, (48, 52, 55)), (8, 2, (45, 48, 52)),
          (12, 2, (41, 45, 48)), (14, 2, (43, 47, 50)), (16, 2, (48, 52, 55)), (20, 2, (41, 45, 48)),
          (22, 2, (43, 47, 50)), (28, 2, (36, 48, 52, 55))]
TEMPO_CHANGE_BEAT = 16
TEMPI_BPM = (100.0, 80.0)


def beats_to_seconds(beats):
    b = np.asarray(beats, dtype=np.float64)
    first = 60.0 / TEMPI_BPM[0]
    second = 60.0 / TEMPI_BPM[1]
    return np.where(b <= TEMPO_CHANGE_BEAT, b * first,
                    TEMPO_CHANGE_BEAT * first + (b - TEMPO_CHANGE_BEAT) * second)


def make_score() -> MidiScore:
    rows = [(b, d, p, 1, 90) for b, d, p in MELODY] + [(b, d, p, 2, 60) for b, d, ps in CHORDS for p in ps]
    beats = np.array([r[0] for r in rows], dtype=np.float64)
    ends = beats + np.array([r[1] for r in rows])
    ends = ends - 0.05  # a tiny gap so repeated pitches are re-struck
    tpb = 480
    us = [int(round(6e7 / bpm)) for bpm in TEMPI_BPM]
    tempo_map = np.array([[0.0, 0.0, us[0]], [TEMPO_CHANGE_BEAT, float(beats_to_seconds(TEMPO_CHANGE_BEAT)), us[1]]])
    return MidiScore(pitches=[r[2] for r in rows], onsets_s=beats_to_seconds(beats), offsets_s=beats_to_seconds(ends),
                 onsets_beats=beats, offsets_beats=ends, velocities=[r[4] for r in rows],
                 tracks=[r[3] for r in rows], name="melody", tempo_map=tempo_map, ticks_per_beat=tpb,
                 meta={"time_signatures": ((0.0, 4, 4),), "track_names": ("melody", "tune", "chords")})


def warp(t):
    """Performance time of score time ``t`` (seconds): a 0.3 s lead-in and a gentle rubato (monotone)."""
    t = np.asarray(t, dtype=np.float64)
    return 0.3 + 1.02 * t + 0.35 * np.sin(2 * np.pi * t / 9.0)


def render(score: MidiScore, rng) -> np.ndarray:
    """Additive synthesis: 6 harmonics (1/k amplitudes), fast attack, exponential decay, short release."""
    on, off = warp(score.onsets_s), warp(score.offsets_s)
    total = float(off.max()) + 0.6
    y = np.zeros(int(total * SR))
    for p, a, b, v in zip(score.pitches, on, off, score.velocities):
        f0 = 440.0 * 2 ** ((p - 69) / 12)
        n0, n1 = int(round(a * SR)), int(round((b + 0.15) * SR))
        t = np.arange(n1 - n0) / SR
        env = np.minimum(t / 0.01, 1.0) * np.exp(-t * 2.5)
        env *= np.clip((b + 0.15 - a - t) / 0.15, 0, 1)  # release over the last 150 ms
        tone = sum(np.sin(2 * np.pi * k * f0 * t + rng.uniform(0, 2 * np.pi)) / k for k in range(1, 7)
                   if k * f0 < SR / 2)
        y[n0:n1] += (v / 127) * env * tone
    y += rng.normal(0, 1e-3, y.shape[0])
    return 0.8 * y / np.max(np.abs(y))


def main(out_dir=HERE):
    out_dir = pathlib.Path(out_dir)
    rng = np.random.default_rng(SEED)
    seqs, segs = make_profiles(rng)
    cgh.write_profiles(out_dir / "profiles.csv", seqs)
    cgh.write_breaks(out_dir / "profiles_truth_breaks.csv", list(zip(seqs, segs)))
    labels = make_annotations(rng, seqs, segs)
    cgh.write_annotations(out_dir / "annotations.csv", labels, seqs)

    score = make_score()
    midi.write_midi(out_dir / "melody.mid", score)
    score = midi.read_midi(out_dir / "melody.mid")  # render exactly what the file holds
    audio.write_wav(out_dir / "melody.wav", render(score, rng), SR)
    midi.write_alignment_csv(out_dir / "melody_truth.csv", score, warp(score.event_onsets_s))

    # self-check: everything reads back and the labels agree with the truth
    back = cgh.read_profiles(out_dir / "profiles.csv")
    ann = cgh.read_annotations(out_dir / "annotations.csv", back)
    truth = {s.name: g for s, g in zip(seqs, segs)}
    for lab in ann:
        inside = [c for c in truth[lab.item_id].breakpoints if lab.start < c < lab.stop]
        lo, hi = lab.kind.bounds
        assert lo <= len(inside) and (hi is None or len(inside) <= hi), lab
    words = {lab.annotation for lab in ann}
    assert words == set(cgh.ANNOTATION_KINDS), words
    print(f"profiles: {len(back)} sequences, {sum(s.n_samples for s in back)} probes; annotations: {len(ann)}")
    print(f"melody: {score.n_notes} notes, {score.n_events} events, {score.duration_s:.1f} s score, "
          f"{audio.audio_info(out_dir / 'melody.wav').duration_s:.1f} s audio")


if __name__ == "__main__":
    main()
