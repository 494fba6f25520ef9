import logging
import threading

import pytest

from marginalia.events import EventHub, ItemsChanged, LabelsChanged, ModelChanged, Progress, UndoStateChanged
from marginalia.exceptions import ParameterError


def test_filtering_by_kind_and_unsubscribe():
    hub = EventHub()
    labels, everything = [], []
    unsub = hub.subscribe(labels.append, kinds=[LabelsChanged, UndoStateChanged])
    hub.subscribe(everything.append)
    events = [LabelsChanged("i", ("a",)), ModelChanged("m"), UndoStateChanged(True, False), Progress("t", 1, 2)]
    for e in events:
        hub.emit(e)
    assert labels == [events[0], events[2]]
    assert everything == events
    unsub()
    unsub()  # idempotent
    hub.emit(LabelsChanged("i"))
    assert len(labels) == 2 and len(everything) == 5


def test_a_failing_subscriber_is_logged_and_does_not_stop_others(caplog):
    hub = EventHub()
    got = []

    def broken(event):
        raise RuntimeError("boom")

    hub.subscribe(broken)
    hub.subscribe(got.append)
    with caplog.at_level(logging.ERROR, logger="marginalia.events"):
        hub.emit(ItemsChanged())
    assert got == [ItemsChanged()]
    assert "boom" in caplog.text


def test_events_are_frozen_values():
    e = LabelsChanged("i", ("a",))
    assert e == LabelsChanged("i", ("a",))
    with pytest.raises(AttributeError):
        e.item_id = "j"


def test_bad_arguments():
    hub = EventHub()
    with pytest.raises(ParameterError, match="callback must be callable"):
        hub.subscribe(42)
    with pytest.raises(ParameterError, match="Event subclasses"):
        hub.subscribe(print, kinds=[int])
    with pytest.raises(ParameterError, match="expected an Event"):
        hub.emit("hello")


def test_emit_from_many_threads_while_subscribing():
    hub = EventHub()
    counts = []
    lock = threading.Lock()

    def count(event):
        with lock:
            counts.append(event.done)

    hub.subscribe(count)

    def emitter(k):
        for i in range(200):
            hub.emit(Progress("t", k * 1000 + i, 0))

    def churn():
        for _ in range(200):
            hub.subscribe(lambda e: None)()

    threads = [threading.Thread(target=emitter, args=(k,)) for k in range(4)] + [threading.Thread(target=churn)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(counts) == sorted(k * 1000 + i for k in range(4) for i in range(200))
    assert len(hub) == 1
