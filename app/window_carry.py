"""Recordings of the same music: carry one's labels onto the others (Edit ▸ Carry labels to other recordings) and
compare two of them with the path that aligns them (View ▸ Compare with another recording)."""

from __future__ import annotations

from typing import Optional

from PySide6 import QtWidgets
from PySide6.QtCore import Qt

from marginalia.exceptions import MarginaliaError

from .sync_dialog import SyncDialog

__all__ = ["CarryDialog", "CarryMixin", "carry_summary"]


class CarryDialog(QtWidgets.QDialog):
    """Choose the recordings that receive the shown recording's labels.

    Recordings with a score of the same name as the source's are checked at first (most likely
    other performances of the same piece); the person decides.
    """

    def __init__(self, source, recordings, parent=None):
        super().__init__(parent)
        self.setWindowTitle(f"Carry the labels of {source.name}")
        layout = QtWidgets.QVBoxLayout(self)
        intro = QtWidgets.QLabel(
            f"The {source.n_labels} label(s) of <b>{source.name}</b> are mapped onto each chosen recording "
            "through its alignment to this one (regions, boundaries, score anchors and event spans). "
            "They are stored as one step: Ctrl+Z takes them all back.")
        intro.setWordWrap(True)
        layout.addWidget(intro)
        self.list = QtWidgets.QListWidget()
        self.list.setToolTip("The recordings that receive the labels")
        for info, same_piece in recordings:
            row = QtWidgets.QListWidgetItem(info.name + ("" if not same_piece else "   (same score)"))
            row.setData(Qt.ItemDataRole.UserRole, info.id)
            row.setFlags(row.flags() | Qt.ItemFlag.ItemIsUserCheckable)
            row.setCheckState(Qt.CheckState.Checked if same_piece else Qt.CheckState.Unchecked)
            self.list.addItem(row)
        layout.addWidget(self.list)
        if not any(same for _, same in recordings):
            hint = QtWidgets.QLabel("No other recording has a score of the same name: check those that play the "
                                    "same music.")
            hint.setWordWrap(True)
            layout.addWidget(hint)
        pick = QtWidgets.QHBoxLayout()
        for text, state in (("Check all", Qt.CheckState.Checked), ("Check none", Qt.CheckState.Unchecked)):
            button = QtWidgets.QPushButton(text)
            button.setToolTip(f"{text.split()[0]} every recording of the list")
            button.clicked.connect(lambda _=False, s=state: self._check_all(s))
            pick.addWidget(button)
        pick.addStretch(1)
        layout.addLayout(pick)
        self.as_suggestions = QtWidgets.QCheckBox("As suggestions to review (dotted; Ctrl+Enter accepts one, "
                                                  "Ctrl+Shift+Enter all of a recording, Del rejects)")
        self.as_suggestions.setChecked(True)
        self.as_suggestions.setToolTip("Suggestions are shown but not learned from or exported until accepted; "
                                       "unchecked, the carried labels are ordinary labels at once")
        layout.addWidget(self.as_suggestions)
        self.buttons = QtWidgets.QDialogButtonBox(QtWidgets.QDialogButtonBox.StandardButton.Cancel)
        self.carry_button = self.buttons.addButton("Carry", QtWidgets.QDialogButtonBox.ButtonRole.AcceptRole)
        self.carry_button.setToolTip("Align each chosen recording to this one and add the carried labels")
        self.buttons.accepted.connect(self.accept)
        self.buttons.rejected.connect(self.reject)
        layout.addWidget(self.buttons)
        self.list.itemChanged.connect(lambda *_: self._enable())
        self._enable()
        self.resize(520, 420)

    def _check_all(self, state):
        for i in range(self.list.count()):
            self.list.item(i).setCheckState(state)

    def _enable(self):
        self.carry_button.setEnabled(bool(self.chosen()))

    def chosen(self) -> list:
        """Ids of the checked recordings, in the list's order."""
        return [self.list.item(i).data(Qt.ItemDataRole.UserRole) for i in range(self.list.count())
                if self.list.item(i).checkState() == Qt.CheckState.Checked]


