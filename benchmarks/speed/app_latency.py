"""How fast the desktop app answers: label -> redrawn prediction, pan/zoom frames, cold start.

Usage: ``python -m benchmarks.speed.app_latency [--quick] [--data PATH]``

Cases
-----
* label -> redraw (until the view has repainted the new prediction) on a 5,000-probe aCGH chromosome (real
  neuroblastoma high-density profile, subsampled to 5,000 probes) and on a 3-minute audio item (Vienna 4x22 renders joined):
  time from the label edit in the real main window to the first paint of the view after the new
  prediction was handed to it (perceptron update + constrained prediction in a worker thread,
  redraw on the GUI thread). Paint times are recorded as they happen: the paint often comes in
  the same event-loop pass that delivers the prediction. The worker's and the GUI thread's CPU
  time per label are reported too (a loaded machine stretches wall time, not CPU time), and the
  slowest label's timeline (stored, started, updated, predicted, delivered, drawn) is logged.
  Reference, same run: a full retrain followed by a prediction (what an app without the
  interactive path would do per label). Each label starts from an idle app (no ranking of
  questions in the background) and is undone afterwards.
* pan/zoom frame time on a 10-minute spectrogram (96 mel bands x ~26,000 frames): setXRange and
  the repaint it triggers (processed by the event loop, as on screen; every frame is checked to
  have repainted). The view shows a time pyramid level (max of pairs) matched to the zoom.
  Reference, same run: the same view with pyqtgraph's ImageItem autoDownsample instead.
* cold start: process start to a usable window (first item drawn) with the demo project.
  Reference, same run: process start to an empty PySide6 window.

Runs offscreen (software raster); the machine's load is printed next to the figures.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import pathlib
import subprocess
import sys
import tempfile
import time

from benchmarks._common import ROOT, format_row, pump  # noqa: E402
from benchmarks._common import result_row as row  # noqa: E402

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

import numpy as np  # noqa: E402

RESULTS = ROOT / "benchmarks" / "results" / "app_latency.json"
VIENNA = ("Chopin_op38_p01.wav", "Mozart_K331_1st-mov_p01.wav", "Chopin_op10_no3_p01.wav",
          "Schubert_D783_no15_p01.wav")


# ----------------------------------------------------------------------------- data
def cgh_csv(data: pathlib.Path, out: pathlib.Path, n_probes: int = 5000) -> pathlib.Path:
    """Write one real chromosome of ``n_probes`` probes as a profiles.csv."""
    big = data / "cgh" / "neuroblastoma" / "profiles_all.csv.gz"
    key = "20131,7,"   # a high-density array: 97,260 probes on chromosome 7
    rows = []
    with gzip.open(big, "rt") as fh:
        fh.readline()
        for line in fh:
            if line.startswith(key):
                rows.append(line)
            elif rows:
                break
    if len(rows) < n_probes:
        raise SystemExit(f"expected a sequence of >= {n_probes} probes in {big}, found {len(rows)}")
    keep = np.linspace(0, len(rows) - 1, n_probes).round().astype(int)
    with open(out, "w") as fh:
        fh.write("profile.id,chromosome,position,logratio\n")
        fh.writelines(rows[i] for i in keep)
    return out


def joined_wav(data: pathlib.Path, out: pathlib.Path, seconds: float) -> pathlib.Path:
    """Join Vienna 4x22 renders (looping) into one ``seconds`` long WAV."""
    import soundfile

    folder = data / "alignment" / "vienna4x22" / "audio_rendered"
    parts, total, sr = [], 0, None
    while total < seconds * (sr or 22050):
        for name in VIENNA:
            y, sr = soundfile.read(folder / name, dtype="float32", always_2d=False)
            parts.append(y if y.ndim == 1 else y.mean(axis=1))
            total += parts[-1].size
            if total >= seconds * sr:
                break
    y = np.concatenate(parts)[: int(seconds * sr)]
    soundfile.write(out, y, sr)
    return out


# ----------------------------------------------------------------------------- helpers
def percentile(values, q):
    return float(np.percentile(np.asarray(values, dtype=float), q))


def load_now():
    return os.getloadavg()[0]


# ----------------------------------------------------------------------------- label -> redraw
def label_redraw(app, win, item_id, make_label, n):
    """Latencies (s) from label edit to the redrawn, painted prediction; each label is undone after."""
    win.show_item(item_id)
    pump(app, lambda: win.current_item == item_id and win.current_prediction() is not None
         and win.current_prediction().item_id == item_id, timeout=300)
    # start from an idle app: the first ranking of questions runs in the background after start-up
    pump(app, lambda: not win.runner.is_busy(), timeout=600)
    paints = _PaintCounter(win.active_view().viewport())
    out = []
    for i in range(n):
        n0 = len(win.latencies)
        t0 = time.perf_counter()
        win.create_label(make_label(i))
        if not pump(app, lambda: len(win.latencies) > n0, timeout=60):
            raise RuntimeError("no prediction redrawn within 60 s")
        # the first repaint after the new prediction was handed to the view, as on screen. It may
        # already have happened inside the event-loop pass that delivered the prediction, so look
        # at paint times rather than at paints still to come.
        drawn = max(win.drawn_at or 0.0, t0)
        if not pump(app, lambda: paints.first_after(drawn) is not None, timeout=5):
            raise RuntimeError("the view did not repaint the new prediction within 5 s")
        out.append(paints.first_after(drawn) - t0)
        n1 = len(win.latencies)
        win.undo()
        pump(app, lambda: len(win.latencies) > n1, timeout=60)
        pump(app, lambda: not win.runner.is_busy(), timeout=60)
    _log_slowest(win, out)
    return out


def _cpu_rows(win, what):
    """CPU time per label, which a loaded machine stretches less than wall time.

    Worker: perceptron update + constrained prediction. GUI thread: storing and showing the label
    plus drawing the prediction (the repaints that follow are not counted; see the pan/zoom rows).
    """
    labels = [st for st in win.learner.timeline if "worker_cpu_s" in st][0::2]   # labels, not their undos
    worker = [st["worker_cpu_s"] for st in labels]
    gui = [st["edit_cpu_s"] + st["draw_cpu_s"] for st in labels if "edit_cpu_s" in st and "draw_cpu_s" in st]
    out = []
    if worker:
        out.append(row(f"  worker CPU per label p95, {what}", percentile(worker, 95) * 1000, "ms", None, "lower"))
    if gui:
        out.append(row(f"  GUI-thread CPU per label p95 (store+draw), {what}",
                       percentile(gui, 95) * 1000, "ms", None, "lower"))
    return out


def _log_slowest(win, latencies):
    """Print where the slowest label's time went (the learner's per-edit timeline, in ms)."""
    edits = [st for st in win.learner.timeline if "drawn" in st][-2 * len(latencies):][::2]
    if len(edits) != len(latencies):
        return
    i = int(np.argmax(latencies))
    st = edits[i]
    steps = ", ".join(f"{k} {1000 * (v - st['edited']):.0f}" for k, v in st.items()
                      if not k.endswith("_s") and k not in ("item", "edited"))
    log(f"slowest label ({1000 * latencies[i]:.0f} ms end to end): storing the edit "
        f"{1000 * st.get('store_s', float('nan')):.0f} ms, then {steps} ms; "
        f"worker CPU {1000 * st.get('worker_cpu_s', float('nan')):.0f} ms")


def full_retrain_reference(engine, item_id, label, repeat):
    """A full retrain + predict per label, timed (the label is removed afterwards); None if it fails."""
    try:
        return _full_retrain(engine, item_id, label, repeat)
    except Exception as exc:  # the reference must not sink the app's own figures
        log(f"reference failed: {exc!r}")
        return None


def _full_retrain(engine, item_id, label, repeat):
    best = float("inf")
    for _ in range(repeat):
        stored = engine.add_label(label)
        t0 = time.perf_counter()
        engine.retrain(task_name="segmentation")
        engine.predict(item_id)
        best = min(best, time.perf_counter() - t0)
        engine.delete_label(stored.id)
    return best


# ----------------------------------------------------------------------------- pan / zoom
class _PaintCounter:
    """Counts paint events of a widget and when they happened (to check that each frame repainted)."""

    def __init__(self, widget):
        from PySide6 import QtCore

        class Filter(QtCore.QObject):
            def eventFilter(inner, obj, event):
                if event.type() == QtCore.QEvent.Type.Paint:
                    self.count += 1
                    self.times.append(time.perf_counter())
                    del self.times[:-64]
                return False

        self.count = 0
        self.times = []
        self._filter = Filter()
        widget.installEventFilter(self._filter)

    def first_after(self, t):
        """perf_counter time of the first paint at or after ``t`` (None if none yet)."""
        return next((p for p in self.times if p >= t), None)


def pan_zoom_frames(app, image, times, freqs, n_frames, *, mode="pyramid"):
    """Frame times (s) of random pans and zooms; ``mode`` is the app's "pyramid" or pyqtgraph's "auto"."""
    from marginalia.app.views.spectrogram_view import SpectrogramView
    from marginalia.types import Sequence

    view = SpectrogramView()
    view.use_pyramid = mode == "pyramid"
    view.image.setAutoDownsample(mode == "auto")
    view.resize(1400, 700)
    view.show()
    seq = Sequence(np.zeros((times.size, 1)), times, name="10-minute spectrogram", units="s", kind="audio")
    view.set_audio(seq, image, times, freqs, "bench")
    pump(app, timeout=0.3)
    paints = _PaintCounter(view.viewport())
    t_end = float(times[-1])
    lo, hi = 0.0, t_end
    rng = np.random.default_rng(0)
    frames = []
    for k in range(n_frames):
        w = hi - lo
        if k % 3 == 0:        # zoom in or out around the centre
            f = 0.8 if (k // 3) % 2 == 0 and w > 5 else 1.25
            c = 0.5 * (lo + hi)
            lo, hi = c - 0.5 * w * f, c + 0.5 * w * f
        else:                 # pan by 5-15 % of the visible width
            d = w * rng.uniform(0.05, 0.15) * (1 if rng.random() < 0.5 else -1)
            lo, hi = lo + d, hi + d
        lo, hi = max(lo, 0.0), min(max(hi, lo + 1.0), t_end)
        before = paints.count
        t0 = time.perf_counter()
        view.main.setXRange(lo, hi, padding=0)
        app.processEvents()       # the repaint of what changed, as on screen
        frames.append(time.perf_counter() - t0)
        if paints.count == before:
            raise RuntimeError("the view was not repainted: the frame time would be meaningless")
    view.close()
    view.deleteLater()
    return frames


# ----------------------------------------------------------------------------- cold start
CHILD_APP = r"""
import sys, time
t0 = time.perf_counter()
from PySide6 import QtWidgets, QtCore
import marginalia.app.main as m
from marginalia.app import theme
qapp = QtWidgets.QApplication(sys.argv[:1])
theme.apply_theme(qapp)
win = m.create_window(m.build_parser().parse_args(["--demo"]),
                      settings=QtCore.QSettings({ini!r}, QtCore.QSettings.Format.IniFormat))
