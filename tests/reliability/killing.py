"""Run children that edit a project, SIGKILL them, and check what the reopened project holds.

Shared by ``tests/reliability/test_kill.py`` and ``benchmarks/speed/soak.py --kills``.
The child reports ``B i`` before edit i and ``R i`` once the call returned.
After the kill the project must hold the state after exactly the returned
edits -- or one more, if an edit had begun (it may have committed before the
kill without being reported).
"""

import os
import random
import select
import signal
import subprocess
import sys
import time
import traceback
from dataclasses import dataclass
from pathlib import Path

from marginalia.project import Session
from tests.reliability import kill_child
from tests.reliability.edit_script import EditModel, next_op

ROOT = Path(__file__).resolve().parents[2]


class LineReader:
    """Lines from a pipe, with a timeout, so a stuck child fails the test instead of hanging it."""

    def __init__(self, fd):
        self.fd = fd
        self.buffer = b""

    def readline(self, timeout):
        deadline = time.monotonic() + timeout
        while b"\n" not in self.buffer:
            left = deadline - time.monotonic()
            if left <= 0:
                raise AssertionError(f"the child reported nothing for {timeout} s")
            ready, _, _ = select.select([self.fd], [], [], left)
            if ready:
                chunk = os.read(self.fd, 65536)
                if not chunk:
                    return ""
                self.buffer += chunk
        line, self.buffer = self.buffer.split(b"\n", 1)
        return line.decode() + "\n"

    def rest(self):
        """Everything left once the writer is dead."""
        chunks = [self.buffer]
        while True:
            chunk = os.read(self.fd, 65536)
            if not chunk:
                break
            chunks.append(chunk)
        self.buffer = b""
        return b"".join(chunks).decode()


class SpawnedChild:
    """A fresh interpreter (``python -m tests.reliability.kill_child``)."""

    def __init__(self, path, seed, tag):
        env = dict(os.environ, PYTHONPATH=str(ROOT), PYTHONUNBUFFERED="1")
        self.err_path = Path(str(path) + f".{tag}.stderr")
        with open(self.err_path, "w") as err_file:
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "tests.reliability.kill_child", str(path), str(seed), tag],
                cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=err_file, bufsize=0)
        self.reader = LineReader(self.proc.stdout.fileno())

    def kill(self):
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait()
        return self.proc.returncode == -signal.SIGKILL

    def errors(self):
        return self.err_path.read_text()

    def close(self):
        self.proc.stdout.close()


class ForkedChild:
    """A fork of the test process (no interpreter start-up, so many kills stay fast).

    Subclasses set :meth:`child_main` to run another edit script in the child.
    """

    @staticmethod
    def child_main(path, seed, tag, out):
        kill_child.main(path, seed, tag, out=out)

    def __init__(self, path, seed, tag):
        r, w = os.pipe()
        pid = os.fork()
        if pid == 0:  # child: never returns into pytest
            code = 0
            try:
                os.close(r)
                self.child_main(str(path), seed, tag, os.fdopen(w, "w", buffering=1))
            except BaseException:
                traceback.print_exc()
                code = 3
            finally:
                os._exit(code)
        os.close(w)
        self.pid = pid
        self.reader = LineReader(r)

    def kill(self):
        os.kill(self.pid, signal.SIGKILL)
        _, status = os.waitpid(self.pid, 0)
        return os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGKILL

    def errors(self):
        return "(forked child)"

    def close(self):
        os.close(self.reader.fd)


def read_until_killed(child, kill_after, delay_s, *, timeout_s=60):
    """The report lines of ``child`` (split in fields), SIGKILLed ``delay_s`` after it reported ``R kill_after``
    (-1: ``delay_s`` after its start).

    ``child`` has ``reader`` (a :class:`LineReader` on its reports), ``kill() -> bool`` (True when it died of
    SIGKILL) and ``close()`` (called here); ``errors()``, when it has one, says what the child printed.
    """
    def errors():
        return child.errors() if hasattr(child, "errors") else "its traceback is on stderr"

    lines = []
    try:
        if kill_after < 0:
            time.sleep(delay_s)
        else:
            while True:
                line = child.reader.readline(timeout=timeout_s)
                assert line, f"the child exited early: {errors()}"
                lines.append(line.split())
                if lines[-1][:2] == ["R", str(kill_after)]:
                    break
            time.sleep(delay_s)
    finally:
        killed = child.kill()
    # what is left, including lines already buffered by the reader
    lines += [ln.split() for ln in child.reader.rest().splitlines()]
    child.close()
    assert killed, f"the child did not die by SIGKILL: {errors()}"
    return lines


