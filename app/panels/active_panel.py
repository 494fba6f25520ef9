"""Active learning panel: strategy, next question, ranked queue and learning curve (the stopping signal's reading
is in the model panel)."""

from __future__ import annotations

import html

import numpy as np
import pyqtgraph as pg
from PySide6 import QtCore, QtWidgets
from PySide6.QtCore import Qt

from .. import theme
from .margins import format_margin, margin_from_uncertainty

STRATEGIES = (("best-vs-2nd", "Best vs 2nd (margin)"), ("best-vs-worst", "Best vs worst"),
              ("scoring", "Scoring"), ("random", "Random"))


#: what each task's queue is called in the task switch
TASK_TITLES = {"segmentation/cgh": "Copy number", "segmentation/audio": "Audio segmentation",
               "segmentation/series": "Series segmentation", "alignment/audio": "Audio \u2194 score alignment"}
#: how the queue is ordered, as the panel says it
ORDER_TEXT = {None: "Each task's closest call first, the tasks taking turns: margins of different tasks are on "
                    "different scales and are not compared.",
              "one": "Ordered by margin, closest call first (one task: its margins compare)."}


def queue_margin_text(query) -> str:
    """The queue's "Margin" cell; random queries have none (their ``q`` is a random draw)."""
    if query.strategy == "random":
        return format_margin(None)
    return format_margin(margin_from_uncertainty(query.uncertainty))


#: the learning curve's label axis spans at least this many labels
MIN_CURVE_LABELS = 10


