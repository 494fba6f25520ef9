"""Save the first-run screenshots of the quickstart pages into ``docs/images``, from the real app on real data.

Usage: ``python -m benchmarks.images.onboarding_screenshots [--data PATH] [--out FOLDER]``

* ``start_page.png``: the app opened without a project, two recent projects listed;
* ``import_dialog.png``: the import dialog on Vienna 4x22 files (two performances rendered to audio, three deadpan
  scores, a ground-truth table it cannot import): the recording <-> score pairs it proposes by name prefix;
* ``no_score.png``: pianist 1's Chopin op. 10 no. 3 imported without its score: the untrained segmentation and
  the note saying how to attach one (prints the number of changes);
* ``damaged_dialog.png``: the neuroblastoma profiles' project with garbage over its third page (a bad sector),
  opened in the app: the dialog with its details collapsed and the restore button.

Everything is written in a temporary folder; runs offscreen.
"""

from __future__ import annotations

import os
import pathlib
import sys
import tempfile
import time

from benchmarks._common import ROOT
from benchmarks.images._shots import parser

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
PAGE = 4096


def main(argv=None) -> int:
    args = parser(__doc__, ROOT / "docs" / "images").parse_args(argv)
    data = pathlib.Path(args.data)
    vienna = data / "alignment" / "vienna4x22"
    profiles = data / "cgh" / "neuroblastoma" / "profiles_small.csv.gz"
    if not (vienna / "audio_rendered").is_dir() or not profiles.exists():
        print(f"onboarding_screenshots: no Vienna 4x22 or neuroblastoma data under {data}; pass --data",
              file=sys.stderr)
        return 2
    from PySide6 import QtCore

    from benchmarks._common import themed_app
    from marginalia.app.main_window import MainWindow
    from marginalia.engine import Engine

    out = pathlib.Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    app = themed_app()

    def wait(condition, seconds=120.0):
        end = time.perf_counter() + seconds
        while not condition() and time.perf_counter() < end:
            app.processEvents()
            time.sleep(0.005)
        for _ in range(30):
            app.processEvents()

    tmp = pathlib.Path(tempfile.mkdtemp(prefix="marginalia-onboarding-"))
    projects = tmp / "projects"
    projects.mkdir()
    for name in ("vienna.marginalia", "neuroblastoma.marginalia"):
        Engine.create(projects / name).close()
    settings = QtCore.QSettings(str(tmp / "settings.ini"), QtCore.QSettings.Format.IniFormat)
    settings.setValue("recent", [str(projects / "neuroblastoma.marginalia"), str(projects / "vienna.marginalia")])
    win = MainWindow(settings=settings)
    win.resize(1300, 850)
    win.show()
    wait(lambda: True)
    win.grab().save(str(out / "start_page.png"))

    win.set_engine(Engine.open(projects / "vienna.marginalia"))
    audio = vienna / "audio_rendered"
    files = [audio / "Chopin_op10_no3_p01.wav", audio / "Mozart_K331_1st-mov_p01.wav",
             vienna / "score_midi" / "Chopin_op10_no3.mid", vienna / "score_midi" / "Mozart_K331_1st-mov.mid",
             vienna / "score_midi" / "Chopin_op38.mid", vienna / "ground_truth" / "Chopin_op10_no3_p01.csv"]
    win.import_preview = None
    win.preview_import([str(p) for p in files])
    wait(lambda: win.import_preview is not None and win.import_preview.isVisible())
    win.import_preview.grab().save(str(out / "import_dialog.png"))
    print("import dialog:", win.import_preview.summary.text())
    win.import_preview.reject()
    win.close_engine()

    eng = Engine.create(projects / "chopin.marginalia")
    (item,) = eng.import_files([files[0]])
    win.set_engine(eng)
    wait(lambda: win.current_item == item and win.current_prediction() is not None)
    n_changes = len(win.current_prediction().structure.changes) - 1
    print(f"no score: {n_changes} changes over {eng.item(item).meta['duration_s']:.1f} s before any label")
    win.grab().save(str(out / "no_score.png"))
    win.close_engine()

    damaged = projects / "neuroblastoma.marginalia"
    with Engine.open(damaged) as eng:
        eng.import_files([profiles])
    raw = bytearray(damaged.read_bytes())
    raw[2 * PAGE:2 * PAGE + 300] = b"\xab" * 300
    damaged.write_bytes(bytes(raw))
    win.open_project(str(damaged))
    wait(lambda: win.last_error_dialog is not None and win.last_error_dialog.isVisible())
    dialog = win.last_error_dialog
    print(f"damaged dialog: {dialog.width()} x {dialog.height()} px, buttons {[b.text() for b in dialog.buttons()]}")
    dialog.grab().save(str(out / "damaged_dialog.png"))
    win.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
