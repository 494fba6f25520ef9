"""aCGH change-point quality on real expert labels (neuroblastoma, Hocking et al. 2013).

Cross-validation split by profile (no profile in both train and test): for every fold the
references (one tuned penalty ∝ σ̂² log T, max-margin interval regression of the penalty,
per-sequence best penalty = oracle of penalty-only models) and our learned metrics are trained
on the training profiles' labels and scored on the test profiles' labels (label error =
(FP + FN) / labelled regions). Ours: the SSVM-learned diagonal metric alone, and the aCGH recipe
(:class:`marginalia.cgh.recipe.CghSegmenter`: that metric plus a per-sequence penalty law per
array platform), with its per-sequence oracle, and the same recipe followed by the learned change
pruning per platform (:mod:`marginalia.cgh.change_pruning`; the CLI default, whose pruners may also choose
from a label-free over-segmentation's changes), next to pruners refitted on the law's changes alone. One run also
checks the command-line contract: ``marginalia-cli train`` on the training profiles' files, ``predict`` on the test
profiles, ``breaks.csv`` scored against the test annotations must equal the in-process figure of the same recipe.

The recipe's current figures, and every variant measured on these folds and not adopted (with its
figures), are in ``docs/research/``; read it before trying a new idea here.

Usage: ``python -m benchmarks.quality.quality_cgh [--quick] [--data DIR] [--folds 5] [--no-cli] [--long-chromosomes]
[--only-folds 1,2 --out FILE]``
Writes ``benchmarks/results/quality_cgh.json`` (rows ``case, value, unit, target, better,
reference, meets_target``).
"""

from __future__ import annotations

import argparse
import csv
import gzip
import os
import subprocess
import sys
import tempfile
import time
import warnings
from pathlib import Path

import numpy as np

from benchmarks._common import (  # noqa: E402
    ROOT,
    cgh_data_missing,  # noqa: E402
    result_row,
    save_rows,
)
from marginalia.cgh.change_pruning import ChangePruner  # noqa: E402
from marginalia.cgh.features import pointwise_hermite_features  # noqa: E402
from marginalia.cgh.penalty_path import error_intervals, min_error_interval, penalty_path  # noqa: E402
from marginalia.cgh.penalty_regression import PenaltyIntervalRegression, sequence_features  # noqa: E402
from marginalia.cgh.recipe import CghSegmenter  # noqa: E402
from marginalia.features.hermite import hermite_features, robust_noise_scale  # noqa: E402
from marginalia.learners.ssvm import SSVM  # noqa: E402
from marginalia.metrics import RegionErrors, region_errors  # noqa: E402
from marginalia.models.segmentation import SegmentationModel  # noqa: E402

TARGET = 0.06
K_MAX = 12
LONG_CHROMOSOMES = "recipe, its laws and pruners also trained on profiles_all's long chromosomes"
OTHER_LEARNERS = {
    "partial": "metric by PartialLabelSSVM (bridge loss, CCCP) + penalty law per platform",
    "transfer": "metric per platform by TransferSSVM (rho=1) + penalty law per platform",
}


# ----------------------------------------------------------------------- data
def load(data_dir, which="small"):
    from marginalia.io.cgh import read_annotations, read_profiles
    d = Path(data_dir) / "cgh" / "neuroblastoma"
    seqs = read_profiles(d / f"profiles_{which}.csv.gz")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        labs = read_annotations(d / f"annotations_{which}.csv", seqs, unknown_sequences="skip",
                                empty_regions="warn")
    by = {}
    for lab in labs:
        by.setdefault(lab.item_id, []).append(lab)
    return [(s, by[s.name]) for s in seqs if s.name in by]


def folds_by_profile(items, n_folds, seed=0):
    profiles = sorted({s.meta["profile_id"] for s, _ in items}, key=str)
    rng = np.random.default_rng(seed)
    rng.shuffle(profiles)
    fold_of = {p: i % n_folds for i, p in enumerate(profiles)}
    return np.array([fold_of[s.meta["profile_id"]] for s, _ in items])


