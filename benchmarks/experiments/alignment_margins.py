"""Do the aligner's per-event margins say where it is wrong? The alignment grid's hardest conditions, event by event.

usage: python -m benchmarks.experiments.alignment_margins [--conditions KEY,KEY] [--data DIR]

``marginalia-cli align`` writes, next to every onset, its *margin*: what the best move of that one onset (within
half a second) costs the aligner's objective (``AlignmentOutput.event_margins``), and prints the five onsets with
the smallest margins as the places to check first. This script aligns the held-out Vienna 4x22 performances of
the alignment grid (``benchmarks.quality.alignment_grid``: same subset, same renders and truth) under the
conditions where the aligner misses its targets (rooms, tempi) and the dry baseline, and reports how well the
margin ranks the onsets that are wrong: the area under the ROC curve of ``-margin`` for errors beyond 50 ms and
250 ms, and the share of those errors among the 2 %, 5 % and 10 % of onsets with the smallest margins (by
chance, the 5 % least sure would hold 5 % of them). Writes ``benchmarks/results/alignment_margins.json``.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np

from benchmarks._common import ROOT

RESULTS = ROOT / "benchmarks" / "results"
DEFAULT = ("fluidr3", "fluidr3_room", "timgm6mb_room", "musescore_room", "fluidr3_tempo0.33", "fluidr3_tempo0.5",
           "fluidr3_tempo2")


def roc_auc(score: np.ndarray, positive: np.ndarray) -> float:
    """Area under the ROC curve of ``score`` for the ``positive`` labels (ties count half)."""
    from scipy.stats import rankdata
    pos = np.asarray(positive, bool)
    n_pos, n_neg = int(pos.sum()), int((~pos).sum())
    if n_pos == 0 or n_neg == 0:
        return float("nan")
    ranks = rankdata(score)
    return float((ranks[pos].sum() - n_pos * (n_pos + 1) / 2) / (n_pos * n_neg))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--conditions", default=",".join(DEFAULT), help="alignment grid condition keys")
    ap.add_argument("--data", default=str(ROOT.parent / "shared" / "data"), help="the shared data folder")
    args = ap.parse_args(argv)
    import benchmarks.quality.alignment_grid as grid
    from marginalia.align import align_recording

    t0 = time.time()
    keys = args.conditions.split(",")
    conds = [c for c in grid.CONDITIONS if c.key in keys]
    unknown = sorted(set(keys) - {c.key for c in conds})
    if unknown:
        raise SystemExit(f"--conditions: unknown {unknown}; expected some of {[c.key for c in grid.CONDITIONS]}")
    perfs = grid.subset(Path(args.data) / "alignment" / "vienna4x22", 2, None)
    lags = {key: grid.measure_lag(grid.CACHE, grid.SR, grid.FONTS[key]) for key in {c.font for c in conds}}
    margins, errors = [], []
    for c in conds:
        for it in grid.items_for(c, perfs, lags, Path(args.data) / "alignment" / "bach_chorales"):
            out = align_recording(it["ours"], it["score"])
            ok = np.isfinite(it["truth"])
            margins.append(np.asarray(out.event_margins)[ok])
            errors.append(np.abs(np.asarray(out.event_times_s) - it["truth"])[ok])
        print(f"  {c.title} ({time.time() - t0:.0f} s)", flush=True)
    m, err = np.concatenate(margins), np.concatenate(errors)
    order = np.argsort(m, kind="stable")
    rows = []
    print(f"\n{m.size} onsets of {len(perfs)} held-out performances under {len(conds)} conditions "
          f"({', '.join(c.key for c in conds)}); {time.time() - t0:.0f} s")
    for limit in (0.05, 0.25):
        wrong = err > limit
        row = {"errors_beyond_s": limit, "errors": int(wrong.sum()), "onsets": int(m.size),
               "auc": roc_auc(-m, wrong)}
        line = f"beyond {limit * 1000:.0f} ms: {wrong.sum()} onsets, AUC of -margin {row['auc']:.3f}; the least sure"
        for share in (0.02, 0.05, 0.10):
            k = int(round(share * m.size))
            caught = float(wrong[order[:k]].sum() / max(wrong.sum(), 1))
            row[f"caught_by_lowest_{share:.0%}"] = caught
            line += f" {share:.0%} hold {caught:.1%}" + ("," if share < 0.10 else "")
        rows.append(row)
        print(line)
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / "alignment_margins.json").write_text(json.dumps({"conditions": keys, "rows": rows}, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
