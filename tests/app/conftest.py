"""Fixtures shared by the app tests."""

import pytest
from PySide6 import QtCore


@pytest.fixture
def takes_window(qtbot, tmp_path):
    """The real window on a project of three takes of one melody (``tests.core.sync.synthetic.three_takes_project``):
    ``(window, item id by name, onsets by name)``."""
    from marginalia.app import theme
    from marginalia.app.main_window import MainWindow
    from tests.core.sync.synthetic import three_takes_project
    theme.configure_pyqtgraph()
    eng, ids, onsets = three_takes_project(tmp_path)
    settings = QtCore.QSettings(str(tmp_path / "settings.ini"), QtCore.QSettings.Format.IniFormat)
    win = MainWindow(eng, settings=settings)
    qtbot.addWidget(win)
    win.show()
    yield win, ids, onsets
    win.runner.shutdown()
    eng.close()
