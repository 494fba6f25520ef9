"""Speed of the exact segmentation decoders against ruptures and a naive O(T^2) DP.

Usage: ``python -m benchmarks.speed.decoders_segmentation [--quick] [--data PATH] [--repeat N]``

Cases (seeded synthetic data unless said otherwise; times are the best of N runs):

* penalized, T=10^4, p=20, a change every 100 samples        (target <= 20 ms, and not slower than
  ruptures.KernelCPD in the same run)
* penalized, T=10^4, p=20, no change at all                  (target <= 0.15 s)
* penalized, T=10^5, p=1, a change every ~100 samples        (target <= 0.3 s)
* fixed K=10, T=10^4, p=20, a change every 1000 samples      (target <= 0.3 s)
* second-best / loss-augmented decoding relative to the plain decoder (targets 1.3x / 1.2x)
* partial-label (violation-loss) loss-augmented decoding, T=2*10^4, few changes, 20 region labels,
  against the same DP scanning every start
* first call in a fresh process (numba kernels loaded from the cache; target <= 1 s)
* the longest real neuroblastoma aCGH sequences (``cgh/neuroblastoma/profiles_all.csv.gz``)

References are timed in the same run on the same data: a naive numba O(T^2) optimal partitioning,
``ruptures.KernelCPD`` (linear kernel, C), ``ruptures.Pelt`` (model "l2") and ``ruptures.Dynp``;
the pure-Python ruptures searches run on smaller T (said in the case name). Every decoder answer
is checked against the naive DP (same optimal cost). Writes
``benchmarks/results/decoders_segmentation.json``.

The second best reads the plain decoding: the penalized one searches only the starts of the best
segmentation's ends (any other segmentation leaves the best one for the last time at one of them),
skipping the starts the plain pass removed (1.0-1.1x the plain decoder on both rows; it was 2.4x
without change, where the two-value recursion met a near-tie between all starts at every end). The
fixed-K one runs the fixed-K programme only on the prefixes the Lagrangian bound keeps (1.0-1.3x; it
was 2.1-2.5x, the whole table against a plain decoder that often returns the penalized optimum
directly). The app ranks its questions with the count runner-up
(:mod:`marginalia.active.count_runner_up`), not with these decoders.
"""

from __future__ import annotations

import argparse
import csv
import gzip
import json
import os
import pathlib
import subprocess
import sys
import time

import numpy as np  # noqa: E402
from numba import njit  # noqa: E402

from benchmarks._common import ROOT, format_row  # noqa: E402
from benchmarks._common import result_row as row  # noqa: E402
from marginalia.decoders.segmentation import (  # noqa: E402
    segment_fixed_k,
    segment_loss_augmented,
    segment_penalized,
    segment_second_best,
    segmentation_cost,
)
from marginalia.types import Segmentation  # noqa: E402

RESULTS = ROOT / "benchmarks" / "results"


def ref(name, value):
    return None if value is None else {"name": name, "value": float(value)}


CLOCK = time.perf_counter


def best_time(fn, repeat):
    best = np.inf
    out = None
    for _ in range(repeat):
        t = CLOCK()
        out = fn()
        best = min(best, CLOCK() - t)
    return best, out


def best_pair(fn_a, fn_b, repeat):
    """Best times of two functions timed alternately (a ratio steadier under a drifting load)."""
    ta = tb = np.inf
    out = None
    for _ in range(repeat):
        t = CLOCK()
        fn_a()
        ta = min(ta, CLOCK() - t)
        t = CLOCK()
        out = fn_b()
        tb = min(tb, CLOCK() - t)
    return ta, tb, out


def piecewise(T, p, every, seed):
    rng = np.random.default_rng(seed)
    lab = np.arange(T) // every
    return rng.normal(scale=2.0, size=(lab[-1] + 1, p))[lab] + rng.normal(size=(T, p))


# ----------------------------------------------------------------- references


@njit(cache=True)
def _naive_penalized(S, Q, beta):
    T = S.shape[0] - 1
    q = S.shape[1]
    F = np.full(T + 1, np.inf)
    F[0] = 0.0
    for t in range(1, T + 1):
        b = np.inf
        for s in range(t):
            sq = 0.0
            for k in range(q):
                d = S[t, k] - S[s, k]
                sq += d * d
            v = F[s] + Q[t] - Q[s] - sq / (t - s)
            if v < b:
                b = v
        F[t] = b + beta
    return F[T]


