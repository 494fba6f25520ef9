"""Child of the engine kill test: drive the Engine on a small aCGH project, reporting each returned call.

Usage: ``python -m tests.reliability.engine_kill_child PROJECT SEED TAG``. Before
call i it writes ``B i``; once the call returned ``R i ok [model id]``, or
``R i refused`` when it raised a project exception (flushed), forever.

Also holds the small generated aCGH data the reliability tests share.
"""

from __future__ import annotations

import json
import random
import sys
from pathlib import Path

import numpy as np

from marginalia.engine import Engine
from marginalia.exceptions import MarginaliaError
from marginalia.types import BoundaryLabel, RegionKind, RegionLabel

T = 60  # probes per chromosome
EXPORTS = ("annotations-csv", "bundle")


def make_profiles(path, seed=0, chroms=("1", "2")) -> list:
    """Write a small ``profiles.csv`` (one profile, ``T`` probes per chromosome, one clear change each)."""
    from marginalia.io import read_profiles
    rng = np.random.default_rng(seed)
    rows = ["profile.id,chromosome,position,logratio"]
    for chrom in chroms:
        mu = np.where(np.arange(T) < rng.integers(15, T - 15), 0.0, 0.8)
        x = mu + 0.1 * rng.standard_normal(T)
        rows += [f"p{seed},{chrom},{1000 + 500 * i},{x[i]:.4f}" for i in range(T)]
    Path(path).write_text("\n".join(rows) + "\n")
    return read_profiles(path)


def new_project(path, seed=0, *, with_labels=True):
    """A closed project at ``path`` with the profiles of :func:`make_profiles` imported, two labels (unless
    ``with_labels`` is false: then the undo history is empty) and a model; returns ``(path, first item id)``."""
    path = Path(path)
    make_profiles(path.with_name(path.stem + "-profiles.csv"), seed=seed)
    with Engine.create(path) as eng:
        ids = eng.import_files([path.with_name(path.stem + "-profiles.csv")])
        if with_labels:
            eng.add_label(RegionLabel(ids[0], id="seed-0", start=2, stop=10, kind=RegionKind.ZERO))
            eng.add_label(BoundaryLabel(ids[1], id="seed-1", index=30))
            eng.retrain()
        else:
            eng.update_model(ids[0])
    return path, ids[0]


def exported_bundle(folder):
    """A project in ``folder`` of the profiles of :func:`make_profiles` with two labels, exported as the bundle
    ``folder / "b"``; returns ``(engine, manifest)``: the project opened read-only (the caller closes it) and the
    bundle's ``manifest.json`` as a dict."""
    folder = Path(folder)
    make_profiles(folder / "profiles.csv")
    with Engine.create(folder / "p.marginalia") as eng:
        ids = eng.import_files([folder / "profiles.csv"])
        eng.add_label(RegionLabel(ids[0], start=2, stop=10, kind=RegionKind.ZERO))
        eng.add_label(BoundaryLabel(ids[1], index=30))
        eng.export("bundle", folder / "b")
    manifest = json.loads((folder / "b" / "manifest.json").read_text())
    return Engine.open(folder / "p.marginalia", read_only=True), manifest


def new_label(rng: random.Random, item_id: str, label_id: str):
    """A label inside the item (it may still contradict the others: the engine then refuses it)."""
    if rng.random() < 0.5:
        return BoundaryLabel(item_id, id=label_id, created=1.0, author="kill", index=rng.randrange(1, T))
    start = rng.randrange(0, T - 3)
    return RegionLabel(item_id, id=label_id, created=1.0, author="kill", start=start,
                       stop=min(T, start + rng.randrange(2, 12)), kind=rng.choice(list(RegionKind)))


def next_call(rng: random.Random, labels: dict, item_id: str, tag: str, i: int):
    """Next engine call as an op tuple understood by ``tests.reliability.edit_script.EditModel`` (label edits)
    or ignored by it (``update``, ``retrain``, ``export``)."""
    r = rng.random()
    ids = sorted(labels)
    if r < 0.35 or (r < 0.5 and not ids):
        return ("add", new_label(rng, item_id, f"{tag}-{i}"))
    if r < 0.5:
        return ("delete", rng.choice(ids))
    if r < 0.62:
        return ("undo",)
    if r < 0.72:
        return ("redo",)
    if r < 0.84:
        return ("update",)
    if r < 0.92:
        return ("retrain",)
    return ("export", rng.choice(EXPORTS))


def apply_to_engine(eng: Engine, op, item_id: str, out_dir: Path, i: int):
    """Run one call; returns the model id for model calls, else None."""
    kind = op[0]
    if kind == "add":
        eng.add_label(op[1])
    elif kind == "delete":
        eng.delete_label(op[1])
    elif kind == "undo":
        eng.undo()
    elif kind == "redo":
        eng.redo()
    elif kind == "update":
        return eng.update_model(item_id)
    elif kind == "retrain":
        return eng.retrain()
    else:
        name = "annotations.csv" if op[1] == "annotations-csv" else "bundle"
        eng.export(op[1], out_dir / f"{i}-{name}")
    return None


def main(path, seed, tag, out=None):
    out = sys.stdout if out is None else out
    path = Path(path)
    eng = Engine.open(path)
    out.write("O\n")
    out.flush()
    item = eng.items()[0].id
    out_dir = path.with_name(f"exports-{tag}")
    out_dir.mkdir(exist_ok=True)
    rng = random.Random(seed)
    i = 0
    while True:
        op = next_call(rng, {lab.id: lab for lab in eng.labels(item)}, item, tag, i)
        out.write(f"B {i}\n")
        out.flush()
        try:
            model_id = apply_to_engine(eng, op, item, out_dir, i)
        except MarginaliaError:
            out.write(f"R {i} refused\n")
        else:
            out.write(f"R {i} ok" + (f" {model_id}" if model_id else "") + "\n")
        out.flush()
        i += 1


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]), sys.argv[3])
