"""Learning benchmarks: metric learning quality (thesis §4.5.1, §4.5.2), aCGH label error (§4.5.5), speed.

Prints a table and writes ``benchmarks/results/learning.json`` (rows ``case, value, unit, target,
better, reference, meets_target``). References (Euclidean metric with a tuned penalty, PCA metric)
are measured in the same run on the same data.

Usage: ``python -m benchmarks.speed.learning [--quick] [--data DIR] [--skip-cgh]``
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import time
import warnings
from pathlib import Path

import numpy as np

from benchmarks._common import (  # noqa: E402
    ROOT,  # noqa: E402
    has_cgh_data,  # noqa: E402
    record_row,
)
from marginalia.cgh.recipe import CghSegmenter  # noqa: E402
from marginalia.features.hermite import hermite_features, robust_noise_scale  # noqa: E402
from marginalia.learners.partial import PartialLabelSSVM  # noqa: E402
from marginalia.learners.perceptron import StructuredPerceptron  # noqa: E402
from marginalia.learners.ssvm import SSVM  # noqa: E402
from marginalia.metrics import RegionErrors, region_errors  # noqa: E402
from marginalia.models.segmentation import SegmentationModel  # noqa: E402
from marginalia.types import RegionKind, RegionLabel, Segmentation  # noqa: E402

ROWS = []
row = functools.partial(record_row, ROWS)


def best_of(fn, n):
    best = np.inf
    for _ in range(n):
        t = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t)
    return best


def tune_penalty(model, B, Xs, targets, grid=np.exp2(np.arange(-4, 5, 0.5))):  # noqa: B008 - read only
    best, best_loss = None, np.inf
    for f in grid:
        w = model.join_w(B, f)
        loss = np.mean([model.loss(y, model.decode(X, w)) for X, y in zip(Xs, targets)])
        if loss < best_loss:
            best, best_loss = w, loss
    return best


def mean_loss(model, w, Xs, Ys):
    return float(np.mean([model.loss(y, model.decode(X, w)) for X, y in zip(Xs, Ys)]))


# ----------------------------------------------------------------------- §4.5.1
def toy(quick):
    rng = np.random.default_rng(0)
    T = 350
    Xs, Ys = [], []
    for _ in range(10):
        X = rng.normal(0, 1, (T, 3))
        X[150:225, 0] += 2.0     # relevant: first and third segment share their mean
        X[90:, 2] += 2.0         # an irrelevant change
        Xs.append(X)
        Ys.append(Segmentation([150, 225, T]))
    model = SegmentationModel(metric="diagonal", loss="hamming")
    s = SSVM(model, C=0.1, max_iter=40 if quick else 100, random_state=0).fit(Xs, Ys)
    B = np.diag(model.metric_matrix(s.w_))
    row("toy 4.5.1: weight of the relevant coordinate", B[0] / B.sum(), "fraction", 0.9, "higher",
        {"name": "euclidean", "value": 1 / 3})


# ----------------------------------------------------------------------- §4.5.2
def synthetic_series(rng, n, T, p, relevant, K=4, shift=1.0):
    Xs, Ys = [], []
    n_irr = (p - len(relevant)) // 2
    irrelevant = [j for j in range(p) if j not in relevant][:n_irr]
    for _ in range(n):
        ch = np.sort(rng.choice(np.arange(20, T - 20), K, replace=False))
        while np.any(np.diff(ch) < 15):
            ch = np.sort(rng.choice(np.arange(20, T - 20), K, replace=False))
        X = rng.normal(0, 1, (T, p))
        bounds = np.concatenate([[0], ch, [T]])
        for a, b in zip(bounds[:-1], bounds[1:]):
            X[a:b, relevant] += rng.normal(0, shift, len(relevant))
        for j in irrelevant:  # changes not aligned with the relevant ones
            c = rng.integers(20, T - 20)
            X[c:, j] += rng.choice([-1, 1]) * 2 * shift
        Xs.append(X)
        Ys.append(Segmentation(np.concatenate([ch, [T]]), T))
    return Xs, Ys


def partial_labels(rng, y, T, fraction, item_id):
    """User-style region labels: a short ONE region around every true change (the change at a random place
    inside) and short ZERO regions placed at random in the remaining stretches, until ``fraction`` of the
    sequence is covered. Not the thesis's definition of a fraction of labels (see :func:`revealed_labels`):
    the ZERO regions are T/25 samples wide with gaps between them, so a change they exclude can move to the
    gap next to them at almost no cost, and the labels say little about changes away from the true ones."""
    width = max(4, T // 25)
    covered = np.zeros(T, dtype=bool)
    labels = []
    for c in y.breakpoints:
        start = int(np.clip(c - rng.integers(1, width), 0, T - width))
        stop = start + width
        if covered[start:stop].any() or y.changes_inside(start, stop) != 1:
            continue
        covered[start:stop] = True
        labels.append(RegionLabel(item_id=item_id, start=start, stop=stop, kind=RegionKind.ONE))
    bp = y.breakpoints
    for _ in range(200):
        if covered.sum() >= fraction * T:
            break
        start = int(rng.integers(0, T - width))
        stop = start + width
        if covered[max(0, start - 1):stop + 1].any() or np.any((bp > start) & (bp < stop)):
            continue
        covered[start:stop] = True
        labels.append(RegionLabel(item_id=item_id, start=start, stop=stop, kind=RegionKind.ZERO))
    return sorted(labels, key=lambda l: l.start)


def revealed_labels(rng, y, T, fraction, item_id):
    """A fraction of the labels in the sense of thesis §4.5.3 (and Lou et al. §1.3: a fraction of the output
    variables annotated): the segment of ``fraction · T`` random samples is revealed, i.e. the equivalence
    matrix on those samples. As region labels: a ZERO region over each run of revealed samples that share a
    segment, an AT_LEAST_ONE region between consecutive revealed samples of different segments. At 100 %
    the labels determine the segmentation."""
    n = min(T, max(2, int(round(fraction * T))))
    pts = np.sort(rng.choice(T, n, replace=False))
    seg = y.labels()
    labels = []
    i = 0
    while i < len(pts):
        j = i
        while j + 1 < len(pts) and seg[pts[j + 1]] == seg[pts[i]]:
            j += 1
        if pts[j] > pts[i]:
            labels.append(RegionLabel(item_id=item_id, start=int(pts[i]), stop=int(pts[j]) + 1, kind=RegionKind.ZERO))
        if j + 1 < len(pts):
            labels.append(RegionLabel(item_id=item_id, start=int(pts[j]), stop=int(pts[j + 1]) + 1,
                                      kind=RegionKind.AT_LEAST_ONE))
        i = j + 1
    return labels


def synthetic(quick):
    rng = np.random.default_rng(1)
    p, T, N, n_test = (20, 300, 10, 30) if quick else (50, 600, 30, 50)
    relevant = [0, 1, 2, 3, 4]
    Xtr, Ytr = synthetic_series(rng, N, T, p, relevant)
    Xte, Yte = synthetic_series(rng, n_test, T, p, relevant)
    model = SegmentationModel(metric="diagonal", loss="frobenius")
    w_euc = model.initial_w(Xtr, Ytr)
    euc = mean_loss(model, w_euc, Xte, Yte)
    t = time.perf_counter()
    s = SSVM(model, C=1.0, max_iter=15 if quick else 40, random_state=0).fit(Xtr, Ytr)
    fit_s = time.perf_counter() - t
    learned = mean_loss(model, s.w_, Xte, Yte)
    # PCA metric: projector on the 4 leading principal directions (in the model's noise units)
    full = SegmentationModel(metric="full", loss="frobenius")
    full.initial_w(Xtr)
    Z = np.vstack(Xtr) * full.feature_scale_
    Z = Z - Z.mean(axis=0)
    _, _, Vt = np.linalg.svd(Z, full_matrices=False)
    w_pca = tune_penalty(full, Vt[:4].T @ Vt[:4], Xtr, Ytr)
    pca = mean_loss(full, w_pca, Xte, Yte)
    row(f"synthetic 4.5.2 (p={p}, N={N}): test Frobenius loss, learned", learned, "loss", None, "lower",
        {"name": "euclidean tuned", "value": euc}, note=f"fit {fit_s:.1f}s")
    row("synthetic 4.5.2: test Frobenius loss, learned vs PCA", learned, "loss", None, "lower",
        {"name": "PCA metric (4 dirs), tuned", "value": pca})
    # partial labels as thesis §4.5.3 / Lou et al. count them: a fraction of the samples' segments revealed
    ref = {"name": "euclidean/full", "value": euc / learned}
    cmodel = SegmentationModel(metric="diagonal", loss="frobenius", partial_loss="completion")
    passes = 15 if quick else 40
    lrng = np.random.default_rng(5)
    revealed = {}
    for pct in (10, 25, 50, 100):
        labels = [revealed_labels(lrng, y, T, pct / 100, str(i)) for i, y in enumerate(Ytr)]
        revealed[pct] = labels
        t = time.perf_counter()
        pl = PartialLabelSSVM(cmodel, C=1.0, strategy="complete", max_outer=5, inner_max_iter=passes,
                              random_state=0).fit(Xtr, labels)
        row(f"synthetic 4.5.2: partial {pct} % revealed, complete+SSVM (4.4.2) / full",
            mean_loss(cmodel, pl.w_, Xte, Yte) / learned, "ratio", 1.2 if pct == 25 else None, "lower", ref,
            note=f"fit {time.perf_counter() - t:.1f}s, {pl.n_outer_} rounds")
    # Lou's bridge loss (wrong change decisions on the labels) by CCCP on the same 25 % labels, two inner solvers
    vmodel = SegmentationModel(metric="diagonal", loss="frobenius", partial_loss="counts")
    t = time.perf_counter()
    pl = PartialLabelSSVM(vmodel, C=0.1, strategy="bridge", inner="bcfw", max_outer=5, inner_max_iter=passes,
                          random_state=0).fit(Xtr, revealed[25])
    row("synthetic 4.5.2: partial 25 % revealed, bridge (CCCP+BCFW) / full",
        mean_loss(vmodel, pl.w_, Xte, Yte) / learned, "ratio", None, "lower", ref,
        note=f"fit {time.perf_counter() - t:.1f}s, {pl.n_outer_} CCCP steps")
    t = time.perf_counter()
    pl = PartialLabelSSVM(vmodel, C=0.1, strategy="bridge", max_outer=4 if quick else 10,
                          inner_max_iter=10 if quick else 30).fit(Xtr, revealed[25])
    row("synthetic 4.5.2: partial 25 % revealed, bridge (CCCP+bundle) / full",
        mean_loss(vmodel, pl.w_, Xte, Yte) / learned, "ratio", None, "lower", ref,
        note=f"fit {time.perf_counter() - t:.1f}s, {pl.n_planes_} planes")
    # user-style regions (short ONE regions around the changes, short ZERO regions elsewhere): see partial_labels
    # (the fair reference here is the Euclidean metric with the penalty tuned on the same labels: short ZERO
    # regions say little about the penalty, so it comes out too low)
    labels = [partial_labels(rng, y, T, 0.25, str(i)) for i, y in enumerate(Ytr)]
    euc_same = mean_loss(cmodel, cmodel.initial_w(Xtr, labels), Xte, Yte)
    pl = PartialLabelSSVM(cmodel, C=1.0, strategy="complete", max_outer=5, inner_max_iter=passes,
                          random_state=0).fit(Xtr, labels)
    row("synthetic 4.5.2: user-style short regions 25 %, complete+SSVM / full",
        mean_loss(cmodel, pl.w_, Xte, Yte) / learned, "ratio", None, "lower",
        {"name": "euclidean tuned on these labels/full", "value": euc_same / learned})


# ----------------------------------------------------------------------- aCGH
def load_cgh(data_dir, quick):
    from marginalia.io.cgh import read_annotations, read_profiles
    d = Path(data_dir) / "cgh" / "neuroblastoma"
    seqs = read_profiles(d / "profiles_small.csv.gz")
    labs = read_annotations(d / "annotations_small.csv", seqs, unknown_sequences="skip")
    by = {}
    for lab in labs:
        by.setdefault(lab.item_id, []).append(lab)
    items = [(s, by[s.name]) for s in seqs if s.name in by]
    profiles = sorted(set(s.meta["profile_id"] for s, _ in items))
    rng = np.random.default_rng(0)
    rng.shuffle(profiles)
    if quick:
        profiles = profiles[:16]
    train = set(profiles[: len(profiles) // 2])
    tr = [it for it in items if it[0].meta["profile_id"] in train]
    te = [it for it in items if it[0].meta["profile_id"] in profiles and it[0].meta["profile_id"] not in train]
    return tr, te


def cgh_features(seq, kind):
    x = seq.values[:, 0]
    x = (x - np.median(x)) / robust_noise_scale(x)   # each chromosome in its own noise units
    if kind == "raw":
        return x[:, None]
    return np.column_stack([x, hermite_features(x, orders=(0, 1, 2, 3, 4), half_width=0)])


def error_rate(data, segmentations):
    """Labelled-region error rate (FP + FN over regions) of one segmentation per ``(sequence, labels)`` of ``data``."""
    return sum((region_errors(labs, seg) for (_, labs), seg in zip(data, segmentations)), RegionErrors()).rate


def label_error(model, w, data, Xs):
    return error_rate(data, (model.decode(X, w) for X in Xs))


def cgh(data_dir, quick):
    tr, te = load_cgh(data_dir, quick)
    Ltr = [l for _, l in tr]
    grid = np.exp2(np.arange(-4, 5, 0.5))
    Xr_tr = [cgh_features(s, "raw") for s, _ in tr]
    Xr_te = [cgh_features(s, "raw") for s, _ in te]
    raw = SegmentationModel(min_size=3, penalty_per="constant")
    w_raw = raw.initial_w(Xr_tr, Ltr, grid=grid)
    err_raw = label_error(raw, w_raw, te, Xr_te)
    Xh_tr = [cgh_features(s, "herm") for s, _ in tr]
    Xh_te = [cgh_features(s, "herm") for s, _ in te]
    herm = SegmentationModel(min_size=3, penalty_per="constant")
    w_ht = herm.initial_w(Xh_tr, Ltr, grid=grid)
    err_ht = label_error(herm, w_ht, te, Xh_te)
    t = time.perf_counter()
    s = SSVM(herm, C=0.1, max_iter=10, random_state=0).fit(Xh_tr, Ltr)
    fit_s = time.perf_counter() - t
    err_l = label_error(herm, s.w_, te, Xh_te)
    n_lab = sum(len(l) for _, l in te)
    row(f"aCGH label error, tuned penalty on raw logratio ({n_lab} test labels)", err_raw, "fraction", None,
        "lower", {"name": "thesis AIC", "value": 0.12})
    row("aCGH label error, tuned penalty, Hermite + raw (Euclidean)", err_ht, "fraction", None, "lower",
        {"name": "raw tuned", "value": err_raw})
    row("aCGH label error, learned diagonal metric, Hermite + raw", err_l, "fraction", None, "lower",
        {"name": "raw tuned", "value": err_raw}, note=f"fit {fit_s:.1f}s on {len(tr)} seqs")
    # the product's learner: that metric with a penalty law per array platform and the learned dropping rule
    t = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        recipe = CghSegmenter(prune=True, random_state=0).fit([s for s, _ in tr], Ltr)
    fit_s = time.perf_counter() - t
    # a learning-curve point (half of the profiles to learn from); the cohort's figure, the 5-fold cross-validation
    # by profile, is benchmarks/quality/quality_cgh.py's
    row("aCGH label error, the recipe (metric + penalty laws + dropping rule; CLI default)",
        error_rate(te, (recipe.segment(seq) for seq, _ in te)),
        "fraction", None, "lower", {"name": "learned metric, one penalty", "value": err_l},
        note=f"fit {fit_s:.1f}s on {len(tr)} seqs; 5-fold CV: benchmarks/quality/quality_cgh.py")


# ----------------------------------------------------------------------- speed
def speed(data_dir, quick, have_cgh):
    rng = np.random.default_rng(2)
    T = 5000
    x = rng.normal(0, 1, T)
    x[1500:2600] += 1.5
    X = np.column_stack([x, hermite_features(x, half_width=0)])
    labels = [RegionLabel(item_id="c", start=200, stop=1200, kind=RegionKind.ZERO),
              RegionLabel(item_id="c", start=1400, stop=1700, kind=RegionKind.ONE)]
    model = SegmentationModel(min_size=3)
    model.fit_scales([X])
    cons = model.constraints(labels, T)
    model.decode(X, model.default_w(), constraints=cons)  # compile
    # a mistake-driven update: fresh learner, labels violated by the default parameters
    # (prediction + completion + redraw = 3 decodes; with 2 threads the first two run side by side)
    # "no change here" over the true change at 1500: the default parameters contradict it
    wrong = [RegionLabel(item_id="c", start=1400, stop=1700, kind=RegionKind.ZERO)]
    cons_wrong = model.constraints(wrong, T)
    for n_jobs in (2, 1):
        updates, cpu = [], []

        def update_and_redraw():
            c = time.thread_time()
            perc = StructuredPerceptron(model, n_jobs=n_jobs)
            perc._start(model.default_w())
            perc.partial_fit(X, wrong)
            updates.append(perc.n_updates_)
            model.decode(X, perc.w_, constraints=cons_wrong)
            cpu.append(time.thread_time() - c)
        t = best_of(update_and_redraw, 3 if quick else 7)
        row(f"perceptron update + constrained redraw, T=5000, p=6, {n_jobs} thread(s)", t, "s",
            0.05 if n_jobs == 2 else None, "lower", None,
            note=f"updates made: {max(updates)}; main-thread CPU {min(cpu) * 1e3:.0f} ms; load {os.getloadavg()[0]:.1f}")
    # the common interactive case: labels already respected (prediction + redraw = 2 decodes)
    perc = StructuredPerceptron(model)
    perc._start(model.default_w())
    for _ in range(3):
        perc.partial_fit(X, labels)

    def check_and_redraw():
        perc.partial_fit(X, labels)
        model.decode(X, perc.w_, constraints=cons)
    t2 = best_of(check_and_redraw, 3 if quick else 7)
    row("perceptron step (labels respected) + redraw, T=5000", t2, "s", 0.05, "lower", None)
    from marginalia.decoders.segmentation import segment_penalized
    t3 = best_of(lambda: segment_penalized(X, 50.0), 3 if quick else 7)
    row("  one plain decode, T=5000, p=6 (decoders' share)", t3, "s", None, "lower", None)
    if not have_cgh:
        return
    tr, te = load_cgh(data_dir, False)
    items = (tr + te)[:100]
    Xs = [cgh_features(s, "herm") for s, _ in items]
    Ls = [l for _, l in items]
    fast = SegmentationModel(min_size=3, penalty_per="constant", loss="hamming", partial_loss="completion")
    fast.initial_w(Xs[:2], Ls[:2])  # compile
    probes = sum(X.shape[0] for X in Xs)
    for n_jobs in (2, 1):
        cpu = []

        def fit():
            c = time.process_time()
            SSVM(fast, C=1.0, max_iter=10, tol=1e-2, random_state=0, n_jobs=n_jobs).fit(Xs, Ls)
            cpu.append(time.process_time() - c)
        t_fast = best_of(fit, 1 if quick else 2)
        row(f"SSVM fit, 100 aCGH sequences, completion loss, 10 passes, {n_jobs} thread(s)", t_fast, "s",
            5.0 if n_jobs == 2 else None, "lower", None,
            note=f"{probes} probes; CPU {min(cpu):.2f}s; load {os.getloadavg()[0]:.1f}")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--data", default=str(ROOT.parent / "shared" / "data"))
    ap.add_argument("--skip-cgh", action="store_true")
    args = ap.parse_args(argv)
    warnings.simplefilter("ignore", UserWarning)
    print(f"load: {os.getloadavg()}  ({os.cpu_count()} cores)")
    have_cgh = has_cgh_data(args.data) and not args.skip_cgh
    t0 = time.perf_counter()
    toy(args.quick)
    synthetic(args.quick)
    speed(args.data, args.quick, have_cgh)
    if have_cgh:
        cgh(args.data, args.quick)
    out = ROOT / "benchmarks" / "results"
    out.mkdir(parents=True, exist_ok=True)
    (out / "learning.json").write_text(json.dumps(ROWS, indent=2))
    print(f"total {time.perf_counter() - t0:.1f}s; load after: {os.getloadavg()}; rows in {out / 'learning.json'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