def naive_penalized(X, beta):
    """Plain O(T^2 p) optimal partitioning (prefix sums, no pruning): the optimal cost."""
    Z = X - X.mean(0)
    S = np.zeros((len(Z) + 1, Z.shape[1]))
    np.cumsum(Z, axis=0, out=S[1:])
    Q = np.r_[0.0, np.cumsum((Z * Z).sum(1))]
    return _naive_penalized(S, Q, float(beta))


def ruptures_or_none():
    try:
        import ruptures
        return ruptures
    except ImportError:
        return None


def timed_ruptures(fn, repeat, cap_s):
    """Best of ``repeat`` runs, stopping early when one run exceeds ``cap_s``."""
    best = np.inf
    out = None
    for _ in range(repeat):
        t = CLOCK()
        out = fn()
        dt = CLOCK() - t
        best = min(best, dt)
        if dt > cap_s:
            break
    return best, out


# ----------------------------------------------------------------- real data


def read_longest_cgh(path, n_longest):
    """The ``n_longest`` longest (profile, chromosome) logratio sequences, ordered by position.

    Uses pandas' C parser when it is installed (it comes with dask), else the csv module.
    """
    try:
        import pandas as pd
    except ImportError:
        pd = None
    if pd is not None:
        df = pd.read_csv(path, usecols=["profile.id", "chromosome", "position", "logratio"],
                         dtype={"profile.id": str, "chromosome": str})
        df = df[np.isfinite(df["logratio"].to_numpy())]
        sizes = df.groupby(["profile.id", "chromosome"]).size().sort_values(ascending=False)
        out = []
        for (pid, chrom) in sizes.index[:n_longest]:
            part = df[(df["profile.id"] == pid) & (df["chromosome"] == chrom)].sort_values("position")
            out.append((f"profile {pid} chr {chrom}", part["logratio"].to_numpy(dtype=float)))
        return out
    seqs = {}
    with gzip.open(path, "rt", newline="") as fh:
        reader = csv.reader(fh)
        header = next(reader)
        i_pid, i_chr, i_pos, i_val = (header.index(c) for c in ("profile.id", "chromosome", "position", "logratio"))
        for rec in reader:
            try:
                val = float(rec[i_val])
            except ValueError:
                continue
            if not np.isfinite(val):
                continue
            seqs.setdefault((rec[i_pid], rec[i_chr]), []).append((float(rec[i_pos]), val))
    keys = sorted(seqs, key=lambda k: -len(seqs[k]))[:n_longest]
    out = []
    for k in keys:
        arr = np.array(sorted(seqs[k]))
        out.append((f"profile {k[0]} chr {k[1]}", arr[:, 1]))
    return out


def cgh_penalty(y):
    sigma = np.median(np.abs(np.diff(y))) / 0.6745 / np.sqrt(2.0)
    return 2.0 * sigma ** 2 * np.log(len(y))


