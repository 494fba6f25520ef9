"""A prior model carried into a new project, through the app's engine path (issue 47, point 7).

The prior: the aCGH recipe trained on every labelled low-density (BAC) sequence of the neuroblastoma
profiles (``marginalia-cli train``'s default recipe, written as its model file). The target: the
high-density (oligo) sequences of ``profiles_small`` (at most 5,000 probes), split by profile as in
``benchmarks/quality/transfer_recipe_cgh.py`` (``target_splits``: a third of the profiles held out,
the reveal order of the pool fixed per seed). For each draw, one project holds the draw's revealed and
held-out chromosomes (imported from a CSV like any user's table) and labels the revealed ones
(``--reveal``, a few: the engine's plain-SSVM range, below the recipe's 8 chromosomes); then

1. ``prior``: Model ▸ Start from… (:meth:`Engine.start_from`) — the held-out predictions of the prior;
2. ``coupled rho=R``: a retrain coupled to the prior (Lou et al. eq. 1.9, the source frozen at the prior;
   ``--rho``, default 1, the recipe's coupling of platforms, fixed before this run);
3. ``target-only``: a second project with the same chromosomes and labels and no prior, retrained;
4. ``from the project, eq. 1.9 rho=R`` (``--faithful``): the same low-density sequences and labels as a source
   *project* (retrained by the engine: the recipe), and Model ▸ Start from… that project: its labelled items are
   copied into the new project and a retrain fits both datasets coupled by ``rho``
   (:class:`~marginalia.learners.transfer.TransferSSVM`, the faithful eq. 1.9); ``from the project: prior`` is
   that project's model before the retrain.

Scored on the held-out chromosomes' labelled regions with :func:`marginalia.metrics.region_errors` on
the engine's predictions (label error = (FP + FN) / labelled regions), mean ± sd over draws, and the
per-draw difference to target-only.

Usage: ``python -m benchmarks.quality.transfer_project_cgh [--quick] [--data DIR] [--splits 6] [--reveal 4]
[--rho 1] [--no-faithful] [--out FILE]``. Writes ``benchmarks/results/transfer_project_cgh.json`` (or ``--out``).
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
import warnings
from pathlib import Path

import numpy as np

from benchmarks._common import ROOT, cgh_data_missing, reference, result_row, save_rows  # noqa: E402
from benchmarks.experiments.transfer_cgh import platforms, target_splits, wins_ties_losses  # noqa: E402
from benchmarks.quality.quality_cgh import load  # noqa: E402
from marginalia.cgh.recipe import CghSegmenter  # noqa: E402
from marginalia.engine import Engine  # noqa: E402
from marginalia.metrics import RegionErrors, region_errors  # noqa: E402
from marginalia.models.files import save_model  # noqa: E402
from marginalia.types import RegionLabel  # noqa: E402


def write_profiles(path: Path, items) -> None:
    """The sequences as a ``profile.id,chromosome,position,logratio`` table (what a user imports)."""
    rows = ["profile.id,chromosome,position,logratio"]
    for seq, _ in items:
        pid, chrom = seq.meta["profile_id"], seq.meta["chromosome"]
        rows += [f"{pid},{chrom},{int(p)},{float(v)!r}" for p, v in zip(seq.positions, seq.values[:, 0])]
    path.write_text("\n".join(rows) + "\n")


def project(folder: Path, name: str, table: Path, revealed):
    """A project of the table's chromosomes with the revealed ones labelled; ``(engine, item id by name)``."""
    eng = Engine.create(folder / f"{name}.marginalia")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        eng.import_files([table], columns="unit=bp")
    ids = {info.name: info.id for info in eng.items()}
    labels = []
    for seq, labs in revealed:
        labels += [RegionLabel(item_id=ids[seq.name], start=lab.start, stop=lab.stop, kind=lab.kind) for lab in labs
                   if isinstance(lab, RegionLabel)]
    eng.add_labels(labels)
    return eng, ids


def held_out_errors(eng, ids, test) -> RegionErrors:
    total = RegionErrors()
    for seq, labs in test:
        pred = eng.predict(ids[seq.name])
        total = total + region_errors(labs, pred.structure)
    return total


