"""Where Marginalia keeps its own files, per the platform's conventions (``platformdirs``).

* the state directory: the app's log and the demo project a user opens from the Help menu
  (``$XDG_STATE_HOME/marginalia``, by default ``~/.local/state/marginalia`` on Linux;
  ``~/Library/Application Support/marginalia`` on macOS; ``%LOCALAPPDATA%\\marginalia`` on Windows);
* the cache directory: the marker ``marginalia-cli prepare`` writes once the kernels are compiled
  (``$XDG_CACHE_HOME/marginalia``, by default ``~/.cache/marginalia`` on Linux).

On Linux these are the paths earlier versions wrote by hand, so existing state stays where it was.
"""

from __future__ import annotations

from pathlib import Path

from platformdirs import user_cache_path, user_state_path

__all__ = ["state_dir", "cache_dir"]

APP_NAME = "marginalia"


def state_dir() -> Path:
    """Directory of the app's log and the demo project (not created here)."""
    return user_state_path(APP_NAME, appauthor=False)


def cache_dir() -> Path:
    """Directory of files that can be rebuilt at any time, such as the prepared-kernels marker (not created here)."""
    return user_cache_path(APP_NAME, appauthor=False)
