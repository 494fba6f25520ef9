"""A tiny, thread-safe, Qt-free event hub and the events the engine emits.

The session emits these events after each change has been committed; the app
bridges them to Qt signals on its side (``EventHub.subscribe`` from the GUI
thread, then re-emit through a queued signal).

Examples
--------
>>> hub = EventHub()
>>> seen = []
>>> unsubscribe = hub.subscribe(seen.append, kinds=LabelsChanged)
>>> hub.emit(LabelsChanged("item", ("a",)))
>>> hub.emit(ModelChanged("m"))
>>> [type(e).__name__ for e in seen]
['LabelsChanged']
>>> unsubscribe()
"""

from __future__ import annotations

import inspect
import logging
import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Optional

from .exceptions import ParameterError

__all__ = [
    "Event",
    "ItemsChanged",
    "LabelsChanged",
    "PredictionChanged",
    "ModelChanged",
    "SettingChanged",
    "Progress",
    "UndoStateChanged",
    "EventHub",
]

_log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Event:
    """Base class of every event."""


@dataclass(frozen=True)
class ItemsChanged(Event):
    """Items were added or removed (``item_ids`` lists them; empty means "reload all")."""

    item_ids: tuple = ()


@dataclass(frozen=True)
class LabelsChanged(Event):
    """Labels of ``item_id`` were added, changed or deleted (including by undo/redo)."""

    item_id: str
    label_ids: tuple = ()


@dataclass(frozen=True)
class PredictionChanged(Event):
    """A new prediction of ``item_id`` made by model ``model_id`` was stored."""

    item_id: str
    model_id: str


@dataclass(frozen=True)
class ModelChanged(Event):
    """Model ``model_id`` was saved."""

    model_id: str


@dataclass(frozen=True)
class SettingChanged(Event):
    """Setting ``key`` changed."""

    key: str


@dataclass(frozen=True)
class Progress(Event):
    """Progress of long work: ``done`` of ``total`` steps of ``task``."""

    task: str
    done: int
    total: int
    message: str = ""


@dataclass(frozen=True)
class UndoStateChanged(Event):
    """Whether undo and redo are possible now."""

    can_undo: bool
    can_redo: bool


EventKinds = None | type | Iterable[type]


class EventHub:
    """Deliver events synchronously to subscribers, from any thread.

    Subscribers run in the emitting thread, outside the hub's lock, in the
    order they subscribed. A subscriber that raises is logged and skipped; it
    never breaks the emitter or the other subscribers.
    """

    def __init__(self):
        self._lock = threading.Lock()
        self._subscribers: list = []  # (token, callback, kinds or None)
        self._next_token = 0

    def subscribe(self, callback: Callable[[Event], None], kinds: EventKinds = None) -> Callable[[], None]:
        """Call ``callback(event)`` for every emitted event of the given kinds.

        Parameters
        ----------
        callback : callable
            Called with one argument, the event.
        kinds : Event subclass or iterable of them, optional
            Only these event classes (and their subclasses); all when None.

        Returns
        -------
        unsubscribe : callable
            Call it (any number of times) to stop receiving events.
        """
        if not callable(callback):
            raise ParameterError(f"EventHub.subscribe: callback must be callable, got {callback!r}")
        kinds_tuple = _as_kinds(kinds)
        with self._lock:
            token = self._next_token
            self._next_token += 1
            self._subscribers.append((token, callback, kinds_tuple))

        def unsubscribe():
            with self._lock:
                self._subscribers = [s for s in self._subscribers if s[0] != token]

        return unsubscribe

    def emit(self, event: Event) -> None:
        """Deliver ``event`` to the matching subscribers."""
        if not isinstance(event, Event):
            raise ParameterError(f"EventHub.emit: expected an Event instance, got {event!r}")
        with self._lock:
            subscribers = list(self._subscribers)
        for _, callback, kinds in subscribers:
            if kinds is not None and not isinstance(event, kinds):
                continue
            try:
                callback(event)
            except Exception:  # a broken view must not break the engine
                _log.exception("event subscriber %r failed on %r", callback, event)

    def __len__(self) -> int:
        with self._lock:
            return len(self._subscribers)


def _as_kinds(kinds: EventKinds) -> Optional[tuple]:
    if kinds is None:
        return None
    if inspect.isclass(kinds):
        kinds = (kinds,)
    try:
        kinds = tuple(kinds)
    except TypeError:
        raise ParameterError(f"EventHub.subscribe: kinds must be an Event class, an iterable of them or None, "
                             f"got {kinds!r}") from None
    for k in kinds:
        if not (inspect.isclass(k) and issubclass(k, Event)):
            raise ParameterError(f"EventHub.subscribe: kinds must contain Event subclasses, got {k!r}")
    return kinds
