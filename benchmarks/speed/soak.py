"""Soak test of the project store: many scripted label edits, memory over time, edit latency; kill runs.

Usage::

    python -m benchmarks.speed.soak [--quick] [--edits N] [--kills K] [--spawn]

Edits mode (default): ``--edits`` (20,000; 2,000 with ``--quick``) scripted
add/add_labels batch/change/delete/undo/redo calls through :class:`marginalia.project.Session` on one
large item, every one a durable transaction. Reports the edit latency p50/p99/max,
the resident memory (RSS, psutil) every 500 edits and its growth, the reopen
time of the final project and the result of ``integrity_check``. Reference,
timed in the same run: the naive alternative of rewriting a JSON file of all
labels (atomic replace + fsync) on every edit, at the final label count.

Kill mode (``--kills K``, also run with ``--quick`` as 20 kills): K child
processes edit one project and are SIGKILLed at random moments (including
while opening); after each kill the reopened project must hold exactly the
edits whose call returned. Children are forks of this process (fast);
``--spawn`` starts a fresh interpreter for each instead.

Writes ``benchmarks/results/soak.json``. The machine is shared: the load
average is printed and stored with the rows.
"""

from __future__ import annotations

import argparse
import json
import os
import pathlib
import random
import shutil
import tempfile
import time

import psutil  # noqa: E402

from benchmarks._common import ROOT, format_row  # noqa: E402
from benchmarks._common import result_row as row  # noqa: E402
from marginalia.project import Session  # noqa: E402
from marginalia.project.codec import label_to_dict  # noqa: E402
from tests.reliability.edit_script import EditModel, apply_to_session, next_op  # noqa: E402

RESULTS = ROOT / "benchmarks" / "results"


def _percentile(sorted_values, q):
    if not sorted_values:
        return float("nan")
    k = min(len(sorted_values) - 1, max(0, int(round(q / 100 * (len(sorted_values) - 1)))))
    return sorted_values[k]


