"""Speed and memory of the exact alignment and DTW decoders.

Usage: ``python -m benchmarks.speed.decoders_alignment [--quick] [--data DIR] [--repeat N]``

Rows (targets from DESIGN.md, 2-core machine):

* DTW 10k x 10k, p=12, with path: time and extra peak memory, against
  ``librosa.sequence.dtw`` (with backtracking) and ``tslearn.metrics.dtw_path``;
* DTW 10k with a 5 % Sakoe--Chiba band, against librosa's banded DTW;
* template alignment T=3e4 frames x E=3e3 events;
* loss-augmented and second-best decoding relative to the plain decoders (each timed
  alternately with the plain decoder, best of ``2 N + 1``, so both see the same load);
* first call in a fresh process (numba ``cache=True``);
* with the real data present: audio-to-score on a rendered Vienna 4x22
  performance (template alignment and DTW on chroma), median onset error
  against the per-note ground truth.

``--quick`` uses 2k x 2k DTW and T=1e4 x E=1e3 alignment (targets scaled by the
number of cells) and times every reference once. Timings are best-of-N; the
machine load (``os.getloadavg``) is printed since the machine is shared.
Results go to ``benchmarks/results/decoders_alignment.json``.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import pathlib
import subprocess
import sys
import time
import tracemalloc

import numpy as np

from benchmarks._common import ROOT, format_row  # noqa: E402
from benchmarks._common import result_row as row  # noqa: E402
from marginalia.decoders.alignment import (  # noqa: E402
    align,
    align_loss_augmented,
    align_second_best,
)
from marginalia.decoders.warping import dtw, dtw_loss_augmented, dtw_second_best  # noqa: E402
from marginalia.types import Alignment  # noqa: E402


def best_time(fn, repeat):
    """Best wall time of ``repeat`` runs (the best CPU time is left in ``best_time.last_cpu``)."""
    times, cpus = [], []
    out = None
    for _ in range(repeat):
        gc.collect()
        c0 = time.process_time()
        t0 = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t0)
        cpus.append(time.process_time() - c0)
    best_time.last_cpu = min(cpus)
    return min(times), out


def best_pair(fn_a, fn_b, repeat):
    """Best wall and CPU times of two functions timed alternately: ``(wall_a, wall_b, cpu_a, cpu_b)``.

    A ratio of two separately timed bests moves with the load between them; alternating the two
    keeps both under the same load (as the segmentation suite does).
    """
    wa = wb = ca = cb = np.inf
    for _ in range(repeat):
        for fn, which in ((fn_a, 0), (fn_b, 1)):
            gc.collect()
            c0 = time.process_time()
            t0 = time.perf_counter()
            fn()
            w = time.perf_counter() - t0
            c = time.process_time() - c0
            if which == 0:
                wa, ca = min(wa, w), min(ca, c)
            else:
                wb, cb = min(wb, w), min(cb, c)
    return wa, wb, ca, cb


def peak_mb(fn):
    """Extra peak memory of numpy allocations made by ``fn`` (tracemalloc), in MB."""
    gc.collect()
    tracemalloc.start()
    base = tracemalloc.get_traced_memory()[0]
    fn()
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    return (peak - base) / 2**20


def ref(name, value):
    return {"name": name, "value": float(value)}


def first_call_seconds():
    code = (
        "import time; t0 = time.perf_counter()\n"
        "import numpy as np\n"
        "from marginalia.decoders.alignment import align, align_second_best, align_loss_augmented\n"
        "from marginalia.decoders.warping import dtw, dtw_second_best\n"
        "S = np.random.default_rng(0).normal(size=(40, 5))\n"
        "r = align(S); align_second_best(S); align_loss_augmented(S, r.alignment, loss='onset')\n"
        "A = np.random.default_rng(1).normal(size=(30, 3)); dtw(A, A[::-1]); dtw_second_best(A, A, band=0.2)\n"
        "print(time.perf_counter() - t0, time.process_time())\n"
    )
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True)
    wall, cpu = out.stdout.strip().splitlines()[-1].split()
    return float(wall), float(cpu)


def dtw_rows(n, p, repeat, quick):
    rows = []
    rng = np.random.default_rng(0)
    A = rng.normal(size=(n, p))
    B = np.cumsum(rng.normal(size=(n, p)), axis=0) * 0.05 + rng.normal(size=(n, p))
    scale = (n / 10_000) ** 2
    dtw(A[:50], B[:50])
    dtw(A[:50], B[:50], band=0.2)
    t_ours, res = best_time(lambda: dtw(A, B), repeat)
    cpu_ours = best_time.last_cpu
    mem_ours = peak_mb(lambda: dtw(A, B))

    import librosa
    import tslearn.metrics

    def lib_full():
        return librosa.sequence.dtw(X=A.T, Y=B.T, metric="sqeuclidean", backtrack=True)

    # one librosa run gives both figures (it allocates a few huge arrays, so tracemalloc costs nothing)
    gc.collect()
    tracemalloc.start()
    t_lib, (D_lib, wp_lib) = best_time(lib_full, 1)
    mem_lib = tracemalloc.get_traced_memory()[1] / 2**20
    tracemalloc.stop()
    assert abs(D_lib[-1, -1] - res.cost) <= 1e-6 * max(1.0, res.cost), (D_lib[-1, -1], res.cost)
    del D_lib, wp_lib
    gc.collect()
    tslearn.metrics.dtw_path(A[:50], B[:50])
    t_tsl, _ = best_time(lambda: tslearn.metrics.dtw_path(A, B), 1)
    label = f"DTW {n}x{n} p={p} with path"
    rows.append(row(f"{label}: time", t_ours, "s", 0.25 * scale, reference=ref("librosa.sequence.dtw", t_lib)))
    rows.append(row(f"{label}: time vs tslearn", t_ours, "s", 0.25 * scale, reference=ref("tslearn dtw_path", t_tsl)))
    rows.append(row(f"{label}: CPU time (process_time, less sensitive to load)", cpu_ours, "s", 0.25 * scale))
    rows.append(row(f"{label}: extra peak memory", mem_ours, "MB", 150 * scale,
                    reference=ref("librosa.sequence.dtw", mem_lib)))

    # 5 % band
    t_band, res_b = best_time(lambda: dtw(A, B, band=0.05), max(3, repeat))
    cpu_band = best_time.last_cpu
    mem_band = peak_mb(lambda: dtw(A, B, band=0.05))

    def lib_band():
        return librosa.sequence.dtw(X=A.T, Y=B.T, metric="sqeuclidean", backtrack=True,
                                    global_constraints=True, band_rad=0.05)

    t_lib_b, (D_b, _) = best_time(lib_band, 1)
    lib_band_cost = float(D_b[-1, -1])
    del D_b
    gc.collect()
    bl = f"DTW {n}x{n} p={p}, 5% band"
    rows.append(row(f"{bl}: time", t_band, "s", 0.03 * (n / 10_000), reference=ref("librosa dtw band_rad=0.05",
                                                                                     t_lib_b)))
    rows.append(row(f"{bl}: CPU time", cpu_band, "s", 0.03 * (n / 10_000)))
    rows.append(row(f"{bl}: extra peak memory", mem_band, "MB", 15 * (n / 10_000)))
    rows.append(row(f"{bl}: cost / librosa banded cost", res_b.cost / lib_band_cost, "ratio", None,
                    better="lower"))

    # loss-augmented and second best relative to the plain decoder, timed alternately with it
    pr = 2 * repeat + 1
    tp1, t_aug, cp1, cpu_aug = best_pair(lambda: dtw(A, B), lambda: dtw_loss_augmented(A, B, res.warping), pr)
    tp2, t_2nd, cp2, cpu_2nd = best_pair(lambda: dtw(A, B), lambda: dtw_second_best(A, B), pr)
    rows.append(row(f"{label}: loss-augmented / plain", t_aug / tp1, "ratio", 1.2,
                    reference=ref("plain dtw (s)", tp1)))
    rows.append(row(f"{label}: loss-augmented / plain, CPU time", cpu_aug / cp1, "ratio", 1.2))
    rows.append(row(f"{label}: second-best / plain", t_2nd / tp2, "ratio", 1.3,
                    reference=ref("plain dtw (s)", tp2)))
    rows.append(row(f"{label}: second-best / plain, CPU time", cpu_2nd / cp2, "ratio", 1.3))
    return rows


def alignment_rows(T, E, repeat):
    rng = np.random.default_rng(1)
    truth = Alignment(np.r_[0, np.sort(rng.choice(np.arange(1, T), E - 1, replace=False))], T)
    S = rng.normal(size=(T, E))
    S[np.arange(T), truth.frame_events()] += 1.0
    align(S[:100, :10])
    scale = (T * E) / (3e4 * 3e3)
    t_plain, res = best_time(lambda: align(S), repeat)
    cpu_plain = best_time.last_cpu
    mem = peak_mb(lambda: align(S))
    label = f"alignment T={T} E={E}"
    rows = [row(f"{label}: time", t_plain, "s", 0.4 * scale),
            row(f"{label}: CPU time", cpu_plain, "s", 0.4 * scale),
            row(f"{label}: extra peak memory", mem, "MB", None),
            row(f"{label}: frames on the planted event", 1 - np.mean(res.alignment.frame_events()
                                                                  != truth.frame_events()), "fraction", None,
                better="higher")]
    # relative to the plain decoder, timed alternately with it
    pr = 2 * repeat + 1
    for loss in ("hamming", "onset"):
        tp, t, cp, c = best_pair(lambda: align(S), lambda: align_loss_augmented(S, truth, loss=loss), pr)
        rows.append(row(f"{label}: loss-augmented ({loss}) / plain", t / tp, "ratio", 1.2,
                        reference=ref("plain align (s)", tp)))
        rows.append(row(f"{label}: loss-augmented ({loss}) / plain, CPU time", c / cp, "ratio", 1.2))
    tp, t, cp, c = best_pair(lambda: align(S), lambda: align_second_best(S), pr)
    rows.append(row(f"{label}: second-best / plain", t / tp, "ratio", 1.3,
                    reference=ref("plain align (s)", tp)))
    rows.append(row(f"{label}: second-best / plain, CPU time", c / cp, "ratio", 1.3))
    return rows


def _events_from_ground_truth(path):
    """Score events (notes sharing a score onset) with pitch classes and true performed onsets."""
    import csv

    groups = {}
    with open(path, newline="") as fh:
        for r in csv.DictReader(fh):
            if r["label"] != "match":
                continue
            q = float(r["score_onset_quarter"])
            groups.setdefault(q, []).append((int(r["pitch"]) % 12, float(r["perf_onset_sec"])))
    quarters = sorted(groups)
    phi = np.zeros((len(quarters), 12))
    truth_s = np.zeros(len(quarters))
    for e, q in enumerate(quarters):
        for pc, _ in groups[q]:
            phi[e, pc] = 1.0
        truth_s[e] = min(t for _, t in groups[q])
    return np.array(quarters), phi, truth_s


def real_rows(data, repeat):
    """Audio-to-score on a real Vienna 4x22 performance rendered to audio.

    Score events come from the ground-truth table (notes sharing a score onset);
    ``align`` uses S = normalised chroma x normalised pitch-class templates and
    ``dtw`` warps the audio chroma against the score's piano roll on a uniform
    grid. Reported: median |predicted - true| event onset in milliseconds.
    """
    base = data / "alignment" / "vienna4x22"
    wav = base / "audio_rendered" / "Chopin_op10_no3_p01.wav"
    gt = base / "ground_truth" / "Chopin_op10_no3_p01.csv"
    if not wav.exists() or not gt.exists():
        return []
    import librosa

    sr, hop = 22050, 512
    y, _ = librosa.load(wav, sr=sr)
    X = librosa.feature.chroma_cqt(y=y, sr=sr, hop_length=hop).T
    X = X / (np.linalg.norm(X, axis=1, keepdims=True) + 1e-9)
    fps = sr / hop
    quarters, phi, truth_s = _events_from_ground_truth(gt)
    phi_n = phi / np.linalg.norm(phi, axis=1, keepdims=True)
    # the audio starts with silence before the first note: let event 0 absorb it
    S = X @ phi_n.T
    T, E = S.shape
    t_al, res = best_time(lambda: align(S), repeat)
    pred_s = res.alignment.onsets / fps
    err_al = np.median(np.abs(pred_s[1:] - truth_s[1:])) * 1000
    # DTW: score piano roll at 10 frames per quarter
    grid = 10
    n_score = int(np.ceil((quarters[-1] - quarters[0] + 1) * grid))
    roll = np.zeros((n_score, 12))
    pos = np.round((quarters - quarters[0]) * grid).astype(int)
    for e in range(E):
        stop = pos[e + 1] if e + 1 < E else n_score
        roll[pos[e]:max(stop, pos[e] + 1)] += phi_n[e]
    roll = roll / (np.linalg.norm(roll, axis=1, keepdims=True) + 1e-9)
    t_dtw, wres = best_time(lambda: dtw(roll, X), repeat)
    path = wres.warping.path
    first_audio = np.full(n_score, -1)
    for i, j in path[::-1]:
        first_audio[i] = j
    pred_dtw = first_audio[pos] / fps
    err_dtw = np.median(np.abs(pred_dtw[1:] - truth_s[1:])) * 1000
    name = f"real audio Chopin op10/3 p01 ({T} frames, {E} events)"
    return [row(f"{name}: align time", t_al, "s", None),
            row(f"{name}: align median onset error", err_al, "ms", None),
            row(f"{name}: DTW vs score roll ({n_score}x{T}) time", t_dtw, "s", None),
            row(f"{name}: DTW median onset error", err_dtw, "ms", None)]


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="smaller problems, finishes in under a minute")
    ap.add_argument("--data", default=str(ROOT.parent / "shared" / "data"), help="real data folder")
    ap.add_argument("--repeat", type=int, default=None, help="repetitions (best of N)")
    args = ap.parse_args(argv)
    repeat = args.repeat or (2 if args.quick else 3)
    load0 = os.getloadavg()
    rows = []
    wall, cpu = first_call_seconds()
    rows.append(row("first call in a fresh process (import numba + load cached kernels)", wall, "s", 1.0))
    rows.append(row("first call in a fresh process: CPU time", cpu, "s", 1.0))
    if args.quick:
        rows += alignment_rows(10_000, 1_000, repeat)
        rows += dtw_rows(2_000, 12, repeat, True)
    else:
        rows += alignment_rows(30_000, 3_000, repeat)
        rows += dtw_rows(10_000, 12, repeat, False)
    try:
        rows += real_rows(pathlib.Path(args.data), repeat)
    except Exception as exc:  # real data is optional; report why it was skipped
        print(f"(real-data rows skipped: {exc})")
    load1 = os.getloadavg()

    width = max(len(r["case"]) for r in rows)
    print(f"load average before/after: {load0[0]:.2f} / {load1[0]:.2f} (2 cores, shared machine)")
    print(f"{'case':<{width}}  {'value':>10}  {'unit':<8} {'target':>8}  {'ok':<5} reference")
    for r in rows:
        ratio = ""
        if r["reference"] and r["unit"] in ("s", "MB") and r["value"] > 0:
            ratio = f"({r['reference']['value'] / r['value']:.1f}x ours)"
        print(format_row(r, width=width, note=ratio))
    out = ROOT / "benchmarks" / "results" / "decoders_alignment.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(rows, indent=2))
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
