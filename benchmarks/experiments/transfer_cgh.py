"""Transfer of a learned aCGH metric from low-density to high-density arrays (issue #4, Lou et al. eq. 1.9).

Source: every labelled low-density (BAC, ~1 probe/Mb) sequence of the neuroblastoma data with all its
labels. Target: the high-density (oligo, ~25 probes/Mb) sequences, split BY PROFILE into a train pool
and a test set (``--splits`` random splits, fixed seeds); a fraction of the pool's labelled sequences
is revealed (nested: the 10 % are inside the 20 %, inside the 50 %). Ways to learn the diagonal
metric + base penalty of :class:`~marginalia.models.segmentation.SegmentationModel` (input: the aCGH
recipe's point-wise Hermite features, :meth:`CghSegmenter.model_input`):

1. target-only: SSVM on the revealed target sequences;
2. source-only: SSVM on the source sequences;
3. union: plain SSVM on source + revealed target;
4. transfer rho=R: :class:`~marginalia.learners.transfer.TransferSSVM`, one dataset per platform coupled by a
   fixed ``rho`` (``--rhos``; 1 was the recipe's default); the target is decoded with its own vector;
5. transfer rho by CV (the headline): :class:`~benchmarks.research.transfer_cv.TransferRhoCV` chooses ``rho``
   from ``--cv-rhos`` (0 = the target alone, exactly the target-only learner; inf = one vector for both
   platforms) by ``--inner-folds`` folds over the revealed target sequences grouped by profile, scoring
   the held-out target labels with the same penalty calibration as every row; the source never judges.
   The headline keeps ``rho = 0`` unless another value wins by more than one standard error of the
   per-sequence difference (rule fixed before the full run: a few revealed sequences make the plain
   minimum a coin toss); ``transfer rho by CV, min`` is the plain minimum on the same folds.

Two penalty treatments, the same for all methods so that only the metric learning differs:
``learned`` (the penalty of the learned vector, ∝ log T in noise units) and ``calibrated`` (that
penalty times ``exp(δ)``, one ``δ`` per method tuned on the revealed target labels over a grid — the
headline, since a penalty learned on 1 probe/Mb arrays cannot know the false-alarm rate of 25/Mb ones).
Scored on the target-test labelled regions (label error = (FP + FN) / labelled regions, as
:func:`marginalia.metrics.region_errors`); the table also gives, per method, the per-split
difference to target-only (mean ± sd, in points), the spread that decides whether a gap is real.

Usage: ``python -m benchmarks.experiments.transfer_cgh [--quick] [--data DIR] [--splits 4] [--fractions 0.1,0.2,0.5]
[--rhos 1] [--cv-rhos 0,1,10,100,inf] [--inner-folds 3] [--max-iter 2]``; ``--convergence 2,10,50,200`` only
prints the convergence of the target-only SSVM of split 1 (its estimated duality gap, the exact objective and
the test error after each number of passes).
Writes ``benchmarks/results/transfer_cgh.json``.
"""

from __future__ import annotations

import argparse
import copy
import math
import os
import sys
import time

import numpy as np

from benchmarks._common import (  # noqa: E402
    ROOT,  # noqa: E402
    cgh_data_missing,  # noqa: E402
    reference,
    result_row,
    save_rows,
)
from benchmarks.quality.quality_cgh import features, fit_metric, load, model_errors  # noqa: E402
from benchmarks.research.transfer_cv import TransferRhoCV, select_rho  # noqa: E402
from marginalia.cgh.recipe import density_class  # noqa: E402
from marginalia.learners.ssvm import SSVM  # noqa: E402
from marginalia.learners.transfer import TransferSSVM  # noqa: E402
from marginalia.metrics import region_errors  # noqa: E402
from marginalia.models.segmentation import SegmentationModel  # noqa: E402

RECIPE = "hermite+raw"            # the CghSegmenter input matrix
OFFSETS = np.arange(-3.0, 3.01, 0.25)   # log-penalty offsets tried by the calibration
HEADLINE_FRACTION = 0.2
CV = "transfer rho by CV"          # the headline: rho chosen on held-out revealed target labels, 1-SE rule
CV_MIN = "transfer rho by CV, min"  # the same folds, plain minimum of the held-out errors


