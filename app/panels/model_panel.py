"""Model panel: which model is current, how it got there, whether more labels would help, and retraining."""

from __future__ import annotations

import datetime

from PySide6 import QtCore, QtWidgets
from PySide6.QtCore import Qt

#: how each learner that made a version is named in the panel
LEARNERS = {"initial": "untrained first model", "perceptron": "quick update",
            "ssvm": "full fit (SSVM)", "cgh-recipe": "full fit (aCGH recipe)", "revert": "revert",
            "weak-supervision": "full fit (alignment)", "prior": "started from the prior model",
            "coupled": "full fit coupled to the prior",
            "weak-supervision-prior": "full fit (alignment) from the prior's scorers"}
#: versions listed, newest first (every label's quick update is a version)
SHOWN_VERSIONS = 12


def short_id(model_id: str) -> str:
    """A model id short enough for a status line yet telling versions apart: ``"ali-d7e4d97d"``, ``"sync@…8255810"``.

    The sync metric's ids (``"sync@"`` and a microsecond clock) share their leading digits for days, so they keep
    their last digits instead of their first.
    """
    model_id = str(model_id or "")
    head, at, tail = model_id.partition("@")
    if at and len(tail) > 7:
        return f"{head}@\u2026{tail[-7:]}"
    return model_id[:12]


def learner_text(v) -> str:
    """What made a model version, as the panel and the Model versions dialog name it.

    ``v`` is an ``engine.model_versions`` row; the sync metric's (``task`` ``"sync"``) say what they were fitted
    from: ``"sync metric learned from 3 sync anchors on 1 pair"``.
    """
    how = v.get("trained_by") or ""
    learner = LEARNERS.get(how, how or "model")
    if how == "revert" and v.get("reverted_from"):
        learner = f"revert to {short_id(v['reverted_from'])}"
    if how == "coupled" and v.get("rho") is not None:
        learner += f" (\u03c1={v['rho']:g})"
    if v.get("task") == "sync":
        src = v.get("fitted_from") or "?"
        learner = {"ssvm": f"sync metric learned from {src}", "model-file": f"sync metric read from {src}",
                   "project": f"sync metric taken from {src}"}.get(how, f"sync metric: {learner} ({src})")
    return learner


def describe_versions(versions) -> list:
    """What each model version changed, newest first.

    Parameters
    ----------
    versions : list of dict
        ``engine.model_versions(item)`` rows, oldest first (``id``, ``created``, ``n_labels``,
        ``trained_by``, ``reverted_from``, ``current``).

    Returns
    -------
    list of dict
        ``id``, ``when`` (``"14:02:31"``), ``labels`` (``"12"`` or ``"?"``; ``""`` for the sync metric's),
        ``change`` (``"+3 labels · quick update"``, ``"sync metric, 3 anchors"``), ``detail`` (``change`` in full:
        ``"sync metric learned from 3 sync anchors on 1 pair"``), ``errors`` (label errors on today's labelled
        regions, ``"2 / 12"``; ``""`` when not measured) and ``current``; at most :data:`SHOWN_VERSIONS` rows.
    """
    rows, previous_of = [], {}
    for v in versions:
        n = v.get("n_labels")
        learner = learner_text(v)
        sync = v.get("task") == "sync"     # the project's sync metric: its anchors are named in ``learner``
        previous = previous_of.get(v.get("task"))
        if sync or previous is None or n is None or previous.get("n_labels") is None:
            delta = ""
        else:
            d = n - previous["n_labels"]
            delta = (f"+{d} label{'s' if d != 1 else ''}" if d > 0 else
                     f"\u2212{-d} label{'s' if d != -1 else ''}" if d < 0 else "same labels")
        change = " \u00b7 ".join(p for p in (delta, learner) if p)
        short = change
        if sync and v.get("trained_by") in ("ssvm", "revert") and n is not None:   # the panel's column is narrow
            short = f"sync metric, {n} anchor{'s' if n != 1 else ''}" + (
                " (restored)" if v.get("trained_by") == "revert" else "")
        rows.append({"id": v["id"], "when": datetime.datetime.fromtimestamp(v["created"]).strftime("%H:%M:%S"),
                     "labels": "" if sync else "?" if n is None else str(n), "change": short, "detail": change,
                     "errors": errors_text(v.get("errors")), "current": bool(v.get("current"))})
        previous_of[v.get("task")] = v
    return rows[::-1][:SHOWN_VERSIONS]


