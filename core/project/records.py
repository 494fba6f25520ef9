"""Plain immutable records returned by the store and the session."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional

__all__ = ["ItemRecord", "ModelRecord", "PredictionRecord", "SourceProblem", "TASKS"]

#: The tasks an item can belong to. No interface makes "warping" items or WarpAnchorLabels (anchors between two
#: sequences of one item); the store keeps the task so such projects still open, and the project's sync model
#: (learned from SyncAnchorLabels, which join two recordings whatever their task) is stored under it.
TASKS = ("segmentation", "alignment", "warping")


@dataclass(frozen=True)
class ItemRecord:
    """One item of a project (a sequence, or an audio/score pair).

    Attributes
    ----------
    id, name, kind, task : str
        ``kind`` says what the data is (``"cgh"``, ``"audio"``, ``"series"``...),
        ``task`` is one of :data:`TASKS`.
    source_path : str or None
        Absolute path of the file the item was imported from.
    source_hash : str or None
        sha256 (hex) of that file when it was imported or relocated.
    meta : dict
        Free-form JSON metadata.
    size : int or None
        Size of the source file in bytes.
    mtime : float or None
        Modification time of the source file.
    created : float
        Unix time the item was added.
    """

    id: str
    name: str
    kind: str
    task: str
    source_path: Optional[str] = None
    source_hash: Optional[str] = None
    meta: dict = field(default_factory=dict)
    size: Optional[int] = None
    mtime: Optional[float] = None
    created: float = 0.0


@dataclass(frozen=True)
class ModelRecord:
    """A stored model and its provenance.

    ``blob`` is ``None`` in the listings of :meth:`Session.models` (loaded on demand).
    """

    id: str
    task: str
    created: float
    label_hash: str
    params: dict
    version: str
    blob: Optional[bytes] = None


@dataclass(frozen=True)
class PredictionRecord:
    """A cached prediction of one item by one model (``blob`` is the caller's serialisation)."""

    item_id: str
    model_id: str
    blob: bytes
    created: float


@dataclass(frozen=True)
class SourceProblem:
    """An item whose source file is missing (``problem="missing"``) or changed (``"changed"``)."""

    item_id: str
    path: str
    problem: str
    expected_hash: Optional[str]
    actual_hash: Optional[str] = None
