"""Audio-to-score alignment without a trained model: chroma templates and a duration prior.

Every score event gets a chroma template (its pitch classes); every audio
frame is scored against every template by cosine similarity, and the
monotone alignment decoder picks the onset of each event. Two pseudo-events,
a leading and a trailing rest, absorb the silence before and after the
music (they score well on quiet frames). The score's own timing, stretched to
the length of the music in the recording, gives each event an expected
duration; a quadratic prior (Lajugie 2015, Alg. 9) keeps onsets near that tempo
when the chroma evidence is weak.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

import numpy as np

from ..exceptions import ParameterError
from ..types import Alignment, Score

__all__ = ["template_scores", "quiet_frames", "expected_durations", "align_chroma", "ChromaAlignment"]

#: frames more than this many dB below the loudest frame count as silence
SILENCE_DB = 35.0


def template_scores(chroma: np.ndarray, score: Score) -> np.ndarray:
    """Cosine similarity of every frame's chroma to every event's pitch-class template.

    Parameters
    ----------
    chroma : ndarray, shape (T, 12)
        Frame chroma (any non-negative scale).
    score : Score

    Returns
    -------
    S : ndarray, shape (T, E)
        In ``[0, 1]``; 0 for an all-zero frame.
    """
    C = np.asarray(chroma, dtype=np.float64)
    if C.ndim != 2 or C.shape[1] != 12:
        raise ParameterError(f"chroma: expected shape (T, 12), got {C.shape}")
    if not np.all(np.isfinite(C)):
        raise ParameterError("chroma: contains NaN or inf")
    phi = score.event_matrix(12)
    phi = phi / np.linalg.norm(phi, axis=1, keepdims=True)
    norms = np.linalg.norm(C, axis=1, keepdims=True)
    C = C / np.where(norms > 0, norms, 1.0)
    return C @ phi.T


def quiet_frames(energy_db: np.ndarray, *, silence_db: float = SILENCE_DB) -> np.ndarray:
    """A score in ``[-1, 1]`` per frame: 1 for silence, -1 for sound, from frame energy in dB."""
    e = np.asarray(energy_db, dtype=np.float64)
    if e.ndim != 1 or e.size == 0 or not np.all(np.isfinite(e)):
        raise ParameterError(f"energy_db: expected a finite 1-d array, got shape {e.shape}")
    threshold = e.max() - silence_db
    return np.clip((threshold - e) / 6.0, -1.0, 1.0)


def expected_durations(score: Score, n_music_frames: float) -> np.ndarray:
    """Expected frames of each event: the score's inter-onset intervals stretched to the music's length.

    Returns
    -------
    d : ndarray, shape (E,)
    """
    on = np.asarray(score.event_onsets_s, dtype=np.float64)
    ends = np.append(on[1:], max(score.duration_s, on[-1]))
    ioi = np.maximum(ends - on, 0.0)
    total = ioi.sum()
    if total <= 0:
        return np.full(on.shape[0], n_music_frames / on.shape[0])
    return ioi * (n_music_frames / total)


@dataclass(frozen=True, eq=False)
class ChromaAlignment:
    """Result of :func:`align_chroma`.

    Attributes
    ----------
    alignment : Alignment
        Onset frame of every score event (rests removed), shape (E,).
    onset_times_s : ndarray, shape (E,)
    lead_frames, trail_frames : int
        Frames given to the leading and trailing rests.
    """

    alignment: Alignment
    onset_times_s: np.ndarray
    lead_frames: int
    trail_frames: int


def align_chroma(chroma: np.ndarray, frame_times: np.ndarray, score: Score, *,
                 energy_db: Optional[np.ndarray] = None, prior_weight: float = 1.0) -> ChromaAlignment:
    """Align a score to a recording's chroma frames.

    Parameters
    ----------
    chroma : ndarray, shape (T, 12)
    frame_times : ndarray, shape (T,)
        Time of each frame in seconds.
    score : Score
    energy_db : ndarray, shape (T,), optional
        Frame loudness in dB; enables the leading/trailing rests.
    prior_weight : float
        Strength of the duration prior, relative (1 means a 100 % error on an
        average event's duration costs about one frame of perfect match); 0
        disables it.

    Returns
    -------
    ChromaAlignment
    """
    S_ev = template_scores(chroma, score)
    T, E = S_ev.shape
    times = np.asarray(frame_times, dtype=np.float64)
    if times.shape != (T,):
        raise ParameterError(f"frame_times: expected shape ({T},), got {times.shape}")
    if not (np.isfinite(prior_weight) and prior_weight >= 0):
        raise ParameterError(f"prior_weight: expected a finite number >= 0, got {prior_weight!r}")
    rests = energy_db is not None
    if rests:
        q = quiet_frames(energy_db)
        if q.shape != (T,):
            raise ParameterError(f"energy_db: expected shape ({T},), got {q.shape}")
        S = np.hstack([q[:, None], S_ev, q[:, None]])
        loud = np.flatnonzero(q < 0)
        lead = int(loud[0]) if loud.size else 0
        trail = int(T - 1 - loud[-1]) if loud.size else 0
    else:
        S = S_ev
        lead = trail = 0
    n_ev = S.shape[1]
    if n_ev > T:
        raise ParameterError(f"the recording has {T} frames but the score has {E} events; expected at least one "
                             f"frame per event (is this the right score, or the audio too short?)")
    from ..decoders.alignment import align, align_with_duration_prior
    music = max(T - lead - trail, E)
    d = expected_durations(score, music)
    if rests:
        d = np.concatenate([[lead], d, [trail]])
    if prior_weight > 0:
        weight = prior_weight / max(float(np.mean(d[1:-1] if rests else d)), 1.0) ** 2
        dmax = int(min(T, max(4 * float(d.max()) + 8, -(-T // n_ev) + 1)))
        res = align_with_duration_prior(S, d, weight=weight, max_frames=dmax)
    else:
        res = align(S)
    onsets = res.alignment.onsets
    if rests:
        lead_frames = int(onsets[1])
        trail_frames = int(T - onsets[-1])
        onsets = onsets[1:-1]
    else:
        lead_frames = trail_frames = 0
    ali = Alignment(onsets, T)
    return ChromaAlignment(ali, times[onsets], lead_frames, trail_frames)


# ------------------------------------------------------------- learned models
#
# A learned alignment model (marginalia.models.alignment.AlignmentModel) scores frame
# descriptors against event templates. The command line uses the app's
# descriptors (marginalia.tasks.alignment: unit chroma damped by quietness, plus the
# quietness) and the app's templates with a silence event first, to which it
# adds a trailing silence event so that both ends of a recording can be quiet.


def alignment_item(recording) -> tuple:
    """``(X (T, 13), Phi (E + 2, 13))``: frame descriptors and templates with leading/trailing silence."""
    from ..tasks.alignment import event_templates, frame_features
    if recording.score is None:
        raise ParameterError(f"{recording.audio_path}: has no score to align to")
    X = frame_features(recording.chroma, recording.loudness_db)
    phi = event_templates(recording.score)
    Phi = np.vstack([phi, phi[:1]])
    return X, Phi


def _monotone_onsets(frames: np.ndarray, T: int) -> np.ndarray:
    """Strictly increasing onsets in ``[0, T)`` as close as possible to ``frames`` (first one forced to 0)."""
    on = np.asarray(np.round(frames), dtype=np.int64)
    n = on.shape[0]
    on[0] = 0
    for k in range(1, n):
        on[k] = max(on[k], on[k - 1] + 1)
    for k in range(n - 1, 0, -1):
        on[k] = min(on[k], T - (n - k), on[k + 1] - 1 if k + 1 < n else T - 1)
    return on


def expected_alignment(recording, anchors=()) -> Alignment:
    """The score played in strict time between the first and last sound, through the anchors if any.

    Returns the expected alignment of the ``E + 2`` events of :func:`alignment_item`
    (leading silence, the score's events, trailing silence) -- the ``Ȳ`` of the
    weakly supervised learner.

    Parameters
    ----------
    recording : Recording
    anchors : iterable of AnchorLabel
        Score event ``event`` starts at ``time_s`` of the audio.
    """
    score = recording.score
    T = recording.chroma.shape[0]
    E = score.n_events
    if T < E + 2:
        raise ParameterError(f"{recording.audio_path}: {T} frames cannot hold {E} events; is the recording too short?")
    q = quiet_frames(recording.energy_db)
    loud = np.flatnonzero(q < 0)
    first, last = (int(loud[0]), int(loud[-1])) if loud.size else (0, T - 1)
    times = recording.times
    on_s = np.asarray(score.event_onsets_s, dtype=np.float64)
    end_s = max(float(score.duration_s), float(on_s[-1]) + 1e-3)
    pts_score = [float(on_s[0]), end_s]
    pts_audio = [float(times[first]), float(times[min(last + 1, T - 1)])]
    for a in anchors:
        if not 0 <= a.event < E:
            raise ParameterError(f"anchor: event {a.event} is not in the score (events 0..{E - 1})")
        pts_score.append(float(on_s[a.event]))
        pts_audio.append(float(a.time_s))
    order = np.argsort(pts_score, kind="stable")
    xs, ys = np.asarray(pts_score)[order], np.maximum.accumulate(np.asarray(pts_audio)[order])
    audio_on = np.interp(on_s, xs, ys)
    frame_of = np.searchsorted(times, audio_on, side="left")
    trail = np.searchsorted(times, np.interp(end_s, xs, ys), side="left")
    frames = np.concatenate([[0], frame_of, [trail]])
    return Alignment(_monotone_onsets(frames, T), T)


def align_with_model(cli_model, recording) -> np.ndarray:
    """Onset time (s) of every score event with a learned :class:`AlignmentModel`, shape (E,)."""
    item = alignment_item(recording)
    if item[0].shape[1] != getattr(cli_model.model, "n_features_", item[0].shape[1]):
        raise ParameterError(f"model {cli_model._name()} was trained on other frame features "
                             f"({cli_model.model.n_features_}, here {item[0].shape[1]}); retrain it")
    ali = cli_model.model.decode(item, cli_model.w)
    return recording.times[ali.onsets[1:-1]]
