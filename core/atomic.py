"""Writing files so that a reader never sees half of one: a temporary name, then a rename.

Light on imports on purpose (the batch runner and the project store use it at start-up).
"""

from __future__ import annotations

import os
import pathlib
import shutil
import tempfile
import threading

__all__ = ["publish", "publish_folder", "folder_writable"]


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


def publish_folder(folder, write) -> None:
    """Fill a new folder with ``write(tmp_folder)``, then put it in place of ``folder``.

    A killed or failing export never leaves a folder mixing old and new files: until the
    final renames the old folder is untouched, and afterwards it is removed.
    """
    folder = pathlib.Path(folder)
    folder.parent.mkdir(parents=True, exist_ok=True)
    tmp = pathlib.Path(tempfile.mkdtemp(prefix=f".{folder.name}.partial-", dir=folder.parent))
    try:
        write(tmp)
        old = None
        if folder.exists():
            old = folder.with_name(f".{folder.name}.old-{os.getpid()}-{threading.get_ident()}")
            os.replace(folder, old)
        os.replace(tmp, folder)
        if old is not None:
            shutil.rmtree(old, ignore_errors=True)
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)


def folder_writable(folder) -> bool:
    """Whether a file can be created in ``folder``, tried (permission bits do not bind root; mounts may be read-only)."""
    try:
        with tempfile.NamedTemporaryFile(dir=folder, prefix=".marginalia-write-test-"):
            return True
    except OSError:
        return False
