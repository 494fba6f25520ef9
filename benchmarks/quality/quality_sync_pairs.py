"""Does the sync aligner hold on pianist pairs it was not tuned on? quality_sync on several test pairs, and the spread.

usage: python -m benchmarks.quality.quality_sync_pairs [--pairs p05:p06,p07:p08,p09:p10,p11:p12,p13:p14]
                                                       [--summary-only] [--data DIR]

The onset descriptor was chosen on p01 vs p02 and the metric is learned on p03 vs p04; these pairs were
used for neither. Runs ``python -m benchmarks.quality.quality_sync --test-pair P --no-long --out
benchmarks/results/quality_sync_<P>.json`` for every pair (``--summary-only``: read the files of an
earlier run), then prints per pair the learned aligner's median, share within 50 ms and worst error,
the same share for the Euclidean cost and the references, and their spread over the pairs.
Writes ``benchmarks/results/quality_sync_pairs.json``.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys

import numpy as np

from benchmarks._common import ROOT, result_row, write_rows

RESULTS = ROOT / "benchmarks" / "results"
PAIRS = "p05:p06,p07:p08,p09:p10,p11:p12,p13:p14"
METHODS = ("ours learned", "ours Euclidean", "ours learned, unrefined", "ours Euclidean, unrefined",
           "librosa chroma DTW", "Sync Toolbox MrMsDTW")


def pair_file(pair: str):
    return RESULTS / f"quality_sync_{pair.replace(':', '_')}.json"


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--pairs", default=PAIRS, help="comma-separated reference:target pianist pairs")
    ap.add_argument("--summary-only", action="store_true", help="summarise the files of an earlier run")
    ap.add_argument("--data", default=str(ROOT.parent / "shared" / "data"), help="the shared data folder")
    args = ap.parse_args(argv)
    pairs = [p for p in args.pairs.split(",") if p]
    if not args.summary_only:
        for pair in pairs:
            subprocess.run([sys.executable, "-m", "benchmarks.quality.quality_sync", "--test-pair", pair, "--no-long",
                            "--data", args.data, "--out", str(pair_file(pair))], check=True, cwd=ROOT)
    totals = {}
    for pair in pairs:
        path = pair_file(pair)
        if not path.is_file():
            raise SystemExit(f"{path}: missing; run without --summary-only first")
        totals[pair] = json.loads(path.read_text())["totals"]
    print(f"\n{'pair':9s} {'method':26s} {'median ms':>9s} {'<=50 ms %':>9s} {'worst s':>8s} {'notes':>6s}")
    for pair, t in totals.items():
        for m in METHODS:
            if m in t:
                s = t[m]
                print(f"{pair:9s} {m:26s} {s['median_ms']:9.1f} {s['within_50ms_pct']:9.1f} {s['worst_s']:8.2f} "
                      f"{s['n']:6d}")
    rows = []
    spread = {}
    for m in METHODS:
        have = [t[m] for t in totals.values() if m in t]
        if not have:
            continue
        spread[m] = {}
        for key, unit, better in (("median_ms", "ms", "lower"), ("within_50ms_pct", "%", "higher"),
                                  ("worst_s", "s", "lower")):
            v = np.array([s[key] for s in have])
            spread[m][key] = {"min": float(v.min()), "max": float(v.max()), "mean": float(v.mean()),
                              "std": float(v.std(ddof=1)) if v.size > 1 else 0.0}
            rows.append(result_row(f"{m}: {key}, mean over {v.size} pairs (min {v.min():.3g}, max {v.max():.3g})",
                                   float(v.mean()), unit, better=better))
        n = sum(s["n"] for s in have)
        beyond = sum(s["beyond_50ms"] for s in have)
        rows.append(result_row(f"{m}: within 50 ms, all pairs' notes pooled ({n})", 100.0 * (n - beyond) / n, "%",
                               better="higher"))
    le = [t["ours learned"]["beyond_50ms"] for t in totals.values()]
    eu = [t["ours Euclidean"]["beyond_50ms"] for t in totals.values()]
    per_pair = [100.0 * (e - l) / e if e else 0.0 for l, e in zip(le, eu)]
    rows.append(result_row(f"learned vs Euclidean: fewer errors > 50 ms, pooled (per pair {min(per_pair):.0f} to "
                           f"{max(per_pair):.0f} %)", 100.0 * (sum(eu) - sum(le)) / max(sum(eu), 1), "%",
                           better="higher"))
    write_rows(RESULTS / "quality_sync_pairs.json", {"benchmark": "quality_sync_pairs", "pairs": pairs,
                                                     "totals": totals, "spread": spread, "rows": rows})


if __name__ == "__main__":
    main()
