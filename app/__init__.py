"""Marginalia's desktop app (PySide6 + pyqtgraph): thin views over :mod:`marginalia.engine`.

Installed with the ``gui`` extra: ``pip install "marginalia-studio[gui]"``.
"""
