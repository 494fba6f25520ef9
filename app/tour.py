"""A short guided tour of the main window's panels: a callout beside each panel in turn, skippable at any step."""

from __future__ import annotations

from PySide6 import QtCore, QtWidgets
from PySide6.QtCore import Qt


def tour_steps(window) -> list:
    """``[(title, text, widget)]``: what each part of ``window`` is for, in the order a first session uses them."""
    return [
        ("Dataset", "Every item of the project: a chromosome of a profile, a recording. Its row shows how many "
         "labels it has and the model's margin (small = a close call). Right-click a recording to attach a score.",
         window.browser_dock),
        ("The item", "Drag to select a region, then press 0 (no change), 1 (one change), 2 (at least one) or S "
         "(same segment); Ctrl+click places an exact boundary. The prediction follows every label at once.",
         window.stack),
        ("Labels", "The labels of the shown item; select one to find it, Del removes it, Ctrl+Z undoes any step.",
         window.labels_dock),
        ("Model", "With \u201cLearn while I label\u201d on, each label updates the model in the background; "
         "Retrain (Ctrl+R) fits it from every label. Below: whether more labels would still change the model, and "
         "each version of the model with what changed.", window.model_dock),
        ("Questions", "Next question (Q) shows the part where a label would help the model most; answer with "
         "A (the model is right), B (the runner-up is right) or N (neither: draw the label). F1 lists every key.",
         window.active_dock),
    ]


class Tour(QtWidgets.QFrame):
    """The tour over ``window``: a frame around the current panel and a callout with Back / Next / Skip.

    Signals
    -------
    finished(completed)
        The tour was closed: at its last step (True) or skipped (False).
    """

    finished = QtCore.Signal(bool)

    def __init__(self, window):
        super().__init__(window)
        self.window_ = window
        self.steps = tour_steps(window)
        self.index = 0
        self.setObjectName("tour")
        self.setFrameShape(QtWidgets.QFrame.Shape.StyledPanel)
        self.setStyleSheet("#tour { background: #30353d; border: 2px solid #56b4e9; border-radius: 6px; }")
        self.highlight = QtWidgets.QFrame(window)
        self.highlight.setObjectName("tour_highlight")
        self.highlight.setStyleSheet("#tour_highlight { border: 3px solid #56b4e9; border-radius: 4px; "
                                     "background: transparent; }")
        self.highlight.setAttribute(Qt.WidgetAttribute.WA_TransparentForMouseEvents, True)
        lay = QtWidgets.QVBoxLayout(self)
        self.title = QtWidgets.QLabel()
        self.text = QtWidgets.QLabel()
        self.text.setWordWrap(True)
        self.text.setFixedWidth(320)
        self.counter = QtWidgets.QLabel()
        self.back_button = QtWidgets.QPushButton("Back")
        self.next_button = QtWidgets.QPushButton("Next")
        self.skip_button = QtWidgets.QPushButton("Skip the tour")
        self.skip_button.setToolTip("Close the tour; Help \u25b8 Guided tour shows it again")
        row = QtWidgets.QHBoxLayout()
        row.addWidget(self.counter)
        row.addStretch(1)
        for b in (self.skip_button, self.back_button, self.next_button):
            row.addWidget(b)
        lay.addWidget(self.title)
        lay.addWidget(self.text)
        lay.addLayout(row)
        self.back_button.clicked.connect(lambda: self.show_step(self.index - 1))
        self.next_button.clicked.connect(self._next)
        self.skip_button.clicked.connect(lambda: self.stop(False))
        self.hide()
        self.highlight.hide()

    def start(self) -> None:
        self.show_step(0)

    def show_step(self, index: int) -> None:
        self.index = max(0, min(index, len(self.steps) - 1))
        title, text, target = self.steps[self.index]
        self.title.setText(f"<b>{title}</b>")
        self.text.setText(text)
        self.counter.setText(f"{self.index + 1} / {len(self.steps)}")
        self.back_button.setEnabled(self.index > 0)
        self.next_button.setText("Done" if self.index == len(self.steps) - 1 else "Next")
        self.adjustSize()
        self._place(target)
        self.highlight.show()
        self.show()
        self.highlight.raise_()
        self.raise_()

    def target(self) -> QtWidgets.QWidget:
        return self.steps[self.index][2]

    def _place(self, target) -> None:
        """Frame ``target`` and put the callout beside it, inside the window."""
        top_left = target.mapTo(self.window_, QtCore.QPoint(0, 0))
        rect = QtCore.QRect(top_left, target.size())
        self.highlight.setGeometry(rect.adjusted(-2, -2, 2, 2))
        room = self.window_.rect()
        x = rect.right() + 12 if rect.right() + 12 + self.width() <= room.right() else rect.left() - 12 - self.width()
        if x < room.left():   # a wide target: inside it, near its top
            x = rect.left() + 24
        y = min(max(rect.top() + 24, room.top()), room.bottom() - self.height())
        self.move(x, y)

    def _next(self) -> None:
        if self.index == len(self.steps) - 1:
            self.stop(True)
        else:
            self.show_step(self.index + 1)

    def stop(self, completed: bool) -> None:
        self.hide()
        self.highlight.hide()
        self.finished.emit(completed)
