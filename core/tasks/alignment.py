"""Audio-to-score alignment: the engine's alignment task.

The task delegates to :class:`marginalia.align.ScoreAligner` (onset-aware chroma
features, duration prior, sub-frame onset refinement, weak supervision). The
module also keeps the simple frame and event descriptors (unit-norm chroma with
a quietness value, pitch-class templates with a leading silence pseudo-event)
that the active-learning replay builds on.
"""

from __future__ import annotations

import io
import threading

import numpy as np

from ..active.parts import phrase_parts
from ..active.realign import span_part_scores
from ..active.uncertainty import PartScores
from ..exceptions import DataFormatError, InfeasibleLabelsError, ParameterError
from ..types import Alignment, AnchorLabel, EventSpanLabel, Prediction
from .base import EngineTask, check_cancel, conflict_in_user_terms

__all__ = ["AlignmentTask", "frame_features", "event_templates"]

#: an event-span label becomes one anchor window per event, with id "<label id>:<event>"
_SPAN_EVENT = ":"


#: decodes remembered per item: the current labels', and those made ahead for each answer of the shown question
DECODES_PER_ITEM = 4


def _span_label_id(anchor_id) -> str:
    """The label id behind an anchor the aligner checked (a span's per-event window maps back to the span)."""
    return str(anchor_id).split(_SPAN_EVENT)[0]

N_FEATURES = 13  # 12 pitch classes + quietness


def frame_features(chroma: np.ndarray, loudness_db: np.ndarray) -> np.ndarray:
    """Frame descriptors ``x_t``: unit-norm chroma and quietness, shape (T, 13).

    Parameters
    ----------
    chroma : ndarray, shape (T, 12)
    loudness_db : ndarray, shape (T,)
        Frame loudness in dB relative to the loudest frame (<= 0).
    """
    c = np.asarray(chroma, dtype=np.float64)
    c = c / np.maximum(np.linalg.norm(c, axis=1, keepdims=True), 1e-9)
    quiet = np.clip((-np.asarray(loudness_db, dtype=np.float64) - 35.0) / 20.0, 0.0, 1.0)
    return np.hstack([c * (1.0 - quiet)[:, None], quiet[:, None]])


def event_templates(score) -> np.ndarray:
    """Event descriptors ``φ_e`` with the silence pseudo-event first, shape (E + 1, 13)."""
    phi = score.event_matrix(12)
    phi = phi / np.maximum(np.linalg.norm(phi, axis=1, keepdims=True), 1e-9)
    out = np.zeros((phi.shape[0] + 1, N_FEATURES))
    out[0, 12] = 1.0
    out[1:, :12] = phi
    return out


