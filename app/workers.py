"""Background work: a task runner where newer requests supersede older ones, and live learning.

Nothing slow runs on the GUI thread. Each named *lane* ("update", "retrain", "load", ...)
keeps a generation counter: submitting to a lane cancels the previous request of that lane
(through its cancel event) and results of superseded generations are dropped.
"""

from __future__ import annotations

import inspect
import logging
import threading
import time

from PySide6 import QtCore
from PySide6.QtCore import Qt

from marginalia.exceptions import CancelledError

log = logging.getLogger("marginalia.app.workers")


class _Relay(QtCore.QObject):
    """Carries a job's outcome from the worker thread to the GUI thread (queued signal)."""

    done = QtCore.Signal(object, object)   # result, error
    progress = QtCore.Signal(int, int, str)


class _Job(QtCore.QRunnable):
    def __init__(self, fn, cancel, relay):
        super().__init__()
        self.fn, self.cancel, self.relay = fn, cancel, relay

    def run(self):
        try:
            result, error = self.fn(self.cancel, self._progress), None
        except BaseException as exc:  # delivered to the GUI thread, never lost
            result, error = None, exc
        try:
            self.relay.done.emit(result, error)
        except RuntimeError:  # the window went away while we worked: nobody is listening
            pass

    def _progress(self, done, total, message=""):
        try:
            self.relay.progress.emit(int(done), int(total), str(message))
        except RuntimeError:
            pass


class TaskRunner(QtCore.QObject):
    """Runs ``fn(cancel, progress)`` on a thread pool, one live request per lane.

    Signals
    -------
    busyChanged(lane, busy, description)
    progress(lane, done, total, message)
    """

    busyChanged = QtCore.Signal(str, int, str)  # lane, busy (0/1), description
    progress = QtCore.Signal(str, int, int, str)

    #: lanes whose work takes seconds; they get their own threads so that they never delay
    #: the interactive lanes (loading an item, the per-label update, a prediction), and one
    #: each, so that "Next question" is not queued behind a retrain of a minute
    HEAVY_LANES = ("retrain", "queries")

    def __init__(self, parent=None, *, max_threads: int = 2):
        super().__init__(parent)
        self.pool = QtCore.QThreadPool(self)
        self.pool.setMaxThreadCount(max_threads)
        self.heavy_pool = QtCore.QThreadPool(self)
        self.heavy_pool.setMaxThreadCount(len(self.HEAVY_LANES))
        self._generation = {}
        self._cancel = {}
        self._relays = {}
        self._jobs = {}
        self._busy = {}

    def submit(self, lane: str, fn, *, on_done=None, on_error=None, description: str = ""):
        """Start ``fn(cancel, progress)`` in ``lane``, superseding the lane's previous request.

        ``on_done(result)`` / ``on_error(exc)`` run on the GUI thread, only if no newer request
        was submitted to the lane meanwhile. Cancelled requests call neither.
        Returns the request's cancel event.
        """
        self.cancel(lane)
        gen = self._generation.get(lane, 0) + 1
        self._generation[lane] = gen
        cancel = threading.Event()
        self._cancel[lane] = cancel
        relay = _Relay()
        self._relays[(lane, gen)] = relay

        def finished(result, error, lane=lane, gen=gen):
            self._relays.pop((lane, gen), None)
            self._jobs.pop((lane, gen), None)
            current = self._generation.get(lane) == gen
            if current:
                self._busy.pop(lane, None)
                self.busyChanged.emit(lane, 0, "")
            if not current or isinstance(error, CancelledError) or cancel.is_set():
                return
            if error is not None:
                if on_error is not None:
                    on_error(error)
                else:
                    log.error("background task %s failed: %r", lane, error)
            elif on_done is not None:
                on_done(result)

        relay.done.connect(finished, Qt.ConnectionType.QueuedConnection)
        relay.progress.connect(lambda d, t, m, lane=lane, gen=gen:
                               self.progress.emit(lane, d, t, m) if self._generation.get(lane) == gen else None,
                               Qt.ConnectionType.QueuedConnection)
        self._busy[lane] = description
        self.busyChanged.emit(lane, 1, description)
        job = _Job(fn, cancel, relay)
        job.setAutoDelete(False)     # we keep the Python wrapper alive until the job reported back
        self._jobs[(lane, gen)] = job
        (self.heavy_pool if lane in self.HEAVY_LANES else self.pool).start(job)
        return cancel

    def cancel(self, lane: str):
        """Ask the lane's running request to stop (its result will be dropped)."""
        ev = self._cancel.pop(lane, None)
        if ev is not None:
            ev.set()
        if lane in self._busy:
            self._busy.pop(lane)
            self._generation[lane] = self._generation.get(lane, 0) + 1
            self.busyChanged.emit(lane, 0, "")

    def is_busy(self, lane: str | None = None) -> bool:
        return bool(self._busy) if lane is None else lane in self._busy

    def busy_lanes(self) -> dict:
        return dict(self._busy)

    def shutdown(self, timeout_ms: int = 15000):
        for lane in list(self._cancel):
            self.cancel(lane)
        self.pool.waitForDone(timeout_ms)
        self.heavy_pool.waitForDone(timeout_ms)