# ----------------------------------------------------------------------- splits
def platforms(items):
    """The labelled sequences ``(seq, labels)`` of ``items`` by platform: ``(source, target)``, low then high density."""
    source = [it for it in items if density_class(it[0]) == "low"]
    target = [it for it in items if density_class(it[0]) == "high"]
    return source, target


def target_splits(target, n_splits, test_share=1 / 3):
    """``(pool, test)`` index lists into ``target`` per seed, split by profile."""
    profiles = sorted({s.meta["profile_id"] for s, _ in target}, key=str)
    n_test = max(1, int(round(test_share * len(profiles))))
    out = []
    for seed in range(n_splits):
        rng = np.random.default_rng(1000 + seed)
        order = list(rng.permutation(len(profiles)))
        test_prof = {profiles[k] for k in order[:n_test]}
        test = [i for i, (s, _) in enumerate(target) if s.meta["profile_id"] in test_prof]
        pool = [i for i, (s, _) in enumerate(target) if s.meta["profile_id"] not in test_prof]
        pool = [pool[k] for k in rng.permutation(len(pool))]   # reveal order: nested fractions
        out.append((pool, test))
    return out


def revealed(pool, fraction):
    return pool[:max(2, int(math.ceil(fraction * len(pool))))]


# ----------------------------------------------------------------------- learners
def fit_transfer(src_items, tgt_items, rho, max_iter):
    """TransferSSVM with datasets ``low`` (source) and ``high`` (target); the target's vector."""
    items = list(src_items) + list(tgt_items)
    Xs = [features(s, RECIPE) for s, _ in items]
    Ys = [labs for _, labs in items]
    model = SegmentationModel(min_size=3, penalty_per="log_length")
    model.initial_w(Xs, Ys, grid=np.exp2(np.arange(-4, 5, 0.5)))   # scales + start, as fit_metric does
    datasets = ["low"] * len(src_items) + ["high"] * len(tgt_items)
    fitted = TransferSSVM(model, rho=rho, C=1.0, max_iter=max_iter, random_state=0).fit(Xs, Ys, datasets)
    return model, fitted.w_datasets_["high"]


def with_offset(model, w, delta):
    B, pen = model.split_w(np.asarray(w, dtype=np.float64))
    return model.join_w(B, pen * float(np.exp(delta)))


def offset_errors(model, w, items, Xs):
    """Label errors (FP + FN) summed over ``items`` for every offset of ``OFFSETS``, shape (len(OFFSETS),).

    The optimal segmentation is piecewise constant in the penalty, so when two offsets give the same
    segmentation every offset between them does too: the grid is scanned by bisection per sequence.
    """
    total = np.zeros(len(OFFSETS), dtype=np.int64)
    for (_, labs), X in zip(items, Xs):
        segs = {}

        def seg(k):
            if k not in segs:
                segs[k] = model.decode(X, with_offset(model, w, OFFSETS[k]))
            return segs[k]

        errs = np.zeros(len(OFFSETS), dtype=np.int64)
        stack = [(0, len(OFFSETS) - 1)]
        while stack:
            lo, hi = stack.pop()
            a, b = seg(lo), seg(hi)
            if hi - lo <= 1 or np.array_equal(a.changes, b.changes):
                e = region_errors(labs, a).errors
                errs[lo:hi + 1] = e
                if hi - lo <= 1:
                    errs[hi] = region_errors(labs, b).errors
                continue
            mid = (lo + hi) // 2
            stack += [(lo, mid), (mid, hi)]
        total += errs
    return total


