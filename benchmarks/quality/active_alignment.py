"""Active learning replayed offline for audio-to-score alignment (Vienna 4x22).

Usage: ``python -m benchmarks.quality.active_alignment [--quick] [--seeds 5] [--data PATH] [--mode realign|learn]
[--pianists p01,p02|all] [--max-events 12] [--max-fraction 0.5] [--strategies random,best-vs-2nd,scoring]``

``--mode realign`` (default): :class:`marginalia.align.ScoreAligner`, untrained, is already accurate on most
events, so the question is whether anchoring a few *windows* of a performance (phrases of <= ``max-events``
score events, :func:`marginalia.active.parts.phrase_parts`) fixes the worst errors elsewhere in the same
performance through the constrained re-alignment (:class:`marginalia.active.realign.RealignAdapter`). Each step
anchors one window (true onsets, ±20 ms), re-aligns the whole performance under every anchor, and scores
every event: % within 50 ms over all events and the number of events > 50 ms among the events of windows
not anchored yet. ``best-vs-2nd`` ranks windows by the margin the app's queue uses (what the aligner's own
objective loses when one unanchored event of the window moves, :meth:`marginalia.align.aligner.OnsetMoves.span`);
``random`` runs ``--seeds`` seeds; the margin strategies are deterministic (run once). Data: the
shared ``audio_rendered/*_p01.wav`` plus, when present, other pianists' renders in
``benchmarks/results/renders`` (made by ``quality_alignment.py``); truth = median performed onset of each
event's notes + the renderer's 6.5 ms lag. Curves: mean ± std over performances (and seeds).

``--mode learn``: the older cross-piece replay of a 13 x 13 linear scorer
(:class:`benchmarks.research.alignment_adapter.AlignmentAdapter`): the pool is the phrases of 3 pieces, the test
the 4th aligned without anchors; timed: one query cycle on a 300-part pool.

Writes ``benchmarks/results/active_alignment.json`` and ``benchmarks/results/active_alignment.png``.
"""

from __future__ import annotations

import argparse
import json
import os
import pathlib
import sys
import time

import numpy as np  # noqa: E402

from benchmarks._common import ROOT, format_row  # noqa: E402
from benchmarks._common import result_row as row  # noqa: E402
from benchmarks.research.active_loop import ActiveLoop, PartPool  # noqa: E402
from benchmarks.research.alignment_adapter import AlignmentAdapter, AlignmentItem  # noqa: E402
from marginalia.active.parts import phrase_parts  # noqa: E402
from marginalia.active.uncertainty import STRATEGIES, pool_uncertainties  # noqa: E402

RESULTS = ROOT / "benchmarks" / "results"
SR, HOP = 22050, 512
LAG_S = 0.0065
TOLERANCE_S = 0.02
GRID = np.round(np.linspace(0.0, 1.0, 11), 2)
QUICK_PIECES = ("Schubert_D783_no15", "Chopin_op10_no3")


def log(msg):
    print(msg, flush=True)


# ------------------------------------------------------------------ data


def load_pieces(root: pathlib.Path, pieces=None):
    """Items, true onsets (s, NaN unknown) and scores of the rendered performances."""
    from benchmarks.quality.quality_alignment_tools.vienna import event_truth
    from marginalia.features.audio import FeatureCache, compute_features, signal_hash
    from marginalia.io.audio import load_audio
    from marginalia.io.midi import read_midi
    cache = FeatureCache(directory=RESULTS / "feature_cache")
    out = {}
    for wav in sorted((root / "audio_rendered").glob("*_p01.wav")):
        piece = wav.stem.rsplit("_", 1)[0]
        if pieces is not None and piece not in pieces:
            continue
        y, sr = load_audio(wav, sr=SR)
        y = np.asarray(y, dtype=np.float32)
        h = signal_hash(y, sr)
        chroma = compute_features(y, sr, "chroma", cache=cache, source_hash=h, hop_length=HOP)
        mel = compute_features(y, sr, "log_mel", cache=cache, source_hash=h, hop_length=HOP)
        loud = mel.values.max(axis=1)
        loud = loud - loud.max()
        score = read_midi(root / "score_midi" / f"{piece}.mid")
        item = AlignmentItem.from_audio(chroma.values, loud, score, sr / HOP, name=piece)
        median, _ = event_truth(score, root / "ground_truth" / f"{wav.stem}.csv")
        out[piece] = {"item": item, "truth": median + LAG_S, "score": score, "audio_s": y.shape[0] / sr}
    return out