def _accepts_task_name(fn) -> bool:
    try:
        return "task_name" in inspect.signature(fn).parameters
    except (TypeError, ValueError):
        return False


class LiveLearner(QtCore.QObject):
    """Keeps the model and the current item's prediction up to date while the user labels.

    After each label edit a fast perceptron update plus prediction runs at once; when the
    user pauses for ``pause_ms`` a full retrain runs. A newer edit supersedes (cancels) an
    older update and any retrain in flight.

    Signals
    -------
    predictionReady(item_id, prediction, seconds)
        ``seconds`` is the time from the edit to the prediction.
    modelUpdated(model_id, kind)
        kind is ``"update"``, ``"retrain"`` (asked for) or ``"auto-retrain"`` (after a pause).
    failed(exc)
    """

    predictionReady = QtCore.Signal(str, object, float)
    modelUpdated = QtCore.Signal(str, str)
    failed = QtCore.Signal(object)

    def __init__(self, engine, runner: TaskRunner, parent=None, *, pause_ms: int = 1500):
        super().__init__(parent)
        self.engine = engine
        self.runner = runner
        self.enabled = True
        self.current_item = None
        self.timer = QtCore.QTimer(self)
        self.timer.setSingleShot(True)
        self.timer.setInterval(pause_ms)
        self.timer.timeout.connect(lambda: self.retrain(automatic=True))
        self.task_of = lambda item_id: None   # item id -> task name ("segmentation", "alignment")
        self.engine_seconds = []              # time spent in update_model + predict, per edit
        #: per edit, perf_counter stamps of its way to the screen: "edited" (stored; "store_s" is how long
        #: storing took on the GUI thread, when known), "started" (a worker
        #: picked it up), "updated" (perceptron step stored), "predicted", "delivered" (GUI thread);
        #: the window adds "drawn", and the GUI thread's CPU seconds for the edit ("edit_cpu_s": store
        #: and show the label) and for drawing the prediction ("draw_cpu_s"). Kept short: the last 200 edits.
        self.timeline = []

    def label_edited(self, item_id: str, *, since: float | None = None):
        """Call after every label edit of ``item_id``; ``since`` is when the edit began (perf_counter).

        The edit's timeline then also says how long storing it took (``store_s``).
        """
        self.runner.cancel("retrain")
        self.runner.cancel("queries")   # stale now, and it would compete with the update
        if not self.enabled:
            return
        t0 = time.perf_counter()
        engine = self.engine
        stamps = {"item": item_id, "edited": t0}
        if since is not None:
            stamps["store_s"] = t0 - since
        self.timeline.append(stamps)
        del self.timeline[:-200]

        def work(cancel, progress):
            t = stamps["started"] = time.perf_counter()
            c = time.thread_time()
            model_id = engine.update_model(item_id, cancel=cancel)
            stamps["updated"] = time.perf_counter()
            pred = engine.predict(item_id, cancel=cancel)
            stamps["predicted"] = time.perf_counter()
            stamps["worker_cpu_s"] = time.thread_time() - c
            return model_id, pred, stamps["predicted"] - t

        def done(result):
            model_id, pred, engine_seconds = result
            stamps["delivered"] = time.perf_counter()
            self.engine_seconds.append(engine_seconds)
            self.modelUpdated.emit(model_id, "update")
            self.predictionReady.emit(item_id, pred, time.perf_counter() - t0)

        self.runner.submit("update", work, on_done=done, on_error=self.failed.emit,
                           description="updating the model")
        self.timer.start()

    def refresh(self, item_id: str):
        """Predict ``item_id`` with the current model (no training)."""
        t0 = time.perf_counter()
        engine = self.engine
        self.runner.submit("predict", lambda cancel, progress: engine.predict(item_id, cancel=cancel),
                           on_done=lambda p: self.predictionReady.emit(item_id, p, time.perf_counter() - t0),
                           on_error=self.failed.emit, description="predicting")

    def retrain(self, *, every_task: bool = False, automatic: bool = False):
        """Full fit of the current item's task (or of every task), then a prediction of the current item.

        ``automatic`` marks the retrain started by a pause (reported as kind ``"auto-retrain"``).
        """
        self.timer.stop()
        engine = self.engine
        item_id = self.current_item
        task = None if every_task else self.task_of(item_id)
        t0 = time.perf_counter()

        def work(cancel, progress):
            if task is not None and _accepts_task_name(engine.retrain):
                model_id = engine.retrain(cancel=cancel, progress=progress, task_name=task)
            else:
                model_id = engine.retrain(cancel=cancel, progress=progress)
            pred = engine.predict(item_id, cancel=cancel) if item_id else None
            return model_id, pred

        def done(result):
            model_id, pred = result
            self.modelUpdated.emit(model_id, "auto-retrain" if automatic else "retrain")
            if pred is not None:
                self.predictionReady.emit(item_id, pred, time.perf_counter() - t0)
            if self.current_item and self.current_item != item_id:
                # the person moved to another item while it ran: what is shown now gets the new model too
                self.refresh(self.current_item)

        self.runner.submit("retrain", work, on_done=done, on_error=self.failed.emit,
                           description="retraining the model")
