"""Projects and files: open/new/demo project, import data and labels, export, the recent-projects menu."""

from __future__ import annotations

import os
import warnings
from pathlib import Path

from PySide6 import QtWidgets

from marginalia.exceptions import DataWarning, MarginaliaError, ProjectDamagedError

from . import errors

EXPORT_KINDS = {
    "annotations-csv": ("aCGH region labels (annotations.csv; every label kind goes to the bundle)", "file",
                        "annotations.csv"),
    "segments-csv": ("predicted segments (segments.csv)", "file", "segments.csv"),
    "seg": ("predicted segments for IGV / cBioPortal (segments.seg)", "file", "segments.seg"),
    "breaks-csv": ("predicted changes (breaks.csv)", "file", "breaks.csv"),
    "bedgraph": ("bedGraph track of segment means", "file", "segments.bedGraph"),
    "audacity": ("Audacity label tracks (one per audio item)", "dir", ""),
    "sonic-visualiser": ("Sonic Visualiser layers (one per audio item)", "dir", ""),
    "textgrid": ("Praat TextGrids (one per audio item)", "dir", ""),
    "jams": ("JAMS annotations (one per audio item)", "dir", ""),
    "aligned-midi": ("aligned MIDI (one per audio item)", "dir", ""),
    "alignment-csv": ("alignment CSV (one per audio item)", "dir", ""),
    "bundle": ("dataset bundle: every label, sync anchors, features and models (folder)", "dir", ""),
    "cgh-model": ("aCGH model for marginalia-cli (predict, evaluate, batch)", "file", "cgh.model"),
    "sync-model": ("sync metric for marginalia-cli (sync and carry --model)", "file", "sync.model"),
}
IMPORT_LABEL_KINDS = {
    "annotations-csv": "aCGH annotations.csv (profile.id,chromosome,min,max,annotation)",
    "bundle": "every label and sync anchor of a dataset bundle folder (manifest.json)",
    "auto": "audio labels: Audacity (.txt), Sonic Visualiser (.csv), Praat (.TextGrid) or JAMS (.jams) "
            "on the audio item of the same name",
}
DATA_FILTER = ("Data files (*.csv *.csv.gz *.tsv *.bedGraph *.bedGraph.gz *.bg *.wav *.flac *.ogg *.mp3 *.mid *.midi "
               "*.musicxml *.mxl *.mei *.krn *.txt *.TextGrid *.jams);;"
               "Copy-number profiles (*.csv *.csv.gz *.tsv *.bedGraph *.bedGraph.gz *.bg);;"
               "Audio (*.wav *.flac *.ogg *.mp3);;Scores (*.mid *.midi *.musicxml *.mxl *.mei *.krn);;"
               "Label files (*.csv *.txt *.TextGrid *.jams);;"
               "All files (*)")
SCORE_FILTER = "Scores (*.mid *.midi *.musicxml *.mxl *.mei *.krn);;All files (*)"
MAX_RECENT = 8
_TABLE_SUFFIXES = (".csv", ".csv.gz", ".tsv", ".tsv.gz", ".txt", ".bedgraph", ".bedgraph.gz", ".bg", ".bg.gz")


def _layouts(engine, paths) -> list:
    """``[(file name, how it was read)]`` for the copy-number tables among ``paths`` (shown after an import)."""
    out = []
    describe = getattr(engine, "describe_table", None)
    for p in paths if describe is not None else ():
        name = str(p).lower()
        if not name.endswith(_TABLE_SUFFIXES):
            continue
        try:
            out.append((Path(p).name, describe(p)))
        except (MarginaliaError, OSError):
            continue   # a series table, not copy number: nothing to say
    return out


