"""Run one function over many items, locally or on a Dask cluster, resumably.

The unit of work is a :class:`BatchTask`: a unique key and a few small,
picklable arguments (file paths, a profile id and a chromosome) -- never the
data itself, so a worker reads its own input and the scheduler ships bytes,
not arrays. The task function runs on the worker, writes the item's output
files itself (with :func:`atomic_write_text`) and returns a small JSON-able
summary.

After a task succeeds, :func:`run_batch` writes a *marker* for it (again
atomically) holding the run's ``fingerprint`` (e.g. the model file's hash), the size and
modification time of the item's input files and the files it wrote. A later
run with the same fingerprint skips every item whose marker and files are all
there and whose inputs are unchanged, so an interrupted batch resumes where
it stopped; a different model (another fingerprint) redoes everything, an
edited input file redoes its items.

A failing item never stops the batch: its error is collected in the
:class:`BatchReport` and the caller reports it at the end.

Examples
--------
>>> import tempfile
>>> def square(x, *, out_dir):
...     return {"value": x * x}
>>> out = tempfile.mkdtemp()
>>> rep = run_batch(square, [BatchTask(str(i), (i,)) for i in range(3)], out_dir=out, fingerprint="f")
>>> [rep.results[k]["value"] for k in ("0", "1", "2")], rep.failed
([0, 1, 4], [])
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import time
import traceback
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional

from .atomic import publish
from .checks import check_int
from .exceptions import MarginaliaError, ParameterError, require_extra
from .parallel import run_costliest_first

__all__ = [
    "BatchTask",
    "BatchReport",
    "make_chunks",
    "ClusterError",
    "run_batch",
    "open_client",
    "atomic_write_text",
    "file_sha256",
    "safe_key",
    "marker_path",
]

MARKER_DIR = ".batch"
#: Dask tasks per worker: a few, so a slow worker does not hold the tail while per-task overhead stays small
CHUNKS_PER_WORKER = 3
#: seconds between two looks at the markers of a Dask batch's items in flight
MARKER_POLL_S = 0.25


class ClusterError(MarginaliaError, RuntimeError):
    """The Dask scheduler cannot be reached or the local cluster cannot start."""


@dataclass(frozen=True)
class BatchTask:
    """One item of a batch.

    Parameters
    ----------
    key : str
        Unique name of the item in this batch (used for its marker file).
    args : tuple
        Small picklable positional arguments of the task function.
    cost : float
        Relative amount of work (e.g. the number of samples), used to send
        items to the cluster in chunks of similar cost.
    inputs : tuple of str
        Files the task reads: a finished item is redone when one of them has
        changed (size or modification time) since.
    """

    key: str
    args: tuple = ()
    cost: float = 1.0
    inputs: tuple = ()


@dataclass
class BatchReport:
    """What a batch did.

    Attributes
    ----------
    done : list of str
        Keys computed in this run, in completion order.
    skipped : list of str
        Keys whose output was already there with the same fingerprint.
    failed : list of (str, str)
        ``(key, one-line error)`` of the items that failed.
    results : dict
        ``key -> summary`` returned by the task function (also for skipped items,
        read back from their markers).
    wall_s : float
        Wall time of the run in seconds.
    cpu_s : float
        CPU seconds the items took on their threads (summed over workers).
    """

    done: list = field(default_factory=list)
    skipped: list = field(default_factory=list)
    failed: list = field(default_factory=list)
    results: dict = field(default_factory=dict)
    wall_s: float = 0.0
    cpu_s: float = 0.0

    @property
    def ok(self) -> bool:
        return not self.failed


# ------------------------------------------------------------------ files


def atomic_write_text(path, text: str) -> Path:
    """Write ``text`` to ``path`` through a temporary file and a rename.

    A reader (or a resumed batch) sees either the old file or the complete new
    one, never a half-written file, even if the process is killed. (No fsync:
    the guarantee is against interrupted processes, not power loss, and an
    fsync per item would dominate the cost of small items.)
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    publish(path, lambda tmp: tmp.write_text(text, encoding="utf-8", newline=""))
    return path


def file_sha256(path) -> str:
    """Hex SHA-256 of a file's bytes."""
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")


