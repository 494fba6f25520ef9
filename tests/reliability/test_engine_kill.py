"""SIGKILL a process driving the Engine (labels, undo/redo, model updates, retraining, exports) at random moments.

After each kill the project reopens with ``Engine.open``, passes
``integrity_check``, holds exactly the labels (and undo/redo state) of the
calls that returned -- or one more for the call in flight -- and the last
model id a call returned is loadable.
"""

from __future__ import annotations

import json
import random
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from marginalia.engine import Engine
from marginalia.project.session import MODELS_KEPT
from tests.reliability import engine_kill_child
from tests.reliability.edit_script import EditModel
from tests.reliability.engine_kill_child import new_project, next_call
from tests.reliability.killing import ForkedChild, _copy, read_until_killed

KILLS = 22


class ForkedEngineChild(ForkedChild):
    """A fork of the test process running :func:`engine_kill_child.main` (no interpreter start-up)."""

    @staticmethod
    def child_main(path, seed, tag, out):
        engine_kill_child.main(path, seed, tag, out=out)


def run_and_kill(child, kill_after, delay_s, *, timeout_s=60):
    """SIGKILL ``child`` once its call ``kill_after`` returned (-1: ``delay_s`` after its start).

    ``child`` has ``reader`` (a :class:`LineReader` on its reports), ``kill() -> bool`` (True when it died of
    SIGKILL) and ``close()``.

    Returns
    -------
    returned : list of list of str
        The ``R`` lines' fields after ``R i`` (``["ok", model id?]`` or ``["refused"]``), in call order.
    in_flight : bool
        Whether call ``len(returned)`` had begun.
    """
    lines = read_until_killed(child, kill_after, delay_s, timeout_s=timeout_s)
    returned = [x[2:] for x in lines if x[0] == "R"]
    assert [int(x[1]) for x in lines if x[0] == "R"] == list(range(len(returned)))
    begun = [int(x[1]) for x in lines if x[0] == "B"]
    return returned, bool(begun) and begun[-1] == len(returned)


def replay(model, seed, tag, item, returned, in_flight, stats=None):
    """The states the project may hold after a killed child: its reported calls replayed on ``model``.

    Returns
    -------
    candidates : list of EditModel
        After exactly the calls reported as done; then, when a call was in flight, also after it.
    last_model_id : str or None
        The last model id a returned call reported.
    exports : list of (int, str)
        ``(call index, export kind)`` of the exports that returned.
    """
    script = random.Random(seed)
    model, last_model_id, exports = _copy(model), None, []
    model.new_session()   # the child opened the project anew
    for i, fields in enumerate(returned):
        op = next_call(script, {k: v for k, v in model.labels.items() if v.item_id == item}, item, tag, i)
        if stats is not None:
            stats.kinds[op[0]] = stats.kinds.get(op[0], 0) + 1
            stats.refused += fields[0] != "ok"
        if fields[0] == "ok":
            model.apply(op)
            if op[0] == "export":
                exports.append((i, op[1]))
            if len(fields) > 1:
                last_model_id = fields[1]
                if stats is not None:
                    stats.model_calls += 1
    candidates = [model]
    if in_flight:
        op = next_call(script, {k: v for k, v in model.labels.items() if v.item_id == item}, item, tag,
                       len(returned))
        after = _copy(model)
        after.apply(op)
        candidates.append(after)
    return candidates, last_model_id, exports


def check_exports(folder: Path, exports):
    """Every export that returned is complete on disk (the kill came after it)."""
    for i, kind in exports:
        if kind == "annotations-csv":
            text = (folder / f"{i}-annotations.csv").read_text()
            assert text.startswith("profile.id,chromosome,min,max,annotation\n") and text.endswith("\n")
        else:
            manifest = json.loads((folder / f"{i}-bundle" / "manifest.json").read_text())
            assert manifest["format"] == "marginalia-bundle"


def _assert_model_kept(session, run, model_id):
    """The last model saved before the kill loads, unless MODELS_KEPT newer ones of its kind replaced it."""
    stored = {m.id for m in session.models()}
    if model_id in stored:
        assert session.load_model(model_id).blob, f"run {run}: model {model_id} has no blob"
        return
    # the store keeps only the newest models; calls in flight at the kill may have saved newer ones
    assert len(stored) >= MODELS_KEPT, f"run {run}: model {model_id} lost ({len(stored)} models stored)"
    for m in stored:
        assert session.load_model(m).blob, f"run {run}: model {m} has no blob"


def check_reopened(path, run, candidates, last_model_id, returned, in_flight):
    """Reopen the project: sound, holding one of ``candidates``, the last model loadable; returns the match."""
    with Engine.open(path) as eng:
        got = _snapshot(eng)
        problems = eng.session.integrity_check()
        if last_model_id is not None:
            _assert_model_kept(eng.session, run, last_model_id)
    assert not problems, f"run {run}: integrity problems {problems}"
    matches = [c for c in candidates if c.snapshot() == got]
    expected = candidates[0]
    assert matches, (f"run {run}: after {len(returned)} returned calls (in flight: {in_flight}) the project "
                     f"holds {sorted(got[0])} undo={got[1]} redo={got[2]}, expected {sorted(expected.labels)} "
                     f"undo={bool(expected.undo_stack)} redo={bool(expected.redo_stack)}")
    return matches[-1]


def _snapshot(eng):
    full = eng.session.store.history()   # the stacks the log replays to (undo itself reaches one session)
    return {lab.id: lab for lab in eng.labels()}, full.can_undo, full.can_redo


def start_state(path):
    """``(EditModel of the project's labels, its current model id)`` before any child runs."""
    with Engine.open(path) as eng:
        return EditModel(_snapshot(eng)[0]), eng.current_model_id


@dataclass
class Stats:
    runs: int = 0
    survived: int = 0
    calls_returned: int = 0
    refused: int = 0
    in_flight: int = 0
    killed_while_opening: int = 0
    model_calls: int = 0
    exports_checked: int = 0
    kinds: dict = field(default_factory=dict)


@pytest.mark.slow
def test_sigkill_of_an_engine_at_random_moments_loses_nothing(tmp_path):
    new_project(tmp_path / "warm.marginalia", seed=2)  # compile the kernels once, before forking
    path, item = new_project(tmp_path / "killed.marginalia", seed=1, with_labels=False)
    model, last_model_id = start_state(path)
    rng = random.Random(11)
    stats = Stats()
    for run in range(KILLS):
        seed, tag = rng.randrange(10**9), f"r{run}"
        kill_after = rng.choice([-1, 0, 1, 2, 3, 5, 8])
        delay = rng.choice([0.0, 0.0, 0.001, 0.01, 0.05]) if kill_after >= 0 else rng.uniform(0.0, 0.4)
        returned, in_flight = run_and_kill(ForkedEngineChild(path, seed, tag), kill_after, delay)
        candidates, model_id, exports = replay(model, seed, tag, item, returned, in_flight, stats)
        last_model_id = model_id or last_model_id
        check_exports(path.with_name(f"exports-{tag}"), exports)
        stats.exports_checked += len(exports)
        model = check_reopened(path, run, candidates, last_model_id, returned, in_flight)
        stats.runs += 1
        stats.survived += 1
        stats.calls_returned += len(returned)
        stats.in_flight += in_flight
        stats.killed_while_opening += kill_after < 0 and not returned and not in_flight
    print(f"\nengine kills: {stats}")
    assert stats.survived == stats.runs == KILLS
    assert stats.calls_returned > KILLS and stats.model_calls > 0 and stats.exports_checked > 0
