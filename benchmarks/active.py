"""Active learning replayed offline on real aCGH data: learning curves per strategy, stopping, speed.

Usage: ``python benchmarks/active.py [--quick] [--seeds 5] [--data PATH] [--batch 5] [--max-fraction 0.6]``

An annotator is simulated from the neuroblastoma expert labels
(``cgh/neuroblastoma/profiles_small.csv.gz`` + ``annotations_small.csv``): profiles are split
into a training pool (2/3) and test profiles (1/3) by profile id; a part is one labelled
chromosome, and the oracle reveals the expert region labels of a queried chromosome. Every
strategy runs from the same seeds (seed = split and tie-breaking). Test error is the
labelled-region error on the test profiles (0breakpoints region with >= 1 predicted change: FP;
1breakpoint region with 0: FN, with >= 2: FP), divided by the number of test regions.

Reported: the fraction of the pool each strategy needs to come within 10 % (relative) of the
full-label error (the averaged passive-aggressive perceptron trained for 5 passes on every pool
label -- stable, unlike the plain one whose last iterate is reported beside it; a full SSVM fit on
the first seed too), the ratio
random / best-vs-2nd, where the stopping signal (Lou eq. 1.8) fires against where the curve
flattens, and one query cycle (perceptron update + best-vs-2nd uncertainty of a 300-part pool)
with a full SSVM refit + uncertainty timed as the reference. Writes
``benchmarks/results/active.json`` and the curves to ``benchmarks/results/active_cgh.png``.
The audio-to-score replay (Vienna 4x22) is not implemented: see the printed note.
"""

from __future__ import annotations

import argparse
import json
import os
import pathlib
import sys
import time
import warnings

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import numpy as np  # noqa: E402

from core.active.loop import ActiveSession, PartPool  # noqa: E402
from core.active.parts import parts_for_items  # noqa: E402
from core.active.segmentation_task import SegmentationTask, region_error  # noqa: E402
from core.active.stopping import StoppingCriterion  # noqa: E402
from core.active.uncertainty import STRATEGIES  # noqa: E402
from core.io.cgh import read_annotations, read_profiles  # noqa: E402
from core.models.segmentation import SegmentationModel  # noqa: E402

RESULTS = ROOT / "benchmarks" / "results"


def row(case, value, unit, target=None, better="lower", reference=None):
    meets = None
    if target is not None and value is not None and np.isfinite(value):
        meets = bool(value <= target) if better == "lower" else bool(value >= target)
    elif target is not None:
        meets = False
    return {"case": case, "value": None if value is None else float(value), "unit": unit, "target": target,
            "better": better, "reference": reference, "meets_target": meets}


def features_fn():
    """The app's aCGH features (logratio + local Hermite moments) when the engine offers them, else raw."""
    try:
        from core.tasks.segmentation import cgh_features
        return "logratio+hermite", lambda seq: cgh_features(seq.values[:, 0])
    except ImportError:  # the engine is developed alongside; the raw logratio is a fair fallback
        return "logratio", lambda seq: np.asarray(seq.values, dtype=np.float64)


# ------------------------------------------------------------------ data


def load_cgh(data_dir: pathlib.Path):
    folder = data_dir / "cgh" / "neuroblastoma"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        seqs = read_profiles(folder / "profiles_small.csv.gz")
        labels = read_annotations(folder / "annotations_small.csv", seqs)
    by_item: dict = {}
    for lab in labels:
        by_item.setdefault(lab.item_id, []).append(lab.as_region_label())
    seqs = [s for s in seqs if s.name in by_item]
    return seqs, by_item


