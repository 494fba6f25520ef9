"""Fingerprints of source files (streamed sha256, size, modification time)."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

from ..exceptions import ParameterError

__all__ = ["file_sha256", "file_signature"]

_CHUNK = 1 << 20


def file_sha256(path) -> str:
    """sha256 (hex) of a file's bytes, read in 1 MiB chunks (memory does not grow with the file)."""
    h = hashlib.sha256()
    try:
        with open(path, "rb") as fh:
            for chunk in iter(lambda: fh.read(_CHUNK), b""):
                h.update(chunk)
    except OSError as exc:
        raise ParameterError(f"source_path: cannot read {path!s} ({exc.strerror}); expected a readable file") \
            from None
    return h.hexdigest()


def file_signature(path) -> tuple:
    """``(size in bytes, mtime)`` of a file."""
    try:
        st = os.stat(Path(path))
    except OSError as exc:
        raise ParameterError(f"source_path: cannot stat {path!s} ({exc.strerror}); expected an existing file") \
            from None
    return int(st.st_size), float(st.st_mtime)
