"""Metric learning for DTW (thesis ch. 5): learned metric vs Euclidean, Hamming- vs area-trained.

Two problems:

* synthetic (thesis §5.5.1 in spirit): pairs of sequences where a few
  coordinates sample shared smooth signals at two randomly warped clocks and
  the others are noise; the true warping matches the closest clock times.
  Reported: the share of the learned (trace-normalised) metric on the relevant
  coordinates, the test symmetric area loss of DTW with the learned metric
  (Hamming- and area-trained) against Euclidean DTW and the true metric.
* real (``--data``/alignment/vienna4x22): two performances of the same piece
  by different pianists, each described by frame features computed from its
  MIDI (sounding chroma, onset chroma, octave bands, loudness, note density;
  z-scored per performance). The true warping follows the performed onsets of
  the same score notes (ground-truth CSVs). Pianists are split into train and
  test groups; ``C`` is chosen on validation pairs of training pianists.
  Reported: mean absolute time error (s) on test pairs for Euclidean DTW, the
  hand-picked sounding-chroma features, and the learned metrics.

Fit times (wall and CPU) compare :class:`WarpingFrankWolfe` with the generic
:class:`SSVM` on the Hamming loss (same problem), timed in the same run.

Usage: ``python -m benchmarks.experiments.learning_warping [--quick] [--data DIR] [--skip-real]``
"""

from __future__ import annotations

import argparse
import csv
import functools
import json
import os
import time
from pathlib import Path

import numpy as np

from benchmarks._common import (  # noqa: E402
    ROOT,  # noqa: E402
    record_row,
)
from marginalia.decoders.warping import dtw, warping_area_loss  # noqa: E402
from marginalia.learners.ssvm import SSVM  # noqa: E402
from marginalia.sync.frank_wolfe import WarpingFrankWolfe  # noqa: E402
from marginalia.sync.model import WarpingModel  # noqa: E402

ROWS = []
row = functools.partial(record_row, ROWS)


def timed(fn):
    """``(result, wall seconds, CPU seconds of this process)``."""
    w, c = time.perf_counter(), time.process_time()
    out = fn()
    return out, time.perf_counter() - w, time.process_time() - c


# ------------------------------------------------------------------ synthetic


def warp_times(T, rng, strength=0.6):
    rates = np.convolve(np.exp(strength * rng.normal(size=T)), np.ones(5) / 5, mode="same")
    t = np.concatenate([[0.0], np.cumsum(rates[:-1])])
    return t / t[-1]


def synthetic_pair(rng, TA, TB, p, relevant, noise=1.0):
    u, v = warp_times(TA, rng), warp_times(TB, rng)
    A, B = rng.normal(scale=noise, size=(TA, p)), rng.normal(scale=noise, size=(TB, p))
    for k in range(relevant):
        f, ph, a = rng.uniform(1, 4, 3), rng.uniform(0, 2 * np.pi, 3), rng.uniform(0.5, 1.0, 3)

        def sig(t):
            return (a[:, None] * np.sin(2 * np.pi * f[:, None] * t[None] + ph[:, None])).sum(0)

        A[:, k] = sig(u) + 0.05 * rng.normal(size=TA)
        B[:, k] = sig(v) + 0.05 * rng.normal(size=TB)
    return (A, B), dtw(u[:, None], v[:, None]).warping


def mean_area(model, w, pairs):
    return float(np.mean([warping_area_loss(y, model.decode(x, w)) for x, y in pairs]))


def pick_C(loss, grid, train, val, max_iter, metric="diagonal", learner=WarpingFrankWolfe):
    """Best ``C`` of ``grid`` by mean validation error; returns (C, learner, model)."""
    best = None
    Xs, Ys = [x for x, _ in train], [y for _, y in train]
    for C in grid:
        model = WarpingModel(metric, loss)
        fw = learner(model, C=C, max_iter=max_iter, tol=1e-3, random_state=0).fit(Xs, Ys)
        err = val(model, fw.w_)
        if best is None or err < best[0]:
            best = (err, C, fw, model)
    return best[1], best[2], best[3]