def safe_key(key: str) -> str:
    """A file-name-safe version of ``key`` (unique: a short hash is appended when characters were replaced)."""
    cleaned = _UNSAFE.sub("_", key).strip("._") or "item"
    if cleaned != key:
        cleaned += "-" + hashlib.sha1(key.encode("utf-8")).hexdigest()[:8]
    return cleaned


def marker_path(out_dir, key: str) -> Path:
    """Where the marker of item ``key`` lives under ``out_dir``."""
    return Path(out_dir) / MARKER_DIR / f"{safe_key(key)}.json"


def _read_marker(out_dir, key: str, fingerprint: str) -> Optional[dict]:
    """The marker of a finished item with this fingerprint whose files all exist, else None."""
    path = marker_path(out_dir, key)
    try:
        marker = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(marker, dict) or marker.get("fingerprint") != fingerprint or marker.get("key") != key:
        return None
    for name in marker.get("files", []):
        if not (Path(out_dir) / name).is_file():
            return None
    return marker


def _one_line(exc: BaseException) -> str:
    text = " ".join(str(exc).split())
    if isinstance(exc, MarginaliaError) and text:
        return text
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def _execute(func: Callable, task: BatchTask, out_dir: str, fingerprint: str, debug: bool) -> tuple:
    """Run one task and write its marker; never raises (errors come back as values).

    Returning errors as values keeps Dask from retrying or logging a failed
    item as a crashed task; the batch decides what to report.
    """
    cpu0 = time.thread_time()
    try:
        result = func(*task.args, out_dir=out_dir)
        result = {} if result is None else dict(result)
        files = [str(f) for f in result.pop("files", [])]
        marker = {"key": task.key, "fingerprint": fingerprint, "files": files, "result": result,
                  "finished": time.time()}
        atomic_write_text(marker_path(out_dir, task.key), json.dumps(marker, sort_keys=True))
        return task.key, True, result, time.thread_time() - cpu0
    except Exception as exc:  # noqa: BLE001 - one item's failure must not stop the batch
        message = _one_line(exc)
        if debug:
            message += "\n" + traceback.format_exc()
        return task.key, False, message, time.thread_time() - cpu0


def _execute_many(func: Callable, tasks: list, out_dir: str, fingerprints: list, debug: bool) -> list:
    """:func:`_execute` for a chunk of tasks (one Dask task) and their fingerprints, in order."""
    return [_execute(func, task, out_dir, fp, debug) for task, fp in zip(tasks, fingerprints)]


def _input_stamp(paths) -> str:
    """Size and modification time of each input file (what ``make`` and ``rsync`` compare), hashed."""
    parts = []
    for path in paths:
        try:
            st = os.stat(path)
            parts.append(f"{os.path.abspath(path)}|{st.st_size}|{st.st_mtime_ns}")
        except OSError:
            parts.append(f"{path}|missing")
    return hashlib.sha1("\n".join(parts).encode("utf-8")).hexdigest()[:16]


def _task_fingerprint(fingerprint: str, task: BatchTask) -> str:
    return fingerprint if not task.inputs else f"{fingerprint}:{_input_stamp(task.inputs)}"


class _MarkerWatch:
    """Which items of a running Dask batch have written their marker in this run.

    A chunk's future returns only when its last item ends, so progress would jump a chunk
    at a time; each item's marker appears as soon as that item is done. Needs ``out_dir``
    to be visible here (it is for a local cluster, and for a remote one writing to a
    shared folder); otherwise progress simply arrives with the chunks. A marker counts
    when its fingerprint matches and it was written after ``since`` (less a second of
    clock slack), so the markers of an earlier run (``resume=False``) are not taken.
    """

    def __init__(self, out_dir, tasks, fingerprint_of: dict, since: float):
        self._out = Path(out_dir)
        self._key_of = {f"{safe_key(t.key)}.json": t.key for t in tasks}
        self._fingerprint_of = fingerprint_of
        self._since = since - 1.0
        self._counted: set = set()

    def marker(self, key: str) -> Optional[dict]:
        """The marker ``key`` wrote in this run, else None."""
        try:
            if marker_path(self._out, key).stat().st_mtime < self._since:
                return None
        except OSError:
            return None
        return _read_marker(self._out, key, self._fingerprint_of[key])

    def newly_finished(self) -> list:
        """Keys whose marker appeared since the last call and were not counted yet."""
        try:
            names = [e.name for e in os.scandir(self._out / MARKER_DIR)]
        except OSError:
            return []
        out = []
        for name in names:
            key = self._key_of.get(name)
            if key is not None and key not in self._counted and self.marker(key) is not None:
                self._counted.add(key)
                out.append(key)
        return out

    def take(self, key: str) -> bool:
        """Mark ``key`` as counted; True if it already was (its marker was seen first)."""
        if key in self._counted:
            return True
        self._counted.add(key)
        return False


