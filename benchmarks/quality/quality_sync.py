"""Audio-to-audio sync quality: carry note onsets between two pianists' renders made with different soundfonts.

usage: python -m benchmarks.quality.quality_sync [--pieces Chopin_op10_no3,...] [--test-pair p01:p02]
                                                 [--train-pair p03:p04] [--C 1] [--max-iter 100]
                                                 [--no-librosa] [--no-synctoolbox] [--no-long] [--long-s 600]
                                                 [--out benchmarks/results/quality_sync.json]

Vienna 4x22 (``alignment/vienna4x22``): every performance MIDI needed is rendered at 22.05 kHz with
fluidsynth, the reference pianist with FluidR3_GM and the target pianist with TimGM6mb (two different
pianos), cached under ``benchmarks/results/renders_sync/``. Truth: the ground-truth tables give every
score note's performed onset in both performances; the notes matched in both (same score note id) are
the carried onsets. Error of a note: |its reference onset mapped through the method's path - its
target onset| (both renders lag their MIDI by a few ms; the lags cancel to about 1 ms).

Methods (same files, same run):

* ``ours learned`` -- :class:`marginalia.SyncAligner` with the metric learned (Frank-Wolfe, Hamming
  loss) on the pairs of the OTHER pieces played by the ``--train-pair`` pianists (leave one piece out);
* ``ours Euclidean`` -- the same aligner, unlearned metric (all descriptors weighted 1);
* ``ours learned, unrefined`` and ``ours Euclidean, unrefined`` -- the same paths with the carried times
  left where the path puts them (no refinement on the target's attacks, :mod:`marginalia.sync.refine`);
* ``ours learned + k anchors`` -- k true (reference, target) onset pairs evenly spread as anchors;
  errors over the other notes;
* ``ours learned from its k anchors + them`` -- what the app's "Learn the metric" does with a pair's k
  sync anchors and nothing else: the metric learned on the test pair alone by the latent alternation
  of :func:`marginalia.sync.anchors.fit_from_anchors` (the path through the anchors under the current
  metric, the metric fitted on it, up to 3 rounds from the Euclidean cost), then the path through the
  same anchors with it; errors over the other notes (compare with ``ours Euclidean + k anchors``);
  ``... (1 round)`` stops after the first fit;
* ``librosa chroma DTW`` -- CQT chroma (hop 512) of both, ``librosa.sequence.dtw`` with the cosine cost;
* ``Sync Toolbox MrMsDTW`` -- Sync Toolbox (Müller et al. 2021, PyPI ``synctoolbox``, the ``synctoolbox``
  extra, in an environment of its own since it caps numba) audio-to-audio as its tutorial does it:
  quantised chroma + DLNCO onset features at 50 Hz of both recordings (tuning estimated on each), the
  optimal chroma shift, memory-restricted multi-resolution multi-scale DTW (step weights 1.5, 1.5, 2), the
  path made strictly monotonic. Skipped, with a line saying so, when ``synctoolbox`` is not installed.

Also: time and peak memory of a long pair (the test pair's pieces chained and repeated to
``--long-s`` seconds each), measured in a child process: features and DTW separately, and the peak
resident memory of the child.

Targets (issue 44): median <= 10 ms, >= 97 % within 50 ms, no error > 1 s; learned >= 30 % fewer
errors beyond 50 ms than Euclidean; a 10-minute pair in <= 2 s and <= 300 MB.
Writes ``benchmarks/results/quality_sync.json``.
"""

from __future__ import annotations

import argparse
import contextlib
import csv
import io
import json
import resource
import subprocess
import sys
import time
import tracemalloc
from pathlib import Path

import numpy as np

from benchmarks._common import ROOT, reference, result_row, write_rows
from benchmarks.quality.quality_alignment_tools.render import render as render_midi

