"""Dataset browser: items grouped by kind, with label count, prediction status and best-vs-2nd margin."""

from __future__ import annotations

import re

from PySide6 import QtCore, QtWidgets
from PySide6.QtCore import Qt

from .margins import format_margin, margin_from_uncertainty

KIND_TITLES = {"cgh": "aCGH profiles", "audio": "Audio", "series": "Series"}
COL_NAME, COL_LABELS, COL_PRED, COL_UNC = range(4)
SORT_ROLE = Qt.ItemDataRole.UserRole + 1
ID_ROLE = Qt.ItemDataRole.UserRole


class _Row(QtWidgets.QTreeWidgetItem):
    """Sorts numeric columns by value (missing values last)."""

    def __lt__(self, other):
        col = self.treeWidget().sortColumn() if self.treeWidget() else 0
        a, b = self.data(col, SORT_ROLE), other.data(col, SORT_ROLE)
        if a is None or b is None or type(a) is not type(b):
            return self.text(col).lower() < other.text(col).lower()
        return a < b


def natural_key(name: str) -> tuple:
    """Sort key where digit runs compare as numbers ("1:2" before "1:17")."""
    return tuple((0, int(tok), "") if tok.isdigit() else (1, 0, tok.lower())
                 for tok in re.split(r"(\d+)", name) if tok)


def prediction_status(info) -> str:
    if not info.has_prediction:
        return "\u2014"
    return "stale" if info.prediction_stale else "current"