class AlignmentTask(EngineTask):
    """Alignment of audio items to their scores with :class:`marginalia.align.ScoreAligner`.

    The aligner's own features (semitone-band chroma and onset chroma on 5.8 ms
    frames) are computed once per item; anchors are hard constraints of every
    redraw, so an interactive update changes no parameter. A full fit learns
    the frame scorers from every item's score by weak supervision (Lajugie
    2015, ch. 6; anchors, where given, guide it). Predictions carry the refined
    event times in seconds next to the frame alignment the views draw.
    """

    name = "alignment"

    def __init__(self, engine, kind: str):
        super().__init__(engine, kind)
        self.aligner = None
        self._decoded: dict = {}
        # one decode at a time: after an anchor the app's model update and its next question ask for the same
        # decode at once, and the second should wait for the first's result, not compute it again beside it
        self._decode_lock = threading.Lock()

    # --------------------------------------------------------------- features
    def _compute_features(self, data):
        if data.score is None:
            raise ParameterError(f"item {data.record.name!r} has no score to align to")
        from ..io.audio import load_audio
        y, sr = load_audio(data.audio_path, sr=22050)
        return self._aligner().features(y, sr)

    def features(self, item_id: str):
        with self._lock:
            feats = self._features.get(item_id)
            if feats is None:
                feats = self._compute_features(self.engine.data(item_id))
                self._features[item_id] = feats
            return feats

    def _aligner(self):
        from ..align import ScoreAligner
        if self.aligner is None:
            self.aligner = ScoreAligner()
        return self.aligner

    # ------------------------------------------------------------ model state
    def ensure_model(self):
        with self._lock:
            if self.aligner is None:
                self._aligner()
                if not self._restore_latest():
                    self._commit_model("initial")
            return self.aligner

    def _commit_blob(self) -> bytes:
        return self.aligner.to_bytes()

    def _state_arrays(self) -> dict:
        return {"aligner": np.frombuffer(self.aligner.to_bytes(), dtype=np.uint8)}

    def _restore_arrays(self, arrays: dict, params: dict) -> None:
        from ..align import ScoreAligner
        if params.get("task") != self.key or "aligner" not in arrays:
            raise ParameterError("alignment model for other features")
        self.aligner = ScoreAligner.from_bytes(arrays["aligner"].tobytes())

    # ----------------------------------------------------------------- labels
    def validate_label(self, label, pending=()) -> None:
        """Refuse a label that is out of range or contradicts the item's labels (and ``pending`` new ones)."""
        if not isinstance(label, (AnchorLabel, EventSpanLabel)):
            raise ParameterError(f"an alignment item takes anchor or event-span labels, got {type(label).__name__}")
        data = self.engine.data(label.item_id)
        score = data.score
        last = label.event if isinstance(label, AnchorLabel) else label.last
        if last >= score.n_events:
            raise ParameterError(f"label names event {last} but the score has {score.n_events} events "
                                 f"(0..{score.n_events - 1})")
        others = [lab for lab in list(self.labels_of(label.item_id)) + list(pending)
                  if lab.id != label.id and lab.item_id == label.item_id]
        if isinstance(label, AnchorLabel):
            twin = next((lab for lab in others if isinstance(lab, AnchorLabel) and lab.event == label.event), None)
            if twin is not None:
                raise ParameterError(f"event {label.event} already has an anchor at {twin.time_s:.3f} s; "
                                     "move or delete that anchor rather than adding a second one")
        # the decoder's own check (anchors in score order and inside the recording), on its own states: a
        # rest before the first event, so event 0 may be anchored anywhere in the recording
        anchors = self._as_anchors(label.item_id, others + [label])
        try:
            self.ensure_model()._constraints(anchors, self.features(label.item_id), score.n_events)
        except InfeasibleLabelsError as exc:
            raise conflict_in_user_terms(exc, others + [label], label, data.sequence,
                                         rule="Every event must fall inside the windows of its labels, and "
                                              "events keep the score's order.",
                                         label_id_of=_span_label_id) from None

    def labels_from_prediction(self, item_id, pred, start, stop) -> list:
        """Anchors for the predicted onsets of events ``start..stop-1`` that have no anchor yet (an event
        anchors once: the person's anchor stands, the prediction already obeys it)."""
        times = self._times(item_id, pred)
        anchored = set(self._anchored_events(item_id).tolist())
        return [AnchorLabel(item_id=item_id, event=e, time_s=float(times[e]), tolerance_s=0.05)
                for e in range(max(start, 0), min(stop, len(times))) if e not in anchored]

    def _times(self, item_id, pred) -> np.ndarray:
        if getattr(pred, "times_s", None) is not None:
            return np.asarray(pred.times_s)
        return self.engine.data(item_id).sequence.positions[pred.structure.onsets]

    def _anchored_events(self, item_id) -> np.ndarray:
        """Sorted events pinned by an anchor label (event-span labels only bound them)."""
        return np.unique(np.array([lab.event for lab in self.labels_of(item_id) if isinstance(lab, AnchorLabel)],
                                  dtype=np.int64))

    def _anchors(self, item_id) -> list:
        """The item's labels as anchors for the aligner (see :meth:`_as_anchors`)."""
        return self._as_anchors(item_id, self.labels_of(item_id))

    @staticmethod
    def _as_anchors(item_id, labels) -> list:
        """Labels as anchors for the aligner.

        An event-span label ("events first..last start inside [t0, t1]") is, for each of its
        events, an anchor window centred on the span with half its width as the tolerance.
        """
        out = []
        for lab in labels:
            if isinstance(lab, AnchorLabel):
                out.append(lab)
            elif isinstance(lab, EventSpanLabel):
                mid, half = 0.5 * (lab.t0_s + lab.t1_s), 0.5 * (lab.t1_s - lab.t0_s)
                out.extend(AnchorLabel(item_id=item_id, id=f"{lab.id}{_SPAN_EVENT}{e}", event=e, time_s=mid,
                                       tolerance_s=half)
                           for e in range(int(lab.first), int(lab.last) + 1))
        return out

    # --------------------------------------------------------------- learning
    def update(self, item_id: str, *, cancel=None) -> str:
        """Anchors act as constraints of the next redraw; the scorers change only in a full fit."""
        self.ensure_model()
        check_cancel(cancel)
        return self.model_id

    def _prior_aligner(self):
        """The task's prior aligner (:meth:`Engine.start_from`), or None."""
        entry = self.engine.prior(task_key=self.key)
        if entry is None:
            return None
        from ..models.persistence import from_bytes
        model, w, prov = from_bytes(self.engine.session.load_model(entry["model_id"]).blob, task="alignment")
        return model.with_scorer_weights(w, prov)

    def fit(self, *, cancel=None, progress=None) -> str:
        """Weak supervision from every item's score (anchors, where given, guide it), started from the prior
        aligner when the project has one (:mod:`marginalia.prior`)."""
        aligner = self.ensure_model()
        start = self._prior_aligner()
        ids = self.item_ids()
        pairs, anchors = [], []
        for i, item_id in enumerate(ids):
            check_cancel(cancel)
            pairs.append((self.features(item_id), self.engine.data(item_id).score))
            anchors.append(self._anchors(item_id))
            if progress is not None:
                progress(i + 1, len(ids) + 1, f"features of {i + 1}/{len(ids)} recordings")
        check_cancel(cancel)
        with self._lock:
            aligner.fit(pairs, anchors=anchors, start=start)
            self._decoded.clear()
            if progress is not None:
                progress(len(ids) + 1, len(ids) + 1, "alignment scorers fitted")
            return self._commit_model("weak-supervision" if start is None else "weak-supervision-prior")

    # ------------------------------------------------- figures on the labels
    def label_errors_of_version(self, model_id, *, cancel=None):
        """:meth:`label_errors` of the stored model version ``model_id`` (None when it cannot be read)."""
        from ..align import ScoreAligner
        if model_id is None:
            return None
        try:
            with np.load(io.BytesIO(self.engine.session.load_model(model_id).blob)) as z:
                aligner = ScoreAligner.from_bytes(z["aligner"].tobytes())
        except (ParameterError, DataFormatError, ValueError, OSError, KeyError):
            return None
        return self.label_errors(aligner, model_id, cancel=cancel)

    def label_errors_of_file(self, blob, key, *, cancel=None):
        """:meth:`label_errors` of a model file's bytes (the stored prior), remembered under ``key``."""
        from ..models.persistence import from_bytes
        try:
            model, w, prov = from_bytes(blob, task="alignment")
        except (ParameterError, DataFormatError, ValueError, OSError):
            return None
        return self.label_errors(model.with_scorer_weights(w, prov), key, cancel=cancel)

    def label_errors(self, aligner, key, *, cancel=None):
        """How many of the task's labels the aligner misses when it aligns their recordings without them.

        An anchor is missed when the event's onset lands farther from it than its tolerance (at least
        one decoding frame); an event-span label when one of its events starts outside its span.
        Remembered per ``key`` and label set.

        Returns
        -------
        dict
            ``{"errors", "fp", "fn", "n_regions", "unit"}``: missed labels and labels (``fp``/``fn`` 0,
            ``unit`` ``"labels"``), the shape of the segmentation task's figures.
        """
        ids = [i for i in self.item_ids() if self.labels_of(i)]
        memo_key = (key, self.engine.session.labels_hash(ids))
        hit = self._recall_figures(memo_key)
        if hit is not None:
            return hit
        missed = total = 0
        for item_id in ids:
            check_cancel(cancel)
            feats = self.features(item_id)
            times = aligner.align(None, None, self.engine.data(item_id).score, features=feats).event_times_s
            slack = 1.0 / feats.frame_rate       # one decoding frame
            for lab in self.labels_of(item_id):
                total += 1
                if isinstance(lab, AnchorLabel):
                    missed += abs(times[lab.event] - lab.time_s) > max(lab.tolerance_s, slack)
                elif isinstance(lab, EventSpanLabel):
                    inside = times[lab.first:lab.last + 1]
                    missed += bool(np.any((inside < lab.t0_s - slack) | (inside > lab.t1_s + slack)))
        return self._remember_figures(memo_key, {"errors": int(missed), "fp": 0, "fn": 0, "n_regions": total,
                                                 "unit": "labels"})

    # ------------------------------------------------------------- prediction
    def _decode(self, item_id, extra=()):
        """The aligner's output for an item under its labels and ``extra`` ones not stored (yet).

        Remembered per model and the labels' content (not their ids), the :data:`DECODES_PER_ITEM`
        most recent per item, so a decode made ahead under the labels an answer would write
        (:meth:`prepare_answers`) serves the redraw and the next question once it is given.
        """
        aligner = self.ensure_model()
        labels = list(self.labels_of(item_id)) + list(extra)
        anchors = self._as_anchors(item_id, labels)
        fixed = np.unique(np.array([lab.event for lab in labels if isinstance(lab, AnchorLabel)], dtype=np.int64))
        key = (item_id, self.model_id,
               tuple(sorted((a.event, round(a.time_s, 9), round(a.tolerance_s, 9)) for a in anchors)),
               tuple(fixed.tolist()))
        hit = self._decoded.get(key)
        if hit is not None:
            return hit
        with self._decode_lock:
            hit = self._decoded.get(key)
            if hit is None:
                data = self.engine.data(item_id)
                hit = aligner.align(None, None, data.score, anchors=anchors, features=self.features(item_id),
                                    fixed_events=fixed)
                mine = [k for k in self._decoded if k[0] == item_id]
                for old in mine[:max(0, len(mine) - DECODES_PER_ITEM + 1)]:
                    del self._decoded[old]
                self._decoded[key] = hit
        return hit

    def prepare_answers(self, question, *, cancel=None) -> int:
        """Decode the question's item under the labels of each answer, ahead of the answer; how many were made.

        An answer anchors one event, and the redraw and the next question on the item both need the
        decode under that anchor: made while the person reads, it is ready when they answer.
        """
        made = 0
        for which in ("model", "runner-up"):
            check_cancel(cancel)
            extra = [lab for lab in question.answers.get(which, ()) if isinstance(lab, (AnchorLabel, EventSpanLabel))]
            if extra:
                self._decode(question.item_id, extra)
                made += 1
        return made

    def _to_frames(self, item_id, times) -> Alignment:
        """Event times (s) as strictly increasing frames of the item's display sequence."""
        positions = self.engine.data(item_id).sequence.positions
        T = positions.shape[0]
        frames = np.clip(np.searchsorted(positions, np.asarray(times) - 0.5 / self.engine.data(item_id).frame_rate),
                         0, T - 1)
        for e in range(1, frames.shape[0]):  # two events inside one display frame: keep them apart
            frames[e] = max(frames[e], frames[e - 1] + 1)
        over = frames[-1] - (T - 1)
        if over > 0:
            frames = np.maximum(frames - over, np.arange(frames.shape[0]))
        return Alignment(frames, T)

    def predict(self, item_id: str, *, cancel=None) -> Prediction:
        check_cancel(cancel)
        out = self._decode(item_id)
        runner = None
        if out.moves is not None:
            runner = self._drawn_rival(item_id, out, out.moves.closest()[0])
        self._uncertainty[item_id] = float(np.exp(-out.margin)) if np.isfinite(out.margin) else 0.0
        return Prediction(item_id=item_id, structure=self._to_frames(item_id, out.event_times_s),
                          model_id=self.model_id, score=0.0, runner_up=runner, margin=float(out.margin),
                          times_s=np.asarray(out.event_times_s), part_runner_ups=self._part_runner_ups(item_id, out))

    def _drawn_rival(self, item_id, out, rival_onsets) -> "Alignment | None":
        """A one-onset move of the decoded states as display frames, or None.

        The event it moves by ``k`` decoding frames is drawn ``k`` frames away from the best alignment's
        refined time, every other event at that time, so the two drawings differ where the move does (the
        move's own frame boundaries would differ from the refined times almost everywhere by a frame).
        """
        if rival_onsets is None:
            return None
        shift = rival_onsets[1:-1] - out.frame_alignment.onsets
        return self._to_frames(item_id, np.asarray(out.event_times_s) + shift / out.frame_rate)

    def _part_runner_ups(self, item_id, out) -> dict:
        """``(first, stop)`` → (runner-up in display frames or None, margin) of each phrase's closest call."""
        if out.moves is None:
            return {}
        parts = {}
        for span in self._spans(item_id):
            rival = out.moves.span(*span)
            parts[span] = (self._drawn_rival(item_id, out, rival.rival_onsets), rival.margin)
        return parts

    # -------------------------------------------------------- active learning
    def parts(self) -> list:
        out = []
        for item_id in self.item_ids():
            out.extend(phrase_parts(item_id, self.engine.data(item_id).score))
        return out

    def _spans(self, item_id) -> list:
        """``(first, stop)`` event range of every phrase part of the item."""
        return [(part.start, part.stop) for part in phrase_parts(item_id, self.engine.data(item_id).score)]

    def question(self, query):
        """The question telling the phrase's alignment from its runner-up: one event's onset (None: nothing moves)."""
        from ..active.questions import alignment_question
        pred = self.predict(query.item_id).for_part(query.start, query.stop)
        if pred.runner_up is None:
            return None
        data = self.engine.data(query.item_id)
        positions = data.sequence.positions
        best_t = self._times(query.item_id, pred)
        # the runner-up is drawn as the best's refined times moved by whole frames: its times are the same move
        runner_t = best_t + positions[pred.runner_up.onsets] - positions[pred.structure.onsets]
        return alignment_question(query, pred.structure.onsets, pred.runner_up.onsets, best_t, runner_t, pred.margin,
                                  score=data.score, n_frames=positions.shape[0],
                                  anchored=self._anchored_events(query.item_id).tolist())

    def part_scores(self, part) -> PartScores:
        """The part's objective under the drawn alignment, against its closest call (the best move of one
        of its unanchored events, all else kept) and its farthest single move (the worst-case proxy)."""
        moves = self._decode(part.item_id).moves
        if moves is None:   # an aligner made without runner-ups: nothing to compare
            return PartScores(best=0.0, size=max(part.stop - part.start, 1))
        return span_part_scores(moves.span(part.start, part.stop))