RESULTS = ROOT / "benchmarks" / "results"
SR = 22050
FONTS = {"ref": "/usr/share/sounds/sf2/FluidR3_GM.sf2", "tgt": "/usr/share/sounds/sf2/TimGM6mb.sf2"}
PIECES = ("Chopin_op10_no3", "Chopin_op38", "Mozart_K331_1st-mov", "Schubert_D783_no15")


def log(msg):
    print(msg, file=sys.stderr, flush=True)


def render(midi: Path, font: str) -> Path:
    """``midi`` rendered with soundfont ``font`` (cached)."""
    return render_midi(midi, RESULTS / "renders_sync" / f"{midi.stem}_{Path(font).stem}.wav", sr=SR, font=font)


def onsets(root: Path, piece: str, pianist: str, events: bool = False) -> dict:
    """score note id -> performed onset (s) of the matched notes of one performance.

    ``events``: score onset (beats) -> median performed onset of its matched notes (a chord is one event).
    """
    out = {}
    with open(root / "ground_truth" / f"{piece}_{pianist}.csv", newline="") as fh:
        for row in csv.DictReader(fh):
            if row["label"] == "match":
                key = float(row["score_onset_beat"]) if events else row["score_id"]
                out.setdefault(key, []).append(float(row["perf_onset_sec"]))
    return {k: float(np.median(v)) for k, v in out.items()}


def matched(root, piece, ref_pianist, tgt_pianist, events: bool = False) -> np.ndarray:
    """(reference_s, target_s) of the notes (or events) matched in both performances, shape (N, 2)."""
    a, b = onsets(root, piece, ref_pianist, events), onsets(root, piece, tgt_pianist, events)
    both = sorted(set(a) & set(b), key=lambda k: (a[k], b[k], str(k)))   # the same order in every process
    return np.array([[a[k], b[k]] for k in both])


def load(path):
    from marginalia.io.audio import load_audio
    return load_audio(str(path), sr=SR)


def librosa_map(ya, yb, times):
    import librosa
    hop = 512
    ca = librosa.feature.chroma_cqt(y=np.asarray(ya, np.float32), sr=SR, hop_length=hop)
    cb = librosa.feature.chroma_cqt(y=np.asarray(yb, np.float32), sr=SR, hop_length=hop)
    _, wp = librosa.sequence.dtw(X=ca, Y=cb, metric="cosine")
    wp = wp[::-1]
    ta, tb = wp[:, 0] * hop / SR, wp[:, 1] * hop / SR
    u, inv = np.unique(ta, return_inverse=True)
    mean = np.maximum.accumulate(np.bincount(inv, weights=tb) / np.bincount(inv))
    return np.interp(times, u, mean)


SYNCTOOLBOX_RATE = 50


def synctoolbox_available() -> bool:
    try:
        import synctoolbox  # noqa: F401
    except ImportError:
        return False
    return True


def synctoolbox_features(y):
    """Sync Toolbox's quantised chroma and DLNCO features of a mono recording at 50 Hz, shapes (12, T)."""
    from synctoolbox.feature.chroma import pitch_to_chroma, quantize_chroma
    from synctoolbox.feature.dlnco import pitch_onset_features_to_DLNCO
    from synctoolbox.feature.pitch import audio_to_pitch_features
    from synctoolbox.feature.pitch_onset import audio_to_pitch_onset_features
    from synctoolbox.feature.utils import estimate_tuning
    y = np.asarray(y, dtype=np.float64)
    tuning = estimate_tuning(y, SR)
    with contextlib.redirect_stdout(io.StringIO()):  # its filter banks print a dot per pitch even when not verbose
        f_pitch = audio_to_pitch_features(f_audio=y, Fs=SR, tuning_offset=tuning, feature_rate=SYNCTOOLBOX_RATE)
        f_onset = audio_to_pitch_onset_features(f_audio=y, Fs=SR, tuning_offset=tuning)
    f_chroma = quantize_chroma(f_chroma=pitch_to_chroma(f_pitch=f_pitch))
    f_dlnco = pitch_onset_features_to_DLNCO(f_peaks=f_onset, feature_rate=SYNCTOOLBOX_RATE,
                                            feature_sequence_length=f_chroma.shape[1])
    return f_chroma, f_dlnco