win.show()
while not (win.current_item and win._item_payload is not None):
    qapp.processEvents(); time.sleep(0.001)
win.grab()
print("READY", time.process_time(), flush=True)
while win.current_prediction() is None:
    qapp.processEvents(); time.sleep(0.001)
print("PREDICTED", flush=True)
win.close()
"""

CHILD_BARE = r"""
import sys
from PySide6 import QtWidgets
qapp = QtWidgets.QApplication(sys.argv[:1])
w = QtWidgets.QMainWindow(); w.resize(1400, 880); w.show(); qapp.processEvents(); w.grab()
import time
print("READY", time.process_time(), flush=True)
print("PREDICTED", flush=True)
"""


def start_time(code, env):
    t0 = time.perf_counter()
    err = tempfile.TemporaryFile(mode="w+")
    proc = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, stderr=err, text=True, env=env)
    ready = predicted = None
    start_time.cpu = float("nan")
    for line in proc.stdout:
        if line.startswith("READY"):
            ready = time.perf_counter() - t0
            start_time.cpu = float(line.split()[1])   # the child's CPU seconds (all its threads) by then
        elif line.startswith("PREDICTED"):
            predicted = time.perf_counter() - t0
            break
    proc.wait(timeout=300)
    if ready is None:
        err.seek(0)
        tail = [ln for ln in err.read().splitlines() if "propagateSizeHints" not in ln][-15:]
        raise RuntimeError("the app did not start:\n" + "\n".join(tail))
    return ready, predicted


# ----------------------------------------------------------------------------- main
_T0 = time.perf_counter()


def log(msg):
    print(f"[{time.perf_counter() - _T0:6.1f} s] {msg}", file=sys.stderr, flush=True)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true", help="fewer repetitions (under a minute)")
    ap.add_argument("--data", default=str(ROOT.parent / "shared" / "data"), help="the shared data folder")
    args = ap.parse_args(argv)
    data = pathlib.Path(args.data)
    n_labels = 6 if args.quick else 25
    n_frames = 30 if args.quick else 150
    n_starts = 1 if args.quick else 4
    rows = []
    load_before = load_now()

    from PySide6 import QtCore, QtWidgets

    from marginalia.app import theme
    from marginalia.app.main_window import MainWindow
    from marginalia.engine import Engine
    from marginalia.types import RegionKind, RegionLabel

    qapp = QtWidgets.QApplication.instance() or QtWidgets.QApplication([])
    theme.apply_theme(qapp)
    work = pathlib.Path(tempfile.mkdtemp(prefix="marginalia-bench-"))

    # -- cold start (first: the demo project does not exist yet; then: it does)
    env = dict(os.environ, XDG_STATE_HOME=str(work / "state"), QT_QPA_PLATFORM="offscreen")
    ini = str(work / "child.ini")
    code = CHILD_APP.format(root=str(ROOT), ini=ini)
    first_ready, _ = start_time(code, env)
    starts, cpus = [], []
    for _ in range(n_starts):
        starts.append(start_time(code, env))
        cpus.append(start_time.cpu)
    bare = min(start_time(CHILD_BARE, env)[0] for _ in range(n_starts))
    bare_cpu = start_time.cpu
    best_ready = min(s[0] for s in starts)
    best_pred = min(s[1] for s in starts if s[1] is not None)
    ref = {"name": "empty PySide6 window", "value": bare}
    rows.append(row("cold start to usable window (demo)", best_ready, "s", 3.0, "lower", ref))
    rows.append(row("  CPU time of the process by then (best)", min(cpus), "s", None, "lower",
                    {"name": "empty PySide6 window", "value": bare_cpu}))
    rows.append(row("cold start to first prediction drawn (demo)", best_pred, "s", None, "lower", ref))
    log("cold starts measured")
    rows.append(row("first start, building the demo project", first_ready, "s", None, "lower", ref))

    # -- project with a 5,000-probe chromosome and a 3-minute audio item
    cgh = cgh_csv(data, work / "profiles.csv")
    wav3 = joined_wav(data, work / "three_minutes.wav", 180.0)
    engine = Engine.create(work / "bench.marginalia")
    if args.quick:
        (cgh_id, aud_id), aud10 = engine.import_files([cgh, wav3]), None
    else:
        wav10 = joined_wav(data, work / "ten_minutes.wav", 600.0)
        cgh_id, aud_id, aud10 = engine.import_files([cgh, wav3, wav10])
    log("project built")
    settings = QtCore.QSettings(str(work / "bench.ini"), QtCore.QSettings.Format.IniFormat)
    win = MainWindow(engine, settings=settings)
    win.learner.timer.setInterval(3_600_000)  # measure the interactive path, not the retrain on pauses
    win.resize(1400, 880)
    win.show()
    rng = np.random.default_rng(0)

    def cgh_label(i):
        a = int(rng.integers(100, 4800))
        return RegionLabel(item_id=cgh_id, start=a, stop=a + 60, kind=RegionKind.ONE if i % 2 else RegionKind.ZERO)

    def label_rows(item_id, make_label, name, kind, what):
        """Rows of label->redraw latency on one item (and the full-retrain reference unless --quick)."""
        win.learner.engine_seconds.clear()
        win.learner.timeline.clear()
        lat = label_redraw(qapp, win, item_id, make_label, n_labels)
        eng_s = list(win.learner.engine_seconds)
        cpu = _cpu_rows(win, kind)
        log(f"{name} label->redraw measured")
        ref_s = None if args.quick else full_retrain_reference(engine, item_id, make_label(1), 1)
        ref = None if ref_s is None else {"name": "full retrain (segmentation) + predict per label",
                                          "value": ref_s * 1000}
        log(f"{name} reference measured")
        return [row(f"label->redraw p50, {what}", percentile(lat, 50) * 1000, "ms", None, "lower", ref),
                row(f"label->redraw p95, {what}", percentile(lat, 95) * 1000, "ms", 300, "lower", ref),
                row(f"  of which engine update+predict p50, {kind}", percentile(eng_s, 50) * 1000, "ms", None,
                    "lower"),
                *cpu]

    rows.extend(label_rows(cgh_id, cgh_label, "aCGH", "chromosome", "5,000-probe chromosome"))

    n_frames_audio = engine.sequence(aud_id).n_samples

    def audio_label(i):
        a = int(rng.integers(50, n_frames_audio - 400))
        return RegionLabel(item_id=aud_id, start=a, stop=a + 300, kind=RegionKind.ONE if i % 2 else RegionKind.ZERO)

    rows.extend(label_rows(aud_id, audio_label, "audio", "audio", "3-minute audio"))
    win.learner.timer.stop()
    win.runner.shutdown()

    # -- 10-minute spectrogram pan/zoom
    if args.quick:   # the 3-minute spectrogram tiled to 10 minutes (computing a new one takes long)
        image3, times3, freqs = engine.spectrogram(aud_id)
        reps = int(np.ceil(600.0 / times3[-1]))
        image = np.tile(image3, (1, reps))
        hop = float(np.median(np.diff(times3)))
        times = np.arange(image.shape[1]) * hop
        keep = times <= 600.0
        image, times = np.ascontiguousarray(image[:, keep]), times[keep]
    else:
        image, times, freqs = engine.spectrogram(aud10)
    frames = pan_zoom_frames(qapp, image, times, freqs, n_frames)
    plain = pan_zoom_frames(qapp, image, times, freqs, n_frames, mode="auto")
    ref = {"name": "pyqtgraph autoDownsample instead of the time pyramid (fps)", "value": 1.0 / float(np.median(plain))}
    rows.append(row(f"pan/zoom fps (median), 10-minute spectrogram {image.shape[0]}x{image.shape[1]}",
                    1.0 / float(np.median(frames)), "fps", 30.0, "higher", ref))
    rows.append(row("pan/zoom frame time p95, 10-minute spectrogram", percentile(frames, 95) * 1000, "ms",
                    1000 / 30.0, "lower", {"name": "pyqtgraph autoDownsample", "value":
                                           percentile(plain, 95) * 1000}))
    log("pan/zoom measured")
    engine.close()

    load_after = load_now()
    print(f"\nMarginalia app latency ({'quick' if args.quick else 'full'}; offscreen; load average "
          f"{load_before:.1f} -> {load_after:.1f} on {os.cpu_count()} cores)\n")
    for r in rows:
        print(format_row(r, width=62))
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps(rows, indent=2))
    print(f"\nwrote {RESULTS}")


if __name__ == "__main__":
    main()