# ----------------------------------------------------------------------- penalty-only references
class PathTable:
    """Penalty path and label errors of every sequence (raw logratio, least squares)."""

    def __init__(self, items):
        self.paths, self.errs, self.fp, self.fn, self.n = [], [], [], [], []
        self.intervals, self.feats = [], []
        for s, labs in items:
            x = s.values[:, 0]
            path = penalty_path(x, k_max=K_MAX)
            lo, fp, fn, n = error_intervals(path, labs)
            self.paths.append(lo)
            self.fp.append(fp)
            self.fn.append(fn)
            self.n.append(n)
            a, b, _ = min_error_interval(lo, fp + fn)
            self.intervals.append((a, b))
            self.feats.append(sequence_features(x))
        self.intervals = np.array(self.intervals)
        self.feats = np.array(self.feats)
        # unsupervised path summaries: log λ at which the last and the last-but-one change vanish
        last = []
        for lo in self.paths:
            fin = lo[np.isfinite(lo)]
            a = fin[-1] if fin.size else 0.0
            last.append([a, fin[-2] if fin.size > 1 else a])
        self.feats_path = np.column_stack([self.feats, np.array(last)])

    def at(self, i, log_pen):
        j = int(np.searchsorted(self.paths[i], log_pen, side="right")) - 1
        j = max(j, 0)
        return int(self.fp[i][j]), int(self.fn[i][j])

    def oracle(self, i):
        e = self.fp[i] + self.fn[i]
        j = int(np.argmin(e))
        return int(self.fp[i][j]), int(self.fn[i][j])


def score_log_penalties(table, idx, log_pens):
    fp = fn = n = 0
    for i, lp in zip(idx, log_pens):
        a, b = table.at(i, lp)
        fp, fn, n = fp + a, fn + b, n + table.n[i]
    return fp, fn, n