def partial_label_case(rep, quick):
    """Time the violation-loss decoder with its tree of bounds and as a plain scan of every start.

    A long sequence with few changes and a region label every 1,000 samples (alternately
    ``0breakpoints`` and ``1breakpoint``), as an aCGH chromosome of the high-density arrays.
    Returns ``(T, ours s, plain s, relative objective gap)``.
    """
    from marginalia.models._violation_dp import violation_dp

    T = 5_000 if quick else 20_000
    Z = piecewise(T, 6, T // 5, 7)
    starts = np.arange(300, T - 700, 1000, dtype=np.int64)
    stops = starts + 400
    rid = np.full(T + 1, -1, np.int64)
    for r, a in enumerate(starts):
        rid[a + 1:stops[r]] = r
    lo = (np.arange(len(starts)) % 2).astype(np.int64)  # 0breakpoints, 1breakpoint, ...
    hi = lo.copy()
    args = (Z, 6.0 * np.log(T), 3, rid, lo, hi, starts, stops, np.zeros(T + 1), 5.0, False)
    t_ours, (_, v_ours) = best_time(lambda: violation_dp(*args, True), rep)
    t_plain, (_, v_plain) = best_time(lambda: violation_dp(*args, False), 1)
    return T, t_ours, t_plain, abs(v_ours - v_plain) / max(1.0, abs(v_plain))


# ----------------------------------------------------------------- main


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="fewer repeats and smaller references (< 1 minute)")
    ap.add_argument("--data", default=str(ROOT.parent / "shared" / "data"), help="folder of the shared real data")
    ap.add_argument("--repeat", type=int, default=None, help="runs per timing (best is kept)")
    ap.add_argument("--clock", choices=["wall", "cpu"], default="wall",
                    help="wall-clock time, or this process's CPU time (steadier on a shared, overloaded "
                         "machine; every timed code path here is single-threaded)")
    args = ap.parse_args(argv)
    global CLOCK
    CLOCK = time.process_time if args.clock == "cpu" else time.perf_counter
    quick = args.quick
    rep = args.repeat or (3 if quick else 7)
    rpt = ruptures_or_none()
    rows = []
    checks = []
    load = os.getloadavg()[0]

    # warm the numba caches (compilation is measured separately by the fresh-process row)
    Xw = piecewise(300, 2, 30, 9)
    segment_penalized(Xw, 5.0)
    segment_second_best(Xw, 5.0)
    segment_fixed_k(Xw, 3)
    segment_loss_augmented(Xw, 5.0, Segmentation([100, 300]))
    naive_penalized(Xw[:20], 1.0)

    def check(name, X, cost, beta):
        ref_cost = naive_penalized(X, beta)
        rel = abs(cost - ref_cost) / max(1.0, abs(ref_cost))
        checks.append((name, rel))
        return rel

    # --- penalized, changes every 100, T=1e4, p=20
    T, p = 10_000, 20
    X = piecewise(T, p, 100, 0)
    beta = 2.0 * p * np.log(T)
    t_ours, r = best_time(lambda: segment_penalized(X, beta), rep)
    t_naive, _ = best_time(lambda: naive_penalized(X, beta), 1 if quick else 2)
    check("penalized changes", X, r.cost, beta)
    t_kcpd = None
    if rpt is not None:
        algo = rpt.KernelCPD(kernel="linear", min_size=1)
        t_kcpd, _ = timed_ruptures(lambda: algo.fit(X).predict(pen=beta), rep, 5.0)
    rows.append(row(f"penalized T=1e4 p=20, change every 100 ({r.segmentation.n_segments} segments)", t_ours, "s",
                    0.020, reference=ref("naive numba O(T^2)", t_naive)))
    if t_kcpd is not None:
        rows.append(row("  same, ruptures.KernelCPD(linear) time", t_kcpd, "s", None,
                        reference=ref("ours", t_ours)))
        # issue #45: at least as fast as the fastest reference of the same run
        rows.append(row("  speed-up over ruptures.KernelCPD(linear)", t_kcpd / t_ours, "x", 1.0, better="higher"))

    # ruptures.Pelt is pure Python: compare on a smaller T
    if rpt is not None:
        Tp = 500 if quick else 2000
        Xp = piecewise(Tp, p, 100, 1)
        bp = 2.0 * p * np.log(Tp)
        t_small, rs = best_time(lambda: segment_penalized(Xp, bp), rep)
        t_pelt, bk = timed_ruptures(lambda: rpt.Pelt(model="l2", min_size=1, jump=1).fit(Xp).predict(pen=bp),
                                    1 if quick else 2, 30.0)
        same = float(segmentation_cost(Xp, Segmentation(bk), bp) >= rs.cost - 1e-6 * abs(rs.cost))
        rows.append(row(f"penalized T={Tp} p=20 (ruptures.Pelt l2 size)", t_small, "s", None,
                        reference=ref("ruptures.Pelt(l2)", t_pelt)))
        rows.append(row(f"  speed-up over ruptures.Pelt at T={Tp}", t_pelt / t_small, "x", None, better="higher"))
        checks.append(("Pelt cost >= ours", 0.0 if same else 1.0))

    # --- second best and loss-augmented, relative to plain, on the same data
    plain = lambda: segment_penalized(X, beta)  # noqa: E731
    truth = Segmentation(np.arange(100, T + 1, 100), T)
    pr = 2 * rep + 1
    tp1, t_sec, (b1, b2) = best_pair(plain, lambda: segment_second_best(X, beta), pr)
    tp2, t_frob, la = best_pair(plain, lambda: segment_loss_augmented(X, beta, truth, loss="frobenius"), pr)
    tp3, t_ham, _ = best_pair(plain, lambda: segment_loss_augmented(X, beta, truth, loss="hamming"), pr)
    rows.append(row("second-best / plain (T=1e4 p=20, changes)", t_sec / tp1, "x", 1.3,
                    reference=ref("plain decoder s", tp1)))
    rows.append(row("loss-augmented Frobenius / plain", t_frob / tp2, "x", 1.2,
                    reference=ref("plain decoder s", tp2)))
    rows.append(row("loss-augmented Hamming / plain", t_ham / tp3, "x", 1.2,
                    reference=ref("plain decoder s", tp3)))
    checks.append(("second != best", float(b2 is None or b2.segmentation == b1.segmentation)))

    # --- partial-label loss-augmented decoding (the SSVM's oracle under region labels)
    T_pl, t_pl, t_pl_plain, gap = partial_label_case(rep, quick)
    checks.append(("partial-label decoder vs plain scan", gap))
    rows.append(row(f"partial-label loss-augmented T={T_pl} p=6, 4 changes, {T_pl // 1000} labels", t_pl, "s", None,
                    reference=ref("same DP scanning every start", t_pl_plain)))

    # --- penalized, no change at all
    X0 = np.random.default_rng(2).normal(size=(T, p))
    t0, r0 = best_time(lambda: segment_penalized(X0, beta), rep)
    t_naive0, _ = best_time(lambda: naive_penalized(X0, beta), 1 if quick else 2)
    check("penalized no change", X0, r0.cost, beta)
    rows.append(row("penalized T=1e4 p=20, no change", t0, "s", 0.15, reference=ref("naive numba O(T^2)", t_naive0)))
    t00, t_sec0, _ = best_pair(lambda: segment_penalized(X0, beta), lambda: segment_second_best(X0, beta), rep)
    rows.append(row("second-best / plain (T=1e4 p=20, no change)", t_sec0 / t00, "x", 1.3,
                    reference=ref("plain decoder s", t00)))

    # --- penalized, T=1e5, p=1
    T1 = 100_000
    X1 = piecewise(T1, 1, 100, 3)
    b1p = 2.0 * np.log(T1)
    t1, r1 = best_time(lambda: segment_penalized(X1, b1p), rep)
    ref1 = None
    if not quick:
        ref1, _ = best_time(lambda: naive_penalized(X1, b1p), 1)
        check("penalized 1e5", X1, r1.cost, b1p)
    rows.append(row(f"penalized T=1e5 p=1, change every 100 ({r1.segmentation.n_segments} segments)", t1, "s", 0.3,
                    reference=ref("naive numba O(T^2)", ref1)))

    # --- fixed K
    XK = piecewise(T, p, 1000, 4)
    tK, rK = best_time(lambda: segment_fixed_k(XK, 10), rep)
    t_kK = None
    if rpt is not None:
        algo = rpt.KernelCPD(kernel="linear", min_size=1)
        t_kK, bk = timed_ruptures(lambda: algo.fit(XK).predict(n_bkps=9), 1 if quick else 3, 10.0)
        checks.append(("KernelCPD K cost >= ours",
                       float(segmentation_cost(XK, Segmentation(bk)) < rK.cost * (1 - 1e-9))))
    rows.append(row("fixed K=10 T=1e4 p=20", tK, "s", 0.3, reference=ref("ruptures.KernelCPD(linear)", t_kK)))
    tK2, tKs, (k1, k2) = best_pair(lambda: segment_fixed_k(XK, 10), lambda: segment_second_best(XK, n_segments=10),
                                   rep)
    rows.append(row("fixed K=10 second-best / plain", tKs / tK2, "x", 1.3, reference=ref("plain fixed K s", tK2)))
    if rpt is not None:
        Td = 150 if quick else 600
        Xd = piecewise(Td, p, 60, 5)
        t_ours_d, rd = best_time(lambda: segment_fixed_k(Xd, 10), rep)
        t_dynp, bk = timed_ruptures(lambda: rpt.Dynp(model="l2", min_size=1, jump=1).fit(Xd).predict(n_bkps=9),
                                    1, 30.0)
        rows.append(row(f"fixed K=10 T={Td} p=20 (ruptures.Dynp size)", t_ours_d, "s", None,
                        reference=ref("ruptures.Dynp(l2)", t_dynp)))
        checks.append(("Dynp cost >= ours", float(segmentation_cost(Xd, Segmentation(bk)) < rd.cost * (1 - 1e-9))))

    # --- first call in a fresh process
    clk = "process_time" if args.clock == "cpu" else "perf_counter"
    code = (f"import time; t=time.{clk}(); import numpy as np; "
            "from marginalia.decoders.segmentation import segment_penalized; "
            f"segment_penalized(np.arange(50.0).reshape(25, 2), 1.0); print(time.{clk}()-t)")
    firsts = []
    for _ in range(1 if quick else 3):
        out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=600)
        firsts.append(float(out.stdout.strip().splitlines()[-1]))
    rows.append(row("first call in a fresh process (import + cached kernels)", min(firsts), "s", 1.0))

    # --- real aCGH data
    path = pathlib.Path(args.data) / "cgh" / "neuroblastoma" / "profiles_all.csv.gz"
    real_note = ""
    if path.exists():
        t_read = time.perf_counter()
        seqs = read_longest_cgh(path, 3 if quick else 10)
        t_read = time.perf_counter() - t_read
        total_ours = 0.0
        total_kcpd = 0.0
        for i, (name, y) in enumerate(seqs):
            bcgh = cgh_penalty(y)
            ty, ry = best_time(lambda: segment_penalized(y, bcgh), rep)
            total_ours += ty
            tk = None
            if rpt is not None and (i == 0 or not quick):
                algo = rpt.KernelCPD(kernel="linear", min_size=1)
                tk, bk = timed_ruptures(lambda: algo.fit(y[:, None]).predict(pen=bcgh), 1, 20.0)
                total_kcpd += tk
                checks.append((f"KernelCPD cost >= ours on {name}",
                               float(segmentation_cost(y, Segmentation(bk), bcgh) < ry.cost * (1 - 1e-9)
                                     - 1e-9)))
            if i == 0:
                rows.append(row(f"real aCGH, longest: {name}, T={len(y)} ({ry.segmentation.n_segments} segments)",
                                ty, "s", 0.3, reference=ref("ruptures.KernelCPD(linear)", tk)))
                if not quick:
                    tn, _ = best_time(lambda: naive_penalized(y[:, None], bcgh), 1)
                    rows.append(row("  same, naive numba O(T^2)", tn, "s", None, reference=ref("ours", ty)))
                    check("real longest", y[:, None], ry.cost, bcgh)
        rows.append(row(f"real aCGH, {len(seqs)} longest sequences (T {len(seqs[-1][1])}..{len(seqs[0][1])}), total",
                        total_ours, "s", None,
                        reference=ref("ruptures.KernelCPD(linear)", total_kcpd if rpt is not None and not quick
                                      else None)))
        real_note = f"(parsed {path.name} in {t_read:.1f} s)"
    else:
        real_note = f"(real data not found at {path}; rows skipped)"

    worst = max(v for _, v in checks) if checks else 0.0
    rows.append(row("exactness: worst check (relative cost gap to the naive DP / failed checks)", worst, "", 1e-9))

    RESULTS.mkdir(parents=True, exist_ok=True)
    out = RESULTS / "decoders_segmentation.json"
    out.write_text(json.dumps(rows, indent=2))
    print(f"segmentation decoders  ({args.clock} clock, load average {load:.2f} at start, {os.cpu_count()} cpus, "
          f"best of {rep}) {real_note}")
    w = max(len(r["case"]) for r in rows)
    print(f"{'case':<{w}}  {'value':>10} {'unit':<4} {'target':>8}  {'ok':<5} reference")
    for r in rows:
        ratio = ""
        if r["reference"] is not None and r["unit"] == "s" and r["value"]:
            if r["reference"]["name"] == "ours":
                ratio = f"(this / ours = {r['value'] / r['reference']['value']:.2f})"
            else:
                ratio = f"(reference / ours = {r['reference']['value'] / r['value']:.1f})"
        print(format_row(r, width=w, note=ratio))
    for name, v in checks:
        if v > 1e-9:
            print(f"CHECK FAILED: {name}: {v}")
    print(f"load average now {os.getloadavg()[0]:.2f}; wrote {out.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
