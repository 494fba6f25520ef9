"""The import dialog: what each chosen file is, what the import will add, and the recording <-> score pairs.

The engine recognises the files and proposes the pairs (:meth:`marginalia.engine.Engine.plan_import`); this
dialog only shows the plan and lets the user change each recording's score before anything is stored.
"""

from __future__ import annotations

from pathlib import Path

from PySide6 import QtGui, QtWidgets

from marginalia.engine import IMPORT_FILE_ROLES as FILE_ROLES

NO_SCORE = "(no score: segment the recording)"


class ImportDialog(QtWidgets.QDialog):
    """Preview of an import; :meth:`pairs` is the pairing the user chose once the dialog is accepted.

    Parameters
    ----------
    plan : ImportPlan
        From :meth:`Engine.plan_import`.
    project : str
        Name of the project the files go into (shown in the title line).
    """

    def __init__(self, plan, project: str = "", parent=None):
        super().__init__(parent)
        self.plan = plan
        self.setWindowTitle("Marginalia \u2014 Import files")
        self.setObjectName("import_dialog")
        lay = QtWidgets.QVBoxLayout(self)
        head = QtWidgets.QLabel(f"These files go into <b>{project}</b>. Nothing is imported until you press "
                                "Import." if project else "Nothing is imported until you press Import.")
        head.setWordWrap(True)
        lay.addWidget(head)

        self.files = QtWidgets.QTreeWidget()
        self.files.setHeaderLabels(["File", "What it is", "What it holds"])
        self.files.setRootIsDecorated(False)
        self.files.setUniformRowHeights(True)
        self.files.setToolTip("Every chosen file, as Marginalia reads it. A file it cannot read is left out; "
                              "the line says why.")
        warn = QtGui.QBrush(QtGui.QColor("#d55e00"))
        for f in plan.files:
            row = QtWidgets.QTreeWidgetItem([f.name, FILE_ROLES.get(f.role, f.role), f.error or f.summary])
            row.setToolTip(0, f.path)
            row.setToolTip(2, f.error or f.summary)
            if f.error:
                row.setForeground(2, warn)
                row.setForeground(1, warn)
            self.files.addTopLevelItem(row)
        for c in range(3):
            self.files.resizeColumnToContents(c)
        lay.addWidget(QtWidgets.QLabel("<b>Files</b>"))
        lay.addWidget(self.files, 1)

        self.combos = {}
        recordings = list(plan.pairs)
        if recordings:
            lay.addWidget(QtWidgets.QLabel("<b>Recordings and their scores</b> \u2014 guessed from the file "
                                           "names; change any pairing here"))
            table = QtWidgets.QTableWidget(len(recordings), 2)
            table.setHorizontalHeaderLabels(["Recording", "Score"])
            table.verticalHeader().setVisible(False)
            table.setEditTriggers(QtWidgets.QAbstractItemView.EditTrigger.NoEditTriggers)
            table.horizontalHeader().setSectionResizeMode(0, QtWidgets.QHeaderView.ResizeMode.ResizeToContents)
            table.horizontalHeader().setStretchLastSection(True)
            for i, rec in enumerate(recordings):
                cell = QtWidgets.QTableWidgetItem(Path(rec).name)
                cell.setToolTip(rec)
                table.setItem(i, 0, cell)
                combo = QtWidgets.QComboBox()
                combo.addItem(NO_SCORE, None)
                for s in plan.scores:
                    combo.addItem(Path(s).name, s)
                combo.setCurrentIndex(max(0, combo.findData(plan.pairs[rec])))
                combo.setToolTip("The score this recording is aligned to; without one the recording is "
                                 "segmented (you can attach a score later from the Dataset panel)")
                combo.currentIndexChanged.connect(self._update_summary)
                table.setCellWidget(i, 1, combo)
                self.combos[rec] = combo
            self.pair_table = table
            lay.addWidget(table, 1)
        else:
            self.pair_table = None

        self.summary = QtWidgets.QLabel()
        self.summary.setWordWrap(True)
        self.summary.setObjectName("import_summary")
        lay.addWidget(self.summary)
        self.buttons = QtWidgets.QDialogButtonBox(QtWidgets.QDialogButtonBox.StandardButton.Cancel)
        self.import_button = self.buttons.addButton("Import", QtWidgets.QDialogButtonBox.ButtonRole.AcceptRole)
        self.import_button.setDefault(True)
        self.buttons.accepted.connect(self.accept)
        self.buttons.rejected.connect(self.reject)
        lay.addWidget(self.buttons)
        self._update_summary()
        self.resize(820, 520)

    def pairs(self) -> dict:
        """``{recording path: score path or None}`` as chosen in the dialog."""
        return {rec: combo.currentData() for rec, combo in self.combos.items()}

    def choose_score(self, recording: str, score) -> None:
        """Pair ``recording`` with ``score`` (a path, or None for no score), as picking it in its box does."""
        combo = self.combos[str(recording)]
        combo.setCurrentIndex(combo.findData(None if score is None else str(score)))

    def _update_summary(self, *_):
        self.summary.setText(self.plan.summary(self.pairs()))
        self.import_button.setEnabled(any(not f.error and (f.n_items or f.n_labels) for f in self.plan.files))
