"""Model panel: which model is current, live learning switch, retrain, and what the engine is doing."""

from __future__ import annotations

from PySide6 import QtCore, QtWidgets


class ModelPanel(QtWidgets.QWidget):
    """Shows the current model and lets the user retrain.

    Signals
    -------
    retrainRequested(), liveToggled(bool)
    """

    retrainRequested = QtCore.Signal()
    stopRequested = QtCore.Signal()
    liveToggled = QtCore.Signal(int)

    def __init__(self, parent=None):
        super().__init__(parent)
        self.model_label = QtWidgets.QLabel("no model yet")
        self.model_label.setTextInteractionFlags(QtCore.Qt.TextInteractionFlag.TextSelectableByMouse)
        self.live = QtWidgets.QCheckBox("Learn while I label")
        self.live.setChecked(True)
        self.live.setToolTip("After each label: a fast perceptron update at once, a full retrain when you pause")
        self.retrain_button = QtWidgets.QPushButton("Retrain now")
        self.retrain_button.setToolTip("Full fit from every label (Ctrl+R)")
        self.stop_button = QtWidgets.QPushButton("Stop")
        self.stop_button.setToolTip("Cancel the running retrain or ranking (Esc)")
        self.stop_button.setEnabled(False)
        self.stop_button.setVisible(False)   # shown only while there is something to stop
        self.activity = QtWidgets.QLabel("idle")
        self.activity.setObjectName("hint")
        self.latency = QtWidgets.QLabel("no label since opening")
        self.latency.setObjectName("hint")
        form = QtWidgets.QFormLayout(self)
        form.setContentsMargins(6, 6, 6, 6)
        form.addRow("Model:", self.model_label)
        form.addRow(self.live)
        form.addRow(self.retrain_button)
        row = QtWidgets.QHBoxLayout()
        row.addWidget(self.activity, 1)
        row.addWidget(self.stop_button)
        form.addRow("Engine:", row)
        form.addRow("Last redraw:", self.latency)
        self.retrain_button.clicked.connect(self.retrainRequested)
        self.stop_button.clicked.connect(self.stopRequested)
        self.live.toggled.connect(lambda on: self.liveToggled.emit(int(on)))

    def set_model(self, model_id, kind: str = ""):
        self.model_label.setText("no model yet" if not model_id else f"{model_id[:12]} {('(' + kind + ')') if kind else ''}")
        self.model_label.setToolTip(model_id or "")

    def set_activity(self, text: str, stoppable: bool = False):
        self.activity.setText(text or "idle")
        self.stop_button.setEnabled(bool(stoppable))
        self.stop_button.setVisible(bool(stoppable))

    def set_latency(self, seconds: float):
        self.latency.setText(f"{seconds * 1000:.0f} ms from label to redraw")
