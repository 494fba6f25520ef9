"""Searchable list of every action and its shortcut (F1)."""

from __future__ import annotations

from PySide6 import QtCore, QtGui, QtWidgets


class CheatSheet(QtWidgets.QDialog):
    """Lists ``actions`` (QActions with text and shortcuts) with a filter box; double-click runs one."""

    def __init__(self, actions, parent=None):
        super().__init__(parent)
        self.setWindowTitle("Marginalia \u2014 keyboard shortcuts")
        self.resize(680, 600)
        self.search = QtWidgets.QLineEdit(placeholderText="Search actions\u2026")
        self.search.setClearButtonEnabled(True)
        self.table = QtWidgets.QTreeWidget()
        self.table.setHeaderLabels(["Action", "Shortcut", "Menu"])
        self.table.setRootIsDecorated(False)
        self.table.setAlternatingRowColors(True)
        header = self.table.header()
        header.setStretchLastSection(False)
        header.setSectionResizeMode(0, QtWidgets.QHeaderView.ResizeMode.Stretch)
        header.setSectionResizeMode(1, QtWidgets.QHeaderView.ResizeMode.ResizeToContents)
        header.setSectionResizeMode(2, QtWidgets.QHeaderView.ResizeMode.ResizeToContents)
        lay = QtWidgets.QVBoxLayout(self)
        lay.addWidget(self.search)
        lay.addWidget(self.table)
        hint = QtWidgets.QLabel("Mouse: drag = region label (on audio with a score: the drawn events start in "
                                "here) \u00b7 Ctrl+click = boundary \u00b7 wheel = zoom \u00b7 Shift/middle drag = pan "
                                "\u00b7 drag a score note = anchor it \u00b7 drag an anchor or a label edge = move it "
                                "\u00b7 click a chromosome of the whole profile = zoom in")
        hint.setObjectName("hint")
        hint.setWordWrap(True)
        lay.addWidget(hint)
        for menu, action in actions:
            keys = ", ".join(s.toString(QtGui.QKeySequence.SequenceFormat.NativeText) for s in action.shortcuts())
            # an action whose text names its target ("Undo import of 676 labels") has a plain name for the sheet
            name = action.property("plain_name") or action.text().replace("&", "")
            it = QtWidgets.QTreeWidgetItem([name, keys, menu])
            it.setData(0, QtCore.Qt.ItemDataRole.UserRole, action)
            it.setToolTip(0, action.toolTip())
            self.table.addTopLevelItem(it)
        self.search.textChanged.connect(self.apply_filter)
        self.table.itemActivated.connect(self._run)
        self.search.setFocus()

    def apply_filter(self, text: str):
        text = text.lower().strip()
        for i in range(self.table.topLevelItemCount()):
            it = self.table.topLevelItem(i)
            hay = " ".join(it.text(c) for c in range(3)).lower()
            it.setHidden(bool(text) and text not in hay)

    def visible_actions(self):
        return [self.table.topLevelItem(i).text(0) for i in range(self.table.topLevelItemCount())
                if not self.table.topLevelItem(i).isHidden()]

    def _run(self, it, _col):
        action = it.data(0, QtCore.Qt.ItemDataRole.UserRole)
        self.accept()
        if action is not None and action.isEnabled():
            action.trigger()
