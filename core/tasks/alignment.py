"""Audio-to-score alignment: the engine's alignment task.

Each audio frame ``t`` is described by ``x_t`` = its chroma (unit norm) and a
quietness value; each score event ``e`` by ``φ_e`` = its pitch classes (unit
norm). A leading *silence* pseudo-event (template: quietness only) absorbs
the audio before the first note, so the first real event need not start at
frame 0. The frame-event score is linear in a matrix ``W`` (thesis eq. 6.1,
``S = X W Φᵀ``), initialised to the identity (plain chroma correlation, no
training) and updated from anchor labels by perceptron steps and full
structured fits.
"""

from __future__ import annotations

import numpy as np

from ..active.parts import phrase_parts
from ..active.uncertainty import PartScores
from ..decoders.alignment import align, align_second_best, alignment_constraints_from_labels
from ..exceptions import ParameterError
from ..types import Alignment, AnchorLabel, EventSpanLabel, Prediction
from .base import EngineTask, check_cancel

__all__ = ["AlignmentTask", "frame_features", "event_templates"]

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
    """Alignment of audio items to their scores."""

    name = "alignment"

    def __init__(self, engine, kind: str):
        super().__init__(engine, kind)
        self.W = None
        self.learning_rate = 0.05
        self.n_updates = 0
        self._decoded: dict = {}

    # --------------------------------------------------------------- features
    def _compute_features(self, data) -> np.ndarray:
        if data.chroma is None or data.score is None:
            raise ParameterError(f"item {data.record.name!r} has no score to align to")
        image = data.spectrogram[0]
        loud = image.max(axis=0)
        loud = loud - loud.max()
        return frame_features(data.chroma, loud)

    def _templates(self, item_id):
        return event_templates(self.engine.data(item_id).score)

    def _frame_rate(self, item_id) -> float:
        return float(self.engine.data(item_id).frame_rate)

    # ------------------------------------------------------------ model state
    def ensure_model(self):
        with self._lock:
            if self.W is None:
                if not self._restore_latest():
                    self.W = np.eye(N_FEATURES)
                    self._commit_model("initial")
            return self.W

    def _state_arrays(self) -> dict:
        return {"W": self.W}

    def _restore_arrays(self, arrays: dict, params: dict) -> None:
        W = np.asarray(arrays["W"], dtype=np.float64)
        if W.shape != (N_FEATURES, N_FEATURES) or params.get("task") != self.key:
            raise ParameterError("alignment model for other features")
        self.W = W

    def _scores(self, item_id, W=None) -> np.ndarray:
        """Frame × (silence + events) score matrix S = X W Φᵀ, shape (T, E + 1)."""
        W = self.ensure_model() if W is None else W
        return self.features(item_id) @ W @ self._templates(item_id).T

    # ----------------------------------------------------------------- labels
    def _constraints(self, item_id, labels, T, E1):
        shifted = []
        for lab in labels:
            if isinstance(lab, AnchorLabel):
                shifted.append(AnchorLabel(item_id=lab.item_id, id=lab.id, event=lab.event + 1, time_s=lab.time_s,
                                           tolerance_s=lab.tolerance_s, created=lab.created, author=lab.author))
            elif isinstance(lab, EventSpanLabel):
                shifted.append(EventSpanLabel(item_id=lab.item_id, id=lab.id, first=lab.first + 1,
                                              last=lab.last + 1, t0_s=lab.t0_s, t1_s=lab.t1_s,
                                              created=lab.created, author=lab.author))
        if not shifted:
            return None
        return alignment_constraints_from_labels(shifted, T, E1, self._frame_rate(item_id))

    def validate_label(self, label, pending=()) -> None:
        """Refuse a label that is out of range or contradicts the item's labels (and ``pending`` new ones)."""
        if not isinstance(label, (AnchorLabel, EventSpanLabel)):
            raise ParameterError(f"an alignment item takes anchor or event-span labels, got {type(label).__name__}")
        score = self.engine.data(label.item_id).score
        last = label.event if isinstance(label, AnchorLabel) else label.last
        if last >= score.n_events:
            raise ParameterError(f"label names event {last} but the score has {score.n_events} events "
                                 f"(0..{score.n_events - 1})")
        X = self.features(label.item_id)
        others = [lab for lab in list(self.labels_of(label.item_id)) + list(pending)
                  if lab.id != label.id and lab.item_id == label.item_id]
        self._constraints(label.item_id, others + [label], X.shape[0], score.n_events + 1)

    def labels_from_prediction(self, item_id, pred, start, stop) -> list:
        """Anchors for the predicted onsets of events ``start..stop-1``."""
        times = self.engine.data(item_id).sequence.positions
        onsets = pred.structure.onsets
        return [AnchorLabel(item_id=item_id, event=e, time_s=float(times[onsets[e]]), tolerance_s=0.05)
                for e in range(max(start, 0), min(stop, len(onsets)))]

    # --------------------------------------------------------------- learning
    def _decode(self, item_id, W, labels):
        S = self._scores(item_id, W)
        cons = self._constraints(item_id, labels, S.shape[0], S.shape[1])
        return S, align(S, constraints=cons).alignment

    def _phi(self, item_id, alignment: Alignment) -> np.ndarray:
        """Joint feature map Σ_t x_t φ_{e(t)}ᵀ, shape (13, 13)."""
        X = self.features(item_id)
        Phi = self._templates(item_id)
        ev = alignment.frame_events()
        return X.T @ Phi[ev]

    def update(self, item_id: str, *, cancel=None) -> str:
        W = self.ensure_model()
        labels = self.labels_of(item_id)
        with self._lock:
            check_cancel(cancel)
            if not labels:
                return self.model_id
            _, y_hat = self._decode(item_id, W, [])
            _, y_star = self._decode(item_id, W, labels)
            if y_hat != y_star:
                T = self.features(item_id).shape[0]
                step = (self._phi(item_id, y_star) - self._phi(item_id, y_hat)) / T
                self.W = W + self.learning_rate * step * N_FEATURES
                self.n_updates += 1
            return self._commit_model("perceptron")

    def fit(self, *, cancel=None, progress=None) -> str:
        """Averaged perceptron passes over every labelled item."""
        self.ensure_model()
        ids = [i for i in self.item_ids() if self.labels_of(i)]
        if not ids:
            return self.model_id
        total = np.zeros_like(self.W)
        n = 0
        passes = 5
        for p in range(passes):
            for item_id in ids:
                check_cancel(cancel)
                self.update(item_id)
                total += self.W
                n += 1
            if progress is not None:
                progress(p + 1, passes, f"alignment pass {p + 1}/{passes}")
        with self._lock:
            self.W = total / n
            return self._commit_model("averaged-perceptron")

    # ------------------------------------------------------------- prediction
    def _unshift(self, a: Alignment, T: int) -> Alignment:
        return Alignment(a.onsets[1:], T)

    def predict(self, item_id: str, *, cancel=None) -> Prediction:
        W = self.ensure_model().copy()
        model_id = self.model_id
        S = self._scores(item_id, W)
        check_cancel(cancel)
        cons = self._constraints(item_id, self.labels_of(item_id), S.shape[0], S.shape[1])
        best, second = align_second_best(S, constraints=cons)
        T = S.shape[0]
        margin = float("inf") if second is None else max(best.score - second.score, 0.0)
        self._uncertainty[item_id] = float(np.exp(-margin)) if second is not None else 0.0
        return Prediction(item_id=item_id, structure=self._unshift(best.alignment, T), model_id=model_id,
                          score=float(best.score),
                          runner_up=None if second is None else self._unshift(second.alignment, T),
                          margin=margin)

    # -------------------------------------------------------- active learning
    def parts(self) -> list:
        out = []
        for item_id in self.item_ids():
            out.extend(phrase_parts(item_id, self.engine.data(item_id).score))
        return out

    def part_scores(self, part) -> PartScores:
        """Best and runner-up scores of the events ``part.start..part.stop-1`` within the whole alignment."""
        labels = self.labels_of(part.item_id)
        key = (part.item_id, self.model_id, tuple(sorted(lab.id for lab in labels)))
        if key not in self._decoded:
            S = self._scores(part.item_id)
            cons = self._constraints(part.item_id, labels, S.shape[0], S.shape[1])
            self._decoded = {key: align_second_best(S, constraints=cons)}  # keep one item's decode
        best, second = self._decoded[key]
        # restrict to the part: the runner-up counts only if it moves an event of the part
        if second is not None:
            a, b = best.alignment.onsets[1:], second.alignment.onsets[1:]
            if not np.any(a[part.start:part.stop] != b[part.start:part.stop]):
                second = None
        return PartScores(best=float(best.score), second=None if second is None else float(second.score),
                          size=part.stop - part.start, scale=1.0)
