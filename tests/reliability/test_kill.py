"""SIGKILL a process right after its edits return: the reopened project holds exactly the returned edits."""

import random

import pytest

from tests.reliability.killing import ForkedChild, SpawnedChild, kill_runs


@pytest.mark.slow
def test_sigkill_of_a_fresh_interpreter_loses_nothing(tmp_path):
    stats = kill_runs(tmp_path, SpawnedChild, 4, random.Random(1))
    assert stats.survived == stats.runs == 4


@pytest.mark.slow
def test_sigkill_at_random_moments_loses_nothing(tmp_path):
    stats = kill_runs(tmp_path, ForkedChild, 20, random.Random(2))
    assert stats.survived == stats.runs == 20
    assert stats.edits_returned > 20
