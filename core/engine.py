"""The facade the app and the command line call.

An :class:`Engine` wraps one open project (:class:`marginalia.project.Session`) and
adds what a user does with it: import files, label, learn, predict, ask what
to label next and export. It owns no state of its own beyond caches that can
be rebuilt from the project; the Session remains the single owner of items,
labels and models.

Every method is thread-safe: the app calls the slow ones (``update_model``,
``retrain``, ``predict``, ``next_queries``) from worker threads while the GUI
thread edits labels. Slow methods take ``cancel`` (an object with
``is_set()``, e.g. :class:`threading.Event`) and ``progress`` (a callable
``progress(done, total, message)``).
"""

from __future__ import annotations

import dataclasses
import shutil
import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

from . import events as ev
from . import resources
from .exceptions import CancelledError, DataFormatError, InfeasibleLabelsError, ParameterError, WrongTaskError
from .importing import FILE_ROLES as IMPORT_FILE_ROLES
from .items import ItemData, ItemLoader
from .paths import state_dir
from .project import Session
from .tasks import TaskRegistry
from .types import Prediction, Query, SyncAnchorLabel, label_fact, new_id

__all__ = ["Engine", "ItemInfo", "EXPORT_KINDS", "IMPORT_FILE_ROLES", "DEMO_DIR", "state_dir"]

DEMO_DIR = resources.path("demo")

#: export kinds and what they write
EXPORT_KINDS = {
    "annotations-csv": "region labels of aCGH items as annotations.csv (profile.id,chromosome,min,max,annotation)",
    "segments-csv": "predicted segments (profile.id,chromosome,first.position,last.position,probes,mean)",
    "seg": "predicted segments as DNAcopy/IGV .seg (ID chrom loc.start loc.end num.mark seg.mean)",
    "breaks-csv": "predicted changes (profile.id,chromosome,position)",
    "bedgraph": "predicted segment means as a bedGraph track",
    "audacity": "predicted boundaries of audio items as Audacity label tracks (one file per item)",
    "sonic-visualiser": "predictions of audio items as Sonic Visualiser CSV layers (one file per item)",
    "textgrid": "predictions of audio items as Praat TextGrids (one file per item)",
    "jams": "audio segmentations (segment_open) and alignments (note_midi) as JAMS (one file per item)",
    "aligned-midi": "the score MIDI with note times following the audio (one file per item)",
    "alignment-csv": "event,score_time_s,audio_time_s,pitches (one file per item)",
    "bundle": "a dataset bundle: manifest.json, per-item features (.npz), partial labels, sync anchors and the "
              "models",
    "cgh-model": "the current aCGH model as a marginalia-cli model file (predict / evaluate / batch)",
    "sync-model": "the project's learned sync metric as a model file (marginalia-cli sync / carry --model)",
}


@dataclass(frozen=True)
class ItemInfo:
    """What the dataset browser shows about an item."""

    id: str
    name: str
    kind: str
    task: str
    group: Optional[str]
    n_samples: int
    n_labels: int
    has_prediction: bool
    prediction_stale: bool
    uncertainty: Optional[float]
    #: suggested labels waiting to be accepted or rejected (not counted in ``n_labels``)
    n_suggestions: int = 0


def _check_cancel(cancel):
    if cancel is not None and cancel.is_set():
        raise CancelledError("cancelled")


