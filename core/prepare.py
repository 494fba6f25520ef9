"""Compile Marginalia's numerical kernels once, ahead of the first real use.

The decoders and learners are numba kernels compiled on first call and cached on disk. On a fresh install
that first compilation takes the better part of a minute, and it would otherwise land on a user's first
``train`` or on the app's first redraw. :func:`prepare` runs small workloads on the embedded demo that call
every kernel the command line and the app use, spread over worker processes (one per core), so the
compilation happens once, in parallel, with progress. Afterwards every kernel loads from numba's cache.

A marker file (:func:`marker_path`) records that this version of Marginalia, under this Python and numba,
has been prepared; the command line and the app read it to decide whether to say "preparing (first run
only)".
"""

from __future__ import annotations

import os
import sys
import tempfile
import time
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor, as_completed
from multiprocessing import get_context
from pathlib import Path
from typing import Optional

from ._version import library_version
from .paths import cache_dir

__all__ = ["WORKLOADS", "prepare", "is_prepared", "marker_path"]


def _copy_number_training() -> None:
    """The copy-number recipe: metric learning, penalty laws, pruners, then prediction (``train``)."""
    from .cgh.recipe import CghSegmenter
    from .io.cgh import read_annotations, read_profiles
    from .resources import path

    profiles = read_profiles(path("demo", "profiles.csv"))
    labels = read_annotations(path("demo", "annotations.csv"), profiles)
    recipe = CghSegmenter(max_iter=1).fit(profiles, labels)
    recipe.predict(profiles)


def _project_session() -> None:
    """What the app does with a project: import, retrain, predict, rank the questions (every task of the demo)."""
    from .engine import Engine

    with tempfile.TemporaryDirectory(prefix="marginalia-prepare-") as folder:
        engine = Engine.open_demo(folder)
        try:
            first_of_each_kind = {}
            for info in engine.items():
                first_of_each_kind.setdefault(info.kind, info.id)
            for item_id in first_of_each_kind.values():
                engine.update_model(item_id)
                engine.predict(item_id)
            engine.next_queries(3)
        finally:
            engine.close()


def _decoders() -> None:
    """The decoders a Python user calls directly, in their plain, second-best and fixed-K forms, and the aligner's
    coarse-to-fine decode."""
    import numpy as np

    from .decoders.segmentation import segment_fixed_k, segment_penalized, segment_second_best
    from .decoders.warping import dtw, dtw_second_best

    rng = np.random.default_rng(0)
    x = np.concatenate([rng.normal(0, 1, (60, 2)), rng.normal(3, 1, (60, 2))])
    segment_penalized(x, 5.0)
    segment_second_best(x, 5.0)
    segment_fixed_k(x, 2)
    dtw(x[:40], x[:50])
    dtw_second_best(x[:40], x[:50])
    # the aligner's coarse-to-fine decode (long recordings only, so the demo's short one never reaches it)
    from .align.banded import align_multiresolution, duration_cost_rows
    limits = np.full(6, 120)
    rows = duration_cost_rows(np.full(6, 20.0), weight=1.0, max_frames=limits, smoothing=1.0, long_knee=1.0)
    align_multiresolution(x, rng.normal(size=(6, 2)), rows, limits, C=np.abs(x), D=np.ones((6, 2)))


#: (what is compiled, workload) in decreasing order of cost, so the longest starts first
WORKLOADS: tuple = (
    ("copy-number learning", _copy_number_training),
    ("projects, audio alignment and questions", _project_session),
    ("decoders", _decoders),
)


def marker_path() -> Path:
    """The file that says this installation of Marginalia is prepared under this Python and numba.

    Besides the versions, the name holds a digest of where numba keeps this installation's compiled kernels:
    the package's own folder (each virtual environment has its own) and the ``NUMBA_CACHE_DIR`` and
    ``NUMBA_CPU_NAME`` settings. A second environment, or a moved or emptied numba cache, is then "not
    prepared" rather than falsely "prepared" by another installation's marker in the shared user cache.
    """
    import hashlib

    import numba

    where = "\n".join((
        str(Path(__file__).resolve().parent),
        os.environ.get("NUMBA_CACHE_DIR", ""),
        os.environ.get("NUMBA_CPU_NAME", ""),
    ))
    digest = hashlib.sha256(where.encode("utf-8")).hexdigest()[:12]
    tag = f"{library_version()}-numba{numba.__version__}-py{sys.version_info[0]}.{sys.version_info[1]}-{digest}"
    return cache_dir() / f"prepared-{tag}"


def is_prepared() -> bool:
    """Whether :func:`prepare` has completed for this version of Marginalia, Python and numba."""
    try:
        return marker_path().exists()
    except Exception:  # noqa: BLE001 - no numba, an unreadable home: say "not prepared", never fail
        return False


def _run(index: int) -> float:
    start = time.perf_counter()
    WORKLOADS[index][1]()
    return time.perf_counter() - start


def prepare(*, jobs: Optional[int] = None, progress: Optional[Callable[[int, int, str], None]] = None) -> dict:
    """Compile every kernel Marginalia uses, in ``jobs`` worker processes, and write the marker.

    Parameters
    ----------
    jobs : int, optional
        Worker processes (default: one per core, at most one per workload).
    progress : callable, optional
        ``progress(done, total, name)`` after each workload.

    Returns
    -------
    dict
        Seconds spent in each workload (inside its worker), by name.
    """
    jobs = max(1, min(jobs or os.cpu_count() or 1, len(WORKLOADS)))
    seconds = {}
    with ProcessPoolExecutor(max_workers=jobs, mp_context=get_context("spawn")) as pool:
        futures = {pool.submit(_run, i): name for i, (name, _) in enumerate(WORKLOADS)}
        for done, future in enumerate(as_completed(futures), start=1):
            name = futures[future]
            seconds[name] = future.result()
            if progress is not None:
                progress(done, len(WORKLOADS), name)
    marker = marker_path()
    marker.parent.mkdir(parents=True, exist_ok=True)
    marker.write_text("".join(f"{name}\t{s:.1f}\n" for name, s in seconds.items()), encoding="utf-8")
    return seconds
