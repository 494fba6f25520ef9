"""A damaged project opened through the app: a clear message naming the newest good backup, nothing overwritten."""

from __future__ import annotations

import argparse
import hashlib
import os
import shutil
import tempfile
from pathlib import Path

import pytest
from PySide6 import QtCore, QtWidgets

from marginalia.app import errors
from marginalia.app.main import create_window
from marginalia.app.main_window import MainWindow
from marginalia.engine import Engine
from marginalia.exceptions import ProjectDamagedError
from marginalia.project.backups import backups_dir, good_backups
from tests.reliability.engine_kill_child import new_project

PAGE = 4096


def _truncate(data: bytes) -> bytes:
    return data[:len(data) // 2 + 123]


def _smash_page(data: bytes) -> bytes:
    """Garbage over the start of the third page (a b-tree page of the schema) -- what a bad sector leaves."""
    b = bytearray(data)
    b[2 * PAGE:2 * PAGE + 300] = b"\xab" * 300
    return bytes(b)


def _zero_header(data: bytes) -> bytes:
    return b"\x00" * 100 + data[100:]


DAMAGES = {"truncated": _truncate, "page-corrupted": _smash_page, "header-zeroed": _zero_header}


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _folder_digests(folder: Path) -> dict:
    return {p.name: _digest(p) for p in sorted(folder.iterdir()) if p.is_file()}


@pytest.fixture(scope="module")
def window(qapp, tmp_path_factory):
    settings = QtCore.QSettings(str(tmp_path_factory.mktemp("settings") / "s.ini"), QtCore.QSettings.Format.IniFormat)
    win = MainWindow(settings=settings)
    yield win
    win.close_engine()
    win.close()
    win.deleteLater()


@pytest.fixture
def damaged_project(tmp_path):
    """A project with labels, cleanly closed (so its newest backup holds them), then damaged by the caller."""
    path, _ = new_project(tmp_path / "lab.marginalia", seed=6)
    with Engine.open(path, read_only=True) as eng:
        labels = sorted(repr(lab) for lab in eng.labels())
    assert labels and good_backups(path)
    yield path, labels
    for w in QtWidgets.QApplication.topLevelWidgets():
        if isinstance(w, errors.ErrorDialog):
            w.close()


def _check_refusal(dialog, path: Path, before: bytes, backups_before: dict, labels):
    assert isinstance(dialog, errors.ErrorDialog) and dialog.isVisible()
    assert isinstance(dialog.exc, ProjectDamagedError)
    text = dialog.text() + "\n" + dialog.informativeText()
    assert path.name in text and "damaged" in text
    newest_good = good_backups(path)[0]
    assert str(newest_good) in dialog.informativeText(), "the message does not offer the newest good backup"
    assert [Path(b) for b in dialog.exc.backups][0] == newest_good
    # nothing was overwritten: the damaged file and every backup keep their bytes, no backup was added or pruned
    assert path.read_bytes() == before
    assert _folder_digests(backups_dir(path)) == backups_before
    # the backup offered holds the labels the project had before the damage
    copy = Path(tempfile.mkdtemp(dir=path.parent)) / "restored.marginalia"
    shutil.copy(newest_good, copy)
    with Engine.open(copy) as eng:
        assert eng.session.integrity_check() == []
        assert sorted(repr(lab) for lab in eng.labels()) == labels


@pytest.mark.slow
@pytest.mark.parametrize("damage", sorted(DAMAGES))
def test_open_project_offers_the_newest_good_backup_and_overwrites_nothing(window, damaged_project, damage):
    path, labels = damaged_project
    path.write_bytes(DAMAGES[damage](path.read_bytes()))
    before, backups_before = path.read_bytes(), _folder_digests(backups_dir(path))
    assert window.open_project(str(path)) is False
    assert window.engine is None
    _check_refusal(window.last_error_dialog, path, before, backups_before, labels)
    # a second attempt (the user clicks Open again) changes nothing either
    assert window.open_project(str(path)) is False
    assert path.read_bytes() == before and _folder_digests(backups_dir(path)) == backups_before


def test_damaged_newest_backup_is_passed_over_for_an_older_good_one(window, damaged_project):
    path, labels = damaged_project
    with Engine.open(path) as eng:  # one more edit -> one more backup on close
        eng.delete_label(eng.labels()[0].id)
    newest, older = [Path(b) for b in good_backups(path)[:2]]
    newest.write_bytes(_smash_page(newest.read_bytes()))
    path.write_bytes(_truncate(path.read_bytes()))
    before, backups_before = path.read_bytes(), _folder_digests(backups_dir(path))
    assert window.open_project(str(path)) is False
    dialog = window.last_error_dialog
    assert str(older) in dialog.informativeText() and str(newest) not in dialog.informativeText()
    assert path.read_bytes() == before and _folder_digests(backups_dir(path)) == backups_before


def test_no_good_backup_says_so(window, damaged_project):
    path, _ = damaged_project
    for b in good_backups(path):
        b.write_bytes(_zero_header(b.read_bytes()))
    path.write_bytes(_smash_page(path.read_bytes()))
    before = path.read_bytes()
    assert window.open_project(str(path)) is False
    text = window.last_error_dialog.informativeText()
    assert "no good backup" in text.lower() and path.read_bytes() == before


@pytest.mark.slow
def test_start_up_on_a_damaged_last_project_shows_the_message(qapp, damaged_project, tmp_path):
    path, labels = damaged_project
    path.write_bytes(_smash_page(path.read_bytes()))
    before, backups_before = path.read_bytes(), _folder_digests(backups_dir(path))
    settings = QtCore.QSettings(str(tmp_path / "start.ini"), QtCore.QSettings.Format.IniFormat)
    settings.setValue("last_project", str(path))
    for args in (argparse.Namespace(project=str(path), demo=False), argparse.Namespace(project=None, demo=False)):
        win = create_window(args, settings=settings, prepare=False)
        try:
            assert win.engine is None
            _check_refusal(win.last_error_dialog, path, before, backups_before, labels)
        finally:
            win.close()
            win.deleteLater()
    assert not [p for p in os.listdir(path.parent) if ".damaged-" in p]  # not even moved aside without asking


def test_the_offer_is_an_action_that_restores_the_backup_as_the_project(window, damaged_project):
    """The dialog must let the user restore the offered backup in one click.

    Today the message only says "Open the newest backup instead: <file in .backups/>". Opening that file in
    place makes the user work inside the backups folder: the offered backup is rewritten, and the next time
    the project at its own path is used, pruning the old backups deletes the user's working file. Core has
    the safe operation (``ProjectStore.restore_backup``: the damaged file is moved aside, never overwritten,
    and the backup is copied to the project's path); the app must offer it.
    """
    path, labels = damaged_project
    path.write_bytes(_smash_page(path.read_bytes()))
    damaged = path.read_bytes()
    assert window.open_project(str(path)) is False
    dialog = window.last_error_dialog
    buttons = [b for b in dialog.buttons() if "backup" in b.text().lower()]
    assert buttons, (f"the error dialog offers no action to restore the backup (buttons: "
                     f"{[b.text() for b in dialog.buttons()]}); only a path to open by hand")
    buttons[0].click()
    QtWidgets.QApplication.processEvents()
    assert window.engine is not None and Path(window.engine.path) == path.absolute()
    assert sorted(repr(lab) for lab in window.engine.labels()) == labels
    aside = [p for p in path.parent.iterdir() if p.name.startswith(path.name + ".damaged-") and p.suffix != ""
             and not p.name.endswith(("-wal", "-shm"))]
    assert aside and aside[0].read_bytes() == damaged, "the damaged file must be kept aside, not overwritten"
    window.close_engine()
