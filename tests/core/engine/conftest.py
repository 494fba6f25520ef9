"""Fixtures of the engine tests."""

import pytest

from marginalia.engine import Engine

from .test_engine_segmentation import _write_profiles


@pytest.fixture
def project(tmp_path):
    """A new project of the synthetic aCGH profiles of :func:`_write_profiles`: ``(engine, truth, folder)``.

    ``truth`` maps each item name to the ``(start, stop)`` of its shifted region; the engine is closed afterwards.
    """
    truth = _write_profiles(tmp_path / "profiles.csv")
    eng = Engine.create(tmp_path / "p.marginalia")
    eng.import_files([tmp_path / "profiles.csv"])
    yield eng, truth, tmp_path
    eng.close()
