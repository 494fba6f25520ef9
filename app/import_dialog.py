"""The import dialog: what each chosen file is, what the import will add, the recording <-> score pairs, and
the columns of each copy-number table.

The engine recognises the files and proposes the pairs (:meth:`marginalia.engine.Engine.plan_import`); this
dialog only shows the plan and lets the user change each recording's score, and each table's column naming
and position unit (what ``--columns`` and ``--position-unit`` say on the command line), before anything is
stored. The naming is tried on the table's first rows, which the plan keeps: nothing is read again here.
"""

from __future__ import annotations

from pathlib import Path

from PySide6 import QtGui, QtWidgets

from marginalia.engine import IMPORT_FILE_ROLES as FILE_ROLES

NO_SCORE = "(no score: segment the recording)"
NO_COLUMN = "(none)"
#: the position units offered (the reader's, :data:`marginalia.io.cgh_layouts.POSITION_UNITS`)
UNITS = ("bp", "kb", "Mb")
PREVIEW_ROWS = 5


class ColumnMapping(QtWidgets.QGroupBox):
    """Which column of one copy-number table holds what, its position unit, and a preview of its first rows.

    Parameters
    ----------
    planned : PlannedFile
        A plan entry with a ``table`` preview (:class:`marginalia.io.cgh_layouts.TablePreview`).
    """

    def __init__(self, planned, on_change=None, parent=None):
        super().__init__(f"Columns of {planned.name}", parent)
        self.planned = planned
        self.table = planned.table
        self.setObjectName("column_mapping")
        lay = QtWidgets.QVBoxLayout(self)
        form = QtWidgets.QGridLayout()
        header = list(self.table.header)
        detected = self.table.detected or {}
        self.combos = {}
        wide = len(detected.get("logratio", ())) > 1
        for role, label, optional in (("id", "Profile id", True), ("chromosome", "Chromosome", True),
                                      ("position", "Position", False), ("logratio", "Log ratio", False)):
            combo = QtWidgets.QComboBox()
            combo.setObjectName(f"column_{role}")
            if optional:
                combo.addItem(NO_COLUMN, None)
            elif role not in detected:
                combo.addItem("(choose a column)", None)
            if role == "logratio" and wide:
                samples = "+".join(detected["logratio"])
                combo.addItem(f"one column per sample ({len(detected['logratio'])})", samples)
            for name in header:
                combo.addItem(name, name)
            chosen = detected.get(role)
            if role == "logratio" and chosen is not None:
                chosen = "+".join(chosen)
            combo.setCurrentIndex(max(0, combo.findData(chosen)))
            combo.setToolTip({"id": "the column naming the profile (none: the file name is the profile id)",
                              "chromosome": "the column naming the chromosome (none: one sequence per profile)",
                              "position": "the probes' positions along the chromosome",
                              "logratio": "the log ratios (a DNAcopy table has one column per sample)"}[role])
            combo.currentIndexChanged.connect(self._update)
            row, col = divmod(len(self.combos), 2)
            form.addWidget(QtWidgets.QLabel(label), row, 2 * col)
            form.addWidget(combo, row, 2 * col + 1)
            self.combos[role] = combo
        self.unit = QtWidgets.QComboBox()
        self.unit.setObjectName("position_unit")
        self.unit.addItems(UNITS)
        self.unit.setToolTip("the unit of the positions: DNAcopy's Coriell table is in kb; kb and Mb are converted "
                             "to base pairs")
        self.unit.currentIndexChanged.connect(self._update)
        form.addWidget(QtWidgets.QLabel("Positions in"), 0, 4)
        form.addWidget(self.unit, 0, 5)
        form.setColumnStretch(6, 1)
        lay.addLayout(form)

        rows = self.table.rows[:PREVIEW_ROWS]
        grid = QtWidgets.QTableWidget(len(rows), len(header))
        grid.setObjectName("column_preview")
        grid.setHorizontalHeaderLabels(header)
        grid.verticalHeader().setVisible(False)
        grid.setEditTriggers(QtWidgets.QAbstractItemView.EditTrigger.NoEditTriggers)
        for i, row in enumerate(rows):
            for j, cell in enumerate(row):
                grid.setItem(i, j, QtWidgets.QTableWidgetItem(cell))
        grid.resizeColumnsToContents()
        grid.resizeRowsToContents()
        grid.setFixedHeight(grid.horizontalHeader().sizeHint().height() + grid.verticalHeader().length()
                            + 2 * grid.frameWidth() + 2)
        self.preview = grid
        lay.addWidget(grid)
        self.status = QtWidgets.QLabel()
        self.status.setObjectName("column_status")
        self.status.setWordWrap(True)
        lay.addWidget(self.status)
        self._on_change = on_change
        self.valid = False
        self._update()

    def columns_text(self):
        """The chosen naming and unit as ``--columns`` text."""
        parts = []
        for role, combo in self.combos.items():
            if combo.currentData() is not None:
                parts.append(f"{role}={combo.currentData()}")
        parts.append(f"unit={self.unit.currentText()}")
        return ",".join(parts)

    def changed(self) -> bool:
        """True when the user's choice differs from how the plan reads the table (then it is passed on)."""
        detected = self.table.detected
        if detected is None or self.unit.currentText() != "bp":
            return True
        return any(self.combos[r].currentData() != ("+".join(detected[r]) if r == "logratio" else detected.get(r))
                   for r in self.combos)

    def choose(self, role: str, column) -> None:
        """Pick ``column`` (a header name, None for none) for ``role``, as the user does in its box."""
        combo = self.combos[role]
        combo.setCurrentIndex(combo.findData(column))

    def choose_unit(self, unit: str) -> None:
        self.unit.setCurrentIndex(UNITS.index(unit))

    def _update(self, *_):
        from marginalia.exceptions import MarginaliaError
        warn = ""
        hint = getattr(self.table, "unit_hint", None)
        if hint and self.unit.currentText() == "bp":
            warn = (f" <span style='color:#d55e00'>The positions look like {hint}: choose {hint} if they "
                    "are.</span>")
        try:
            self.status.setText("Read as " + self.table.describe(self.columns_text()) + "." + warn)
            self.valid = True
        except MarginaliaError as exc:
            self.status.setText(f"<span style='color:#d55e00'>{exc}</span>")
            self.valid = False
        if self._on_change is not None:
            self._on_change()


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

        self.mappings = {}
        tables = [f for f in plan.files if getattr(f, "table", None) is not None]
        if tables:
            lay.addWidget(QtWidgets.QLabel("<b>Copy-number tables</b> \u2014 the columns as recognised; change "
                                           "them, or the unit of the positions, here"))
            holder = QtWidgets.QWidget()
            column = QtWidgets.QVBoxLayout(holder)
            column.setContentsMargins(0, 0, 0, 0)
            for f in tables:
                box = ColumnMapping(f, self._update_summary)
                self.mappings[f.path] = box
                column.addWidget(box)
            scroll = QtWidgets.QScrollArea()      # many tables scroll instead of growing the dialog off screen
            scroll.setWidgetResizable(True)
            scroll.setFrameShape(QtWidgets.QFrame.Shape.NoFrame)
            scroll.setWidget(holder)
            lay.addWidget(scroll, 2)

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
        self.resize(900, 700 if self.mappings else 520)

    def pairs(self) -> dict:
        """``{recording path: score path or None}`` as chosen in the dialog."""
        return {rec: combo.currentData() for rec, combo in self.combos.items()}

    def choose_score(self, recording: str, score) -> None:
        """Pair ``recording`` with ``score`` (a path, or None for no score), as picking it in its box does."""
        combo = self.combos[str(recording)]
        combo.setCurrentIndex(combo.findData(None if score is None else str(score)))

    def columns(self) -> dict:
        """``{table path: --columns text}`` for the tables whose naming or unit the user changed."""
        return {path: box.columns_text() for path, box in self.mappings.items() if box.valid and box.changed()}

    def _update_summary(self, *_):
        if not hasattr(self, "import_button"):
            return       # the mappings are built before the buttons
        self.summary.setText(self.plan.summary(self.pairs()))
        mapped = self.columns()
        self.import_button.setEnabled(
            any(not f.error and (f.n_items or f.n_labels) for f in self.plan.files) or bool(mapped))
