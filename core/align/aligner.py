"""Audio-to-score alignment: features → frame × event scores → decoding → onset refinement.

One pipeline used by the engine, the command line and the benchmarks.

1. **Features** (:meth:`ScoreAligner.features`). A short-time spectrum with a
   fine hop (``≈ 5.8 ms`` at 22.05 kHz) is summed into the 88 piano semitone
   bands and log-compressed. From it: *chroma* (the bands folded into 12 pitch
   classes; the bands up to B3 from a 4 times longer window, whose bins are
   narrower than a semitone) and *onset chroma* (per-semitone positive spectral flux, folded
   into pitch classes). Both are pooled to decoding frames (``coarse`` fine
   frames each); the onset chroma is smeared by a decaying causal filter and
   normalised with a floor (a DLNCO-like feature: right after an event's onset
   the frame "sees" the event's new pitch classes).
2. **Scores**. A frame descriptor ``x_t`` = [unit chroma, unit onset chroma,
   1] (damped in quiet frames) is scored against every event template ``φ_e``
   (its pitch classes, unit norm) by ``S = X W Φᵀ`` (Lajugie 2015, eq. 6.1), ``W``
   the identity blocks when untrained; an event's template also holds, at
   half weight, the notes tied over from earlier events (a chord re-striking
   part of the chord before it sounds like that chord). A leading and a
   trailing *rest* pseudo-event score the quietness of a frame. Every frame
   of an event pays for the onset strength that its notes' partials do not
   explain (a strike inside an event that does not play it is a missed
   boundary: under the pedal, alternating chords of one harmony sound alike
   frame by frame, and a long event could otherwise swallow their strikes).
3. **Decoding**. A monotone alignment decoder with a prior on event durations
   (Lajugie 2015, Alg. 9) around the score's own inter-onset intervals, stretched to
   the length of the music in the recording. By default the prior is robust
   and asymmetric (:mod:`marginalia.align.dp`): the squared log ratio of an
   event's duration to the expected one, growing only linearly beyond twice
   as long, none for the rests — so fermatas, ritardandi and a held final
   chord do not drag their neighbours — and every event earns the onset
   strength of its pitch classes and, half and half, of its own piano keys
   (each note's partials) at its first frame (which also separates repeated
   notes and chords of one harmony in different voicings). ``prior_shape="quadratic"`` keeps the symmetric quadratic
   prior in frames. Anchors become onset windows. The runner-up is the
   closest call under that same objective: the best move of one unanchored
   event's onset (up to half a second, between its neighbours) with every
   other onset kept; what it loses is the margin, per phrase for active
   learning (:func:`marginalia.align.dp.onset_moves`).
   Runs of repeated notes whose first event the decoder put on the strike of
   the chord before (a rolled chord whose top note is the run's pitch) are
   re-placed on their pitch's strikes counted in order
   (:mod:`marginalia.align.runs`).
4. **Refinement**. Every note of an event is timed at the strongest rise of
   its own semitone band and upper partials (those that are not another note
   of the chord) at the fine hop, with parabolic interpolation, searching
   between the half-way points to the neighbouring decoded onsets; the event's
   onset is the median of its notes' (a melody note played ahead of its chord
   does not drag the event). A chord whose decoded span is long may be
   rolled: its notes are searched over the whole span (and up to 1 s before
   it), so it lands at the median of its rolled notes. Onsets stay increasing
   and inside their anchors' tolerance.

   **Sustained recordings** (bowed, blown, sung: the key flux of the loud
   frames is little peaky, :attr:`AlignmentFeatures.sustained`, or the score
   names only sustained General MIDI programs, e.g. a flute) differ in
   four ways: event templates hold their notes' harmonics (bowed and blown
   notes keep strong upper partials); the notes an event holds from earlier
   events explain the flux of their partials (vibrato, not missed strikes);
   a note is timed where its first strong rise begins (soft attacks peak
   late, and vibrato swells come after the attack); and no chord is taken
   for rolled.

Weak supervision (:meth:`ScoreAligner.fit`) learns ``W`` from score/audio
pairs without timing by alternating "align with the current scorers" and "fit
the scorers to the aligned templates by ridge regression" (the alternating
baseline of Lajugie 2015, ch. 6), each alignment kept near the score's tempo by the
duration prior. ``W`` is circulant per block (weights depend on the interval
between pitch classes), so it transfers between keys. On rendered piano it
changes little: the onset bonus, the duration prior and the refinement carry
most of the accuracy.
"""

from __future__ import annotations

import io
import json
import math
import time
from dataclasses import dataclass, replace
from typing import Optional

import numpy as np

from ..checks import check_audio, check_bool, check_int, check_scalar
from ..decoders.alignment import align_with_duration_prior, alignment_constraints_from_labels
from ..exceptions import DataFormatError, InfeasibleLabelsError, NotFittedError, ParameterError
from ..models._params import check_param_vector, init_params
from ..types import Alignment, AnchorLabel, MidiScore
from .banded import align_multiresolution, duration_cost_rows, onset_moves_factored
from .dp import align_with_duration_costs, duration_costs, onset_moves
from .tempo import local_expected_durations

__all__ = ["AlignmentFeatures", "AlignmentOutput", "ScoreAligner", "align_recording", "FORMAT_VERSION"]

FORMAT_VERSION = 1
_LOW_PITCH, _HIGH_PITCH = 21, 108  # piano range
_N_BANDS = _HIGH_PITCH - _LOW_PITCH + 1
#: bands up to this pitch (B3, 247 Hz) are measured with a longer window that resolves their semitones
_LOW_SPLIT_PITCH = 59
#: that window is this many times ``_fft_size`` long (8192 samples, 372 ms at 22.05 kHz)
_LOW_FFT_FACTOR = 4
_FEATURE_NAMES = tuple([f"chroma{k}" for k in range(12)] + [f"onset{k}" for k in range(12)] + ["bias"])
_N_FEATURES = len(_FEATURE_NAMES)
_CHROMA_GAMMA = 100.0  # log(1 + γ power / peak power): chroma compression
_PRIOR_SMOOTHING_S = 0.1  # duration errors of events shorter than this are judged in absolute terms
_PRIOR_LONG_KNEE = math.log(2.0)  # beyond twice the expected duration the prior grows only linearly in log
_LONGEST_EVENT_S = 7.0  # a music event may always last this long (fermata, rolled chord): twice the longest on p01-p03
_ROLL_LOOKBACK_S = 1.0  # a rolled chord's notes are searched this far before its decoded onset
_FINAL_ROLL_S = 2.0  # the notes of the final chord are searched this long after its decoded onset
_KEY_GAIN_SHARE = 0.5  # share of the onset gain measured per piano key rather than per pitch class
_ROLL_NEAR = 0.65  # a rolled chord's note keeps a rise near the decoded onset this strong (share of its strongest)
_HELD_WEIGHT = 0.5  # template weight of the notes an event holds from earlier events
_HARMONIC_DECAY = 0.5  # sustained recordings: template weight of a note's harmonic h is this to the power h - 1
_UNEXPLAINED_WEIGHT = 0.5  # penalty of a strike inside a state that does not play it (share of the onset gain)
# a recording whose key flux is this little peaky (90th percentile of a loud frame's total over its median) holds
# sustained sounds (bowed, blown, sung: soft attacks, no decay, vibrato); pianos gave 3.8-22 (rendered dry, in a
# room, at other tempi), four-instrument Bach chorales 2.0-2.3
_SUSTAINED_PEAKINESS = 3.0
_EXPLAINED_OFFSETS = (0, 12, 19, 24, 28, 31, 34, 36)  # semitones of a note's partials 1-8
# recordings with more (frame, state) cells than this (about 30 s of piano music) decode coarse-to-fine in a band
# (marginalia.align.banded): time and memory linear in the recording; below it the full decoder (exact, and as
# quick there). On the Vienna 4x22 excerpts (1-2 min) both give the same alignment, event for event.
_FULL_DECODE_CELLS = 200_000
# decoding frames per coarse frame (185, 93 and 46 ms at 23 ms frames): the band joins the coarse readings, since
# a coarse frame longer than a fast passage's events misreads it (ASAP's Toccata, Concert Etude S145/1). 8 and 4
# always; 2 when its coarse tables fit in _FINEST_COARSE_CELLS (about 120 MB; up to about 4-5 minutes of music)
_BAND_FACTORS = (8, 4)
_FINEST_FACTOR = 2
_FINEST_COARSE_CELLS = 12_000_000
_BAND_MARGIN = 4   # first band: 4 coarse frames (0.74 s) beyond the neighbours' coarse onsets; radius 1.5 s
_BAND_SLACK = 5.0  # ... and through every coarse onset of a coarse alignment that scores within this of the best
# when the band had to widen for more than this share of the states, the coarse decode read the recording
# differently from the fine one (dense fast passages: Liszt's Ballade 2 in ASAP): the full decoder decides
_BAND_MAX_WIDENED = 0.25
# ... but only while its tables fit in about 1 GB (some 50 bytes a cell): beyond, the band keeps widening instead
# (a 14-minute performance of that Ballade needed 5 GB in the full decoder)
_FULL_DECODE_MAX_CELLS = 20_000_000
# the duration prior is decoded twice: the second time each event expects its score interval at the tempo the
# first path shows within this many seconds of it (marginalia.align.tempo); 0: once, at the recording's tempo
_TEMPO_WINDOW_S = 10.0


# ------------------------------------------------------------------ results