class ProjectFilesMixin:
    """Project and file commands of :class:`~app.main_window.MainWindow`: open, import, export, recent.

    Mixed into the window; uses its engine, runner, views and panels.
    """

    def open_project(self, path: str):
        from marginalia.engine import Engine

        try:
            engine = Engine.open(path)
        except MarginaliaError as exc:
            self.last_error_dialog = errors.show_error(self, f"Cannot open {os.path.basename(path)}", exc)
            backups = getattr(exc, "backups", ()) if isinstance(exc, ProjectDamagedError) else ()
            if backups:
                self._offer_backup(self.last_error_dialog, path, backups[0])
            return False
        self.set_engine(engine)
        return True

    def _offer_backup(self, dialog, path: str, backup):
        """Add a one-click "Restore last good backup" to a damaged-project dialog.

        The damaged file is moved aside by the engine, never overwritten.
        """
        from marginalia.engine import Engine

        button = dialog.addButton("Restore last good backup", QtWidgets.QMessageBox.ButtonRole.AcceptRole)

        def restore():
            try:
                engine = Engine.restore_backup(backup, path)
            except MarginaliaError as exc:
                self.last_error_dialog = errors.show_error(self, "Cannot restore the backup", exc)
                return
            self.set_engine(engine)
            rec = getattr(engine, "recovery_", None) or {}
            kept = f"kept as {os.path.basename(rec['damaged'])}" if rec.get("damaged") else "kept aside"
            self.statusBar().showMessage(f"restored {os.path.basename(str(backup))}; the damaged file is {kept} "
                                         "beside the project", 30000)
            applied = rec.get("added", 0) + rec.get("changed", 0) + rec.get("deleted", 0)
            title = "Restored the backup and recovered later label edits" if applied else "Restored the backup"
            text = f"Restored {os.path.basename(str(backup))}. The damaged file is {kept} beside the project."
            if applied:
                text += " " + _recovery_text(rec)
            self.last_error_dialog = errors.show_notice(self, title, text)

        button.clicked.connect(restore)

    def open_demo(self):
        from marginalia.engine import Engine

        try:
            self.set_engine(Engine.open_demo())
        except MarginaliaError as exc:
            self.last_error_dialog = errors.show_error(self, "Cannot open the demo", exc)
            return
        if str(self._setting("tour/seen", "false")).lower() != "true":
            self.show_tour()

    # ================================================================ file dialogs
    def start_folder(self) -> str:
        """Where a file dialog opens: the folder of the user's last pick, else their home (never the checkout)."""
        last = self._setting("last_folder")
        return str(last) if last and os.path.isdir(str(last)) else str(Path.home())

    def _picked(self, path: str) -> str:
        """Remember the folder of a picked path for the next file dialog; returns ``path``."""
        if path:
            folder = path if os.path.isdir(path) else os.path.dirname(path)
            self.settings.setValue("last_folder", folder)
        return path

    def _save_path(self, title: str, name: str, filters: str = "") -> str:
        path, _ = QtWidgets.QFileDialog.getSaveFileName(self, title, os.path.join(self.start_folder(), name),
                                                        filters)
        return self._picked(path)

    def _open_path(self, title: str, filters: str) -> str:
        path, _ = QtWidgets.QFileDialog.getOpenFileName(self, title, self.start_folder(), filters)
        return self._picked(path)

    def _open_paths(self, title: str, filters: str) -> list:
        paths, _ = QtWidgets.QFileDialog.getOpenFileNames(self, title, self.start_folder(), filters)
        if paths:
            self._picked(paths[0])
        return list(paths)

    def _folder_path(self, title: str) -> str:
        return self._picked(QtWidgets.QFileDialog.getExistingDirectory(self, title, self.start_folder()))

    # ================================================================ projects
    def new_project_dialog(self, *, then_import: bool = False):
        """File > New: create an empty project; with ``then_import``, go on to the import dialog."""
        path = self._save_path("New project", "project.marginalia", "Marginalia project (*.marginalia)")
        if not path:
            return
        if not path.endswith(".marginalia"):
            path += ".marginalia"
        if not self.create_project(path):
            return
        if then_import:
            self.import_dialog()

    def create_project(self, path: str) -> bool:
        from marginalia.engine import Engine
        try:
            self.set_engine(Engine.create(path))
        except MarginaliaError as exc:
            self.last_error_dialog = errors.show_error(self, "Cannot create the project", exc)
            return False
        return True

    def open_project_dialog(self):
        path = self._open_path("Open project", "Marginalia project (*.marginalia);;All files (*)")
        if path:
            self.open_project(path)

    def import_dialog(self):
        paths = self._open_paths("Import data", DATA_FILTER)
        if paths:
            self.preview_import(paths)

    def preview_import(self, paths):
        """Recognise ``paths`` in the background, then show what an import would do (:class:`ImportDialog`).

        Nothing is stored until the user presses Import; then :meth:`run_planned_import` imports with the
        recording <-> score pairs chosen in the dialog.
        """
        if self.engine is None:
            return
        from .import_dialog import ImportDialog
        engine, paths = self.engine, [str(p) for p in paths]

        def done(plan):
            dialog = ImportDialog(plan, Path(str(engine.path)).name, self)
            self.import_preview = dialog
            dialog.accepted.connect(lambda: self.run_planned_import(plan, dialog.pairs(), dialog.columns()))
            dialog.open()

        self._run_io("import", "reading the files to import", lambda: engine.plan_import(paths), done,
                     "Cannot read these files")

    def run_planned_import(self, plan, pairs, columns_by_file=None):
        """Import what the import dialog showed, with its pairs and table namings, in the background (see
        :meth:`import_data`)."""
        if self.engine is None:
            return
        engine = self.engine

        def done(result):
            (out, notes) = result
            ids, labels = out["items"], out["labels"]
            self.last_io_result = ids
            self.refresh_items()
            self._refresh_labels()
            if notes:
                self.last_error_dialog = errors.show_notice(
                    self, f"Imported {len(ids)} item(s); please check these files", "\n\n".join(notes))
            scored = out.get("scored", [])
            attached = f"; attached a score to {len(scored)} recording(s) already in the project" if scored else ""
            message = f"imported {len(ids)} item(s) and {len(labels)} label(s){attached}"
            if not (ids or labels or scored):
                message = "nothing new to import: these files are already in the project"
            self.statusBar().showMessage(message, 10000)
            if ids and self.current_item is None:
                self.show_item(ids[0])

        self._run_io("import", "importing data", lambda: _noting_warnings(
            lambda: engine.run_import(plan, pairs, columns_by_file=columns_by_file or None)),
                     done, "Cannot import these files")

    def import_data(self, paths):
        """Import data files into the project in the background; errors become a dialog.

        Reading a large profile table takes seconds, so it never runs on the GUI thread; the new
        item ids end up in ``last_io_result`` (``[]`` after an error) when the "import" lane is idle.
        """
        if self.engine is None:
            return
        engine, paths = self.engine, list(paths)

        def work():
            ids, notes = _noting_warnings(lambda: engine.import_files(paths))
            return ids, notes, _layouts(engine, paths)

        def done(result):
            ids, notes, layouts = result
            self.last_import_layouts = layouts
            self.last_io_result = ids
            self.refresh_items()
            if notes:   # read, but possibly not what the file's author meant (e.g. a table cut short)
                self.last_error_dialog = errors.show_notice(
                    self, f"Imported {len(ids)} item(s); please check these files", "\n\n".join(notes))
            read_as = "; ".join(f"{name} read as {how}" for name, how in layouts)
            self.statusBar().showMessage((f"imported {len(ids)} item(s)" if ids else
                                          "nothing new to import: these files' items are already in the project")
                                         + (f" ({read_as})" if read_as else ""), 10000)

        self._run_io("import", "importing data", work, done, "Cannot import this file")

    def _run_io(self, lane: str, description: str, work, done, error_title: str):
        """Run ``work()`` (an import or an export) off the GUI thread; ``done(result)`` or an error dialog after."""
        self.last_io_result = None

        def failed(exc):
            self.last_io_result = []
            if isinstance(exc, (MarginaliaError, OSError)):   # OSError: an unwritable folder, a full disk
                self.last_error_dialog = errors.show_error(self, error_title, exc)
            else:
                self._show_error(error_title, exc)

        self.runner.submit(lane, lambda cancel, progress: work(), on_done=done, on_error=failed,
                           description=description)

    # ================================================================ items
    def attach_score_dialog(self, item_id=None):
        """Edit > Attach / replace score: pick a score file for an audio item (the shown one by default)."""
        item_id = item_id or self.current_item
        info = self.infos.get(item_id)
        if self.engine is None or info is None:
            return
        if info.kind != "audio":
            self.statusBar().showMessage(f"{info.name} is not a recording: only audio items take a score", 6000)
            return
        path = self._open_path(f"Score for {info.name}", SCORE_FILTER)
        if path:
            self.attach_score(item_id, path)

    def attach_score(self, item_id: str, path: str):
        """Align ``item_id`` to the score at ``path``: one undoable step, saved at once."""
        try:
            step = self.engine.attach_score(item_id, path)
        except MarginaliaError as exc:
            self._show_error(f"Cannot attach {os.path.basename(path)}", exc)
            return None
        self._item_edited(step)
        return step

    def remove_item(self, item_id=None):
        """Edit > Remove item: the item and its labels go, as one step that Ctrl+Z brings back."""
        item_id = item_id or self.current_item
        if self.engine is None or item_id not in self.infos:
            return None
        ids = self.browser.item_ids_in_order()
        try:
            step = self.engine.remove_item(item_id)
        except MarginaliaError as exc:
            self._show_error("Cannot remove this item", exc)
            return None
        if item_id == self.current_item:
            rest = [i for i in ids if i != item_id]
            here = ids.index(item_id)
            self._forget_shown_item()
            if rest:
                self.show_item(rest[min(here, len(rest) - 1)])
        self._item_edited(step)
        return step

    def _item_edited(self, step):
        self.statusBar().showMessage(f"{step.name[:1].upper()}{step.name[1:]} \u2014 Ctrl+Z to undo", 15000)
        self.refresh_items()
        self._on_undo_state()
        self._refresh_history()

    def _on_items_changed(self, item_ids):
        """An item's record changed or it went (an item edit, its undo or redo): show it as it is now."""
        self._items_refresh_timer.start()
        current = self.current_item
        if self.engine is None or current is None or current not in item_ids:
            return
        if any(i.id == current for i in self.engine.items()):
            self._item_payload = None      # its score or task changed: load it again
            self._loading_item = None
            self.current_item = None
            self.refresh_items()
            self.show_item(current)
        else:
            self._forget_shown_item()

    def _forget_shown_item(self):
        """The shown item went: show the empty view until another is shown."""
        self.current_item = None
        self._item_payload = None
        self._drawn_prediction = None
        self._shown_labels = None
        if self.learner is not None:
            self.learner.current_item = None
        self.stack.setCurrentWidget(self.placeholder)

    def import_labels_dialog(self):
        kind, ok = QtWidgets.QInputDialog.getItem(self, "Import labels", "Format:",
                                                  list(IMPORT_LABEL_KINDS), 0, False)
        if not ok:
            return
        if kind == "bundle":
            path = self._folder_path("Import labels from a bundle")
        else:
            path = self._open_path(f"Import labels ({kind})",
                                   "Label files (*.csv *.txt *.tsv *.TextGrid *.jams *.json);;All files (*)")
        if path:
            self.import_labels_from(kind, path)

    def import_labels_from(self, kind: str, path: str):
        """Import labels in the background (see :meth:`import_data`); rows skipped on the way are listed."""
        if self.engine is None:
            return
        engine = self.engine

        def work():
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                labels = engine.import_labels(kind, path)
            return labels, [str(w.message) for w in caught if issubclass(w.category, UserWarning)]

        def done(result):
            labels, notes = result
            self.last_io_result = labels
            self._refresh_labels()
            self.refresh_items()
            self.resync_dialog()         # a bundle's sync anchors: an open compare dialog's path follows
            if notes:   # rows skipped on the way (unknown profiles, repeated rows, regions without probes)
                self.last_error_dialog = errors.show_notice(
                    self, f"Imported {len(labels)} label(s), skipping some rows", "\n\n".join(notes))
            self.statusBar().showMessage(f"imported {len(labels)} label(s)" if labels else
                                         "nothing new to import: the project already has these labels", 6000)

        self._run_io("import", "importing labels", work, done, "Cannot import these labels")

    def export_dialog(self, kind: str):
        title, mode, default = EXPORT_KINDS[kind]
        if mode == "dir":
            path = self._folder_path(f"Export {title} to folder")
            replace_file = False
        else:
            path = self._save_path(f"Export {title}", default)
            replace_file = bool(path) and os.path.exists(path)   # the file dialog asked before picking it
        if not path:
            return
        decided = self.export_decision(kind, path, replace_file=replace_file)
        if decided is not None:
            self.export_to(kind, *decided)

    def export_decision(self, kind: str, path: str, *, replace_file: bool = False):
        """Say what an export to ``path`` will do and get the user's go-ahead: ``(path, force)`` or None.

        Nothing on disk is replaced without a question: a folder holding other files gets the export
        in a new sub-folder (the user is told its name), a previous export is replaced only when the
        user agrees, and a file the save dialog confirmed is replaced only if it is a previous export
        of the same kind.
        """
        from marginalia.engine import Engine
        from marginalia.exceptions import UsageError
        title = f"Export {EXPORT_KINDS[kind][0]}"
        mode = EXPORT_KINDS[kind][1]
        try:
            plan = Engine.export_plan(kind, path, force=replace_file)
        except UsageError as exc:
            if mode != "dir" or not os.path.isdir(path):
                self._show_error(f"Cannot export {kind}", exc)
                return None
            try:
                previous = Engine.export_plan(kind, path, force=True)
            except UsageError:
                previous = None
            if previous is not None and previous.action == "replace":
                if self.ask_user(title, f"{path} holds a previous Marginalia export. Replace it? Only the "
                                        "files that export wrote are replaced.", "Replace"):
                    return path, True
                return None
            sub = self._free_subfolder(path, kind)
            if self.ask_user(title, f"{path} already holds other files, which the export leaves alone. The "
                                    f"export will go into a new folder inside it: {sub}", "Export"):
                return sub, False
            return None
        if plan.action == "replace" and not self.ask_user(title, plan.describe(), "Replace"):
            return None
        self.statusBar().showMessage(plan.describe(), 6000)
        return path, plan.action == "replace"

    def _free_subfolder(self, folder: str, kind: str) -> str:
        stem = os.path.splitext(os.path.basename(str(getattr(self.engine, "path", "") or "project")))[0]
        base = os.path.join(folder, f"{stem or 'project'}-{kind}")
        candidate, n = base, 2
        while os.path.lexists(candidate):
            candidate, n = f"{base}-{n}", n + 1
        return candidate

    def ask_user(self, title: str, text: str, accept: str) -> bool:
        """A yes/cancel question (tests replace it)."""
        box = QtWidgets.QMessageBox(QtWidgets.QMessageBox.Icon.Question, title, text, parent=self)
        ok = box.addButton(accept, QtWidgets.QMessageBox.ButtonRole.AcceptRole)
        box.addButton(QtWidgets.QMessageBox.StandardButton.Cancel)
        box.exec()
        return box.clickedButton() is ok

    def export_to(self, kind: str, path: str, force: bool = False):
        """Export in the background (an export may predict every item first); see :meth:`import_data`.

        ``force`` lets the export replace a previous export at ``path`` (never anything else).
        """
        if self.engine is None:
            return
        engine = self.engine

        def done(written):
            self.last_io_result = [str(p) for p in written or []]
            self.statusBar().showMessage(f"exported {len(written or [])} file(s) to {path}", 6000)

        self._run_io("export", f"exporting {kind}", lambda: engine.export(kind, path, force=force), done,
                     f"Cannot export {kind}")

    def _show_error(self, title, exc):
        self.last_error_dialog = errors.show_error(self, title, exc)

    # ================================================================ recent
    def recent_projects(self) -> list:
        value = self._setting("recent", [])
        if isinstance(value, str):
            value = [value]
        return [p for p in (value or []) if p]

    def _add_recent(self, path):
        recent = [p for p in self.recent_projects() if p != path]
        self.settings.setValue("recent", [path] + recent[:MAX_RECENT - 1])
        self._refresh_recent_menu()

    def _refresh_recent_menu(self):
        self.recent_menu.clear()
        recent = self.recent_projects()
        self.start_page.set_recent(recent)
        for p in recent:
            act = self.recent_menu.addAction(p)
            act.setToolTip(f"Open the project {p}")
            act.triggered.connect(lambda *_, p=p: self.open_project(p))
        self.recent_menu.setEnabled(bool(recent))


def _noting_warnings(fn):
    """``(fn(), [message of each DataWarning it raised])``: what was read, but maybe not as its author meant."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", DataWarning)
        result = fn()
    return result, [str(w.message) for w in caught if issubclass(w.category, DataWarning)]


def _recovery_text(rec: dict) -> str:
    """What :meth:`marginalia.engine.Engine.restore_backup` brought back from the damaged file, in a sentence or three."""
    text = (f"The damaged file held {rec['edits']} label edit(s) made after this backup. Its labels were applied: "
            f"{rec['added']} added, {rec['changed']} changed, {rec['deleted']} deleted. Undo (Ctrl+Z) takes them "
            f"back in one step.")
    if rec.get("items"):
        text += f" {rec['items']} item(s) imported after the backup came back with them."
    if rec.get("skipped"):
        text += f" {rec['skipped']} label(s) of items this backup does not have could not come back."
    if rec.get("problems"):
        text += " Its edit log could be read only in part: " + "; ".join(rec["problems"]) + "."
    return text
