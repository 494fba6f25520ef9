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


@pytest.mark.slow
def test_prepare_runs_every_workload_in_workers_and_writes_the_marker(fresh_cache):
    seen = []
    seconds = prepare(jobs=2, progress=lambda done, total, name: seen.append((done, total, name)))
    names = [name for name, _ in WORKLOADS]
    assert sorted(seconds) == sorted(names) and all(s > 0 for s in seconds.values())
    assert [d for d, _, _ in seen] == list(range(1, len(names) + 1)) and {n for *_, n in seen} == set(names)
    assert is_prepared() and marker_path().read_text().count("\n") == len(names)