def synctoolbox_map(ya, yb, times):
    """Reference times (s) carried to the target by Sync Toolbox's MrMsDTW (chroma + DLNCO), shape like ``times``."""
    from synctoolbox.dtw.mrmsdtw import sync_via_mrmsdtw
    from synctoolbox.dtw.utils import compute_optimal_chroma_shift, make_path_strictly_monotonic, shift_chroma_vectors
    from synctoolbox.feature.chroma import quantized_chroma_to_CENS
    chroma_a, dlnco_a = synctoolbox_features(ya)
    chroma_b, dlnco_b = synctoolbox_features(yb)
    cens_a = quantized_chroma_to_CENS(chroma_a, 201, 50, SYNCTOOLBOX_RATE)[0]
    cens_b = quantized_chroma_to_CENS(chroma_b, 201, 50, SYNCTOOLBOX_RATE)[0]
    shift = compute_optimal_chroma_shift(cens_a, cens_b)
    chroma_b, dlnco_b = shift_chroma_vectors(chroma_b, shift), shift_chroma_vectors(dlnco_b, shift)
    wp = sync_via_mrmsdtw(f_chroma1=chroma_a, f_onset1=dlnco_a, f_chroma2=chroma_b, f_onset2=dlnco_b,
                          input_feature_rate=SYNCTOOLBOX_RATE, step_weights=np.array([1.5, 1.5, 2.0]),
                          threshold_rec=10 ** 6, verbose=False)
    wp = make_path_strictly_monotonic(wp)
    return np.interp(np.asarray(times) * SYNCTOOLBOX_RATE, wp[0], wp[1]) / SYNCTOOLBOX_RATE


def anchor_split(m: np.ndarray, k: int):
    """k evenly spread notes as anchors (distinct reference and target times), the others for scoring."""
    if k == 0:
        return None, np.ones(len(m), bool)
    idx = np.unique(np.linspace(0, len(m) - 1, k + 2).round().astype(int)[1:-1])
    keep = np.ones(len(m), bool)
    keep[idx] = False
    anchors = m[idx]
    # notes of one chord share a time: anchors must not cross, so keep them monotone
    anchors = anchors[np.r_[True, np.diff(anchors[:, 1]) >= 0]]
    return anchors, keep


def summary(errors: np.ndarray) -> dict:
    e = np.abs(errors)
    return {"median_ms": 1000 * float(np.median(e)), "within_50ms_pct": 100 * float(np.mean(e <= 0.05)),
            "worst_s": float(e.max()), "beyond_50ms": int(np.sum(e > 0.05)), "n": int(e.size)}


