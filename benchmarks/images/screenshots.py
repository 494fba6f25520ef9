"""Save PNG screenshots of each view of the app on real data into ``resources/screenshots/``.

Usage: ``python -m benchmarks.images.screenshots [--data PATH] [--out DIR]``

* ``profile.png`` -- a neuroblastoma aCGH profile (Institut Curie, Hocking et al. 2013) with its
  expert region labels and the model's segmentation after an interactive update;
* ``audio_score.png`` -- a Vienna 4x22 performance rendered to audio (Chopin op. 10/3, pianist 1)
  with its score MIDI as a piano roll, aligned by the model;
* ``profile_whole.png`` -- every chromosome of that profile side by side (View > Whole profile, G);
* ``audio_score_zoom.png`` -- the first 12 seconds of the same item, with an event-span label
  ("these score events start in here", drawn on the spectrogram and outlined on the score);
* ``cheatsheet.png`` -- the searchable shortcut sheet (F1).

Runs offscreen; a summary table and ``benchmarks/results/screenshots.json`` record the time each
screenshot took (from showing the item to a painted window).
"""

from __future__ import annotations

import argparse
import json
import os
import pathlib
import tempfile
import time

from benchmarks._common import ROOT, themed_app  # noqa: E402
from benchmarks.images._shots import main_window
from benchmarks.images._shots import wait as pump

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

RESULTS = ROOT / "benchmarks" / "results" / "screenshots.json"


def pick_profile(engine, infos):
    """A low-density profile with the most expert "exactly one change" labels and a clear step."""
    import numpy as np

    from marginalia.types import RegionKind, RegionLabel

    best, best_key = None, None
    for info in infos:
        if info.kind != "cgh" or not 300 <= info.n_samples <= 2500:
            continue
        ones = [lab for lab in engine.labels(info.id) if isinstance(lab, RegionLabel) and lab.kind == RegionKind.ONE]
        if not ones:
            continue
        y = engine.sequence(info.id).values[:, 0]
        step = max(abs(np.median(y[lab.start:(lab.start + lab.stop) // 2]) -
                       np.median(y[(lab.start + lab.stop) // 2:lab.stop])) for lab in ones)
        key = (len(ones) >= 2, round(float(step), 2))
        if best_key is None or key > best_key:
            best, best_key = info.id, key
    return best or max((i for i in infos if i.kind == "cgh"), key=lambda i: i.n_labels).id


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--data", default=str(ROOT.parent / "shared" / "data"))
    ap.add_argument("--out", default=str(ROOT / "resources" / "screenshots"))
    ap.add_argument("--quick", action="store_true", help="accepted for symmetry with the other benchmarks")
    args = ap.parse_args(argv)
    data, out = pathlib.Path(args.data), pathlib.Path(args.out)
    out.mkdir(parents=True, exist_ok=True)

    from marginalia.engine import Engine

    qapp = themed_app()
    work = pathlib.Path(tempfile.mkdtemp(prefix="marginalia-shots-"))
    engine = Engine.create(work / "shots.marginalia")
    cgh = data / "cgh" / "neuroblastoma"
    vienna = data / "alignment" / "vienna4x22"
    wav = vienna / "audio_rendered" / "Chopin_op10_no3_p01.wav"
    mid = vienna / "score_midi" / "Chopin_op10_no3.mid"
    engine.import_files([cgh / "profiles_small.csv.gz", wav], scores={str(wav): mid})
    engine.import_labels("annotations-csv", cgh / "annotations_small.csv")
    infos = engine.items()
    cgh_id = pick_profile(engine, infos)
    aud_id = next(i.id for i in infos if i.kind == "audio")
    for item_id in (cgh_id, aud_id):
        engine.update_model(item_id)

    win = main_window(engine, work, (1500, 920), settings="s.ini")
    win.learner.timer.setInterval(3_600_000)
    win.show()
    rows = []

    def shot(item_id, filename, frame=None):
        t0 = time.perf_counter()
        win.show_item(item_id)
        pump(qapp, lambda: win.current_item == item_id and win.current_prediction() is not None
             and win.current_prediction().item_id == item_id, 120)
        pump(qapp, lambda: not win.runner.is_busy("load") and not win.runner.is_busy("predict"), 60)
        if frame is not None:
            win.active_view().main.setXRange(*frame, padding=0)
        pump(qapp, timeout=0.5)
        win.grab().save(str(out / filename))
        rows.append({"case": f"screenshot {filename}", "value": time.perf_counter() - t0, "unit": "s",
                     "target": None, "better": "lower", "reference": None, "meets_target": None})

    win.refresh_queries()
    pump(qapp, lambda: not win.runner.is_busy("queries"), 300)
    shot(cgh_id, "profile.png")
    t0 = time.perf_counter()
    win.toggle_whole_profile()
    pump(qapp, win.whole_profile_shown, 120)
    pump(qapp, timeout=0.5)
    win.grab().save(str(out / "profile_whole.png"))
    rows.append({"case": "screenshot profile_whole.png", "value": time.perf_counter() - t0, "unit": "s",
                 "target": None, "better": "lower", "reference": None, "meets_target": None})
    shot(aud_id, "audio_score.png")
    # an event-span label over a few events of the drawn alignment, as a drag on the spectrogram makes it
    from marginalia.types import EventSpanLabel
    times = win.score_view.event_times
    inside = [e for e in range(len(times)) if 6.0 <= times[e] <= 8.0]
    if inside:
        win.create_label(EventSpanLabel(item_id=aud_id, first=inside[0], last=inside[-1], t0_s=5.9, t1_s=8.1))
        pump(qapp, lambda: not win.runner.is_busy("update"), 60)
    shot(aud_id, "audio_score_zoom.png", frame=(0.0, 12.0))
    sheet = win.show_cheatsheet()
    pump(qapp, timeout=0.3)
    sheet.grab().save(str(out / "cheatsheet.png"))
    sheet.close()
    win.close()

    print(f"\nScreenshots (offscreen; load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores)\n")
    for r in rows:
        print(f"{r['case']:40s} {r['value']:6.2f} s")
    print(f"\nsaved into {out}")
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps(rows, indent=2))


if __name__ == "__main__":
    main()
