"""Single-writer lock of a project: ``fcntl.flock`` on a sidecar ``<project>.lock`` file.

The operating system drops an ``flock`` when the holder exits, however it
exits (SIGKILL, crash, power loss), so a stale lock can never block the next
open. The lock file itself is never deleted (deleting it would let two
processes lock two different files of the same name); it only holds the
``pid host`` of the current holder for the error message.
"""

from __future__ import annotations

import fcntl
import os
import socket
from pathlib import Path

from ..exceptions import ProjectInUseError, StoreError

__all__ = ["ProjectLock", "lock_path"]


def lock_path(project: Path) -> Path:
    """Path of the sidecar lock file of ``project``."""
    return Path(str(project) + ".lock")


class ProjectLock:
    """Exclusive, non-blocking write lock of one project file.

    Parameters
    ----------
    project : Path
        The project file (the lock lives next to it).
    """

    def __init__(self, project: Path):
        self.project = Path(project)
        self.path = lock_path(self.project)
        self._fd = None

    def acquire(self) -> "ProjectLock":
        """Take the lock or raise :class:`ProjectInUseError` naming the holder."""
        if self._fd is not None:
            return self
        try:
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        except OSError as exc:
            raise StoreError(f"cannot create the lock file {self.path}: {exc.strerror}. To label, the project's "
                             "folder must be writable: copy the project somewhere you can write to (it can still "
                             "be read from here, e.g. by marginalia-cli query and export)") from None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = _read_holder(fd)
            os.close(fd)
            raise ProjectInUseError(
                f"{self.project} is open in another Marginalia window or process ({holder}); "
                "close it there first") from None
        except OSError as exc:
            os.close(fd)
            raise StoreError(f"cannot lock {self.path}: {exc.strerror}") from None
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()} {socket.gethostname()}\n".encode(), 0)
        self._fd = fd
        return self

    def release(self) -> None:
        """Drop the lock (idempotent)."""
        if self._fd is None:
            return
        fd, self._fd = self._fd, None
        try:
            os.ftruncate(fd, 0)
        except OSError:
            pass
        os.close(fd)  # closing the descriptor releases the flock

    @property
    def held(self) -> bool:
        return self._fd is not None


def _read_holder(fd: int) -> str:
    try:
        text = os.pread(fd, 200, 0).decode("utf-8", "replace").split()
    except OSError:
        text = []
    if len(text) >= 2:
        return f"pid {text[0]} on host {text[1]}"
    return "pid unknown on host unknown"