def synthetic(quick):
    rng = np.random.default_rng(0)
    p, relevant = 11, 2
    T = 40 if quick else 80
    n_train, n_test = (8, 8) if quick else (20, 20)
    make = lambda: synthetic_pair(rng, T, int(T * 1.2), p, relevant)  # noqa: E731
    train = [make() for _ in range(n_train)]
    val = [make() for _ in range(n_train // 2)]
    test = [make() for _ in range(n_test)]
    max_iter = 30 if quick else 60
    euclid_model = WarpingModel()
    w_euclid = euclid_model.initial_w([x for x, _ in train])
    w_true = np.r_[np.ones(relevant), np.zeros(p - relevant)]
    e_euclid = mean_area(euclid_model, w_euclid, test)
    e_true = mean_area(euclid_model, w_true, test)
    ref_e = {"name": "euclidean DTW", "value": e_euclid}
    row(f"synthetic p={p} T={T}: test area loss, true metric", e_true, "cells", None, "lower", ref_e)
    results = {}
    for loss, grid in (("hamming", (1.0, 10.0, 100.0)), ("area", (1e3, 1e4, 1e5))):
        C, fw, model = pick_C(loss, grid, train, lambda m, w: mean_area(m, w, val), max_iter)
        share = float(np.trace(model.normalized_metric(fw.w_)[:relevant, :relevant]))
        err = mean_area(model, fw.w_, test)
        results[loss] = err
        row(f"synthetic: metric share on the {relevant} relevant coords ({loss}-trained)", share, "", 0.8, "higher",
            note=f"C={C:g}")
        row(f"synthetic: test area loss, {loss}-trained metric", err, "cells", None, "lower", ref_e)
    row("synthetic: test area loss, area-trained vs hamming-trained", results["area"], "cells", None, "lower",
        {"name": "hamming-trained", "value": results["hamming"]})
    if not quick:
        synthetic_variants(train, val, test, relevant, max_iter, results["area"], ref_e)
    fit_times(train)


def synthetic_variants(train, val, test, relevant, max_iter, relaxed_area, ref_e):
    """The area loss without the relaxation, and a full PSD metric."""
    # generic SSVM whose loss-augmented DTW climbs the exact area objective
    C, ss, model = pick_C("area", (0.1, 1.0, 10.0), train, lambda m, w: mean_area(m, w, val), max_iter,
                          learner=SSVM)
    row("synthetic: test area loss, area by SSVM + ascent oracle (no relaxation)", mean_area(model, ss.w_, test),
        "cells", None, "lower", {"name": "relaxed-dual FW", "value": relaxed_area}, note=f"C={C:g}")
    C, fw, model = pick_C("area", (1e3, 1e4, 1e5), train, lambda m, w: mean_area(m, w, val), max_iter,
                          metric="full")
    share = float(np.trace(model.normalized_metric(fw.w_)[:relevant, :relevant]))
    row(f"synthetic: full PSD metric, share on the {relevant} relevant coords (area)", share, "", 0.8, "higher",
        note=f"C={C:g}")
    row("synthetic: test area loss, full PSD metric, area-trained", mean_area(model, fw.w_, test), "cells", None,
        "lower", ref_e)
    partial_labels(train, test)


def partial_labels(train, test, frac=0.1):
    """Only ``frac`` of the true path's cells given as anchor labels (WarpAnchorLabel)."""
    from marginalia.learners.partial import PartialLabelSSVM
    from marginalia.types import WarpAnchorLabel
    rng = np.random.default_rng(1)
    Xs, labels = [x for x, _ in train], []
    for _, y in train:
        keep = np.sort(rng.choice(len(y.path), max(1, int(frac * len(y.path))), replace=False))
        labels.append([WarpAnchorLabel("pair", ta=int(i), tb=int(j)) for i, j in y.path[keep]])
    model = WarpingModel()
    fw = WarpingFrankWolfe(model, C=10.0, max_iter=30, random_state=0).fit(Xs, labels)
    e_complete = mean_area(model, fw.w_, test)
    model = WarpingModel()  # partial_loss="violations": the loss counts missed anchors
    (pl, wall, cpu) = timed(lambda: PartialLabelSSVM(model, C=10.0, strategy="bridge", max_outer=5,
                                                     inner_max_iter=20, random_state=0).fit(Xs, labels))
    row(f"synthetic: {frac:.0%} anchor labels, test area loss, bridge loss (PartialLabelSSVM)",
        mean_area(model, pl.w_, test), "cells", None, "lower",
        {"name": "FW on Euclidean completions", "value": e_complete}, note=f"cpu {cpu:.1f}s")


def best_of(fn, n=3):
    """Best wall and best CPU seconds of ``n`` runs."""
    runs = [timed(fn)[1:] for _ in range(n)]
    return min(r[0] for r in runs), min(r[1] for r in runs)


def fit_times(train):
    """The relaxed-dual learner vs the generic SSVM on the same Hamming problem, and on the area loss (best of 3)."""
    Xs, Ys = [x for x, _ in train], [y for _, y in train]
    iters = 20
    w_fw, c_fw = best_of(lambda: WarpingFrankWolfe(WarpingModel(), C=10.0, max_iter=iters, tol=0,
                                                   random_state=0).fit(Xs, Ys))
    w_ss, c_ss = best_of(lambda: SSVM(WarpingModel(), C=10.0, max_iter=iters, tol=0, averaging=False,
                                      random_state=0).fit(Xs, Ys))
    row(f"synthetic: fit CPU time, hamming, {iters} passes x {len(Xs)} pairs", c_fw, "s", None, "lower",
        {"name": "SSVM (generic BCFW)", "value": c_ss}, note=f"wall {w_fw:.2f}s vs {w_ss:.2f}s")
    w_area, c_area = best_of(lambda: WarpingFrankWolfe(WarpingModel(loss="area"), C=1e3, max_iter=iters, tol=0,
                                                       random_state=0).fit(Xs, Ys))
    row(f"synthetic: fit CPU time, area, {iters} passes x {len(Xs)} pairs", c_area, "s", None, "lower",
        {"name": "hamming (same learner)", "value": c_fw}, note=f"wall {w_area:.2f}s")


# ------------------------------------------------------------------ Vienna 4x22

def midi_features(path, hop):
    """Frame features of a performance MIDI (T, 35) and the names of the groups' columns."""
    from marginalia.io.midi import read_midi
    s = read_midi(path)
    on, off = np.asarray(s.onsets_s), np.maximum(np.asarray(s.offsets_s), np.asarray(s.onsets_s) + hop)
    pitch, vel = np.asarray(s.pitches), np.asarray(s.velocities, dtype=np.float64) / 127.0
    T = int(np.ceil(off.max() / hop)) + 1
    chroma = np.zeros((T, 12))
    onset_chroma = np.zeros((T, 12))
    octaves = np.zeros((T, 8))
    for o, f, pc, v, oc in zip(on, off, pitch % 12, vel, np.clip((pitch - 21) // 12, 0, 7)):
        a, b = int(o / hop), int(np.ceil(f / hop))
        chroma[a:b, pc] += v
        octaves[a:b, oc] += v
        onset_chroma[a, pc] += v
    loud = chroma.sum(axis=1, keepdims=True)
    density = np.convolve(onset_chroma.sum(axis=1), np.ones(5) / 5, mode="same")[:, None]
    chroma_n = chroma / np.maximum(np.linalg.norm(chroma, axis=1, keepdims=True), 1e-9)
    X = np.hstack([chroma_n, onset_chroma, octaves, loud, density])
    X = (X - X.mean(axis=0)) / np.maximum(X.std(axis=0), 1e-6)
    return X


INSTRUMENTS = {  # (harmonics, spectral slope, decay time constant s, noise level): two unlike "pianos"
    "bright": (10, 0.7, 1.2, 0.002),
    "dull": (4, 1.8, 0.35, 0.01),
}
SR = 11025


def render(path, instrument, limit_s, seed):
    """Additive synthesis of a performance MIDI (first ``limit_s`` seconds), mono at ``SR`` Hz."""
    from marginalia.io.midi import read_midi
    H, slope, tau, noise = INSTRUMENTS[instrument]
    s = read_midi(path)
    n = int(limit_s * SR) + 1
    y = np.zeros(n)
    k = np.arange(1, H + 1)
    amps = k ** -slope
    for on, off, pitch, vel in zip(s.onsets_s, s.offsets_s, s.pitches, s.velocities):
        if on >= limit_s:
            continue
        a = int(on * SR)
        hold = max(off - on, 0.05)
        length = min(n - a, int((hold + 0.25) * SR))
        t = np.arange(length) / SR
        env = np.exp(-t / tau) * np.minimum(1.0, t / 0.005)
        env *= np.where(t > hold, np.exp(-(t - hold) / 0.06), 1.0)  # damper after the key release
        f0 = 440.0 * 2.0 ** ((pitch - 69) / 12.0)
        ok = k * f0 < 0.45 * SR
        wave = (amps[ok, None] * np.sin(2 * np.pi * f0 * k[ok, None] * t[None])).sum(axis=0)
        y[a:a + length] += (vel / 127.0) ** 1.5 * env * wave
    y += noise * np.random.default_rng(seed).normal(size=n)
    return y / max(np.abs(y).max(), 1e-9)


def audio_features(path, instrument, hop, limit_s, seed):
    """Chroma (12), MFCC with deltas (39) and onset strength (1) of a rendering, z-scored per feature."""
    import librosa

    from marginalia.features.audio import mfcc, onset_strength
    y = render(path, instrument, limit_s, seed)
    h = int(round(hop * SR))
    # STFT chroma: ~10x cheaper than the CQT chroma of marginalia.features.audio, and enough here
    blocks = [librosa.feature.chroma_stft(y=y, sr=SR, n_fft=2048, hop_length=h).T,
              mfcc(y, SR, hop_length=h).values, onset_strength(y, SR, hop_length=h).values]
    T = min(b.shape[0] for b in blocks)
    X = np.hstack([b[:T] for b in blocks])
    return (X - X.mean(axis=0)) / np.maximum(X.std(axis=0), 1e-6)


AUDIO_GROUPS = np.repeat(["chroma", "mfcc", "d_mfcc", "dd_mfcc", "onset"], [12, 13, 13, 13, 1])
MIDI_GROUPS = np.repeat(["chroma", "onset_chroma", "octaves", "loudness", "density"], [12, 12, 8, 1, 1])


def score_note_times(gt_csv):
    """``{score note id: performed onset (s)}`` of the matched notes, and their score onsets (quarters)."""
    times, quarters = {}, {}
    with open(gt_csv) as fh:
        for r in csv.DictReader(fh):
            if r["label"] == "match" and r["perf_onset_sec"] and r["score_id"]:
                times[r["score_id"]] = float(r["perf_onset_sec"])
                quarters[r["score_id"]] = float(r["score_onset_quarter"])
    return times, quarters


def true_time_map(gt_a, gt_b):
    """Monotone anchors ``(t_a, t_b)``: per score onset, the median performed onset in both performances."""
    ta, qa = score_note_times(gt_a)
    tb, _ = score_note_times(gt_b)
    common = sorted(set(ta) & set(tb), key=lambda k: qa[k])
    by_q = {}
    for k in common:
        by_q.setdefault(qa[k], []).append((ta[k], tb[k]))
    pts = np.array([np.median(np.array(v), axis=0) for _, v in sorted(by_q.items())])
    keep = [0]
    for i in range(1, len(pts)):  # keep strictly increasing anchors only (chords, ornaments)
        if pts[i, 0] > pts[keep[-1], 0] and pts[i, 1] > pts[keep[-1], 1]:
            keep.append(i)
    return pts[keep]


def vienna_pair(root, piece, pa, pb, hop, crop_s, cache, kind):
    def feats(pn):
        key = (piece, pn)
        if key not in cache:
            path = root / "midi" / f"{piece}_{pn}.mid"
            if kind == "midi":
                cache[key] = midi_features(path, hop)
            else:  # alternate the instrument between consecutive pianists: every pair crosses timbres
                instrument = ("bright", "dull")[int(pn[1:]) % 2]
                cache[key] = audio_features(path, instrument, hop, 2.0 * crop_s + 10.0, seed=int(pn[1:]))
        return cache[key]

    anchors = true_time_map(root / "ground_truth" / f"{piece}_{pa}.csv", root / "ground_truth" / f"{piece}_{pb}.csv")
    # crop to the same music: A from its first anchor for crop_s seconds, B where the map sends it
    t0a, t0b = anchors[0]
    t1a = min(t0a + crop_s, anchors[-1, 0])
    t1b = float(np.interp(t1a, anchors[:, 0], anchors[:, 1]))
    A, B = feats(pa), feats(pb)
    ia0, ia1 = int(t0a / hop), min(int(t1a / hop), A.shape[0] - 1)
    ib0, ib1 = int(t0b / hop), min(int(t1b / hop), B.shape[0] - 1)
    t1a = min(t1a, ia1 * hop)
    A, B = A[ia0:ia1 + 1], B[ib0:ib1 + 1]
    ta = (ia0 + np.arange(A.shape[0])) * hop
    tb = (ib0 + np.arange(B.shape[0])) * hop
    mapped = np.interp(ta, anchors[:, 0], anchors[:, 1])
    truth = dtw(mapped[:, None], tb[:, None]).warping
    return (A, B), truth, (mapped, tb)


def time_error(y_hat, times):
    """Mean over frames of A of |predicted B time - true B time| (s); predicted: mean B time of the row's cells."""
    mapped, tb = times
    TA = mapped.shape[0]
    sums = np.bincount(y_hat.path[:, 0], weights=tb[y_hat.path[:, 1]], minlength=TA)
    counts = np.bincount(y_hat.path[:, 0], minlength=TA)
    return float(np.mean(np.abs(sums / counts - mapped)))


def vienna(data_dir, quick, kinds):
    root = Path(data_dir) / "alignment" / "vienna4x22"
    if not (root / "ground_truth").is_dir():
        print(f"(no Vienna 4x22 under {root}; real case skipped)")
        return
    hop = 0.1
    crop = 20.0 if quick else 40.0
    pieces = sorted({p.stem.rsplit("_", 1)[0] for p in (root / "ground_truth").glob("*_p*.csv")})
    train_p, val_p, test_p = ("p01", "p02", "p03", "p04"), ("p05", "p06"), ("p07", "p08", "p09", "p10", "p11")
    if quick:
        pieces = pieces[:2]
        train_p, val_p, test_p = train_p[:3], val_p[:1], test_p[:3]
    for kind in kinds:
        vienna_case(root, kind, pieces, train_p, val_p, test_p, hop, crop, quick)


def vienna_case(root, kind, pieces, train_p, val_p, test_p, hop, crop, quick):
    cache = {}

    def pairs(pianists):
        return [vienna_pair(root, piece, pianists[i], pianists[i + 1], hop, crop, cache, kind)
                for piece in pieces for i in range(len(pianists) - 1)]

    (train, val, test), wall, cpu = timed(lambda: (pairs(train_p), pairs(train_p[-1:] + val_p), pairs(test_p)))
    label = f"vienna4x22 {kind}"
    print(f"({label}: features of {len(cache)} performances in {wall:.1f} s wall, {cpu:.1f} s cpu)")
    p = train[0][0][0].shape[1]
    groups = MIDI_GROUPS if kind == "midi" else AUDIO_GROUPS

    def err(model, w, items):
        return float(np.mean([time_error(model.decode(x, w), t) for x, _, t in items]))

    m = WarpingModel()
    m.initial_w([x for x, _, _ in train])
    e_euc = err(m, np.ones(p), test)
    ref = {"name": "euclidean DTW", "value": e_euc}
    sizes = [x[0].shape[0] * x[1].shape[0] for x, _, _ in train]
    note = f"{len(train)} train / {len(test)} test pairs, ~{int(np.mean(sizes)) // 1000}k cells"
    row(f"{label}: test time error, chroma only", err(m, (groups == "chroma").astype(float), test), "s", None,
        "lower", ref)
    tr = [(x, y) for x, y, _ in train]
    res = {}
    for loss, grid in (("hamming", (0.01, 0.1, 1.0)), ("area", (1e2, 1e3, 1e4))):
        if quick:
            grid = grid[1:2]
        (C, fw, model), wall, cpu = timed(lambda: pick_C(loss, grid, tr, lambda mm, w: err(mm, w, val),
                                                         40 if quick else 60))
        res[loss] = err(model, fw.w_, test)
        share = np.diag(model.normalized_metric(fw.w_))
        by_group = {g: float(share[groups == g].sum()) for g in dict.fromkeys(groups)}
        top = ", ".join(f"{g} {v:.2f}" for g, v in sorted(by_group.items(), key=lambda kv: -kv[1])[:3])
        row(f"{label}: test time error, {loss}-trained diagonal metric", res[loss], "s", None, "lower", ref,
            note=f"C={C:g}; weight {top}; {note}")
        row(f"{label}: fit time incl. C selection ({len(grid)} C), {loss}", wall, "s", None, "lower",
            note=f"cpu {cpu:.1f}s")
    row(f"{label}: test time error, area-trained vs hamming-trained", res["area"], "s", None, "lower",
        {"name": "hamming-trained", "value": res["hamming"]})


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="smaller problems (under a minute)")
    ap.add_argument("--data", default=str(ROOT.parent / "shared" / "data"))
    ap.add_argument("--skip-real", action="store_true")
    ap.add_argument("--real", default=None,
                    help="comma-separated real cases: 'audio' (renders with two synthetic instruments), 'midi' "
                         "(piano-roll features); default audio,midi (audio with --quick)")
    args = ap.parse_args(argv)
    print(f"load {os.getloadavg()[0]:.2f} {os.getloadavg()[1]:.2f} {os.getloadavg()[2]:.2f} (1/5/15 min)")
    t0 = time.perf_counter()
    synthetic(args.quick)
    if not args.skip_real:
        real = args.real or ("audio" if args.quick else "audio,midi")
        vienna(args.data, args.quick, [k for k in real.split(",") if k])
    out = ROOT / "benchmarks" / "results" / "learning_warping.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(ROWS, indent=1))
    print(f"wrote {out} ({len(ROWS)} rows) in {time.perf_counter() - t0:.1f} s; "
          f"load {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
