"""List of the labels of the current item."""

from __future__ import annotations

from PySide6 import QtCore, QtWidgets
from PySide6.QtCore import Qt

from core.types import AnchorLabel, BoundaryLabel, EventSpanLabel, RegionLabel, WarpAnchorLabel

from .. import theme


def describe_label(label, positions=None, units: str = "") -> str:
    """One line describing a label for people (with positions when known)."""

    def at(i):
        if positions is None or len(positions) == 0:
            return f"#{i}"
        i = min(max(int(i), 0), len(positions) - 1)
        v = float(positions[i])
        if units == "bp":
            return f"{v / 1e6:.3f} Mb"
        if units == "s":
            return f"{v:.2f} s"
        return f"{v:g}"

    if isinstance(label, RegionLabel):
        return f"{theme.REGION_NAMES[label.kind]}: {at(label.start)} \u2013 {at(label.stop - 1)}"
    if isinstance(label, BoundaryLabel):
        return f"boundary at {at(label.index)}"
    if isinstance(label, AnchorLabel):
        return f"event {label.event} at {label.time_s:.3f} s"
    if isinstance(label, EventSpanLabel):
        return f"events {label.first}\u2013{label.last} in [{label.t0_s:.2f}, {label.t1_s:.2f}] s"
    if isinstance(label, WarpAnchorLabel):
        return f"warp anchor ({label.ta}, {label.tb})"
    return repr(label)


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
            self.addItem(it)
            self._ids.append(lab.id)
        self.blockSignals(False)

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
