"""Files Marginalia ships with: the embedded demo, the style sheet and the icons.

Read them with :func:`marginalia.resources.path`, which works the same from a source checkout and from
an installed wheel.
"""

from __future__ import annotations

from importlib.resources import files
from pathlib import Path

__all__ = ["path"]


def path(*parts: str) -> Path:
    """The file-system path of a shipped resource, e.g. ``path("demo", "profiles.csv")``.

    Marginalia installs as ordinary files (never a zip), so the path is a real one that may be copied
    or opened by any library.
    """
    return Path(str(files(__name__).joinpath(*parts)))