def calibrate_offset(model, w, items, Xs):
    """``(offset, errors)``: the log-penalty offset with the fewest label errors on ``items`` (middle of the
    best run) and that number of errors."""
    errs = offset_errors(model, w, items, Xs)
    k = np.flatnonzero(errs == errs.min())
    return float(OFFSETS[k[len(k) // 2]]), int(errs.min())


def fit_transfer_cv(src_items, tgt_items, rhos, inner_folds, max_iter):
    """TransferRhoCV over ``rhos``: ``{rule: (model, learned target vector, calibrated one, chosen rho)}`` for the
    1-SE rule and the plain minimum (one set of folds; a second final fit only when they disagree)."""
    items = list(src_items) + list(tgt_items)
    Xs = [features(s, RECIPE) for s, _ in items]
    Ys = [labs for _, labs in items]
    datasets = ["low"] * len(src_items) + ["high"] * len(tgt_items)
    groups = [str(s.meta["profile_id"]) for s, _ in items]

    def refine(model, w, Xt, Yt):      # the calibration every row gets, on the training target labels
        its = [(None, y) for y in Yt]
        return with_offset(model, w, calibrate_offset(model, w, its, Xt)[0])

    def error(model, w, X, Y):
        return region_errors(Y, model.decode(X, w)).errors

    model = SegmentationModel(min_size=3, penalty_per="log_length")
    cv = TransferRhoCV(model, rhos=rhos, target="high", cv=inner_folds, rule="1se", C=1.0, max_iter=max_iter,
                       random_state=0, refine=refine, error=error)
    cv.fit(Xs, Ys, datasets, groups=groups)
    out = {"1se": (model, cv.w_fitted_, cv.w_, cv.rho_)}
    rho_min = select_rho(cv.cv_item_errors_, "min")
    if rho_min != cv.rho_:
        model = cv.model = copy.deepcopy(model)
        cv.refit(rho_min)
    out["min"] = (cv.model, cv.w_fitted_, cv.w_, cv.rho_)
    return out


def exact_primal(model, w, Xs, Ys, w0, C=1.0):
    """SSVM objective ``λ/2 ‖w‖² + mean_i max_y [loss - ⟨w, ψ_i(y)⟩]`` at ``w`` (λ = 1/(C n)), the targets
    completed with ``w0`` as the SSVM does; one exact loss-augmented decoding per sequence."""
    hinge = []
    for X, Y in zip(Xs, Ys):
        tg = model.make_target(X, Y, w0)
        y_hat = model.loss_augmented_decode(X, tg, w)
        psi = model.joint_feature(X, tg) - model.joint_feature(X, y_hat)
        hinge.append(max(0.0, float(model.loss(tg, y_hat)) - float(w @ psi)))
    return 0.5 / (C * len(Xs)) * float(w @ w) + float(np.mean(hinge))


def convergence(args):
    """Target-only SSVM of split 1 at the headline fraction after more and more passes: the SSVM's own
    estimates (objective, duality gap of the last pass), the exact objective at the returned (averaged)
    vector, and the calibrated target-test error, to see how much of a method's error is optimisation noise."""
    _, target = platforms(load(args.data))
    pool, test = target_splits(target, 1)[0]
    rv, te = [target[i] for i in revealed(pool, HEADLINE_FRACTION)], [target[i] for i in test]
    rv_X, te_X = [features(s, RECIPE) for s, _ in rv], [features(s, RECIPE) for s, _ in te]
    Ys = [labs for _, labs in rv]
    print(f"target-only SSVM, split 1, {100 * HEADLINE_FRACTION:.0f}% revealed ({len(rv)} sequences), load "
          f"{'%.2f %.2f %.2f' % os.getloadavg()}")
    for passes in args.convergence:
        model = SegmentationModel(min_size=3, penalty_per="log_length")
        w0 = model.initial_w(rv_X, Ys, grid=np.exp2(np.arange(-4, 5, 0.5)))
        fit, tw, tc = timed(lambda: SSVM(model, C=1.0, max_iter=passes, random_state=0).fit(rv_X, Ys))
        wc = with_offset(model, fit.w_, calibrate_offset(model, fit.w_, rv, rv_X)[0])
        fp, fn, n = model_errors(model, wc, te, te_X)
        print(f"{passes:>4} passes (ran {fit.n_iter_}): last pass objective {fit.loss_curve_[-1]:8.3f}, gap "
              f"{fit.gap_curve_[-1]:8.3f}; exact objective at w_ {exact_primal(model, fit.w_, rv_X, Ys, w0):7.3f}; "
              f"test error {100 * (fp + fn) / n:5.1f}% (calibrated); fit {tw:.1f}s wall, {tc:.1f}s CPU", flush=True)


def timed(fn, *a):
    t, c = time.perf_counter(), time.process_time()
    out = fn(*a)
    return out, time.perf_counter() - t, time.process_time() - c


# ----------------------------------------------------------------------- experiment
def run(args):
    source, target = platforms(load(args.data))
    X_tgt = [features(s, RECIPE) for s, _ in target]
    n_src_labels = sum(len(l) for _, l in source)
    print(f"source: {len(source)} low-density sequences, {n_src_labels} labels; target: {len(target)} "
          f"high-density sequences of {len({s.meta['profile_id'] for s, _ in target})} profiles, "
          f"{sum(len(l) for _, l in target)} labels", flush=True)
    splits = target_splits(target, args.splits)
    methods = ["target-only", "source-only", "union"] + [f"transfer rho={r:g}" for r in args.rhos] + [CV, CV_MIN]
    # errs[(fraction, method, treatment)] -> per-split errors; cpu/wall[(fraction, method)] -> per-split seconds
    errs, fpfn, cpu, wall, chosen = {}, {}, {}, {}, {}
    (src_model, src_w), s_wall, s_cpu = timed(fit_metric, source, RECIPE, args.max_iter)
    print(f"source-only metric: {s_wall:.1f}s wall, {s_cpu:.1f}s CPU", flush=True)
    for si, (pool, test) in enumerate(splits):
        te_items = [target[i] for i in test]
        te_X = [X_tgt[i] for i in test]
        for frac in args.fractions:
            rev = revealed(pool, frac)
            rv_items = [target[i] for i in rev]
            rv_X = [X_tgt[i] for i in rev]
            for m in methods:
                if m in (CV, CV_MIN):
                    if m == CV:
                        cv_out, cv_wall, cv_cpu = timed(fit_transfer_cv, source, rv_items, args.cv_rhos,
                                                        args.inner_folds, args.max_iter)
                    (model, w, wc, rho), tw, tc = cv_out["1se" if m == CV else "min"], cv_wall, cv_cpu
                    chosen.setdefault((frac, m), []).append(rho)
                    cw = cc = 0.0
                else:
                    if m == "target-only":
                        (model, w), tw, tc = timed(fit_metric, rv_items, RECIPE, args.max_iter)
                    elif m == "source-only":
                        (model, w), tw, tc = (src_model, src_w), s_wall, s_cpu
                    elif m == "union":
                        (model, w), tw, tc = timed(fit_metric, source + rv_items, RECIPE, args.max_iter)
                    else:
                        rho = float(m.split("=")[1])
                        (model, w), tw, tc = timed(fit_transfer, source, rv_items, rho, args.max_iter)
                    (delta, _), cw, cc = timed(calibrate_offset, model, w, rv_items, rv_X)
                    wc = with_offset(model, w, delta)
                cpu.setdefault((frac, m), []).append(tc + cc)
                wall.setdefault((frac, m), []).append(tw + cw)
                for treat, wt in (("learned", w), ("calibrated", wc)):
                    tally(errs, fpfn, (frac, m, treat), *model_errors(model, wt, te_items, te_X))
            cvs = errs[(frac, CV, "calibrated")][-1]
            tos = errs[(frac, "target-only", "calibrated")][-1]
            print(f"split {si + 1}/{len(splits)}, {100 * frac:.0f}% revealed ({len(rev)} of {len(pool)} pool "
                  f"sequences, {len(test)} test sequences): rho by CV {chosen[(frac, CV)][-1]:g}, "
                  f"{100 * cvs:.1f}% vs target-only {100 * tos:.1f}%  [{time.process_time():.0f}s CPU so far]",
                  flush=True)
    for (frac, m), rhos in chosen.items():
        print(f"{100 * frac:.0f}% revealed, {m}: rho chosen per split {[f'{r:g}' for r in rhos]}")
    return methods, errs, fpfn, cpu, wall, chosen


def tally(errs, fpfn, key, fp, fn, n) -> None:
    """Record one split's test errors of ``key`` = (fraction, method, treatment).

    ``errs[key]`` gets the label error ``(FP + FN) / n`` of the split (``n`` labelled regions);
    ``fpfn[key]`` sums ``[FP, FN, n]`` over the splits.
    """
    errs.setdefault(key, []).append((fp + fn) / max(n, 1))
    acc = fpfn.setdefault(key, [0, 0, 0])
    acc[0], acc[1], acc[2] = acc[0] + fp, acc[1] + fn, acc[2] + n


def paired(errs, frac, m, treat="calibrated"):
    """Per-split difference to target-only, in points: (mean, sd)."""
    d = 100 * (np.array(errs[(frac, m, treat)]) - np.array(errs[(frac, "target-only", treat)]))
    return float(d.mean()), float(d.std())


def print_table(args, methods, errs, fpfn, cpu, wall, load_avg):
    print(f"\nTarget-test label error (high-density aCGH), {args.splits} splits by profile; "
          f"SSVM passes {args.max_iter}; load {load_avg}")
    print(f"{'revealed':>8} {'method':<24} {'calibrated penalty':>20} {'FP':>4} {'FN':>4} {'- target-only':>15} "
          f"{'learned penalty':>17} {'train s':>8} {'CPU s':>7}")
    for frac in args.fractions:
        for m in methods:
            ec = np.array(errs[(frac, m, "calibrated")])
            el = np.array(errs[(frac, m, "learned")])
            fp, fn, _ = fpfn[(frac, m, "calibrated")]
            dm, ds = paired(errs, frac, m)
            print(f"{100 * frac:>7.0f}% {m:<24} {100 * ec.mean():>9.2f} ± {100 * ec.std():<6.2f}% {fp:>4d} {fn:>4d} "
                  f"{dm:>+7.2f} ± {ds:<5.2f} {100 * el.mean():>7.2f} ± {100 * el.std():<5.2f}% "
                  f"{np.mean(wall[(frac, m)]):>8.2f} {np.mean(cpu[(frac, m)]):>7.2f}")
        print()


def wins_ties_losses(d) -> str:
    """``"wins/ties/losses"`` of the per-split differences ``d`` to target-only (below, equal, above 0)."""
    return f"{int(np.sum(d < 0))}/{int(np.sum(d == 0))}/{int(np.sum(d > 0))}"


def print_ratios(rows, width: int) -> None:
    """One line per ``... / target-only error ratio ...`` row: the ratio, target-only's error and the paired difference."""
    for r in rows:
        if "/ target-only error ratio" in r["case"]:
            flag = "" if r["meets_target"] is None else ("ok" if r["meets_target"] else "MISSED")
            dm, ds = r["minus_target_only_mean_sd"]
            print(f"{r['case']:<{width}} {r['value']:.3f} (target-only {r['reference']['value']:.2f} %; per split "
                  f"{dm:+.2f} ± {ds:.2f} points) {flag}")


def ratio(a, b):
    if b > 0:
        return a / b
    return 1.0 if a == 0 else float("inf")


def rows(args, methods, errs, cpu, chosen):
    out = []
    for frac in args.fractions:
        tag = f"{100 * frac:.0f} %"
        for treat in ("calibrated", "learned"):
            base = float(np.mean(errs[(frac, "target-only", treat)]))
            for m in methods:
                v = float(np.mean(errs[(frac, m, treat)]))
                ref = None if m == "target-only" else reference(f"target-only ({treat} penalty)", 100 * base)
                r = result_row(f"target-test label error, {m}, {tag} revealed, {treat} penalty", 100 * v, "%",
                               better="lower", reference=ref)
                r["sd"] = 100 * float(np.std(errs[(frac, m, treat)]))
                r["per_split"] = [100 * float(e) for e in errs[(frac, m, treat)]]
                if m != "target-only":
                    r["minus_target_only_mean_sd"] = list(paired(errs, frac, m, treat))
                out.append(r)
        for m in methods:
            out.append(result_row(f"train CPU, {m}, {tag} revealed", float(np.mean(cpu[(frac, m)])), "s",
                                  better="lower"))
        for m in [m for m in methods if m.startswith("transfer")]:
            for treat in ("calibrated", "learned"):
                t = float(np.mean(errs[(frac, m, treat)]))
                b = float(np.mean(errs[(frac, "target-only", treat)]))
                headline = m == CV and frac == HEADLINE_FRACTION and treat == "calibrated"   # the one target
                case = f"{m} / target-only error ratio at {tag}"
                if treat != "calibrated":
                    case += f" ({treat} penalty)"
                r = result_row(case, ratio(t, b), "ratio", target=1.0 if headline else None,
                               better="lower", reference=reference("target-only error %", 100 * b))
                if (frac, m) in chosen:
                    r["rho_per_split"] = [float(x) if math.isfinite(x) else "inf" for x in chosen[(frac, m)]]
                r["minus_target_only_mean_sd"] = list(paired(errs, frac, m, treat))
                out.append(r)
    return out


def parse_rhos(text):
    return [math.inf if x.strip() in ("inf", "infinity") else float(x) for x in text.split(",") if x.strip()]


def parse_fractions(text, quick: bool) -> list:
    """The revealed fractions of ``--fractions`` (comma-separated); default 0.2 with ``--quick``, else 0.1,0.2,0.5."""
    return [float(x) for x in (text or ("0.2" if quick else "0.1,0.2,0.5")).split(",")]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true",
                    help="1 split, 20 %% revealed, CV over rho in 0,10,inf with 2 inner folds, 2 SSVM passes")
    ap.add_argument("--data", default=str(ROOT.parent / "shared" / "data"))
    ap.add_argument("--splits", type=int, default=None,
                    help="random splits by profile (default 1 quick, 4 full: ~14 min CPU; 6 splits ~22 min)")
    ap.add_argument("--fractions", default=None, help="revealed fractions of the target pool (default 0.1,0.2,0.5)")
    ap.add_argument("--rhos", default=None, help="fixed TransferSSVM couplings reported as rows (default 1; "
                    "quick: none)")
    ap.add_argument("--cv-rhos", default=None, help="grid of the CV choice (default 0,1,10,100,inf; quick: 0,10,inf)")
    ap.add_argument("--inner-folds", type=int, default=None, help="CV folds over the revealed target profiles "
                    "(default 3; quick: 2)")
    ap.add_argument("--max-iter", type=int, default=None, help="SSVM passes (default 2)")
    ap.add_argument("--convergence", default=None, help="only the SSVM convergence check: comma-separated pass "
                    "counts (e.g. 2,10,50,200)")
    args = ap.parse_args(argv)
    if args.convergence:
        args.convergence = [int(x) for x in args.convergence.split(",")]
        convergence(args)
        return 0
    if args.splits is None:
        args.splits = 1 if args.quick else 4
    if args.max_iter is None:
        args.max_iter = 2
    if args.inner_folds is None:
        args.inner_folds = 2 if args.quick else 3
    args.fractions = parse_fractions(args.fractions, args.quick)
    args.rhos = parse_rhos(args.rhos if args.rhos is not None else ("" if args.quick else "1"))
    args.cv_rhos = parse_rhos(args.cv_rhos or ("0,10,inf" if args.quick else "0,1,10,100,inf"))
    if (args.splits < 1 or any(not 0 < f <= 1 for f in args.fractions) or any(r < 0 for r in args.rhos)
            or not args.cv_rhos or any(r < 0 for r in args.cv_rhos) or args.inner_folds < 2):
        ap.error(f"expected --splits >= 1, fractions in (0, 1], rhos >= 0, --inner-folds >= 2; got {args.splits}, "
                 f"{args.fractions}, {args.rhos}, {args.cv_rhos}, {args.inner_folds}")
    if cgh_data_missing(args.data):
        return 1
    load_avg = "%.2f %.2f %.2f" % os.getloadavg()
    t0, c0 = time.perf_counter(), time.process_time()
    methods, errs, fpfn, cpu, wall, chosen = run(args)
    print_table(args, methods, errs, fpfn, cpu, wall, load_avg)
    out = rows(args, methods, errs, cpu, chosen)
    print_ratios(out, 66)
    print(f"total {time.perf_counter() - t0:.0f}s wall, {time.process_time() - c0:.0f}s CPU; "
          f"load at end {'%.2f %.2f %.2f' % os.getloadavg()}")
    save_rows(ROOT / "benchmarks" / "results" / "transfer_cgh.json", out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
