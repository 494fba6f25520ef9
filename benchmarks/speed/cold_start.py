"""A new user's first results, from an empty numba cache: first ``train``, ``predict``, window and ``prepare``.

Usage: ``python -m benchmarks.speed.cold_start [--cases train,predict,...] [--profile] [--repeat N]``

Every case runs in a fresh process with an empty numba cache (``NUMBA_CACHE_DIR``) and an empty
``XDG_CACHE_HOME`` (no "prepared" marker), as after ``pip install``:

* ``train``: ``marginalia-cli train --task segmentation`` on the demo profiles and annotations;
* ``predict``: ``marginalia-cli predict`` of that model, in the cache ``train`` left (a user's second command);
* ``predict-cold``: the same ``predict`` from an empty cache (a user handed a model file);
* ``window``: ``python -m marginalia.app --demo`` offscreen: process start to the window shown, to the demo's
  first item shown (usable) and to its first prediction drawn;
* ``prepare``: ``marginalia-cli prepare``.

Wall time and CPU time (user + sys of the process and its workers) are printed for each: the machine is
shared, and a loaded machine stretches wall time, not CPU time. ``--profile`` also lists, per kernel, the
signatures compiled and the seconds spent compiling each (numba's compile events, the time of the
kernels it compiled inside excluded), and writes everything to ``benchmarks/results/cold_start.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
RESULTS = ROOT / "benchmarks" / "results" / "cold_start.json"
CASES = ("train", "predict", "predict-cold", "window", "prepare")

# installed in the child before Marginalia runs: numba's compile events, written as JSON at exit
PROFILER = r"""
import atexit, json, os, time
from numba.core import event as _ev
_stack, _rows, _seen = [], [], {}
class _Listener(_ev.Listener):
    def on_start(self, event):
        _stack.append([time.perf_counter(), time.process_time(), 0.0])
    def on_end(self, event):
        t0, c0, inner = _stack.pop()
        wall = time.perf_counter() - t0
        cpu = time.process_time() - c0
        if _stack:
            _stack[-1][2] += wall
        disp = event.data["dispatcher"]
        name = disp.py_func.__module__ + "." + disp.py_func.__qualname__
        _seen[name] = disp
        _rows.append({"kernel": name, "args": str(event.data["args"]), "seconds": wall - inner,
                      "seconds_inclusive": wall, "cpu_inclusive": cpu, "nested": bool(_stack)})
_ev.register("numba:compile", _Listener())
def _dump():
    sigs = {name: [str(s) for s in d.signatures] for name, d in _seen.items()}
    with open(os.environ["MARGINALIA_COMPILE_LOG"], "w") as fh:
        json.dump({"compiles": _rows, "signatures": sigs}, fh)
atexit.register(_dump)
"""

CLI = r"""
import runpy, sys
sys.argv = ["marginalia-cli"] + {argv!r}
try:
    runpy.run_module("marginalia", run_name="__main__")
except SystemExit as exc:
    if exc.code:
        raise
"""

# the child of the ``window`` case (as benchmarks/app_latency.py's cold start): prints when each stage is reached
WINDOW = r"""
import sys, time
from PySide6 import QtWidgets, QtCore
import marginalia.app.main as m
from marginalia.app import theme
qapp = QtWidgets.QApplication(sys.argv[:1])
theme.apply_theme(qapp)
win = m.create_window(m.build_parser().parse_args(["--demo"]),
                      settings=QtCore.QSettings({ini!r}, QtCore.QSettings.Format.IniFormat))
win.show()
qapp.processEvents()
win.grab()
print("SHOWN", time.time(), flush=True)
while not (win.current_item and win._item_payload is not None):
    qapp.processEvents(); time.sleep(0.002)
win.grab()
print("USABLE", time.time(), flush=True)
while win.current_prediction() is None:
    qapp.processEvents(); time.sleep(0.002)
