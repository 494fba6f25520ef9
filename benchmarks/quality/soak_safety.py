"""Soak of data safety: fuzzed model files and bundle manifests, SIGKILLs during exports and backups.

Usage::

    python -m benchmarks.quality.soak_safety [--quick] [--cases N] [--kills K]

Fuzz mode: ``--cases`` (10,000 per format; 300 with ``--quick``) hostile inputs per format, each
loaded in this process under a 10 s deadline: model files with a mutated JSON header, model files
with flipped or cut bytes, and bundle manifests with mutated fields (any JSON value at any depth,
fields deleted or added). Every case must end in success or a Marginalia exception whose one-line
message names the file; anything else is a *crash*, a case past its deadline a *hang*. The peak
resident memory of the process is reported (a file may not make the loader allocate more than
its schema allows).

Kill mode: ``--kills`` (200; 20 with ``--quick``) forked children each open a fresh copy of a small
project, add labels, export a bundle (replacing their previous one) and take backups in a loop,
and are SIGKILLed at a random moment. After each kill: the reopened project must hold every label
whose call returned (*edits lost* otherwise) and pass ``integrity_check``; the bundle folder must be
absent or a complete export (*broken exports*); what the kill left (hidden partial or set-aside
export folders, temporary backup files: *leftovers found*) must be gone after the next export and
the next backup (*leftovers*).

Writes ``benchmarks/results/soak_safety.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import pathlib
import random
import resource
import shutil
import signal
import sys
import tempfile
import time
import warnings

from benchmarks._common import (
    ROOT,  # noqa: E402
    write_rows,  # noqa: E402
)
from benchmarks._common import result_row as row  # noqa: E402
from marginalia.engine import Engine  # noqa: E402
from marginalia.exceptions import DataFormatError, MarginaliaError  # noqa: E402
from marginalia.exports import _bundle_labels  # noqa: E402
from marginalia.models.files import TrainedModel, load_model, save_model  # noqa: E402
from marginalia.project import Session  # noqa: E402
from marginalia.types import BoundaryLabel  # noqa: E402
from tests.reliability.engine_kill_child import exported_bundle, make_profiles  # noqa: E402
from tests.reliability.killing import LineReader  # noqa: E402

RESULTS = ROOT / "benchmarks" / "results"
DEADLINE_S = 10


# ------------------------------------------------------------------ fuzz

def _json_value(rng: random.Random, depth=0):
    k = rng.randrange(9 if depth < 3 else 6)
    if k == 0:
        return None
    if k == 1:
        return rng.random() < 0.5
    if k == 2:
        return rng.choice([0, -1, 1, 2, 10 ** 9, -2 ** 63, 2 ** 70, rng.randrange(-1000, 1000)])
    if k == 3:
        return rng.choice([0.5, -1e308, 1e308, float("nan"), float("inf"), rng.uniform(-10, 10)])
    if k in (4, 5):
        return rng.choice(["", "segmentation", "alignment", "../../x", "a" * 300, "\x00", "marginalia-model",
                           "marginalia-bundle", "SegmentationModel", "features/x.npz", "/etc/passwd"])
    if k == 6:
        return [_json_value(rng, depth + 1) for _ in range(rng.randrange(4))]
    if k == 7:
        return {rng.choice(["a", "type", "start", "stop", "index", "kind", "id", "name"]): _json_value(rng, depth + 1)
                for _ in range(rng.randrange(4))}
    return [[[[[]]]]] if rng.random() < 0.5 else {"": {"": {"": {}}}}


def json_paths(doc, prefix=()):
    """Every key path into a JSON document (the document itself included)."""
    yield prefix
    if isinstance(doc, dict):
        for k, v in doc.items():
            yield from json_paths(v, prefix + (k,))
    elif isinstance(doc, list):
        for i, v in enumerate(doc):
            yield from json_paths(v, prefix + (i,))


def edit_json(doc, path: tuple, op: str, value, new_key):
    """``doc`` after ``op`` at ``path``: "set" it to ``value``, "delete" it, or "add" ``value`` beside it
    (under ``new_key`` in an object, appended to a list). Edits in place; returns the (possibly new) root."""
    if not path:
        return value if op == "set" else doc
    parent = doc
    for key in path[:-1]:
        parent = parent[key]
    if op == "set":
        parent[path[-1]] = value
    elif op == "delete":
        del parent[path[-1]]
    elif isinstance(parent, dict):
        parent[new_key] = value
    else:
        parent.append(value)
    return doc


def mutate(doc, rng: random.Random):
    doc = json.loads(json.dumps(doc))
    for _ in range(rng.randint(1, 3)):
        path = rng.choice(list(json_paths(doc)))
        op = rng.choice(["set", "set", "delete", "add"])
        doc = edit_json(doc, path, op, _json_value(rng), rng.choice(["x", "task", "files", "version", "labels"]))
    return doc


class Hang(Exception):
    pass


def _on_alarm(signum, frame):
    raise Hang()


def run_case(call, path, tally):
    signal.signal(signal.SIGALRM, _on_alarm)
    signal.setitimer(signal.ITIMER_REAL, DEADLINE_S)
    try:
        call()
        tally["accepted"] += 1
    except Hang:
        tally["hangs"] += 1
    except MarginaliaError as exc:
        text = str(exc).strip()
        if "\n" in text or (isinstance(exc, DataFormatError) and pathlib.Path(path).name not in text):
            tally["crashes"] += 1
            tally.setdefault("examples", []).append(f"unclear: {text[:200]}")
        else:
            tally["refused"] += 1
    except Exception as exc:  # noqa: BLE001 - what the soak counts
        tally["crashes"] += 1
        tally.setdefault("examples", []).append(f"{type(exc).__name__}: {str(exc)[:200]}")
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)


def _write_model(path, header, arrays):
    import numpy as np
    blob = np.frombuffer(json.dumps(header).encode("utf-8"), dtype=np.uint8)
    with open(path, "wb") as fh:
        np.savez_compressed(fh, header=blob, **arrays)


def fuzz(n_cases, folder, seed=0):
    import numpy as np

    from marginalia.models.segmentation import SegmentationModel
    rng = random.Random(seed)
    X = np.random.default_rng(0).normal(size=(40, 1))
    m = SegmentationModel(metric="diagonal", loss="hamming", min_size=2)
    good = folder / "ok.model"
    save_model(good, TrainedModel("segmentation", "cgh-logratio", m, m.initial_w([X]), {"label_hash": "abc"}))
    with np.load(good) as z:
        arrays = {k: z[k] for k in z.files}
    header = json.loads(arrays.pop("header").tobytes().decode("utf-8"))
    good_bytes = good.read_bytes()

    eng, manifest = exported_bundle(folder)

    results = {}
    path = folder / "case.model"
    t0 = time.perf_counter()
    tally = results["model header"] = {"accepted": 0, "refused": 0, "crashes": 0, "hangs": 0}
    for _ in range(n_cases):
        _write_model(path, mutate(header, rng), arrays)
        run_case(lambda: load_model(path), path, tally)
    tally = results["model bytes"] = {"accepted": 0, "refused": 0, "crashes": 0, "hangs": 0}
    for _ in range(n_cases):
        raw = bytearray(good_bytes)
        for _ in range(rng.randint(1, 6)):
            raw[rng.randrange(len(raw))] = rng.randrange(256)
        path.write_bytes(bytes(raw[:rng.randint(len(raw) // 3, len(raw))]) if rng.random() < 0.3 else bytes(raw))
        run_case(lambda: load_model(path), path, tally)
    tally = results["bundle manifest"] = {"accepted": 0, "refused": 0, "crashes": 0, "hangs": 0}
    bfolder = folder / "fb"
    bfolder.mkdir()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for _ in range(n_cases):
            text = json.dumps(mutate(manifest, rng))
            if rng.random() < 0.02:
                text = "[" * rng.randrange(1000, 200_000)
            (bfolder / "manifest.json").write_text(text)
            run_case(lambda: _bundle_labels(eng, bfolder), bfolder / "manifest.json", tally)
    eng.close()
    seconds = time.perf_counter() - t0
    return results, seconds


# ------------------------------------------------------------------ kills

def _child(project: pathlib.Path, out: pathlib.Path, wfd: int, seed: int) -> None:
    """Edit, export and back up in a loop, reporting each step on ``wfd`` (runs in a forked child)."""
    rng = random.Random(seed)

    def say(text):
        os.write(wfd, (text + "\n").encode())

    eng = Engine.open(project)
    items = [i.id for i in eng.items()]
    say("READY")
    i = 0
    while True:
        op = rng.random()
        if op < 0.5:
            item = items[i % len(items)]
            index = 4 + 4 * ((i // len(items)) % 13)       # boundaries 4 probes apart always agree
            say(f"B {i} {item} {index}")
            try:
                eng.add_label(BoundaryLabel(item, index=index, id=f"k{i}"))
            except MarginaliaError:
                say(f"F {i}")                               # refused (e.g. already there): not an edit
                continue
            finally:
                i += 1
            say(f"R {i - 1}")
        elif op < 0.8:
            say(f"X {i}")
            eng.export("bundle", out, force=True)
            say(f"E {i}")
        else:
            say(f"K {i}")
            eng.session.store.backup()
            say(f"k {i}")
        if op >= 0.5:
            i += 1


def _complete_export(out: pathlib.Path) -> bool:
    try:
        data = json.loads((out / "manifest.json").read_text())
    except (OSError, ValueError):
        return False
    return all((out / f).exists() for f in data.get("files", []))


def _leftovers(run: pathlib.Path, project: pathlib.Path) -> list:
    """Hidden partial/old export folders and temporary backup files in a run's folder."""
    left = [p.name for p in run.iterdir() if ".partial-" in p.name or ".old-" in p.name]
    bdir = pathlib.Path(str(project) + ".backups")
    if bdir.is_dir():
        left += [p.name for p in bdir.iterdir() if p.name.endswith((".tmp", ".tmp-journal"))]
    return left


