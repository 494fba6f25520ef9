"""Marginalia's desktop app (PySide6 + pyqtgraph): thin views over :mod:`core.engine`."""

from . import _pyside_workaround  # noqa: F401  (must run before any Qt signal is emitted)