def _naive_json_edit_ms(labels, folder, repeats=30):
    """Median time to rewrite all labels as JSON with fsync + atomic replace (the naive store)."""
    path = folder / "naive.json"
    tmp = folder / "naive.json.tmp"
    data = [label_to_dict(lab) for lab in labels]
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        with open(tmp, "w") as fh:
            json.dump(data, fh)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
        times.append(time.perf_counter() - t0)
    times.sort()
    return 1e3 * times[len(times) // 2]


def soak_edits(n_edits, folder, seed=0):
    proc = psutil.Process()
    path = folder / "soak.marginalia"
    session = Session.create(path)
    item = session.add_item("large", "cgh", "segmentation", meta={"n_samples": 10**6})
    rng = random.Random(seed)
    model = EditModel()  # the expected state, checked against the session every 1,000 edits
    mismatches = 0
    latencies = []
    rss = [(0, proc.memory_info().rss)]
    counts = {"add": 0, "add_many": 0, "change": 0, "delete": 0, "undo": 0, "redo": 0}
    t_start = time.perf_counter()
    for i in range(n_edits):
        op = next_op(rng, model.labels, item, "soak", i)
        t0 = time.perf_counter()
        apply_to_session(session, op)
        latencies.append(time.perf_counter() - t0)
        counts[op[0]] += 1
        model.apply(op)
        if (i + 1) % 500 == 0:
            rss.append((i + 1, proc.memory_info().rss))
        if (i + 1) % 1000 == 0:
            mismatches += {lab.id: lab for lab in session.labels(item)} != model.labels
    wall = time.perf_counter() - t_start
    n_labels = len(session.labels(item))
    log_length = session.store.log_length()
    t0 = time.perf_counter()
    problems = session.integrity_check()
    integrity_s = time.perf_counter() - t0
    labels = session.labels()
    session.close()
    reopen = []
    for _ in range(3):
        t0 = time.perf_counter()
        s = Session.open(path)
        reopen.append(time.perf_counter() - t0)
        same = s.labels() == labels
        s.close()
    naive_ms = _naive_json_edit_ms(labels, folder)
    tenth = max(1, n_edits // 10)
    return dict(latencies=sorted(latencies), first_tenth=sorted(latencies[:tenth]),
                last_tenth=sorted(latencies[-tenth:]), rss=rss, mismatches=mismatches, counts=counts, wall=wall,
                n_labels=n_labels, log_length=log_length, problems=problems, integrity_s=integrity_s,
                reopen_s=min(reopen), same_after_reopen=same, file_mb=path.stat().st_size / 2**20, naive_ms=naive_ms)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="2,000 edits and 20 kills")
    parser.add_argument("--edits", type=int, default=None, help="number of scripted edits (default 20,000)")
    parser.add_argument("--kills", type=int, default=None, help="number of kill runs (default: none, 20 with --quick)")
    parser.add_argument("--spawn", action="store_true", help="kill fresh interpreters instead of forks")
    parser.add_argument("--no-edits", action="store_true", help="only the kill runs")
    parser.add_argument("--data", default=None, help="unused (the soak makes its own data)")
    args = parser.parse_args(argv)
    n_edits = args.edits if args.edits is not None else (2000 if args.quick else 20000)
    n_kills = args.kills if args.kills is not None else (20 if args.quick else 0)
    load = os.getloadavg()
    print(f"load average {load[0]:.2f} {load[1]:.2f} {load[2]:.2f} on {os.cpu_count()} cores")
    rows = []
    folder = pathlib.Path(tempfile.mkdtemp(prefix="marginalia-soak-"))
    try:
        if not args.no_edits and n_edits > 0:
            r = soak_edits(n_edits, folder)
            lat = r["latencies"]
            p50, p99, pmax = (1e3 * _percentile(lat, 50), 1e3 * _percentile(lat, 99), 1e3 * lat[-1])
            rss0 = r["rss"][0][1] / 2**20
            rss_end = r["rss"][-1][1] / 2**20
            half = [v for k, v in r["rss"] if k >= n_edits // 2]
            late_growth = (half[-1] - half[0]) / 2**20 if len(half) > 1 else 0.0
            print(f"\n{n_edits} edits in {r['wall']:.1f} s ({n_edits / r['wall']:.0f}/s): {r['counts']}")
            print(f"final labels {r['n_labels']}, log entries {r['log_length']}, file {r['file_mb']:.1f} MB")
            print("RSS over time (edits: MB): " + ", ".join(
                f"{k}: {v / 2**20:.0f}" for k, v in r["rss"][:: max(1, len(r["rss"]) // 10)]))
            rows += [
                row(f"edit latency p50 ({n_edits} edits)", p50, "ms", 10.0,
                    reference={"name": f"rewrite JSON of all labels + fsync ({r['n_labels']} labels)",
                               "value": r["naive_ms"]}),
                row(f"edit latency p99 ({n_edits} edits)", p99, "ms", 50.0),
                row(f"edit latency max ({n_edits} edits)", pmax, "ms", None),
                row("edit latency p50, first 10 % of edits", 1e3 * _percentile(r["first_tenth"], 50), "ms", None),
                row("edit latency p50, last 10 % of edits", 1e3 * _percentile(r["last_tenth"], 50), "ms", None),
                row("edits per second", n_edits / r["wall"], "1/s", None, better="higher"),
                row("RSS at start", rss0, "MB", None),
                row(f"RSS growth over {n_edits} edits", rss_end - rss0, "MB", 100.0),
                row("RSS growth over the second half", late_growth, "MB", 25.0),
                row("reopen time of the final project", 1e3 * r["reopen_s"], "ms", 1000.0),
                row("integrity_check time", 1e3 * r["integrity_s"], "ms", None),
                row("integrity problems after soak (incl. state != expected)",
                    len(r["problems"]) + r["mismatches"] + (0 if r["same_after_reopen"] else 1), "count", 0.0),
            ]
        if n_kills > 0:
            from tests.reliability.killing import ForkedChild, SpawnedChild, kill_runs
            child = SpawnedChild if args.spawn else ForkedChild
            t0 = time.perf_counter()

            def progress(stats):
                if stats.runs % 10 == 0:
                    print(f"  kills: {stats.runs}/{n_kills}, survived {stats.survived}", flush=True)

            (folder / "kills").mkdir()
            stats = kill_runs(folder / "kills", child, n_kills, random.Random(7), stop_at_first_failure=False,
                              progress=progress)
            wall = time.perf_counter() - t0
            print(f"\n{stats.runs} kill runs ({'spawned' if args.spawn else 'forked'} children) in {wall:.1f} s: "
                  f"{stats.survived} survived, {stats.killed_while_opening} killed while opening, "
                  f"{stats.in_flight} with an edit in flight, {stats.edits_returned} edits returned")
            for msg in stats.failures[:5]:
                print("  FAILED:", msg)
            rows += [
                row("kill runs survived", stats.survived, "runs", float(stats.runs), better="higher"),
                row("kill runs lost", stats.runs - stats.survived, "runs", 0.0),
                row("edits returned before kills", stats.edits_returned, "edits", None, better="higher"),
            ]
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    for r in rows:
        r["load_average"] = list(load)
    print()
    for r in rows:
        print(format_row(r, width=48))
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / "soak.json").write_text(json.dumps(rows, indent=1))
    return rows


if __name__ == "__main__":
    main()