def long_pair(args) -> dict:
    """Child-process part: time and memory of one long pair."""
    from marginalia.sync import SyncAligner
    root = Path(args.data) / "alignment" / "vienna4x22"
    ref_p, tgt_p = args.test_pair.split(":")

    def chained(pianist, font):
        parts = [load(render(root / "midi" / f"{piece}_{pianist}.mid", font))[0] for piece in PIECES]
        y = np.concatenate(parts)
        reps = int(np.ceil(args.long_s * SR / y.size))
        return np.tile(y, reps)[:int(args.long_s * SR)]

    ya, yb = chained(ref_p, FONTS["ref"]), chained(tgt_p, FONTS["tgt"])
    from marginalia.io.audio import clear_audio_cache
    clear_audio_cache()
    rss0 = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    aligner = SyncAligner(runner_up=False)
    tracemalloc.start()
    t0 = time.perf_counter()
    fa, fb = aligner.compute_features(ya, SR), aligner.compute_features(yb, SR)
    t1 = time.perf_counter()
    feat_peak = tracemalloc.get_traced_memory()[1] / 2**20
    tracemalloc.reset_peak()
    aligner.predict(fa, fb)          # warm: numba kernels compiled / loaded from cache
    t2 = time.perf_counter()
    r = aligner.predict(fa, fb)
    t3 = time.perf_counter()
    dtw_peak = tracemalloc.get_traced_memory()[1] / 2**20
    tracemalloc.reset_peak()
    r2 = SyncAligner(runner_up=True).predict(fa, fb)
    t4 = time.perf_counter()
    second_peak = tracemalloc.get_traced_memory()[1] / 2**20
    tracemalloc.stop()
    rss1 = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    # traced: every numpy array (inputs and features included) at its peak during each stage
    return {"seconds": args.long_s, "frames": [fa.n_frames, fb.n_frames], "features_s": t1 - t0,
            "dtw_first_s": t2 - t1, "dtw_s": t3 - t2, "dtw_with_runner_up_s": t4 - t3,
            "features_peak_mb": feat_peak, "dtw_peak_mb": dtw_peak, "dtw_with_runner_up_peak_mb": second_peak,
            "rss_before_mb": rss0, "peak_rss_mb": rss1, "path_cells": int(r.warping.path.shape[0]),
            "margin": r2.margin}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", default=str(ROOT.parent / "shared" / "data"), help="the shared data folder")
    ap.add_argument("--pieces", default=",".join(PIECES), help="comma-separated pieces to test on")
    ap.add_argument("--test-pair", default="p01:p02", help="reference:target pianists of the test pairs")
    ap.add_argument("--train-pair", default="p03:p04", help="reference:target pianists of the training pairs")
    ap.add_argument("--C", type=float, default=1.0)
    ap.add_argument("--max-iter", type=int, default=100)
    ap.add_argument("--no-librosa", action="store_true")
    ap.add_argument("--no-synctoolbox", action="store_true", help="skip the Sync Toolbox reference")
    ap.add_argument("--no-long", action="store_true", help="skip the long pair")
    ap.add_argument("--long-s", type=float, default=600.0, help="length of each recording of the long pair (s)")
    ap.add_argument("--out", default=str(RESULTS / "quality_sync.json"), help="the JSON file of the results")
    ap.add_argument("--long-only", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.long_only:
        print(json.dumps(long_pair(args)))
        return
    from marginalia.sync import SyncAligner, SyncResult
    from marginalia.sync.anchors import fit_from_anchors
    root = Path(args.data) / "alignment" / "vienna4x22"
    pieces = [p for p in args.pieces.split(",") if p]
    ref_p, tgt_p = args.test_pair.split(":")
    tr_ref, tr_tgt = args.train_pair.split(":")
    base = SyncAligner()
    feats, audio = {}, {}
    use_stb = not args.no_synctoolbox and synctoolbox_available()
    if not args.no_synctoolbox and not use_stb:
        print("Sync Toolbox MrMsDTW: not installed (pip install -e '.[bench,music,synctoolbox]' in a separate "
              "environment: it caps numba < 0.66); skipped",
              flush=True)

    def features(piece, pianist, side):
        key = (piece, pianist, side)
        if key not in feats:
            y, sr = load(render(root / "midi" / f"{piece}_{pianist}.mid", FONTS[side]))
            audio[key] = y
            feats[key] = base.compute_features(y, sr)
        return feats[key]

    t_start = time.time()
    for piece in PIECES:
        features(piece, tr_ref, "ref"), features(piece, tr_tgt, "tgt")
    for piece in pieces:
        features(piece, ref_p, "ref"), features(piece, tgt_p, "tgt")
    log(f"renders and features: {time.time() - t_start:.0f} s")

    event_errors = {name: [] for name in ("ours learned", "ours Euclidean", "librosa chroma DTW",
                                          "Sync Toolbox MrMsDTW")}
    errors = {name: [] for name in ("ours learned", "ours Euclidean", "ours learned, unrefined",
                                    "ours Euclidean, unrefined", "librosa chroma DTW", "Sync Toolbox MrMsDTW",
                                    "ours learned + 5 anchors",
                                    "ours learned + 20 anchors", "ours Euclidean + 5 anchors",
                                    "ours Euclidean + 20 anchors", "ours learned from its 5 anchors + them",
                                    "ours learned from its 20 anchors + them",
                                    "ours learned from its 5 anchors + them (1 round)",
                                    "ours learned from its 20 anchors + them (1 round)")}
    per_piece, fit_s, weights = {}, [], {}
    for piece in pieces:
        train = [(features(q, tr_ref, "ref"), features(q, tr_tgt, "tgt"), matched(root, q, tr_ref, tr_tgt))
                 for q in PIECES if q != piece]
        t0 = time.time()
        learned = SyncAligner(C=args.C, max_iter=args.max_iter).fit(train)
        fit_s.append(time.time() - t0)
        weights[piece] = np.round(learned.w_, 3).tolist()
        euclid = SyncAligner()
        fa, fb = features(piece, ref_p, "ref"), features(piece, tgt_p, "tgt")
        m = matched(root, piece, ref_p, tgt_p)
        m_ev = matched(root, piece, ref_p, tgt_p, events=True)
        per_piece[piece] = {}
        for name, aligner in (("ours learned", learned), ("ours Euclidean", euclid)):
            unrefined = aligner.predict(fa, fb, runner_up=False)
            e = SyncResult(unrefined.warping, unrefined.reference_times_s, unrefined.target_times_s,
                           unrefined.cost).map_times(m[:, 0]) - m[:, 1]
            errors[f"{name}, unrefined"].append(e)
            per_piece[piece][f"{name}, unrefined"] = summary(e)
            for k in (0, 5, 20):
                anchors, keep = anchor_split(m, k)
                t0 = time.time()
                r = aligner.predict(fa, fb, anchors=anchors, runner_up=False)
                dt = time.time() - t0
                e = r.map_times(m[keep, 0]) - m[keep, 1]
                label = name if k == 0 else f"{name} + {k} anchors"
                if k == 0:
                    event_errors[name].append(r.map_times(m_ev[:, 0]) - m_ev[:, 1])
                errors[label].append(e)
                per_piece[piece][label] = {**summary(e), "dtw_s": dt}
        for k, rounds in ((5, None), (20, None), (5, 1), (20, 1)):
            anchors, keep = anchor_split(m, k)
            own, made, _ = fit_from_anchors(SyncAligner(C=args.C, max_iter=args.max_iter), [(fa, fb, anchors)],
                                            rounds=rounds)
            label = f"ours learned from its {k} anchors + them" + (" (1 round)" if rounds == 1 else "")
            weights[f"{piece}: {label}"] = np.round(own.w_, 3).tolist()
            e = own.predict(fa, fb, anchors=anchors, runner_up=False).map_times(m[keep, 0]) - m[keep, 1]
            errors[label].append(e)
            per_piece[piece][label] = {**summary(e), "rounds": made}
        if not args.no_librosa:
            both = librosa_map(audio[(piece, ref_p, "ref")], audio[(piece, tgt_p, "tgt")], np.r_[m[:, 0], m_ev[:, 0]])
            e = both[:len(m)] - m[:, 1]
            event_errors["librosa chroma DTW"].append(both[len(m):] - m_ev[:, 1])
            errors["librosa chroma DTW"].append(e)
            per_piece[piece]["librosa chroma DTW"] = summary(e)
        if use_stb:
            t0 = time.time()
            both = synctoolbox_map(audio[(piece, ref_p, "ref")], audio[(piece, tgt_p, "tgt")],
                                   np.r_[m[:, 0], m_ev[:, 0]])
            dt = time.time() - t0
            e = both[:len(m)] - m[:, 1]
            event_errors["Sync Toolbox MrMsDTW"].append(both[len(m):] - m_ev[:, 1])
            errors["Sync Toolbox MrMsDTW"].append(e)
            per_piece[piece]["Sync Toolbox MrMsDTW"] = {**summary(e), "features_and_dtw_s": dt}
        log(f"{piece}: " + "; ".join(f"{k}: {v['median_ms']:.1f} ms, {v['within_50ms_pct']:.1f} %, "
                                      f"worst {v['worst_s']:.2f} s" for k, v in per_piece[piece].items()))
    totals = {k: summary(np.concatenate(v)) for k, v in errors.items() if v}
    lib = totals.get("librosa chroma DTW")
    rows = []
    for name, s in totals.items():
        main_row = name == "ours learned"
        rows.append(result_row(f"{name}: median error", s["median_ms"], "ms", 10.0 if main_row else None,
                               reference=reference("librosa", lib["median_ms"]) if lib and main_row else None))
        rows.append(result_row(f"{name}: within 50 ms", s["within_50ms_pct"], "%", 97.0 if main_row else None,
                               better="higher",
                               reference=reference("librosa", lib["within_50ms_pct"]) if lib and main_row else None))
        rows.append(result_row(f"{name}: worst error", s["worst_s"], "s", 1.0 if main_row else None))
    event_totals = {k: summary(np.concatenate(v)) for k, v in event_errors.items() if v}
    for name, s in event_totals.items():
        rows.append(result_row(f"events (chords as one, median onset) {name}: median error", s["median_ms"], "ms"))
        rows.append(result_row(f"events {name}: within 50 ms", s["within_50ms_pct"], "%", better="higher"))
        rows.append(result_row(f"events {name}: worst error", s["worst_s"], "s"))
    eu, le = totals["ours Euclidean"]["beyond_50ms"], totals["ours learned"]["beyond_50ms"]
    reduction = 100.0 * (eu - le) / eu if eu else 0.0
    rows.append(result_row("learned vs Euclidean: fewer errors > 50 ms", reduction, "%", 30.0, better="higher"))
    rows.append(result_row("metric fit (Frank-Wolfe), mean per held-out piece", float(np.mean(fit_s)), "s"))
    long = None
    if not args.no_long:
        cmd = [sys.executable, "-m", "benchmarks.quality.quality_sync", "--long-only", "--data", args.data,
               "--test-pair", args.test_pair, "--long-s", str(args.long_s)]
        out = subprocess.run(cmd, check=True, capture_output=True, text=True, cwd=ROOT)
        long = json.loads(out.stdout.strip().splitlines()[-1])
        minutes = args.long_s / 60
        rows.append(result_row(f"{minutes:g}-minute pair: DTW (corridor)", long["dtw_s"], "s", 2.0))
        rows.append(result_row(f"{minutes:g}-minute pair: features of both", long["features_s"], "s"))
        rows.append(result_row(f"{minutes:g}-minute pair: DTW with the runner-up", long["dtw_with_runner_up_s"], "s"))
        rows.append(result_row(f"{minutes:g}-minute pair: peak memory of the DTW (traced arrays)",
                               long["dtw_peak_mb"], "MB", 300.0))
        rows.append(result_row(f"{minutes:g}-minute pair: peak memory of the features (traced arrays)",
                               long["features_peak_mb"], "MB", 300.0))
        log(f"long pair: {long}")
    payload = {"benchmark": "quality_sync", "argv": sys.argv[1:], "pieces": pieces, "test_pair": args.test_pair,
               "train_pair": args.train_pair, "totals": totals, "event_totals": event_totals, "per_piece": per_piece,
               "weights": weights,
               "long_pair": long, "rows": rows}
    write_rows(Path(args.out), payload)


if __name__ == "__main__":
    main()