win.grab()
print("PREDICTED", time.time(), flush=True)
win.close()
"""


def _fresh_env(work: Path, cache: Path) -> dict:
    cache.mkdir(parents=True, exist_ok=True)
    return dict(os.environ, NUMBA_CACHE_DIR=str(cache), XDG_CACHE_HOME=str(work / "xdg-cache"),
                XDG_STATE_HOME=str(work / "xdg-state"), XDG_CONFIG_HOME=str(work / "xdg-config"),
                QT_QPA_PLATFORM="offscreen")


def _run(code: str, env: dict, log: Path | None, cwd: Path) -> dict:
    """Run ``python -c code``; wall and CPU seconds, the stage times it printed, its compile log."""
    if log is not None:
        env = dict(env, MARGINALIA_COMPILE_LOG=str(log))
        code = PROFILER + code
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.time()
    proc = subprocess.run([sys.executable, "-c", code], env=env, cwd=cwd, capture_output=True, text=True)
    wall = time.time() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode != 0:
        raise RuntimeError(f"the child failed ({proc.returncode}):\n{proc.stderr[-3000:]}")
    stages = {}
    for line in proc.stdout.splitlines():
        parts = line.split()
        if len(parts) == 2 and parts[0] in ("SHOWN", "USABLE", "PREDICTED"):
            stages[parts[0].lower()] = float(parts[1]) - t0
    out = {"wall": wall, "cpu": (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime),
           "stages": stages}
    if log is not None and log.exists():
        out["profile"] = json.loads(log.read_text())
    return out


def run_case(case: str, work: Path, profile: bool) -> dict:
    """One case from empty caches in ``work`` (a fresh folder)."""
    import marginalia

    profiles, annotations = marginalia.demo_file("profiles.csv"), marginalia.demo_file("annotations.csv")
    model = work / "demo.model"
    train = ["train", "--task", "segmentation", "--profiles", profiles, "--annotations", annotations,
             "--out", str(model), "--quiet"]
    predict = ["predict", str(model), "--profiles", profiles, "--out", str(work / "pred"), "--quiet"]
    log = (work / f"{case}.json") if profile else None
    env = _fresh_env(work, work / "numba-cache")
    if case == "train":
        return _run(CLI.format(argv=train), env, log, work)
    if case in ("predict", "predict-cold"):
        _run(CLI.format(argv=train), env, None, work)
        if case == "predict-cold":
            shutil.rmtree(work / "numba-cache")
            env = _fresh_env(work, work / "numba-cache")
        return _run(CLI.format(argv=predict), env, log, work)
    if case == "window":
        return _run(WINDOW.format(ini=str(work / "app.ini")), env, log, work)
    if case == "prepare":
        return _run(CLI.format(argv=["prepare", "--quiet"]), env, None, work)
    raise ValueError(case)


def summarize(profile: dict) -> list:
    """Per kernel: signatures compiled, compile seconds (exclusive) in total, sorted by cost."""
    per = {}
    for row in profile["compiles"]:
        k = per.setdefault(row["kernel"], {"kernel": row["kernel"], "compiles": 0, "seconds": 0.0})
        k["compiles"] += 1
        k["seconds"] += row["seconds"]
    for name, sigs in profile["signatures"].items():
        per[name]["signatures"] = len(sigs)
    return sorted(per.values(), key=lambda r: -r["seconds"])


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cases", default=",".join(CASES), help=f"comma-separated, among {', '.join(CASES)}")
    ap.add_argument("--profile", action="store_true", help="per-kernel signatures and compile times")
    ap.add_argument("--repeat", type=int, default=1, help="runs per case (the best is kept)")
    ap.add_argument("--top", type=int, default=15, help="kernels listed per case with --profile")
    args = ap.parse_args(argv)
    cases = [c.strip() for c in args.cases.split(",") if c.strip()]
    unknown = [c for c in cases if c not in CASES]
    if unknown:
        ap.error(f"unknown case {unknown[0]!r}; expected some of {', '.join(CASES)}")
    print(f"load average before: {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
    results = {}
    for case in cases:
        runs = []
        for _ in range(args.repeat):
            with tempfile.TemporaryDirectory(prefix="marginalia-cold-") as tmp:
                runs.append(run_case(case, Path(tmp), args.profile))
        best = min(runs, key=lambda r: r["cpu"])
        results[case] = best
        stages = "".join(f", {k} at {v:.1f} s" for k, v in best["stages"].items())
        print(f"{case:13s} wall {best['wall']:5.1f} s  cpu {best['cpu']:5.1f} s{stages}"
              f"  (load {os.getloadavg()[0]:.1f})", flush=True)
        if "profile" in best:
            rows = summarize(best["profile"])
            best["kernels"] = rows
            total = sum(r["seconds"] for r in rows)
            print(f"    {len(rows)} kernels, {sum(r['compiles'] for r in rows)} compilations, {total:.1f} s compiling")
            for r in rows[:args.top]:
                print(f"    {r['seconds']:6.2f} s  {r['compiles']} sig  {r['kernel']}")
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps(results, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