# ---------------------------------------------------------------- replay


def replay(data, test, strategy, seed, learner, max_events):
    """One active-learning run; returns the curve rows with the test errors and the cycle times."""
    pool_ids = [p for p in data if p != test]
    items = {p: data[p]["item"] for p in pool_ids}
    parts = [pt for p in pool_ids for pt in phrase_parts(p, data[p]["score"], max_events=max_events)]
    truth = {p: data[p]["truth"] for p in pool_ids}

    def oracle(query, part):
        return part.anchor_labels(truth[part.item_id], tolerance_s=TOLERANCE_S, author="replay")

    task = AlignmentAdapter()
    session = ActiveLoop(PartPool(items, parts), task, oracle, strategy=strategy, learner=learner,
                            refit_every=1, random_state=seed)
    held = [(data[test]["item"], data[test]["truth"])]
    rows = []

    def record():
        task.evaluate(held)
        ev = task.last_evaluation_
        last = session.curve_[-1]
        rows.append({"fraction": last["fraction_parts"], "median_ms": 1000 * ev["median_s"],
                     "within50": 100 * ev["within_50ms"], "update_s": last["update_s"], "score_s": last["score_s"]})

    record()
    while session.unlabelled:
        session.step()
        record()
    return rows, len(parts)


def step_curve(rows, key):
    """Value at each grid fraction: the last recorded value at or before it."""
    fr = np.array([r["fraction"] for r in rows])
    v = np.array([r[key] for r in rows])
    return np.array([v[np.searchsorted(fr, g + 1e-9, side="right") - 1] for g in GRID])


# ---------------------------------------------------------------- timing


def time_cycle(data, n_parts_target=300, repeats=3):
    """Best-of-N query cycle (perceptron update + best-vs-2nd uncertainty of every part) on a large pool."""
    ids = list(data)
    total_events = sum(data[p]["item"].n_events for p in ids)
    per = max(1, int(round(total_events / n_parts_target)))
    items = {p: data[p]["item"] for p in ids}
    parts = [pt for p in ids for pt in phrase_parts(p, data[p]["score"], max_events=per)]
    # label one phrase in each piece, so every item is decoded under labels
    labels = {p: phrase_parts(p, data[p]["score"])[0].anchor_labels(data[p]["truth"], tolerance_s=TOLERANCE_S)
              for p in ids}
    task = AlignmentAdapter()
    task.initialize(items)

    class Scorer:
        def part_scores(self, part):
            return task.part_scores(items[part.item_id], part, labels[part.item_id])

    best_cycle = best_ref = np.inf
    for r in range(repeats):
        task.w_ = task.w_ * (1.0 + 1e-9 * (r + 1))  # new parameters: no cached decode is reused
        t0 = time.perf_counter()
        for p in ids:
            task.perceptron_step(items[p], labels[p])
        pool_uncertainties(parts, Scorer(), "best-vs-2nd")
        best_cycle = min(best_cycle, time.perf_counter() - t0)
        task.w_ = task.w_ * (1.0 + 1e-9)
        t0 = time.perf_counter()
        task.refit([items[p] for p in ids], [labels[p] for p in ids])
        pool_uncertainties(parts, Scorer(), "best-vs-2nd")
        best_ref = min(best_ref, time.perf_counter() - t0)
    return len(parts), best_cycle, best_ref


# ------------------------------------------------------------------ plot


