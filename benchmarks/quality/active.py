"""Active learning replayed offline on real aCGH data: learning curves per strategy, stopping, speed.

Usage: ``python -m benchmarks.quality.active [--quick] [--seeds 5] [--data PATH] [--model penalty|metric|recipe] [--batch 4]
[--refit-every 8] [--max-fraction 1.0] [--strategies ...] [--n-jobs 2] [--pool all|rare] [--scoring-only]
[--calibration-seeds 1] [--first-seed 0] [--query-margin decoder|output]
[--metric-refit learn|anchor|keep-x1.5] [--balance-platforms] [--density-weight BETA]``

An annotator is simulated from the neuroblastoma expert labels
(``cgh/neuroblastoma/profiles_small.csv.gz`` + ``annotations_small.csv``): profiles are split
into a training pool (2/3) and test profiles (1/3) by profile id (seed = split and tie-breaking);
a part is one labelled chromosome, and the oracle reveals the expert region labels of a queried
chromosome. Test error is the labelled-region error on the test profiles (0breakpoints region with
>= 1 predicted change: FP; 1breakpoint region with 0: FN, with >= 2: FP) / number of test regions.

Model (``--model``):

* ``penalty`` (default, :class:`benchmarks.research.penalty_adapter.PenaltyPathAdapter`): the per-sequence
  log-penalty of least-squares segmentation of the raw logratio, learned by max-margin interval
  regression from the labelled chromosomes (combined strategy: passive-aggressive steps every
  label, the regularised regression every ``--refit-every`` labelled parts and at the end). With one
  penalty law for every chromosome the error plateaus at the tuned-penalty level (~0.18) after a
  few labels whatever the strategy; a per-sequence penalty keeps learning (~0.11 with every label).
* ``metric``: the learned diagonal metric of ``SegmentationModel`` with one penalty law (the
  earlier replay; the full-label references are the averaged perceptron and an SSVM).
* ``recipe`` (:class:`benchmarks.research.recipe_adapter.RecipeAdapter`): the app engine's aCGH learner, which keeps
  learning with labels (9.2 % CV error with every label in ``quality_cgh.py``): averaged
  passive-aggressive perceptron steps with each chromosome's penalty factor, and the aCGH recipe
  (metric + per-platform penalty laws + change pruning) refitted every ``--refit-every`` = 8 labels (the
  engine's ``RECIPE_MIN_ITEMS``, fixed before any run, not tuned); the test error is the latest recipe's.
  Its refits cost seconds, so by default it runs random vs best-vs-2nd to half the pool, and it also
  reports what each strategy asks for (share of the queried chromosomes that the start / the full-label
  model gets wrong, regions per chromosome, platform, length). The full-label reference is the recipe on
  every pool label.

Reported: the fraction of the pool each strategy needs to come within 10 % (relative) of the
full-label error (the same model fitted on every pool label), the ratio random / best-vs-2nd
(on the mean curves, and per seed against that seed's own full-label error; curves on a 0.5 %
grid), the stopping signal (Lou eq. 1.8: relative η of a mean uncertainty over a window W; W and
the threshold are chosen on the first ``--calibration-seeds`` seeds (default: seed 0) and applied
unchanged to the other seeds) on three signals -- the mean uncertainty of the unlabelled parts (Lou
as written), of every part scored without labels (a fixed stopping set), and of that set read once
per regularised refit (``ActiveLoop(stop_on="refit")``; W counted in refits) -- against the point
where each run's own curve flattens (first fraction
where the non-increasing fit of its test error is within 10 % of its final value; the older rows
use "raw error stays within 10 % of its final value"), and one query
cycle on a 300-chromosome pool for both models (the learned-metric one on 1 and ``--n-jobs``
threads, checking that threads give identical uncertainties). Writes
``benchmarks/results/active.json``, ``benchmarks/results/active_cgh_curves.json`` and the curves
(mean ± std over seeds) to ``benchmarks/results/active_cgh.png`` (``active_<model>_rare...`` for
``--model metric`` / ``--pool rare``).

``--query-margin output`` (recipe model): best-vs-2nd scores the margin of the recipe's *pruned*
prediction (:class:`marginalia.active.segmentation_adapter.OutputPruning`) instead of the decoder's best
segmentation. ``--balance-platforms``: each best-vs-2nd query goes to the array platform furthest below
its share of the pool; ``--density-weight BETA`` multiplies each best-vs-2nd uncertainty by the chromosome's
information density (mean similarity to the unlabelled pool) to the power BETA. What these options,
``--refit-every`` and the recipe's versions measured (figures, seeds, stopping) is in ``docs/research/``.

``--pool rare``: the pool keeps the chromosomes the unlabelled start already segments without
label error and only ``--rare-share`` of the others (chromosomes that would correct the model are
rare). ``--scoring-only``: time the engine's part scorer (count runner-up, warm) after each
perceptron step on a synthetic 25 x 5,000-probe project, against exact decodes and the old
unrestricted second best (``benchmarks/results/active_scoring.json``).
"""

from __future__ import annotations

import argparse
import json
import os
import pathlib
import time
import warnings

import numpy as np  # noqa: E402

from benchmarks._common import ROOT, format_row  # noqa: E402
from benchmarks._common import result_row as row  # noqa: E402
from benchmarks.research.active_loop import ActiveLoop, PartPool  # noqa: E402
from benchmarks.research.penalty_adapter import PenaltyPathAdapter  # noqa: E402
from benchmarks.research.recipe_adapter import QUERY_MARGINS, RETRAIN_POLICIES, RecipeAdapter  # noqa: E402
from marginalia.active.parts import parts_for_items  # noqa: E402
from marginalia.active.segmentation_adapter import SegmentationAdapter  # noqa: E402
from marginalia.active.stopping import StoppingCriterion  # noqa: E402
from marginalia.active.uncertainty import STRATEGIES, pool_uncertainties, select_batch  # noqa: E402
from marginalia.cgh.recipe import density_class  # noqa: E402
from marginalia.io.cgh import read_annotations, read_profiles  # noqa: E402
from marginalia.metrics import RegionErrors, region_errors  # noqa: E402
from marginalia.models.segmentation import SegmentationModel  # noqa: E402
from marginalia.types import Query  # noqa: E402

RESULTS = ROOT / "benchmarks" / "results"


def features_fn():
    """The app's aCGH features (logratio + local Hermite moments) when the engine offers them, else raw."""
    try:
        from marginalia.tasks.segmentation import cgh_features
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
    every = list(seqs)
    seqs = [s for s in seqs if s.name in by_item]
    return seqs, by_item, every


