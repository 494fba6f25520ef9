"""What every engine task shares: model identity, persistence, queries and the stopping signal."""

from __future__ import annotations

import hashlib
import io
import json
import os
import threading
import time
from collections import OrderedDict

import numpy as np

from .. import events as ev
from ..active.stopping import StoppingCriterion, mean_uncertainty
from ..active.uncertainty import check_strategy, pool_uncertainties, select_batch
from ..exceptions import CancelledError, InfeasibleLabelsError, ParameterError
from ..types import Query, describe_label

__all__ = ["EngineTask", "check_cancel", "conflict_in_user_terms"]

MODEL_FORMAT = 1

#: the stopping signal (Lou et al. 2014, eq. 1.8, relative η over a window of query rounds) reads the mean
#: best-vs-2nd uncertainty of every part scored without its labels (a fixed stopping set, which moves only
#: when the model does). Window and threshold: what ``benchmarks/quality/active.py --model recipe --seeds 10
#: --calibration-seeds 5`` (the engine's aCGH learner) chose on seeds 0-4 for best-vs-2nd on that signal;
#: on seeds 5-9 it stops 0.00-0.22 of the pool from where their curves flatten (mean 0.15; the earlier
#: W=15 gives 0.21 there). The per-sequence penalty replay chose W=20, θ=2e-2 (within 0.02-0.10).
STOPPING_WINDOW = 30
STOPPING_THRESHOLD = 1e-3


#: fitted models remembered by the label set they were fitted on, so undo/redo brings a label set's model back
MODEL_CACHE_SIZE = 32

#: threads that score a pool for queries in tasks whose part scores tolerate concurrent calls (the decoders
#: release the GIL); two is what this kind of machine has to spare beside the GUI thread
QUERY_THREADS = max(1, min(2, os.cpu_count() or 1))


def conflict_in_user_terms(exc, labels, new, sequence, *, why: str = "", rule: str = "",
                           label_id_of=str) -> InfeasibleLabelsError:
    """A decoder's :class:`~marginalia.exceptions.InfeasibleLabelsError` reworded for the person who made ``new``.

    The decoders name the conflicting labels by id; this names them as the Labels panel shows them
    (kinds, positions, events) and keeps the ids in ``label_ids``. ``exc`` is returned unchanged when an
    id is not one of ``labels``.

    Parameters
    ----------
    exc : InfeasibleLabelsError
    labels : list of Label
        Every label of the item the check saw, ``new`` included.
    new : Label
        The label being added or changed.
    sequence : Sequence
        The item's display sequence (positions and units of the description).
    why : str
        Appended to "labels cannot all hold" (e.g. " with segments of at least 3 probes").
    rule : str
        A sentence naming the rule they break, before "Remove or edit one of them".
    label_id_of : callable
        The label id behind an id the decoder names (a task whose decoder sees one label as several
        constraints maps their ids back).
    """
    by_id = {lab.id: lab for lab in labels}
    named = list(dict.fromkeys(label_id_of(i) for i in exc.label_ids))
    if not named or any(i not in by_id for i in named):
        return exc
    said = [("new label: " if i == new.id else "") + describe_label(by_id[i], sequence.positions, sequence.units)
            for i in sorted(named, key=lambda i: i != new.id)]
    rule = f" {rule}" if rule else ""
    return InfeasibleLabelsError(f"labels cannot all hold{why}: {'; '.join(said)}.{rule} Remove or edit one of them.",
                                 named)


def check_cancel(cancel):
    if cancel is not None and cancel.is_set():
        raise CancelledError("cancelled")


