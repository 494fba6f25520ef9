"""Single-writer lock of a project: ``fcntl.flock`` on the project file itself, and on ``<project>.lock``.

The lock belongs to the *file*, not to its name: it is taken on a descriptor of the
open database file, so a second writer reaching the same file through a hard link, a
symbolic link or a new name after a rename meets it too (two writers through two names
would each keep their own write-ahead log beside their name, and one's edits would be
lost). ``flock`` locks are independent of the POSIX record locks SQLite takes on the
same file, so they do not disturb SQLite's own locking.

The sidecar ``<project>.lock`` is locked as well: it holds the ``pid host`` of the holder
for the error message, and older Marginalia releases lock only it. The operating system
drops both locks when the holder exits, however it exits (SIGKILL, crash, power loss), so
a stale lock can never block the next open. The sidecar is never deleted (deleting it
would let two processes lock two different files of the same name), and it is only
created next to a project file that exists.
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
        The project file (the sidecar lock lives next to it).
    missing_ok : bool
        Lock only the sidecar when the project file does not exist (a project about to be
        restored); otherwise a missing project is a :class:`StoreError` and no sidecar is made.
    """

    def __init__(self, project: Path, *, missing_ok: bool = False):
        self.project = Path(project)
        self.path = lock_path(self.project)
        self.missing_ok = bool(missing_ok)
        self._fd = None        # the sidecar
        self._file_fd = None   # the project file itself

    def acquire(self) -> "ProjectLock":
        """Take the lock or raise :class:`ProjectInUseError` naming the holder."""
        if self._fd is not None:
            return self
        file_fd = self._lock_project_file()
        try:
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
        except OSError as exc:
            _close(file_fd)
            raise StoreError(f"cannot create the lock file {self.path}: {exc.strerror}. To label, the project's "
                             "folder must be writable: copy the project somewhere you can write to (it can still "
                             "be read from here, e.g. by marginalia-cli query and export)") from None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = _read_holder(fd)
            os.close(fd)
            _close(file_fd)
            raise self._in_use(holder) from None
        except OSError as exc:
            os.close(fd)
            _close(file_fd)
            raise StoreError(f"cannot lock {self.path}: {exc.strerror}") from None
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()} {socket.gethostname()}\n".encode(), 0)
        self._fd, self._file_fd = fd, file_fd
        return self

    def _lock_project_file(self):
        try:
            file_fd = os.open(self.project, os.O_RDONLY | os.O_CLOEXEC)
        except FileNotFoundError:
            if self.missing_ok:
                return None
            raise StoreError(f"no project at {self.project}: the file does not exist") from None
        except IsADirectoryError:
            raise StoreError(f"no project at {self.project}: it is not a file (expected a .marginalia project "
                             "file)") from None
        except OSError as exc:
            raise StoreError(f"cannot open project {self.project}: {exc.strerror}") from None
        try:
            fcntl.flock(file_fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = self._holder_elsewhere(file_fd)
            os.close(file_fd)
            raise self._in_use(holder) from None
        except OSError as exc:
            os.close(file_fd)
            raise StoreError(f"cannot lock {self.project}: {exc.strerror}") from None
        return file_fd

    def lock_created_file(self) -> None:
        """Also lock the project file once it exists (after creating or restoring it under the sidecar lock)."""
        if self._fd is not None and self._file_fd is None:
            self._file_fd = self._lock_project_file()

    def _in_use(self, holder: str) -> ProjectInUseError:
        return ProjectInUseError(f"{self.project} is open in another Marginalia window or process ({holder}); "
                                 "close it there first")

    def _holder_elsewhere(self, file_fd: int) -> str:
        """Who holds the project file's lock: from the sidecar at this name, else from ``/proc/locks``."""
        try:
            fd = os.open(self.path, os.O_RDONLY | os.O_CLOEXEC)
        except OSError:
            fd = None
        if fd is not None:
            try:
                text = _read_holder(fd)
            finally:
                os.close(fd)
            if "unknown" not in text:
                return text
        pid = _flock_holder_pid(file_fd)
        if pid is not None:
            return f"pid {pid} on host {socket.gethostname()}"
        return "pid unknown on host unknown"

    def release(self) -> None:
        """Drop the lock (idempotent)."""
        if self._fd is None:
            return
        fd, self._fd = self._fd, None
        file_fd, self._file_fd = self._file_fd, None
        try:
            os.ftruncate(fd, 0)
        except OSError:
            pass
        os.close(fd)  # closing the descriptors releases the flocks
        _close(file_fd)

    @property
    def held(self) -> bool:
        return self._fd is not None


def _close(fd) -> None:
    if fd is not None:
        os.close(fd)


def _read_holder(fd: int) -> str:
    try:
        text = os.pread(fd, 200, 0).decode("utf-8", "replace").split()
    except OSError:
        text = []
    if len(text) >= 2:
        return f"pid {text[0]} on host {text[1]}"
    return "pid unknown on host unknown"


def _flock_holder_pid(fd: int):
    """The pid holding an exclusive ``flock`` on the file of ``fd``, from Linux's ``/proc/locks`` (else None)."""
    try:
        st = os.fstat(fd)
        with open("/proc/locks", encoding="ascii", errors="replace") as fh:
            lines = fh.read().splitlines()
    except OSError:
        return None
    want = f":{st.st_ino}"
    for line in lines:
        parts = line.split()
        # "1: FLOCK  ADVISORY  WRITE 1234 08:02:5678 0 EOF"
        if len(parts) >= 6 and parts[1] == "FLOCK" and parts[3] == "WRITE" and parts[5].endswith(want):
            major_minor = parts[5].rsplit(":", 1)[0]
            try:
                major, minor = (int(x, 16) for x in major_minor.split(":"))
            except ValueError:
                continue
            if (major, minor) == (os.major(st.st_dev), os.minor(st.st_dev)):
                return int(parts[4])
    return None