def carry_summary(report, names: dict, *, as_suggestions: bool = False) -> str:
    """One line saying what a carry added, where, and what it left out."""
    per = ", ".join(f"{names.get(i, i)} {n}" for i, n in report.per_target.items())
    what = "suggested label(s)" if as_suggestions else "label(s)"
    text = f"Carried {len(report.stored)} {what} onto {len(report.per_target)} recording(s) ({per})"
    if report.already:
        text += f"; {report.already} already there"
    for why, n in report.skipped.items():
        text += f"; {n} not carried: {why}"
    if as_suggestions and report.stored:
        text += " \u2014 review them: Ctrl+Enter accepts the selected one, Ctrl+Shift+Enter all of a recording, Del rejects"
    return text + " \u2014 Ctrl+Z takes them all back"


class CarryMixin:
    """The main window's actions on several recordings: carry (dialog, background work with progress and cancel,
    summary) and compare (the path between two recordings, drawn)."""

    def carry_labels_dialog(self):
        """Labels > Carry labels to other recordings: choose the targets of the shown recording's labels."""
        source = self._shown_recording("show the labelled recording first")
        if source is None:
            return
        if not source.n_labels:
            self.statusBar().showMessage(f"{source.name} has no labels to carry yet", 6000)
            return
        others = [info for info in self.infos.values() if info.kind == "audio" and info.id != source.id]
        score = self.engine.score(source.id)
        piece = getattr(score, "name", None)

        def same_piece(info):
            other = self.engine.score(info.id)
            return piece is not None and other is not None and getattr(other, "name", None) == piece

        dialog = CarryDialog(source, [(info, same_piece(info)) for info in sorted(others, key=lambda i: i.name)],
                             self)
        self.last_carry_dialog = dialog
        if self.run_dialog(dialog) != QtWidgets.QDialog.DialogCode.Accepted:
            return
        self.carry_labels(source.id, dialog.chosen(), as_suggestions=dialog.as_suggestions.isChecked())

    # ------------------------------------------------------------ suggestions
    def accept_selected_suggestion(self):
        """Edit > Accept the selected suggestion (Ctrl+Enter): the selected dotted label becomes an ordinary label."""
        if self.engine is None:
            return
        lab = self.active_view().selected_label()
        if lab is None or not lab.suggested:
            self.statusBar().showMessage("Select a suggested (dotted) label first: Ctrl+Enter accepts it", 5000)
            return
        self._edit_suggestions(lambda: self.engine.accept_suggestions([lab.id]), "accepted")

    def accept_item_suggestions(self):
        """Edit > Accept all suggestions here (Ctrl+Shift+Enter), as one step."""
        if self.engine is not None and self.current_item is not None:
            self._edit_suggestions(lambda: self.engine.accept_suggestions(item_id=self.current_item), "accepted")

    def reject_item_suggestions(self):
        """Edit > Reject all suggestions here, as one step."""
        if self.engine is not None and self.current_item is not None:
            self._edit_suggestions(lambda: self.engine.reject_suggestions(item_id=self.current_item), "rejected")

    def _edit_suggestions(self, edit, verb: str):
        try:
            done = edit()
        except MarginaliaError as exc:
            self._show_error(f"Cannot {verb[:-2]} the suggestions", exc)
            return
        n = done if isinstance(done, int) else len(done)
        left = len(self.engine.suggestions(self.current_item)) if self.current_item else 0
        self.statusBar().showMessage(
            f"{n} suggestion{'s' if n != 1 else ''} {verb}" + (f"; {left} left here" if left else "")
            + (" \u2014 Ctrl+Z to undo" if n else ""), 8000)
        self.refresh_items()
        self._on_undo_state()
        self._refresh_history()
        if n and verb == "accepted" and self.learner is not None and self.current_item:
            self._label_edited(self.current_item)       # the model learns from what was accepted

    def run_dialog(self, dialog) -> int:
        """``dialog.exec()`` (tests replace this to answer it)."""
        return dialog.exec()

    def carry_labels(self, source_id: str, target_ids: list, *, as_suggestions: bool = True):
        """Carry in the background (Esc cancels; nothing is stored then), then say what moved."""
        engine = self.engine
        names = {i: info.name for i, info in self.infos.items()}

        def done(report):
            if self.engine is not engine:
                return
            self.statusBar().showMessage(carry_summary(report, names, as_suggestions=as_suggestions), 20000)
            self.refresh_items()
            self._on_undo_state()
            self._refresh_history()

        self.runner.submit("carry", lambda cancel, progress: engine.carry_labels(
            source_id, target_ids, cancel=cancel, progress=progress, as_suggestions=as_suggestions), on_done=done,
            on_error=lambda exc: self._show_error("Cannot carry the labels", exc),
            description=f"carrying the labels of {names.get(source_id, source_id)}")

    def _shown_recording(self, hint: str):
        """The shown item if it is a recording and the project has others, else None (the status bar says why)."""
        if self.engine is None or self.current_item is None:
            return None
        source = self.infos.get(self.current_item)
        if source is None or source.kind != "audio":
            self.statusBar().showMessage(f"This works on recordings: {hint}", 6000)
            return None
        if not any(info.kind == "audio" and info.id != source.id for info in self.infos.values()):
            self.statusBar().showMessage("The project has no other recording", 6000)
            return None
        return source

    def compare_recordings_dialog(self):
        """View > Compare with another recording: choose it, align it to the shown one, draw both and the path."""
        source = self._shown_recording("show one first (the Audio group of the Dataset panel)")
        if source is None:
            return
        others = sorted((info for info in self.infos.values() if info.kind == "audio" and info.id != source.id),
                        key=lambda info: info.name)
        target = self.choose_recording(f"Compare {source.name} with", others)
        if target is not None:
            self.compare_recordings(source.id, target)

    def choose_recording(self, title: str, infos) -> Optional[str]:
        """Ask which of ``infos`` (recordings); its id, or None when cancelled (tests replace this)."""
        names = [info.name for info in infos]
        name, ok = QtWidgets.QInputDialog.getItem(self, title, "Recording:", names, 0, False)
        return infos[names.index(name)].id if ok and name in names else None

    def compare_recordings(self, reference_id: str, target_id: str):
        """Align the two recordings in the background (Esc stops it), then show them joined by the path; the
        anchors placed there are stored at once and the path is recomputed through them."""
        engine = self.engine
        names = {i: info.name for i, info in self.infos.items()}

        def work(cancel, progress):
            compared = engine.sync_recordings(reference_id, target_id, question=True, cancel=cancel)
            return (compared, engine.spectrogram(reference_id), engine.spectrogram(target_id),
                    engine.labels(reference_id), engine.sequence(reference_id).positions)

        def done(out):
            if self.engine is not engine:
                return
            compared, ref_spec, tgt_spec, labels, positions = out
            dialog = SyncDialog(self.infos[reference_id], self.infos[target_id], ref_spec, tgt_spec, compared.path,
                                labels, positions, self, question=compared.question, anchors=compared.anchors,
                                model_id=compared.model_id)
            dialog.pair = (reference_id, target_id)
            dialog.path_state, dialog.pending = compared.state, None
            dialog.carryRequested.connect(lambda: (self.carry_labels(reference_id, [target_id]), dialog.accept()))
            dialog.anchorAdded.connect(lambda r, t: self._edit_sync_anchors(
                dialog, lambda: engine.add_sync_anchor(reference_id, target_id, r, t), "Cannot add this anchor"))
            dialog.anchorMoved.connect(lambda i, r, t: self._edit_sync_anchors(
                dialog, lambda: engine.move_sync_anchor(i, reference_id, r, t), "Cannot move this anchor"))
            dialog.anchorsDeleted.connect(lambda ids: self._edit_sync_anchors(
                dialog, lambda: engine.delete_sync_anchors(ids), "Cannot delete this anchor"))
            dialog.undoRequested.connect(self.undo)
            dialog.redoRequested.connect(self.redo)
            dialog.learnRequested.connect(lambda start: self.learn_sync_metric() if start
                                          else self.runner.cancel("sync-learn"))
            self.last_sync_dialog = dialog
            dialog.show()
            self.resync_dialog(dialog)   # anchors or a metric that changed while the pair was being aligned

        self.runner.submit("sync", work, on_done=done,
                           on_error=lambda exc: self._show_error("Cannot compare the recordings", exc),
                           description=f"aligning {names.get(target_id, target_id)} to "
                                       f"{names.get(reference_id, reference_id)}")

    def _edit_sync_anchors(self, dialog, edit, failure: str):
        """Store an anchor edit at once (a refusal is said in one line), then recompute the dialog's path."""
        try:
            edit()
        except MarginaliaError as exc:
            message = f"{failure}: {exc}"
            dialog.set_result(dialog.result, dialog.question, dialog.anchors, dialog.model_id)  # lines back in place
            dialog.say(message)
            self.statusBar().showMessage(message, 10000)
            return
        self._on_undo_state()
        self._refresh_history()
        self.resync_dialog(dialog)

    def resync_dialog(self, dialog=None):
        """Recompute the compare dialog's path through the pair's stored anchors, in the background (lane "sync":
        a newer edit cancels the older recomputation); nothing to do when nothing the path depends on (the
        anchors, the sync metric's version, options and weights) differs from the drawn path's or the one
        being computed."""
        dialog = dialog if dialog is not None else getattr(self, "last_sync_dialog", None)
        if dialog is None or self.engine is None or not dialog.isVisible():
            return
        engine = self.engine
        reference_id, target_id = dialog.pair
        try:
            anchors = engine.sync_anchors(reference_id, target_id)
            state = engine.sync_state(reference_id, target_id)
        except MarginaliaError:                  # a recording of the pair was removed
            return
        pending = dialog.pending if dialog.pending is not None and not dialog.pending[1].is_set() else None
        if state == (pending[0] if pending is not None else dialog.path_state):
            if pending is None and dialog.busy:  # a recomputation that was stopped: the drawn path is current
                dialog.set_result(dialog.result, dialog.question, dialog.anchors, dialog.model_id)
            return
        dialog.set_result(dialog.result, dialog.question, anchors, dialog.model_id)
        dialog.set_busy()

        def done(compared):
            dialog.pending = None
            if self.engine is engine:
                dialog.path_state = compared.state
                dialog.set_result(compared.path, compared.question, compared.anchors, compared.model_id)

        def failed(exc):
            dialog.pending = None
            dialog.set_result(dialog.result, dialog.question, dialog.anchors, dialog.model_id)
            dialog.say(f"Cannot recompute the path: {exc}")

        dialog.pending = (state, self.runner.submit("sync", lambda cancel, progress: engine.sync_recordings(
            reference_id, target_id, question=True, cancel=cancel), on_done=done, on_error=failed,
            description=f"aligning {self.infos[target_id].name} to {self.infos[reference_id].name} through "
                        f"{len(anchors)} anchor{'s' if len(anchors) != 1 else ''}"))

    def learn_sync_metric(self):
        """Model > Learn the sync metric: from the project's sync anchors and score-aligned pairs, in the background
        (Esc or the dialog's button stops it; nothing is stored then); the status bar says what it learned from."""
        if self.engine is None:
            return
        engine = self.engine
        if not getattr(self, "_watching_sync_learn", False):
            self.runner.busyChanged.connect(self._on_sync_learn_busy)
            self.runner.progress.connect(self._on_sync_learn_progress)
            self._watching_sync_learn = True

        def done(report):
            if self.engine is not engine:
                return
            self.statusBar().showMessage(report.summary(), 20000)
            dialog = getattr(self, "last_sync_dialog", None)
            if dialog is not None and dialog.isVisible():
                self.resync_dialog(dialog)
                dialog.say(report.summary())

        self.runner.submit("sync-learn", lambda cancel, progress: engine.learn_sync_metric(
            cancel=cancel, progress=progress), on_done=done,
            on_error=lambda exc: self._show_error("Cannot learn the sync metric", exc),
            description="learning the sync metric")

    def _on_sync_learn_busy(self, lane, busy, _description):
        """The compare dialog's learn button stops the learning while it runs, and comes back when it ends."""
        dialog = getattr(self, "last_sync_dialog", None)
        if lane == "sync-learn" and dialog is not None:
            dialog.set_learning(bool(busy))

    def _on_sync_learn_progress(self, lane, done, total, message):
        dialog = getattr(self, "last_sync_dialog", None)
        if lane == "sync-learn" and dialog is not None and dialog.isVisible():
            dialog.say(f"Learning the sync metric: {message} ({done}/{total}); \u201cStop learning\u201d stops it "
                       "and stores nothing.")