def version_choices(versions) -> list:
    """The Model versions dialog's rows, newest first: ``[(text, model id)]``.

    ``versions`` are ``engine.model_versions(item)`` rows, oldest first; the sync metric's (``task``
    ``"sync"``) say what they were fitted from instead of a label count.
    """
    out = []
    for v in reversed(versions):
        when = datetime.datetime.fromtimestamp(v["created"]).strftime("%Y-%m-%d %H:%M:%S")
        n = "?" if v["n_labels"] is None else v["n_labels"]
        what = learner_text(v) if v["task"] == "sync" else f"{n} labels \u00b7 {learner_text(v)}"
        out.append((f"{when}  \u00b7  {what}  \u00b7  {short_id(v['id'])}" + ("  (current)" if v["current"] else ""),
                    v["id"]))
    return out


def errors_text(errors) -> str:
    """Label errors on the labelled regions as the panel writes them: ``"2 / 12"`` (``""``: not measured)."""
    if not errors or not errors.get("n_regions"):
        return ""
    return f"{errors['errors']} / {errors['n_regions']}"


def prior_reading(prior, figures=None) -> str:
    """The prior model in one or two lines: where it came from, its coupling, and its figures beside the current model's.

    Parameters
    ----------
    prior : dict or None
        ``engine.prior(item)``.
    figures : dict, optional
        ``engine.prior_figures(item)``: ``{"prior": errors, "current": errors}``.
    """
    if not prior:
        return ""
    import os
    source = os.path.basename(str(prior.get("source", ""))) or "?"
    if prior.get("rho") is None:        # an aligner: retrains start from its scorers, no labels to weigh
        head = f"{source} ({prior.get('source_kind', 'model file')}): retrains start from its scorers"
    else:
        head = f"{source} ({prior.get('source_kind', 'model file')}), coupling \u03c1={float(prior['rho']):g}"
    if prior.get("source_items"):
        head += f" with its {prior['source_items']} labelled items"
    unit = "labels" if figures and (figures.get("prior") or {}).get("unit") == "labels" else "labelled regions"
    if not figures or not figures.get("prior") or not figures["prior"].get("n_regions"):
        return head + f"\nno {unit[:-1] if unit == 'labels' else 'labelled region'} yet to measure it on"
    n = figures["prior"]["n_regions"]
    cur = figures.get("current") or {}
    now = f", current model {cur['errors']}" if cur.get("n_regions") == n else ""
    return head + f"\nlabel errors on the {n} {unit}: prior {figures['prior']['errors']}{now}"


def stopping_reading(signal: dict) -> str:
    """The stopping signal in one line: ``"More labels are unlikely to change the model: relative η=0.001 …"``.

    ``None`` (no project) reads as nothing.
    """
    if signal is None:
        return ""
    evidence = (signal or {}).get("evidence") or ""
    if (signal or {}).get("fired"):
        head = "More labels are unlikely to change the model"
        evidence = evidence.partition(": ")[2] or evidence
    else:
        head = "Keep labelling"
    return f"{head}: {evidence}" if evidence else head