@dataclass(frozen=True, eq=False)
class AlignmentFeatures:
    """Frame descriptors of one recording.

    Attributes
    ----------
    X : ndarray, shape (T, 25)
        Decoding-frame descriptors: unit chroma, unit decaying onset chroma
        (both damped by quietness) and a constant 1.
    quiet : ndarray, shape (T,)
        Quietness of each decoding frame in [0, 1] (1 = silence).
    onset_fine : ndarray, shape (T_fine, 12)
        Per-pitch-class spectral flux at the fine hop; row ``j`` measures the
        rise between fine frames ``j - 1`` and ``j``.
    sr : int
    hop_fine : int
        Fine hop in samples.
    coarse : int
        Fine frames per decoding frame.
    duration_s : float
        Length of the signal.
    flux_bands : ndarray, shape (T_fine, 88), optional
        Per-semitone spectral flux at the fine hop (piano keys 21..108); the
        refinement then times every note of an event on its own partials.
    sustained : bool
        The recording holds sustained sounds (bowed, blown, sung): its key
        flux is little peaky (:data:`_SUSTAINED_PEAKINESS`). Event templates
        then hold their notes' harmonics, held notes explain the flux of
        their partials, and notes are timed at their first strong rise
        rather than their strongest.
    """

    X: np.ndarray
    quiet: np.ndarray
    onset_fine: np.ndarray
    sr: int
    hop_fine: int
    coarse: int
    duration_s: float
    flux_bands: Optional[np.ndarray] = None
    sustained: bool = False

    @property
    def n_frames(self) -> int:
        return int(self.X.shape[0])

    @property
    def frame_rate(self) -> float:
        """Decoding frames per second."""
        return self.sr / (self.hop_fine * self.coarse)

    def frame_boundary_s(self, frames) -> np.ndarray:
        """Time (s) of the boundary before decoding frame(s) ``frames``."""
        return (np.asarray(frames, dtype=np.float64) * self.coarse - 0.5) * self.hop_fine / self.sr


@dataclass(frozen=True, eq=False)
class AlignmentOutput:
    """Result of :meth:`ScoreAligner.align`.

    Attributes
    ----------
    event_times_s : ndarray, shape (E,)
        Refined onset time (s) of every score event, strictly increasing.
    frame_alignment : Alignment
        Onset decoding frame of every event over ``n_frames`` decoding frames
        (before refinement; rests removed).
    runner_up_times_s : ndarray, shape (E,) or None
        The closest call (decoding frame boundaries): the best alignment that
        moves one unanchored event's onset by up to half a second, every other
        onset as decoded, under the decoder's own objective; ``None`` when no
        event can move.
    margin : float
        What the runner-up loses against the decoded alignment (>= 0, ``inf``
        without one).
    frame_rate : float
        Decoding frames per second.
    moves : OnsetMoves or None
        Every event's best one-onset move (with ``runner_up=True``):
        ``moves.span(first, stop)`` is a phrase against its own closest call.
    event_margins : ndarray, shape (E,) or None
        What each event's best one-onset move (within half a second) loses
        under the decoder's objective: where it is small the aligner is
        unsure of that onset (``inf``: the event may not move, one of
        ``fixed_events``). None without ``runner_up``.
    event_rival_times_s : ndarray, shape (E,) or None
        Where that move would put each event (a decoding frame boundary, s;
        NaN when it may not move).
    """

    event_times_s: np.ndarray
    frame_alignment: Alignment
    runner_up_times_s: Optional[np.ndarray]
    margin: float
    frame_rate: float
    moves: Optional[OnsetMoves] = None
    event_margins: Optional[np.ndarray] = None
    event_rival_times_s: Optional[np.ndarray] = None


# ----------------------------------------------------------------- checks


def _check_score(score) -> MidiScore:
    if not isinstance(score, MidiScore):
        raise ParameterError(f"score: expected a marginalia.types.MidiScore, got {type(score).__name__}")
    return score


# --------------------------------------------------------------- features


def _fft_size(sr: int) -> int:
    """Power of two closest to a 93 ms window (2048 at 22.05 kHz)."""
    return int(2 ** round(math.log2(0.0929 * sr)))