class Engine:
    """One open project and everything a user does with it.

    Use :meth:`create`, :meth:`open` or :meth:`open_demo` rather than the
    constructor.
    """

    def __init__(self, session: Session):
        self.session = session
        self.events: ev.EventHub = session.events
        self._lock = threading.RLock()
        self._loader = ItemLoader(cache_dir=_feature_cache_dir(session))
        self._tasks = TaskRegistry(self)
        self._predictions: dict[str, Prediction] = {}
        # the sync code's memo (marginalia.sync.carry / .anchors): recent recordings' sync features and the
        # aligners of stored sync models, so that an anchor edit recomputes only the path
        self._sync_memo: dict = {}
        self.recovery_: Optional[dict] = None   # what restore_backup brought back from a damaged file
        self._unsubscribe = self.events.subscribe(self._on_event)

    # ------------------------------------------------------------ lifecycle
    @classmethod
    def create(cls, path) -> "Engine":
        """Create a new empty project file at ``path``."""
        return cls(Session.create(str(path)))

    @classmethod
    def open(cls, path, *, read_only: bool = False) -> "Engine":
        """Open an existing project."""
        return cls(Session.open(str(path), read_only=read_only))

    @classmethod
    def restore_backup(cls, backup, path, *, recover_labels: bool = True) -> "Engine":
        """Restore ``backup`` as the project at ``path`` and open it.

        A damaged file at ``path`` is moved aside (``<name>.damaged-<time>``),
        never overwritten; see :class:`marginalia.exceptions.ProjectDamagedError`,
        whose ``backups`` lists the good backups newest first. With
        ``recover_labels``, the label edits the damaged file holds beyond the
        backup are applied as one undoable step
        (:meth:`marginalia.project.Session.recover_labels`); ``recovery_`` on the
        returned engine says what came back and from which file (None when no
        file was moved aside).
        """
        from .project.store import ProjectStore
        restored = ProjectStore.restore_backup(backup, path)
        engine = cls.open(path)
        if restored.damaged is not None:
            engine.recovery_ = {"damaged": str(restored.damaged), "added": 0, "changed": 0, "deleted": 0,
                                "skipped": 0, "items": 0, "edits": 0, "problems": []}
            if recover_labels:
                engine.recovery_.update(engine.session.recover_labels(restored.damaged))
        return engine

    @classmethod
    def open_demo(cls, workdir=None) -> "Engine":
        """Build (or reopen) the embedded demo project in ``workdir``.

        The demo's source files are copied next to the project so that the
        project is self-contained; an existing demo project in ``workdir`` is
        reopened as it was left.
        """
        workdir = Path(workdir) if workdir is not None else _default_demo_dir()
        workdir.mkdir(parents=True, exist_ok=True)
        project = workdir / "demo.marginalia"
        if project.exists():
            return cls.open(project)
        for name in ("profiles.csv", "annotations.csv", "melody.mid", "melody.wav"):
            src = DEMO_DIR / name
            if not src.exists():
                raise DataFormatError("the embedded demo file is missing; reinstall Marginalia "
                                      "(pip install --force-reinstall marginalia-studio)", path=str(src))
            shutil.copy2(src, workdir / name)
        eng = cls.create(project)
        try:
            eng.import_files([workdir / "profiles.csv", workdir / "melody.wav"],
                             scores={str(workdir / "melody.wav"): workdir / "melody.mid"})
            eng.import_labels("annotations-csv", workdir / "annotations.csv")
            eng.session.set_setting("demo", True)
        except Exception:
            eng.close()
            raise
        return eng

    @staticmethod
    def kernels_prepared() -> bool:
        """Whether the numerical kernels are compiled for this install (see :mod:`marginalia.prepare`)."""
        from .prepare import is_prepared
        return is_prepared()

    @staticmethod
    def prepare_kernels(*, progress: Optional[Callable] = None) -> dict:
        """Compile the numerical kernels once, in worker processes (about a minute on 2 cores, first run only).

        ``progress(done, total, name)`` is called after each workload; returns seconds per workload.
        """
        from .prepare import prepare
        return prepare(progress=progress)

    def close(self):
        """Close the project (every edit is already saved)."""
        with self._lock:
            if self._unsubscribe is not None:
                self._unsubscribe()
                self._unsubscribe = None
            self.session.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    @property
    def path(self) -> str:
        return self.session.path

    # ----------------------------------------------------------------- items
    @staticmethod
    def describe_table(path, *, columns=None) -> str:
        """How a copy-number file is read, in one line (layout and column naming), from its first lines.

        See :func:`marginalia.io.cgh_layouts.describe_table`; raises the reader's error when the columns
        cannot be mapped.
        """
        from .io.cgh_layouts import describe_table
        return describe_table(Path(path), columns)

    def import_files(self, paths: Iterable, *, scores: Optional[dict] = None, columns=None,
                     pair_by_stem: bool = True) -> list:
        """Import data files as items.

        Parameters
        ----------
        paths : iterable of path-like
            aCGH ``profiles.csv[.gz]`` (one item per profile and chromosome),
            audio files (WAV/FLAC/OGG/MP3; paired with a MIDI score of the same
            stem given in ``paths`` or ``scores``: one alignment item), or
            generic CSV/TSV series.
        scores : dict, optional
            ``{audio path: score MIDI path}`` pairs given explicitly.
        columns : mapping or str, optional
            Which column of the copy-number tables holds what (see
            :func:`marginalia.io.cgh.read_profiles`); without it the usual spellings, DNAcopy wide
            tables and bedGraph are recognised. Kept with the items, so the project reopens the same way.
        pair_by_stem : bool, default True
            Pair a recording with the score of the same stem among ``paths`` when ``scores`` names none;
            False imports recordings missing from ``scores`` without a score.

        Returns
        -------
        list of str
            The new item ids. Items already in the project (same name and kind, from the
            same file) are not added again.

        Raises
        ------
        DataFormatError
            A file cannot be read: nothing is imported, so a batch with one bad file can
            be fixed and imported again as a whole.
        """
        from .io.cgh_layouts import format_columns
        paths = [Path(p) for p in paths]
        columns = format_columns(columns)
        scores = {str(Path(k)): Path(v) for k, v in (scores or {}).items()}
        from .io.musicxml import SCORE_SUFFIXES
        midis = {p.stem: p for p in paths if p.suffix.lower() in SCORE_SUFFIXES}
        with self._lock:
            specs = []   # read every file before adding anything
            for p in paths:
                if p.suffix.lower() in SCORE_SUFFIXES:
                    continue  # scores are imported with their audio
                score = scores.get(str(p)) or (midis.get(p.stem) if pair_by_stem else None)
                specs.extend((p, spec) for spec in self._loader.describe(p, score_path=score, columns=columns))
            lone = [m for stem, m in midis.items() if not any(q.stem == stem for q in paths if q != m)]
            if lone and not specs:
                raise DataFormatError("a MIDI score needs its audio recording: import the audio file together "
                                      "with the score (same file stem)", path=str(lone[0]))
            present = {(rec.name, rec.kind, _resolved(rec.source_path)) for rec in self.session.items()}
            new_ids = []
            for p, spec in specs:
                if (spec.name, spec.kind, _resolved(p)) in present:
                    continue
                new_ids.append(self.session.add_item(spec.name, spec.kind, spec.task,
                                                     source_path=str(p), meta=spec.meta))
        return new_ids

    def plan_import(self, paths: Iterable, *, columns=None):
        """Recognise files and propose recording -> score pairs, storing nothing (an import dialog's preview).

        See :func:`marginalia.importing.plan_import`; a file that cannot be read is listed with its one-line
        error instead of raising.
        """
        from .importing import plan_import
        plan = plan_import(paths, self._loader, columns=columns)
        present = self._audio_items_by_source()
        for f in plan.of_role("audio"):
            rec = present.get(_resolved(f.path))
            if rec is not None:   # importing it again can only pair it with a score
                f.n_items = 0
                f.summary += ("; already in the project as " + rec.name
                              + (" (aligned to " + Path(rec.meta["score_path"]).name + ")"
                                 if (rec.meta or {}).get("score_path") else " (no score)")
                              + ": a score chosen below is attached to it")
        return plan

    def _audio_items_by_source(self) -> dict:
        return {_resolved(rec.source_path): rec for rec in self.session.items() if rec.kind == "audio"}

    def run_import(self, plan, pairs: Optional[dict] = None, *, columns=None,
                   columns_by_file: Optional[dict] = None) -> dict:
        """Import what ``plan`` (from :meth:`plan_import`) lists, with ``pairs`` overriding its proposed pairs.

        Parameters
        ----------
        plan : ImportPlan
        pairs : dict, optional
            ``{recording path: score path or None}``; recordings left out keep the plan's pair, None imports
            the recording without a score. Scores paired with no recording are not imported.
        columns : mapping or str, optional
            As for :meth:`import_files`.
        columns_by_file : dict, optional
            ``{table path: --columns text}``: the naming and position unit chosen for one copy-number table
            (an import dialog's column mapping). A table the plan could not map (it has a ``table`` preview)
            is imported when it is named here.

        Returns
        -------
        dict
            ``{"items": new item ids, "labels": stored labels, "scored": ids of items already in the project
            that the import paired with a new score}``. A recording already in the project is not added again:
            a score chosen for it is attached (:meth:`attach_score`, one undoable step each). Files whose plan
            entry has an error are skipped; the data files are imported before the label files, which label them.
        """
        from .importing import check_pairs
        chosen = check_pairs(plan, pairs)
        present = self._audio_items_by_source()
        scored = []
        for recording, score in chosen.items():
            rec = present.get(_resolved(recording))
            if rec is not None and score and (rec.meta or {}).get("score_path") != str(Path(score).resolve()):
                self.attach_score(rec.id, score)
                scored.append(rec.id)
        by_file = {str(k): v for k, v in (columns_by_file or {}).items()}
        data = [f.path for f in plan.of_role("profiles", "series", "audio") if f.path not in by_file]
        ids = self.import_files(data, scores={r: s for r, s in chosen.items() if s}, columns=columns,
                                pair_by_stem=False) if data else []
        for f in plan.files:
            if f.path in by_file and (f.role == "profiles" or getattr(f, "table", None) is not None):
                ids += self.import_files([f.path], columns=by_file[f.path], pair_by_stem=False)
        labels = []
        for f in plan.of_role("cgh_labels", "audio_labels"):
            labels += self.import_labels("annotations-csv" if f.role == "cgh_labels" else "auto", f.path)
        return {"items": ids, "labels": labels, "scored": scored}

    def remove_item(self, item_id: str):
        """Remove an item with its labels as one undoable step; returns the step (``undo`` brings both back)."""
        with self._lock:
            rec = self.session.item(item_id)
            n = len(self.session.labels(item_id))
            name = f"removal of {rec.name}" + (f" with its {n} label{'s' if n != 1 else ''}" if n else "")
            step = self.session.edit_item(item_id, None, name=name)
            self._forget_item(item_id)
        return step

    def attach_score(self, item_id: str, score_path):
        """Align an audio item to the score ``score_path`` (MIDI or MusicXML), replacing any score it had.

        One undoable step: the item becomes an alignment item, and its labels (which described the
        recording's segmentation, or the events of the former score) are removed with it; undo brings the
        item as it was and its labels back.

        Raises
        ------
        ParameterError
            The item is not an audio recording.
        DataFormatError
            The score cannot be read (nothing changes).
        """
        from .io.musicxml import read_score
        score_path = Path(score_path)
        with self._lock:
            rec = self.session.item(item_id)
            if rec.kind != "audio":
                raise ParameterError(f"{rec.name} is a {rec.kind} item; only audio recordings take a score")
            score = read_score(score_path)   # a broken score is refused before anything changes
            meta = dict(rec.meta or {}, score_path=str(score_path.resolve()), n_events=score.n_events)
            old = (rec.meta or {}).get("score_path")
            name = (f"replace the score of {rec.name} by {score_path.name}" if old else
                    f"attach score {score_path.name} to {rec.name}")
            n = len(self.labels(item_id, suggestions=True))
            if n:
                name += f" (removing its {n} label{'s' if n != 1 else ''})"
            step = self.session.edit_item(item_id, dataclasses.replace(rec, task="alignment", meta=meta), name=name)
            self._forget_item(item_id)
        return step

    def _forget_item(self, item_id: str) -> None:
        """Drop what is cached about an item whose record changed (its data, score and prediction)."""
        self._loader.forget(item_id)
        self._predictions.pop(item_id, None)

    def items(self) -> list:
        """Every item with its browser summary, in import order."""
        with self._lock:
            labels_by_item, suggested_by_item = {}, {}
            for lab in self.session.labels():
                if isinstance(lab, SyncAnchorLabel):
                    continue
                counts = suggested_by_item if lab.suggested else labels_by_item
                counts[lab.item_id] = counts.get(lab.item_id, 0) + 1
            return [self._info(rec, labels_by_item.get(rec.id, 0), suggested_by_item.get(rec.id, 0))
                    for rec in self.session.items()]

    def item_info(self, item_id: str) -> ItemInfo:
        """The browser summary of one item (what :meth:`items` lists, without visiting every item)."""
        with self._lock:
            return self._info(self.session.item(item_id), len(self.labels(item_id)), len(self.suggestions(item_id)))

    def _info(self, rec, n_labels: int, n_suggestions: int = 0) -> ItemInfo:
        pred = self._predictions.get(rec.id)
        # a task not built yet has made no prediction: listing items must not build one
        # (that imports the learning code and loads the model: seconds on a cold start)
        task = self._tasks.peek(rec)
        return ItemInfo(
            id=rec.id, name=rec.name, kind=rec.kind, task=rec.task,
            group=(rec.meta or {}).get("group"),
            n_samples=int((rec.meta or {}).get("n_samples", 0)),
            n_labels=n_labels,
            n_suggestions=n_suggestions,
            has_prediction=pred is not None,
            prediction_stale=pred is not None and task is not None and pred.model_id != task.model_id,
            uncertainty=None if task is None else task.uncertainty_of(rec.id),
        )

    def item(self, item_id: str):
        """The stored record of an item (id, name, kind, task, source_path, meta)."""
        return self.session.item(item_id)

    def data(self, item_id: str) -> ItemData:
        """The loaded data of an item (sequence, features, score, audio path), cached."""
        return self._loader.load(self.session.item(item_id))

    def sequence(self, item_id: str):
        """The item's display sequence (aCGH logratio in bp, or audio feature frames in s)."""
        return self.data(item_id).sequence

    def spectrogram(self, item_id: str):
        """``(image (F, T) float32 dB, times_s (T,), freqs_hz (F,))`` of an audio item."""
        d = self.data(item_id)
        if d.spectrogram is None:
            raise ParameterError(f"item {item_id!r} ({d.record.kind}) has no spectrogram; only audio items do")
        return d.spectrogram

    def score(self, item_id: str):
        """The item's :class:`~marginalia.types.MidiScore`, or None."""
        return self.data(item_id).score

    def audio_path(self, item_id: str) -> Optional[str]:
        d = self.data(item_id)
        return d.audio_path

    def question_audio(self, question, path) -> list:
        """Write a WAV to ``path`` that plays an alignment question's candidate onsets, and say where they sound.

        The recording around the asked event is played once per answer (the model's onset first,
        then the runner-up's) with a click where that answer puts the onset
        (:func:`marginalia.io.audio.clicked_excerpts`).

        Returns
        -------
        list of (str, float)
            ``(answer, seconds into the file)`` of each click: ``[("model", 0.8), ("runner-up", 2.2)]``.
        """
        from .active.questions import ANSWERS
        from .io.audio import clicked_excerpts, load_audio, write_wav
        rec = self.session.item(question.item_id)
        audio = self.audio_path(question.item_id)
        times = [next((float(lab.time_s) for lab in question.answers.get(which, ()) if hasattr(lab, "time_s")),
                      None) for which in ANSWERS]
        if audio is None or rec.task != "alignment" or None in times:
            raise ParameterError(f"question_audio: {rec.name} has no onset question to play (only a recording "
                                 "aligned to its score has one)")
        y, sr = load_audio(audio)
        signal, at = clicked_excerpts(y, sr, times)
        write_wav(path, signal, sr)
        return list(zip(ANSWERS, at.tolist()))

    # ---------------------------------------------------------------- labels
    def labels(self, item_id: Optional[str] = None, *, suggestions: bool = False) -> list:
        """The labels of one item (of every item when None), oldest first.

        Suggestions (labels carried from another recording and not accepted yet, ``suggested=True``)
        are left out unless ``suggestions``: no model learns from them and no export writes them. Sync
        anchors (which join two recordings) are never listed here: :meth:`sync_anchors` lists them.
        """
        found = [lab for lab in self.session.labels(item_id) if not isinstance(lab, SyncAnchorLabel)]
        return found if suggestions else [lab for lab in found if not lab.suggested]

    def suggestions(self, item_id: Optional[str] = None) -> list:
        """The suggested labels of one item (of every item when None) waiting to be accepted or rejected."""
        return [lab for lab in self.labels(item_id, suggestions=True) if lab.suggested]

    def accept_suggestions(self, label_ids=None, *, item_id: Optional[str] = None) -> list:
        """Make suggestions ordinary labels, as one undoable step; returns the accepted labels.

        Parameters
        ----------
        label_ids : iterable of str, optional
            The suggestions to accept; None: every suggestion of ``item_id`` (of the project when None).
        item_id : str, optional

        Raises
        ------
        ParameterError
            A label that is not a suggestion, or one that contradicts the labels (the message names
            both): nothing is accepted then.
        """
        with self._lock:
            if label_ids is None:
                chosen = self.suggestions(item_id)
            else:
                chosen = [self.session.label(i) for i in label_ids]
                plain = [lab.id for lab in chosen if not lab.suggested]
                if plain:
                    raise ParameterError(f"label {plain[0]!r} is not a suggestion: it is already a label")
            accepted = [dataclasses.replace(lab, suggested=False) for lab in chosen]
            for i, lab in enumerate(accepted):
                self._tasks.get(self.session.item(lab.item_id)).validate_label(lab, pending=accepted[:i])
            name = f"accept {len(accepted)} suggested label{'s' if len(accepted) != 1 else ''}"
            return self.session.edit_labels(changed=accepted, name=name)

    def reject_suggestions(self, label_ids=None, *, item_id: Optional[str] = None) -> int:
        """Delete suggestions (every one of ``item_id``, of the project, when ``label_ids`` is None) as one step;
        returns how many."""
        with self._lock:
            if label_ids is None:
                ids = [lab.id for lab in self.suggestions(item_id)]
            else:
                ids = list(label_ids)
                plain = [i for i in ids if not self.session.label(i).suggested]
                if plain:
                    raise ParameterError(f"label {plain[0]!r} is not a suggestion; delete it as a label")
            if ids:
                self.session.edit_labels(deleted=ids,
                                         name=f"reject {len(ids)} suggested label{'s' if len(ids) != 1 else ''}")
            return len(ids)

    def validate_label(self, label, *, pending=()) -> None:
        """Check a label against its item and the item's labels (and ``pending`` ones to be added with it).

        Raises
        ------
        ParameterError, InfeasibleLabelsError
            Out of range, of the wrong kind for the item, or contradicting its labels (named).
        """
        self._tasks.get(self.session.item(label.item_id)).validate_label(label, pending=list(pending))

    def add_label(self, label):
        """Validate a label against its item and store it (committed before returning)."""
        self._tasks.get(self.session.item(label.item_id)).validate_label(label)
        return self.session.add_label(label)

    def add_labels(self, labels, *, name: Optional[str] = None) -> list:
        """Validate several new labels together and store them as one transaction (one undo step).

        ``name`` names the step in the history (otherwise it is described from its edits).
        """
        with self._lock:
            return self._add_labels(labels, name=name)

    def change_label(self, label):
        self._tasks.get(self.session.item(label.item_id)).validate_label(label)
        return self.session.change_label(label)

    def delete_label(self, label_id: str):
        return self.session.delete_label(label_id)

    def undo(self):
        """Revert this session's latest step; the :class:`~marginalia.project.Step` undone, or None.

        Ctrl+Z reaches only the steps made since the project was opened; edits of earlier
        sessions (yesterday's import) are listed by :meth:`history` and brought back or
        taken back with :meth:`restore`, never by a stray undo.
        """
        return self.session.undo()

    def redo(self):
        """Re-apply the step undone last in this session; the step re-applied, or None."""
        return self.session.redo()

    @property
    def next_undo(self):
        """The step :meth:`undo` would revert now (its ``name``, ``n_labels``...), or None."""
        return self.session.next_undo

    @property
    def next_redo(self):
        """The step :meth:`redo` would re-apply now, or None."""
        return self.session.next_redo

    def history(self) -> list:
        """Every step of the project's history across sessions, oldest first (see :meth:`Session.history`)."""
        return self.session.history()

    def labels_at(self, step_id: int) -> list:
        """The labels as they were right after step ``step_id`` of :meth:`history` (as :meth:`labels` lists them:
        suggestions included, sync anchors not)."""
        return [lab for lab in self.session.labels_at(step_id) if not isinstance(lab, SyncAnchorLabel)]

    def restore(self, step_id: int):
        """Bring the labels back to their state right after step ``step_id``, as ONE new undoable step.

        Returns the new step, or None when the labels already are in that state; see
        :meth:`Session.restore`.
        """
        with self._lock:
            return self.session.restore(step_id)

    @property
    def can_undo(self) -> bool:
        return self.session.can_undo

    @property
    def can_redo(self) -> bool:
        return self.session.can_redo

    def import_labels(self, kind: str, path, *, item: Optional[str] = None) -> list:
        """Import labels from a file or a bundle folder; returns the stored labels.

        Parameters
        ----------
        kind : str
            ``"annotations-csv"`` (aCGH regions), ``"bundle"`` (a dataset bundle folder), or an audio label
            format: ``"audacity"``, ``"sonic-visualiser"``, ``"textgrid"``, ``"jams"`` or ``"auto"`` (from the
            file's suffix); see :mod:`marginalia.label_files` for how those map onto audio items.
        path : path-like
        item : str, optional
            For audio label files: the name of the item they label (default: the file's name).

        Notes
        -----
        Labels stating what a label of the project already states (the same table imported
        twice) are not stored again. What a file says that cannot be mapped is reported as a warning.
        """
        from .exports import import_labels
        from .label_files import LABEL_FILE_KINDS, labels_from_file
        with self._lock:
            known = {_import_fact(lab) for lab in self.session.labels() if not lab.suggested}
            labels, ids = [], set()
            if kind in LABEL_FILE_KINDS or kind == "auto":
                read = labels_from_file(self, Path(path), kind=kind, item=item)
            else:
                read = import_labels(self, kind, Path(path))
            for lab in read:
                fact = _import_fact(lab)
                if fact not in known:
                    known.add(fact)
                    if lab.id in ids or self.session.has_label(lab.id):
                        # a label of the file whose id the project (or the file) already uses, e.g. a bundle
                        # label moved here since the export: added as a new label, the project's stays
                        lab = dataclasses.replace(lab, id=new_id())
                    ids.add(lab.id)
                    labels.append(lab)
            name = f"import of {len(labels)} label{'s' if len(labels) != 1 else ''} from {Path(path).name}"
            try:
                return self._add_labels(labels, name=name)
            except InfeasibleLabelsError as exc:
                raise _name_the_rows(exc, labels, path) from None

    def accept_prediction(self, item_id: str, start: int, stop: int) -> list:
        """Turn the current prediction inside ``[start, stop)`` into labels."""
        pred = self.prediction(item_id) or self.predict(item_id)
        labels = self._tasks.get(self.session.item(item_id)).labels_from_prediction(item_id, pred, start, stop)
        name = (f"accepted prediction: {len(labels)} label{'s' if len(labels) != 1 else ''} on "
                f"{self.session.item(item_id).name}")
        return self._add_labels(labels, name=name)

    def _add_labels(self, labels: list, name: Optional[str] = None) -> list:
        """Validate new labels together and store them as one transaction (one undo step)."""
        labels = list(labels)
        for i, lab in enumerate(labels):
            if not isinstance(lab, SyncAnchorLabel):   # joins two recordings, checked by marginalia.sync.anchors
                self._tasks.get(self.session.item(lab.item_id)).validate_label(lab, pending=labels[:i])
        if not labels:
            return []
        return list(self.session.add_labels(labels, name=name))

    # -------------------------------------------------------------- learning
    @property
    def current_model_id(self) -> Optional[str]:
        """Id of the newest model of the first task in the project (None before any)."""
        for rec in self.session.items():
            return self.model_id(rec.id)
        return None

    def model_id(self, item_id: str) -> Optional[str]:
        """Id of the current model of the item's task (building the initial model if needed)."""
        task = self._tasks.get(self.session.item(item_id))
        task.ensure_model()
        return task.model_id

    def peek_model_id(self, item_id: Optional[str] = None) -> Optional[str]:
        """The current model id of the item's task (of the first item's when None) if it is loaded.

        Never builds, loads or trains a model, so it is quick enough for the GUI thread; None
        until the task's model is in memory (:meth:`model_id` makes sure it is).
        """
        recs = self.session.items()
        rec = self.session.item(item_id) if item_id is not None else (recs[0] if recs else None)
        task = None if rec is None else self._tasks.peek(rec)
        return None if task is None else task.model_id

    def update_model(self, item_id: str, *, cancel=None) -> str:
        """A fast interactive update (averaged perceptron) from the labels of one item."""
        _check_cancel(cancel)
        task = self._tasks.get(self.session.item(item_id))
        return task.update(item_id, cancel=cancel)

    def retrain(self, *, cancel=None, progress: Optional[Callable] = None, task_name: Optional[str] = None) -> str:
        """A full fit of every task's model from all labels; returns the last model id."""
        model_id = None
        for task in self._tasks.all():
            if task_name is not None and task.name != task_name:
                continue
            if not task.item_ids():
                continue
            model_id = task.fit(cancel=cancel, progress=progress)
        if model_id is None:
            raise ParameterError("nothing to train: the project has no items")
        return model_id

    def model_versions(self, item_id: Optional[str] = None, *, figures: bool = False, cancel=None) -> list:
        """The stored models of the item's task (of every task when None), oldest first.

        Parameters
        ----------
        item_id : str, optional
        figures : bool, default False
            Also score every version of a segmentation task on today's labelled regions (``errors``);
            each version decodes the labelled items without their labels (seconds on a large cohort:
            call it off the GUI thread). Remembered per model and label set.

        Returns
        -------
        list of dict
            ``id``, ``task`` (e.g. ``"segmentation/cgh"``), ``created`` (unix time), ``n_labels``
            (labels it was fitted on; None for models saved before this was recorded),
            ``trained_by`` (``"initial"``, ``"perceptron"``, ``"ssvm"``, ``"recipe"``, ``"revert"``,
            ``"prior"``, ``"coupled"``, ``"weak-supervision"``, ``"weak-supervision-prior"``),
            ``reverted_from`` (the model a revert copied, or None),
            ``rho`` (a coupled fit's coupling to the prior, else None) and ``current`` (the model
            predictions are made with now). On a recording (and when ``item_id`` is None) the versions of
            the project's sync metric follow, with ``task`` ``"sync"`` and ``fitted_from`` (what they were
            fitted from: :func:`marginalia.sync.anchors.sync_versions`). With ``figures``, ``errors``:
            ``{"errors", "fp", "fn", "n_regions"}`` by :func:`marginalia.metrics.region_errors` on the
            labelled regions, or None (an alignment task, the sync metric, or a version that cannot be read).
        """
        kind = None
        if item_id is not None:
            rec = self.session.item(item_id)
            kind = f"{rec.task}/{rec.kind}"
        out = []
        newest: dict = {}
        for m in self.session.models():
            params = m.params or {}
            if kind is not None and params.get("task") != kind:
                continue
            n = params.get("n_labels")
            if params.get("role") in ("prior", "prior-data", "sync"):   # a prior or the sync metric: no version of a task
                continue
            out.append({"id": m.id, "task": params.get("task", m.task), "created": m.created,
                        "n_labels": n if isinstance(n, int) else None, "trained_by": params.get("trained_by", ""),
                        "reverted_from": params.get("reverted_from"), "rho": params.get("rho"), "current": False})
            newest[out[-1]["task"]] = out[-1]
        loaded = {task.key: task.model_id for task in self._tasks.loaded()}
        for row in out:
            cur = loaded.get(row["task"])
            row["current"] = row["id"] == cur if cur is not None else row is newest[row["task"]]
        if item_id is None or self.session.item(item_id).kind == "audio":
            from .sync.anchors import sync_versions
            out += sync_versions(self)      # the project's sync metric: its versions beside the recording's task's
        if figures:
            task = self._task_for_figures(item_id)
            for row in out:
                _check_cancel(cancel)
                row["errors"] = None if task is None or row["task"] != task.key else \
                    task.label_errors_of_version(row["id"], cancel=cancel)
        return out

    def better_model_than(self, model_id: str) -> Optional[dict]:
        """The stored model of the same task fitted on the most labels, if it has more than ``model_id``.

        A retrain on fewer labels (after the labels were undone, say) does not replace such a model
        silently: it stays in the project, this names it, and :meth:`revert_model` brings it back.
        """
        versions = self.model_versions()
        mine = next((v for v in versions if v["id"] == model_id), None)
        if mine is None or mine["n_labels"] is None:
            return None
        rivals = [v for v in versions if v["task"] == mine["task"] and v["n_labels"] is not None
                  and v["n_labels"] > mine["n_labels"]]
        return max(rivals, key=lambda v: (v["n_labels"], v["created"])) if rivals else None

    def revert_model(self, model_id: str) -> str:
        """Make the stored model ``model_id`` the current one again; returns the id of the new current model.

        The old model is saved again as the newest model of its task (``trained_by="revert"``,
        ``reverted_from=model_id``), so the history of models keeps every version and reverting
        to the model that was current before takes it back.
        """
        import time as _time
        with self._lock:
            rec = self.session.load_model(model_id)
            params = dict(rec.params or {}, trained_by="revert", reverted_from=rec.id)
            new_id = f"{rec.id.split('@')[0]}@{_time.time_ns() // 1000}"
            self.session.save_model(new_id, rec.task, params, rec.blob, rec.label_hash)
            kind = str(params.get("task", "")).partition("/")[2]
            self._tasks.forget((rec.task, kind))
        return new_id

    # ------------------------------------------------------------ prior model
    def start_from(self, path, *, rho: Optional[float] = None, prefer: Optional[str] = None, cancel=None) -> dict:
        """Start one of this project's models from another project's model or a model file.

        The model is read and checked by the model-file loader (:func:`marginalia.models.files.load_model`),
        its bytes are stored in the project with their provenance (:mod:`marginalia.prior`), and it
        becomes the current model of the task of its item kind (a new model version,
        ``trained_by="prior"``): the next predictions are the prior's. A score aligner (from
        ``marginalia-cli train --task alignment`` or a project's alignment task) starts the alignment
        task: retrains fit from its scorers and towards them (:mod:`marginalia.prior`). Segmentation retrains couple the
        project's labels to it with ``rho`` (Lou et al. 2014, eq. 1.9): from another project whose
        labelled items can be read, those items are stored too and a retrain fits both datasets
        (:class:`~marginalia.learners.transfer.TransferSSVM`); from a model file, the source stays frozen
        at the prior (:func:`marginalia.prior.coupled_ssvm_settings`). Choosing another prior replaces
        it; :meth:`forget_prior` removes it.

        Parameters
        ----------
        path : path-like
            A model file (``marginalia-cli train``, File ▸ Export ▸ aCGH model) or a ``.marginalia`` project.
            A sync model file (``train --task sync``, File ▸ Export ▸ sync metric) becomes the sync metric of a
            project with recordings instead (:func:`marginalia.sync.anchors.import_sync_model`; its dict has
            ``task`` ``"sync"``). From a project with a sync metric, this project (with recordings) takes that
            metric too, as a new version of its sync metric: the dict's ``sync`` (or, when the project has no model
            of this project's tasks, the sync metric alone, as from a sync model file).
        rho : float, optional
            Coupling (finite, >= 0; default :data:`marginalia.prior.DEFAULT_RHO`, the recipe's coupling of platforms).
            Not used by the alignment task (stored as None).
        prefer : str, optional
            A task key (e.g. ``"alignment/audio"``; the app's current item's task) looked for first in a
            source *project* that has models of several of this project's tasks. A model file is for one task.

        Returns
        -------
        dict
            :meth:`prior` of the task (``task``, ``source``, ``rho``, ``model_id``...), with ``version``: the
            id of the new current model.

        Raises
        ------
        UsageError, WrongTaskError, DataFormatError
            The file is missing, of another task or other features, or not a model: nothing changes.
        """
        import hashlib
        import io as _io
        import time as _time

        import numpy as np

        from .prior import DEFAULT_RHO, PRIOR_SETTING, PRIOR_TASK_KEYS, is_project_file, read_prior
        rho = DEFAULT_RHO if rho is None else rho
        try:
            rho = float(rho)
        except (TypeError, ValueError):
            rho = float("nan")
        if not 0 <= rho < float("inf"):
            raise ParameterError(f"rho: expected a finite coupling >= 0, got {rho!r}")
        if self.session.read_only:
            raise ParameterError("the project is open read-only: it cannot store a prior model")
        if Path(path).resolve() == Path(self.path).resolve():
            from .exceptions import UsageError
            raise UsageError(f"{path}: is this project itself; choose another project or a model file")
        from .models.files import model_file_task
        # the metric of every sync and carry, no task's prior (a project without recordings: refused as a prior)
        if model_file_task(path) == "sync" and any(r.kind == "audio" for r in self.session.items()):
            from .sync.anchors import import_sync_model
            _check_cancel(cancel)
            with self._lock:
                return import_sync_model(self, path)
        # another project's sync metric comes along with its task's model (or alone, when it has no such model)
        sync_found = None
        if any(r.kind == "audio" for r in self.session.items()) and is_project_file(path):
            from .sync.anchors import read_project_sync_metric
            sync_found = read_project_sync_metric(path)
        first = {}       # prior kind ("cgh", "audio", "series", "alignment") -> the first item of its task
        for r in self.session.items():
            first.setdefault("alignment" if r.task == "alignment" else r.kind, r)
        first = dict(sorted(first.items(), key=lambda kv: PRIOR_TASK_KEYS.get(kv[0]) != prefer))
        n_features = {kind: self._tasks.get(r).features(r.id).shape[1] for kind, r in first.items()
                      if kind != "alignment"}
        _check_cancel(cancel)
        try:
            prior = read_prior(path, list(first), n_features=n_features)
        except WrongTaskError:
            if sync_found is None:
                raise
            from .sync.anchors import import_project_sync_metric
            _check_cancel(cancel)
            with self._lock:
                return import_project_sync_metric(self, path, sync_found)
        _check_cancel(cancel)
        if prior.kind == "alignment":
            rho = None
        with self._lock:
            task = self._tasks.get(first[prior.kind])
            record_id = f"prior-{hashlib.sha256(prior.blob).hexdigest()[:16]}"
            if not task._stored(record_id):
                self.session.save_model(record_id, task.name, {"task": f"prior:{task.key}", "role": "prior",
                                                               **prior.provenance},
                                        prior.blob, "prior")
            entry = {**prior.provenance, "model_id": record_id, "rho": rho, "added": _time.time()}
            if prior.source_data is not None:   # the source's labelled items: eq. 1.9's second dataset
                data_id = f"prior-data-{hashlib.sha256(prior.source_data).hexdigest()[:16]}"
                if not task._stored(data_id):
                    self.session.save_model(data_id, task.name, {"task": f"prior-data:{task.key}",
                                                                      "role": "prior-data"},
                                            prior.source_data, "prior")
                entry["data_id"] = data_id
            priors = dict(self.session.get_setting(PRIOR_SETTING) or {})
            priors[task.key] = entry
            self.session.set_setting(PRIOR_SETTING, priors)
            # the prior becomes the task's current model: a version of its own, as a revert makes one
            arrays = prior.task_arrays()
            buf = _io.BytesIO()
            np.savez(buf, **arrays)
            ids = task.item_ids()
            params = dict(task._params(), trained_by="prior", prior=record_id,
                          n_labels=sum(len(self.labels(i)) for i in ids))
            version = f"{task.name[:3]}-prior-{_time.time_ns() // 1000}"
            self.session.save_model(version, task.name, params, buf.getvalue(), self.session.labels_hash(ids))
            self._tasks.forget((task.name, task.kind))
            for i in ids:
                self._predictions.pop(i, None)
            sync = None
            if sync_found is not None:
                from .sync.anchors import import_project_sync_metric
                sync = import_project_sync_metric(self, path, sync_found)
        out = dict(self.prior(task_key=task.key) or {}, version=version)
        if sync is not None:
            out["sync"] = sync
        return out

    def prior(self, item_id: Optional[str] = None, *, task_key: Optional[str] = None) -> Optional[dict]:
        """The prior model of the item's task (of ``task_key``; of the first item's when both are None), or None.

        Returns
        -------
        dict or None
            ``task``, ``model_id`` (its stored record), ``rho``, ``source`` (the file it was read from),
            ``source_kind`` (``"model file"`` or ``"project"``), ``sha256``, ``features``, ``learner``,
            ``n_labels`` (labels it was fitted on, when recorded), ``added`` (unix time); from a project,
            ``data_id``, ``source_items`` and ``source_samples`` when its labelled items were copied (retrains
            are then eq. 1.9 over both datasets), else ``source_labels`` saying why not.
        """
        from .prior import PRIOR_SETTING
        if task_key is None:
            recs = self.session.items()
            rec = self.session.item(item_id) if item_id is not None else (recs[0] if recs else None)
            if rec is None:
                return None
            task_key = f"{rec.task}/{rec.kind}"
        entry = (self.session.get_setting(PRIOR_SETTING) or {}).get(task_key)
        return None if not entry else dict(entry, task=task_key)

    def forget_prior(self, item_id: Optional[str] = None, *, task_key: Optional[str] = None) -> Optional[dict]:
        """Stop coupling retrains to the task's prior model; returns what was forgotten (None: there was none).

        The current model stays as it is (the next retrain fits the labels alone); the prior's
        stored record stays in the project's model history, so choosing it again is possible.
        """
        from .prior import PRIOR_SETTING
        entry = self.prior(item_id, task_key=task_key)
        if entry is None:
            return None
        with self._lock:
            priors = dict(self.session.get_setting(PRIOR_SETTING) or {})
            priors.pop(entry["task"], None)
            self.session.set_setting(PRIOR_SETTING, priors)
        return entry

    def prior_figures(self, item_id: Optional[str] = None, *, cancel=None) -> Optional[dict]:
        """Label errors of the prior and of the current model on the task's labelled regions (None: no prior).

        Returns
        -------
        dict or None
            ``{"prior": {"errors", "fp", "fn", "n_regions"}, "current": {...}, "model_id": current model}``;
            each model decodes every labelled item without its labels and is scored by
            :func:`marginalia.metrics.region_errors` against them.
        """
        entry = self.prior(item_id)
        if entry is None:
            return None
        task = self._task_for_figures(item_id)
        if task is None:
            return None
        task.ensure_model()
        rec = self.session.load_model(entry["model_id"])
        return {"prior": task.label_errors_of_file(rec.blob, rec.id, cancel=cancel),
                "current": task.label_errors_of_version(task.model_id, cancel=cancel), "model_id": task.model_id}

    def _task_for_figures(self, item_id):
        recs = self.session.items()
        rec = self.session.item(item_id) if item_id is not None else (recs[0] if recs else None)
        if rec is None or rec.task not in ("segmentation", "alignment"):
            return None
        return self._tasks.get(rec)

    def prediction(self, item_id: str) -> Optional[Prediction]:
        """The cached prediction of an item (None if never predicted)."""
        return self._predictions.get(item_id)

    def predict(self, item_id: str, *, cancel=None) -> Prediction:
        """Decode the item with the current model, obeying every label, with its runner-up."""
        _check_cancel(cancel)
        task = self._tasks.get(self.session.item(item_id))
        pred = task.predict(item_id, cancel=cancel)
        self._predictions[item_id] = pred
        self.events.emit(ev.PredictionChanged(item_id=item_id, model_id=pred.model_id))
        return pred

    def predict_all(self, *, cancel=None, progress: Optional[Callable] = None) -> dict:
        ids = [rec.id for rec in self.session.items()]
        out = {}
        for i, item_id in enumerate(ids):
            _check_cancel(cancel)
            out[item_id] = self.predict(item_id, cancel=cancel)
            if progress is not None:
                progress(i + 1, len(ids), f"predicted {i + 1}/{len(ids)}")
        return out

    # -------------------------------------------------------- active learning
    def next_queries(self, n: int = 10, *, strategy: str = "best-vs-2nd", task_name: Optional[str] = None,
                     cancel=None) -> list:
        """The ``n`` parts where a label is expected to help most, best first.

        Each task (aCGH segmentation, audio segmentation, alignment) measures uncertainty on its
        own scale, so their rankings are interleaved rather than merged by value: every task's
        most uncertain part first (the more uncertain of those first), then every task's
        second, and so on. With one task this is its own ranking. ``task_name`` keeps one task's
        questions: its name (``"alignment"``) or its key (``"segmentation/cgh"``, kind included).
        """
        if n < 1:
            raise ParameterError(f"next_queries: n must be >= 1, got {n}")
        queries: list[Query] = []
        for task in self._tasks.all():
            if task_name is not None and task_name not in (task.name, getattr(task, "key", None)):
                continue
            if task.item_ids():
                ranked = sorted(task.queries(n, strategy=strategy, cancel=cancel), key=lambda q: -q.uncertainty)
                queries.extend(dataclasses.replace(q, rank=i) for i, q in enumerate(ranked))
        queries.sort(key=lambda q: (q.rank, -q.uncertainty))
        return [Query(q.item_id, q.start, q.stop, q.uncertainty, q.strategy, rank=i)
                for i, q in enumerate(queries[:n])]

    def question(self, query: Query, *, cancel=None):
        """The question a person answers about ``query``'s part in one look, or None when nothing is disputed.

        It narrows the part to where the best structure and its runner-up disagree and lists
        the labels each answer writes (:class:`marginalia.active.questions.Question`): count
        labels on that window for a segmentation, one event's anchor for an alignment. The
        question names the model it was asked under (``model_id``).
        """
        _check_cancel(cancel)
        task = self._tasks.get(self.session.item(query.item_id))
        question = task.question(query)
        # the model it was asked under: the task's model after the call (the call may have fitted the first one)
        return None if question is None else dataclasses.replace(question, model_id=task.model_id)

    def carry_labels(self, source_id: str, target_ids, *, aligner=None, cancel=None, progress=None,
                     as_suggestions: bool = False):
        """Carry every label of one recording onto other recordings of the same music, as one undoable step.

        See :func:`marginalia.sync.carry.carry_between_items` (each target aligned to the source
        by the sync aligner, the labels mapped through the path; nothing stored on cancel or conflict).
        With ``as_suggestions`` they are stored as suggestions the person accepts
        (:meth:`accept_suggestions`), moves or rejects (:meth:`reject_suggestions`).

        Returns
        -------
        CarryReport
            ``stored`` labels, ``per_target`` counts, ``skipped`` reasons, ``already`` (stated before).
        """
        from .sync.carry import carry_between_items
        return carry_between_items(self, source_id, target_ids, aligner=aligner, cancel=cancel, progress=progress,
                                   as_suggestions=as_suggestions)

    def sync_recordings(self, reference_id: str, target_id: str, *, aligner=None, question: bool = False,
                        cancel=None):
        """Align two recordings of the project to each other (:func:`marginalia.sync.carry.sync_between_items`).

        Returns
        -------
        RecordingComparison
            ``path.map_times(reference_times_s)`` gives where those moments fall in the target; with
            ``question``, ``question`` says where an anchor would change the path most (best vs second).
        """
        from .sync.carry import sync_between_items
        return sync_between_items(self, reference_id, target_id, aligner=aligner, cancel=cancel, question=question)

    def sync_state(self, reference_id: str, target_id: str) -> tuple:
        """What :meth:`sync_recordings` of the pair depends on besides the audio (its anchors, the sync model's id,
        options and weights), hashable; equal to the ``state`` of a comparison made since when nothing changed
        (:func:`marginalia.sync.carry.sync_state`)."""
        from .sync.carry import sync_state
        return sync_state(self, reference_id, target_id)

    # ---------------------------------------------------------- sync anchors
    def sync_anchors(self, reference_id: str, target_id: str) -> list:
        """The stored anchors between two recordings, seen from ``reference_id``, in reference time order.

        Returns
        -------
        list of SyncAnchorLabel
            ``reference_s`` on ``reference_id``, ``target_s`` on ``target_id`` (anchors stored the other way
            round come flipped, with their ids).
        """
        from .sync.anchors import pair_anchors
        return pair_anchors(self, reference_id, target_id)

    def add_sync_anchor(self, reference_id: str, target_id: str, reference_s: float, target_s: float):
        """Store an anchor between two recordings (one undoable step; every later sync of the pair passes through
        it); returns it. One that crosses another anchor of the pair or lies past an end is refused in one line."""
        from .sync.anchors import add_anchor
        with self._lock:
            return add_anchor(self, reference_id, target_id, reference_s, target_s)

    def add_sync_anchors(self, reference_id: str, target_id: str, times, *, sources=None) -> list:
        """Store several anchors between two recordings as ONE undoable step (all or none); returns them.

        ``times`` (K, 2): ``(reference_s, target_s)``; ``sources``: where each came from, named by a refusal
        (:func:`marginalia.sync.anchors.add_anchors`). Anchors that cross each other or the pair's stored ones,
        or lie past an end, are refused in one line and nothing is stored."""
        from .sync.anchors import add_anchors
        with self._lock:
            return add_anchors(self, reference_id, target_id, times, sources=sources)

    def move_sync_anchor(self, anchor_id: str, reference_id: str, reference_s: float, target_s: float):
        """Move a stored anchor, seen from ``reference_id`` (one undoable step); returns it so seen."""
        from .sync.anchors import move_anchor
        with self._lock:
            return move_anchor(self, anchor_id, reference_id, reference_s, target_s)

    def delete_sync_anchors(self, anchor_ids) -> int:
        """Delete sync anchors as one undoable step; returns how many."""
        from .sync.anchors import delete_anchors
        with self._lock:
            return delete_anchors(self, anchor_ids)

    def learn_sync_metric(self, *, cancel=None, progress: Optional[Callable] = None, options=None):
        """Learn the project's sync metric from its sync anchors and its score-aligned pairs, and store it.

        See :func:`marginalia.sync.anchors.learn_sync_metric`; later :meth:`sync_recordings` and
        :meth:`carry_labels` use it. Nothing is stored on cancel.

        Returns
        -------
        SyncMetricReport
            ``model_id``, what it learned from (``n_anchor_pairs``, ``n_anchors``, ``n_score_pairs``,
            ``n_matched``) and the learned weights; ``summary()`` says it in one line.
        """
        from .sync.anchors import learn_sync_metric
        return learn_sync_metric(self, cancel=cancel, progress=progress, options=options)

    @property
    def sync_model_id(self) -> Optional[str]:
        """Id of the project's learned sync model (None: syncs use the Euclidean cost)."""
        from .sync.anchors import sync_model_id
        return sync_model_id(self)

    def prepare_answers(self, question, *, cancel=None) -> int:
        """Compute ahead what either answer to ``question`` will need, while the person reads it.

        For an alignment question, the item's decode under the anchor each answer writes: the
        redraw and the next question after the answer then come from memory. Other tasks learn
        from an answer (their model changes), so there is nothing to compute ahead. Returns how
        many results were prepared.
        """
        _check_cancel(cancel)
        task = self._tasks.get(self.session.item(question.item_id))
        prepare = getattr(task, "prepare_answers", None)
        return 0 if prepare is None else int(prepare(question, cancel=cancel))

    def answer(self, question, which: str) -> list:
        """Store the labels of ``which`` answer (``"model"`` or ``"runner-up"``) of ``question`` as one undo step.

        Exactly the labels ``question.answers[which]`` lists (fresh copies), less those the item
        already holds; returns the stored labels.
        """
        from .active.questions import ANSWERS
        if which not in ANSWERS:
            raise ParameterError(f"answer: expected one of {ANSWERS}, got {which!r}")
        with self._lock:
            held = {label_fact(lab) for lab in self.labels(question.item_id)}
            labels = [dataclasses.replace(lab, id="", created=0.0) for lab in question.answers[which]
                      if label_fact(lab) not in held]
            who = "the model" if which == "model" else "the runner-up"
            name = f"answer: {who} is right on {self.session.item(question.item_id).name}"
            return self._add_labels(labels, name=name)

    def _task_of(self, item_id: Optional[str]):
        """The task of ``item_id`` (else of the first item) if it exists yet, else None.

        Never builds a task (that imports the learners and restores the model: a second on a
        cold start), so the GUI thread may ask; a task not built yet has had no query round.
        """
        recs = self.session.items()
        rec = self.session.item(item_id) if item_id is not None else (recs[0] if recs else None)
        return None if rec is None else self._tasks.peek(rec)

    def learning_curve(self, item_id: Optional[str] = None) -> list:
        """Rows ``{labels, mean_uncertainty, time}`` recorded at each query round of one task.

        The task of ``item_id`` (of the first item's when None): each task counts its own
        labels and measures uncertainty on its own scale, so their curves are not joined.
        """
        task = self._task_of(item_id)
        return [] if task is None else list(task.curve)

    def stopping_signal(self, item_id: Optional[str] = None) -> dict:
        """``{"eta": float|None, "fired": bool, "evidence": str}`` of the task of ``item_id`` (see above)."""
        task = self._task_of(item_id)
        if task is None:
            return {"eta": None, "fired": False,
                    "evidence": "no items" if not self.session.items() else "no question asked yet"}
        return task.stopping_signal()

    # ---------------------------------------------------------------- export
    def export(self, kind: str, path, *, force: bool = False) -> list:
        """Write an export of the project; returns the written paths.

        Nothing already at ``path`` is overwritten or deleted, except a previous Marginalia export
        when ``force`` is true (:func:`export_plan` says beforehand what will happen).
        """
        if kind not in EXPORT_KINDS:
            raise ParameterError(f"export: unknown kind {kind!r}; expected one of {sorted(EXPORT_KINDS)}")
        from .exports import export
        return export(self, kind, Path(path), force=force)

    @staticmethod
    def export_plan(kind: str, path, *, force: bool = False):
        """What an export of ``kind`` to ``path`` would do (an :class:`~marginalia.export_target.ExportTarget`).

        Raises the :class:`UsageError` the export itself would raise when ``path`` may not be written.
        """
        if kind not in EXPORT_KINDS:
            raise ParameterError(f"export: unknown kind {kind!r}; expected one of {sorted(EXPORT_KINDS)}")
        from .export_target import check_target
        from .exports import layout_of
        return check_target(Path(path), layout=layout_of(kind), kind=kind, force=force)

    # ---------------------------------------------------------------- events
    def _on_event(self, event):
        if isinstance(event, ev.ItemsChanged):   # an item edit (or its undo) may have changed its data
            for item_id in event.item_ids:
                self._forget_item(item_id)
        if isinstance(event, (ev.LabelsChanged,)):
            self._tasks.on_labels_changed(getattr(event, "item_id", None))