def kills(n_kills, folder, seed=0):
    rng = random.Random(seed)
    make_profiles(folder / "profiles.csv")
    template = folder / "template.marginalia"
    with Engine.create(template) as eng:
        eng.import_files([folder / "profiles.csv"])
    warm = folder / "warm.marginalia"      # compile the decoders once: the forked children inherit them
    shutil.copy(template, warm)
    with Engine.open(warm) as eng:
        eng.add_label(BoundaryLabel(eng.items()[0].id, index=4))
        eng.export("bundle", folder / "warm-bundle")
        eng.session.store.backup()
    stats = {"kills": 0, "during export": 0, "during backup": 0, "during edit": 0, "edits returned": 0,
             "edits lost": 0, "integrity failures": 0, "broken exports": 0, "leftovers found": 0, "leftovers": 0,
             "hangs": 0}
    for k in range(n_kills):
        run = folder / f"run{k}"
        run.mkdir()
        project = run / "p.marginalia"
        shutil.copy(template, project)
        out = run / "bundle"
        rfd, wfd = os.pipe()
        pid = os.fork()
        if pid == 0:   # the child
            os.close(rfd)
            try:
                _child(project, out, wfd, seed * 100_003 + k)
            finally:
                os._exit(0)
        os.close(wfd)
        reader = LineReader(rfd)
        lines = []
        try:
            lines.append(reader.readline(60))          # READY: the project is open
            time.sleep(rng.uniform(0.01, 0.6))         # then kill it at a random moment of its loop
        except AssertionError:
            stats["hangs"] += 1
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
        lines += reader.rest().splitlines()
        os.close(rfd)
        stats["kills"] += 1
        returned, begun = {}, None
        for line in lines:
            parts = line.split()
            if not parts:
                continue
            if parts[0] == "B":
                begun = (int(parts[1]), parts[2], int(parts[3]))
            elif parts[0] == "R":
                returned[int(parts[1])] = begun
        last = next((ln.split()[0] for ln in reversed(lines) if ln.strip()), "")
        stats["during export"] += last == "X"
        stats["during backup"] += last == "K"
        stats["during edit"] += last == "B"
        stats["edits returned"] += len(returned)
        stats["leftovers found"] += bool(_leftovers(run, project))     # what the kill left, before cleaning
        with Session.open(project) as s:
            have = {(lab.item_id, lab.index) for lab in s.labels() if isinstance(lab, BoundaryLabel)}
            stats["edits lost"] += sum(1 for _, item, idx in returned.values() if (item, idx) not in have)
            stats["integrity failures"] += bool(s.integrity_check())
            s.store.backup()                 # the next backup prunes a killed backup's temporary files
        if out.exists() and not _complete_export(out):
            stats["broken exports"] += 1
        with Engine.open(project, read_only=True) as eng:
            eng.export("bundle", out, force=True)      # the next export cleans a killed export's leftovers
        stats["leftovers"] += bool(_leftovers(run, project))
        shutil.rmtree(run)
    return stats


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="300 cases per format and 20 kills")
    parser.add_argument("--cases", type=int, default=None, help="fuzz cases per format (default 10,000)")
    parser.add_argument("--kills", type=int, default=None, help="kill runs (default 200)")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    n_cases = args.cases if args.cases is not None else (300 if args.quick else 10_000)
    n_kills = args.kills if args.kills is not None else (20 if args.quick else 200)
    rows = []
    command = "python -m benchmarks.quality.soak_safety " + " ".join(argv if argv is not None else sys.argv[1:])
    payload = {"command": command,
               "load_average": os.getloadavg()}
    with tempfile.TemporaryDirectory(prefix="soak-safety-") as tmp:
        tmp = pathlib.Path(tmp)
        if n_cases:
            (tmp / "fuzz").mkdir()
            results, seconds = fuzz(n_cases, tmp / "fuzz", seed=args.seed)
            for fmt, t in results.items():
                print(f"{fmt}: {t['accepted'] + t['refused'] + t['crashes'] + t['hangs']} cases, "
                      f"{t['accepted']} accepted, {t['refused']} refused, {t['crashes']} crashes, {t['hangs']} hangs")
                for ex in t.get("examples", [])[:5]:
                    print("   ", ex)
                rows.append(row(f"fuzz {fmt}: cases", n_cases, "cases", target=None, better="higher"))
                rows.append(row(f"fuzz {fmt}: crashes", t["crashes"], "cases", target=0))
                rows.append(row(f"fuzz {fmt}: hangs", t["hangs"], "cases", target=0))
            peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
            rows.append(row("fuzz: peak resident memory", peak_mb, "MB", target=1024))
            rows.append(row("fuzz: time", seconds, "s"))
            payload["fuzz"] = {k: {kk: vv for kk, vv in v.items() if kk != "examples"} for k, v in results.items()}
        if n_kills:
            (tmp / "kills").mkdir()
            t0 = time.perf_counter()
            stats = kills(n_kills, tmp / "kills", seed=args.seed)
            print("kills:", ", ".join(f"{k} {v}" for k, v in stats.items()))
            for key in ("kills", "during export", "during backup", "during edit", "edits returned", "leftovers found"):
                rows.append(row(f"kill: {key}", stats[key], "count", better="higher"))
            for key in ("edits lost", "integrity failures", "broken exports", "leftovers", "hangs"):
                rows.append(row(f"kill: {key}", stats[key], "count", target=0))
            rows.append(row("kill: time", time.perf_counter() - t0, "s"))
            payload["kills"] = stats
    payload["rows"] = rows
    write_rows(RESULTS / "soak_safety.json", payload)
    return 0 if all(r["meets_target"] is not False for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
