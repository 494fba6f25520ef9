"""The single owner of mutable project state: items, labels, models, history; the SQLite store; undo."""

from .codec import dumps_label, label_from_dict, label_to_dict, labels_digest, loads_label
from .records import TASKS, ItemRecord, ModelRecord, PredictionRecord, SourceProblem
from .session import Session
from .store import ProjectStore
from .timeline import Step

__all__ = [
    "Session",
    "ProjectStore",
    "Step",
    "ItemRecord",
    "ModelRecord",
    "PredictionRecord",
    "SourceProblem",
    "TASKS",
    "label_to_dict",
    "label_from_dict",
    "dumps_label",
    "loads_label",
    "labels_digest",
]
