"""An in-memory stand-in for ``marginalia.engine.Engine`` with the same public surface.

It lets the window tests check the app's own behaviour (mouse, keys, workers, redraws)
quickly and deterministically; ``test_demo.py`` drives the real engine.
"""

from __future__ import annotations

import dataclasses
import json
import threading
import types

import numpy as np

from marginalia import events as ev
from marginalia.active.questions import alignment_question, segmentation_question
from marginalia.engine import ItemInfo
from marginalia.exceptions import DataFormatError, ParameterError
from marginalia.types import (
    Alignment,
    AnchorLabel,
    BoundaryLabel,
    Prediction,
    Query,
    RegionKind,
    RegionLabel,
    Segmentation,
)

from .synthetic import audio_item, cgh_sequence

# the browser's rows are the real engine's ItemInfo
FakeInfo = ItemInfo


class FakeEngine:
    """Two aCGH items and one audio+score item; the 'model' learns the true changes on retrain."""

    def __init__(self, path="fake.marginalia"):
        self.path = str(path)
        self.events = ev.EventHub()
        self._lock = threading.RLock()
        self.seqs = {"cgh-a": cgh_sequence(200, 0, (60, 140)), "cgh-b": cgh_sequence(150, 1, (90,))}
        self.truth = {"cgh-a": [60, 140], "cgh-b": [90]}
        seq, image, times, freqs, score = audio_item()
        self.seqs["aud"] = seq
        self.audio = (image, times, freqs)
        self.the_score = score
        self._labels = {}
        self._undo, self._redo = [], []
        self._preds = {}
        self.model_n = 0
        self.trained = False
        self.calls = []
        self._versions = []
        self._note_version("initial")

    # ---- items
    def items(self):
        out = []
        for i, seq in self.seqs.items():
            p = self._preds.get(i)
            out.append(FakeInfo(i, seq.name + f" [{i}]", "audio" if i == "aud" else "cgh",
                                "alignment" if i == "aud" else "segmentation", None, seq.n_samples,
                                sum(1 for lab in self._labels.values() if lab.item_id == i), p is not None,
                                p is not None and p.model_id != self.current_model_id,
                                {"cgh-a": 0.7, "cgh-b": 0.3, "aud": 0.5}[i]))
        return out

    def item_info(self, item_id):
        return next(i for i in self.items() if i.id == item_id)

    def item(self, item_id):
        from types import SimpleNamespace
        kind = "audio" if item_id == "aud" else "cgh"
        meta = {"profile_id": "1", "chromosome": item_id[-1]} if kind == "cgh" else {}
        return SimpleNamespace(id=item_id, name=self.seqs[item_id].name, kind=kind, meta=meta)

    def sequence(self, item_id):
        return self.seqs[item_id]

    def spectrogram(self, item_id):
        if item_id != "aud":
            raise ParameterError(f"item {item_id!r} has no spectrogram")
        return self.audio

    def score(self, item_id):
        return self.the_score if item_id == "aud" else None

    def audio_path(self, item_id):
        return None

    # ---- labels
    def labels(self, item_id=None, *, suggestions=False):
        return [lab for lab in self._labels.values() if (item_id is None or lab.item_id == item_id)
                and (suggestions or not lab.suggested)]

    def suggestions(self, item_id=None):
        return [lab for lab in self._labels.values() if (item_id is None or lab.item_id == item_id)
                and lab.suggested]

    def _check(self, label):
        T = self.seqs[label.item_id].n_samples
        if isinstance(label, RegionLabel) and label.stop > T:
            raise ParameterError(f"RegionLabel.stop: got {label.stop}, expected <= {T}")
        if isinstance(label, BoundaryLabel) and label.index >= T:
            raise ParameterError(f"BoundaryLabel.index: got {label.index}, expected < {T}")

    def _apply(self, old, new):
        if old is not None:
            del self._labels[old.id]
        if new is not None:
            self._labels[new.id] = new
        item = (new or old).item_id
        self.events.emit(ev.LabelsChanged(item, ((new or old).id,)))
        self.events.emit(ev.UndoStateChanged(self.can_undo, self.can_redo))

    def add_label(self, label):
        self._check(label)
        self._undo.append((None, label))
        self._redo.clear()
        self._apply(None, label)
        return label

    def change_label(self, label):
        self._check(label)
        old = self._labels[label.id]
        self._undo.append((old, label))
        self._redo.clear()
        self._apply(old, label)
        return label

    def delete_label(self, label_id):
        old = self._labels[label_id]
        self._undo.append((old, None))
        self._redo.clear()
        self._apply(old, None)

    def add_labels(self, labels):
        """Several labels as one undo step (stored on the undo stack as a list of steps)."""
        labels = list(labels)
        for lab in labels:
            self._check(lab)
        self._undo.append([(None, lab) for lab in labels])
        self._redo.clear()
        for lab in labels:
            self._apply(None, lab)
        return labels

    def undo(self):
        if not self._undo:
            return False
        entry = self._undo.pop()
        self._redo.append(entry)
        for old, new in reversed(entry if isinstance(entry, list) else [entry]):
            self._apply(new, old)
        return True

    def redo(self):
        if not self._redo:
            return False
        entry = self._redo.pop()
        self._undo.append(entry)
        for old, new in (entry if isinstance(entry, list) else [entry]):
            self._apply(old, new)
        return True

    @staticmethod
    def _step(entry):
        pairs = entry if isinstance(entry, list) else [entry]
        n = len(pairs)
        return types.SimpleNamespace(name=f"edit of {n} label{'s' if n != 1 else ''}", n_labels=n,
                                     effect=f"{n} changed")

    @property
    def next_undo(self):
        return self._step(self._undo[-1]) if self._undo else None

    @property
    def next_redo(self):
        return self._step(self._redo[-1]) if self._redo else None

    @property
    def can_undo(self):
        return bool(self._undo)

    @property
    def can_redo(self):
        return bool(self._redo)

    # ---- learning
    @property
    def current_model_id(self):
        return f"model-{self.model_n}"

    def model_id(self, item_id):
        return self.current_model_id

    def peek_model_id(self, item_id=None):
        return self.current_model_id

    def _note_version(self, how):
        import time
        self._versions.append({"id": self.current_model_id, "task": "segmentation/cgh", "created": time.time(),
                               "n_labels": len(self._labels), "trained_by": how, "reverted_from": None})

    def model_versions(self, item_id=None, *, figures=False, cancel=None):
        """Every model this stand-in made, oldest first, as ``Engine.model_versions`` lists them."""
        rows = [dict(v, current=v["id"] == self.current_model_id) for v in self._versions]
        if figures:   # the stand-in's figures: one error fewer per version, on one region per label
            n = len(self.labels())
            for k, row in enumerate(rows):
                row["errors"] = {"errors": max(n - k, 0), "fp": 0, "fn": max(n - k, 0), "n_regions": n}
        return rows

    def prior(self, item_id=None, *, task_key=None):
        return None

    def prior_figures(self, item_id=None, *, cancel=None):
        return None

    def update_model(self, item_id, *, cancel=None):
        self.calls.append(("update", item_id))
        self.model_n += 1
        self._note_version("perceptron")
        self.events.emit(ev.ModelChanged(self.current_model_id))
        return self.current_model_id

    def retrain(self, *, cancel=None, progress=None):
        self.calls.append(("retrain",))
        for k in range(3):
            if progress:
                progress(k + 1, 3, "fitting")
        self.trained = True
        self.model_n += 1
        self._note_version("ssvm")
        return self.current_model_id

    def prediction(self, item_id):
        return self._preds.get(item_id)

    def predict(self, item_id, *, cancel=None):
        seq = self.seqs[item_id]
        T = seq.n_samples
        labs = self.labels(item_id)
        if item_id == "aud":
            E = self.the_score.n_events
            onsets = np.linspace(0, T - E, E).astype(int)
            for lab in labs:
                if isinstance(lab, AnchorLabel) and lab.event < E:
                    onsets[lab.event] = min(seq.index_of(lab.time_s), T - E + lab.event)
            for e in range(1, E):          # repair: strictly increasing, room for the rest
                onsets[e] = max(onsets[e], onsets[e - 1] + 1)
            for e in range(E - 2, -1, -1):
                onsets[e] = min(onsets[e], onsets[e + 1] - 1)
            best = Alignment(onsets, T)
            ru_on = best.onsets.copy()
            if E > 1 and ru_on[1] + 1 < (ru_on[2] if E > 2 else T):
                ru_on[1] += 1
            pred = Prediction(item_id, best, self.current_model_id, 1.0, Alignment(ru_on, T), 0.25)
        else:
            changes = set(self.truth[item_id]) if self.trained else set()
            for lab in labs:
                if isinstance(lab, BoundaryLabel):
                    changes.add(lab.index)
            for lab in labs:
                if isinstance(lab, RegionLabel):
                    inside = {c for c in changes if lab.start < c < lab.stop}
                    if lab.kind in (RegionKind.ZERO, RegionKind.SAME):
                        changes -= inside
                    elif not inside:
                        changes.add((lab.start + lab.stop) // 2)
            best = Segmentation(sorted(changes) + [T])
            ru = Segmentation(sorted(changes | {T // 2}) + [T]) if T // 2 not in changes else \
                Segmentation(sorted(changes - {T // 2}) + [T])
            pred = Prediction(item_id, best, self.current_model_id, 1.0, ru, 0.5)
        self._preds[item_id] = pred
        self.events.emit(ev.PredictionChanged(item_id, pred.model_id))
        return pred

    def next_queries(self, n=10, *, strategy="best-vs-2nd", task_name=None, cancel=None):
        qs = [Query("cgh-b", 40, 120, 0.9, strategy), Query("cgh-a", 20, 80, 0.6, strategy),
              Query("aud", 0, 3, 0.4, strategy)]
        if task_name is not None:
            qs = [q for q in qs if task_name == ("alignment/audio" if q.item_id == "aud" else "segmentation/cgh")]
        return [dataclasses.replace(q, rank=i) for i, q in enumerate(qs[:n])]

    def question(self, query, *, cancel=None):
        q = self._question(query)
        return None if q is None else dataclasses.replace(q, model_id=self.current_model_id)

    def _question(self, query):
        pred = self.predict(query.item_id)
        seq = self.seqs[query.item_id]
        if query.item_id == "aud":
            pos = seq.positions
            return alignment_question(query, pred.structure.onsets, pred.runner_up.onsets,
                                      pos[pred.structure.onsets], pos[pred.runner_up.onsets], pred.margin,
                                      score=self.the_score, n_frames=seq.n_samples,
                                      anchored=[lab.event for lab in self.labels(query.item_id)
                                                if isinstance(lab, AnchorLabel)])
        return segmentation_question(query, pred.structure.breakpoints, pred.runner_up.breakpoints, pred.margin,
                                     positions=seq.positions, units=seq.units, item_name=query.item_id)

    def prepare_answers(self, question, *, cancel=None):
        self.calls.append(("prepare_answers", question.item_id))
        return 0

    def answer(self, question, which):
        self.calls.append(("answer", which))
        return self.add_labels([dataclasses.replace(lab, id="", created=0.0) for lab in question.answers[which]])

    def learning_curve(self, item_id=None):
        return [{"labels": 0, "mean_uncertainty": 1.0}, {"labels": len(self._labels), "mean_uncertainty": 0.5}]

    def stopping_signal(self, item_id=None):
        return {"eta": 0.1, "fired": False, "evidence": "2 rounds"}

    def accept_prediction(self, item_id, start, stop):
        pred = self._preds.get(item_id) or self.predict(item_id)
        inside = [c for c in pred.structure.breakpoints if start < c < stop]
        kind = RegionKind.ZERO if not inside else RegionKind.ONE if len(inside) == 1 else RegionKind.AT_LEAST_ONE
        return [self.add_label(RegionLabel(item_id=item_id, start=start, stop=stop, kind=kind))]

    # ---- files
    def import_files(self, paths):
        for p in paths:
            raise DataFormatError("expected a header 'profile.id,chromosome,position,logratio'", path=str(p),
                                  where="line 1")
        return []

    def export(self, kind, path, *, force=False):
        rows = [{"item_id": lab.item_id, "start": lab.start, "stop": lab.stop, "kind": lab.kind.value}
                for lab in self._labels.values() if isinstance(lab, RegionLabel)]
        with open(path, "w") as fh:
            json.dump(rows, fh)
        return [str(path)]

    def import_labels(self, kind, path):
        try:
            with open(path) as fh:
                rows = json.load(fh)
            labels = [RegionLabel(item_id=r["item_id"], start=r["start"], stop=r["stop"], kind=r["kind"])
                      for r in rows]
        except (ValueError, KeyError, TypeError) as exc:
            raise DataFormatError(f"not a label file ({exc})", path=str(path)) from None
        return [self.add_label(lab) for lab in labels]

    def close(self):
        pass
