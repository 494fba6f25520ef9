"""Per-task glue between the engine, the models and the active-learning code.

The engine keeps one *task* per (task name, data kind): aCGH segmentation,
audio segmentation and audio-to-score alignment learn different models on
different features. A task owns the current parameters of its model, turns
labels into constraints, predicts with a runner-up, updates itself from
labels (perceptron) or refits (SSVM), and scores parts for active learning.
"""

from __future__ import annotations

import threading

from ..exceptions import ParameterError

__all__ = ["TaskRegistry"]


class TaskRegistry:
    """The engine's tasks, created lazily per (task, kind)."""

    def __init__(self, engine):
        self._engine = engine
        self._tasks: dict = {}
        self._lock = threading.RLock()

    def get(self, record):
        """The task of ``record``, created on first use.

        Creating a task imports its module (and through it the decoders and learners) under
        this registry's lock, so that no two threads import those packages at the same time.
        """
        key = (record.task, record.kind)
        with self._lock:
            task = self._tasks.get(key)
            if task is None:
                task = self._make(record.task, record.kind)
                self._tasks[key] = task
            return task

    def peek(self, record):
        """The task of ``record`` if it was already created, else None (never builds one)."""
        with self._lock:
            return self._tasks.get((record.task, record.kind))

    def _make(self, task: str, kind: str):
        if task == "segmentation":
            from .segmentation import SegmentationTask
            return SegmentationTask(self._engine, kind)
        if task == "alignment":
            from .alignment import AlignmentTask
            return AlignmentTask(self._engine, kind)
        raise ParameterError(f"unknown task {task!r}; expected 'segmentation' or 'alignment'")

    def forget(self, key: tuple) -> None:
        """Drop the task of ``(task, kind)``: it is built again, from the newest stored model, on next use."""
        with self._lock:
            self._tasks.pop(key, None)

    def loaded(self) -> list:
        """The tasks built so far (never builds one)."""
        with self._lock:
            return list(self._tasks.values())

    def all(self) -> list:
        with self._lock:
            for rec in self._engine.session.items():
                self.get(rec)
            return list(self._tasks.values())

    def on_labels_changed(self, item_id):
        with self._lock:
            tasks = list(self._tasks.values())
        for task in tasks:
            task.on_labels_changed(item_id)