def _band_panels(grid, panels, ylabels, xlabel, legend_panel, path, title, alpha):
    """Two panels of mean ± standard deviation over runs: ``panels[i]`` maps a strategy to its (runs, steps)
    matrix (NaN where a run has no value) for panel ``i``."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, axes = plt.subplots(1, 2, figsize=(11, 4.2))
    for ax, by_strategy, ylabel in zip(axes, panels, ylabels):
        for strategy, M in by_strategy.items():
            m, s = np.nanmean(M, 0), np.nanstd(M, 0)
            ax.plot(grid, m, marker="o", ms=3, label=f"{strategy} ({M.shape[0]} runs)")
            ax.fill_between(grid, m - s, m + s, alpha=alpha)
        ax.set_ylabel(ylabel)
        ax.set_xlabel(xlabel)
        ax.grid(alpha=0.3)
    axes[legend_panel].legend(fontsize=8)
    fig.suptitle(title, fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def plot(curves, path, title):
    panels = [{strategy: np.array([step_curve(r, key) for r in runs]) for strategy, runs in curves.items()}
              for key in ("median_ms", "within50")]
    _band_panels(GRID, panels, ("held-out median onset error (ms)", "held-out events within 50 ms (%)"),
                 "fraction of the pool's phrases labelled", 1, path, title, alpha=0.15)


# ------------------------------------------------------------------ main


# ----------------------------------------------------- constrained re-alignment (ScoreAligner)


def load_performances(data_root: pathlib.Path, renders: pathlib.Path | None, pianists):
    """Rendered performances with their truth: the 4 shared ``*_p01`` renders, plus (when ``renders`` holds
    them, e.g. made by ``quality_alignment.py``) the other pianists' renders named ``<piece>_<pNN>.wav``."""
    from benchmarks.quality.quality_alignment_tools.vienna import event_truth
    from marginalia.active.realign import Performance
    from marginalia.align import ScoreAligner
    from marginalia.io.audio import load_audio
    from marginalia.io.midi import read_midi
    root = data_root
    wavs = {w.stem: w for w in sorted((root / "audio_rendered").glob("*_p01.wav"))}
    if renders is not None and renders.is_dir():
        for w in sorted(renders.glob("*_p[0-9][0-9].wav")):
            wavs.setdefault(w.stem, w)
    aligner = ScoreAligner()
    out = {}
    for stem, wav in wavs.items():
        piece, pianist = stem.rsplit("_", 1)
        if pianists and pianist not in pianists:
            continue
        score_path, gt = root / "score_midi" / f"{piece}.mid", root / "ground_truth" / f"{stem}.csv"
        if not (score_path.is_file() and gt.is_file()):
            continue
        y, sr = load_audio(wav, sr=SR)
        score = read_midi(score_path)
        median, _ = event_truth(score, gt)
        feats = aligner.features(np.asarray(y, dtype=np.float32), sr)
        out[stem] = {"perf": Performance(aligner, feats, score), "truth": median + LAG_S, "score": score,
                     "audio_s": len(y) / sr}
    return out


def realign_replay(pid, d, strategy, seed, *, max_events, max_fraction, batch=1):
    """Anchor windows of one performance one by one (by ``strategy``); after each, re-align the whole
    performance and score every event, the unlabelled ones apart."""
    from marginalia.active.realign import RealignAdapter, within_tolerance
    parts = phrase_parts(pid, d["score"], max_events=max_events)
    truth = d["truth"]

    def oracle(query, part):
        return part.anchor_labels(truth, tolerance_s=TOLERANCE_S, author="replay")

    task = RealignAdapter()
    session = ActiveLoop(PartPool({pid: d["perf"]}, parts), task, oracle, strategy=strategy, batch_size=batch,
                            random_state=seed)
    E = d["score"].n_events
    rows = []

    def record():
        labels = session.labels_.get(pid, [])
        times = task.predict_times(d["perf"], labels)
        labelled = np.zeros(E, bool)
        for p in session.labelled_parts_:
            labelled[p.start:p.stop] = True
        err = np.abs(times - truth)
        ok = np.isfinite(truth)
        last = session.curve_[-1]
        rows.append({"fraction": last["fraction_parts"],
                     "within50": 100 * within_tolerance(times, truth, 0.05),
                     "within50_elsewhere": 100 * within_tolerance(times, truth, 0.05,
                                                                 events=np.flatnonzero(~labelled))
                     if (~labelled).any() else np.nan,
                     "bad_elsewhere": int(np.sum((err > 0.05) & ok & ~labelled)),
                     "cycle_s": last["update_s"] + last["score_s"]})

    record()
    while session.unlabelled and session.curve_[-1]["fraction_parts"] < max_fraction - 1e-9:
        session.step()
        record()
    return rows, len(parts)


