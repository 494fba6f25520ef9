"""Compiling the kernels ahead: the marker, the command line's first-run line, the real preparation."""

from __future__ import annotations

import pytest

from marginalia.cli import main
from marginalia.prepare import WORKLOADS, is_prepared, marker_path, prepare


@pytest.fixture()
def fresh_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    return tmp_path


def test_a_command_says_once_per_install_that_it_compiles(fresh_cache, capsys):
    assert not is_prepared()
    main(["predict", str(fresh_cache / "missing.model"), "--out", str(fresh_cache / "out")])
    assert "first run: compiling the numerical kernels" in capsys.readouterr().err
    marker_path().parent.mkdir(parents=True)
    marker_path().write_text("")
    assert is_prepared()
    main(["predict", str(fresh_cache / "missing.model"), "--out", str(fresh_cache / "out")])
    assert "first run" not in capsys.readouterr().err


def test_commands_without_kernels_say_nothing(fresh_cache, capsys):
    main(["export", str(fresh_cache / "missing.marginalia"), "--format", "bundle", "--out", str(fresh_cache / "b")])
    assert "first run" not in capsys.readouterr().err


def test_a_command_missing_its_extra_says_only_that(fresh_cache, capsys, monkeypatch):
    # batch without Dask stops at once: one line naming the extra, no first-run line before it
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "distributed" else real(name, *a))
    from marginalia.cli_commands.prepare import cold_start_notice

    class Args:
        command = "batch"
        quiet = False

    cold_start_notice(Args())
    assert capsys.readouterr().err == ""
    Args.command = "predict"
    cold_start_notice(Args())
    assert "first run" in capsys.readouterr().err


@pytest.mark.slow
def test_prepare_runs_every_workload_in_workers_and_writes_the_marker(fresh_cache):
    seen = []
    seconds = prepare(jobs=2, progress=lambda done, total, name: seen.append((done, total, name)))
    names = [name for name, _ in WORKLOADS]
    assert sorted(seconds) == sorted(names) and all(s > 0 for s in seconds.values())
    assert [d for d, _, _ in seen] == list(range(1, len(names) + 1)) and {n for *_, n in seen} == set(names)
    assert is_prepared() and marker_path().read_text().count("\n") == len(names)


SIGNATURES_AFTER_DEMO = r"""
import gc, json, sys
from numba.core.dispatcher import Dispatcher
from marginalia.prepare import _copy_number_training
_copy_number_training()
print(json.dumps({f"{d.py_func.__module__}.{d.py_func.__qualname__}": [str(s) for s in d.signatures]
                  for d in gc.get_objects() if isinstance(d, Dispatcher)
                  and d.py_func.__module__.startswith("marginalia.")}))
"""


#: kernels compiled once per literal on purpose: the searches outside and inside a label (``inside`` False/True)
SPECIALISED = {"marginalia.models._violation_dp._best_start": 2, "marginalia.models._violation_dp._from_start": 2}


@pytest.mark.slow
def test_each_kernel_compiles_once_for_a_demo_train_and_predict(tmp_path):
    """A literal argument (``0``, ``-1``, a module constant) at a call inside a kernel compiles the called
    kernel once more; from an empty cache each kernel used by the demo's train and predict compiles once
    (twice for the deliberate specialisations)."""
    import json
    import os
    import subprocess
    import sys

    env = dict(os.environ, NUMBA_CACHE_DIR=str(tmp_path / "numba"), XDG_CACHE_HOME=str(tmp_path / "cache"))
    out = subprocess.run([sys.executable, "-c", SIGNATURES_AFTER_DEMO], env=env, capture_output=True, text=True,
                         check=True).stdout
    signatures = {name: sigs for name, sigs in json.loads(out.splitlines()[-1]).items() if sigs}
    assert "marginalia.models._violation_dp._best_start" in signatures  # the check saw the nested kernels
    wanted = {name: 1 for name in signatures} | SPECIALISED
    assert {name: len(sigs) for name, sigs in signatures.items() if len(sigs) != wanted[name]} == {}


def test_the_marker_belongs_to_one_numba_cache(fresh_cache, monkeypatch, tmp_path):
    # Another numba cache (or CPU target) holds none of this cache's kernels: its marker must be another file.
    monkeypatch.delenv("NUMBA_CACHE_DIR", raising=False)
    default = marker_path()
    monkeypatch.setenv("NUMBA_CACHE_DIR", str(tmp_path / "elsewhere"))
    elsewhere = marker_path()
    monkeypatch.setenv("NUMBA_CPU_NAME", "generic")
    generic = marker_path()
    assert len({default, elsewhere, generic}) == 3
    assert default.parent == elsewhere.parent == generic.parent