class DatasetBrowser(QtWidgets.QWidget):
    """Tree of items grouped by kind, sortable by any column, filterable by name.

    Signals
    -------
    itemActivated(item_id)
    """

    itemActivated = QtCore.Signal(str)
    attachScoreRequested = QtCore.Signal(str)
    removeRequested = QtCore.Signal(str)

    def __init__(self, parent=None):
        super().__init__(parent)
        self.filter = QtWidgets.QLineEdit(placeholderText="Filter items\u2026")
        self.filter.setClearButtonEnabled(True)
        self.filter.setToolTip("Show only the items whose name contains this text")
        for button in self.filter.findChildren(QtWidgets.QToolButton):   # the clear button
            button.setToolTip("Clear the filter: show every item")
        self.sort_button = QtWidgets.QPushButton("Most uncertain first")
        self.sort_button.setToolTip("Sort items by their best-vs-2nd margin, closest call first")
        self.tree = QtWidgets.QTreeWidget()
        self.tree.setColumnCount(4)
        self.tree.setHeaderLabels(["Item", "Labels", "Prediction", "Margin"])
        self.tree.headerItem().setToolTip(
            COL_UNC, "Gap between the model's best structure on the item and its runner-up, in change "
                     "penalties: the smaller, the closer the call")
        self.tree.setIndentation(14)
        self.tree.setSortingEnabled(True)
        self.tree.setUniformRowHeights(True)
        self.tree.setAlternatingRowColors(True)
        self.tree.setRootIsDecorated(True)
        header = self.tree.header()
        header.setStretchLastSection(False)
        header.setMinimumSectionSize(30)
        header.setSectionResizeMode(COL_NAME, QtWidgets.QHeaderView.ResizeMode.Stretch)
        for c, w in ((COL_LABELS, 44), (COL_PRED, 68), (COL_UNC, 54)):   # narrow: the names need the room
            header.setSectionResizeMode(c, QtWidgets.QHeaderView.ResizeMode.Fixed)
            header.resizeSection(c, w)
        self.tree.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self.tree.sortByColumn(COL_NAME, Qt.SortOrder.AscendingOrder)
        lay = QtWidgets.QVBoxLayout(self)
        lay.setContentsMargins(4, 4, 4, 4)
        top = QtWidgets.QHBoxLayout()
        top.addWidget(self.filter, 1)
        top.addWidget(self.sort_button)
        lay.addLayout(top)
        lay.addWidget(self.tree)
        self._rows = {}
        self._groups = {}
        self.filter.textChanged.connect(self._apply_filter)
        self.sort_button.clicked.connect(self.sort_by_uncertainty)
        self.tree.currentItemChanged.connect(self._current_changed)
        self.tree.setContextMenuPolicy(Qt.ContextMenuPolicy.CustomContextMenu)
        self.tree.customContextMenuRequested.connect(self._context_menu)

    def set_items(self, infos):
        """Show ``infos`` (a list of engine ItemInfo), keeping the current selection."""
        current = self.current_item_id()
        self.tree.blockSignals(True)
        self.tree.setSortingEnabled(False)
        seen = set()
        for info in infos:
            seen.add(info.id)
            group = self._groups.get(info.kind)
            if group is None:
                group = _Row([KIND_TITLES.get(info.kind, info.kind)])
                group.setFlags(Qt.ItemFlag.ItemIsEnabled)
                group.setData(COL_NAME, SORT_ROLE, None)
                self.tree.addTopLevelItem(group)
                group.setExpanded(True)
                self._groups[info.kind] = group
            row = self._rows.get(info.id)
            if row is None:
                row = _Row([""] * 4)
                row.setData(COL_NAME, ID_ROLE, info.id)
                group.addChild(row)
                self._rows[info.id] = row
            self._fill(row, info)
        for item_id in [i for i in self._rows if i not in seen]:
            row = self._rows.pop(item_id)
            row.parent().removeChild(row)
        for g in self._groups.values():
            g.setText(COL_NAME, f"{g.text(COL_NAME).split(' (')[0]} ({g.childCount()})")
        self.tree.setSortingEnabled(True)
        self.tree.blockSignals(False)
        if current in self._rows:
            self.tree.setCurrentItem(self._rows[current])
        self._apply_filter(self.filter.text())

    def update_item(self, info):
        row = self._rows.get(info.id)
        if row is not None:
            self._fill(row, info)

    def _fill(self, row, info):
        row.setText(COL_NAME, info.name)
        row.setData(COL_NAME, SORT_ROLE, natural_key(info.name))
        row.setToolTip(COL_NAME, f"{info.name}\n{info.kind}, {info.task}, {info.n_samples} samples")
        pending = getattr(info, "n_suggestions", 0)
        # suggestions waiting for review are counted apart: "0 +23" reads as no label yet, 23 suggested
        row.setText(COL_LABELS, f"{info.n_labels} +{pending}" if pending else str(info.n_labels))
        row.setToolTip(COL_LABELS, f"{info.n_labels} label(s)" + (f", {pending} suggested label(s) to review "
                                                                   "(Ctrl+Enter accepts, Del rejects)" if pending else ""))
        row.setData(COL_LABELS, SORT_ROLE, info.n_labels)
        row.setTextAlignment(COL_LABELS, Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
        status = prediction_status(info)
        row.setText(COL_PRED, status)
        row.setData(COL_PRED, SORT_ROLE, status)
        m = None if info.uncertainty is None else margin_from_uncertainty(info.uncertainty)
        row.setText(COL_UNC, format_margin(m))
        row.setData(COL_UNC, SORT_ROLE, float("inf") if m is None else m)   # unscored items last
        row.setTextAlignment(COL_UNC, Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)

    def item_menu(self, item_id: str) -> QtWidgets.QMenu:
        """The context menu of an item's row: attach / replace its score (recordings), remove it."""
        menu = QtWidgets.QMenu(self)
        row = self._rows[item_id]
        audio = row.parent() is self._groups.get("audio")
        attach = menu.addAction("Attach / replace score\u2026")
        attach.setEnabled(audio)
        attach.setToolTip("Align this recording to a score (MIDI or MusicXML)" if audio else
                          "Only recordings take a score")
        attach.triggered.connect(lambda *_: self.attachScoreRequested.emit(item_id))
        remove = menu.addAction("Remove item")
        remove.setToolTip("Remove the item and its labels (Ctrl+Z brings them back)")
        remove.triggered.connect(lambda *_: self.removeRequested.emit(item_id))
        return menu

    def _context_menu(self, pos):
        row = self.tree.itemAt(pos)
        item_id = None if row is None else row.data(COL_NAME, ID_ROLE)
        if item_id:
            self.item_menu(item_id).exec(self.tree.viewport().mapToGlobal(pos))

    def sort_by_uncertainty(self):
        """Closest calls (smallest margin, highest uncertainty) first."""
        self.tree.sortByColumn(COL_UNC, Qt.SortOrder.AscendingOrder)

    def item_ids_in_order(self):
        """Item ids in the displayed order (groups top to bottom)."""
        out = []
        for g in range(self.tree.topLevelItemCount()):
            group = self.tree.topLevelItem(g)
            out += [group.child(i).data(COL_NAME, ID_ROLE) for i in range(group.childCount())]
        return out

    def current_item_id(self):
        cur = self.tree.currentItem()
        return None if cur is None else cur.data(COL_NAME, ID_ROLE)

    def select(self, item_id: str):
        row = self._rows.get(item_id)
        if row is not None and self.tree.currentItem() is not row:
            self.tree.setCurrentItem(row)

    def _current_changed(self, cur, _prev):
        if cur is not None and cur.data(COL_NAME, ID_ROLE):
            self.itemActivated.emit(cur.data(COL_NAME, ID_ROLE))

    def _apply_filter(self, text):
        text = text.lower().strip()
        for row in self._rows.values():
            row.setHidden(bool(text) and text not in row.text(COL_NAME).lower())