def run_and_kill(child_cls, path, seed, tag, kill_after, delay_s):
    """Run a child; SIGKILL it once it reported ``kill_after`` returned edits (-1: after ``delay_s``)."""
    lines = read_until_killed(child_cls(path, seed, tag), kill_after, delay_s)
    returned = [int(x[1]) for x in lines if x[0] == "R"]
    begun = [int(x[1]) for x in lines if x[0] == "B"]
    n_returned = returned[-1] + 1 if returned else 0
    in_flight = bool(begun) and begun[-1] == n_returned
    return n_returned, in_flight


def _copy(model):
    c = EditModel(model.labels)
    c.undo_stack, c.redo_stack = list(model.undo_stack), list(model.redo_stack)
    c.session = model.session
    return c


def expected_models(model, seed, tag, item, n):
    """Models after 0..n scripted edits, starting from ``model`` (not modified)."""
    rng = random.Random(seed)
    work = _copy(model)
    work.new_session()   # the child opens the project anew
    models = [_copy(work)]
    for i in range(n):
        work.apply(next_op(rng, dict(work.labels), item, tag, i))
        models.append(_copy(work))
    return models


def _new_project(path):
    with Session.create(path) as s:
        item = s.add_item("big", "series", "segmentation")
    return path, item


@dataclass
class KillStats:
    """Outcome of :func:`kill_runs`."""

    runs: int = 0
    survived: int = 0
    killed_while_opening: int = 0
    in_flight: int = 0
    edits_returned: int = 0
    failures: list = None


def kill_runs(folder, child_cls, runs, rng, *, stop_at_first_failure=True, progress=None) -> KillStats:
    """Repeatedly run and SIGKILL children editing one project in ``folder``.

    Each reopened project must hold exactly the returned edits (see the module
    docstring), have the matching undo/redo state and pass ``integrity_check``.
    A run that does not is a failure: raised as AssertionError when
    ``stop_at_first_failure``, else recorded in ``failures`` (and the next run
    starts from what the project holds).
    """
    path, item = _new_project(Path(folder) / "killed.marginalia")
    model = EditModel()
    stats = KillStats(failures=[])
    for run in range(runs):
        seed, tag = rng.randrange(10**9), f"r{run}"
        kill_after = rng.choice([-1, 0, 1, 2, 3, 5, 8, 13])
        delay = rng.choice([0.0, 0.0, 0.0005, 0.002, 0.01]) if kill_after >= 0 else rng.uniform(0.0, 0.3)
        n_returned, in_flight = run_and_kill(child_cls, path, seed, tag, kill_after, delay)
        models = expected_models(model, seed, tag, item, n_returned + 1)
        with Session.open(path) as s:
            full = s.store.history()   # the stacks the log replays to (undo itself reaches one session)
            got = ({lab.id: lab for lab in s.labels()}, full.can_undo, full.can_redo)
            problems = s.integrity_check()
        allowed = [n_returned] + ([n_returned + 1] if in_flight else [])
        matches = [k for k in allowed if models[k].snapshot() == got]
        stats.runs += 1
        stats.edits_returned += n_returned
        stats.killed_while_opening += kill_after < 0 and n_returned == 0 and not in_flight
        stats.in_flight += in_flight
        if matches and not problems:
            stats.survived += 1
            model = models[matches[0]]
        else:
            message = (f"run {run}: after {n_returned} returned edits (in flight: {in_flight}) the project holds "
                       f"{sorted(got[0])} undo={got[1]} redo={got[2]}, expected "
                       f"{sorted(models[n_returned].labels)}; integrity problems: {problems}")
            if stop_at_first_failure:
                raise AssertionError(message)
            stats.failures.append(message)
            # the expected history is lost: go on with a fresh project
            path, item = _new_project(Path(folder) / f"killed-{run}.marginalia")
            model = EditModel()
        if progress is not None:
            progress(stats)
    return stats
