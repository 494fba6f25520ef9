"""Writing files so that a reader never sees half of one: a temporary name, then a rename.

Folders of exports are published by :mod:`marginalia.export_target`, which also makes sure
nothing it did not write is replaced.

Light on imports on purpose (the batch runner and the project store use it at start-up).
"""

from __future__ import annotations

import os
import pathlib
import tempfile
import threading

__all__ = ["publish", "folder_writable"]


def publish(path, write) -> None:
    """Write a file with one of marginalia.io's writers into a temporary name, then rename it into place.

    ``write(tmp_path)`` does the writing; readers (and a resumed batch) never see a half-written
    file, and a write that fails (a full disk, a killed process) leaves the previous file intact.
    """
    path = pathlib.Path(path)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{threading.get_ident()}.tmp")
    try:
        write(tmp)
        os.replace(tmp, path)
    finally:
        if tmp.exists():
            tmp.unlink()


def folder_writable(folder) -> bool:
    """Whether a file can be created in ``folder``, tried (permission bits do not bind root; mounts may be read-only)."""
    try:
        with tempfile.NamedTemporaryFile(dir=folder, prefix=".marginalia-write-test-"):
            return True
    except OSError:
        return False
