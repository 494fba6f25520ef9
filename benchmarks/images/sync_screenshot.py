"""Save ``docs/images/compare_recordings.png``, ``docs/images/sync_anchors.png`` and ``docs/images/suggestions.png``:
two pianists' performances of one piece joined by their path, the path through two sync anchors, then the first
one's labels carried onto the second as suggestions.

Usage: ``python -m benchmarks.images.sync_screenshot [--data PATH] [--out PNG] [--anchors-out PNG]
[--suggestions-out PNG] [--piece NAME] [--pianists p01,p02]``

Two Vienna 4x22 performances of the same excerpt (default Mozart K.331, pianists p01 and p02; their MIDI
rendered with fluidsynth + FluidR3 GM as ``benchmarks/quality/quality_alignment.py`` renders them) are imported
with the excerpt's score into a project; the first gets an anchor at the performed onset of every eighth score
event (from its ground truth). The window shows it, then View ▸ Compare with another recording… with the second:
the saved picture is that dialog. Then two sync anchors are placed as a person would, from the two ground truths
(the score event nearest the moment the path is least sure of, which "Anchor the solid/dashed line" answers, and
the event where the path strays most from the truth), the path is recomputed through them (second picture), and
"Learn the metric" learns the project's sync metric from them. Its "Carry" button then carries the anchors onto
the second performance as suggestions, and the window showing it is the third picture. Prints the dialog's
summaries, the learning's and the carry's status lines. Runs offscreen.
"""

from __future__ import annotations

import os
import pathlib
import shutil
import sys

import numpy as np

from benchmarks._common import ROOT, themed_app  # noqa: E402
from benchmarks.images._shots import finish, main_window, parser, save_grab, scratch, wait

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")


def main(argv=None) -> int:
    ap = parser(__doc__, ROOT / "docs" / "images" / "compare_recordings.png")
    ap.add_argument("--anchors-out", default=str(ROOT / "docs" / "images" / "sync_anchors.png"))
    ap.add_argument("--suggestions-out", default=str(ROOT / "docs" / "images" / "suggestions.png"))
    ap.add_argument("--piece", default="Mozart_K331_1st-mov")
    ap.add_argument("--pianists", default="p01,p02")
    args = ap.parse_args(argv)
    from benchmarks.quality.quality_alignment_tools.render import ensure_fluidsynth, render
    from benchmarks.quality.quality_alignment_tools.vienna import performances
    from marginalia.engine import Engine
    from marginalia.types import AnchorLabel

    vienna = pathlib.Path(args.data) / "alignment" / "vienna4x22"
    ref_pianist, tgt_pianist = args.pianists.split(",")
    perfs = {p.pianist: p for p in performances(vienna, pieces=[args.piece], pianists=[ref_pianist, tgt_pianist])}
    if len(perfs) != 2 or not ensure_fluidsynth(print):
        print(f"sync_screenshot: needs {args.piece} by {args.pianists} in {vienna} and fluidsynth", file=sys.stderr)
        return 1
    app = themed_app()
    with scratch("sync-shot-") as work:
        wavs = {}
        for pianist, perf in perfs.items():
            wav = render(perf.midi, ROOT / "benchmarks" / "results" / "renders" / f"{perf.piece}_{pianist}.wav")
            wavs[pianist] = shutil.copy2(wav, work / f"{perf.piece}_{pianist}.wav")
        engine = Engine.create(work / "vienna.marginalia")
        engine.import_files(list(wavs.values()), scores={str(w): str(perfs[p].score_midi) for p, w in wavs.items()})
        ids = {info.name.rsplit("_", 1)[-1]: info.id for info in engine.items()}
        truth = perfs[ref_pianist].truth_median
        engine.add_labels([AnchorLabel(item_id=ids[ref_pianist], event=int(e), time_s=float(truth[e]))
                           for e in range(0, truth.size, 8) if np.isfinite(truth[e])])
        win = main_window(engine, work, (1300, 850))
        win.show()
        win.show_item(ids[ref_pianist])
        wait(app, lambda: win.current_item == ids[ref_pianist] and win._item_payload is not None, 120)
        win.choose_recording = lambda title, infos: ids[tgt_pianist]
        win.compare_recordings_dialog()
        wait(app, lambda: getattr(win, "last_sync_dialog", None) is not None, 300)
        dialog = win.last_sync_dialog
        dialog.resize(1200, 760)
        wait(app, None, 0.5)
        save_grab(dialog, args.out)
        print(dialog.summary.text())
        ref_truth, tgt_truth = truth, perfs[tgt_pianist].truth_median
        both = np.isfinite(ref_truth) & np.isfinite(tgt_truth)
        ref_on, tgt_on = ref_truth[both], tgt_truth[both]
        def errors():
            return np.abs(dialog.result.map_times(ref_on) - tgt_on)

        def figures(when):
            print(f"{when}: median error {np.median(errors()):.4f} s, {np.mean(errors() <= 0.05) * 100:.1f} % within "
                  f"50 ms, worst {errors().max():.3f} s, of {ref_on.size} notes")

        figures("Euclidean cost, no anchor")
        asked = int(np.argmin(np.abs(ref_on - dialog.question.reference_s))) if dialog.question else 0
        stray = int(np.argmax(np.abs(dialog.result.map_times(ref_on) - tgt_on)))
        print(f"anchors at events {asked} (asked) and {stray} (path off by "
              f"{abs(dialog.result.map_times(ref_on[[stray]])[0] - tgt_on[stray]):.3f} s)")
        for k in sorted({asked, stray}):
            dialog.anchorAdded.emit(float(ref_on[k]), float(tgt_on[k]))   # what the two clicks do
            wait(app, lambda: not win.runner.is_busy("sync") and not dialog.busy, 300)
        dialog.select_anchor(dialog.anchors[0].id)
        wait(app, None, 0.5)
        save_grab(dialog, args.anchors_out)
        print(dialog.summary.text())
        figures("Euclidean cost, through the 2 anchors")
        dialog.learn_button.click()
        wait(app, lambda: engine.sync_model_id is not None and not win.runner.is_busy("sync-learn"), 600)
        print(win.statusBar().currentMessage())
        wait(app, lambda: dialog.model_id == engine.sync_model_id and not win.runner.is_busy("sync"), 300)
        figures("learned metric, through the 2 anchors")
        dialog.carry_button.click()
        wait(app, lambda: not win.runner.is_busy("carry") and engine.suggestions(ids[tgt_pianist]), 300)
        print(win.statusBar().currentMessage())
        win.show_item(ids[tgt_pianist])
        wait(app, lambda: win.current_item == ids[tgt_pianist] and win._item_payload is not None, 120)
        first = engine.suggestions(ids[tgt_pianist])[2]
        win.active_view().main.setXRange(first.time_s - 4.0, first.time_s + 8.0, padding=0)
        win.active_view().select_label(first.id)
        win.label_list.select_label(first.id)
        wait(app, None, 0.5)
        finish(win, args.suggestions_out, win, engine)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