def realign_main(args):
    t_start = time.time()
    root = pathlib.Path(args.data) / "alignment" / "vienna4x22"
    renders = None if args.no_renders else RESULTS / "renders"
    pianists = ["p01"] if args.quick else ([] if args.pianists == "all" else [p for p in args.pianists.split(",") if p])
    data = load_performances(root, renders, pianists)
    if args.quick:
        data = {k: v for k, v in data.items() if k.rsplit("_", 1)[0] in QUICK_PIECES}
    if not data:
        raise SystemExit(f"no rendered performances under {root}; pass --data")
    seeds = 2 if args.quick else max(1, args.seeds)
    log(f"{len(data)} performances ({', '.join(data)}), {sum(d['audio_s'] for d in data.values()) / 60:.1f} min "
        f"of audio ({time.time() - t_start:.0f} s to load + features); load {os.getloadavg()[0]:.2f}")
    strategies = [s for s in args.strategies.split(",") if s]
    curves = {s: [] for s in strategies}
    cycles = []
    for pid, d in data.items():
        for strategy in strategies:
            # the margin strategies are deterministic given the performance (the seed only breaks exact ties)
            for seed in range(seeds if strategy == "random" else 1):
                t0 = time.time()
                rows, n_parts = realign_replay(pid, d, strategy, seed, max_events=args.max_events,
                                               max_fraction=args.max_fraction)
                curves[strategy].append(rows)
                cycles.extend(r["cycle_s"] for r in rows[1:])
                log(f"  {pid:<24} {strategy:<13} seed={seed} windows={n_parts:3d} within 50 ms: "
                    f"{rows[0]['within50']:5.1f} % -> {rows[-1]['within50']:5.1f} % (elsewhere "
                    f"{rows[-1]['within50_elsewhere']:5.1f} %, {rows[0]['bad_elsewhere']} -> "
                    f"{rows[-1]['bad_elsewhere']} events > 50 ms) [{time.time() - t0:.1f} s]")
    grid = np.round(np.arange(0, args.max_fraction + 1e-9, 0.05), 2)

    def on_grid(rows, key):
        fr = np.array([r["fraction"] for r in rows])
        v = np.array([r[key] for r in rows], dtype=float)
        return np.array([v[np.searchsorted(fr, g + 1e-9, side="right") - 1] for g in grid])

    results = []
    summary = {}
    log("")
    log(f"% of events within 50 ms (all / unlabelled only) and events > 50 ms outside the labelled windows, vs "
        f"fraction of windows anchored (mean over {len(data)} performances; random x {seeds} seeds)")
    log("strategy       " + " ".join(f"{g:>17.2f}" for g in grid))
    for strategy in strategies:
        A = np.array([on_grid(r, "within50") for r in curves[strategy]])
        B = np.array([on_grid(r, "within50_elsewhere") for r in curves[strategy]])
        C = np.array([on_grid(r, "bad_elsewhere") for r in curves[strategy]])
        summary[strategy] = (A, B, C)
        log(f"{strategy:<14} " + " ".join(f"{a:5.1f}/{b:5.1f}/{c:4.1f}" for a, b, c in
                                           zip(A.mean(0), np.nanmean(B, 0), C.mean(0))))
    base = float(summary[strategies[0]][0][:, 0].mean())
    results.append(row("ScoreAligner untrained, no anchor: events within 50 ms", base, "%", better="higher"))
    ref = summary.get("random")
    for strategy in strategies:
        A, B, C = summary[strategy]
        for frac in (0.1, 0.2, 0.3):
            k = int(np.argmin(np.abs(grid - frac)))
            results.append(row(f"{strategy}: events within 50 ms with {grid[k]:.0%} of the windows anchored",
                               float(A[:, k].mean()), "%", better="higher",
                               reference=None if ref is None else {"name": "random", "value": float(ref[0][:, k].mean())}))
            results.append(row(f"{strategy}: unlabelled events > 50 ms with {grid[k]:.0%} of the windows anchored",
                               float(C[:, k].mean()), "events per performance",
                               reference={"name": "no anchor", "value": float(C[:, 0].mean())}))
    if cycles:
        # no target: the cycle is one full ScoreAligner decode of the performance (its cost, not the loop's)
        results.append(row("query cycle on one performance (re-align + uncertainty of every window), median",
                           float(np.median(cycles)), "s"))
    out = RESULTS / "active_alignment.json"
    out.write_text(json.dumps(results, indent=1))
    png = RESULTS / "active_alignment.png"
    plot_realign(grid, summary, png, f"Vienna 4x22: anchor windows, re-align with ScoreAligner "
                                     f"({len(data)} performances, random x {seeds} seeds, windows <= {args.max_events} "
                                     f"events)")
    log("")
    for r in results:
        log(format_row(r, width=100))
    log(f"wrote {out} and {png} ({time.time() - t_start:.0f} s); load {os.getloadavg()[0]:.2f}")