def split(seqs, by_item, X, seed):
    pids = sorted({s.meta["profile_id"] for s in seqs}, key=str)
    rng = np.random.default_rng(seed)
    rng.shuffle(pids)
    test_p = set(pids[: len(pids) // 3])
    pool = {s.name: X[s.name] for s in seqs if s.meta["profile_id"] not in test_p}
    test = [(X[s.name], by_item[s.name]) for s in seqs if s.meta["profile_id"] in test_p]
    return pool, test


# ----------------------------------------------------------------- curves


def run_curve(strategy, pool, by_item, test, seed, *, batch, max_fraction, window, threshold):
    task = SegmentationTask(SegmentationModel(metric="diagonal"))
    stopping = StoppingCriterion(window=window, threshold=threshold, relative=True)
    session = ActiveSession(pool, task, lambda q, p: by_item[p.item_id], strategy=strategy, batch_size=batch,
                            held_out=test, stopping=stopping, random_state=seed)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        session.run(max_fraction=max_fraction)
    frac = np.array([r["fraction_parts"] for r in session.curve_])
    err = np.array([r["held_out_loss"] for r in session.curve_])
    unc = np.array([np.nan if r["mean_uncertainty"] is None else r["mean_uncertainty"] for r in session.curve_])
    fired = None if stopping.fired_at_ is None else float(frac[stopping.fired_at_ - 1])
    cycle = [r["update_s"] + r["score_s"] for r in session.curve_[1:]]
    return {"fraction": frac, "error": err, "uncertainty": unc, "stop_fraction": fired, "cycle_s": cycle}


def full_label_error(pool, by_item, test, *, learner):
    # "completion" keeps the SSVM's loss-augmented decoding on the fast decoders (the exact
    # violation-count DP is O(T^2) per chromosome)
    model = SegmentationModel(metric="diagonal", partial_loss="completion")
    Xs = list(pool.values())
    Ys = [by_item[k] for k in pool]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if learner in ("perceptron", "averaged perceptron"):
            from core.learners.perceptron import StructuredPerceptron
            model.initial_w(Xs)
            est = StructuredPerceptron(model, max_iter=5, averaged=learner == "averaged perceptron",
                                       random_state=0).fit(Xs, Ys)
        else:
            from core.learners.ssvm import SSVM
            est = SSVM(model, max_iter=20, random_state=0).fit(Xs, Ys)
    fp = fn = n = 0
    for X, labels in test:
        a, b, c = region_error(labels, model.decode(X, est.w_))
        fp, fn, n = fp + a, fn + b, n + c
    return (fp + fn) / n


def first_reach(grid, curve, level):
    hit = np.flatnonzero(curve <= level + 1e-12)
    return None if hit.size == 0 else float(grid[hit[0]])


def flatten_point(grid, curve, tol):
    """First fraction after which the curve stays within ``tol`` (relative) of its final value."""
    final = curve[-1]
    band = tol * max(final, 1e-9) + 1e-9
    outside = np.flatnonzero(np.abs(curve - final) > band)
    return float(grid[0]) if outside.size == 0 else float(grid[min(outside[-1] + 1, len(grid) - 1)])


def stop_fraction(fraction, uncertainty, window, threshold):
    """Where a StoppingCriterion(window, threshold, relative=True) fed this history first fires."""
    crit = StoppingCriterion(window=window, threshold=threshold, relative=True)
    for f, q in zip(fraction, uncertainty):
        if q is None or not np.isfinite(q):
            break
        if crit.update(q):
            return float(f)
    return None


def stopping_sensitivity(raw_runs, flat, windows=(4, 6, 10), thresholds=(1e-3, 2e-3, 5e-3)):
    """Median |stop - flatten| per (window, threshold), recomputed from the recorded uncertainty histories
    (the criterion only observes a replay, so no replay is re-run)."""
    out = []
    for strategy in sorted({r["strategy"] for r in raw_runs}):
        if strategy == "random" or strategy not in flat:
            continue
        for w in windows:
            for th in thresholds:
                stops = [stop_fraction(r["fraction"], r["uncertainty"], w, th) for r in raw_runs
                         if r["strategy"] == strategy]
                fired = [v for v in stops if v is not None]
                med = float(np.median(fired)) if fired else None
                out.append((strategy, w, th, len(fired), len(stops), med,
                            None if med is None else abs(med - flat[strategy])))
    return out


# ------------------------------------------------------------------ speed


def time_query_cycle(seqs, by_item, X, *, n_parts, n_labelled, repeat, with_ssvm=True):
    """One cycle on a pool of ``n_parts`` parts: a perceptron pass over the labelled items plus the
    best-vs-2nd uncertainty of every unlabelled part; reference: a full SSVM refit instead."""
    items = {s.name: X[s.name] for s in seqs}
    parts = parts_for_items(items, window=1000)[:n_parts]
    pool = PartPool(items, parts)
    labelled = [p for p in parts if p.kind == "chromosome"][:n_labelled]
    task = SegmentationTask(SegmentationModel(metric="diagonal"))
    session = ActiveSession(pool, task, lambda q, p: by_item[p.item_id], strategy="best-vs-2nd",
                            learner="combined", refit_every=10 ** 9, random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        session.teach([(p, by_item[p.item_id]) for p in labelled[:-1]])
        ids, data, labels = session._labelled_data()
        best_cycle = best_cpu = np.inf
        for _ in range(repeat):
            task.clear_cache()  # time the full recompute, as after a perceptron update that changed w
            t0, c0 = time.perf_counter(), time.process_time()
            for x, lab in zip(data, labels):
                task.perceptron_step(x, lab)
            session._uncertainty = None
            session._pool_uncertainty()
            best_cycle = min(best_cycle, time.perf_counter() - t0)
            best_cpu = min(best_cpu, time.process_time() - c0)
        task.clear_cache()
        ssvm_cycle = None
        if with_ssvm:
            t0 = time.perf_counter()
            task.refit(data, labels)
            session._uncertainty = None
            session._pool_uncertainty()
            ssvm_cycle = time.perf_counter() - t0
    n_probes = sum(p.size for p in parts)
    return best_cycle, best_cpu, ssvm_cycle, len(parts), n_probes, len(data)


# ------------------------------------------------------------------- main


def plot(path, grid, curves, full_err, stops, title):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, (ax, ax2) = plt.subplots(1, 2, figsize=(12, 4.5))
    for strategy, arr in curves.items():
        m, s = arr["error"].mean(0), arr["error"].std(0)
        line, = ax.plot(grid, m, label=strategy)
        ax.fill_between(grid, m - s, m + s, alpha=0.15, color=line.get_color())
        mu = np.nanmean(arr["uncertainty"], 0)
        ax2.plot(grid, mu, color=line.get_color(), label=strategy)
        if stops.get(strategy) is not None:
            ax2.axvline(stops[strategy], color=line.get_color(), ls=":", lw=1)
    ax.axhline(full_err, color="k", ls="--", lw=1, label="full labels (averaged perceptron)")
    ax.axhline(1.1 * full_err, color="k", ls=":", lw=1, label="full labels +10 %")
    ax.set_xlabel("fraction of the pool labelled")
    ax.set_ylabel("test labelled-region error")
    ax.set_title(title)
    ax.legend(fontsize=8)
    ax2.set_xlabel("fraction of the pool labelled")
    ax2.set_ylabel("mean uncertainty of the unlabelled pool")
    ax2.set_title("average uncertainty; dotted: stopping signal (median)")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="2 seeds, a smaller pool (under a minute)")
    ap.add_argument("--seeds", type=int, default=5)
    ap.add_argument("--data", default=str(ROOT.parent / "shared" / "data"))
    ap.add_argument("--batch", type=int, default=4, help="parts queried per step")
    ap.add_argument("--max-fraction", type=float, default=0.5, help="stop each replay at this share of the pool")
    ap.add_argument("--window", type=int, default=6, help="η window (steps)")
    ap.add_argument("--threshold", type=float, default=2e-3, help="η threshold (relative)")
    ap.add_argument("--strategies", default=",".join(STRATEGIES))
    ap.add_argument("--ssvm-every-seed", action="store_true",
                    help="fit the SSVM full-label reference on every seed (default: the first only)")
    args = ap.parse_args(argv)
    data_dir = pathlib.Path(args.data)
    seeds = list(range(2 if args.quick else args.seeds))
    strategies = [s for s in args.strategies.split(",") if s]
    load = os.getloadavg()
    print(f"load average at start: {load[0]:.2f} {load[1]:.2f} {load[2]:.2f} (2 cores shared)")

    t0 = time.perf_counter()
    seqs, by_item = load_cgh(data_dir)
    feat_name, feat = features_fn()
    X = {s.name: feat(s) for s in seqs}
    print(f"aCGH: {len(seqs)} labelled chromosomes of {len({s.meta['profile_id'] for s in seqs})} profiles, "
          f"features {feat_name}, loaded in {time.perf_counter() - t0:.1f} s")
    max_fraction = 0.3 if args.quick else args.max_fraction
    grid = np.linspace(0, max_fraction, int(round(max_fraction / 0.02)) + 1)

    curves = {s: {"error": [], "uncertainty": []} for s in strategies}
    stops = {s: [] for s in strategies}
    cycles = []
    raw_runs = []
    full_p, full_a, full_s = [], [], []
    for seed in seeds:
        pool, test = split(seqs, by_item, X, seed)
        if args.quick:  # a smaller pool: every third chromosome
            pool = dict(list(pool.items())[::3])
        t = time.perf_counter()
        if not args.quick:
            full_p.append(full_label_error(pool, by_item, test, learner="perceptron"))
        full_a.append(full_label_error(pool, by_item, test, learner="averaged perceptron"))
        ssvm_note = ""
        if not args.quick and (seed == seeds[0] or args.ssvm_every_seed):
            full_s.append(full_label_error(pool, by_item, test, learner="ssvm"))
            ssvm_note = f", SSVM {full_s[-1]:.3f}"
        plain_note = f", plain perceptron {full_p[-1]:.3f}" if not args.quick else ""
        print(f"  seed {seed} full-label errors: averaged perceptron {full_a[-1]:.3f}{plain_note}{ssvm_note} "
              f"({time.perf_counter() - t:.1f} s)")
        for strategy in strategies:
            t = time.perf_counter()
            res = run_curve(strategy, pool, by_item, test, seed, batch=args.batch, max_fraction=max_fraction,
                            window=args.window, threshold=args.threshold)
            curves[strategy]["error"].append(np.interp(grid, res["fraction"], res["error"]))
            curves[strategy]["uncertainty"].append(np.interp(grid, res["fraction"], res["uncertainty"]))
            stops[strategy].append(res["stop_fraction"])
            raw_runs.append({"strategy": strategy, "seed": seed, "pool": len(pool),
                             "fraction": res["fraction"].tolist(), "error": res["error"].tolist(),
                             "uncertainty": [None if not np.isfinite(v) else float(v) for v in res["uncertainty"]]})
            cycles.extend(res["cycle_s"])
            print(f"  seed {seed} {strategy:>13}: pool {len(pool)} parts, error "
                  f"{res['error'][0]:.3f} -> {res['error'][-1]:.3f}, stop at "
                  f"{res['stop_fraction'] if res['stop_fraction'] is not None else '-'}, "
                  f"{time.perf_counter() - t:.1f} s")
    for s in strategies:
        curves[s] = {k: np.array(v) for k, v in curves[s].items()}
    full_err = float(np.mean(full_a))
    level = 1.1 * full_err

    rows = []
    reach = {}
    print()
    print(f"full-label test error: averaged perceptron {full_err:.4f}" +
          (f", plain perceptron {np.mean(full_p):.4f}" if full_p else "") +
          f" (mean over {len(seeds)} seeds)" +
          (f"; SSVM {np.mean(full_s):.4f} (mean over {len(full_s)} seed(s))" if full_s else ""))
    print(f"{'strategy':>14} {'err@0':>7} {'err@10%':>8} {'err@20%':>8} {'err@end':>8} {'reach':>7} "
          f"{'flatten':>8} {'stop(med)':>9}")
    stop_med = {}
    for s in strategies:
        m = curves[s]["error"].mean(0)
        reach[s] = first_reach(grid, m, level)
        flat = flatten_point(grid, m, 0.1)
        st = [v for v in stops[s] if v is not None]
        stop_med[s] = float(np.median(st)) if st else None
        at = lambda f: float(np.interp(f, grid, m))  # noqa: E731
        print(f"{s:>14} {m[0]:7.3f} {at(0.1):8.3f} {at(0.2):8.3f} {m[-1]:8.3f} "
              f"{'-' if reach[s] is None else f'{reach[s]:.2f}':>7} {flat:8.2f} "
              f"{'-' if stop_med[s] is None else f'{stop_med[s]:.2f}':>9}  (stops fired {len(st)}/{len(seeds)})")
        rows.append(row(f"cgh {s}: fraction of pool to reach full-label error +10%",
                        reach[s] if reach[s] is not None else np.inf, "fraction of parts",
                        0.2 if s == "best-vs-2nd" else None, "lower",
                        {"name": "full-label error (averaged perceptron)", "value": full_err}))
        rows.append(row(f"cgh {s}: test error at 20% of the pool", at(min(0.2, grid[-1])), "error rate", None,
                        "lower", {"name": "full-label error (averaged perceptron)", "value": full_err}))
        if s != "random":
            gap = None if stop_med[s] is None else abs(stop_med[s] - flat)
            rows.append(row(f"cgh {s}: |stopping signal - curve flattens|", gap if gap is not None else np.inf,
                            "fraction of pool", 0.1, "lower", {"name": "flatten point", "value": flat}))
    flats = {s: flatten_point(grid, curves[s]["error"].mean(0), 0.1) for s in strategies}
    print("stopping sensitivity (relative η; recomputed from the recorded histories): "
          "strategy window threshold fired median-stop |stop-flatten|")
    for strategy, w, th, n_fired, n_runs, med, gap in stopping_sensitivity(raw_runs, flats):
        print(f"  {strategy:>13} W={w:<3d} θ={th:<6g} fired {n_fired}/{n_runs}  stop "
              f"{'-' if med is None else f'{med:.2f}'}  gap {'-' if gap is None else f'{gap:.2f}'}")
    if "random" in reach and "best-vs-2nd" in reach:
        r_rand = reach["random"] if reach["random"] is not None else grid[-1] + 0.02
        r_b2 = reach["best-vs-2nd"]
        ratio = np.inf if r_b2 in (None, 0.0) else r_rand / r_b2
        if r_b2 is None:
            ratio = np.nan
        lower_bound = " (random never reached it: ratio is a lower bound)" if reach["random"] is None else ""
        print(f"labels random / best-vs-2nd to reach {level:.4f}: {ratio:.2f}{lower_bound}")
        rows.append(row("cgh: labels needed random / best-vs-2nd" + (" (lower bound)" if lower_bound else ""),
                        ratio, "ratio", 1.5, "higher", None))
    if full_s:
        rows.append(row(f"cgh: full-label test error, SSVM ({len(full_s)} seed(s))", float(np.mean(full_s)),
                        "error rate", None, "lower",
                        {"name": "averaged perceptron", "value": full_err}))

    n_parts = 120 if args.quick else 300
    cyc, cpu, ssvm_cyc, n, n_probes, n_lab = time_query_cycle(seqs, by_item, X, n_parts=n_parts, n_labelled=30,
                                                         repeat=3 if args.quick else 5,
                                                         with_ssvm=not args.quick)
    print(f"query cycle, {n} parts ({n_probes} probes), {n_lab} labelled chromosomes: perceptron pass + "
          f"best-vs-2nd uncertainty {cyc * 1000:.0f} ms wall, {cpu * 1000:.0f} ms CPU (best of N); "
          + ("" if ssvm_cyc is None else f"SSVM refit + uncertainty {ssvm_cyc * 1000:.0f} ms"))
    rows.append(row(f"cgh query cycle: perceptron update + uncertainty of {n} parts", cyc, "s", 0.5, "lower",
                    None if ssvm_cyc is None else {"name": "SSVM refit + uncertainty", "value": ssvm_cyc}))
    rows.append(row(f"cgh query cycle: same, process CPU time", cpu, "s", 0.5, "lower",
                    {"name": "wall time", "value": cyc}))
    if cycles:
        rows.append(row("cgh replay: median query cycle during the replays", float(np.median(cycles)), "s", None,
                        "lower", None))
    print("audio-to-score (Vienna 4x22) replay: not implemented in this benchmark (see the report)")

    RESULTS.mkdir(parents=True, exist_ok=True)
    title = f"aCGH neuroblastoma, {len(seeds)} seeds, batch {args.batch}"
    plot(RESULTS / "active_cgh.png", grid, curves, full_err, stop_med, title)
    curve_json = {s: {"fraction": grid.tolist(), "error_mean": curves[s]["error"].mean(0).tolist(),
                      "error_std": curves[s]["error"].std(0).tolist(),
                      "uncertainty_mean": np.nanmean(curves[s]["uncertainty"], 0).tolist(),
                      "stop_fractions": stops[s]} for s in strategies}
    curve_json["runs"] = raw_runs
    curve_json["full_label_error"] = {"averaged perceptron": full_a, "perceptron": full_p, "ssvm": full_s}
    (RESULTS / "active_cgh_curves.json").write_text(json.dumps(curve_json, indent=1))
    (RESULTS / "active.json").write_text(json.dumps(rows, indent=1))
    print()
    print(f"{'case':<70} {'value':>10} {'unit':<18} {'target':>7} meets")
    for r in rows:
        v = "-" if r["value"] is None else f"{r['value']:.4g}"
        print(f"{r['case']:<70} {v:>10} {r['unit']:<18} {str(r['target']):>7} {r['meets_target']}")
    load = os.getloadavg()
    print(f"load average at end: {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}; total {time.perf_counter() - t0:.0f} s")


if __name__ == "__main__":
    main()