def _band_matrix(n_fft: int, sr: int, pitches=(_LOW_PITCH, _HIGH_PITCH)) -> np.ndarray:
    """Bin → piano semitone band assignment, shape (n_fft // 2 + 1, 88), 0/1.

    Only bins between 50 Hz and 5.5 kHz whose nearest semitone is within ``pitches`` (inclusive MIDI range)
    are assigned.
    """
    freqs = np.arange(n_fft // 2 + 1) * sr / n_fft
    with np.errstate(divide="ignore"):
        pitch = np.round(69.0 + 12.0 * np.log2(np.maximum(freqs, 1e-9) / 440.0)).astype(np.int64)
    M = np.zeros((freqs.shape[0], _N_BANDS))
    ok = (pitch >= pitches[0]) & (pitch <= pitches[1]) & (freqs > 50.0) & (freqs < 5500.0)
    M[np.flatnonzero(ok), pitch[ok] - _LOW_PITCH] = 1.0
    return M


def _fold_matrix() -> np.ndarray:
    """Semitone band → pitch class, shape (88, 12)."""
    F = np.zeros((_N_BANDS, 12))
    F[np.arange(_N_BANDS), (np.arange(_N_BANDS) + _LOW_PITCH) % 12] = 1.0
    return F


def _band_power(y: np.ndarray, sr: int, n_fft: int, hop: int) -> np.ndarray:
    """Power in the 88 semitone bands of centred Hann frames, shape (T_fine, 88), float32."""
    return _spectral_bands(y, n_fft, hop, _band_matrix(n_fft, sr))


def _pitch_band_power(y: np.ndarray, sr: int, n_fft: int, hop: int, P: np.ndarray) -> np.ndarray:
    """``P`` (from ``_band_power``) with its bands up to ``_LOW_SPLIT_PITCH`` measured over a longer window.

    An ``n_fft`` window's bins are wider than a semitone below about 180 Hz, so there a note's power falls in
    its neighbours' bands; a ``_LOW_FFT_FACTOR`` times longer one gives each semitone its own bins down to about C2 (65 Hz).
    It is computed every ``_LOW_FFT_FACTOR`` fine frames, linearly interpolated to the fine frames and rescaled
    to the short window's power (a partial's and noise's band power both grow with the square of the window).
    Only the pitch content uses it: onsets keep the short window's timing.

    Returns
    -------
    ndarray, shape (T_fine, 88), float32
    """
    f = _LOW_FFT_FACTOR
    low = _spectral_bands(y, f * n_fft, f * hop, _band_matrix(f * n_fft, sr, pitches=(_LOW_PITCH, _LOW_SPLIT_PITCH)))
    out = P.copy()
    t_fine = np.arange(out.shape[0], dtype=np.float64)
    t_low = np.arange(low.shape[0], dtype=np.float64) * f
    for j in range(_LOW_SPLIT_PITCH - _LOW_PITCH + 1):
        out[:, j] = np.interp(t_fine, t_low, low[:, j]) / float(f * f)
    return out


def _spectral_bands(y: np.ndarray, n_fft: int, hop: int, M: np.ndarray) -> np.ndarray:
    """Band powers ``|rfft(frame · Hann)|² @ M`` of centred frames, shape (1 + len(y) // hop, bands), float32."""
    pad = n_fft // 2
    yp = np.pad(y.astype(np.float32), (pad, pad))
    n_frames = 1 + (yp.shape[0] - n_fft) // hop if yp.shape[0] >= n_fft else 1
    if yp.shape[0] < n_fft:
        yp = np.pad(yp, (0, n_fft - yp.shape[0]))
    window = np.hanning(n_fft + 1)[:-1].astype(np.float32)
    used = np.flatnonzero(M.any(axis=1))
    lo, hi = (int(used[0]), int(used[-1]) + 1) if used.size else (0, 1)
    M = M[lo:hi].astype(np.float32)
    out = np.empty((n_frames, M.shape[1]), np.float32)
    frames = np.lib.stride_tricks.as_strided(yp, shape=(n_frames, n_fft),
                                             strides=(yp.strides[0] * hop, yp.strides[0]), writeable=False)
    block = max(1, 2 ** 21 // n_fft)
    for a in range(0, n_frames, block):
        spec = np.fft.rfft(frames[a:a + block] * window, axis=1)[:, lo:hi]
        out[a:a + block] = (spec.real ** 2 + spec.imag ** 2) @ M
    return out


def _pool(A: np.ndarray, k: int, how: str = "mean") -> np.ndarray:
    """Pool consecutive groups of ``k`` rows (the last group may be shorter)."""
    T = A.shape[0]
    n = -(-T // k)
    padded = np.zeros((n * k,) + A.shape[1:], dtype=np.float64)
    padded[:T] = A
    s = padded.reshape((n, k) + A.shape[1:]).sum(axis=1)
    if how == "mean":
        counts = np.full(n, float(k))
        counts[-1] = T - (n - 1) * k
        s = s / counts.reshape((n,) + (1,) * (A.ndim - 1))
    return s


def _is_sustained(total_flux: np.ndarray, quiet: np.ndarray) -> bool:
    """Whether a recording holds sustained sounds: the total key flux of its loud fine frames, shape (T_fine,),
    is little peaky (90th percentile over median below :data:`_SUSTAINED_PEAKINESS`; ``quiet``, shape
    (T_fine,), in [0, 1]). Struck strings put their flux in attacks; bowed, blown and sung notes spread it
    (soft attacks, vibrato)."""
    loud = total_flux[quiet < 0.5]
    if loud.shape[0] < 100:
        return False
    mid = float(np.median(loud))
    return bool(mid > 0 and float(np.percentile(loud, 90)) < _SUSTAINED_PEAKINESS * mid)


# General MIDI programs (0-based) of sustained instruments: organs, bowed strings (not pizzicato, harp, timpani),
# string and voice ensembles, brass, reeds, pipes, synth leads and pads
_SUSTAINED_PROGRAMS = frozenset([*range(16, 24), *range(40, 45), *range(48, 55), *range(56, 96)])


def _score_is_sustained(score: MidiScore) -> bool:
    """Whether the score names only sustained instruments: every note's channel has a General MIDI program
    (its first program change) in :data:`_SUSTAINED_PROGRAMS` and none plays on the drum channel (10)."""
    channels = score.meta.get("channels") if isinstance(score.meta, dict) else None
    if not channels:
        return False
    programs = {}
    for _, _, msg in score.meta.get("other_events", ()):
        if getattr(msg, "type", "") == "program_change":
            programs.setdefault(msg.channel, msg.program)
    return all(c != 9 and programs.get(c, 0) in _SUSTAINED_PROGRAMS for c in set(channels))


def _with_instruments(feats, score: MidiScore):
    """``feats`` marked sustained when the score names only sustained instruments (a solo flute's flux can be
    as peaky as a piano's), else unchanged."""
    if feats.sustained or not _score_is_sustained(score):
        return feats
    return replace(feats, sustained=True)


def _unit_rows(A: np.ndarray, floor: float) -> np.ndarray:
    n = np.linalg.norm(A, axis=1, keepdims=True)
    return A / np.maximum(n, floor)


# ----------------------------------------------------------------- scores


def _templates(score: MidiScore, held: float = None, harmonics: bool = False) -> np.ndarray:
    """Unit-norm pitch-class template of every event, shape (E, 12).

    An event sounds its own notes (weight 1) and the notes of earlier events
    still held at its onset (weight ``held``, default :data:`_HELD_WEIGHT`):
    a chord that re-strikes part of the chord before it (the other notes held)
    sounds like that chord, not like its own notes alone. With ``harmonics``
    its notes also sound the pitch classes of their harmonics 2-6: bowed and
    blown notes keep strong upper partials (an A on a bassoon or a saxophone
    holds much of its E), so a chord A-C matched A-C-E better than itself.
    """
    held = _HELD_WEIGHT if held is None else float(held)
    phi = score.event_matrix(12)
    if harmonics:
        # each note also sounds its upper partials (harmonics 2-6: the octave, the fifth above it, two octaves,
        # the major third and the fifth above those), each weaker by _HARMONIC_DECAY
        ev = np.asarray(score.note_event)
        cls = np.asarray(score.pitches) % 12
        for h, off in zip(range(2, 7), (0, 7, 0, 4, 7)):
            np.maximum.at(phi, (ev, (cls + off) % 12), _HARMONIC_DECAY ** (h - 1))
    if held > 0:
        cls = np.asarray(score.pitches) % 12
        for n, first, last in _held_spans(score):
            rows = phi[first:last, cls[n]]
            phi[first:last, cls[n]] = np.maximum(rows, held)
    return phi / np.linalg.norm(phi, axis=1, keepdims=True)


def _held_spans(score: MidiScore) -> list:
    """Notes still sounding at later events' onsets: ``(note, first, stop)``, the note held through events
    ``first..stop-1`` (onsets strictly inside the note, 1 ms slack for rounding)."""
    on = np.asarray(score.event_onsets_s, dtype=np.float64)
    first = np.asarray(score.note_event) + 1
    last = np.searchsorted(on, np.asarray(score.offsets_s, dtype=np.float64) - 1e-3, side="left")
    return [(int(n), int(first[n]), int(last[n])) for n in np.flatnonzero(last > first)]


def _onset_weights(score: MidiScore) -> np.ndarray:
    """Pitch-class weights for the onset search of every event, shape (E, 12).

    Pitch classes an event adds to the previous one weigh 1, repeated ones 0.5
    (a repeated pitch class is re-struck, but may also just ring on).
    """
    phi = score.event_matrix(12)
    prev = np.vstack([np.zeros((1, 12)), phi[:-1]])
    w = phi * np.where(prev > 0, 0.5, 1.0)
    return w


def _onset_weights_pitch(score: MidiScore) -> np.ndarray:
    """Piano-key weights for the onset search of every event, shape (E, 88): new keys 1, repeated ones 0.5."""
    E = score.n_events
    M = np.zeros((E, _N_BANDS))
    keys = np.clip(np.asarray(score.pitches) - _LOW_PITCH, 0, _N_BANDS - 1)
    M[np.asarray(score.note_event), keys] = 1.0
    prev = np.vstack([np.zeros((1, _N_BANDS)), M[:-1]])
    return M * np.where(prev > 0, 0.5, 1.0)


def _onset_evidence(feats, T: int) -> tuple:
    """Onset strength per decoding frame: per pitch class, shape (T, 12), and per piano key from each note's
    partials, shape (T, 88) (None without per-band flux)."""
    O = _pool(feats.onset_fine, feats.coarse, how="sum")[:T]
    Fk = None
    if feats.flux_bands is not None:
        Fk = _pool(feats.flux_bands.astype(np.float64) @ _partial_matrix(), feats.coarse, how="sum")[:T]
    return O, Fk


def _partial_matrix() -> np.ndarray:
    """Band flux → note onset strength from its partials, shape (88, 88)."""
    P = np.zeros((_N_BANDS, _N_BANDS))
    for off, w in zip(_PARTIAL_OFFSETS, _PARTIAL_WEIGHTS):
        i = np.arange(_N_BANDS - off)
        P[i + off, i] = w
    return P


def _score_intervals(score: MidiScore) -> np.ndarray:
    """Score seconds from every event's onset to the next one's (the last: to the score's end), shape (E,)."""
    on = np.asarray(score.event_onsets_s, dtype=np.float64)
    ends = np.append(on[1:], max(score.duration_s, on[-1]))
    return np.maximum(ends - on, 0.0)


def _expected_durations(score: MidiScore, n_music: float) -> np.ndarray:
    """The score's inter-onset intervals stretched to ``n_music`` frames, shape (E,)."""
    on = np.asarray(score.event_onsets_s, dtype=np.float64)
    ioi = _score_intervals(score)
    total = ioi.sum()
    if total <= 0:
        return np.full(on.shape[0], n_music / on.shape[0])
    return ioi * (n_music / total)


def _strike_cover(feats, score: MidiScore, T: int) -> tuple:
    """The key flux and which of its bands each event explains (the parts of :func:`_unexplained_strikes`).

    Returns
    -------
    F : ndarray, shape (T, 88)
        Key-band flux pooled to the coarse frames.
    total : ndarray, shape (T,)
        ``F`` summed over the bands.
    scale : float
        The 99th percentile of ``total``.
    cover : ndarray, shape (E, 88)
        1 where a band holds one of the first eight partials of one of the event's notes (in a sustained
        recording, also of the notes it holds from earlier events).
    """
    F = _pool(feats.flux_bands.astype(np.float64), feats.coarse, how="sum")[:T]
    cover = np.zeros((score.n_events, _N_BANDS))
    keys = np.asarray(score.pitches) - _LOW_PITCH
    ev = np.asarray(score.note_event)
    for off in _EXPLAINED_OFFSETS:
        ok = (keys + off >= 0) & (keys + off < _N_BANDS)
        cover[ev[ok], keys[ok] + off] = 1.0
    if feats.sustained:
        # a sustained note still sounds through the events that hold it, and its vibrato moves flux between
        # its partials' bands: that flux is its own, not a missed strike (a held piano note only decays)
        for n, first, last in _held_spans(score):
            bands = keys[n] + np.asarray(_EXPLAINED_OFFSETS)
            bands = bands[(bands >= 0) & (bands < _N_BANDS)]
            cover[first:last, bands] = 1.0
    total = F.sum(axis=1)
    return F, total, max(float(np.percentile(total, 99)), 1e-12), cover


def _unexplained_strikes(feats, score: MidiScore, T: int) -> np.ndarray:
    """Onset strength in every frame that the notes of each state do not explain, shape (T, E + 2).

    A band's flux is explained by an event when the band holds one of the first
    eight partials of one of its notes; the rests explain nothing. Scaled like
    the onset gains (the 99th percentile of a frame's total flux). A strike
    inside an event that does not play it means an event boundary was missed.
    """
    F, total, scale, cover = _strike_cover(feats, score, T)
    U = (total[:, None] - F @ cover.T) / scale
    rest = (total / scale)[:, None]
    return np.hstack([rest, np.maximum(U, 0.0), rest])


def _peak_position(f: np.ndarray, j: int) -> float:
    """Sub-sample position of the peak of ``f`` at index ``j`` (parabolic interpolation)."""
    if 0 < j < f.shape[0] - 1:
        den = f[j - 1] - 2 * f[j] + f[j + 1]
        if den < 0:
            return j + float(np.clip(0.5 * (f[j - 1] - f[j + 1]) / den, -0.5, 0.5))
    return float(j)


def _weighted_median(x: np.ndarray, w: np.ndarray) -> float:
    order = np.argsort(x)
    x, cw = x[order], np.cumsum(w[order])
    half = 0.5 * cw[-1]
    i = int(np.searchsorted(cw, half))
    if i + 1 < x.shape[0] and abs(cw[i] - half) < 1e-9:
        return 0.5 * (x[i] + x[i + 1])
    return float(x[i])


# partials of a piano note: semitone offsets of harmonics 1-4 and their weights in the onset search
_PARTIAL_OFFSETS = np.array([0, 12, 19, 24])
_PARTIAL_WEIGHTS = np.array([1.0, 0.6, 0.4, 0.3])
_RISE_SMOOTH_S = 0.03  # a note's rise is smoothed over this long before its first strong rise is taken
_FIRST_RISE = 0.8  # ... the first local maximum of at least this share of its strongest
_RISE_EDGE = 0.8  # ... and the note starts where that rise reaches this share of its height
_NOTE_FLOOR = 0.05  # notes whose strongest rise is below this share of the event's strongest are not timed


def _note_onset_curves(flux_bands: np.ndarray, pitches: np.ndarray, a: int, b: int) -> np.ndarray:
    """Onset strength of every note in fine frames ``a:b`` from the flux of its partials, shape (b - a, N).

    ``pitches`` are the distinct MIDI pitches of one event.
    """
    seg = flux_bands[a:b]
    out = np.zeros((b - a, pitches.shape[0]))
    for i, p in enumerate(pitches):
        band = int(p) - _LOW_PITCH + _PARTIAL_OFFSETS
        # an upper partial that is another note's fundamental rises with that note: not this note's evidence
        ok = (band >= 0) & (band < _N_BANDS) & ((_PARTIAL_OFFSETS == 0) | ~np.isin(int(p) + _PARTIAL_OFFSETS, pitches))
        if ok.any():
            out[:, i] = seg[:, band[ok]] @ _PARTIAL_WEIGHTS[ok]
    return out



def _first_rises(curves: np.ndarray, width: int) -> np.ndarray:
    """Where each note's first strong rise begins, in fine frames from the curves' start, shape (N,).

    ``curves`` (n, N) are the notes' onset strengths (:func:`_note_onset_curves`). Each is smoothed over
    ``width`` fine frames; its first strong rise is the earliest local maximum of at least
    :data:`_FIRST_RISE` of its strongest, and the note starts where that rise reaches
    :data:`_RISE_EDGE` of its height (linear interpolation). A bowed, blown or sung note starts softly and
    then swells or wavers (vibrato moves its partials between semitone bands): its strongest rise may come
    well after its attack, and the rise peaks after the sound has started. NaN for a silent curve.
    """
    n, N = curves.shape
    if width > 1 and n >= width:
        box = np.ones(width) / width
        curves = np.stack([np.convolve(curves[:, i], box, mode="same") for i in range(N)], axis=1)
    at = np.full(N, np.nan)
    for i in range(N):
        col = curves[:, i]
        top = float(col.max())
        if top <= 0:
            continue
        mid = col[1:-1]
        strong = np.flatnonzero((mid >= col[:-2]) & (mid >= col[2:]) & (mid >= _FIRST_RISE * top)) + 1
        j = int(strong[0]) if strong.size else int(np.argmax(col))
        edge = _RISE_EDGE * col[j]
        while j > 0 and edge <= col[j - 1] <= col[j]:
            j -= 1
        if j > 0 and col[j - 1] < edge < col[j]:
            at[i] = j - 1 + (edge - col[j - 1]) / (col[j] - col[j - 1])
        else:
            at[i] = float(j)
    return at


# ----------------------------------------------- transposition-invariant scorers
#
# The learned scorers are circulant: the weight from pitch class i of a block
# (chroma, onset chroma) to pitch class j depends only on the interval
# (j - i) mod 12, so what is learned on pieces in some keys (partials a fifth
# or a third above, leakage to neighbours) carries over to every key.


def _circulant_W(c: np.ndarray) -> np.ndarray:
    """Scorers ``W`` (25, 12) from interval weights ``c`` (25,): 12 per block and a bias."""
    W = np.zeros((_N_FEATURES, 12))
    i = np.arange(12)[:, None]
    j = np.arange(12)[None, :]
    W[:12] = c[:12][(j - i) % 12]
    W[12:24] = c[12:24][(j - i) % 12]
    W[24] = c[24]
    return W


def _circulant_params(W: np.ndarray) -> np.ndarray:
    """Interval weights of a circulant ``W`` (the inverse of :func:`_circulant_W`)."""
    return np.concatenate([W[0, :12], W[12, :12], [W[24, 0]]])


def _circulant_design(X: np.ndarray) -> np.ndarray:
    """``Z[t, j, d]`` with ``(X W)[t, j] = Z[t, j] · c``, shape (T, 12, 25)."""
    T = X.shape[0]
    Z = np.empty((T, 12, _N_FEATURES))
    for d in range(12):
        Z[:, :, d] = np.roll(X[:, :12], d, axis=1)
        Z[:, :, 12 + d] = np.roll(X[:, 12:24], d, axis=1)
    Z[:, :, 24] = X[:, 24:25]
    return Z


# ---------------------------------------------------------------- aligner


@dataclass(frozen=True, eq=False)
class SpanRival:
    """A span of events against its closest call (:meth:`OnsetMoves.span`).

    Attributes
    ----------
    value : float
        The decoder's objective over the span's events (frames, onset gains,
        duration costs) under the best alignment.
    margin : float
        What the best alignment that moves one unanchored event of the span
        loses, all else kept (>= 0; 0 when such a move scores higher, e.g.
        after the repeated-note fix; ``inf`` when none can move).
    worst_margin : float
        The largest such loss over the span's events (``inf`` when none can move).
    rival_onsets : ndarray of int, shape (E + 2,) or None
        That move's alignment of the rest + events + rest states.
    n_frames : int
        Decoding frames from the span's first onset to the next event's.
    """

    value: float
    margin: float
    worst_margin: float
    rival_onsets: Optional[np.ndarray]
    n_frames: int


@dataclass(frozen=True, eq=False)
class OnsetMoves:
    """The best one-onset move of every event of a decoded alignment (:func:`marginalia.align.dp.onset_moves`).

    Attributes
    ----------
    onsets : ndarray of int, shape (E + 2,)
        Decoded onsets of the rest + events + rest states.
    loss : ndarray, shape (E + 2,)
        What each state's best move loses (``inf``: it may not move; the rests and anchored events never do).
    moved_to : ndarray of int, shape (E + 2,)
        That move's onset (-1 when none).
    own : ndarray, shape (E + 2,)
        Each state's term of the objective under ``onsets``.
    n_frames : int
    """

    onsets: np.ndarray
    loss: np.ndarray
    moved_to: np.ndarray
    own: np.ndarray
    n_frames: int

    def _rival(self, first: int, stop: int) -> tuple:
        """(onsets of the best move among states ``first..stop-1`` or None, its loss clipped at 0)."""
        if stop <= first:
            return None, float("inf")
        j = first + int(np.argmin(self.loss[first:stop]))
        if self.loss[j] == np.inf:
            return None, float("inf")
        moved = self.onsets.copy()
        moved[j] = self.moved_to[j]
        return moved, max(float(self.loss[j]), 0.0)

    def closest(self) -> tuple:
        """(onsets of the best one-onset move of any event or None, its margin)."""
        return self._rival(1, self.onsets.shape[0] - 1)

    def span(self, first: int, stop: int) -> SpanRival:
        """Events ``first..stop-1`` against their closest call."""
        a, b = int(first) + 1, int(stop) + 1
        if not 1 <= a < b <= self.onsets.shape[0] - 1:
            raise ParameterError(f"span: expected events [first, stop) with 0 <= first < stop <= "
                                 f"{self.onsets.shape[0] - 2}, got [{first}, {stop})")
        runner, margin = self._rival(a, b)
        finite = self.loss[a:b][np.isfinite(self.loss[a:b])]
        end = int(self.onsets[b])
        return SpanRival(value=float(self.own[a:b].sum()), margin=margin,
                         worst_margin=max(float(finite.max()), 0.0) if finite.size else float("inf"),
                         rival_onsets=runner, n_frames=max(end - int(self.onsets[a]), 1))


class ScoreAligner:
    """Align a score (MIDI) to a recording of it.

    Parameters
    ----------
    coarse : int, default 4
        Fine frames (hop ``n_fft / 16``, 5.8 ms at 22.05 kHz) per decoding
        frame (4 → 23 ms).
    onset_weight : float, default 0.5
        Weight of the onset-chroma block against the chroma block in the
        untrained scorer.
    onset_bonus : float, default 10.0
        Reward of the onset strength of an event's pitch classes at its first
        frame (see :meth:`_score_matrix`).
    onset_decay_s : float, default 0.1
        Time constant of the decaying onset chroma.
    silence_db : float, default 40.0
        Frames this far below the loudest frame count as silence.
    prior_weight : float, default 5.0
        Strength of the duration prior, relative (1: a 100 % error on an average
        event's duration costs as much as one frame of perfect match); 0 off.
    prior_span : float, default 4.0
        Longest event allowed, in multiples of the longest expected duration.
    refine_frames : int, default 12
        Refinement searches ± this many decoding frames around each onset,
        and never past half-way to the neighbouring events' onsets (0
        disables refinement).
    runner_up : bool, default True
        Also find the runner-up (the best one-onset move of an unanchored
        event) and its margin.
    count_runs : bool, default True
        Runs of repeated notes (consecutive events with the same pitches)
        are placed on the strikes of their pitches counted in order, when
        the decoded run shows a miscount (see :mod:`marginalia.align.runs`).
    rolled_chord_s : float, default 1.0
        A chord whose decoded span is longer than this (s) may be rolled:
        its notes are searched over the whole span (up to 4 s) and the event
        placed at their median (0 disables).
    blend : float, default 0.5
        :meth:`fit` keeps ``blend`` of the learned scorers and ``1 - blend``
        of the untrained ones (1: the learned scorers alone; chosen on
        pianists p01-p03, where the learned ones alone misplaced a few
        chords of the rolled ending of Chopin op.38).
    prior_shape : {"robust", "quadratic"}, default "robust"
        ``"robust"``: the cost of an event's duration grows with the square
        of its log ratio to the expected one, only linearly beyond twice as
        long, and the final event and the rests are free (fermatas, rolled
        and held final chords). ``"quadratic"``: the same quadratic cost in
        frames for every event and rest (Lajugie 2015, Alg. 9).
    n_iter : int, default 3
        Align / refit rounds of :meth:`fit`.
    ridge : float, default 0.01
        Ridge strength of :meth:`fit` (per frame), pulling ``W`` towards the
        untrained scorer.

    Attributes
    ----------
    W_ : ndarray, shape (25, 12)
        Frame-descriptor → pitch-class scorers (after :meth:`fit`, or the
        untrained identity blocks before).
    n_iter_ : int
    provenance_ : dict
        What the scorers were trained on.
    """

    def __init__(self, coarse=4, onset_weight=0.5, onset_decay_s=0.1, silence_db=40.0, prior_weight=5.0,
                 prior_span=4.0, refine_frames=12, runner_up=True, n_iter=3, ridge=0.01, onset_bonus=10.0,
                 prior_shape="robust", count_runs=True, rolled_chord_s=1.0, blend=0.5):
        self.coarse = coarse
        self.onset_weight = onset_weight
        self.onset_decay_s = onset_decay_s
        self.silence_db = silence_db
        self.prior_weight = prior_weight
        self.prior_span = prior_span
        self.refine_frames = refine_frames
        self.runner_up = runner_up
        self.n_iter = n_iter
        self.ridge = ridge
        self.onset_bonus = onset_bonus
        self.prior_shape = prior_shape
        self.count_runs = count_runs
        self.rolled_chord_s = rolled_chord_s
        self.blend = blend

    # ---------------------------------------------------------- parameters
    def get_params(self) -> dict:
        return init_params(self)

    def _check_params(self):
        check_int(self.coarse, "coarse", min_val=1)
        check_scalar(self.onset_weight, "onset_weight", float, min_val=0)
        check_scalar(self.onset_decay_s, "onset_decay_s", float, min_val=0, include_boundaries="neither")
        check_scalar(self.silence_db, "silence_db", float, min_val=0, include_boundaries="neither")
        check_scalar(self.prior_weight, "prior_weight", float, min_val=0)
        check_scalar(self.prior_span, "prior_span", float, min_val=1)
        check_int(self.refine_frames, "refine_frames", min_val=0)
        check_int(self.n_iter, "n_iter", min_val=1)
        check_scalar(self.ridge, "ridge", float, min_val=0, include_boundaries="neither")
        check_scalar(self.onset_bonus, "onset_bonus", float, min_val=0)
        if self.prior_shape not in ("robust", "quadratic"):
            raise ParameterError(f"prior_shape: expected 'robust' or 'quadratic', got {self.prior_shape!r}")
        check_bool(self.runner_up, "runner_up")
        check_bool(self.count_runs, "count_runs")
        check_scalar(self.rolled_chord_s, "rolled_chord_s", float, min_val=0)
        check_scalar(self.blend, "blend", float, min_val=0, max_val=1)

    def _initial_W(self) -> np.ndarray:
        W = np.zeros((_N_FEATURES, 12))
        W[:12] = np.eye(12)
        W[12:24] = float(self.onset_weight) * np.eye(12)
        return W

    def _W(self) -> np.ndarray:
        return self.W_ if hasattr(self, "W_") else self._initial_W()

    # ------------------------------------------------------------ features
    def features(self, y, sr) -> AlignmentFeatures:
        """Frame descriptors of a recording.

        Parameters
        ----------
        y : array_like, shape (n,)
            Mono signal.
        sr : int
            Its sample rate (Hz).

        Returns
        -------
        AlignmentFeatures
        """
        self._check_params()
        y, sr = check_audio(y, sr, name="audio_y", dtype=np.float64, min_sr=4000, max_sr=384000)
        n_fft = _fft_size(sr)
        hop = n_fft // 16
        k = int(self.coarse)
        P = _band_power(y, sr, n_fft, hop)  # (Tf, 88)
        peak = float(P.max())
        if peak <= 0:
            peak = 1.0
        L = np.log1p(_pitch_band_power(y, sr, n_fft, hop, P).astype(np.float64) / peak * _CHROMA_GAMMA)  # (Tf, 88)
        P = P.astype(np.float64) / peak
        fold = _fold_matrix()
        # rises of the band magnitudes: their peak sits at the attack (a log rise peaks earlier)
        A = np.sqrt(P)
        flux = np.zeros_like(A)
        flux[1:] = np.maximum(A[1:] - A[:-1], 0.0)
        onset_fine = flux @ fold  # (Tf, 12)
        # decoding frames
        chroma = _pool(L @ fold, k)
        energy = _pool(P.sum(axis=1, dtype=np.float64), k)
        db = 10.0 * np.log10(np.maximum(energy, 1e-20) / max(float(energy.max()), 1e-20))
        quiet = np.clip((-db - float(self.silence_db)) / 10.0 + 0.5, 0.0, 1.0)
        onset = _pool(onset_fine, k, how="sum")
        decay = math.exp(-(k * hop / sr) / float(self.onset_decay_s))
        smeared = np.empty_like(onset)
        acc = np.zeros(12)
        for t in range(onset.shape[0]):  # short loop (decoding frames), one vector op each
            acc = acc * decay + onset[t]
            smeared[t] = acc
        norms = np.linalg.norm(smeared, axis=1)
        floor = 0.1 * float(np.percentile(norms, 95)) if norms.size else 1.0
        c_unit = _unit_rows(chroma, 1e-9)
        o_unit = _unit_rows(smeared, max(floor, 1e-9))
        loud = (1.0 - quiet)[:, None]
        X = np.hstack([c_unit * loud, o_unit * loud, np.ones((chroma.shape[0], 1))])
        return AlignmentFeatures(X=X, quiet=quiet, onset_fine=onset_fine, sr=sr, hop_fine=hop, coarse=k,
                                 duration_s=y.shape[0] / sr, flux_bands=flux.astype(np.float32),
                                 sustained=_is_sustained(flux.sum(axis=1), np.repeat(quiet, k)[:flux.shape[0]]))

    # -------------------------------------------------------------- decode
    def _score_matrix(self, feats: AlignmentFeatures, score: MidiScore, W) -> np.ndarray:
        """Frame × (rest, events, rest) scores, shape (T, E + 2).

        With ``onset_bonus`` > 0, an event also earns the onset strength ``G[t, e]``
        of its pitch classes at its first frame: ``S[t, e] += β (G[t, e] - G[t + 1, e])``
        telescopes over the frames of the event to ``β (G[onset_e, e] - G[onset_{e+1}, e])``,
        so the per-frame decoder stays exact (the quadratic prior's decoder and the
        runner-up; the robust decoder takes ``β G`` as a per-onset gain instead).
        """
        S, G = self._frame_scores(feats, score, W)
        if G is not None:
            S = S + G - np.vstack([G[1:], np.zeros((1, G.shape[1]))])
        return S

    def _frame_scores(self, feats: AlignmentFeatures, score: MidiScore, W):
        """Frame × (rest, events, rest) template scores and onset gains ``β G`` (None when off), (T, E + 2)."""
        S_ev = feats.X @ W @ _templates(score, harmonics=feats.sustained).T
        q = 2.0 * feats.quiet - 1.0
        S = np.hstack([q[:, None], S_ev, q[:, None]])
        beta = float(self.onset_bonus)
        if beta <= 0:
            return S, None
        T = S_ev.shape[0]
        O, Fk = _onset_evidence(feats, T)
        Wt = _onset_weights(score)
        Wt = Wt / np.maximum(np.linalg.norm(Wt, axis=1, keepdims=True), 1e-9)
        G = (O @ Wt.T) / max(float(np.percentile(O.sum(axis=1), 99)), 1e-12)  # (T, E)
        if Fk is not None:
            # half of the evidence per piano key (each note's own partials): pitch classes alone confuse
            # chords of the same harmony in other voicings (a rolled chord's notes, alternating chords)
            Wk = _onset_weights_pitch(score)
            Wk = Wk / np.maximum(np.linalg.norm(Wk, axis=1, keepdims=True), 1e-9)
            Gk = (Fk @ Wk.T) / max(float(np.percentile(Fk.sum(axis=1), 99)), 1e-12)
            G = (1.0 - _KEY_GAIN_SHARE) * G + _KEY_GAIN_SHARE * Gk
            if _UNEXPLAINED_WEIGHT > 0:
                S = S - _UNEXPLAINED_WEIGHT * beta * _unexplained_strikes(feats, score, T)
        G = beta * G
        zero = np.zeros((G.shape[0], 1))
        return S, np.hstack([zero, G, zero])

    def _factors(self, feats: AlignmentFeatures, score: MidiScore, W):
        """The scores of :meth:`_frame_scores` factored: ``S = A Bᵀ`` and ``β G = C Dᵀ``.

        Every term is a frame descriptor against an event vector: the templates against ``X W``, the
        rests' quietness, and the unexplained strikes (a frame's total flux less the flux of the bands
        the state's notes explain, which is never negative). ``C``/``D`` are None without an onset bonus.

        Returns
        -------
        A : ndarray, shape (T, K)
        B : ndarray, shape (E + 2, K)
        C : ndarray, shape (T, K') or None
        D : ndarray, shape (E + 2, K') or None
        """
        XW = feats.X @ W
        T, E = XW.shape[0], score.n_events
        q = 2.0 * feats.quiet - 1.0
        B_ev = _templates(score, harmonics=feats.sustained)
        z12 = np.zeros((1, 12))
        A = np.hstack([XW, q[:, None]])
        B = np.hstack([np.vstack([z12, B_ev, z12]), np.r_[1.0, np.zeros(E), 1.0][:, None]])
        beta = float(self.onset_bonus)
        if beta <= 0:
            return A, B, None, None
        O, Fk = _onset_evidence(feats, T)
        Wt = _onset_weights(score)
        Wt = Wt / np.maximum(np.linalg.norm(Wt, axis=1, keepdims=True), 1e-9)
        C = O / max(float(np.percentile(O.sum(axis=1), 99)), 1e-12)
        D = beta * Wt
        if Fk is not None:
            Wk = _onset_weights_pitch(score)
            Wk = Wk / np.maximum(np.linalg.norm(Wk, axis=1, keepdims=True), 1e-9)
            C = np.hstack([C, Fk / max(float(np.percentile(Fk.sum(axis=1), 99)), 1e-12)])
            D = np.hstack([(1.0 - _KEY_GAIN_SHARE) * D, _KEY_GAIN_SHARE * beta * Wk])
            if _UNEXPLAINED_WEIGHT > 0:
                F, total, scale, cover = _strike_cover(feats, score, T)
                # - w β (total - F·cover) / scale, the rests explaining nothing
                w = _UNEXPLAINED_WEIGHT * beta / scale
                A = np.hstack([A, total[:, None], F])
                zb = np.zeros((1, _N_BANDS))
                B = np.hstack([B, np.full((E + 2, 1), -w), w * np.vstack([zb, cover, zb])])
        zk = np.zeros((1, D.shape[1]))
        return A, B, C, np.vstack([zk, D, zk])

    def _constraints(self, anchors, feats, E):
        if not anchors:
            return None
        T = feats.n_frames
        shifted = []
        for a in anchors:
            if not isinstance(a, AnchorLabel):
                raise ParameterError(f"anchors: expected marginalia.types.AnchorLabel items, got {type(a).__name__}")
            if not 0 <= a.event < E:
                raise ParameterError(f"anchors: anchor {a.id} names event {a.event}, expected an event in "
                                     f"[0, {E - 1}] (the score has {E} events)")
            # the boundary before frame f is at (f k - 0.5) hop / sr: a time maps to the frame after it
            shifted.append(AnchorLabel(item_id=a.item_id, id=a.id, event=a.event + 1,
                                       time_s=a.time_s + 0.5 / feats.frame_rate,
                                       tolerance_s=a.tolerance_s + 0.5 / feats.frame_rate))
        order = sorted(anchors, key=lambda a: a.event)
        for a, b in zip(order, order[1:]):
            if b.time_s + b.tolerance_s <= a.time_s - a.tolerance_s or (a.event == b.event and
                                                                         abs(a.time_s - b.time_s) >
                                                                         a.tolerance_s + b.tolerance_s):
                where = "before" if b.time_s < a.time_s else "no later than"
                raise InfeasibleLabelsError(f"anchors: event {b.event} is anchored at {b.time_s:.3f} s, {where} "
                                            f"event {a.event} at {a.time_s:.3f} s; anchors must follow the "
                                            f"score order", [a.id, b.id])
        return alignment_constraints_from_labels(shifted, T, E + 2, feats.frame_rate)

    def _decode(self, feats: AlignmentFeatures, score: MidiScore, W, anchors=None, runner_up=False, fixed_events=None):
        """Best onsets of the E + 2 states; returns (onsets, OnsetMoves or None).

        The robust prior is decoded twice: first with the score's intervals stretched by one ratio (the
        recording's music frames over the score's length), then with each event's interval at the tempo the
        first path shows around it (:data:`_TEMPO_WINDOW_S`, :mod:`marginalia.align.tempo`).
        """
        T, E = feats.n_frames, score.n_events
        E2 = E + 2
        if T < E2:
            raise ParameterError(f"score: has {E} events but the recording has only {T} frames of "
                                 f"{1000 / feats.frame_rate:.1f} ms ({feats.duration_s:.2f} s); expected at "
                                 f"least one frame per event (is the audio too short, or the wrong score?)")
        cons = self._constraints(anchors, feats, E)
        loud = np.flatnonzero(feats.quiet < 0.5)
        lead = int(loud[0]) if loud.size else 0
        trail = int(T - 1 - loud[-1]) if loud.size else 0
        music = max(T - lead - trail, E)
        d = np.concatenate([[lead], _expected_durations(score, music), [trail]])
        robust = float(self.prior_weight) > 0 and self.prior_shape == "robust"
        if not robust:
            S = self._score_matrix(feats, score, W)
            if float(self.prior_weight) > 0:
                weight = float(self.prior_weight) / max(float(np.mean(d[1:-1])), 1.0) ** 2
                dmax = int(min(T, max(float(self.prior_span) * float(d.max()) + 8, -(-T // E2) + 1)))
                res = align_with_duration_prior(S, d, weight=weight, max_frames=dmax, constraints=cons)
            else:
                from ..decoders.alignment import align
                res = align(S, constraints=cons)
            onsets = res.alignment.onsets
            # the rivals below then weigh the frame scores alone (the quadratic prior is not in them)
            S_obj, gain = S, None
            cost, limits = np.zeros((E2, T + 1)), np.full(E2, T, np.int64)
            cost[:, 0] = np.inf
            tables = (S_obj, gain, cost, limits)
            if self.count_runs and feats.flux_bands is not None:
                onsets = self._fix_runs(feats, score, onsets, cons)
        else:
            banded = T * E2 > _FULL_DECODE_CELLS
            factors = self._factors(feats, score, W) if banded else None
            shared = {}
            onsets, tables = self._decode_prior(feats, score, W, d, cons, factors, shared)
            if _TEMPO_WINDOW_S > 0:
                # the prior again, each event's expected duration at the tempo the first path shows around it
                local = local_expected_durations(_score_intervals(score), onsets[1:-1], onsets[-1],
                                                 _TEMPO_WINDOW_S * feats.frame_rate)
                d = np.concatenate([[lead], local, [trail]])
                onsets, tables = self._decode_prior(feats, score, W, d, cons, factors, shared)
            del factors, shared
        if not runner_up:
            return onsets, None
        if len(tables) == 6:
            return onsets, self._onset_moves(None, None, None, None, onsets, cons, feats.frame_rate, fixed_events,
                                             factored=tables)
        return onsets, self._onset_moves(*tables, onsets, cons, feats.frame_rate, fixed_events)

    def _decode_prior(self, feats, score, W, d, cons, factors, shared):
        """Onsets of the E + 2 states under the robust prior with expected durations ``d`` (E + 2,), runs
        counted; and the tables of the objective (``(A, B, C, D, cost rows, limits)`` when decoded in the band,
        ``(S, gain, cost, limits)`` otherwise) for the runner-up.

        ``factors``: :meth:`_factors` for a long recording (decoded coarse-to-fine in a band, no T x E table),
        or None (the full decoder). ``shared``: a dict that keeps what a later decode of the same recording
        reuses (the band's final windows, the full decoder's frame scores).
        """
        T, E2 = feats.n_frames, d.shape[0]
        onsets = None
        if factors is not None:
            # None when the coarse decode was a poor guide (the band had to widen for many events): the full
            # decoder then
            rows, limits = self._robust_costs(d, feats.frame_rate, T, E2, rows=True)
            onsets = self._decode_banded(*factors, rows, limits, d, cons, shared)
            tables = None if onsets is None else (*factors, rows, limits)
        if onsets is None:
            if "S" not in shared:
                shared["S"], shared["gain"] = self._frame_scores(feats, score, W)
            S_obj, gain = shared["S"], shared["gain"]
            cost, limits = self._robust_costs(d, feats.frame_rate, T, E2)
            onsets = self._decode_robust(S_obj, gain, cost, limits, d, cons)
            tables = (S_obj, gain, cost, limits)
        if self.count_runs and feats.flux_bands is not None:
            onsets = self._fix_runs(feats, score, onsets, cons)
        return onsets, tables

    def _fix_runs(self, feats, score, onsets, cons):
        from .runs import place_run, repeated_runs
        T = feats.n_frames
        E2 = onsets.shape[0]
        E = E2 - 2
        k = feats.coarse
        Fb = feats.flux_bands
        first = np.searchsorted(score.note_event, np.arange(E + 1), side="left")
        sets = [frozenset(int(p) for p in score.pitches[first[e]:first[e + 1]]) for e in range(E)]
        onsets = onsets.copy()
        for r0, r1 in repeated_runs(sets):
            s0, s1 = r0 + 1, r1 + 1
            if cons is not None and (np.any(cons.onset_min[s0 - 1:s1 + 2] > 0)
                                     or np.any(cons.onset_max[s0 - 1:s1 + 2] < T - 1)):
                continue
            # a run that ends the piece may reach past the decoded start of the closing silence (a last note
            # held back, or struck after a fermata): its strikes are counted to the recording's end
            last = r1 + 1 == E
            lo, hi = int(onsets[s0 - 1]), (T - 1 if last else int(onsets[s1 + 1]))
            pitches = np.array(sorted(sets[r0]))
            a, b = max(lo - 2, 0) * k, min(hi * k, Fb.shape[0])
            if b - a < 3:
                continue
            c = _pool(_note_onset_curves(Fb, pitches, a, b), k, how="sum").sum(axis=1)
            curve = np.zeros(T)
            a_f = max(lo - 2, 0)
            curve[a_f:a_f + c.shape[0]] = c[:T - a_f]
            skip = r0 > 0 and bool(sets[r0 - 1] & sets[r0])
            if r1 + 1 < E and sets[r1 + 1] & sets[r0]:
                continue  # the next event's own strike of these pitches would blur the count
            placed = place_run(curve, r1 - r0 + 1, lo if r0 > 0 else 0, hi, skip_first=skip,
                               decoded=onsets[s0:s1 + 1])
            if placed is not None and placed[0] > onsets[s0 - 1] and placed[-1] < hi:
                onsets[s0:s1 + 1] = placed
                if last:
                    onsets[s1 + 1] = max(int(onsets[s1 + 1]), int(placed[-1]) + 1)
        return onsets

    def _robust_costs(self, d, frame_rate, T, E2, rows=False) -> tuple:
        """Duration cost table and limits of the robust prior (see :mod:`marginalia.align.dp`).

        The rests and the last event (a final chord is held as long as the
        player likes) have no prior; a music event may last up to
        ``prior_span`` times its own expected duration, and at least
        :data:`_LONGEST_EVENT_S` (a limit from the longest expected duration
        lets every event of a score with one long pause last as long, and the
        decoder's work grows with the limits). With ``rows``, the table as
        :func:`marginalia.align.banded.duration_cost_rows` (each event's row as
        long as its limit: the dense table is ``E × T`` because of the three
        states allowed the whole recording).
        """
        own = np.maximum(float(self.prior_span) * np.asarray(d, dtype=np.float64) + 8, _LONGEST_EVENT_S * frame_rate)
        limits = np.minimum(own, T).astype(np.int64)
        limits[[0, E2 - 2, E2 - 1]] = T
        make = duration_cost_rows if rows else duration_costs
        cost = make(d, weight=float(self.prior_weight), max_frames=limits,
                    smoothing=_PRIOR_SMOOTHING_S * frame_rate, long_knee=_PRIOR_LONG_KNEE, free=(0, E2 - 1))
        return cost, limits

    @staticmethod
    def _decode_banded(A, B, C, D, rows, limits, d, cons, shared=None):
        """Onsets of the E + 2 states under the robust prior, coarse-to-fine (:mod:`marginalia.align.banded`),
        or None when the band had to widen for more than :data:`_BAND_MAX_WIDENED` of the states (or there was
        no coarse path): the coarse decode was then a poor guide, and the full decoder should decide — unless
        its tables would pass :data:`_FULL_DECODE_MAX_CELLS`, and then the band widens as far as it must.

        ``shared``: a dict that keeps the final band between decodes of the same scores. When it holds one,
        the first band is that band joined with the coarsest reading alone (the finer readings, most of the
        cost, were joined into it already)."""
        lo = hi = None
        if cons is not None:
            lo, hi = cons.onset_min, cons.onset_max
        info = {}
        shared = {} if shared is None else shared
        affordable = A.shape[0] * B.shape[0] <= _FULL_DECODE_MAX_CELLS
        try:
            factors = _BAND_FACTORS
            if A.shape[0] * B.shape[0] <= _FINEST_FACTOR * _FINEST_COARSE_CELLS:
                factors = factors + (_FINEST_FACTOR,)
            if "band" in shared:
                factors = factors[:1]
            onsets = align_multiresolution(A, B, rows, limits, lo, hi, C=C, D=D, factor=factors,
                                           margin=_BAND_MARGIN, slack=_BAND_SLACK,
                                           give_up=_BAND_MAX_WIDENED if affordable else None, info=info,
                                           band=shared.get("band"))
            if onsets is not None:
                shared["band"] = (info["onset_min"], info["onset_max"])
            return onsets if info["coarse"] or not affordable else None
        except InfeasibleLabelsError:
            if cons is None:
                raise
            # the quadratic decoder names the labels that conflict (a full table, on this error path only)
            res = align_with_duration_prior(A @ B.T, d, weight=0.0, constraints=cons)
            return res.alignment.onsets

    @staticmethod
    def _decode_robust(S, gain, cost, limits, d, cons):
        """Onsets of the E + 2 states under the asymmetric, robust duration prior."""
        lo = hi = None
        if cons is not None:
            lo, hi = cons.onset_min, cons.onset_max
        try:
            return align_with_duration_costs(S, cost, limits, lo, hi, onset_gain=gain)
        except InfeasibleLabelsError:
            if cons is None:
                raise
            # the quadratic decoder names the labels that conflict
            res = align_with_duration_prior(S, d, weight=0.0, constraints=cons)
            return res.alignment.onsets

    @staticmethod
    def _onset_moves(S, gain, cost, limits, onsets, cons, frame_rate, fixed_events, factored=None) -> OnsetMoves:
        """The best one-onset move of every event within half a second (and its labels' windows).

        ``factored``: ``(A, B, C, D, cost rows, limits)`` of :meth:`_factors` instead of the tables.
        """
        T, E2 = S.shape if factored is None else (factored[0].shape[0], factored[1].shape[0])
        band = max(4, int(round(0.5 * frame_rate)))
        lo = np.maximum(onsets - band, 0)
        hi = np.minimum(onsets + band, T - 1)
        if cons is not None:
            lo = np.maximum(lo, cons.onset_min)
            hi = np.minimum(hi, cons.onset_max)
        if factored is None:
            loss, moved_to, own = onset_moves(S, cost, limits, onsets, lo, hi, onset_gain=gain)
        else:
            A, B, C, D, rows, limits = factored
            loss, moved_to, own = onset_moves_factored(A, B, rows, limits, onsets, lo, hi, C=C, D=D)
        loss[E2 - 1] = np.inf          # the closing rest is no event: its onset is the last event's end
        if fixed_events is not None:
            loss[np.asarray(fixed_events, dtype=np.int64) + 1] = np.inf
        return OnsetMoves(onsets, loss, moved_to, own, T)

    def _refine(self, feats: AlignmentFeatures, score: MidiScore, onsets: np.ndarray, anchors) -> np.ndarray:
        """Onset times (s) of the events moved to the strongest rise of their pitch classes."""
        coarse_t = feats.frame_boundary_s(onsets)
        if int(self.refine_frames) == 0:
            return coarse_t
        E = onsets.shape[0]
        lo_t = np.full(E, -np.inf)
        hi_t = np.full(E, np.inf)
        for a in anchors or ():
            lo_t[a.event] = max(lo_t[a.event], a.time_s - a.tolerance_s)
            hi_t[a.event] = min(hi_t[a.event], a.time_s + a.tolerance_s)
        if feats.flux_bands is not None:
            times = self._refine_notes(feats, score, onsets, coarse_t)
        else:
            times = self._refine_chroma(feats, score, onsets, coarse_t)
        times = np.clip(times, lo_t, hi_t)
        # keep strictly increasing: a refined onset may not pass its neighbours
        eps = 1e-4
        for e in range(1, E):
            if times[e] <= times[e - 1]:
                times[e] = times[e - 1] + eps
        return times

    def _refine_notes(self, feats, score, onsets, coarse_t):
        """Every event at the median of its notes' onsets, each note timed on the flux of its own partials.

        A note's search window is the decoded onset ± ``refine_frames`` decoding
        frames, cut half-way to the neighbouring events' decoded onsets; notes
        whose strongest rise is much weaker than the event's strongest are
        ignored (masked by louder neighbours or soft).
        """
        k, hop, sr = feats.coarse, feats.hop_fine, feats.sr
        F = feats.flux_bands
        Tf = F.shape[0]
        E = onsets.shape[0]
        half = int(self.refine_frames) * k
        centre = onsets.astype(np.int64) * k
        times = coarse_t.copy()
        first = np.searchsorted(score.note_event, np.arange(E + 1), side="left")

        def pitches_n(e):
            return np.unique(score.pitches[first[e]:first[e + 1]]).shape[0]
        for e in range(E):
            c = int(centre[e])
            a, b = c - half, c + half + 1
            if e > 0:
                a = max(a, (c + int(centre[e - 1])) // 2 + 1)
            rolled = False
            if e + 1 < E:
                b = min(b, (c + int(centre[e + 1])) // 2 + 1)
                b_norm = min(b, Tf - 1)
                long_s = float(self.rolled_chord_s)
                rollable = long_s > 0 and not feats.sustained  # bowed and blown chords are not rolled
                if rollable and (int(centre[e + 1]) - c) * hop / sr > long_s and pitches_n(e) > 1:
                    # a long chord may be rolled: its notes are searched over its whole span
                    b = max(b, min(int(centre[e + 1]) - 2 * k, c + int(_LONGEST_EVENT_S * sr / hop)))
                    rolled = True
                    # the decoder may place a roll at one of its middle notes: look back for the first ones
                    a_norm = a
                    back = c - int(_ROLL_LOOKBACK_S * sr / hop)
                    a = max(back, (c + int(centre[e - 1])) // 2 + 1) if e > 0 else max(back, 1)
                    a = min(a, a_norm)
            else:  # nothing follows the final chord: it may be rolled slowly
                b = max(b, c + int(_FINAL_ROLL_S * sr / hop))
            a, b = max(a, 1), min(b, Tf - 1)
            if b - a < 3:
                continue
            pitches = np.unique(score.pitches[first[e]:first[e + 1]])
            curves = _note_onset_curves(F, pitches, a, b)
            peaks = curves.argmax(axis=0)
            heights = curves[peaks, np.arange(pitches.shape[0])]
            top = float(heights.max())
            if top <= 0:
                continue
            keep = np.flatnonzero(heights >= _NOTE_FLOOR * top)
            if rolled:
                # a note struck near the decoded onset keeps that strike; one struck later (rolled) is
                # timed at its first strong rise in the span (later rises may be other notes' partials)
                lo_n, hi_n = max(a_norm, a) - a, max(min(b_norm, b) - a, max(a_norm, a) - a + 1)
                for i in keep:
                    col = curves[:, i]
                    near = lo_n + int(np.argmax(col[lo_n:hi_n]))
                    if col[near] >= _ROLL_NEAR * heights[i]:
                        peaks[i] = near
            if not rolled and feats.sustained:
                at = _first_rises(curves[:, keep], int(round(_RISE_SMOOTH_S * sr / hop)))
            else:
                at = np.array([_peak_position(curves[:, i], peaks[i]) for i in keep])
            times[e] = (a + float(np.median(at)) - 0.5) * hop / sr
        return times

    def _refine_chroma(self, feats, score, onsets, coarse_t):
        """Every event at the strongest rise of its pitch classes (features without per-band flux)."""
        k, hop, sr = feats.coarse, feats.hop_fine, feats.sr
        O = feats.onset_fine
        Tf = O.shape[0]
        Wt = _onset_weights(score)
        E = onsets.shape[0]
        times = coarse_t.copy()
        half = int(self.refine_frames) * k
        counts = score.event_matrix(12)
        for n, e in enumerate(score.note_event):
            counts[e, score.pitches[n] % 12] += 1.0  # notes per pitch class (+1 for the presence)
        counts -= score.event_matrix(12)
        for e in range(E):
            c = int(onsets[e]) * k
            a, b = max(c - half, 1), min(c + half + 1, Tf - 1)
            if b - a < 3:
                continue
            # the rise of every pitch class of the event; a rolled chord's onset is the median of its notes'
            pcs = np.flatnonzero(Wt[e] > 0)
            seg = O[a:b][:, pcs]
            peaks = seg.argmax(axis=0)
            heights = seg[peaks, np.arange(pcs.shape[0])]
            top = float(heights.max())
            if top <= 0:
                continue
            keep = heights >= 0.25 * top
            at = np.array([_peak_position(seg[:, i], peaks[i]) for i in np.flatnonzero(keep)])
            weight = (counts[e, pcs] * Wt[e, pcs])[keep]
            times[e] = (a + _weighted_median(at, weight) - 0.5) * hop / sr
        return times

    def align(self, audio_y, sr, score, *, anchors=None, features: Optional[AlignmentFeatures] = None,
              fixed_events=None) -> AlignmentOutput:
        """Onset time of every score event in a recording.

        Parameters
        ----------
        audio_y : array_like, shape (n,)
            Mono signal.
        sr : int
            Sample rate (Hz).
        score : MidiScore
            Events are the score's own (``score.n_events``).
        anchors : sequence of AnchorLabel, optional
            Event ``a.event`` starts at ``a.time_s`` ± ``a.tolerance_s``; the
            result obeys every anchor.
        features : AlignmentFeatures, optional
            Precomputed :meth:`features` of ``audio_y`` (skips their computation).
        fixed_events : array_like of int, optional
            Events the runner-up and ``moves`` never move (the anchored ones:
            their question is answered).

        Returns
        -------
        AlignmentOutput

        Raises
        ------
        ParameterError
            Empty or non-finite audio, a score with more events than decoding
            frames, anchors naming events outside the score.
        InfeasibleLabelsError
            Anchors out of score order or outside the recording.
        """
        self._check_params()
        score = _check_score(score)
        feats = self.features(audio_y, sr) if features is None else features
        if not isinstance(feats, AlignmentFeatures):
            raise ParameterError(f"features: expected AlignmentFeatures, got {type(feats).__name__}")
        anchors = list(anchors or ())
        if fixed_events is not None:
            fixed_events = np.asarray(fixed_events, dtype=np.int64).reshape(-1)
            if fixed_events.size and not (fixed_events.min() >= 0 and fixed_events.max() < score.n_events):
                raise ParameterError(f"fixed_events: expected events in [0, {score.n_events - 1}], got "
                                     f"{fixed_events.tolist()[:5]}")
        feats = _with_instruments(feats, score)
        onsets, moves = self._decode(feats, score, self._W(), anchors, bool(self.runner_up), fixed_events)
        runner, margin = (None, float("inf")) if moves is None else moves.closest()
        T = feats.n_frames
        ev_onsets = onsets[1:-1]
        times = self._refine(feats, score, ev_onsets, anchors)
        runner_t = None if runner is None else feats.frame_boundary_s(runner[1:-1])
        margins = rivals = None
        if moves is not None:
            margins = np.asarray(moves.loss[1:-1], dtype=np.float64).copy()
            to = np.asarray(moves.moved_to[1:-1])
            rivals = np.where((to >= 0) & np.isfinite(margins), feats.frame_boundary_s(np.maximum(to, 0)), np.nan)
        return AlignmentOutput(event_times_s=times, frame_alignment=Alignment(ev_onsets, T),
                               runner_up_times_s=runner_t, margin=margin, frame_rate=feats.frame_rate,
                               moves=moves, event_margins=margins, event_rival_times_s=rivals)

    def predict(self, audio_y, sr, score, **options) -> AlignmentOutput:
        """The same as :meth:`align`: the name every Marginalia learner uses for its output."""
        return self.align(audio_y, sr, score, **options)

    # ---------------------------------------------------------------- fit
    def fit(self, pairs, *, anchors=None, callback=None, start=None) -> "ScoreAligner":
        """Learn the frame scorers ``W`` from score/recording pairs without timing.

        Parameters
        ----------
        pairs : sequence of (y, sr, MidiScore) or (AlignmentFeatures, MidiScore)
            Recordings (mono, or their precomputed :meth:`features`) and their scores.
        anchors : sequence of sequences of AnchorLabel, optional
            Per pair, anchors that the training alignments must obey.
        callback : callable, optional
            ``callback(iteration, n_iter)`` after each round.
        start : ScoreAligner, optional
            A fitted aligner (another project's, say) whose scorers take the place of the untrained
            ones: the first alignments are its, the ridge pulls towards it and the result keeps
            ``1 - blend`` of it. None: the untrained scorers.

        Returns
        -------
        self
        """
        self._check_params()
        pairs = list(pairs)
        if not pairs:
            raise ParameterError("pairs: expected at least one (y, sr, score) pair, got none")
        anchors = [()] * len(pairs) if anchors is None else [list(a or ()) for a in anchors]
        if len(anchors) != len(pairs):
            raise ParameterError(f"anchors: expected one list per pair ({len(pairs)}), got {len(anchors)}")
        data = []
        for i, pair in enumerate(pairs):
            if isinstance(pair, tuple) and len(pair) == 2 and isinstance(pair[0], AlignmentFeatures):
                data.append((pair[0], _check_score(pair[1])))
                continue
            try:
                y, sr, score = pair
            except (TypeError, ValueError):
                raise ParameterError(f"pairs[{i}]: expected a (y, sr, score) triple or (features, score), "
                                     f"got {type(pair).__name__}") from None
            data.append((self.features(y, sr), _check_score(score)))
        data = [(_with_instruments(feats, score), score) for feats, score in data]
        if start is None:
            W0 = self._initial_W()
        elif isinstance(start, ScoreAligner):
            start.check_fitted()
            W0 = np.array(start.W_, dtype=np.float64)
        else:
            raise ParameterError(f"start: expected a fitted ScoreAligner or None, got {type(start).__name__}")
        c0 = _circulant_params(W0)
        W = W0.copy()
        for it in range(int(self.n_iter)):
            A = np.zeros((c0.shape[0], c0.shape[0]))
            b = np.zeros(c0.shape[0])
            n = 0
            for (feats, score), anc in zip(data, anchors):
                onsets, _ = self._decode(feats, score, W, anc, False)
                T = feats.n_frames
                ev = np.repeat(np.arange(onsets.shape[0]), np.diff(np.append(onsets, T)))
                music = (ev > 0) & (ev < onsets.shape[0] - 1)
                Z = _circulant_design(feats.X[music])  # (n, 12, 25)
                target = _templates(score, harmonics=feats.sustained)[ev[music] - 1]  # (n, 12)
                A += np.einsum("tjd,tje->de", Z, Z)
                b += np.einsum("tjd,tj->d", Z, target)
                n += Z.shape[0]
            lam = float(self.ridge) * max(n, 1)
            c = np.linalg.solve(A + lam * np.eye(c0.shape[0]), b + lam * c0)
            # keep the scale of the scores (the rests and the prior are calibrated to it)
            c *= float(b @ c0) / max(float(b @ c), 1e-12)
            W = _circulant_W(c)
            if callback is not None:
                callback(it + 1, int(self.n_iter))
        self.W_ = float(self.blend) * W + (1.0 - float(self.blend)) * W0
        self.n_iter_ = int(self.n_iter)
        self.provenance_ = {"trained_on": [getattr(s, "name", "") for _, s in data], "n_pairs": len(data),
                            "n_anchors": int(sum(len(a) for a in anchors)), "learner": "align-then-ridge",
                            "started_from_prior": start is not None,
                            "trained_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
        return self

    # ------------------------------------------------------------ storage
    def to_bytes(self, provenance: Optional[dict] = None) -> bytes:
        """Serialise parameters, learned scorers and provenance (an ``.npz`` without pickles).

        Parameters
        ----------
        provenance : dict, optional
            Extra JSON-serialisable provenance merged into ``provenance_``.
        """
        self._check_params()
        meta = {"format": "marginalia.scorealign", "version": FORMAT_VERSION, "params": self.get_params(),
                "features": list(_FEATURE_NAMES), "fitted": hasattr(self, "W_"),
                "n_iter_": getattr(self, "n_iter_", 0),
                "provenance": {**getattr(self, "provenance_", {}), **(provenance or {})}}
        try:
            text = json.dumps(meta)
        except (TypeError, ValueError) as exc:
            raise ParameterError(f"provenance: expected JSON-serialisable values ({exc})") from None
        buf = io.BytesIO()
        np.savez(buf, meta=np.frombuffer(text.encode("utf-8"), dtype=np.uint8), W=self._W())
        return buf.getvalue()

    @classmethod
    def from_bytes(cls, data: bytes) -> "ScoreAligner":
        """Rebuild an aligner written by :meth:`to_bytes`.

        Raises
        ------
        DataFormatError
            Not an aligner, another format version, or damaged.
        """
        if not isinstance(data, (bytes, bytearray, memoryview)):
            raise ParameterError(f"data: expected bytes, got {type(data).__name__}")
        try:
            with np.load(io.BytesIO(bytes(data)), allow_pickle=False) as z:
                meta = json.loads(bytes(z["meta"]).decode("utf-8"))
                W = np.array(z["W"], dtype=np.float64)
        except Exception as exc:  # noqa: BLE001 - any decoding failure is a damaged blob
            raise DataFormatError(f"not a stored score aligner ({type(exc).__name__}: {exc})") from None
        if meta.get("format") != "marginalia.scorealign":
            raise DataFormatError(f"not a stored score aligner (format {meta.get('format')!r})")
        if meta.get("version") != FORMAT_VERSION:
            raise DataFormatError(f"score aligner format version {meta.get('version')!r}, expected {FORMAT_VERSION}")
        if W.shape != (_N_FEATURES, 12) or not np.all(np.isfinite(W)):
            raise DataFormatError(f"score aligner: scorers of shape {W.shape}, expected ({_N_FEATURES}, 12)")
        obj = cls(**meta["params"])
        obj._check_params()
        if meta.get("fitted"):
            obj.W_ = W
            obj.n_iter_ = int(meta.get("n_iter_", 0))
            obj.provenance_ = dict(meta.get("provenance", {}))
        return obj

    # ------------------------------------------- model files (marginalia.models.files)
    #: the task a model file of this aligner is for
    task = "alignment"

    @property
    def n_features_(self) -> int:
        """Length of the frame descriptors the scorers read."""
        return _N_FEATURES

    def get_state(self) -> dict:
        """Arrays a model file stores besides ``w``: none (the scorers are ``w``, the options ``get_params``)."""
        return {}

    def set_state(self, state: dict, n_features: int) -> "ScoreAligner":
        """Check a model file's frame-descriptor length against this aligner's."""
        if int(n_features) != _N_FEATURES:
            raise ParameterError(f"n_features: a score aligner reads {_N_FEATURES} frame features, got {n_features}")
        return self

    def check_w(self, w, name: str = "w") -> np.ndarray:
        """``w`` as the scorers' interval weights (:meth:`scorer_weights`), shape (25,)."""
        return check_param_vector(w, _N_FEATURES, name)

    def scorer_weights(self) -> np.ndarray:
        """The scorers ``W`` as their interval weights (12 per block and a bias), what a model file stores."""
        return _circulant_params(self._W())

    def with_scorer_weights(self, w, provenance: Optional[dict] = None) -> "ScoreAligner":
        """A fitted aligner with this one's options and the scorers of ``w`` (see :meth:`scorer_weights`)."""
        obj = type(self)(**self.get_params())
        obj._check_params()
        obj.W_ = _circulant_W(self.check_w(w))
        obj.n_iter_ = int(self.n_iter)
        obj.provenance_ = dict(provenance or {})
        return obj

    def check_fitted(self):
        """Raise :class:`NotFittedError` when :meth:`fit` has not run."""
        if not hasattr(self, "W_"):
            raise NotFittedError("ScoreAligner: call fit(pairs) first (or use the untrained aligner's align())")


def align_recording(audio_path, score, *, aligner: Optional[ScoreAligner] = None, anchors=None) -> AlignmentOutput:
    """Align a score to an audio file (the command line's entry point).

    Parameters
    ----------
    audio_path : str or path-like
        WAV/FLAC/OGG/MP3, decoded by :func:`marginalia.io.audio.load_audio` at 22.05 kHz mono.
    score : MidiScore
    aligner : ScoreAligner, optional
        A trained aligner (e.g. ``ScoreAligner.from_bytes(blob)``); the untrained one by default.
    anchors : sequence of AnchorLabel, optional

    Returns
    -------
    AlignmentOutput
    """
    from ..io.audio import load_audio
    if aligner is None:
        aligner = ScoreAligner()
    elif not isinstance(aligner, ScoreAligner):
        raise ParameterError(f"aligner: expected a ScoreAligner or None, got {type(aligner).__name__}")
    y, sr = load_audio(audio_path, sr=22050)
    return aligner.align(y, sr, score, anchors=anchors)
