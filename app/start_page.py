"""The start page: what a person sees when the app opens without a project, and the ways to begin."""

from __future__ import annotations

import os

from PySide6 import QtCore, QtWidgets
from PySide6.QtCore import Qt

INTRO = ("Label the structure of sequences \u2014 copy-number profiles, recordings aligned to their scores \u2014 "
         "with a few partial labels; the model learns from each one and asks where a label would help most.")


class StartPage(QtWidgets.QWidget):
    """Open the demo, start a project from files, open a project, or reopen a recent one.

    Signals
    -------
    demoRequested, newFromFilesRequested, openRequested
    recentRequested(path)
    """

    demoRequested = QtCore.Signal()
    newFromFilesRequested = QtCore.Signal()
    openRequested = QtCore.Signal()
    recentRequested = QtCore.Signal(str)

    def __init__(self, parent=None):
        super().__init__(parent)
        self.setObjectName("start_page")
        outer = QtWidgets.QVBoxLayout(self)
        outer.addStretch(1)
        box = QtWidgets.QWidget()
        box.setMaximumWidth(720)
        lay = QtWidgets.QVBoxLayout(box)
        title = QtWidgets.QLabel("<h1>Marginalia</h1>")
        intro = QtWidgets.QLabel(INTRO)
        intro.setWordWrap(True)
        lay.addWidget(title)
        lay.addWidget(intro)
        lay.addSpacing(12)
        self.buttons = {}
        for name, text, tip, signal in (
                ("demo", "Open the demo", "A small project with three aCGH profiles (expert labels included) and a "
                 "melody aligned to its score: the quickest way to see how labelling works.", self.demoRequested),
                ("new", "New project from files\u2026", "Pick your files (profile tables, label tables, recordings "
                 "and their scores); the import dialog shows what it will make before anything is stored.",
                 self.newFromFilesRequested),
                ("open", "Open a project\u2026", "A .marginalia project file made earlier.", self.openRequested)):
            button = QtWidgets.QPushButton(text)
            button.setObjectName(f"start_{name}")
            button.setToolTip(tip)
            button.setMinimumHeight(34)
            button.clicked.connect(signal.emit)
            note = QtWidgets.QLabel(tip)
            note.setWordWrap(True)
            note.setObjectName("hint")
            lay.addWidget(button)
            lay.addWidget(note)
            lay.addSpacing(6)
            self.buttons[name] = button
        lay.addSpacing(12)
        self.recent_title = QtWidgets.QLabel("<b>Recent projects</b>")
        self.recent = QtWidgets.QListWidget()
        self.recent.setObjectName("start_recent")
        self.recent.setToolTip("Click a project to open it")
        self.recent.setMaximumHeight(200)
        self.recent.setTextElideMode(Qt.TextElideMode.ElideMiddle)
        self.recent.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self.recent.itemClicked.connect(self._open_recent)
        lay.addWidget(self.recent_title)
        lay.addWidget(self.recent)
        centre = QtWidgets.QHBoxLayout()
        centre.addStretch(1)
        centre.addWidget(box, 4)
        centre.addStretch(1)
        outer.addLayout(centre)
        outer.addStretch(2)
        self.set_recent([])

    def set_recent(self, paths) -> None:
        """List ``paths`` newest first; a project no longer on disk is listed greyed out, not offered."""
        self.recent.clear()
        for path in paths:
            exists = os.path.exists(path)
            item = QtWidgets.QListWidgetItem(f"{os.path.basename(path)}\n    {os.path.dirname(path)}"
                                             + ("" if exists else "  (not found)"))
            item.setData(Qt.ItemDataRole.UserRole, path)
            item.setToolTip(path)
            if not exists:
                item.setFlags(Qt.ItemFlag.NoItemFlags)
            self.recent.addItem(item)
        self.recent_title.setVisible(bool(paths))
        self.recent.setVisible(bool(paths))

    def _open_recent(self, item) -> None:
        path = item.data(Qt.ItemDataRole.UserRole)
        if path and item.flags() & Qt.ItemFlag.ItemIsEnabled:
            self.recentRequested.emit(path)