def run(args):
    source, target = platforms(load(args.data))
    print(f"source: {len(source)} low-density sequences; target: {len(target)} high-density sequences of "
          f"{len({s.meta['profile_id'] for s, _ in target})} profiles", flush=True)
    names = ["prior", f"coupled rho={args.rho:g}", "target-only"]
    if args.faithful:
        names += ["from the project: prior", f"from the project, eq. 1.9 rho={args.rho:g}"]
    rows = {m: [] for m in names}
    fpfn = {m: RegionErrors() for m in rows}
    with tempfile.TemporaryDirectory(prefix="transfer-project-") as tmp:
        tmp = Path(tmp)
        c0 = time.process_time()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            recipe = CghSegmenter().fit([s for s, _ in source], [y for _, y in source])
        prior_file = tmp / "low-density.model"
        save_model(prior_file, recipe)
        print(f"prior: the recipe on {len(source)} low-density sequences, {time.process_time() - c0:.0f}s CPU",
              flush=True)
        if args.faithful:
            write_profiles(tmp / "low-density.csv", source)
            src, _ = project(tmp, "low-density", tmp / "low-density.csv", source)
            try:
                src.retrain()
            finally:
                src.close()
            print(f"source project: retrained by the engine, {time.process_time() - c0:.0f}s CPU so far", flush=True)
        for si, (pool, test) in enumerate(target_splits(target, args.splits)):
            rv = [target[i] for i in pool[:args.reveal]]
            te = [target[i] for i in test]
            table = tmp / f"draw{si}.csv"
            write_profiles(table, rv + te)
            eng, ids = project(tmp, f"coupled{si}", table, rv)
            try:
                eng.start_from(prior_file, rho=args.rho)
                got = {"prior": held_out_errors(eng, ids, te)}
                eng.retrain()
                got[f"coupled rho={args.rho:g}"] = held_out_errors(eng, ids, te)
            finally:
                eng.close()
            eng, ids = project(tmp, f"target{si}", table, rv)
            try:
                eng.retrain()
                got["target-only"] = held_out_errors(eng, ids, te)
            finally:
                eng.close()
            if args.faithful:
                eng, ids = project(tmp, f"fromproject{si}", table, rv)
                try:
                    info = eng.start_from(tmp / "low-density.marginalia", rho=args.rho)
                    if "data_id" not in info:
                        raise SystemExit(f"the source project's labels were not copied: {info.get('source_labels')}")
                    got[names[-2]] = held_out_errors(eng, ids, te)
                    eng.retrain()
                    got[names[-1]] = held_out_errors(eng, ids, te)
                finally:
                    eng.close()
            for m, e in got.items():
                rows[m].append(e.rate)
                fpfn[m] = fpfn[m] + e
            print(f"draw {si + 1}/{args.splits}: {len(rv)} labelled, {len(te)} held-out chromosomes "
                  f"({got['prior'].n_labels} regions): " + ", ".join(f"{m} {100 * e.rate:.1f}%" for m, e in got.items())
                  + f"  [{time.process_time() - c0:.0f}s CPU so far]", flush=True)
    return rows, fpfn


def report(args, rows, fpfn) -> list:
    base = np.array(rows["target-only"])
    print(f"\nHeld-out high-density label error, {args.splits} draws by profile, {args.reveal} labelled chromosomes")
    print(f"{'model':<34} {'error':>16} {'FP':>4} {'FN':>4} {'- target-only (pts)':>20} {'wins/ties/losses':>16}")
    out = []
    for m, values in rows.items():
        e = np.array(values)
        d = 100 * (e - base)
        wtl = wins_ties_losses(d)
        print(f"{m:<34} {100 * e.mean():>7.2f} ± {100 * e.std():<5.2f}% {fpfn[m].fp:>4d} {fpfn[m].fn:>4d} "
              f"{d.mean():>+9.2f} ± {d.std():<8.2f} {wtl:>16}")
        ref = None if m == "target-only" else reference("target-only error %", 100 * float(base.mean()))
        r = result_row(f"project transfer, held-out label error, {m}, {args.reveal} labelled chromosomes",
                       100 * float(e.mean()), "%", better="lower", reference=ref)
        r.update(sd=100 * float(e.std()), per_draw=[100 * float(x) for x in e],
                 minus_target_only_mean_sd=[float(d.mean()), float(d.std())])
        out.append(r)
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="2 draws")
    ap.add_argument("--data", default=str(ROOT.parent / "shared" / "data"))
    ap.add_argument("--splits", type=int, default=None, help="random draws by profile (default 6; quick 2)")
    ap.add_argument("--reveal", type=int, default=4, help="labelled high-density chromosomes per draw (default 4)")
    ap.add_argument("--rho", type=float, default=1.0, help="coupling to the prior (default 1, the recipe's)")
    ap.add_argument("--faithful", action=argparse.BooleanOptionalAction, default=True,
                    help="also start from a source project, whose labels a retrain uses (default on)")
    ap.add_argument("--out", default=None, help="results file (default benchmarks/results/transfer_project_cgh.json)")
    args = ap.parse_args(argv)
    args.splits = args.splits or (2 if args.quick else 6)
    if args.splits < 1 or not 1 <= args.reveal < 8 or not args.rho >= 0:
        ap.error(f"expected --splits >= 1, 1 <= --reveal < 8, --rho >= 0; got {args.splits}, {args.reveal}, "
                 f"{args.rho}")
    if cgh_data_missing(args.data):
        return 1
    t0, c0 = time.perf_counter(), time.process_time()
    load_avg = "%.2f %.2f %.2f" % os.getloadavg()
    rows, fpfn = run(args)
    out = report(args, rows, fpfn)
    print(f"total {time.perf_counter() - t0:.0f}s wall, {time.process_time() - c0:.0f}s CPU; load at start {load_avg}, "
          f"at end {'%.2f %.2f %.2f' % os.getloadavg()}")
    save_rows(Path(args.out) if args.out else ROOT / "benchmarks" / "results" / "transfer_project_cgh.json", out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