def _outcomes_after_crash(watch: _MarkerWatch, chunk: list, exc: BaseException) -> list:
    """What the items of a chunk whose worker died did, in chunk order.

    An item whose marker was written finished (its result is read back). The first one
    without is the item the worker died on; the chunk's later items were never started.
    """
    out = []
    culprit = None
    for task in chunk:
        marker = watch.marker(task.key)
        if marker is not None:
            out.append((task.key, True, marker.get("result", {}), 0.0))
        elif culprit is None:
            culprit = task.key
            died = ("its worker process died while running it, on every retry (out of memory, or a crash in "
                    "compiled code?)" if type(exc).__name__ == "KilledWorker" else
                    f"the worker running it failed ({_one_line(exc)})")
            out.append((task.key, False, died, 0.0))
        else:
            out.append((task.key, False, f"not run: its worker died on {culprit!r}, earlier in the same chunk; "
                                         f"run the batch again to do it", 0.0))
    return out


def _n_workers(client) -> int:
    try:
        return max(1, len(client.scheduler_info().get("workers", {})))
    except Exception:  # noqa: BLE001 - an odd client: assume one worker
        return 1


def make_chunks(tasks: list, n_chunks: int) -> list:
    """Split tasks into ``n_chunks`` lists of similar total cost, costliest chunk first.

    Greedy longest-processing-time assignment: each task, costliest first,
    goes to the chunk with the least cost so far. One Dask task per chunk
    keeps the scheduling overhead per item small (an aCGH sequence decodes in
    milliseconds), and equal chunks keep the workers finishing together.
    """
    n_chunks = max(1, min(int(n_chunks), len(tasks)))
    order = sorted(range(len(tasks)), key=lambda i: -float(tasks[i].cost))
    loads = [0.0] * n_chunks
    members: list = [[] for _ in range(n_chunks)]
    for i in order:
        k = min(range(n_chunks), key=loads.__getitem__)
        members[k].append(i)
        loads[k] += max(float(tasks[i].cost), 0.0)
    chunks = [[tasks[i] for i in sorted(m)] for m in members if m]
    return sorted(chunks, key=lambda c: -sum(float(t.cost) for t in c))


# ----------------------------------------------------------------- running


