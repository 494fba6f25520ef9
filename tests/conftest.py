"""Shared test set-up: headless Qt and deterministic hypothesis settings."""

import os

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

from hypothesis import HealthCheck, settings  # noqa: E402

settings.register_profile(
    "marginalia",
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
    derandomize=True,
)
settings.load_profile("marginalia")


def pytest_configure(config):
    """Run the tests in a cache directory of their own, as a prepared installation.

    Whether this machine ran ``marginalia-cli prepare`` must not change what a command prints (the first-run
    line); ``tests/core/test_prepare.py`` tests that line with a cache of its own. The directory also keeps
    the tests away from the user's real cache.
    """
    import tempfile
    from pathlib import Path

    cache = Path(tempfile.mkdtemp(prefix="marginalia-tests-cache-"))
    config._marginalia_cache = cache
    os.environ["XDG_CACHE_HOME"] = str(cache)
    from marginalia.prepare import marker_path

    marker = marker_path()
    marker.parent.mkdir(parents=True, exist_ok=True)
    marker.write_text("tests\tprepared by tests/conftest.py\n", encoding="utf-8")


def pytest_unconfigure(config):
    import shutil

    cache = getattr(config, "_marginalia_cache", None)
    if cache is not None:
        shutil.rmtree(cache, ignore_errors=True)
