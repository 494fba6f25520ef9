"""Errors for people: a log file with the tracebacks, short dialogs with the message and the fix."""

from __future__ import annotations

import logging
import pathlib
import sys
import traceback

from PySide6 import QtCore, QtGui, QtWidgets

from marginalia.engine import state_dir
from marginalia.exceptions import (
    DataFormatError,
    InfeasibleLabelsError,
    MarginaliaError,
    NotAProjectError,
    NotFittedError,
    ProjectDamagedError,
    ProjectInUseError,
    ProjectVersionError,
    SourceMovedError,
    StoreError,
)

log = logging.getLogger("marginalia.app")


def log_path() -> pathlib.Path:
    """``marginalia.log`` in the state directory (``~/.local/state/marginalia`` on Linux; see ``state_dir``)."""
    return state_dir() / "marginalia.log"


def setup_logging() -> pathlib.Path:
    """Send the app's log (warnings and tracebacks) to :func:`log_path`; returns the path."""
    path = log_path()
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        handler = logging.FileHandler(path, encoding="utf-8")
    except OSError:
        return path
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    root = logging.getLogger()
    if not any(isinstance(h, logging.FileHandler) and getattr(h, "baseFilename", "") == str(path)
               for h in root.handlers):
        root.addHandler(handler)
    root.setLevel(min(root.level or logging.INFO, logging.INFO))
    return path


def fix_for(exc: BaseException) -> str:
    """One sentence telling the user what to do about ``exc``."""
    if isinstance(exc, DataFormatError):
        return "Check that the file is one of the supported formats (File \u25b8 Import lists them) and not truncated."
    if isinstance(exc, InfeasibleLabelsError):
        # a refused new label was not stored, so undo would take back an earlier, valid edit: say what to do
        return ("Nothing was added. To edit or delete a label, select it in the Labels panel; if an earlier edit "
                "made them disagree, undo it (Ctrl+Z).")
    if isinstance(exc, ProjectInUseError):
        return "Close the other Marginalia window that has this project open, then try again."
    if isinstance(exc, NotAProjectError):
        return ""   # its message says what to open or import instead
    if isinstance(exc, ProjectVersionError):
        return "This project was saved by a newer Marginalia: update Marginalia to open it."
    if isinstance(exc, ProjectDamagedError):
        if exc.backups:
            return f"Open the newest backup instead: {exc.backups[0]}"
        return "Restore the project from a copy; no good backup was found."
    if isinstance(exc, SourceMovedError):
        return "Move the data file back, or re-import it from its new place."
    if isinstance(exc, StoreError):
        return "Check that the project folder is writable and the disk is not full."
    if isinstance(exc, NotFittedError):
        return "Add a few labels and retrain (Ctrl+R) first."
    if isinstance(exc, MarginaliaError):
        return ""   # its message names the fix itself
    if isinstance(exc, OSError):
        return "Choose a folder you can write to, with enough free space, and a name that is not taken by a folder."
    return "This is a bug in Marginalia. The details are in the log file; please attach it to a bug report."


def user_message(exc: BaseException) -> str:
    """The message shown to the user: the error's own text, and the fix."""
    text = str(exc) or type(exc).__name__
    fix = fix_for(exc)
    return f"{text}\n\n{fix}" if fix else text


