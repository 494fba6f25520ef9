"""List of the labels of the current item."""

from __future__ import annotations

from PySide6 import QtCore, QtWidgets
from PySide6.QtCore import Qt

from marginalia.types import describe_label


class LabelList(QtWidgets.QListWidget):
    """The current item's labels; selecting one selects it in the view.

    Signals
    -------
    labelSelected(label_id)
    """

    labelSelected = QtCore.Signal(str)

    def __init__(self, parent=None):
        super().__init__(parent)
        self.setAlternatingRowColors(True)
        self.currentItemChanged.connect(self._changed)
        self._ids = []

    def set_labels(self, labels, positions=None, units: str = ""):
        self.blockSignals(True)
        self.clear()
        self._ids = []
        order = sorted(labels, key=lambda lab: (getattr(lab, "start", None) or getattr(lab, "index", None)
                                                 or getattr(lab, "time_s", 0) or 0))
        for lab in order:
            it = QtWidgets.QListWidgetItem(describe_label(lab, positions, units))
            it.setData(Qt.ItemDataRole.UserRole, lab.id)
            if lab.suggested:
                font = it.font()
                font.setItalic(True)
                it.setFont(font)
                it.setToolTip("a suggestion carried from another recording: Ctrl+Enter accepts it, Del rejects it")
            self.addItem(it)
            self._ids.append(lab.id)
        self.blockSignals(False)

    def texts(self) -> list:
        """The rows as shown, top to bottom."""
        return [self.item(i).text() for i in range(self.count())]

    def select_label(self, label_id):
        self.blockSignals(True)
        if label_id in self._ids:
            self.setCurrentRow(self._ids.index(label_id))
        else:
            self.setCurrentRow(-1)
        self.blockSignals(False)

    def _changed(self, cur, _prev):
        if cur is not None:
            self.labelSelected.emit(cur.data(Qt.ItemDataRole.UserRole))