def tune_constant(table, idx):
    """Best ``c`` in ``log λ = c + log σ̂² + log log T`` on the training sequences."""
    base = table.feats[idx, 1] + table.feats[idx, 0]
    grid = np.arange(-3.0, 6.0, 0.1)
    errs = [sum(score_log_penalties(table, idx, base + c)[:2]) for c in grid]
    k = np.flatnonzero(np.array(errs) == min(errs))
    return float(grid[k[len(k) // 2]])   # middle of the best run: a margin on both sides


# ----------------------------------------------------------------------- ours
def features(seq, recipe):
    if recipe == "hermite+raw":
        return pointwise_hermite_features(seq.values[:, 0])   # the recipe's input (CghSegmenter.model_input)
    x = seq.values[:, 0]
    x = (x - np.median(x)) / robust_noise_scale(x)
    if recipe == "raw":
        return x[:, None]
    return hermite_features(x, orders=(0, 1, 2, 3, 4), half_width=0)


def _fp_fn_n(errs) -> tuple:
    total = sum(errs, RegionErrors())
    return total.fp, total.fn, total.n_labels


def model_errors(model, w, items, Xs):
    return _fp_fn_n(region_errors(labs, model.decode(X, w)) for (_, labs), X in zip(items, Xs))


def model_errors_of(segmenter, items):
    """``(fp, fn, n)`` of a fitted :class:`CghSegmenter` on ``items`` (list of (sequence, labels))."""
    return _fp_fn_n(region_errors(labs, segmenter.segment(s)) for s, labs in items)


def _law_candidate_pruners(seg, tr_items) -> dict:
    """Pruners of ``seg``'s platforms refitted on its laws' changes alone (the recipe before over-segmentations)."""
    by_key: dict = {}
    for s, labs in tr_items:
        for k in {seg._pruner_key(s), "all"}:
            by_key.setdefault(k, []).append((s.values[:, 0], seg.law_segment(s), labs))
    return {k: ChangePruner().fit(*zip(*v)) for k, v in by_key.items()}


def long_chromosomes(data_dir):
    """The labelled sequences of ``profiles_all`` that are not in ``profiles_small`` (the >5,000-probe ones)."""
    names = {s.name for s, _ in load(data_dir, "small")}
    return [it for it in load(data_dir, "all") if it[0].name not in names]


def fit_metric(tr_items, recipe, max_iter, learner="ssvm"):
    Xs = [features(s, recipe) for s, _ in tr_items]
    Ys = [labs for _, labs in tr_items]
    model = SegmentationModel(min_size=3, penalty_per="log_length")
    w0 = model.initial_w(Xs, Ys, grid=np.exp2(np.arange(-4, 5, 0.5)))
    if learner == "tuned":
        return model, w0
    s = SSVM(model, C=1.0, max_iter=max_iter, random_state=0).fit(Xs, Ys)
    return model, s.w_


# ----------------------------------------------------------------------- CLI contract
def _filter_csv(src, dst, keep_profiles):
    opener = gzip.open if str(src).endswith(".gz") else open
    with opener(src, "rt", newline="") as fin, open(dst, "w", newline="") as fout:
        reader = csv.reader(fin)
        writer = csv.writer(fout)
        header = next(reader)
        col = [h.lower() for h in header].index("profile.id")
        writer.writerow(header)
        for r in reader:
            if r[col] in keep_profiles:
                writer.writerow(r)


def _score_breaks(path, te_items):
    """Label errors of a ``breaks.csv`` (positions) mapped back to change indices of the test sequences."""
    from marginalia.types import Segmentation
    by_name = {s.name: [] for s, _ in te_items}
    with open(path, newline="") as fh:
        for r in csv.DictReader(fh):
            name = f"{r['profile.id']}:{r['chromosome']}"
            if name in by_name:
                by_name[name].append(float(r["position"]))
    errs = []
    for s, labs in te_items:
        # a break lies midway between probes c-1 and c: the first probe at or after it is c
        cs = sorted({int(np.searchsorted(s.positions, b, side="left")) for b in by_name[s.name]})
        seg = Segmentation(np.array([c for c in cs if 0 < c < s.n_samples] + [s.n_samples]), s.n_samples)
        errs.append(region_errors(labs, seg))
    return _fp_fn_n(errs)


def cli_contract(items, fold, data, max_iter):
    """Train/predict with ``marginalia-cli`` on fold 0's files and the same recipe in process."""
    d = Path(data) / "cgh" / "neuroblastoma"
    # the files hold every chromosome of the chosen profiles, so the in-process side uses them all too
    fold_of = {s.meta["profile_id"]: f for (s, _), f in zip(items, fold)}
    every = [it for it in load(data) if it[0].meta["profile_id"] in fold_of]
    tr_items = [it for it in every if fold_of[it[0].meta["profile_id"]] != 0]
    te_items = [it for it in every if fold_of[it[0].meta["profile_id"]] == 0]
    tr_prof = {str(s.meta["profile_id"]) for s, _ in tr_items}
    te_prof = {str(s.meta["profile_id"]) for s, _ in te_items}
    cli = [sys.executable, "-m", "marginalia.cli"]
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        _filter_csv(d / "profiles_small.csv.gz", tmp / "train_profiles.csv", tr_prof)
        _filter_csv(d / "annotations_small.csv", tmp / "train_annotations.csv", tr_prof)
        _filter_csv(d / "profiles_small.csv.gz", tmp / "test_profiles.csv", te_prof)
        t = time.perf_counter()
        train = subprocess.run(cli + ["train", "--task", "segmentation", "--profiles", str(tmp / "train_profiles.csv"),
                                      "--annotations", str(tmp / "train_annotations.csv"), "--out",
                                      str(tmp / "model.mgm"), "--max-iter", str(max_iter), "--seed", "0"],
                               cwd=ROOT, env=env, capture_output=True, text=True)
        if train.returncode != 0:
            return {"ok": False, "why": f"train failed ({train.returncode}): {train.stderr.strip()[-400:]}"}
        pred = subprocess.run(cli + ["predict", str(tmp / "model.mgm"), "--profiles", str(tmp / "test_profiles.csv"),
                                     "--out", str(tmp / "out")], cwd=ROOT, env=env, capture_output=True, text=True)
        cli_s = time.perf_counter() - t
        if pred.returncode != 0:
            return {"ok": False, "why": f"predict failed ({pred.returncode}): {pred.stderr.strip()[-400:]}"}
        fp, fn, n = _score_breaks(tmp / "out" / "breaks.csv", te_items)
    cli_err = (fp + fn) / max(n, 1)
    # the same recipe in process: the CLI's default (SSVM metric, penalty laws, change pruning), same passes and seed
    seg = CghSegmenter(max_iter=max_iter, prune=True, random_state=0).fit([s for s, _ in tr_items], [l for _, l in tr_items])
    in_err = sum((region_errors(labs, seg.segment(s)) for s, labs in te_items), RegionErrors()).rate
    return {"ok": abs(cli_err - in_err) < 1e-12, "cli": cli_err, "in_process": in_err, "n": n, "cli_s": cli_s,
            "why": ""}


def _law_placement(acc, platform, offset, offsets, errors):
    """Tally where a law's offset falls against the sequence's widest min-error run of grid offsets (unpruned)."""
    grid = np.asarray(offsets, dtype=np.float64)
    lower = np.r_[-np.inf, (grid[1:] + grid[:-1]) / 2]
    a, b, _ = min_error_interval(lower, errors)
    j = int(np.clip(np.searchsorted(lower, offset, side="right") - 1, 0, grid.size - 1))
    lost = int(errors[j] - errors.min())
    side = "below" if offset < a else "above" if offset >= b else "inside"
    r = acc.setdefault(platform, {"below": [0, 0], "inside": [0, 0], "above": [0, 0], "widths": []})
    r[side][0] += 1
    r[side][1] += lost
    r["widths"].append(b - a)


def print_placement(acc):
    """Per platform: test sequences whose law offset is below / inside / above their oracle run, errors lost."""
    for platform, r in sorted(acc.items()):
        w = np.array(r["widths"])
        print(f"  law offset vs oracle run, {platform}-density: " +
              ", ".join(f"{k} {r[k][0]} seq ({r[k][1]} errors lost)" for k in ("below", "inside", "above")) +
              f"; oracle run width median {np.median(w):.2f} (log units)")


# ----------------------------------------------------------------------- table
ROWS = []


def add_row(case, value, unit, target, better, reference=None, extra=None):
    ROWS.append({**result_row(case, value, unit, target, better, reference, beat_reference=True), **(extra or {})})


def print_table(results, n_labels, load):
    print(f"\naCGH label error, CV by profile ({len(next(iter(results.values()))['err'])} folds), "
          f"{n_labels} labelled regions; load {load}")
    print(f"{'method':<70} {'error mean ± sd':>16} {'FP':>5} {'FN':>5} {'train s':>8} {'cpu s':>7}")
    for name, r in results.items():
        e = np.array(r["err"])
        print(f"{name:<70} {100 * e.mean():>7.2f} ± {100 * e.std():<5.2f}% {r['fp']:>5d} {r['fn']:>5d} "
              f"{r['train_s']:>8.2f} {r['train_cpu']:>7.2f}")


def run(args):
    data = args.data
    items = load(data)
    if args.quick:
        profiles = sorted({s.meta["profile_id"] for s, _ in items}, key=str)
        rng = np.random.default_rng(1)
        keep = set(rng.choice(profiles, size=min(24, len(profiles)), replace=False))
        # short sequences only: the O(K T²) paths of the few 5k-probe chromosomes dominate the time
        items = [it for it in items if it[0].meta["profile_id"] in keep and it[0].n_samples <= 1500]
    fold = folds_by_profile(items, args.folds, seed=0)
    n_run = args.folds if args.only_folds is None else len(args.only_folds)
    n_labels = sum(len(l) for _, l in items)
    t0 = time.perf_counter()
    table = PathTable(items)
    path_s = time.perf_counter() - t0
    print(f"{len(items)} sequences, {n_labels} labels; penalty paths in {path_s:.1f}s", flush=True)

    results = {}
    placement = {}

    def record(name, f, fp, fn, n, train_s, train_cpu=None):
        r = results.setdefault(name, {"err": [], "fp": 0, "fn": 0, "n": 0, "train_s": 0.0, "train_cpu": 0.0})
        r["err"].append((fp + fn) / max(n, 1))
        r["fp"] += fp
        r["fn"] += fn
        r["n"] += n
        r["train_s"] += train_s / n_run
        r["train_cpu"] += (train_s if train_cpu is None else train_cpu) / n_run

    long_items = long_chromosomes(data) if args.long_chromosomes and args.calibrate else []
    if long_items:
        print(f"{len(long_items)} long chromosomes of profiles_all for the laws and pruners "
              f"({sum(len(l) for _, l in long_items)} labels)", flush=True)
    recipes = [("hermite+raw", "ssvm")] + ([("hermite", "ssvm")] if args.hermite_only else [])
    if args.references_only:
        recipes = []
    for f in (range(args.folds) if args.only_folds is None else args.only_folds):
        tr = np.flatnonzero(fold != f)
        te = np.flatnonzero(fold == f)
        # one tuned penalty ∝ σ̂² log T
        t = time.perf_counter()
        c = tune_constant(table, tr)
        ts = time.perf_counter() - t
        record("tuned penalty σ̂² log T (reference)", f,
               *score_log_penalties(table, te, table.feats[te, 1] + table.feats[te, 0] + c), ts)
        # interval regression
        t = time.perf_counter()
        reg = PenaltyIntervalRegression(alpha=1e-2, margin=0.5).fit(table.feats[tr], table.intervals[tr])
        ts = time.perf_counter() - t
        record("interval regression of log λ (reference)", f,
               *score_log_penalties(table, te, reg.predict(table.feats[te])), ts)
        reg = PenaltyIntervalRegression(alpha=1e-2, margin=1.0).fit(table.feats_path[tr], table.intervals[tr])
        record("interval regression + path features (ours)", f,
               *score_log_penalties(table, te, reg.predict(table.feats_path[te])), ts)
        # oracle
        fp = fn = n = 0
        for i in te:
            a, b = table.oracle(i)
            fp, fn, n = fp + a, fn + b, n + table.n[i]
        record("per-sequence best penalty (oracle bound)", f, fp, fn, n, 0.0)
        # ours
        tr_items = [items[i] for i in tr]
        te_items = [items[i] for i in te]
        for recipe, learner in recipes:
            Xte = [features(s, recipe) for s, _ in te_items]
            if recipe == "hermite+raw" and args.calibrate:
                # the recipe fits the same SSVM metric as fit_metric, then the penalty laws
                t, c = time.perf_counter(), time.process_time()
                seg = CghSegmenter(max_iter=args.max_iter, learner="ssvm", prune=True, random_state=0).fit(
                    [s for s, _ in tr_items], [l for _, l in tr_items])
                ts, cs = time.perf_counter() - t, time.process_time() - c
                model, w = seg.model_, seg.w_
            else:
                t, c = time.perf_counter(), time.process_time()
                model, w = fit_metric(tr_items, recipe, args.max_iter, learner)
                ts, cs = time.perf_counter() - t, time.process_time() - c
            record(f"learned diagonal metric, {recipe} ({learner})", f, *model_errors(model, w, te_items, Xte), ts, cs)
            if recipe == "hermite+raw" and args.calibrate:
                fp = fn = n = 0
                pfp = pfn = 0
                lfp = lfn = 0
                law_pruners = _law_candidate_pruners(seg, tr_items)
                ofp = ofn = 0
                qfp = qfn = 0
                per_platform = {"low": [0, 0, 0], "high": [0, 0, 0]}
                for (s, labs), X in zip(te_items, Xte):
                    law_seg = seg.law_segment(s)
                    e = region_errors(labs, law_seg)
                    fp, fn, n = fp + e.fp, fn + e.fn, n + e.n_labels
                    e = region_errors(labs, law_pruners[seg._pruner_key(s)].prune(s.values[:, 0], law_seg))
                    lfp, lfn = lfp + e.fp, lfn + e.fn
                    e = region_errors(labs, seg.pruned(s, law_seg))
                    pfp, pfn = pfp + e.fp, pfn + e.fn
                    per_platform[seg._class_of(s)] = [u + v for u, v in zip(per_platform[seg._class_of(s)],
                                                                            (e.fp, e.fn, e.n_labels))]
                    law = seg.law_for(s)
                    grid_segs = law.decode_grid(X)
                    grid_errs = [(e.fp, e.fn) for e in (region_errors(labs, sg) for sg in grid_segs)]
                    best = min(grid_errs, key=sum)
                    ofp, ofn = ofp + best[0], ofn + best[1]
                    pruned = [(e.fp, e.fn) for e in (region_errors(labs, seg.pruned(s, sg)) for sg in grid_segs)]
                    best = min(pruned, key=sum)
                    qfp, qfn = qfp + best[0], qfn + best[1]
                    _law_placement(placement, seg._class_of(s), seg.offset(s), law.offsets,
                                   np.array([sum(e) for e in grid_errs]))
                record("learned metric (SSVM) + penalty law per platform", f, fp, fn, n, ts, cs)
                record("metric + penalty law + pruning of the law's changes only", f, lfp, lfn, n, ts, cs)
                record("metric + penalty law + learned change pruning (ours; CLI default)", f, pfp, pfn, n, ts, cs)
                record("learned metric, per-sequence best penalty (oracle)", f, ofp, ofn, n, 0.0, 0.0)
                record("learned metric + pruning, per-sequence best penalty (oracle)", f, qfp, qfn, n, 0.0, 0.0)
                for platform, (a, b, c) in per_platform.items():
                    if c:
                        record(f"CLI default, {platform}-density arrays only (errors / their labels)", f, a, b, c, 0.0, 0.0)
                print("  fold %d change pruners: %s" % (f + 1, {k: p.to_dict() for k, p in seg.pruners_.items()}),
                      flush=True)
                print("  fold %d pruner candidates (cross-validated errors): %s" % (f + 1, {
                    k: f"{m} {seg.pruner_cv_errors_.get(k, {})}" for k, m in seg.pruner_candidates_.items()}),
                      flush=True)
                print("  fold %d law metrics (cross-validated errors): %s" % (f + 1, {
                    k: f"{m} {seg.law_cv_errors_[k]}" for k, m in seg.law_metrics_.items()}), flush=True)
                print("  fold %d law margins and ridges: %s" % (f + 1, {
                    k: (law.margin_, law.alpha_) for k, law in seg.laws_.items()}), flush=True)
                if long_items:
                    # the recipe again, its laws and pruners also trained on the long chromosomes of the
                    # training profiles and of the profiles only in profiles_all (never a test profile)
                    test_profiles = {s.meta["profile_id"] for s, _ in te_items}
                    more = [it for it in long_items if it[0].meta["profile_id"] not in test_profiles]
                    t, c = time.perf_counter(), time.process_time()
                    alt = CghSegmenter(max_iter=args.max_iter, prune=True, random_state=0).fit(
                        [s for s, _ in tr_items], [l for _, l in tr_items],
                        law_only=([s for s, _ in more], [l for _, l in more]))
                    ts2, cs2 = time.perf_counter() - t, time.process_time() - c
                    record(LONG_CHROMOSOMES, f, *model_errors_of(alt, te_items), ts2, cs2)
                for other in args.other_learners:
                    t, c = time.perf_counter(), time.process_time()
                    alt = CghSegmenter(max_iter=args.max_iter, learner=other, random_state=0, prune=False).fit(
                        [s for s, _ in tr_items], [l for _, l in tr_items])
                    ts2, cs2 = time.perf_counter() - t, time.process_time() - c
                    record(OTHER_LEARNERS[other], f, *model_errors_of(alt, te_items), ts2, cs2)
        print(f"fold {f + 1}/{args.folds} done; so far:", flush=True)
        print_table(results, n_labels, "%.2f %.2f %.2f" % os.getloadavg())
        if placement:
            print_placement(placement)
    return items, fold, results, n_labels


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true",
                    help="24 profiles, chromosomes of <= 1500 probes, 3 folds, 2 SSVM passes, one metric recipe")
    ap.add_argument("--data", default=str(ROOT.parent / "shared" / "data"))
    ap.add_argument("--folds", type=int, default=None)
    ap.add_argument("--no-calibrate", dest="calibrate", action="store_false",
                    help="skip the per-sequence penalty laws on top of the learned metric")
    ap.add_argument("--max-iter", type=int, default=None, help="SSVM passes (default 3 quick, 5 full)")
    ap.add_argument("--references-only", action="store_true", help="only the penalty-only rows (seconds)")
    ap.add_argument("--hermite-only", action="store_true",
                    help="also the learned metric on the Hermite columns without the raw logratio (one more SSVM "
                         "per fold; measured 19.8 %% vs 18.3 %% with it)")
    ap.add_argument("--other-learners", default=None,
                    help="comma-separated metric learners measured besides SSVM under the same penalty laws: "
                         f"{', '.join(OTHER_LEARNERS)}, or none (default: all; none with --quick)")
    ap.add_argument("--long-chromosomes", action="store_true",
                    help="also the recipe whose penalty laws and pruners are trained on the 10^4-10^5-probe "
                         "chromosomes of profiles_all too (about 3 min more per fold)")
    ap.add_argument("--only-folds", default=None,
                    help="comma-separated folds (1-based) to run, to split a long run over processes")
    ap.add_argument("--out", default=None, help="results JSON (default benchmarks/results/quality_cgh.json)")
    ap.add_argument("--no-cli", action="store_true", help="skip the command-line contract check")
    ap.add_argument("--cli-only", action="store_true",
                    help="only the command-line contract check (writes results/quality_cgh_cli.json)")
    args = ap.parse_args(argv)
    if args.max_iter is None:
        args.max_iter = 2 if args.quick else 5
    if args.folds is None:
        args.folds = 3 if args.quick else 5
    if args.only_folds is not None:
        args.only_folds = [int(x) - 1 for x in args.only_folds.split(",")]
        if any(not 0 <= f < args.folds for f in args.only_folds):
            ap.error(f"--only-folds: expected folds between 1 and {args.folds}")
    if args.other_learners is None:
        args.other_learners = "" if args.quick else ",".join(OTHER_LEARNERS)
    args.other_learners = [x for x in args.other_learners.split(",") if x and x != "none"]
    unknown = [x for x in args.other_learners if x not in OTHER_LEARNERS]
    if unknown:
        ap.error(f"--other-learners: unknown {unknown}; expected some of {list(OTHER_LEARNERS)}")
    if cgh_data_missing(args.data):
        return 1
    load_avg = "%.2f %.2f %.2f" % os.getloadavg()
    if args.cli_only:
        items = load(args.data)
        fold, results = folds_by_profile(items, args.folds, seed=0), {}
    else:
        items, fold, results, n_labels = run(args)
        print_table(results, n_labels, load_avg)
    if not args.no_cli:
        r = cli_contract(items, fold, args.data, max_iter=args.max_iter)
        if r["why"]:
            print(f"CLI contract: FAILED, {r['why']}")
            add_row("aCGH CLI contract: CLI label error == in-process (fold 1)", 0.0, "bool", 1.0, "higher")
        else:
            print(f"CLI contract (fold 1, {r['n']} test labels): marginalia-cli train+predict label error "
                  f"{100 * r['cli']:.2f} %, in-process {100 * r['in_process']:.2f} % -> "
                  f"{'equal' if r['ok'] else 'DIFFERENT'} ({r['cli_s']:.1f}s)")
            add_row("aCGH CLI contract: CLI label error == in-process (fold 1)", float(r["ok"]), "bool", 1.0,
                    "higher", {"name": "in-process label error", "value": r["in_process"]},
                    {"cli_label_error": r["cli"]})
    ref = results.get("tuned penalty σ̂² log T (reference)", {"err": [np.nan]})
    ref_err = float(np.mean(ref["err"]))
    for name, r in results.items():
        e = np.array(r["err"])
        is_ref = "reference" in name or "oracle" in name
        add_row(f"aCGH label error: {name}", e.mean(), "fraction", None if is_ref else TARGET, "lower",
                None if name.startswith("tuned") else {"name": "tuned penalty σ̂² log T", "value": ref_err},
                {"spread": float(e.std()), "fp": r["fp"], "fn": r["fn"], "n_labels": r["n"],
                 "train_s": r["train_s"], "train_cpu_s": r["train_cpu"], "folds": args.folds, "load": load_avg})
    out = Path(args.out) if args.out else \
        ROOT / "benchmarks" / "results" / ("quality_cgh_cli.json" if args.cli_only else "quality_cgh.json")
    save_rows(out, ROWS)
    return 0


if __name__ == "__main__":
    sys.exit(main())
