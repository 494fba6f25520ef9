"""Batch prediction of every neuroblastoma aCGH sequence on Dask: 1 vs 2 workers.

Usage: ``python -m benchmarks.speed.batch [--quick] [--data DIR] [--repeat N] [--scheduler]``

For each profile table (``profiles_small``: 233 sequences of <= 5k probes;
``profiles_all``: 300 sequences up to ~10^5 probes) it runs the same per-item
work as ``marginalia-cli batch predict`` (workers read the table themselves,
compute the aCGH features, decode, write each item's segments and breaks
atomically) on a ``distributed.LocalCluster`` of 1 and of 2 single-threaded
worker processes, and reports

* ``steady wall`` -- the batch after the workers are warm (modules imported,
  numba caches loaded, the table parsed once per worker): the speed-up of 2
  workers over 1 is the figure with a target (>= 1.7x);
* ``end-to-end wall`` -- the whole command: cluster start, worker warm-up and
  the batch;
* per-item throughput;
* the workers' busy fraction (CPU seconds the items got / (workers x wall)):
  on a shared machine it shows whether a missed speed-up comes from the
  batch machinery or from cores that were not there to take;
* the reference: the same items one after another in this process without
  Dask (what ``marginalia-cli predict`` does), timed in the same run;
* with ``--scheduler``: the same batch on a ``dask scheduler`` and two ``dask worker``
  processes started from the command line (what ``marginalia-cli batch --scheduler`` meets on a
  cluster), against the 1-worker local cluster.

The model is the app's starting aCGH model (logratio weight 1, Hermite
weights 0, BIC-like penalty), which decodes at the cost of a trained one.
Results go to ``benchmarks/results/batch.json``. The machine is shared, so
each timing is the best of ``--repeat`` runs and the load average is printed.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

from benchmarks._common import ROOT, format_row, result_row, save_rows, scratch  # noqa: E402

SPEEDUP_TARGET = 1.7


def build_model(profiles: Path, out: Path) -> tuple:
    """Save the app's starting aCGH model (fit on the table's units) to ``out``; returns (path, sha)."""
    import warnings

    import numpy as np

    from marginalia.io.cgh import read_profiles
    from marginalia.models.files import TrainedModel, save_model, sequence_features
    from marginalia.models.segmentation import SegmentationModel

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        seqs = read_profiles(profiles)
    model = SegmentationModel(metric="diagonal")
    model.fit_scales([sequence_features(s, "cgh-hermite") for s in seqs[:40]])
    p = model._p()
    B = np.zeros(p)
    B[0] = 1.0
    w = model.join_w(B, 2.0 / p)
    sha = save_model(out, TrainedModel("segmentation", "cgh-hermite", model, w, {"benchmark": "batch"}))
    return out, sha


def _warm(model_path, sha, profiles, key, out_dir):
    """Run one item on a worker: imports, numba caches, model and table loaded."""
    from marginalia.cli_commands._work import predict_profile
    predict_profile(model_path, sha, profiles, key[0], key[1], out_dir=out_dir)
    return os.getpid()


def run_cluster(n_workers: int, model_path, sha, profiles: Path, tasks, work: Path, repeat: int,
                scheduler: "str | None" = None) -> dict:
    """Best-of-``repeat`` steady-state wall and the end-to-end wall of the first run.

    On a fresh LocalCluster of ``n_workers`` processes, or (``scheduler``: its address) on a running
    scheduler whose ``n_workers`` workers are already connected.
    """
    from marginalia.batch import open_client, run_batch
    from marginalia.cli_commands._work import merge_profile_outputs, predict_profile
    t0 = time.perf_counter()
    opened = open_client(scheduler, timeout=60) if scheduler else \
        open_client(n_workers=n_workers, processes=True, threads_per_worker=1, timeout=60)
    tag = f"{'s' if scheduler else ''}{n_workers}"
    with opened as client:
        client.wait_for_workers(n_workers, timeout=120)
        first = tasks[0].args
        warm_dir = work / f"warm{tag}"
        client.run(_warm, str(model_path), sha, str(profiles), (first[3], first[4]), str(warm_dir))
        best, busy = float("inf"), 0.0
        for r in range(repeat):
            out = work / f"w{tag}_{r}"
            rep = run_batch(predict_profile, tasks, out_dir=out, fingerprint=sha, client=client, resume=False)
            if rep.failed:
                raise RuntimeError(f"{len(rep.failed)} items failed, first: {rep.failed[0]}")
            if rep.wall_s < best:
                best, busy = rep.wall_s, rep.cpu_s / (n_workers * rep.wall_s)
            if r == 0:
                end_to_end = time.perf_counter() - t0
                merge_profile_outputs(out, [t.key for t in tasks])
    return {"steady": best, "busy": busy, "end_to_end": end_to_end, "out": work / f"w{tag}_0"}


class DaskProcesses:
    """A ``dask scheduler`` and ``n_workers`` single-threaded ``dask worker`` processes, as a user starts them."""

    def __init__(self, n_workers: int, work: Path):
        import socket
        import subprocess
        with socket.socket() as sock:
            sock.bind(("127.0.0.1", 0))
            port = sock.getsockname()[1]
        self.address = f"tcp://127.0.0.1:{port}"
        dask = str(Path(sys.executable).with_name("dask"))
        self.log = open(work / "dask_processes.log", "w")
        self.procs = [subprocess.Popen([dask, "scheduler", "--host", "127.0.0.1", "--port", str(port),
                                        "--no-dashboard"], stdout=self.log, stderr=subprocess.STDOUT)]
        self.procs += [subprocess.Popen([dask, "worker", self.address, "--nthreads", "1", "--nworkers", "1",
                                         "--no-dashboard", "--local-directory", str(work / f"dask-worker-{i}")],
                                        stdout=self.log, stderr=subprocess.STDOUT) for i in range(n_workers)]

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        for proc in reversed(self.procs):
            proc.terminate()
        for proc in self.procs:
            try:
                proc.wait(timeout=20)
            except Exception:
                proc.kill()
        self.log.close()


def run_in_process(model_path, sha, profiles: Path, tasks, work: Path, repeat: int) -> float:
    from marginalia.batch import run_batch
    from marginalia.cli_commands._work import cached_profiles, predict_profile
    cached_profiles(profiles)  # parsed once, as on a warm worker
    _warm(str(model_path), sha, str(profiles), (tasks[0].args[3], tasks[0].args[4]), str(work / "warm0"))
    best = float("inf")
    for r in range(repeat):
        rep = run_batch(predict_profile, tasks, out_dir=work / f"local_{r}", fingerprint=sha, resume=False)
        best = min(best, rep.wall_s)
    return best


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="profiles_small only, one run each (under a minute)")
    ap.add_argument("--data", default=str(ROOT.parent / "shared" / "data"),
                    help="the shared data folder (default ../shared/data from the repo root)")
    ap.add_argument("--repeat", type=int, default=None, help="runs per setting, best kept (default 2, quick 1)")
    ap.add_argument("--scheduler", action="store_true",
                    help="also run the 2 workers as separate `dask scheduler` + 2 `dask worker` processes")
    args = ap.parse_args(argv)
    folder = Path(args.data) / "cgh" / "neuroblastoma"
    tables = ["profiles_small"] if args.quick else ["profiles_small", "profiles_all"]
    repeat = args.repeat or (1 if args.quick else 2)
    missing = [t for t in tables if not (folder / f"{t}.csv.gz").is_file()]
    if missing:
        print(f"batch benchmark: {folder} has no {', '.join(missing)}.csv.gz; pass --data", file=sys.stderr)
        return 2
    from marginalia.cli_commands._work import profile_keys, profile_tasks

    rows = []
    load_before = os.getloadavg()
    print(f"load average before: {load_before[0]:.2f} {load_before[1]:.2f} {load_before[2]:.2f} "
          f"on {os.cpu_count()} cores; best of {repeat}")
    with scratch("marginalia-bench-batch-") as work:
        for name in tables:
            profiles = folder / f"{name}.csv.gz"
            model_path, sha = build_model(profiles, work / f"{name}.model")
            tasks = profile_tasks(model_path, sha, profiles, keys=profile_keys(profiles))
            n = len(tasks)
            local = run_in_process(model_path, sha, profiles, tasks, work / name, repeat)
            one = run_cluster(1, model_path, sha, profiles, tasks, work / name, repeat)
            two = run_cluster(2, model_path, sha, profiles, tasks, work / name, repeat)
            same = all((one["out"] / f).read_bytes() == (two["out"] / f).read_bytes()
                       for f in ("breaks.csv", "segments.csv"))
            speedup = one["steady"] / two["steady"]
            ref = {"name": "in-process loop, no Dask", "value": local}
            external = []
            if args.scheduler:
                with DaskProcesses(2, work) as cluster:
                    ext = run_cluster(2, model_path, sha, profiles, tasks, work / name, repeat, cluster.address)
                ext_same = all((one["out"] / f).read_bytes() == (ext["out"] / f).read_bytes()
                               for f in ("breaks.csv", "segments.csv"))
                external = [
                    result_row(f"{name}: dask scheduler + 2 dask worker processes, steady wall", ext["steady"], "s",
                               reference=ref),
                    result_row(f"{name}: speed-up of scheduler + 2 workers vs 1 local worker",
                               one["steady"] / ext["steady"], "x", SPEEDUP_TARGET, "higher",
                               meets=one["steady"] / ext["steady"] >= SPEEDUP_TARGET),
                    result_row(f"{name}: scheduler + 2 workers busy fraction", ext["busy"], "ratio", better="higher"),
                    result_row(f"{name}: scheduler + 2 workers outputs identical to 1-worker outputs",
                               float(ext_same), "bool", 1.0, "higher", meets=ext_same),
                ]
            rows += [
                result_row(f"{name}: {n} sequences, 1 worker, steady wall", one["steady"], "s", reference=ref),
                result_row(f"{name}: {n} sequences, 2 workers, steady wall", two["steady"], "s", reference=ref),
                result_row(f"{name}: speed-up 2 vs 1 workers", speedup, "x", SPEEDUP_TARGET, "higher",
                           meets=speedup >= SPEEDUP_TARGET),
                result_row(f"{name}: 2 workers throughput", n / two["steady"], "items/s", better="higher",
                           reference={"name": "in-process loop, no Dask", "value": n / local}),
                # CPU the items got / (workers x wall): below 1 when the machine lends less than a core per worker
                result_row(f"{name}: 1 worker busy fraction (item CPU / wall)", one["busy"], "ratio", better="higher"),
                result_row(f"{name}: 2 workers busy fraction (item CPU / (2 x wall))", two["busy"], "ratio",
                           better="higher"),
                result_row(f"{name}: 1 worker end-to-end wall (cluster start + warm-up + batch)", one["end_to_end"],
                           "s"),
                result_row(f"{name}: 2 workers end-to-end wall (cluster start + warm-up + batch)", two["end_to_end"],
                           "s"),
                result_row(f"{name}: 2-worker outputs identical to 1-worker outputs", float(same), "bool", 1.0,
                           "higher", meets=same),
            ] + external
    load_after = os.getloadavg()
    width = max(len(r["case"]) for r in rows)
    for r in rows:
        print(format_row(r, width=width))
    print(f"load average after: {load_after[0]:.2f} {load_after[1]:.2f} {load_after[2]:.2f}")
    save_rows(ROOT / "benchmarks" / "results" / "batch.json", rows)
    return 0


if __name__ == "__main__":
    sys.exit(main())
