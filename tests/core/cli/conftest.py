"""Small generated aCGH data sets and a trained model shared by the command-line tests."""

import json

import numpy as np
import pytest

from marginalia.cli import main

#: (profile, chromosome) -> change index (None: flat); 60 probes each, 1 kb apart
LAYOUT = {("1", "1"): 30, ("1", "2"): None, ("2", "1"): 25, ("2", "2"): None, ("3", "1"): 35, ("3", "2"): None}
N_PROBES = 60


def positions():
    return np.arange(N_PROBES) * 1000 + 500


def write_cgh(folder, seed=1, layout=LAYOUT):
    """Write profiles.csv and annotations.csv (a 0breakpoints and a 1breakpoint region per changing sequence)."""
    rng = np.random.default_rng(seed)
    pos = positions()
    prof = ["profile.id,chromosome,position,logratio"]
    ann = ["profile.id,chromosome,min,max,annotation"]
    for (pid, chrom), change in layout.items():
        mean = np.zeros(N_PROBES) if change is None else np.where(np.arange(N_PROBES) < change, 0.0, 1.0)
        x = mean + rng.normal(0, 0.15, N_PROBES)
        prof += [f"{pid},{chrom},{p},{v:.5f}" for p, v in zip(pos, x)]
        if change is None:
            ann.append(f"{pid},{chrom},{pos[10]},{pos[50]},0breakpoints")
        else:
            ann.append(f"{pid},{chrom},{pos[change - 10]},{pos[change + 10]},1breakpoint")
            ann.append(f"{pid},{chrom},{pos[0]},{pos[change - 12]},0breakpoints")
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "profiles.csv").write_text("\n".join(prof) + "\n")
    (folder / "annotations.csv").write_text("\n".join(ann) + "\n")
    return folder / "profiles.csv", folder / "annotations.csv"


@pytest.fixture(scope="session")
def cgh_dir(tmp_path_factory):
    folder = tmp_path_factory.mktemp("cgh")
    write_cgh(folder)
    return folder


@pytest.fixture(scope="session")
def seg_model(cgh_dir):
    """A segmentation model trained once on the generated profiles."""
    out = cgh_dir / "seg.model"
    code = main(["train", "--task", "segmentation", "--profiles", str(cgh_dir / "profiles.csv"),
                 "--annotations", str(cgh_dir / "annotations.csv"), "--out", str(out), "--max-iter", "10", "-q"])
    assert code == 0
    return out


def model_with(src, dst, *, penalty=None, task=None):
    """A copy of a model file with another penalty or another task in its header.

    The penalty is the last entry of ``w`` and of the parameters of each penalty law that decodes with its own
    (the plain logratio's), so every chromosome is decoded with it.
    """
    with np.load(src) as z:
        arrays = {k: z[k] for k in z.files}
    header = json.loads(arrays["header"].tobytes().decode("utf-8"))
    if penalty is not None:
        arrays["w"] = arrays["w"].copy()
        arrays["w"][-1] = penalty
        for law in header.get("provenance", {}).get("penalty_law", {}).get("laws", {}).values():
            if "w" in law:
                law["w"][-1] = penalty
    if task is not None:
        header["task"] = task
    arrays["header"] = np.frombuffer(json.dumps(header).encode("utf-8"), dtype=np.uint8)
    with open(dst, "wb") as fh:
        np.savez(fh, **arrays)
    return dst
