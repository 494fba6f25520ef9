"""How the decoders' and the aligner's cost grows with the input: time and peak memory against size, log-log.

Usage: ``python -m benchmarks.speed.scaling [--quick] [--data DIR] [--cases penalized,real-cgh,dtw,aligner]``

Every point runs in a fresh process (the numba kernels load from their cache), which reports the best of a few
timings after one warm-up call and its peak resident memory above the same method's process on a tiny input
(imports, compiled kernels); the fitted exponent ``b`` of ``time ~ a n^b`` (least squares on the log-log points) is printed per
method, with the references timed on the same inputs in the same run:

* ``penalized``: the exact penalized change-point decoder on synthetic piecewise-constant sequences (p = 1, a
  change every ~100 samples, BIC-like penalty), T = 10^3 .. 3·10^5; reference ``ruptures.KernelCPD``
  (linear kernel, C) on the same sequences, up to a time cap; also the second-best decoder's time over the plain one;
* ``real-cgh``: the same decoder on real neuroblastoma chromosomes (``cgh/neuroblastoma/profiles_all.csv.gz``)
  chosen from about 10^3 to the longest, 97,260 probes, with KernelCPD beside it;
* ``dtw``: exact DTW with the path on random 12-dimensional sequences, N x N for N = 250 .. 8,000; references
  ``tslearn.metrics.dtw_path`` and ``librosa.sequence.dtw`` (the latter up to N = 2,000, its memory);
* ``aligner``: audio-to-score alignment of recordings of 30 s to 10 min made by concatenating the Vienna 4x22
  renders (``benchmarks/results/renders``, made by ``quality_alignment.py``; FluidR3 piano) with their scores
  concatenated the same way; reference librosa chroma DTW up to 5 minutes. Time includes the features.

Writes ``benchmarks/results/scaling.json``. Times depend on the machine and its load (printed); the exponents
and the ratios between methods in one run are the figures to compare.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from benchmarks._common import ROOT  # noqa: E402

RESULTS = ROOT / "benchmarks" / "results"
#: a reference (or ours) is not timed at the next size once one call took longer than this (s)
CAP_S = 20.0


def log(msg):
    print(msg, flush=True)


# ------------------------------------------------------------------ inputs
def piecewise(T: int, seed: int) -> np.ndarray:
    """A piecewise-constant 1-d sequence with a change every ~100 samples and unit noise, shape (T, 1)."""
    rng = np.random.default_rng(seed)
    x = np.empty(T)
    i = 0
    while i < T:
        n = int(rng.integers(50, 150))
        x[i:i + n] = rng.normal(0, 3)
        i += n
    return (x + rng.normal(0, 1, T))[:, None]


def bic_penalty(y) -> float:
    sigma = np.median(np.abs(np.diff(y.ravel()))) / 0.6745 / np.sqrt(2.0)
    return 2.0 * sigma ** 2 * np.log(len(y))


def concatenated_recording(renders: Path, vienna: Path, seconds: float, work: Path) -> tuple:
    """A WAV and a score of about ``seconds``: Vienna renders and their scores one after the other."""
    import soundfile as sf

    from benchmarks.quality.quality_alignment_tools.vienna import performances
    from marginalia.io.midi import read_midi
    from marginalia.types import MidiScore
    perfs = sorted(performances(vienna), key=lambda p: (p.pianist, p.piece))
    ys, pitches, on, off = [], [], [], []
    t = 0.0
    for p in perfs:
        wav = renders / f"{p.piece}_{p.pianist}.wav"
        if not wav.is_file():
            continue
        y, sr = sf.read(wav, dtype="float32")
        score = read_midi(p.score_midi)
        dur = len(y) / sr
        stretch = dur / max(score.duration_s, 1e-9)        # the score's notes spread over the recording
        pitches += list(score.pitches)
        on += list(t + np.asarray(score.onsets_s) * stretch)
        off += list(t + np.asarray(score.offsets_s) * stretch)
        ys.append(y)
        t += dur
        if t >= seconds:
            break
    if t < seconds:
        raise SystemExit(f"scaling: only {t:.0f} s of renders in {renders}; run quality_alignment.py first")
    y = np.concatenate(ys)[: int(seconds * sr)]
    keep = np.asarray(on) < seconds - 0.5
    score = MidiScore(pitches=np.asarray(pitches)[keep], onsets_s=np.asarray(on)[keep],
                      offsets_s=np.minimum(np.asarray(off)[keep], seconds), name=f"concatenated {seconds:.0f} s")
    path = work / f"concat_{int(seconds)}.wav"
    sf.write(path, y, sr)
    return path, score


# ------------------------------------------------------------------ one point, in its own process
def _best(fn, repeat: int) -> float:
    fn()                                    # warm-up: caches, first-touch of memory
    best = float("inf")
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return best


def run_point(spec: dict) -> dict:
    """Time one method on one input (called in a child process); ``{"seconds", "peak_mb"}``."""
    method, data = spec["method"], np.load(spec["input"]) if spec.get("input", "").endswith(".npy") else None
    repeat = int(spec.get("repeat", 3))
    if method in ("ours", "ours-second", "kernelcpd"):
        beta = bic_penalty(data)
        if method == "kernelcpd":
            import ruptures as rpt
            fn = lambda: rpt.KernelCPD(kernel="linear", min_size=1).fit(data).predict(pen=beta)  # noqa: E731
        else:
            from marginalia.decoders.segmentation import segment_penalized, segment_second_best
            decode = segment_second_best if method == "ours-second" else segment_penalized
            fn = lambda: decode(data, beta)  # noqa: E731
    elif method in ("ours-dtw", "tslearn", "librosa-dtw"):
        rng = np.random.default_rng(0)
        n = int(spec["size"])
        A, B = rng.normal(size=(n, 12)), rng.normal(size=(n, 12))
        if method == "ours-dtw":
            from marginalia.decoders.warping import dtw
            fn = lambda: dtw(A, B)  # noqa: E731
        elif method == "tslearn":
            from tslearn.metrics import dtw_path
            fn = lambda: dtw_path(A, B)  # noqa: E731
        else:
            import librosa
            fn = lambda: librosa.sequence.dtw(X=A.T, Y=B.T, metric="sqeuclidean")  # noqa: E731
    elif method in ("ours-align", "librosa-align"):
        from marginalia.io.audio import load_audio
        from marginalia.io.midi import read_midi
        y, sr = load_audio(spec["audio"], sr=22050)
        score = read_midi(spec["score"])
        if method == "ours-align":
            from marginalia.align import ScoreAligner
            fn = lambda: ScoreAligner().align(y, sr, score)  # noqa: E731
        else:
            from benchmarks.quality.quality_alignment import librosa_dtw
            fn = lambda: librosa_dtw(y, sr, score)  # noqa: E731
        repeat = 1
    else:
        raise SystemExit(f"unknown method {method!r}")
    seconds = _best(fn, repeat)
    return {"seconds": seconds, "peak_mb": peak_rss_mb()}


def peak_rss_mb() -> float:
    """This process's peak resident memory (MB), from ``VmHWM``: unlike ``ru_maxrss``, which Linux carries
    across ``exec`` from the parent that forked the process, it counts this program alone."""
    try:
        with open("/proc/self/status") as fh:
            for line in fh:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024.0
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def measure(spec: dict) -> dict:
    out = subprocess.run([sys.executable, "-m", "benchmarks.speed.scaling", "--point", json.dumps(spec)],
                         capture_output=True, text=True, cwd=ROOT)
    if out.returncode != 0:
        raise SystemExit(f"scaling: the point {spec} failed:\n{out.stderr[-2000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def exponent(sizes, seconds) -> float:
    """Least-squares slope of log(seconds) against log(size)."""
    x, y = np.log(np.asarray(sizes, float)), np.log(np.asarray(seconds, float))
    return float(np.polyfit(x, y, 1)[0]) if len(x) >= 2 else float("nan")


def sweep(name: str, methods: dict, points: list, make_spec, tiny) -> dict:
    """Run every method over ``points`` (sizes), stopping a method after a call over :data:`CAP_S`.

    Memory is reported above the same method run on the input of size ``tiny`` in its own process (the
    imports, the compiled kernels and the interpreter, which every size pays alike).
    """
    out = {}
    for method, label in methods.items():
        base = measure(make_spec(method, tiny))["peak_mb"]
        rows = []
        for size in points:
            spec = make_spec(method, size)
            if spec is None:
                continue
            got = measure(spec)
            got.update(size=size, extra_mb=max(got["peak_mb"] - base, 0.0))
            rows.append(got)
            log(f"  {name:<9} {label:<32} n={size:>9,}  {got['seconds']:9.4f} s  {got['extra_mb']:8.1f} MB")
            if got["seconds"] > CAP_S:
                break
        b = exponent([r["size"] for r in rows], [r["seconds"] for r in rows])
        out[label] = {"points": rows, "exponent": b}
        log(f"  {name:<9} {label:<32} fitted exponent {b:.2f} over n = {rows[0]['size']:,} .. {rows[-1]['size']:,}")
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="smaller sizes (about a minute)")
    ap.add_argument("--data", default=str(ROOT.parent / "shared" / "data"), help="the shared data folder")
    ap.add_argument("--cases", default="penalized,real-cgh,dtw,aligner")
    ap.add_argument("--point", default=None, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.point:
        print(json.dumps(run_point(json.loads(args.point))))
        return 0
    cases = args.cases.split(",")
    data = Path(args.data)
    results = {"load_start": os.getloadavg(), "quick": args.quick}
    t_start = time.time()
    log(f"load average {'%.2f %.2f %.2f' % os.getloadavg()} on {os.cpu_count()} cores; each point in its own process")
    with tempfile.TemporaryDirectory(prefix="scaling-") as tmp:
        tmp = Path(tmp)
        if "penalized" in cases:
            sizes = [1_000, 3_000, 10_000, 30_000] + ([] if args.quick else [100_000, 300_000])
            for T in [100] + sizes:
                np.save(tmp / f"pw_{T}.npy", piecewise(T, T))
            results["penalized"] = sweep(
                "penalized", {"ours": "ours (penalized)", "ours-second": "ours (second best)",
                              "kernelcpd": "ruptures.KernelCPD (linear, C)"}, sizes,
                lambda m, T: {"method": m, "input": str(tmp / f"pw_{T}.npy")}, 100)
        if "real-cgh" in cases:
            from benchmarks.speed.decoders_segmentation import read_longest_cgh
            seqs = read_longest_cgh(data / "cgh" / "neuroblastoma" / "profiles_all.csv.gz", 400)
            by_len = sorted(seqs, key=lambda s: len(s[1]))
            targets = [1_000, 3_000, 10_000, 30_000, 100_000] if not args.quick else [1_000, 10_000]
            chosen = {}
            for t in targets:
                name, y = min(by_len, key=lambda s: abs(len(s[1]) - t))
                chosen[len(y)] = (name, y)
                np.save(tmp / f"cgh_{len(y)}.npy", np.asarray(y, float)[:, None])
            sizes = sorted(chosen)
            np.save(tmp / "cgh_100.npy", piecewise(100, 100))
            log("real chromosomes: " + ", ".join(f"{chosen[n][0]} ({n:,} probes)" for n in sizes))
            results["real-cgh"] = sweep(
                "real-cgh", {"ours": "ours (penalized)", "kernelcpd": "ruptures.KernelCPD (linear, C)"}, sizes,
                lambda m, T: {"method": m, "input": str(tmp / f"cgh_{T}.npy")}, 100)
        if "dtw" in cases:
            sizes = [250, 500, 1_000, 2_000] + ([] if args.quick else [4_000, 8_000])
            results["dtw"] = sweep(
                "dtw", {"ours-dtw": "ours (exact DTW + path)", "tslearn": "tslearn.metrics.dtw_path",
                        "librosa-dtw": "librosa.sequence.dtw"}, sizes,
                lambda m, n: None if (m == "librosa-dtw" and n > 2_000) else {"method": m, "size": n, "repeat": 2},
                20)
        if "aligner" in cases:
            from marginalia.io.midi import write_midi
            durations = [30, 60, 120] + ([] if args.quick else [300, 600])
            recs = {}
            for d in [5] + durations:
                wav, score = concatenated_recording(RESULTS / "renders", data / "alignment" / "vienna4x22", d, tmp)
                mid = tmp / f"concat_{d}.mid"
                write_midi(mid, score)
                recs[d] = (wav, mid)
            results["aligner"] = sweep(
                "aligner", {"ours-align": "ours (ScoreAligner, features incl.)",
                            "librosa-align": "librosa chroma DTW"}, durations,
                lambda m, d: None if (m == "librosa-align" and d > 300) else
                {"method": m, "audio": str(recs[d][0]), "score": str(recs[d][1])}, 5)
            for r in results["aligner"].values():
                for p in r["points"]:
                    p["x_real_time"] = p["size"] / p["seconds"]
    results["load_end"] = os.getloadavg()
    results["seconds"] = time.time() - t_start
    log("")
    log(f"{'case':<10} {'method':<36} {'exponent':>8}   largest n: time, memory above a tiny input's")
    for case in ("penalized", "real-cgh", "dtw", "aligner"):
        for label, r in results.get(case, {}).items():
            last = r["points"][-1]
            extra = f", {last['x_real_time']:.1f}x real time" if "x_real_time" in last else ""
            log(f"{case:<10} {label:<36} {r['exponent']:8.2f}   n={last['size']:,}: {last['seconds']:.4g} s, "
                f"{last['extra_mb']:.0f} MB{extra}")
    log(f"total {results['seconds']:.0f} s; load average at end {'%.2f %.2f %.2f' % os.getloadavg()}")
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / "scaling.json").write_text(json.dumps(results, indent=1))
    log(f"wrote {RESULTS / 'scaling.json'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