class ErrorDialog(QtWidgets.QMessageBox):
    """A short, non-blocking error box with a button to open the log file."""

    def __init__(self, parent, title: str, exc: BaseException):
        super().__init__(parent)
        self.exc = exc
        self.setIcon(QtWidgets.QMessageBox.Icon.Warning if isinstance(exc, (MarginaliaError, OSError))
                     else QtWidgets.QMessageBox.Icon.Critical)
        self.setWindowTitle(f"Marginalia \u2014 {title}")
        self.setText(title)
        details = getattr(exc, "problem", None) if isinstance(exc, ProjectDamagedError) else None
        if details and not isinstance(exc, NotAProjectError):
            # SQLite's findings can run to hundreds of lines: behind "Show Details...", so the dialog and its
            # restore button fit the screen
            self.setInformativeText(_damaged_summary(exc))
            self.setDetailedText(details)
        else:
            self.setInformativeText(user_message(exc))
        # QMessageBox sizes itself to its title; a message naming labels and positions needs room
        grid = self.layout()
        if isinstance(grid, QtWidgets.QGridLayout) and grid.columnCount() > 2:
            grid.setColumnMinimumWidth(2, 420)
        self.setStandardButtons(QtWidgets.QMessageBox.StandardButton.Ok)
        self.open_log_button = self.addButton("Open log", QtWidgets.QMessageBox.ButtonRole.HelpRole)
        self.open_log_button.setToolTip("The log file holds the details of this error")
        self.open_log_button.clicked.disconnect()
        self.open_log_button.clicked.connect(open_log)
        self.setModal(False)
        self.setAttribute(QtCore.Qt.WidgetAttribute.WA_DeleteOnClose, True)


def _damaged_summary(exc: ProjectDamagedError) -> str:
    """A damaged project in two sentences: which file, that it was left as it was, and the fix."""
    path = str(exc).split(" is damaged")[0].removeprefix("project ")
    return f"{path} is damaged; it was not modified (what SQLite found: Show Details).\n\n{fix_for(exc)}"


def fit_to_screen(dialog: QtWidgets.QWidget) -> None:
    """Keep ``dialog`` no taller than its screen's available height (a long text scrolls instead)."""
    screen = dialog.screen() or QtGui.QGuiApplication.primaryScreen()
    if screen is None:
        return
    room = screen.availableGeometry()
    dialog.setMaximumHeight(room.height())
    if dialog.height() > room.height():
        dialog.resize(dialog.width(), room.height())


def open_log():
    path = log_path()
    QtGui.QDesktopServices.openUrl(QtCore.QUrl.fromLocalFile(str(path)))


_open_dialogs = []


def show_error(parent, title: str, exc: BaseException) -> ErrorDialog:
    """Log ``exc`` and show it in a non-blocking :class:`ErrorDialog`; returns the dialog."""
    if isinstance(exc, (MarginaliaError, OSError)):
        log.warning("%s: %s", title, exc)
    else:
        log.error("%s\n%s", title, "".join(traceback.format_exception(type(exc), exc, exc.__traceback__)))
    dialog = ErrorDialog(parent, title, exc)
    _open_dialogs.append(dialog)
    dialog.finished.connect(lambda *_: _open_dialogs.remove(dialog) if dialog in _open_dialogs else None)
    dialog.show()
    fit_to_screen(dialog)
    return dialog


def show_notice(parent, title: str, text: str) -> QtWidgets.QMessageBox:
    """A non-blocking information box (work done, with something the user should know); returns it."""
    log.info("%s: %s", title, text)
    box = QtWidgets.QMessageBox(QtWidgets.QMessageBox.Icon.Information, f"Marginalia \u2014 {title}", title,
                                QtWidgets.QMessageBox.StandardButton.Ok, parent)
    box.setInformativeText(text)
    box.setModal(False)
    box.setAttribute(QtCore.Qt.WidgetAttribute.WA_DeleteOnClose, True)
    _open_dialogs.append(box)
    box.finished.connect(lambda *_: _open_dialogs.remove(box) if box in _open_dialogs else None)
    box.show()
    return box


def install_excepthook(parent_getter=lambda: None):
    """Route uncaught exceptions to the log and a short dialog, never a traceback window."""

    def hook(exc_type, exc, tb):
        if issubclass(exc_type, KeyboardInterrupt):
            sys.__excepthook__(exc_type, exc, tb)
            return
        log.error("uncaught exception\n%s", "".join(traceback.format_exception(exc_type, exc, tb)))
        if QtWidgets.QApplication.instance() is not None:
            try:
                show_error(parent_getter(), "Something went wrong" if not isinstance(exc, MarginaliaError)
                           else type(exc).__name__.replace("Error", " error"), exc)
            except Exception:  # never let the hook itself raise
                log.exception("could not show the error dialog")

    sys.excepthook = hook
    return hook