def _import_fact(label) -> tuple:
    """What an imported label states (:func:`label_fact`); a sync anchor's the same from either recording."""
    if isinstance(label, SyncAnchorLabel) and label.target_id < label.item_id:
        label = label.flipped()
    return label_fact(label)


def _name_the_rows(exc, labels, path) -> DataFormatError:
    """Re-word a conflict met while importing a table so that it names the file and the rows."""
    from .io.cgh import CghRegionLabel, describe_annotation
    from .types import describe_label
    rows = [describe_annotation(lab) if isinstance(lab, CghRegionLabel) else describe_label(lab)
            for lab in labels if lab.id in exc.label_ids]
    what = "; ".join(rows) if rows else "labels already in the project"
    return DataFormatError(f"the file contradicts the project's labels ({what}): {exc}. Nothing was imported; "
                           "fix or remove the conflicting rows, or delete the conflicting labels first",
                           path=str(path))


def _feature_cache_dir(session) -> Optional[Path]:
    """Audio features are cached beside the project (``<project>.features/``); none when read-only."""
    if session.read_only:
        return None
    p = Path(session.path)
    return p.with_name(p.name + ".features")


def _default_demo_dir() -> Path:
    return state_dir() / "demo"


def _resolved(path) -> Optional[str]:
    """An item's source path in one spelling (absolute, symlinks resolved), to recognise a re-import."""
    return None if path is None else str(Path(path).resolve())