def run_batch(func: Callable, tasks: Iterable[BatchTask], *, out_dir, fingerprint: str, client=None,
              progress=None, resume: bool = True, debug: bool = False,
              chunk_size: Optional[int] = None, threads: int = 1) -> BatchReport:
    """Run ``func(*task.args, out_dir=out_dir)`` for every task, skipping finished ones.

    Parameters
    ----------
    func : callable
        A module-level function (picklable) that writes the item's outputs
        under ``out_dir`` and returns a dict; its optional ``"files"`` entry
        lists the written files relative to ``out_dir`` (checked on resume).
    tasks : iterable of BatchTask
        Keys must be unique.
    out_dir : path-like
        The output folder (created if missing); markers go to ``out_dir/.batch``.
    fingerprint : str
        Identifies the run's inputs that change results (e.g. the model hash).
    client : distributed.Client, optional
        Run on this Dask client; in this process when None.
    threads : int, default 1
        Without a client: items run on this many threads of this process, the costliest
        first (the decoders release the GIL; ``func`` must be thread-safe, as the
        command line's per-item functions are).
    progress : marginalia.progress.ProgressBar, optional
        Advanced once per finished item; its total is set to the number of items to run.
        On a Dask client an item is counted when its marker appears (looked for every
        :data:`MARKER_POLL_S` s), not when its whole chunk returns.
    resume : bool
        Skip items already finished with the same fingerprint and unchanged inputs.
    debug : bool
        Keep full tracebacks in the failure messages.
    chunk_size : int, optional
        Items per Dask task. By default the items are split by ``cost`` into
        :data:`CHUNKS_PER_WORKER` chunks of similar cost per worker
        (:func:`make_chunks`). Every item still gets its own marker as soon as
        it finishes, so resuming loses at most the items in flight.

    Returns
    -------
    BatchReport
    """
    tasks = list(tasks)
    keys = [t.key for t in tasks]
    if len(set(keys)) != len(keys):
        dup = next(k for k in keys if keys.count(k) > 1)
        raise ParameterError(f"run_batch: task keys must be unique, got {dup!r} twice")
    if chunk_size is not None:
        check_int(chunk_size, "run_batch: chunk_size", min_val=1)
    if not isinstance(fingerprint, str) or not fingerprint:
        raise ParameterError(f"run_batch: fingerprint must be a non-empty string, got {fingerprint!r}")
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    report = BatchReport()
    t0 = time.perf_counter()
    todo = []
    fingerprint_of = {task.key: _task_fingerprint(fingerprint, task) for task in tasks}
    for task in tasks:
        marker = _read_marker(out_dir, task.key, fingerprint_of[task.key]) if resume else None
        if marker is not None:
            report.skipped.append(task.key)
            report.results[task.key] = marker.get("result", {})
        else:
            todo.append(task)
    if progress is not None:
        progress.set_total(len(todo), skipped=len(report.skipped))
        progress.set_work(sum(max(float(t.cost), 0.0) for t in todo))
    cost_of = {t.key: max(float(t.cost), 0.0) for t in todo}

    def collect(outcome, counted=False):
        key, ok, value, cpu = outcome
        report.cpu_s += cpu
        if ok:
            report.done.append(key)
            report.results[key] = value
        else:
            report.failed.append((key, value))
        if progress is not None and not counted:
            progress.advance(failed=not ok, message=key, work=cost_of.get(key, 1.0))

    if client is None:
        run_costliest_first(lambda task: _execute(func, task, str(out_dir), fingerprint_of[task.key], debug),
                            todo, [t.cost for t in todo], threads if threads > 1 else 1,
                            on_done=lambda _task, outcome: collect(outcome))
    elif todo:
        from distributed import as_completed
        if chunk_size is None:
            chunks = make_chunks(todo, CHUNKS_PER_WORKER * _n_workers(client))
        else:
            chunks = [todo[i:i + chunk_size] for i in range(0, len(todo), chunk_size)]
        watch = _MarkerWatch(out_dir, todo, fingerprint_of, since=time.time())
        futures = client.map(_execute_many, [func] * len(chunks), chunks, [str(out_dir)] * len(chunks),
                             [[fingerprint_of[t.key] for t in c] for c in chunks], [debug] * len(chunks),
                             key=[f"marginalia-{fingerprint[:12]}-{i}-{safe_key(c[0].key)}"
                                  for i, c in enumerate(chunks)],
                             pure=False)
        chunk_of = {fut.key: chunk for fut, chunk in zip(futures, chunks)}
        ac = as_completed(futures)
        while not ac.is_empty():
            if progress is not None and not ac.has_ready():
                # a chunk returns when its last item ends; its items' markers say earlier which are done
                for key in watch.newly_finished():
                    progress.advance(message=key, work=cost_of.get(key, 1.0))
                time.sleep(MARKER_POLL_S)
                continue
            for fut in ac.next_batch(block=True):
                try:
                    outcomes = fut.result()
                except Exception as exc:  # noqa: BLE001 - a worker died: report its items, keep going
                    outcomes = _outcomes_after_crash(watch, chunk_of[fut.key], exc)
                for outcome in outcomes:
                    collect(outcome, counted=watch.take(outcome[0]))
    if progress is not None:
        progress.close()
    report.wall_s = time.perf_counter() - t0
    order = {k: i for i, k in enumerate(keys)}
    report.failed.sort(key=lambda kv: order[kv[0]])
    return report


