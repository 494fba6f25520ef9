"""Engine events (emitted from any thread) re-emitted as Qt signals on the GUI thread."""

from __future__ import annotations

from PySide6 import QtCore
from PySide6.QtCore import Qt

from marginalia import events as ev


class EngineBridge(QtCore.QObject):
    """Subscribes to ``engine.events`` and re-emits each event as a queued Qt signal.

    Create it on the GUI thread; its slots then always run there, whatever thread
    the engine emitted from.
    """

    itemsChanged = QtCore.Signal(object)              # tuple of item ids (empty: reload all)
    labelsChanged = QtCore.Signal(str, object)        # item id, label ids
    predictionChanged = QtCore.Signal(str, str)       # item id, model id
    modelChanged = QtCore.Signal(str)
    progress = QtCore.Signal(str, int, int, str)      # task, done, total, message
    undoStateChanged = QtCore.Signal(int, int)     # can undo, can redo (0/1)
    _incoming = QtCore.Signal(object)

    def __init__(self, engine, parent=None):
        super().__init__(parent)
        self._incoming.connect(self._dispatch, Qt.ConnectionType.QueuedConnection)
        self._unsubscribe = engine.events.subscribe(self._incoming.emit)

    def close(self):
        if self._unsubscribe is not None:
            self._unsubscribe()
            self._unsubscribe = None

    def _dispatch(self, event):
        if isinstance(event, ev.ItemsChanged):
            self.itemsChanged.emit(tuple(event.item_ids))
        elif isinstance(event, ev.LabelsChanged):
            self.labelsChanged.emit(event.item_id, tuple(event.label_ids))
        elif isinstance(event, ev.PredictionChanged):
            self.predictionChanged.emit(event.item_id, event.model_id)
        elif isinstance(event, ev.ModelChanged):
            self.modelChanged.emit(event.model_id)
        elif isinstance(event, ev.Progress):
            self.progress.emit(event.task, int(event.done), int(event.total), event.message)
        elif isinstance(event, ev.UndoStateChanged):
            self.undoStateChanged.emit(int(bool(event.can_undo)), int(bool(event.can_redo)))
