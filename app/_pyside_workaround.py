"""Work around a reference-count bug of PySide6 6.12 on Python < 3.12.

This PySide6 build returns the singletons ``None``, ``True`` and ``False`` without
taking a new reference (``SignalInstance.emit`` returns ``True``; void methods such
as ``QWidget.update`` or ``QApplication.processEvents`` return ``None``), as if they
were immortal -- which they only are from Python 3.12. Each call removes one
reference, and after a few thousand calls Python aborts with
"none_dealloc / bool_dealloc: deallocating None / True or False".
We give these singletons the immortality Python 3.12 gives them, by adding a very
large number of references once. Nothing is allocated and nothing else changes.
"""

from __future__ import annotations

import ctypes
import sys

_EXTRA_REFERENCES = 1 << 40


def protect_singletons() -> None:
    """Make None, True, False, Ellipsis and NotImplemented effectively immortal (no-op on Python >= 3.12)."""
    if sys.version_info >= (3, 12) or getattr(sys, "_marginalia_singletons_protected", False):
        return
    for obj in (None, True, False, Ellipsis, NotImplemented):
        ref = ctypes.c_ssize_t.from_address(id(obj))
        ref.value += _EXTRA_REFERENCES
    sys._marginalia_singletons_protected = True


protect_singletons()