class ModelPanel(QtWidgets.QWidget):
    """Shows the current model, its versions with what each changed, the stopping reading; retrains.

    Signals
    -------
    retrainRequested(), stopRequested(), liveToggled(bool), versionsRequested()
    """

    retrainRequested = QtCore.Signal()
    stopRequested = QtCore.Signal()
    liveToggled = QtCore.Signal(int)
    versionsRequested = QtCore.Signal()

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
        self.reading = QtWidgets.QLabel("Keep labelling: no question asked yet")
        self.reading.setWordWrap(True)
        self.reading.setToolTip("The stopping signal of the shown item's task: how much the mean uncertainty of "
                                "the unlabelled parts still moves from one question to the next (\u03b7)")
        self.prior_label = QtWidgets.QLabel("")
        self.prior_label.setWordWrap(True)
        self.prior_label.setTextInteractionFlags(QtCore.Qt.TextInteractionFlag.TextSelectableByMouse)
        self.prior_label.setToolTip("The model this task started from (Model \u25b8 Start from another project or "
                                    "model file\u2026): retrains couple the labels to it by \u03c1; its label "
                                    "errors and the current model's on the labelled regions, each decoded without "
                                    "its labels")
        self.versions = QtWidgets.QTreeWidget()
        self.versions.setColumnCount(4)
        self.versions.setHeaderLabels(["When", "Labels", "What changed", "Errors"])
        self.versions.headerItem().setToolTip(3, "Label errors of each version on today's labelled regions "
                                                 "(decoded without their labels): errors / regions")
        self.versions.setRootIsDecorated(False)
        self.versions.setUniformRowHeights(True)
        self.versions.setMinimumHeight(70)
        self.versions.setToolTip("The models of the shown item's task, newest first: when, on how many labels, "
                                 "and what made them; double-click (or Model \u25b8 Model versions, Ctrl+Shift+M) "
                                 "to revert to one")
        header = self.versions.header()
        header.setStretchLastSection(True)
        header.setSectionResizeMode(0, QtWidgets.QHeaderView.ResizeMode.ResizeToContents)
        header.setSectionResizeMode(1, QtWidgets.QHeaderView.ResizeMode.ResizeToContents)
        header.setStretchLastSection(False)
        header.setSectionResizeMode(2, QtWidgets.QHeaderView.ResizeMode.Stretch)
        header.setSectionResizeMode(3, QtWidgets.QHeaderView.ResizeMode.ResizeToContents)
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
        form.addRow(self.reading)
        self._prior_caption = QtWidgets.QLabel("Prior:")
        form.addRow(self._prior_caption, self.prior_label)
        self._prior_caption.setVisible(False)
        self.prior_label.setVisible(False)
        form.addRow(self.versions)
        self.retrain_button.clicked.connect(self.retrainRequested)
        self.stop_button.clicked.connect(self.stopRequested)
        self.versions.itemDoubleClicked.connect(lambda *_: self.versionsRequested.emit())
        self.live.toggled.connect(lambda on: self.liveToggled.emit(int(on)))

    def set_model(self, model_id, kind: str = ""):
        self.model_label.setText("no model yet" if not model_id else f"{short_id(model_id)} {('(' + kind + ')') if kind else ''}")
        self.model_label.setToolTip(model_id or "")

    def set_activity(self, text: str, stoppable: bool = False):
        self.activity.setText(text or "idle")
        self.stop_button.setEnabled(bool(stoppable))
        self.stop_button.setVisible(bool(stoppable))

    def set_latency(self, seconds: float):
        self.latency.setText(f"{seconds * 1000:.0f} ms from label to redraw")

    def set_versions(self, versions):
        """List ``engine.model_versions(item)`` (oldest first; None: unknown) newest first, saying what changed."""
        self.versions.clear()
        for row in describe_versions(versions or []):
            it = QtWidgets.QTreeWidgetItem([row["when"], row["labels"], row["change"], row["errors"]])
            it.setToolTip(2, f"{row['detail']}\nmodel {row['id']}" + (" (current)" if row["current"] else ""))
            if row["errors"]:
                it.setToolTip(3, f"{row['errors']} labelled regions wrong when this version draws them without "
                                 "their labels")
            it.setData(0, Qt.ItemDataRole.UserRole, row["id"])
            it.setTextAlignment(1, Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
            it.setTextAlignment(3, Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
            if row["current"]:
                font = it.font(0)
                font.setBold(True)
                for c in range(4):
                    it.setFont(c, font)
            self.versions.addTopLevelItem(it)

    def version_rows(self) -> list:
        """The listed versions as their texts (what the person reads), newest first."""
        return [[self.versions.topLevelItem(i).text(c) for c in range(4)]
                for i in range(self.versions.topLevelItemCount())]

    def set_prior(self, prior, figures=None):
        """Show the task's prior model (``engine.prior``) and its figures (``engine.prior_figures``); None hides it."""
        text = prior_reading(prior, figures)
        self.prior_label.setText(text)
        self._prior_caption.setVisible(bool(text))
        self.prior_label.setVisible(bool(text))

    def set_stopping(self, signal: dict):
        """Show the stopping signal (``engine.stopping_signal(item)``) of the shown item's task in one line."""
        self.reading.setText(stopping_reading(signal))
