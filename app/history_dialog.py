"""Edit > History: every step of the project across sessions, and "Restore to this step".

The list comes from the engine's history (the project's append-only edit log), newest
first. Selecting a step shows what it did and how many labels the project had after it;
"Restore to this step" brings those labels back as ONE new step, which Ctrl+Z takes back,
so choosing a step never loses the present state either.
"""

from __future__ import annotations

import datetime

from PySide6 import QtCore, QtGui, QtWidgets
from PySide6.QtCore import Qt

__all__ = ["HistoryDialog"]

_COLUMNS = ("Step", "When", "What", "Labels", "Items")


def _when(t: float) -> str:
    moment = datetime.datetime.fromtimestamp(t)
    today = datetime.date.today()
    return moment.strftime("%H:%M:%S" if moment.date() == today else "%Y-%m-%d %H:%M")


class HistoryDialog(QtWidgets.QDialog):
    """The history of one project; emits :attr:`restoreRequested` with a step id."""

    restoreRequested = QtCore.Signal(int)

    def __init__(self, parent=None):
        super().__init__(parent)
        self.setWindowTitle("Marginalia \u2014 History")
        self.resize(820, 480)
        self.engine = None
        self.steps = []
        self.table = QtWidgets.QTableWidget(0, len(_COLUMNS), self)
        self.table.setHorizontalHeaderLabels(_COLUMNS)
        self.table.setSelectionBehavior(QtWidgets.QAbstractItemView.SelectionBehavior.SelectRows)
        self.table.setSelectionMode(QtWidgets.QAbstractItemView.SelectionMode.SingleSelection)
        self.table.setEditTriggers(QtWidgets.QAbstractItemView.EditTrigger.NoEditTriggers)
        self.table.verticalHeader().setVisible(False)
        self.table.setWordWrap(False)
        self.table.setAlternatingRowColors(True)
        self.table.setTextElideMode(Qt.TextElideMode.ElideRight)
        header = self.table.horizontalHeader()
        for col, mode in enumerate((QtWidgets.QHeaderView.ResizeMode.ResizeToContents,
                                    QtWidgets.QHeaderView.ResizeMode.ResizeToContents,
                                    QtWidgets.QHeaderView.ResizeMode.Stretch,
                                    QtWidgets.QHeaderView.ResizeMode.ResizeToContents,
                                    QtWidgets.QHeaderView.ResizeMode.Interactive)):
            header.setSectionResizeMode(col, mode)
        header.resizeSection(4, 190)
        self.table.itemSelectionChanged.connect(self._on_selection)
        self.table.itemDoubleClicked.connect(lambda *_: self._restore())
        self.details = QtWidgets.QLabel("Select a step to see the labels after it.")
        self.details.setWordWrap(True)
        self.note = QtWidgets.QLabel("Undo (Ctrl+Z) reaches the edits of this session; every earlier step is "
                                     "here. Restoring a step is itself a step: Ctrl+Z takes it back.")
        self.note.setWordWrap(True)
        self.note.setStyleSheet("color: gray")
        buttons = QtWidgets.QDialogButtonBox(self)
        self.restore_button = buttons.addButton("Restore to this step", QtWidgets.QDialogButtonBox.ButtonRole.ActionRole)
        self.restore_button.setEnabled(False)
        self.restore_button.clicked.connect(self._restore)
        buttons.addButton(QtWidgets.QDialogButtonBox.StandardButton.Close)
        buttons.rejected.connect(self.close)
        layout = QtWidgets.QVBoxLayout(self)
        layout.addWidget(self.table, 1)
        layout.addWidget(self.details)
        layout.addWidget(self.note)
        layout.addWidget(buttons)

    def set_engine(self, engine, infos: dict | None = None) -> None:
        """Fill the list from ``engine.history()`` (newest first), keeping the selected step selected."""
        self.engine = engine
        keep = self.selected_step()
        self.steps = list(reversed(engine.history()))
        names = {i: getattr(info, "name", i) for i, info in (infos or {}).items()}
        order = {i: k for k, i in enumerate(names)}   # items in the browser's order
        self.table.setRowCount(len(self.steps))
        undone_font = QtGui.QFont(self.table.font())
        undone_font.setItalic(True)
        for row, step in enumerate(self.steps):
            items = [names.get(i, i[:8]) for i in sorted(step.item_ids, key=lambda i: order.get(i, len(order)))]
            what = step.name + (f"  (undone by step {step.undone_by})" if step.undone else "")
            cells = (str(step.id), _when(step.time), what, step.effect,
                     ", ".join(items[:4]) + (f" +{len(items) - 4}" if len(items) > 4 else ""))
            for col, text in enumerate(cells):
                cell = QtWidgets.QTableWidgetItem(text)
                if col in (0, 3):
                    cell.setTextAlignment(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
                if step.undone:
                    cell.setFont(undone_font)
                    cell.setForeground(QtGui.QBrush(QtGui.QColor("gray")))
                if col == 2:
                    cell.setToolTip(what)
                if col == 4 and len(items) > 4:
                    cell.setToolTip(", ".join(items))
                self.table.setItem(row, col, cell)
        if keep is not None:
            self.select_step(keep.id)
        else:
            self._on_selection()

    def selected_step(self):
        rows = {i.row() for i in self.table.selectedIndexes()}
        return self.steps[min(rows)] if rows and min(rows) < len(self.steps) else None

    def select_step(self, step_id: int) -> bool:
        """Select the row of step ``step_id``; False when the history has no such step."""
        for row, step in enumerate(self.steps):
            if step.id == step_id:
                self.table.selectRow(row)
                self.table.scrollToItem(self.table.item(row, 0))
                return True
        return False

    def _on_selection(self):
        step = self.selected_step()
        self.restore_button.setEnabled(step is not None)
        if step is None:
            self.details.setText("Select a step to see the labels after it.")
            return
        n = len(self.engine.labels_at(step.id))
        now = len(self.engine.labels())
        self.details.setText(f"Step {step.id}: {step.name} ({step.effect}). After it the project had {n} "
                             f"label{'s' if n != 1 else ''}; it has {now} now.")

    def _restore(self):
        step = self.selected_step()
        if step is not None:
            self.restoreRequested.emit(step.id)