class ActivePanel(QtWidgets.QWidget):
    """Ask the engine what to label next and follow its answer.

    Signals
    -------
    nextRequested(strategy), queryActivated(query), pickBest(), pickRunnerUp(), pickNeither(),
    refreshRequested(strategy)
    """

    nextRequested = QtCore.Signal(str)
    refreshRequested = QtCore.Signal(str)
    queryActivated = QtCore.Signal(object)
    pickBest = QtCore.Signal()
    pickRunnerUp = QtCore.Signal()
    pickNeither = QtCore.Signal()

    def __init__(self, parent=None):
        super().__init__(parent)
        self.task = QtWidgets.QComboBox()
        self.task.setToolTip("Margins of different tasks are on different scales: rank one task's questions by "
                             "margin, or let every task's closest calls take turns")
        self.task.addItem("All tasks, taking turns", None)
        self.order_label = QtWidgets.QLabel(ORDER_TEXT[None])
        self.order_label.setObjectName("hint")
        self.order_label.setWordWrap(True)
        self.strategy = QtWidgets.QComboBox()
        self.strategy.setToolTip("How parts are ranked: the smallest margin between the best structure and its "
                                 "runner-up (recommended), the widest gap to the worst, the score, or at random")
        for key, title in STRATEGIES:
            self.strategy.addItem(title, key)
        self.next_button = QtWidgets.QPushButton("Next question (Q)")
        self.next_button.setToolTip("Jump to the part where a label helps most (Q)")
        self.question_label = QtWidgets.QLabel("Press Q for a question.")
        self.question_label.setObjectName("question")
        self.question_label.setWordWrap(True)
        font = self.question_label.font()
        font.setBold(True)
        font.setPointSizeF(font.pointSizeF() * 1.1)
        self.question_label.setFont(font)
        self.answers_label = QtWidgets.QLabel("")
        self.answers_label.setWordWrap(True)
        self.answers_label.setTextFormat(Qt.TextFormat.RichText)
        self.best_button = QtWidgets.QPushButton("A · Model is right")
        self.best_button.setToolTip("Store the labels the model's answer writes (A)")
        self.runner_button = QtWidgets.QPushButton("B · Runner-up is right")
        self.runner_button.setToolTip("Store the labels the runner-up's answer writes (B)")
        self.neither_button = QtWidgets.QPushButton("N · Neither")
        self.neither_button.setToolTip("Neither is right: draw the label yourself on the view (N)")
        self.queue = QtWidgets.QTreeWidget()
        self.queue.setHeaderLabels(["#", "Item", "Part", "Margin"])
        self.queue.headerItem().setToolTip(
            3, "Gap between the model's best structure on the part and its runner-up, in change penalties:\n"
               "the smaller, the closer the call and the more a label there is expected to teach.\n"
               "Copy-number and audio margins are on different scales, so their questions take turns\n"
               "in the queue rather than being sorted together by margin")
        self.queue.headerItem().setToolTip(0, "Order of the questions: each task's closest calls first, the tasks taking turns")
        self.queue.setRootIsDecorated(False)
        self.queue.setAlternatingRowColors(True)
        header = self.queue.header()
        header.setStretchLastSection(False)
        header.setMinimumSectionSize(24)
        header.setSectionResizeMode(1, QtWidgets.QHeaderView.ResizeMode.Stretch)
        for c, w in ((0, 28), (2, 120), (3, 60)):
            header.setSectionResizeMode(c, QtWidgets.QHeaderView.ResizeMode.Fixed)
            header.resizeSection(c, w)
        self.queue.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self.curve = pg.PlotWidget()
        self.curve.setBackground(theme.BACKGROUND)
        self.curve.setMinimumHeight(120)
        self.curve.setMaximumHeight(180)
        self.curve.setLabel("left", "uncertainty")
        self.curve.setToolTip("Mean uncertainty exp(\u2212margin) of the unlabelled parts after each question")
        self.curve.setLabel("bottom", "labels")
        self.curve.showGrid(x=True, y=True, alpha=theme.GRID_ALPHA)
        theme.light_axes(self.curve.getPlotItem())
        self.curve.setMenuEnabled(False)
        self.curve.getAxis("bottom").enableAutoSIPrefix(False)
        self.curve.getAxis("left").enableAutoSIPrefix(False)
        self.curve_line = self.curve.plot([], [], pen=pg.mkPen(theme.PREDICTION, width=2), symbol="o",
                                          symbolSize=5, symbolBrush=theme.PREDICTION, symbolPen=None)
        lay = QtWidgets.QVBoxLayout(self)
        lay.setContentsMargins(6, 6, 6, 6)
        row = QtWidgets.QHBoxLayout()
        row.addWidget(QtWidgets.QLabel("Strategy:"))
        row.addWidget(self.strategy, 1)
        lay.addLayout(row)
        row_t = QtWidgets.QHBoxLayout()
        row_t.addWidget(QtWidgets.QLabel("Questions:"))
        row_t.addWidget(self.task, 1)
        lay.addLayout(row_t)
        lay.addWidget(self.order_label)
        lay.addWidget(self.next_button)
        lay.addWidget(self.question_label)
        lay.addWidget(self.answers_label)
        row2 = QtWidgets.QHBoxLayout()
        row2.addWidget(self.best_button)
        row2.addWidget(self.runner_button)
        row2.addWidget(self.neither_button)
        lay.addLayout(row2)
        lay.addWidget(self.queue, 1)
        lay.addWidget(self.curve)
        self.next_button.clicked.connect(lambda: self.nextRequested.emit(self.current_strategy()))
        self.strategy.currentIndexChanged.connect(lambda *_: self.refreshRequested.emit(self.current_strategy()))
        self.task.currentIndexChanged.connect(self._task_changed)
        self.best_button.clicked.connect(self.pickBest)
        self.runner_button.clicked.connect(self.pickRunnerUp)
        self.neither_button.clicked.connect(self.pickNeither)
        self.queue.itemActivated.connect(self._activated)
        self.queue.itemClicked.connect(self._activated)
        self._queries = []
        self.question = None

    def current_strategy(self) -> str:
        return self.strategy.currentData()

    def current_task(self):
        """The task key the queue is restricted to (``"segmentation/cgh"``...), or None for every task."""
        return self.task.currentData()

    def set_tasks(self, keys):
        """Offer one queue per task in ``keys`` besides the mixed one, keeping the current choice if it remains."""
        keys = sorted(set(keys))
        current = self.current_task()
        if keys == [self.task.itemData(i) for i in range(1, self.task.count())]:
            return
        self.task.blockSignals(True)
        while self.task.count() > 1:
            self.task.removeItem(1)
        for key in keys:
            self.task.addItem(TASK_TITLES.get(key, key), key)
        index = self.task.findData(current) if current in keys else 0
        self.task.setCurrentIndex(max(index, 0))
        self.task.blockSignals(False)
        self.order_label.setText(ORDER_TEXT.get(self.current_task(), ORDER_TEXT["one"]))

    def _task_changed(self, *_):
        self.order_label.setText(ORDER_TEXT.get(self.current_task(), ORDER_TEXT["one"]))
        self.refreshRequested.emit(self.current_strategy())

    def set_queries(self, queries, names: dict, describe=None):
        """Fill the queue with ``queries`` (marginalia.types.Query); ``names`` maps item id to name."""
        self._queries = list(queries)
        self.queue.clear()
        for q in self._queries:
            part = describe(q) if describe else f"{q.start}\u2013{max(q.stop - 1, q.start)}"
            it = QtWidgets.QTreeWidgetItem([str(q.rank + 1), names.get(q.item_id, q.item_id[:8]), part,
                                            queue_margin_text(q)])
            it.setToolTip(1, names.get(q.item_id, q.item_id))   # the column is narrow: long names are elided
            it.setToolTip(2, part)
            it.setToolTip(3, f"uncertainty exp(\u2212margin) = {q.uncertainty:.6g} ({q.strategy})")
            it.setData(0, Qt.ItemDataRole.UserRole, q)
            it.setTextAlignment(3, Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
            self.queue.addTopLevelItem(it)

    def queries(self):
        return list(self._queries)

    def set_question(self, question, describe=str):
        """Show ``question`` (a marginalia.active.questions.Question, or None) and the labels each answer writes.

        ``describe(label)`` words one label as the Labels panel does.
        """
        self.question = question
        if question is None:
            self.question_label.setText("Press Q for a question.")
            self.answers_label.setText("")
            return
        self.question_label.setText(question.sentence)
        rows = []
        for key, title, which, colour in (("A", "Model is right", "model", theme.QUESTION_MODEL),
                                          ("B", "Runner-up is right", "runner-up", theme.QUESTION_RUNNER)):
            said = "; ".join(describe(lab) for lab in question.answers[which]) or "nothing new"
            rows.append(f"<b>{key}</b> <span style='color:{colour}'>■</span> {title} → writes "
                        f"<i>{html.escape(said)}</i>")
        rows.append("<b>N</b> Neither → writes nothing: draw the label yourself")
        rows.append(f"margin {format_margin(question.margin)}")
        self.answers_label.setText("<br>".join(rows))

    def set_current(self, query):
        """Select the row of ``query``'s part (the same part in a newer ranking counts)."""
        key = (query.item_id, query.start, query.stop)
        for i in range(self.queue.topLevelItemCount()):
            it = self.queue.topLevelItem(i)
            q = it.data(0, Qt.ItemDataRole.UserRole)
            if q is not None and (q.item_id, q.start, q.stop) == key:
                self.queue.setCurrentItem(it)
                return

    def set_curve(self, rows):
        """Rows ``{labels, mean_uncertainty, ...}`` from ``engine.learning_curve()``."""
        xs = np.array([float(r.get("labels", i)) for i, r in enumerate(rows)], dtype=float)
        ys = np.array([float(r.get("mean_uncertainty", np.nan)) for r in rows], dtype=float)
        ok = np.isfinite(xs) & np.isfinite(ys)
        self.curve_line.setData(xs[ok], ys[ok])
        # fixed frame: labels from 0 (at least 0..10: label counts are whole numbers, never 0.2, 0.4 ...),
        # uncertainty in [0, 1], so one round is a point on a readable axis (not a lone dot centred on
        # 29.6..30.4) and the fall of the curve keeps its true size
        right = float(xs[ok].max()) if ok.any() else 0.0
        self.curve.setXRange(0.0, max(right, MIN_CURVE_LABELS) * 1.05, padding=0)
        self.curve.setYRange(0.0, 1.05, padding=0)

    def _activated(self, it, _col=0):
        q = it.data(0, Qt.ItemDataRole.UserRole)
        if q is not None:
            self.queryActivated.emit(q)