def split(seqs, by_item, X, seed):
    pids = sorted({s.meta["profile_id"] for s in seqs}, key=str)
    rng = np.random.default_rng(seed)
    rng.shuffle(pids)
    test_p = set(pids[: len(pids) // 3])
    pool = {s.name: X[s.name] for s in seqs if s.meta["profile_id"] not in test_p}
    test = [(X[s.name], by_item[s.name]) for s in seqs if s.meta["profile_id"] in test_p]
    return pool, test


# ----------------------------------------------------------------- curves


def rare_pool(pool, by_item, seed, share):
    """A pool where the chromosomes that would correct the starting model are rare.

    "Correcting" chromosomes: those on which the penalty model's unlabelled start (the BIC-like law)
    makes at least one label error. Every other pool chromosome is kept, and a seeded random subset of
    the correcting ones so that they are ``share`` of the pool (the test profiles are not touched)."""
    probe = PenaltyPathAdapter()
    probe.initialize(pool)
    wrong = [k for k, x in pool.items() if region_errors(by_item[k], probe.predict(x)).errors > 0]
    right = [k for k in pool if k not in set(wrong)]
    n_keep = max(1, int(round(share * len(right) / (1 - share))))
    rng = np.random.default_rng(10_000 + seed)
    keep = set(rng.choice(wrong, size=min(n_keep, len(wrong)), replace=False).tolist()) | set(right)
    print(f"  seed {seed} rare pool: {len(right)} chromosomes the start segments without error + "
          f"{len(keep) - len(right)} of the {len(wrong)} it gets wrong")
    return {k: v for k, v in pool.items() if k in keep}


def make_task(model_name, query_margin="decoder", metric_refit="learn"):
    if model_name == "penalty":
        return PenaltyPathAdapter()
    if model_name == "recipe":
        return RecipeAdapter(query_margin=query_margin, metric_refit=metric_refit)
    return SegmentationAdapter(SegmentationModel(metric="diagonal"))


class _ReweightedLoop(ActiveLoop):
    """An active session whose uncertainty questions rank the pool by ``_selection_scores(q)`` instead of the
    uncertainties ``q`` themselves (the queries still report ``q``). Random questions are unchanged."""

    def _selection_scores(self, q):  # pragma: no cover - abstract
        raise NotImplementedError

    def next_queries(self, n=None):
        if self.strategy == "random":
            return super().next_queries(n)
        n = self.batch_size if n is None else n
        q = self._pool_uncertainty()
        chosen = select_batch(self._unlabelled, self._selection_scores(q), n, suppress=self.suppress,
                              random_state=self._rng)
        return [Query(item_id=self._unlabelled[i].item_id, start=self._unlabelled[i].start,
                      stop=self._unlabelled[i].stop, uncertainty=float(q[i]), strategy=self.strategy, rank=r)
                for r, i in enumerate(chosen)]


class PlatformBalancedLoop(_ReweightedLoop):
    """An active session whose uncertainty questions keep the labelled chromosomes' platform mix at the pool's.

    Each question goes to the platform (``platform_of[item_id]``) furthest below its share of the pool
    among the labelled parts (ties: the larger share), then to that platform's most uncertain part.
    ``--balance-platforms``; measured, not adopted (module docstring).
    """

    def __init__(self, *args, platform_of, **kwargs):
        self.platform_of = platform_of
        super().__init__(*args, **kwargs)

    def _selection_scores(self, q):
        every = [self.platform_of[p.item_id] for p in self.pool.parts]
        share = {g: every.count(g) / len(every) for g in set(every)}
        labelled = [self.platform_of[p.item_id] for p in self.labelled_parts_]
        open_ = np.array([self.platform_of[p.item_id] for p in self._unlabelled])
        deficit = {g: share[g] * (len(labelled) + 1) - labelled.count(g) for g in share if g in set(open_)}
        chosen_platform = max(deficit, key=lambda g: (deficit[g], share[g]))
        return np.where(open_ == chosen_platform, q, -np.inf)


class DensityWeightedLoop(_ReweightedLoop):
    """An active session whose uncertainty questions favour chromosomes typical of the unlabelled pool.

    Information density (Settles & Craven 2008): a part's uncertainty is multiplied by its mean similarity
    to the unlabelled parts, ``exp(-d² / 2h²)`` in standardised ``features_of[item_id]`` (the penalty law's
    sequence features plus the platform), ``h`` the median pairwise distance, raised to ``beta``.
    ``--density-weight BETA``; measured, not adopted (``docs/research/``).
    """

    def __init__(self, *args, features_of, beta, **kwargs):
        self.features_of, self.beta = features_of, float(beta)
        super().__init__(*args, **kwargs)

    def _selection_scores(self, q):
        F = np.array([self.features_of[p.item_id] for p in self._unlabelled], dtype=float)
        F = (F - F.mean(0)) / np.maximum(F.std(0), 1e-9)
        d2 = ((F[:, None, :] - F[None, :, :]) ** 2).sum(-1)
        h2 = max(float(np.median(d2[np.triu_indices(len(F), 1)])), 1e-9) if len(F) > 1 else 1.0
        density = np.exp(-d2 / (2 * h2)).mean(1)
        return q * density ** self.beta


def run_curve(strategy, pool, by_item, test, seed, *, batch, max_fraction, window, threshold, task, learner,
              refit_every, platform_of=None, density=None):
    stopping = StoppingCriterion(window=window, threshold=threshold, relative=True)
    session_kind, extra = (ActiveLoop, {}) if platform_of is None else \
        (PlatformBalancedLoop, {"platform_of": platform_of})
    if density is not None:
        session_kind, extra = DensityWeightedLoop, {"features_of": density[0], "beta": density[1]}
    session = session_kind(pool, task, lambda q, p: by_item[p.item_id], strategy=strategy, batch_size=batch,
                           held_out=test, stopping=stopping, random_state=seed, learner=learner,
                           refit_every=refit_every, stopping_set="pool", **extra)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        session.run(max_fraction=max_fraction)
        if learner == "combined" and not session.unlabelled:
            session.finish()  # the final regularised fit on every label: the curve ends at the full-label model
    frac = np.array([r["fraction_parts"] for r in session.curve_])
    err = np.array([r["held_out_loss"] for r in session.curve_])
    unc = np.array([np.nan if r["mean_uncertainty"] is None else r["mean_uncertainty"] for r in session.curve_])
    unc_pool = np.array([np.nan if r["mean_uncertainty_pool"] is None else r["mean_uncertainty_pool"]
                         for r in session.curve_])
    refit = [bool(r["refit"]) and not r["final"] for r in session.curve_]
    fired = None if stopping.fired_at_ is None else float(frac[stopping.fired_at_ - 1])
    cycle = [r["update_s"] + r["score_s"] for r in session.curve_[1:]]
    return {"queried": [p.item_id for p in session.labelled_parts_], "fraction": frac, "error": err,
            "uncertainty": unc, "uncertainty_pool": unc_pool, "refit": refit, "stop_fraction": fired,
            "cycle_s": cycle}


def full_label_error_penalty(task, pool, by_item, test):
    """Every pool label: the task's regularised fit (penalty model: the max-margin interval regression of the
    per-sequence log-penalty; recipe model: the aCGH recipe)."""
    task.initialize(pool)
    task.refit(list(pool.values()), [by_item[k] for k in pool])
    return task.evaluate(test)


def label_error_counts(task, pool, by_item, *, fit):
    """``{chromosome: (label errors, regions)}`` of the task's prediction on every pool chromosome: the start
    model (``fit=False``: the task is re-initialised on the pool first) or the current, fitted one."""
    if not fit:
        task.initialize(pool)
    out = {}
    for k, x in pool.items():
        err = region_errors(by_item[k], task.predict(x))
        out[k] = (err.errors, err.n_labels)
    return out


def query_profile(raw_runs, strategies, start_errs, full_errs, seq_by_name, fractions):
    """What each strategy asks for: over its first queries (each fraction of the pool), the share of queried
    chromosomes the start model / the full-label model gets wrong (>= 1 label error: labels that carry a
    correction), the mean number of region labels, the share of high-density arrays and the mean length,
    against the same figures over the whole pool. Returns printable lines and a JSON-ready dict."""
    from marginalia.cgh.recipe import density_class

    def stats(names, k):
        se, fe = start_errs[k], full_errs[k]
        return {"start_wrong": float(np.mean([se[n][0] > 0 for n in names])),
                "full_wrong": float(np.mean([fe[n][0] > 0 for n in names])),
                "regions": float(np.mean([se[n][1] for n in names])),
                "high_density": float(np.mean([density_class(seq_by_name[n]) == "high" for n in names])),
                "probes": float(np.mean([seq_by_name[n].values.shape[0] for n in names]))}

    out, lines = {}, []
    pools = [stats(list(start_errs[k]), k) for k in range(len(start_errs))]
    out["pool"] = {m: float(np.mean([p[m] for p in pools])) for m in pools[0]}
    for s in strategies:
        for f in fractions:
            per = []
            for r in raw_runs:
                if r["strategy"] != s or r["seed"] >= len(start_errs):
                    continue
                n_q = max(1, int(round(f * r["pool"])))
                if len(r["queried"]) >= n_q:
                    per.append(stats(r["queried"][:n_q], r["seed"]))
            if per:
                out[f"{s}@{f:.2f}"] = {m: float(np.mean([p[m] for p in per])) for m in per[0]}
    for key, v in out.items():
        lines.append(f"  {key:>20}: start model wrong on {v['start_wrong']:.0%}, full-label model wrong on "
                     f"{v['full_wrong']:.0%}, {v['regions']:.2f} regions/chromosome, {v['high_density']:.0%} "
                     f"high-density, {v['probes']:.0f} probes")
    return lines, out


def full_label_error(pool, by_item, test, *, learner):
    # "completion": the SSVM's loss-augmented decoding of a label completion, the setting these
    # curves were measured with
    model = SegmentationModel(metric="diagonal", partial_loss="completion")
    Xs = list(pool.values())
    Ys = [by_item[k] for k in pool]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if learner in ("perceptron", "averaged perceptron"):
            from marginalia.learners.perceptron import StructuredPerceptron
            model.initial_w(Xs)
            est = StructuredPerceptron(model, max_iter=5, averaged=learner == "averaged perceptron",
                                       random_state=0).fit(Xs, Ys)
        else:
            from marginalia.learners.ssvm import SSVM
            est = SSVM(model, max_iter=20, random_state=0).fit(Xs, Ys)
    total = sum((region_errors(labels, model.decode(X, est.w_)) for X, labels in test), RegionErrors())
    return total.errors / total.n_labels


def first_reach(grid, curve, level):
    hit = np.flatnonzero(curve <= level + 1e-12)
    return None if hit.size == 0 else float(grid[hit[0]])


def flatten_point(grid, curve, tol):
    """First fraction after which the curve stays within ``tol`` (relative) of its final value."""
    final = curve[-1]
    band = tol * max(final, 1e-9) + 1e-9
    outside = np.flatnonzero(np.abs(curve - final) > band)
    return float(grid[0]) if outside.size == 0 else float(grid[min(outside[-1] + 1, len(grid) - 1)])


def isotonic_decreasing(y) -> np.ndarray:
    """Least-squares non-increasing fit of ``y`` (pool-adjacent-violators)."""
    vals, counts = [], []
    for v in np.asarray(y, dtype=np.float64):
        vals.append(v)
        counts.append(1)
        while len(vals) > 1 and vals[-2] < vals[-1]:
            n = counts[-2] + counts[-1]
            vals[-2] = (vals[-2] * counts[-2] + vals[-1] * counts[-1]) / n
            counts[-2] = n
            vals.pop()
            counts.pop()
    return np.repeat(vals, counts)


def flatten_point_monotone(fraction, error, tol=0.1):
    """Where one run's curve flattens, read on its non-increasing fit (a learning curve's expected shape).

    A single run's test error jumps by a region or two from label to label, so "stays within 10 % of its
    final value" on the raw curve is decided by the last small bump. The isotonic (non-increasing) fit
    averages those bumps out; the curve has flattened at the first fraction where the fit is within
    ``tol`` (relative) of its final value. Fixed before the stopping signal was compared with it."""
    fit = isotonic_decreasing(error)
    final = fit[-1]
    inside = np.flatnonzero(fit <= final * (1 + tol) + 1e-12)
    return float(np.asarray(fraction)[inside[0]])


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


def time_query_cycle(seqs, by_item, X, *, n_parts, n_labelled, repeat, with_ssvm=True, n_jobs=1):
    """One cycle on a pool of ``n_parts`` parts (windows of <= 1000 probes of the labelled chromosomes) under
    the learned-metric model: a perceptron pass over the labelled items plus the best-vs-2nd uncertainty of
    every part, scored on ``n_jobs`` threads; reference: a full SSVM refit instead of the perceptron pass.

    Returns best wall, best CPU (process), SSVM cycle, #parts, #probes, #labelled items and the uncertainties
    of the last repeat (to check that threads do not change them)."""
    items = {s.name: X[s.name] for s in seqs}
    parts = parts_for_items(items, window=1000)[:n_parts]
    pool = PartPool(items, parts)
    labelled = [p for p in parts if p.kind == "chromosome"][:n_labelled]
    task = SegmentationAdapter(SegmentationModel(metric="diagonal"))
    session = ActiveLoop(pool, task, lambda q, p: by_item[p.item_id], strategy="best-vs-2nd",
                            learner="combined", refit_every=10 ** 9, random_state=0, n_jobs=n_jobs)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        session.teach([(p, by_item[p.item_id]) for p in labelled[:-1]])
        ids, data, labels = session._labelled_data()
        w0 = task.w_.copy()
        best_cycle = best_cpu = np.inf
        split = [np.inf] * 4  # perceptron wall, CPU; scoring wall, CPU
        for _ in range(repeat):
            task.clear_cache()  # time the full recompute, as after a perceptron update that changed w
            task.w_ = w0.copy()
            task._perceptron.w_ = w0.copy()
            t0, c0 = time.perf_counter(), time.process_time()
            for x, lab in zip(data, labels):
                task.perceptron_step(x, lab)
            t1, c1 = time.perf_counter(), time.process_time()
            session._uncertainty = None
            q = session._pool_uncertainty()
            t2, c2 = time.perf_counter(), time.process_time()
            best_cycle = min(best_cycle, t2 - t0)
            best_cpu = min(best_cpu, c2 - c0)
            split = [min(a, b) for a, b in zip(split, (t1 - t0, c1 - c0, t2 - t1, c2 - c1))]
        print(f"    ({n_jobs} thread(s)) best perceptron pass {split[0] * 1000:.0f} ms wall / {split[1] * 1000:.0f} ms "
              f"CPU; best scoring of the pool {split[2] * 1000:.0f} ms wall / {split[3] * 1000:.0f} ms CPU")
        task.clear_cache()
        ssvm_cycle = None
        if with_ssvm:
            t0 = time.perf_counter()
            task.refit(data, labels)
            session._uncertainty = None
            session._pool_uncertainty()
            ssvm_cycle = time.perf_counter() - t0
    n_probes = sum(p.size for p in parts)
    return best_cycle, best_cpu, ssvm_cycle, len(parts), n_probes, len(data), np.array(q)


def time_penalty_cycle(seqs, by_item, *, n_parts, n_labelled, repeat):
    """One combined-strategy cycle of the per-sequence penalty model on a pool of ``n_parts`` parts (whole
    chromosomes, long ones cut into windows of <= 1000 probes, as for the metric model): a perceptron pass
    over the labelled items, the interval-regression refit, and the best-vs-2nd uncertainty of every part.
    The penalty paths are the parts' features: computed once when the pool is built (timed apart)."""
    items = {s.name: s.values[:, 0].copy() for s in seqs}
    parts = parts_for_items(items, window=1000)[:n_parts]
    items = {k: v for k, v in items.items() if any(p.item_id == k for p in parts)}
    labelled = [p for p in parts if p.kind == "chromosome"][:n_labelled]
    task = PenaltyPathAdapter()
    t0, c0 = time.perf_counter(), time.process_time()
    task.initialize(items)
    for p in parts:  # paths of whole items and of windows
        task.part_scores(items[p.item_id], p)
    pre_wall, pre_cpu = time.perf_counter() - t0, time.process_time() - c0
    session = ActiveLoop(PartPool(items, parts), task, lambda q, p: by_item[p.item_id],
                            strategy="best-vs-2nd", learner="combined", refit_every=10 ** 9, random_state=0)
    session.teach([(p, by_item[p.item_id]) for p in labelled])
    ids, data, labels = session._labelled_data()
    best_cycle = best_cpu = np.inf
    for _ in range(repeat):
        t0, c0 = time.perf_counter(), time.process_time()
        for x, lab in zip(data, labels):
            task.perceptron_step(x, lab)
        task.refit(data, labels)
        session._uncertainty = None
        session._pool_uncertainty()
        best_cycle = min(best_cycle, time.perf_counter() - t0)
        best_cpu = min(best_cpu, time.process_time() - c0)
    n_probes = sum(p.size for p in parts)
    return best_cycle, best_cpu, pre_wall, pre_cpu, len(parts), n_probes, len(data)


def time_recipe_cycle(all_seqs, by_item, *, n_parts, n_labelled, repeat, query_margin="decoder"):
    """The app engine's query cycle on ``n_parts`` whole chromosomes (``n_labelled`` of them labelled) under its
    aCGH model (:class:`benchmarks.research.recipe_adapter.RecipeAdapter`): after the recipe is fitted on the labelled ones
    (timed apart: the app retrains in the background), each cycle is one averaged passive-aggressive step on a
    labelled chromosome (the engine's update after a label) plus the best-vs-2nd uncertainty of every part
    with its labels and of the labelled parts without them (the fixed stopping set). Wall and process CPU per
    cycle (median, max over ``repeat`` x ``n_labelled`` cycles) and the first, cold scoring after the refit."""
    import dataclasses

    from marginalia.active.parts import Part
    labelled = [s for s in all_seqs if s.name in by_item][:n_labelled]
    rest = [s for s in all_seqs if s.name not in {x.name for x in labelled}][:n_parts - len(labelled)]
    # profiles_small has 233 chromosomes: the pool is filled up to n_parts with copies (own arrays, so every
    # copy is scored on its own, as a chromosome of another profile would be)
    copies = [dataclasses.replace(s, values=s.values.copy(), name=f"{s.name} (copy {i})")
              for i, s in enumerate((rest * (1 + n_parts // max(len(rest), 1)))[:max(0, n_parts - len(labelled)
                                                                                   - len(rest))])]
    items = {s.name: s for s in labelled + rest + copies}
    parts = [Part(k, 0, s.values.shape[0], "chromosome") for k, s in items.items()]
    task = RecipeAdapter(query_margin=query_margin)
    task.initialize(items)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        t0, c0 = time.perf_counter(), time.process_time()
        task.refit(labelled, [by_item[s.name] for s in labelled])
        refit = (time.perf_counter() - t0, time.process_time() - c0)
        lab = {s.name: by_item[s.name] for s in labelled}

        class _Scorer:
            def __init__(self, with_labels):
                self.with_labels = with_labels

            def part_scores(self, part):
                return task.part_scores(items[part.item_id], part,
                                        lab.get(part.item_id, []) if self.with_labels else [])

        def score():
            pool_uncertainties(parts, _Scorer(True), "best-vs-2nd")
            pool_uncertainties([p for p in parts if p.item_id in lab], _Scorer(False), "best-vs-2nd")

        t0, c0 = time.perf_counter(), time.process_time()
        score()
        cold = (time.perf_counter() - t0, time.process_time() - c0)
        walls, cpus, moved = [], [], []
        for _r in range(repeat):
            for s in labelled:
                w_before = task.w_.copy()
                t0, c0 = time.perf_counter(), time.process_time()
                task.perceptron_step(s, lab[s.name])
                score()
                walls.append(time.perf_counter() - t0)
                cpus.append(time.process_time() - c0)
                moved.append(not np.array_equal(w_before, task.w_))
    moved = np.array(moved)
    walls, cpus = np.array(walls), np.array(cpus)
    return {"wall_median": float(np.median(walls)), "wall_max": float(np.max(walls)),
            "cpu_median": float(np.median(cpus)), "n_cycles": int(moved.size), "n_moved": int(moved.sum()),
            "wall_median_moved": float(np.median(walls[moved])) if moved.any() else None,
            "cpu_median_moved": float(np.median(cpus[moved])) if moved.any() else None, "cold_wall": cold[0], "cold_cpu": cold[1],
            "refit_wall": refit[0], "refit_cpu": refit[1], "n_parts": len(parts),
            "n_probes": int(sum(p.size for p in parts)), "n_labelled": len(labelled)}


# ------------------------------------------------- engine-path part scores


def synthetic_project(n_items=25, n_probes=5000, seed=0):
    """aCGH-like chromosomes: piecewise-constant logratio (0-4 changes, some focal) plus noise, with the
    region labels an expert would give (0 changes between changes, exactly 1 around each)."""
    from marginalia.types import RegionLabel
    rng = np.random.default_rng(seed)
    xs, labels = [], []
    for i in range(n_items):
        cuts = np.sort(rng.choice(np.arange(100, n_probes - 100), rng.integers(0, 5), replace=False))
        mu = np.zeros(n_probes)
        for c in cuts:
            mu[c:] += rng.choice([-1, 1]) * rng.uniform(0.1, 0.8)
        if rng.random() < 0.3:  # a focal aberration of 5-30 probes
            a = int(rng.integers(200, n_probes - 300))
            mu[a:a + int(rng.integers(5, 30))] += rng.choice([-1, 1]) * 1.0
        xs.append(mu + rng.normal(0, 0.25, n_probes))
        ends = np.r_[0, np.flatnonzero(np.diff(mu) != 0) + 1, n_probes]
        labs = []
        for a, b in zip(ends[:-1], ends[1:]):
            if b - a > 20:
                labs.append(RegionLabel(item_id=f"c{i}", start=int(a) + 5, stop=int(b) - 5, kind="0"))
        for c in ends[1:-1]:
            labs.append(RegionLabel(item_id=f"c{i}", start=int(c) - 3, stop=int(c) + 3, kind="1"))
        labels.append([lab for lab in labs if lab.start >= 0 and lab.stop <= n_probes and lab.stop - lab.start >= 2])
    return xs, labels


def time_engine_part_scores(*, n_items=25, n_probes=5000, n_steps=12, seed=0):
    """The engine's part scorer (``segmentation_part_scores``, as ``core/tasks/segmentation.py`` calls it) on a
    project of ``n_items`` chromosomes: after each averaged passive-aggressive perceptron step on one labelled
    chromosome (the app's per-label update), the best-vs-2nd uncertainty of every chromosome, scored

    * ``count`` + warm (default): count runner-up, bests followed by local moves between exact decodes;
    * ``count`` exact: the same runner-up, every best decoded exactly;
    * ``any``: the unrestricted second best (the scorer before this change).

    Returns a dict of per-round CPU times (s), agreement of warm with exact, and uncertainty spreads."""
    from marginalia.active.parts import Part
    from marginalia.active.segmentation_adapter import segmentation_part_scores
    from marginalia.active.uncertainty import uncertainty_from_scores
    from marginalia.learners.perceptron import StructuredPerceptron
    try:
        from marginalia.cgh.features import pointwise_hermite_features as feats
    except ImportError:  # pragma: no cover - older engine
        from marginalia.tasks.segmentation import cgh_features as feats
    xs, labels = synthetic_project(n_items, n_probes, seed)
    Xs = [np.ascontiguousarray(feats(x)) for x in xs]
    model = SegmentationModel(metric="diagonal", loss="frobenius", partial_loss="completion", min_size=3)
    model.fit_scales(Xs)
    B = np.zeros(Xs[0].shape[1])
    B[0] = 1.0
    learner = StructuredPerceptron(model, averaged=True, step="pa", C=1.0)
    learner._start(model.join_w(B, 1.0 / len(B)))  # the engine's start: raw logratio, BIC-like penalty
    parts = [Part(f"c{i}", 0, n_probes, "chromosome") for i in range(n_items)]

    def score(mode):
        w = learner.w_.copy()
        c0 = time.process_time()
        out = [segmentation_part_scores(model, w, X, p, [], runner_up="any" if mode == "any" else "count",
                                        warm=mode == "warm") for X, p in zip(Xs, parts)]
        return time.process_time() - c0, out

    score("warm")  # compile, and the first exact decodes of every part (the pool's cold start)
    cpu = {"warm": [], "exact": [], "any": []}
    agree = []
    q_diff = []
    top_same = []
    q_last = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for step in range(n_steps):
            i = step % n_items
            learner.partial_fit(Xs[i], labels[i])
            res = {}
            for mode in ("warm", "exact") + (("any",) if step % 4 == 0 else ()):
                t, sc = score(mode)
                cpu[mode].append(t)
                res[mode] = sc
            agree.append(np.mean([abs(a.best - b.best) <= 1e-9 * abs(b.best) for a, b in
                                  zip(res["warm"], res["exact"])]))
            qw = np.array([uncertainty_from_scores(s, "best-vs-2nd") for s in res["warm"]])
            qe = np.array([uncertainty_from_scores(s, "best-vs-2nd") for s in res["exact"]])
            q_diff.append(float(np.abs(qw - qe).max()))
            top_same.append(bool(np.argmax(qw) == np.argmax(qe)))
            q_last["count"] = qe
            if "any" in res:
                q_last["any"] = np.array([uncertainty_from_scores(s, "best-vs-2nd") for s in res["any"]])
    return {"cpu": cpu, "agree": float(np.mean(agree)), "q_diff": float(np.max(q_diff)),
            "top_same": float(np.mean(top_same)), "q_count": q_last["count"], "q_any": q_last["any"],
            "n_items": n_items, "n_probes": n_probes, "n_steps": n_steps}


def engine_scoring_rows(quick: bool) -> list:
    load = os.getloadavg()
    res = time_engine_part_scores(n_steps=6 if quick else 16)
    cpu = {k: np.array(v) for k, v in res["cpu"].items()}
    n, T = res["n_items"], res["n_probes"]
    print(f"\nengine part scores after each perceptron step, {n} chromosomes x {T} probes, {res['n_steps']} steps "
          f"(load {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}), CPU per round:")
    for k, name in (("warm", "count runner-up, warm (default)"), ("exact", "count runner-up, exact decodes"),
                    ("any", "unrestricted second best (before)")):
        print(f"  {name:<36} median {np.median(cpu[k]) * 1000:7.1f} ms, p90 {np.percentile(cpu[k], 90) * 1000:7.1f} ms")
    late = cpu["warm"][len(cpu["warm"]) // 2:]
    print(f"  count runner-up, warm, second half of the rounds (the model moves less): median "
          f"{np.median(late) * 1000:.1f} ms, max {late.max() * 1000:.1f} ms")
    print(f"  warm vs exact: same best cost on {res['agree']:.1%} of parts, max |Δq| {res['q_diff']:.3f}, same top "
          f"query in {res['top_same']:.0%} of rounds")
    for k in ("count", "any"):
        q = res[f"q_{k}"]
        print(f"  uncertainties ({k:>5}): min {q.min():.3f} median {np.median(q):.3f} max {q.max():.3f}, "
              f"{np.mean(q > 0.99):.0%} of parts above 0.99")
    ref_any = {"name": "unrestricted second best (before), median CPU", "value": float(np.median(cpu["any"]))}
    return [
        row(f"engine part scores after a label, {n} x {T} probes: median CPU (count runner-up, warm)",
            float(np.median(cpu["warm"])), "s", 0.05, "lower", ref_any),
        row(f"engine part scores after a label, {n} x {T} probes: median CPU over the second half of the rounds "
            f"(count runner-up, warm)", float(np.median(late)), "s", 0.05, "lower", ref_any),
        row(f"engine part scores after a label, {n} x {T} probes: p90 CPU (count runner-up, warm)",
            float(np.percentile(cpu["warm"], 90)), "s", None, "lower",
            {"name": "exact decodes, median CPU", "value": float(np.median(cpu["exact"]))}),
        row("engine part scores: warm best == exact best (share of parts)", res["agree"], "fraction", None,
            "higher", None),
        row("engine part scores: share of parts with uncertainty > 0.99 (count runner-up)",
            float(np.mean(res["q_count"] > 0.99)), "fraction", None, "lower",
            {"name": "unrestricted second best (before)", "value": float(np.mean(res["q_any"] > 0.99))}),
    ]


# ---------------------------------------------------------------- stopping


def calibrate_stopping(run, flat, windows, thresholds, signal="uncertainty"):
    """The (window, threshold) whose stop is nearest ``flat`` on one run, or on average over several (``run`` and
    ``flat`` lists; a run that never fires counts as infinitely far). Ties: the smallest window, then the largest
    threshold, i.e. the earliest-firing setting. Returns (gap, window, threshold, stop of the first run)."""
    runs, flats = (run, flat) if isinstance(run, list) else ([run], [flat])
    best = None
    for w in windows:
        for th in sorted(thresholds, reverse=True):
            stops = [stop_fraction(r["fraction"], r[signal], w, th) for r in runs]
            gap = float(np.mean([np.inf if st is None else abs(st - fl) for st, fl in zip(stops, flats)]))
            if best is None or gap < best[0] - 1e-12:
                best = (gap, w, th, stops[0])
    return best


SIGNALS = {"uncertainty": "unlabelled parts (Lou eq. 1.8 as written)",
           "uncertainty_pool": "every part, without labels (fixed stopping set)",
           "uncertainty_pool@refit": "fixed stopping set, one value per refit"}
#: windows tried for the per-refit signal, in refits (the per-label signals use ``windows``, in labels)
REFIT_WINDOWS = (2, 3, 4, 5, 6)
#: and thresholds: a refit moves the mean uncertainty more than a perceptron step
REFIT_THRESHOLDS = (1e-3, 2e-3, 5e-3, 1e-2, 2e-2, 5e-2)


def signal_run(run, signal):
    """``run`` as the stopping criterion sees ``signal``: every row, or (``...@refit``) the rows that ended in a
    regularised refit (what ``ActiveLoop(stop_on="refit")`` feeds it). None when the run has no refit flags."""
    if not signal.endswith("@refit"):
        return run
    if not run.get("refit"):
        return None
    keep = [i for i, f in enumerate(run["refit"]) if f]
    base = signal[: -len("@refit")]
    return {"fraction": [run["fraction"][i] for i in keep], signal: [run[base][i] for i in keep]}


def per_run_stopping(raw_runs, strategies, windows, thresholds, tol=0.1, n_calibration=1):
    """Per-run |stop - flatten| for each stopping signal, (W, θ) chosen on the first ``n_calibration`` seeds'
    runs of each strategy (least mean gap) and reported on the others.

    Flatten is :func:`flatten_point_monotone` of each run's own curve. Returns rows and a summary dict
    ``{(strategy, signal): {"window", "threshold", "stops", "flats", "gaps"}}`` for the reported seeds."""
    rows, out = [], {}
    k = n_calibration
    cal_name = "seed 0" if k == 1 else f"seeds 0..{k - 1}"
    print("\nstopping per run: flatten = first fraction where the run's non-increasing fit is within 10 % of its "
          f"final value; (W, θ) chosen on {cal_name}, applied unchanged to seeds {k}..")
    for signal, name in SIGNALS.items():
        for strategy in strategies:
            if strategy == "random" and signal == "uncertainty":
                continue  # random's draws are not a model signal (Lou excludes it too)
            runs = sorted([r for r in raw_runs if r["strategy"] == strategy], key=lambda r: r["seed"])
            seen = [signal_run(r, signal) for r in runs]
            if len(runs) <= k or any(v is None for v in seen):
                continue
            flats_cal = [flatten_point_monotone(r["fraction"], r["error"], tol) for r in runs[:k]]
            flat0 = flats_cal[0]
            at_refits = signal.endswith("@refit")
            _, w, th, st0 = calibrate_stopping(seen[:k], flats_cal, REFIT_WINDOWS if at_refits else windows,
                                               REFIT_THRESHOLDS if at_refits else thresholds, signal)
            stops = [stop_fraction(v["fraction"], v[signal], w, th) for v in seen[k:]]
            flats = [flatten_point_monotone(r["fraction"], r["error"], tol) for r in runs[k:]]
            gaps = [np.inf if st is None else abs(st - fl) for st, fl in zip(stops, flats)]
            within = float(np.mean([g <= 0.1 + 1e-12 for g in gaps]))
            out[(strategy, signal)] = {"window": w, "threshold": th, "stops": stops, "flats": flats, "gaps": gaps}
            print(f"  {strategy:>13} | {name:<48}: W={w:<2} θ={th:<6g} (seed 0: stop {st0}, flatten {flat0:.3f}); "
                  f"seeds {k}..: stop {['-' if v is None else round(v, 3) for v in stops]} flatten "
                  f"{[round(v, 3) for v in flats]} |gap| {[round(g, 3) for g in gaps]}")
            ref = {"name": "median flatten point of the runs", "value": float(np.median(flats))}
            w = f"{w} refits" if at_refits else w
            rows.append(row(f"cgh {strategy}, stopping on {name}: mean per-run |stop - flatten| (W={w}, θ={th:g} "
                            f"from {cal_name})", float(np.mean(gaps)), "fraction of pool", 0.1, "lower", ref))
            rows.append(row(f"cgh {strategy}, stopping on {name}: share of runs stopping within ±0.10 of their "
                            f"flatten point", within, "fraction of runs", 1.0, "higher", None))
    return rows, out


def plot(path, grid, curves, full_err, stops, title, full_name="averaged perceptron"):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, (ax, ax2) = plt.subplots(1, 2, figsize=(12, 4.5))
    for strategy, arr in curves.items():
        m, s = arr["error"].mean(0), arr["error"].std(0)
        line, = ax.plot(grid, m, label=strategy)
        ax.fill_between(grid, m - s, m + s, alpha=0.15, color=line.get_color())
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            mu = np.nanmean(arr["uncertainty"], 0)
        if strategy != "random":  # random's "uncertainty" is the uniform draw itself
            ax2.plot(grid, mu, color=line.get_color(), label=f"{strategy}: unlabelled parts")
        if "uncertainty_pool" in arr and len(arr["uncertainty_pool"]):
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                mp = np.nanmean(arr["uncertainty_pool"], 0)
            ax2.plot(grid, mp, color=line.get_color(), ls="--", lw=1,
                     label=f"{strategy}: every part (fixed set)")
        if stops.get(strategy) is not None:
            ax2.axvline(stops[strategy], color=line.get_color(), ls=":", lw=1)
    ax.axhline(full_err, color="k", ls="--", lw=1, label=f"full labels ({full_name})")
    ax.axhline(1.1 * full_err, color="k", ls=":", lw=1, label="full labels +10 %")
    ax.set_xlabel("fraction of the pool labelled")
    ax.set_ylabel("test labelled-region error")
    ax.set_title(title, fontsize=9)
    ax.legend(fontsize=8)
    ax2.set_xlabel("fraction of the pool labelled")
    ax2.set_ylabel("mean uncertainty of the unlabelled pool")
    ax2.set_title("average uncertainty; dotted: stopping signal (median over the seeds it is reported on)", fontsize=9)
    ax2.legend(fontsize=6)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="2 seeds, a smaller pool (under a minute)")
    ap.add_argument("--seeds", type=int, default=5)
    ap.add_argument("--first-seed", type=int, default=0,
                    help="seeds are first-seed .. first-seed + seeds - 1 (to split a long replay over processes)")
    ap.add_argument("--data", default=str(ROOT.parent / "shared" / "data"))
    ap.add_argument("--model", choices=("penalty", "metric", "recipe"), default="penalty",
                    help="penalty: per-sequence log-penalty learned by interval regression on the raw logratio "
                         "(default); metric: the learned diagonal metric with one penalty law (the old replay); "
                         "recipe: the app engine's aCGH learner (perceptron steps, the aCGH recipe every "
                         "--refit-every labels)")
    ap.add_argument("--learner", choices=("combined", "perceptron"), default="combined")
    ap.add_argument("--refit-every", type=int, default=None,
                    help="labelled parts between regularised refits (default 4; recipe: 8, the engine's "
                         "RECIPE_MIN_ITEMS, fixed before any run)")
    ap.add_argument("--query-margin", choices=QUERY_MARGINS, default="decoder",
                    help="recipe model: best-vs-2nd margin of the decoder's best segmentation (default) or of the "
                         "recipe's pruned prediction ('output')")
    ap.add_argument("--metric-refit", choices=RETRAIN_POLICIES, default="learn",
                    help="recipe model: how each refit gets its metric (benchmarks.research.recipe_adapter.retrain_metric_mode)")
    ap.add_argument("--calibration-seeds", type=int, default=1,
                    help="seeds whose runs choose the stopping window and threshold (per-run rows; the rest report)")
    ap.add_argument("--batch", type=int, default=1, help="parts queried per step (Lou Alg. 1.2: one)")
    ap.add_argument("--max-fraction", type=float, default=None,
                    help="stop each replay at this share of the pool (default 1.0 penalty, 0.5 metric)")
    ap.add_argument("--strategies", default=None,
                    help=f"comma-separated (default {','.join(STRATEGIES)}; recipe: random,best-vs-2nd)")
    ap.add_argument("--ssvm-every-seed", action="store_true",
                    help="metric model: fit the SSVM full-label reference on every seed (default: the first only)")
    ap.add_argument("--n-jobs", type=int, default=2, help="threads scoring the pool in the timed query cycle")
    ap.add_argument("--pool", choices=("all", "rare"), default="all",
                    help="rare: keep every pool chromosome the unlabelled starting model already segments without "
                         "label error, and only --rare-share of the pool from the others (penalty model only)")
    ap.add_argument("--rare-share", type=float, default=0.1)
    ap.add_argument("--density-weight", type=float, default=None, metavar="BETA",
                    help="uncertainty questions weighted by information density ** BETA (DensityWeightedLoop)")
    ap.add_argument("--balance-platforms", action="store_true",
                    help="uncertainty strategies ask in turn for the array platform furthest below its pool share "
                         "among the labelled chromosomes (measured, not adopted)")
    ap.add_argument("--scoring-only", action="store_true",
                    help="only time the engine's part scorer on a synthetic 25 x 5,000-probe project")
    args = ap.parse_args(argv)
    if args.scoring_only:
        rows = engine_scoring_rows(args.quick)
        RESULTS.mkdir(parents=True, exist_ok=True)
        (RESULTS / "active_scoring.json").write_text(json.dumps(rows, indent=1))
        for r in rows:
            print(format_row(r, width=100))
        return
    data_dir = pathlib.Path(args.data)
    seeds = list(range(args.first_seed, args.first_seed + (2 if args.quick else args.seeds)))
    if args.refit_every is None:
        args.refit_every = 8 if args.model == "recipe" else 4
    if args.strategies is None:
        args.strategies = "random,best-vs-2nd" if args.model == "recipe" else ",".join(STRATEGIES)
    strategies = [s for s in args.strategies.split(",") if s]
    load = os.getloadavg()
    print(f"load average at start: {load[0]:.2f} {load[1]:.2f} {load[2]:.2f} (2 cores shared)")

    t0 = time.perf_counter()
    seqs, by_item, all_seqs = load_cgh(data_dir)
    platform_of = {s.name: density_class(s) for s in seqs} if args.balance_platforms else None
    density = None
    if args.density_weight is not None:
        from marginalia.cgh.penalty_regression import sequence_features
        density = ({s.name: np.r_[sequence_features(s.values[:, 0]), float(density_class(s) == "high")]
                    for s in seqs}, args.density_weight)
    if args.model == "penalty":
        feat_name = "raw logratio (penalty paths, K <= 12)"
        X = {s.name: s.values[:, 0].copy() for s in seqs}
        task = make_task("penalty")  # one instance: initialize() resets the model, the paths stay cached
        c0 = time.process_time()
        task.precompute(X.values())
        print(f"penalty paths of {len(X)} chromosomes: {time.process_time() - c0:.1f} s CPU (once)")
    elif args.model == "recipe":
        feat_name = "logratio + point-wise Hermite (CghSegmenter.model_input)"
        X = {s.name: s for s in seqs}
        # one instance: initialize() resets the model, the features stay cached
        task = make_task("recipe", args.query_margin, args.metric_refit)
    else:
        feat_name, feat = features_fn()
        X = {s.name: feat(s) for s in seqs}
        task = None
    print(f"aCGH: {len(seqs)} labelled chromosomes of {len({s.meta['profile_id'] for s in seqs})} profiles, "
          f"model {args.model}, features {feat_name}, loaded in {time.perf_counter() - t0:.1f} s")
    max_fraction = args.max_fraction or (1.0 if args.model == "penalty" else 0.5)
    if args.quick and args.model in ("metric", "recipe"):
        max_fraction = min(max_fraction, 0.3)
    if args.quick and args.model == "penalty":  # the curves have flattened long before; keeps --quick under a minute
        max_fraction = min(max_fraction, 0.5)
    # a fine grid (0.5 % of the pool, under one label per step on ~150-part pools): reach fractions are
    # read at the label where they happen, not rounded up to the next 2 %
    grid = np.linspace(0, max_fraction, int(round(max_fraction / 0.005)) + 1)
    # the η settings tried on the calibration seed (seed 0); the others only apply the chosen one
    # (the recipe model moves by small perceptron steps between refits: its runs need the longer windows and
    # smaller thresholds, added before its 10-seed run)
    windows, thresholds = (4, 6, 8, 10, 15, 20, 30), (2e-4, 5e-4, 1e-3, 2e-3, 5e-3, 1e-2, 2e-2)

    curves = {s: {"error": [], "uncertainty": [], "uncertainty_pool": []} for s in strategies}
    cycles = []
    raw_runs = []
    full_p, full_a, full_s = [], [], []
    start_errs, full_errs = [], []  # recipe: label errors of the start / full-label model per pool chromosome
    full_name = {"penalty": "interval regression, every label", "recipe": "aCGH recipe, every label"}.get(
        args.model, "averaged perceptron")
    for seed in seeds:
        pool, test = split(seqs, by_item, X, seed)
        if args.quick:  # a smaller pool: every second chromosome
            pool = dict(list(pool.items())[::2])
        if args.pool == "rare":
            pool = rare_pool(pool, by_item, seed, args.rare_share)
        t = time.perf_counter()
        if args.model in ("penalty", "recipe"):
            if args.model == "recipe":
                start_errs.append(label_error_counts(task, pool, by_item, fit=False))
            full_a.append(full_label_error_penalty(task, pool, by_item, test))
            if args.model == "recipe":
                full_errs.append(label_error_counts(task, pool, by_item, fit=True))
            print(f"  seed {seed} full-label error ({full_name}) {full_a[-1]:.3f} "
                  f"({time.perf_counter() - t:.1f} s)")
        else:
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
            run_task = task if task is not None else make_task(args.model)
            res = run_curve(strategy, pool, by_item, test, seed, batch=args.batch, max_fraction=max_fraction,
                            window=6, threshold=2e-3, task=run_task, learner=args.learner,
                            refit_every=args.refit_every, platform_of=platform_of, density=density)
            curves[strategy]["error"].append(np.interp(grid, res["fraction"], res["error"]))
            curves[strategy]["uncertainty"].append(np.interp(grid, res["fraction"], res["uncertainty"]))
            curves[strategy]["uncertainty_pool"].append(np.interp(grid, res["fraction"], res["uncertainty_pool"]))
            raw_runs.append({"strategy": strategy, "seed": seed, "pool": len(pool),
                             "fraction": res["fraction"].tolist(), "error": res["error"].tolist(),
                             "uncertainty": [None if not np.isfinite(v) else float(v) for v in res["uncertainty"]],
                             "uncertainty_pool": [None if not np.isfinite(v) else float(v)
                                                  for v in res["uncertainty_pool"]],
                             "refit": res["refit"],
                             "full_label_error": full_a[-1], "queried": res["queried"]})
            cycles.extend(res["cycle_s"])
            print(f"  seed {seed} {strategy:>13}: pool {len(pool)} parts, error "
                  f"{res['error'][0]:.3f} -> {res['error'][-1]:.3f}, {time.perf_counter() - t:.1f} s")
    for s in strategies:
        curves[s] = {k: np.array(v) for k, v in curves[s].items()}
    full_err = float(np.mean(full_a))
    level = 1.1 * full_err

    # --- stopping: calibrate (window, threshold) on seed 0's run of each margin strategy, apply to the others
    stop_rows = {}
    flat_mean_rows = {}
    print()
    print("stopping signal: η (Lou eq. 1.8, relative) calibrated on seed 0, reported on the other seeds; "
          "flatten = first fraction after which the run's test error stays within 10 % of its final value")
    for strategy in strategies:
        if strategy == "random":
            continue
        runs = [r for r in raw_runs if r["strategy"] == strategy]
        cal = runs[0]
        flat0 = flatten_point(np.array(cal["fraction"]), np.array(cal["error"]), 0.1)
        gap0, w, th, st0 = calibrate_stopping(cal, flat0, windows, thresholds)
        gaps, stops, flats = [], [], []
        for r in runs[1:]:
            fl = flatten_point(np.array(r["fraction"]), np.array(r["error"]), 0.1)
            st = stop_fraction(r["fraction"], r["uncertainty"], w, th)
            flats.append(fl)
            stops.append(st)
            gaps.append(np.inf if st is None else abs(st - fl))
        mean_gap = float(np.mean(gaps)) if gaps else np.nan
        stop_rows[strategy] = (w, th, stops)
        if len(runs) > 1:
            held = np.array([np.interp(grid, r["fraction"], r["error"]) for r in runs[1:]]).mean(0)
            flat_mean = flatten_point(grid, held, 0.1)
            fired = [v for v in stops if v is not None]
            med = float(np.median(fired)) if fired else None
            gap_mean = np.inf if med is None else abs(med - flat_mean)
            print(f"  {strategy:>13}: seeds 1..: median stop {med} vs flatten of their mean curve {flat_mean:.2f}: "
                  f"|gap| {gap_mean:.3f}")
            flat_mean_rows[strategy] = (gap_mean, flat_mean, w, th)
        print(f"  {strategy:>13}: chose W={w} θ={th:g} on seed 0 (stop {st0}, flatten {flat0:.2f}); other seeds: "
              f"stop {['-' if v is None else round(v, 2) for v in stops]} flatten {[round(v, 2) for v in flats]} "
              f"mean |gap| {mean_gap:.3f}")
        if gaps:
            rows_ref = {"name": f"median flatten point (seeds 1..{len(seeds) - 1})", "value": float(np.median(flats))}
            stop_rows[strategy] = (w, th, stops, mean_gap, rows_ref)

    rows = []
    reach = {}
    print()
    print(f"full-label test error: {full_name} {full_err:.4f}" +
          (f", plain perceptron {np.mean(full_p):.4f}" if full_p else "") +
          f" (mean over {len(seeds)} seeds)" +
          (f"; SSVM {np.mean(full_s):.4f} (mean over {len(full_s)} seed(s))" if full_s else ""))
    print(f"{'strategy':>14} {'err@0':>7} {'err@10%':>8} {'err@20%':>8} {'err@end':>8} {'reach':>7} "
          f"{'flatten':>8}")
    for s in strategies:
        m = curves[s]["error"].mean(0)
        reach[s] = first_reach(grid, m, level)
        flat = flatten_point(grid, m, 0.1)
        at = lambda f: float(np.interp(f, grid, m))  # noqa: E731
        print(f"{s:>14} {m[0]:7.3f} {at(0.1):8.3f} {at(0.2):8.3f} {m[-1]:8.3f} "
              f"{'-' if reach[s] is None else f'{reach[s]:.2f}':>7} {flat:8.2f}")
        rows.append(row(f"cgh {s}: fraction of pool to reach full-label error +10%",
                        reach[s] if reach[s] is not None else np.inf, "fraction of parts",
                        0.2 if s == "best-vs-2nd" else None, "lower",
                        {"name": f"full-label error ({full_name})", "value": full_err}))
        rows.append(row(f"cgh {s}: test error at 10% of the pool", at(0.1), "error rate", None,
                        "lower", {"name": f"full-label error ({full_name})", "value": full_err}))
        rows.append(row(f"cgh {s}: test error at 20% of the pool", at(min(0.2, grid[-1])), "error rate", None,
                        "lower", {"name": f"full-label error ({full_name})", "value": full_err}))
        if s in stop_rows and len(stop_rows[s]) == 5:
            w, th, stops, gap, ref = stop_rows[s]
            rows.append(row(f"cgh {s}: mean |stopping signal - curve flattens| per run (W={w}, θ={th:g} from seed 0)",
                            gap, "fraction of pool", 0.1, "lower", ref))
        if s in flat_mean_rows:
            gap, flat_m, w, th = flat_mean_rows[s]
            rows.append(row(f"cgh {s}: |median stopping signal - flatten of the mean curve| (seeds 1.., W={w}, "
                            f"θ={th:g} from seed 0)", gap, "fraction of pool", 0.1, "lower",
                            {"name": "flatten of the mean curve", "value": flat_m}))
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
    # per seed, a summary less sensitive to one lucky dip: mean test error over the first 30 % of the pool
    upto = min(0.3, grid[-1])
    sel = grid <= upto + 1e-9
    area = {s: curves[s]["error"][:, sel].mean(1) for s in strategies}
    for s in strategies:
        print(f"mean test error over fractions [0, {upto:.1f}] per seed, {s:>13}: "
              f"{[round(float(v), 3) for v in area[s]]} mean {area[s].mean():.4f}")
        rows.append(row(f"cgh {s}: mean test error over the first {upto:.0%} of the pool (area)",
                        float(area[s].mean()), "error rate", None, "lower",
                        None if s == "random" or "random" not in area else
                        {"name": "random", "value": float(area["random"].mean())}))
    if full_s:
        rows.append(row(f"cgh: full-label test error, SSVM ({len(full_s)} seed(s))", float(np.mean(full_s)),
                        "error rate", None, "lower",
                        {"name": "averaged perceptron", "value": full_err}))

    # per seed: labels each strategy needs to reach that seed's full-label error + 10 % on its own curve
    if "random" in curves and "best-vs-2nd" in curves:
        ratios = []
        for k in range(len(seeds)):
            level_k = 1.1 * full_a[k]  # this seed's own full-label error + 10 %
            rr = first_reach(grid, curves["random"]["error"][k], level_k)
            rb = first_reach(grid, curves["best-vs-2nd"]["error"][k], level_k)
            rr = grid[-1] + grid[1] if rr is None else rr
            ratios.append(np.nan if rb is None else (np.inf if rb == 0 else rr / rb))
            print(f"  seed {k}: reach random {rr:.3f}, best-vs-2nd {rb}: ratio {ratios[-1]:.2f}")
        fin = np.array([r for r in ratios if np.isfinite(r)])
        if fin.size:
            print(f"labels random / best-vs-2nd per seed: median {np.median(fin):.2f}, min {fin.min():.2f}, "
                  f"max {fin.max():.2f} ({fin.size} of {len(ratios)} seeds where both reach it)")
            rows.append(row("cgh: labels needed random / best-vs-2nd, median over seeds", float(np.median(fin)),
                            "ratio", 1.5, "higher", {"name": "min over seeds", "value": float(fin.min())}))
    run_rows, _ = per_run_stopping(raw_runs, strategies, windows, thresholds, n_calibration=args.calibration_seeds)
    rows.extend(run_rows)
    profile = None
    if start_errs:
        fr = [f for f in (0.05, 0.1, 0.2, 0.3) if f <= max_fraction + 1e-9]
        lines, profile = query_profile(raw_runs, strategies, start_errs, full_errs, {s.name: s for s in seqs}, fr)
        print("\nwhat each strategy asks for (first queries, mean over seeds) vs the whole pool:")
        print("\n".join(lines))

    # --- speed
    n_parts = 120 if args.quick else 300
    repeat = 3 if args.quick else 5
    load = os.getloadavg()
    print(f"\nquery cycles (load {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}); best of {repeat}")
    cyc, cpu, pre_w, pre_c, n, n_probes, n_lab = time_penalty_cycle(seqs, by_item, n_parts=n_parts,
                                                                    n_labelled=30, repeat=repeat)
    print(f"  penalty model, {n} parts ({n_probes} probes), {n_lab} labelled: perceptron pass + refit + "
          f"best-vs-2nd of the pool {cyc * 1000:.1f} ms wall, {cpu * 1000:.1f} ms CPU "
          f"(paths, once per item: {pre_w:.1f} s wall, {pre_c:.1f} s CPU)")
    rows.append(row(f"cgh query cycle, per-sequence penalty model: update + uncertainty of {n} parts", cyc,
                    "s", 0.5, "lower", {"name": "penalty paths of the pool, once (features)", "value": pre_w}))
    rows.append(row("cgh query cycle, per-sequence penalty model: process CPU", cpu, "s", 0.5, "lower", None))
    Xm = X if args.model == "metric" else {s.name: features_fn()[1](s) for s in seqs}
    serial = time_query_cycle(seqs, by_item, Xm, n_parts=n_parts, n_labelled=30, repeat=repeat,
                              with_ssvm=not args.quick, n_jobs=1)
    threaded = time_query_cycle(seqs, by_item, Xm, n_parts=n_parts, n_labelled=30, repeat=repeat,
                                with_ssvm=False, n_jobs=args.n_jobs)
    same = bool(np.array_equal(serial[6], threaded[6]))
    for name, res in (("1 thread", serial), (f"{args.n_jobs} threads", threaded)):
        cyc, cpu, ssvm_cyc, n, n_probes, n_lab, _ = res
        print(f"  learned-metric model, {n} parts ({n_probes} probes), {n_lab} labelled, {name}: perceptron "
              f"pass + best-vs-2nd {cyc * 1000:.0f} ms wall, {cpu * 1000:.0f} ms CPU"
              + ("" if ssvm_cyc is None else f"; SSVM refit + uncertainty {ssvm_cyc * 1000:.0f} ms"))
    print(f"  threaded uncertainties identical to serial: {same}")
    rows.append(row(f"cgh query cycle, learned-metric model: perceptron + uncertainty of {serial[3]} parts, "
                    f"{args.n_jobs} threads", threaded[0], "s", 0.5, "lower",
                    {"name": "1 thread", "value": serial[0]}))
    rows.append(row(f"cgh query cycle, learned-metric model, {args.n_jobs} threads: process CPU", threaded[1], "s",
                    None, "lower", {"name": "1 thread CPU", "value": serial[1]}))
    rows.append(row("cgh query cycle, learned-metric model: threaded uncertainties == serial", float(same), "bool",
                    1.0, "higher", None))
    if args.model == "recipe" or not args.quick:
        rc = time_recipe_cycle(all_seqs, by_item, n_parts=n_parts, n_labelled=30, repeat=repeat,
                               query_margin=args.query_margin)
        print(f"  engine model (recipe on {rc['n_labelled']} labelled + perceptron), {rc['n_parts']} chromosomes "
              f"({rc['n_probes']} probes): perceptron step + best-vs-2nd of every part + fixed stopping set: median "
              f"{rc['wall_median'] * 1000:.0f} ms wall / {rc['cpu_median'] * 1000:.0f} ms CPU, max "
              f"{rc['wall_max'] * 1000:.0f} ms wall ({rc['n_moved']} of {rc['n_cycles']} steps moved w"
              + ("" if rc["n_moved"] == 0 else f", median of those {rc['wall_median_moved'] * 1000:.0f} ms wall / "
                 f"{rc['cpu_median_moved'] * 1000:.0f} ms CPU") + "); first scoring after a recipe refit (exact decodes) "
              f"{rc['cold_wall'] * 1000:.0f} ms wall / {rc['cold_cpu'] * 1000:.0f} ms CPU; the recipe refit itself "
              f"{rc['refit_wall']:.1f} s wall / {rc['refit_cpu']:.1f} s CPU (background retrain)")
        rows.append(row(f"cgh query cycle, engine model (recipe + perceptron), {rc['n_parts']} chromosomes: median",
                        rc["wall_median"], "s", 0.5, "lower", {"name": "max", "value": rc["wall_max"]}))
        rows.append(row(f"cgh query cycle, engine model, {rc['n_parts']} chromosomes: median process CPU",
                        rc["cpu_median"], "s", 0.5, "lower", None))
        if rc["n_moved"]:
            rows.append(row(f"cgh query cycle, engine model, {rc['n_parts']} chromosomes: median over the steps that "
                            f"moved w", rc["wall_median_moved"], "s", 0.5, "lower",
                            {"name": "process CPU", "value": rc["cpu_median_moved"]}))
        rows.append(row(f"cgh first scoring after a recipe refit, {rc['n_parts']} chromosomes (exact decodes)",
                        rc["cold_wall"], "s", None, "lower",
                        {"name": "recipe refit on the labelled chromosomes", "value": rc["refit_wall"]}))
    if serial[2] is not None:
        rows.append(row("cgh query cycle, learned-metric model: SSVM refit + uncertainty (reference)", serial[2],
                        "s", None, "lower", None))
    if cycles:
        rows.append(row("cgh replay: median query cycle during the replays", float(np.median(cycles)), "s", None,
                        "lower", None))

    RESULTS.mkdir(parents=True, exist_ok=True)
    title = (f"aCGH neuroblastoma, {args.model} model{', rare pool' if args.pool == 'rare' else ''}, "
             f"{len(seeds)} seeds, batch {args.batch}, "
             f"{args.learner}" + (f" (refit every {args.refit_every})" if args.learner == "combined" else ""))
    med_stops = {}
    for s, v in stop_rows.items():
        fired = [x for x in v[2] if x is not None]
        med_stops[s] = float(np.median(fired)) if fired else None
    tag = ("" if args.model == "penalty" else f"_{args.model}") + ("" if args.pool == "all" else "_rare") + \
        ("" if args.learner == "combined" else f"_{args.learner}") + \
        ("" if args.query_margin == "decoder" else f"_{args.query_margin}") + \
        ("" if args.metric_refit == "learn" else f"_metric-{args.metric_refit}") + \
        ("_balanced" if args.balance_platforms else "") + \
        ("" if args.density_weight is None else f"_density{args.density_weight:g}") + \
        ("" if args.first_seed == 0 else f"_from{args.first_seed}")
    plot(RESULTS / f"active_cgh{tag}.png", grid, curves, full_err, med_stops, title, full_name)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the pool is empty at fraction 1: no mean uncertainty there
        curve_json = {s: {"fraction": grid.tolist(), "error_mean": curves[s]["error"].mean(0).tolist(),
                          "error_std": curves[s]["error"].std(0).tolist(),
                          "uncertainty_mean": [None if not np.isfinite(v) else float(v) for v in
                                               np.nanmean(curves[s]["uncertainty"], 0)],
                          "uncertainty_pool_mean": [None if not np.isfinite(v) else float(v) for v in
                                                    np.nanmean(curves[s]["uncertainty_pool"], 0)]}
                      for s in strategies}
    curve_json["runs"] = raw_runs
    curve_json["full_label_error"] = {full_name: full_a, "perceptron": full_p, "ssvm": full_s}
    curve_json["query_profile"] = profile
    curve_json["stopping"] = {s: {"window": v[0], "threshold": v[1], "stops": v[2]} for s, v in stop_rows.items()}
    (RESULTS / f"active_cgh{tag}_curves.json").write_text(json.dumps(curve_json, indent=1))
    (RESULTS / f"active{tag}.json").write_text(json.dumps(rows, indent=1))
    print()
    for r in rows:
        print(format_row(r, width=100))
    load = os.getloadavg()
    print(f"load average at end: {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}; total {time.perf_counter() - t0:.0f} s")


if __name__ == "__main__":
    main()