def plot_realign(grid, summary, path, title):
    panels = [{strategy: A for strategy, (A, _B, _C) in summary.items()},
              {strategy: C for strategy, (_A, _B, C) in summary.items()}]
    _band_panels(grid, panels, ("events within 50 ms (%)", "unlabelled events > 50 ms (per performance)"),
                 "fraction of the performance's windows anchored", 0, path, title, alpha=0.12)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="2 pieces (2 folds), 2 seeds")
    ap.add_argument("--data", default=str(ROOT.parent / "shared" / "data"), help="the shared data folder")
    ap.add_argument("--seeds", type=int, default=3, help="seeds of the random strategy per fold")
    ap.add_argument("--learner", choices=("combined", "perceptron"), default="combined")
    ap.add_argument("--max-events", type=int, default=None,
                    help="longest phrase/window (events; default 12 realign, 16 learn)")
    ap.add_argument("--mode", choices=("realign", "learn"), default="realign",
                    help="realign: anchors on windows of one performance, constrained re-alignment with "
                         "ScoreAligner (default); learn: the cross-piece replay of the 13x13 linear model")
    ap.add_argument("--max-fraction", type=float, default=0.5, help="realign: anchor up to this share of windows")
    ap.add_argument("--pianists", default="p01,p02",
                    help="realign: pianists whose renders are used ('all': every render present)")
    ap.add_argument("--no-renders", action="store_true",
                    help="realign: only the shared p01 renders, not benchmarks/results/renders")
    ap.add_argument("--strategies", default=None,
                    help="realign: default random,best-vs-2nd,scoring (learn always runs all four)")
    args = ap.parse_args(argv)
    if args.max_events is None:
        args.max_events = 12 if args.mode == "realign" else 16
    if args.strategies is None:
        args.strategies = "random,best-vs-2nd,scoring"
    if args.mode == "realign":
        if args.seeds == 3 and "--seeds" not in (argv or sys.argv):
            args.seeds = 5
        return realign_main(args)
    t_start = time.time()
    RESULTS.mkdir(parents=True, exist_ok=True)
    root = pathlib.Path(args.data) / "alignment" / "vienna4x22"
    if not (root / "audio_rendered").is_dir():
        raise SystemExit(f"no Vienna 4x22 renders under {root}; pass --data")
    seeds = 2 if args.quick else max(1, args.seeds)
    data = load_pieces(root, QUICK_PIECES if args.quick else None)
    if len(data) < 2:
        raise SystemExit(f"need at least 2 rendered pieces, found {len(data)}")
    log(f"{len(data)} pieces, {sum(d['audio_s'] for d in data.values()) / 60:.1f} min of audio, "
        f"{sum(d['item'].n_events for d in data.values())} events ({time.time() - t_start:.1f} s to load); "
        f"load: {os.getloadavg()[0]:.2f}")

    curves = {s: [] for s in STRATEGIES}
    cycle_rows = []
    pool_sizes = []
    for test in data:
        for strategy in STRATEGIES:
            for seed in range(seeds if strategy == "random" else 1):
                t0 = time.time()
                rows, n_parts = replay(data, test, strategy, seed, args.learner, args.max_events)
                curves[strategy].append(rows)
                pool_sizes.append(n_parts)
                if strategy == "best-vs-2nd":
                    cycle_rows.extend(r for r in rows[1:])
                log(f"  test={test:<22} {strategy:<13} seed={seed} parts={n_parts:3d} "
                    f"untrained {rows[0]['median_ms']:6.1f} ms -> all labelled {rows[-1]['median_ms']:6.1f} ms "
                    f"({rows[-1]['within50']:.0f} % within 50 ms) [{time.time() - t0:.1f} s]")

    # ---------------------------------------------------------- table
    results = []
    summary = {}
    log("")
    log(f"held-out median onset error (ms) / % within 50 ms vs fraction of the pool labelled "
        f"(mean over {len(data)} folds{'' if seeds == 1 else f', random x{seeds} seeds'}; learner {args.learner})")
    header = "strategy       " + " ".join(f"{g:>11.1f}" for g in GRID) + "    mean"
    log(header)
    for strategy, runs in curves.items():
        med = np.array([step_curve(r, "median_ms") for r in runs])
        w50 = np.array([step_curve(r, "within50") for r in runs])
        summary[strategy] = (med.mean(axis=0), w50.mean(axis=0), med.std(axis=0))
        log(f"{strategy:<14} " + " ".join(f"{m:6.1f}/{w:3.0f}%" for m, w in zip(med.mean(0), w50.mean(0)))
            + f"  {med.mean():6.1f}")
    untrained = float(summary["random"][0][0])
    untrained50 = float(summary["random"][1][0])
    full = float(np.mean([summary[s][0][-1] for s in STRATEGIES]))
    results.append(row("untrained (no label): held-out median onset error", untrained, "ms"))
    results.append(row("untrained (no label): held-out within 50 ms", untrained50, "%", better="higher"))
    results.append(row("whole pool labelled: held-out median onset error", full, "ms",
                       reference={"name": "untrained", "value": untrained}))
    rand_auc = float(summary["random"][0].mean())
    for strategy in STRATEGIES:
        med, w50, _ = summary[strategy]
        for frac in (0.1, 0.25, 0.5):
            i = int(np.argmin(np.abs(GRID - frac)))
            g = GRID[i]
            results.append(row(f"{strategy}: held-out median onset error at {g:.0%} of the pool", med[i], "ms",
                               reference={"name": "random", "value": float(summary["random"][0][i])}))
            results.append(row(f"{strategy}: held-out within 50 ms at {g:.0%} of the pool", w50[i], "%",
                               better="higher", reference={"name": "random", "value": float(summary["random"][1][i])}))
        results.append(row(f"{strategy}: mean held-out median error over the curve (area)", med.mean(), "ms",
                           reference={"name": "random", "value": rand_auc}))
    b2 = float(summary["best-vs-2nd"][0].mean())
    results.append(row("random / best-vs-2nd curve area (median error)", rand_auc / b2, "x", better="higher"))
    log("")
    log(f"best-vs-2nd vs random: mean curve {b2:.1f} ms vs {rand_auc:.1f} ms (ratio random/b2 = {rand_auc / b2:.2f}); "
        f"untrained {untrained:.1f} ms, all labelled {full:.1f} ms")

    # ---------------------------------------------------------- speed
    cyc = np.array([r["update_s"] + r["score_s"] for r in cycle_rows])
    mean_pool = float(np.mean(pool_sizes))
    results.append(row(f"query cycle on the replay pool (~{mean_pool:.0f} phrases, update incl. refit + "
                       f"uncertainty, median over steps)", float(np.median(cyc)), "s"))
    n300, cyc300, ref300 = time_cycle(data, 300 if not args.quick else 120)
    results.append(row(f"query cycle: perceptron update + best-vs-2nd uncertainty of a {n300}-part pool (best of 3)",
                       cyc300, "s", target=0.5 if n300 >= 300 else None,
                       reference={"name": "averaged refit + uncertainty", "value": ref300}))
    log(f"query cycle: replay pool median {np.median(cyc):.3f} s; {n300}-part pool {cyc300:.3f} s "
        f"(refit cycle {ref300:.3f} s); load {os.getloadavg()[0]:.2f}")

    out = RESULTS / "active_alignment.json"
    out.write_text(json.dumps(results, indent=1))
    png = RESULTS / "active_alignment.png"
    plot(curves, png, f"Vienna 4x22 active alignment ({len(data)} folds, phrases <= {args.max_events} events, "
                      f"anchors ±{1000 * TOLERANCE_S:.0f} ms, learner {args.learner})")
    log("")
    for r in results:
        log(format_row(r, width=100))
    log(f"wrote {out} and {png} ({time.time() - t_start:.0f} s)")


if __name__ == "__main__":
    main()