class EngineTask:
    """Base of the engine's tasks.

    Subclasses set ``name`` and implement ``features``, ``_initial_state``,
    ``_state_arrays``/``_restore_arrays``, ``validate_label``, ``update``,
    ``fit``, ``predict``, ``parts`` and ``part_scores``.
    """

    name = "task"
    #: whether ``part_scores`` may run on several threads at once (see :data:`QUERY_THREADS`)
    concurrent_part_scores = False

    def __init__(self, engine, kind: str):
        self.engine = engine
        self.kind = kind
        self._lock = threading.RLock()
        self._features: dict = {}
        self._uncertainty: dict = {}
        self.model_id: str | None = None
        self.curve: list = []
        self._stopping = StoppingCriterion(window=STOPPING_WINDOW, threshold=STOPPING_THRESHOLD, relative=True)
        self._last_round = None
        self._without_labels = threading.local()
        self._by_labels: OrderedDict = OrderedDict()   # label-set hash -> (arrays, params, model id), LRU
        self._figures: OrderedDict = OrderedDict()     # (model id, label-set hash) -> the model panel's figures

    # ------------------------------------------------- figures on the labels
    def _recall_figures(self, memo_key):
        """A copy of the figures remembered under ``(model id, label-set hash)``, or None."""
        hit = self._figures.get(memo_key)
        return None if hit is None else dict(hit)

    def _remember_figures(self, memo_key, figures: dict) -> dict:
        """Remember ``figures`` (the 64 most recent) and return a copy."""
        self._figures[memo_key] = figures
        while len(self._figures) > 64:
            self._figures.popitem(last=False)
        return dict(figures)

    # --------------------------------------------------------------- items
    @property
    def key(self) -> str:
        """The task's name in the project store (models are saved under it)."""
        return f"{self.name}/{self.kind}"

    def item_ids(self) -> list:
        return [r.id for r in self.engine.session.items() if r.task == self.name and r.kind == self.kind]

    def labels_of(self, item_id: str) -> list:
        """The item's labels the model learns from and obeys: suggestions are left out until accepted, and sync
        anchors (the sync metric's labels) always."""
        if getattr(self._without_labels, "on", False):  # scoring the fixed stopping set, on this thread only
            return []
        return self.engine.labels(item_id)

    def features(self, item_id: str) -> np.ndarray:
        with self._lock:
            X = self._features.get(item_id)
            if X is None:
                X = self._compute_features(self.engine.data(item_id))
                X.setflags(write=False)
                self._features[item_id] = X
            return X

    def _compute_features(self, data) -> np.ndarray:  # pragma: no cover - abstract
        raise NotImplementedError

    def uncertainty_of(self, item_id: str):
        return self._uncertainty.get(item_id)

    def on_labels_changed(self, item_id):
        pass

    # -------------------------------------------------------- model identity
    def _state_arrays(self) -> dict:  # pragma: no cover - abstract
        raise NotImplementedError

    def _restore_arrays(self, arrays: dict, params: dict) -> None:  # pragma: no cover - abstract
        raise NotImplementedError

    def _params(self) -> dict:
        return {"task": self.key, "format": MODEL_FORMAT}

    def _commit_model(self, how: str) -> str:
        """Store the current parameters as a new model in the project and return its id."""
        arrays = self._state_arrays()
        buf = io.BytesIO()
        np.savez(buf, **arrays)
        blob = buf.getvalue()
        params = self._params()
        # the id names the parameters alone: an update that changes nothing keeps the model (and predictions) fresh
        digest = hashlib.sha256(blob + json.dumps(params, sort_keys=True).encode()).hexdigest()[:16]
        ids = self.item_ids()
        params = dict(params, trained_by=how, n_labels=sum(len(self.labels_of(i)) for i in ids))
        label_hash = self.engine.session.labels_hash(ids)
        model_id = f"{self.name[:3]}-{digest}"
        self._remember(label_hash, arrays, params, model_id)
        if model_id != self.model_id:
            self.model_id = model_id
            if self.engine.session.read_only or self._stored(model_id):
                self.engine.events.emit(ev.ModelChanged(model_id=model_id))
            else:
                self.engine.session.save_model(model_id, self.name, params, blob, label_hash)
        return model_id

    def _stored(self, model_id: str) -> bool:
        try:
            self.engine.session.load_model(model_id)
        except ParameterError:
            return False
        return True

    def _restore_latest(self) -> bool:
        mine = [m for m in self.engine.session.models(self.name) if (m.params or {}).get("task") == self.key]
        if not mine:
            return False
        rec = max(mine, key=lambda m: m.created)
        full = self.engine.session.load_model(rec.id)
        with np.load(io.BytesIO(full.blob)) as z:
            arrays = {k: z[k] for k in z.files}
        try:
            self._restore_arrays(arrays, rec.params)
        except (KeyError, ValueError, ParameterError):
            return False  # a model for other features: start afresh rather than fail
        self.model_id = rec.id
        if rec.label_hash:
            self._remember(rec.label_hash, arrays, rec.params, rec.id)
        return True

    def _remember(self, label_hash: str, arrays: dict, params: dict, model_id: str) -> None:
        """Keep the parameters fitted on the label set ``label_hash`` (the newest fit of that set wins)."""
        self._by_labels[label_hash] = ({k: np.array(v, copy=True) for k, v in arrays.items()}, dict(params),
                                       model_id)
        self._by_labels.move_to_end(label_hash)
        while len(self._by_labels) > MODEL_CACHE_SIZE:
            self._by_labels.popitem(last=False)

    def _recall(self):
        """Bring back the model last fitted on the current label set (after an undo or redo); its id, or None.

        Stepping the perceptron again would give a label set a different model each time it
        comes back; the remembered one gives it the model (and margins) it had.
        """
        hit = self._by_labels.get(self.engine.session.labels_hash(self.item_ids()))
        if hit is None:
            return None
        arrays, params, model_id = hit
        if model_id != self.model_id:
            self._restore_arrays({k: v.copy() for k, v in arrays.items()}, params)
            self.model_id = model_id
            self.engine.events.emit(ev.ModelChanged(model_id=model_id))
        return model_id

    # ------------------------------------------------------- active learning
    def parts(self) -> list:  # pragma: no cover - abstract
        raise NotImplementedError

    def part_scores(self, part):  # pragma: no cover - abstract
        raise NotImplementedError

    def question(self, query):  # pragma: no cover - abstract
        """The :class:`~marginalia.active.questions.Question` narrowing ``query``, or None when nothing differs."""
        raise NotImplementedError

    def queries(self, n: int, *, strategy: str = "best-vs-2nd", cancel=None) -> list:
        """The ``n`` most uncertain parts of this task's items (overlapping parts suppressed)."""
        check_strategy(strategy)
        parts = self.parts()
        if not parts:
            return []
        task = self
        models = set()      # the models the parts were scored with (one, unless an update came meanwhile)

        class _Scorer:
            def part_scores(self, part):
                check_cancel(cancel)
                scores = task.part_scores(part)
                models.add(task.model_id)
                return scores

        q = pool_uncertainties(parts, _Scorer(), strategy, random_state=0, n_jobs=self._query_threads())
        if strategy == "best-vs-2nd" and models == {self.model_id}:
            self._note_item_uncertainties(parts, q)
        chosen = select_batch(parts, q, n, suppress="overlap", random_state=0)
        self._record_round(parts, q, strategy, _Scorer())
        return [Query(parts[i].item_id, parts[i].start, parts[i].stop, float(q[i]), strategy, rank)
                for rank, i in enumerate(chosen)]

    def _note_item_uncertainties(self, parts, q) -> None:
        """An item scored whole by a query round gets that uncertainty (the model did not change meanwhile).

        So the Dataset browser can sort every item by margin after one ranking, not only the
        items drawn in this session; and after a retrain it shows the new model's margins, not
        those of the model an earlier ranking or prediction used (the whole item's part score is
        the prediction's margin: the numbers are the same).
        """
        for part, value in zip(parts, q):
            if part.kind == "chromosome":       # the part is the whole item
                self._uncertainty[part.item_id] = float(value)

    def _query_threads(self) -> int:
        return QUERY_THREADS if self.concurrent_part_scores else 1

    #: whether the stopping set rescores labelled parts without their labels; a task whose part scores are
    #: costly to recompute that way (an alignment decodes the whole performance) keeps its query scores
    stopping_without_labels = False

    def stopping_uncertainties(self, parts, uncertainties, strategy, scorer) -> np.ndarray:
        """Best-vs-2nd uncertainty of every part scored without its labels: the fixed stopping set.

        Parts of items without labels reuse ``uncertainties`` when they were computed by best-vs-2nd;
        the others are rescored (labelled items with ``labels_of`` returning nothing on this thread).
        """
        q = np.asarray(uncertainties, dtype=np.float64)
        labelled = {i for i in self.item_ids() if self.labels_of(i)} if self.stopping_without_labels else set()
        redo = [k for k, p in enumerate(parts) if strategy != "best-vs-2nd" or p.item_id in labelled]
        if not redo:
            return q
        out = q.copy()
        task, hide = self, bool(labelled)

        class _WithoutLabels:  # the flag is per thread: set it in whichever thread scores the part
            def part_scores(self, part):
                task._without_labels.on = hide
                try:
                    return scorer.part_scores(part)
                finally:
                    task._without_labels.on = False

        out[redo] = pool_uncertainties([parts[k] for k in redo], _WithoutLabels(), "best-vs-2nd",
                                       n_jobs=self._query_threads())
        return out

    def _record_round(self, parts, uncertainties, strategy, scorer) -> None:
        """One round of the stopping signal, unless nothing changed since the last one.

        The signal's value is the mean of :meth:`stopping_uncertainties`; asking again for queries with
        the same labels and the same model adds no round (it would feed the criterion a flat stretch
        that no label produced).
        """
        n_labels = sum(len(self.labels_of(i)) for i in self.item_ids())
        state = (n_labels, self.model_id, len(parts))
        if state == self._last_round and self.curve:
            return
        fixed = self.stopping_uncertainties(parts, uncertainties, strategy, scorer)
        m = mean_uncertainty(fixed) if len(fixed) else 0.0
        fired = self._stopping.update(float(m))
        self._last_round = state
        self.curve.append({"task": self.key, "labels": n_labels, "mean_uncertainty": float(m),
                           "mean_query_uncertainty": float(mean_uncertainty(uncertainties)) if len(uncertainties)
                           else 0.0, "time": time.time(), "stop": bool(fired)})

    def stopping_signal(self) -> dict:
        return self._stopping.as_dict()
