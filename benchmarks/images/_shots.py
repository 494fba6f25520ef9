"""What the screenshot scripts share: their command line, the neuroblastoma project, the window, waiting and saving.

Every script runs offscreen (it sets ``QT_QPA_PLATFORM`` before Qt is imported) and imports this module as
``benchmarks.images._shots``.
"""

from __future__ import annotations

import argparse
import pathlib
import shutil
import sys

from benchmarks._common import ROOT, pump, scratch

__all__ = ["parser", "neuroblastoma", "neuroblastoma_project", "main_window", "wait", "retrain", "print_versions",
           "save_grab", "finish", "scratch"]


def parser(doc: str, out: pathlib.Path) -> argparse.ArgumentParser:
    """The arguments every screenshot script takes: ``--data`` (the shared data folder) and ``--out`` (``out``)."""
    ap = argparse.ArgumentParser(description=doc.splitlines()[0])
    ap.add_argument("--data", default=str(ROOT.parent / "shared" / "data"), help="the shared data folder")
    ap.add_argument("--out", default=str(out))
    return ap


def neuroblastoma(data, script: str):
    """The neuroblastoma folder under ``data``, or None (after ``script`` says so) when its labels are not there."""
    nb = pathlib.Path(data) / "cgh" / "neuroblastoma"
    if not (nb / "annotations_small.csv").exists():
        print(f"{script}: no neuroblastoma data in {nb}; pass --data", file=sys.stderr)
        return None
    return nb


def neuroblastoma_project(nb: pathlib.Path, work: pathlib.Path, *, author=None):
    """A project in ``work`` of the neuroblastoma profiles with their expert labels, imported as a user does.

    Returns
    -------
    path : pathlib.Path
        The project file (closed).
    labels : list
        The imported labels.
    """
    from marginalia.engine import Engine

    shutil.copy2(nb / "profiles_small.csv.gz", work / "profiles.csv.gz")
    shutil.copy2(nb / "annotations_small.csv", work / "annotations.csv")
    path = work / "neuroblastoma.marginalia"
    with Engine.create(path) as eng:
        if author is not None:
            eng.session.author = author
        eng.import_files([work / "profiles.csv.gz"])
        labels = eng.import_labels("annotations-csv", work / "annotations.csv")
    return path, labels


def main_window(engine, work: pathlib.Path, size, *, settings: str = "settings.ini"):
    """The app's window on ``engine`` with its settings in ``work / settings`` (not the user's), ``size`` (w, h) px.

    Not shown yet: the caller sets what must hold before the first paint (its retrain timer), then shows it.
    """
    from PySide6 import QtCore

    from marginalia.app.main_window import MainWindow

    qsettings = QtCore.QSettings(str(work / settings), QtCore.QSettings.Format.IniFormat)
    win = MainWindow(engine, settings=qsettings)
    win.resize(*size)
    return win


def wait(app, until=None, timeout: float = 600.0) -> bool:
    """:func:`benchmarks._common.pump` with the screenshots' long default and 5 ms poll.

    True when ``until()`` came true in time; without ``until``, runs the events for ``timeout`` seconds.
    """
    return pump(app, until, timeout, poll_s=0.005)


def retrain(app, win, action: str = "retrain") -> None:
    """Trigger the window's ``action`` (``"retrain"`` or ``"retrain_all"``) and wait until its background work ends."""
    win.actions[action].trigger()
    wait(app, lambda: win.runner.is_busy("retrain"), 5)
    wait(app, lambda: not win.runner.is_busy())


def print_versions(panel) -> None:
    """Print the model versions the Model panel lists, newest first, one line each."""
    print("versions (newest first):")
    for row in panel.version_rows():
        print("  " + "  ".join(row))


def save_grab(widget, out) -> None:
    """Save a picture of ``widget`` as the PNG ``out`` (making its folder) and say where."""
    out = pathlib.Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    widget.grab().save(str(out))
    print(f"wrote {out}")


def finish(widget, out, *closing) -> None:
    """The scripts' last step: :func:`save_grab` of ``widget`` to ``out``, then close ``closing`` in order.

    ``closing`` holds what the script opened (dialogs, the window, the engine), innermost first.
    """
    save_grab(widget, out)
    for thing in closing:
        thing.close()


