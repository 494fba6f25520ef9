"""run_costliest_first: every item once, the costliest started first, stops cleanly."""

import threading
import time

import pytest

from marginalia.exceptions import CancelledError
from marginalia.parallel import run_costliest_first


@pytest.mark.parametrize("n_jobs", [1, 3])
def test_every_item_runs_once_costliest_first_and_reports_on_the_calling_thread(n_jobs):
    started, done, threads = [], {}, set()

    def work(x):
        started.append(x)
        time.sleep(0.005)
        return x * x

    def finished(x, result):
        threads.add(threading.get_ident())
        done[x] = result

    run_costliest_first(work, [1, 5, 2, 4, 3], [1, 5, 2, 4, 3], n_jobs, on_done=finished)
    assert done == {x: x * x for x in range(1, 6)}
    assert set(started[:n_jobs]) == set([5, 4, 3][:n_jobs]) and threads == {threading.get_ident()}


@pytest.mark.parametrize("n_jobs", [1, 2])
def test_a_cancel_before_a_start_stops_the_run_and_propagates(n_jobs):
    started = []
    polls = []

    def stop():
        polls.append(1)
        if len(polls) > 3:
            raise CancelledError("stop")

    with pytest.raises(CancelledError):
        run_costliest_first(lambda x: started.append(x), list(range(10)), [1] * 10, n_jobs,
                            on_done=lambda *_: None, before_start=stop)
    assert len(started) == 3


def test_an_error_of_an_item_propagates():
    def work(x):
        if x == 2:
            raise ValueError("bad item")
        return x

    with pytest.raises(ValueError, match="bad item"):
        run_costliest_first(work, [1, 2, 3], [1, 2, 3], 2, on_done=lambda *_: None)
