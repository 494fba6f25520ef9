"""Items of very different sizes on a few threads, the costliest first.

The segmentation decoders are numba kernels that release the GIL, so threads of one process
decode several chromosomes at once. Chromosome lengths range over two orders of magnitude on a
high-density cohort; starting the longest first keeps every thread busy to the end
(longest-processing-time scheduling).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from concurrent.futures import FIRST_COMPLETED, ThreadPoolExecutor, wait
from typing import Optional

__all__ = ["run_costliest_first"]


def run_costliest_first(fn: Callable, items: Sequence, costs: Sequence[float], n_jobs: int, *,
                        on_done: Callable, before_start: Optional[Callable] = None) -> None:
    """Call ``fn(item)`` for every item on ``n_jobs`` threads, the costliest first.

    Parameters
    ----------
    fn : callable
        ``fn(item) -> result``; must be thread-safe when ``n_jobs > 1``.
    items : sequence
    costs : sequence of float, same length
        What each item costs (e.g. its length); only the order of starting depends on it.
    n_jobs : int
        Threads; 1 runs everything on the calling thread.
    on_done : callable
        ``on_done(item, result)``, on the calling thread, as items finish.
    before_start : callable, optional
        Called on the calling thread just before each item starts; an exception it raises
        (e.g. a cancel) stops the run: no further item starts, running ones are waited for,
        and the exception propagates. An exception of ``fn`` does the same.
    """
    queue = [items[k] for k in sorted(range(len(items)), key=lambda k: -float(costs[k]))]
    n_jobs = max(1, min(int(n_jobs), len(queue)))
    if n_jobs == 1:
        for item in queue:
            if before_start is not None:
                before_start()
            on_done(item, fn(item))
        return
    with ThreadPoolExecutor(max_workers=n_jobs) as pool:
        running: dict = {}
        try:
            while queue or running:
                while queue and len(running) < n_jobs:
                    if before_start is not None:
                        before_start()
                    item = queue.pop(0)
                    running[pool.submit(fn, item)] = item
                finished, _ = wait(running, return_when=FIRST_COMPLETED)
                for fut in finished:
                    on_done(running.pop(fut), fut.result())
        finally:
            for fut in running:
                fut.cancel()
