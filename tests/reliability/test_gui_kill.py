"""SIGKILL the real app (MainWindow, offscreen, in a fresh interpreter) while it edits a project: nothing is lost.

The child (``tests/reliability/gui_kill_child.py``) opens a generated aCGH
project through ``MainWindow.open_project`` and edits it through the window's
own methods while the live learner works in the background; after each kill
the reopened project is sound and holds exactly the reported edits (or one
more for the edit in flight).
"""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from tests.reliability.engine_kill_child import new_project
from tests.reliability.killing import LineReader
from tests.reliability.test_engine_kill import Stats, check_reopened, replay, run_and_kill, start_state

ROOT = Path(__file__).resolve().parents[2]
# (kill after this many returned edits, then wait s); -1: kill that long after the start (maybe while opening)
KILL_PLAN = [(4, 0.0), (-1, None), (9, 0.02)]  # a fresh app costs ~5 s: three kills


class SpawnedGuiChild:
    """``python -m tests.reliability.gui_kill_child`` in a fresh interpreter."""

    def __init__(self, path, seed, tag, settings):
        env = dict(os.environ, PYTHONPATH=str(ROOT), PYTHONUNBUFFERED="1", QT_QPA_PLATFORM="offscreen")
        self.err_path = Path(str(path) + f".{tag}.stderr")
        with open(self.err_path, "w") as err:
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "tests.reliability.gui_kill_child", str(path), str(seed), tag,
                 str(settings)], cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=err, bufsize=0)
        self.reader = LineReader(self.proc.stdout.fileno())

    def wait_until_open(self, timeout):
        line = self.reader.readline(timeout=timeout)
        assert line == "O\n", f"the app did not open the project: {line!r}\n{self.err_path.read_text()}"

    def kill(self) -> bool:
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait()
        return self.proc.returncode == -signal.SIGKILL

    def close(self):
        self.proc.stdout.close()


@pytest.mark.slow
def test_sigkill_of_the_app_while_labelling_loses_nothing(tmp_path):
    path, item = new_project(tmp_path / "gui.marginalia", seed=8, with_labels=False)
    model, last_model_id = start_state(path)
    rng = random.Random(5)
    stats = Stats()
    for run, (kill_after, delay) in enumerate(KILL_PLAN):
        seed, tag = rng.randrange(10**9), f"g{run}"
        child = SpawnedGuiChild(path, seed, tag, tmp_path / "settings.ini")
        if kill_after < 0:
            child.wait_until_open(timeout=120)
            returned, in_flight = run_and_kill(child, -1, rng.uniform(0.05, 0.4))
        else:
            returned, in_flight = run_and_kill(child, kill_after, delay, timeout_s=120)
        assert "Traceback" not in child.err_path.read_text(), child.err_path.read_text()
        candidates, model_id, _ = replay(model, seed, tag, item, returned, in_flight, stats)
        last_model_id = model_id or last_model_id
        model = check_reopened(path, run, candidates, last_model_id, returned, in_flight)
        stats.runs += 1
        stats.survived += 1
        stats.calls_returned += len(returned)
        stats.in_flight += in_flight
    print(f"\nGUI kills: {stats}")
    assert stats.survived == stats.runs == len(KILL_PLAN)
    assert stats.kinds.get("add", 0) >= 3 and len(model.labels) + stats.calls_returned > 0