# ----------------------------------------------------------------- clusters


def configured_scheduler() -> Optional[str]:
    """The scheduler address of Dask's configuration (``DASK_SCHEDULER_ADDRESS`` or a config file), or None.

    The environment is read now (Dask reads it once, when imported).
    """
    if os.environ.get("DASK_SCHEDULER_ADDRESS"):
        return os.environ["DASK_SCHEDULER_ADDRESS"]
    try:
        import dask
    except ImportError:
        return None
    value = dask.config.get("scheduler-address", None)
    return str(value) if value else None


@contextlib.contextmanager
def open_client(scheduler: Optional[str] = None, *, scheduler_file=None, n_workers: Optional[int] = None,
                processes: bool = True, threads_per_worker: int = 1, timeout: float = 5.0) -> Iterator:
    """A Dask client on an existing scheduler or on a new local cluster (closed on exit).

    Parameters
    ----------
    scheduler : str, optional
        Address of a running scheduler (``"tcp://host:8786"``). When None (and no ``scheduler_file``), a
        :class:`distributed.LocalCluster` is started.
    scheduler_file : path-like, optional
        A scheduler file (JSON with the address, as written by ``dask scheduler --scheduler-file``,
        dask-jobqueue or dask-mpi).
    n_workers : int, optional
        Local cluster size; the machine's core count by default.
    processes : bool
        Local cluster: one process per worker (True) or threads in this process.
    threads_per_worker : int
        Local cluster: threads per worker (1: the decoders are single-threaded).
    timeout : float
        Seconds to wait for the scheduler before giving up.

    Raises
    ------
    ClusterError
        The scheduler cannot be reached within ``timeout`` or the cluster cannot start.
    """
    if n_workers is not None:
        check_int(n_workers, "n_workers", min_val=1)
    if not timeout > 0:
        raise ParameterError(f"timeout: expected a positive number of seconds, got {timeout!r}")
    import logging

    require_extra("distributed", "batch", "running on a Dask cluster")
    from distributed import Client, LocalCluster
    cluster = None
    if scheduler_file is not None:
        if not os.path.isfile(scheduler_file):
            raise ParameterError(f"--scheduler-file {str(scheduler_file)!r}: no such file; start the scheduler with "
                                 f"`dask scheduler --scheduler-file {scheduler_file}` first")
        try:
            client = Client(scheduler_file=str(scheduler_file), timeout=timeout)
        except (OSError, TimeoutError, ValueError, KeyError) as exc:
            raise ClusterError(f"cannot reach the Dask scheduler of {scheduler_file} within {timeout:g} s "
                               f"({_one_line(exc)}); is the scheduler still running?") from None
    elif scheduler is not None:
        if not isinstance(scheduler, str) or "://" not in scheduler and ":" not in scheduler:
            raise ParameterError(f"--scheduler: expected an address like tcp://host:8786, got {scheduler!r}")
        try:
            client = Client(scheduler, timeout=timeout)
        except (OSError, TimeoutError, ValueError) as exc:
            raise ClusterError(f"cannot reach the Dask scheduler at {scheduler} within {timeout:g} s "
                               f"({_one_line(exc)}); start it with `dask scheduler` and check the address") from None
    else:
        n = n_workers or os.cpu_count() or 1
        try:
            # the scheduler's own chatter (worker start/stop) is not the user's business
            logging.getLogger("distributed").setLevel(logging.CRITICAL)
            import importlib.util
            # the dashboard needs bokeh; without it there is no link to give
            dashboard = ":0" if importlib.util.find_spec("bokeh") is not None else None
            cluster = LocalCluster(n_workers=n, threads_per_worker=threads_per_worker, processes=processes,
                                   dashboard_address=dashboard, silence_logs=logging.CRITICAL)
            client = Client(cluster, timeout=timeout)
        except (OSError, TimeoutError, RuntimeError) as exc:
            if cluster is not None:
                cluster.close()
            raise ClusterError(f"cannot start a local Dask cluster with {n} workers ({_one_line(exc)})") from None
    try:
        yield client
    finally:
        client.close()
        if cluster is not None:
            cluster.close()
