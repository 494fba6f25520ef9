"""Uncertainty of parts and the choice of the next queries (Lou et al. 2014, Table 1.2).

A *scorer* reports, for one part, the score of the model's best structure,
of the runner-up (the best structure different from the best) and of the
worst structure, with "higher is better" (a decoder that minimises a cost
reports ``-cost``). From these, each strategy computes a margin ``m >= 0``
and the uncertainty ``q = exp(-m)`` (so ``q`` lies in ``(0, 1]`` for the
margin strategies, and larger means "a label here is expected to help more"):

==================  ====================================================
``"random"``        ``q ~ uniform(0, 1)`` from the seeded generator
``"scoring"``       ``m = best / (size * scale)``: a low best score per index
``"best-vs-worst"`` ``m = (best - worst) / (size * scale)``
``"best-vs-2nd"``   ``m = (best - second) / scale``
==================  ====================================================

Normalisation, so that parts of different lengths compare:

* ``scale`` is the scorer's unit of score (for penalised segmentation, the
  change penalty: the price of one change), which makes margins dimensionless
  and the same numbers meaningful across models and datasets.
* ``scoring`` and ``best-vs-worst`` compare whole-structure scores, which grow
  linearly with the part length, so they are divided by ``size`` (per index).
* ``best-vs-2nd`` is *not* divided by the length: the runner-up differs from the
  best by one local decision (a change added, removed or moved), so the margin
  is the price of the closest call in the part and does not grow with length.
  A long part holds more close calls, so its smallest margin tends to be
  smaller; on real aCGH chromosomes (20 to 5,000 probes) that is what it should
  be: the margin as is ranks first the chromosomes the model gets wrong better
  than the margin times ``log T``, ``sqrt T`` or ``T`` does
  (``benchmarks/experiments/active_margin_units.py``: ROC AUC 0.75 vs 0.67 / 0.52 / 0.41
  after 16 labels). A part with a single feasible structure (no runner-up) has
  ``m = inf``, ``q = 0``.

Ties (identical uncertainties, e.g. identical parts) are broken by a seeded
random permutation, so a query sequence is reproducible from ``random_state``.

Scoring a pool is the costly part of a query cycle; :func:`score_parts` runs
the scorer on several threads (``n_jobs``), which helps because the decoders
release the GIL. Results do not depend on ``n_jobs``.
"""

from __future__ import annotations

import os
from collections.abc import Sequence as SequenceT
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

import numpy as np

from ..checks import check_int, check_scalar, is_integer
from ..exceptions import ParameterError
from ..types import Query
from .parts import Part

__all__ = [
    "STRATEGIES",
    "PartScores",
    "PartScorer",
    "check_strategy",
    "check_n_jobs",
    "score_parts",
    "uncertainty_from_scores",
    "pool_uncertainties",
    "rank_parts",
    "select_batch",
    "next_queries",
]

STRATEGIES = ("random", "scoring", "best-vs-worst", "best-vs-2nd")
SUPPRESS = ("overlap", "item", None)
_MAX_EXPONENT = 700.0  # exp(700) is still a finite float64


@dataclass(frozen=True)
class PartScores:
    """Scores of the structures of one part, higher is better.

    Parameters
    ----------
    best : float
        Score of the best structure.
    second : float or None
        Score of the runner-up; ``None`` when the best is the only feasible structure.
    worst : float or None
        Score of the worst structure (or of the proxy the scorer documents);
        ``None`` when the scorer cannot tell (``"best-vs-worst"`` then refuses).
    size : int
        Number of indices in the part (samples, frames or events), >= 1.
    scale : float
        Unit of score that margins are divided by, > 0.
    """

    best: float
    second: float | None = None
    worst: float | None = None
    size: int = 1
    scale: float = 1.0

    def __post_init__(self):
        if not np.isfinite(self.best):
            raise ParameterError(f"PartScores.best: expected a finite score, got {self.best!r}")
        if self.second is not None and not np.isfinite(self.second):
            raise ParameterError(f"PartScores.second: expected a finite score or None, got {self.second!r}")
        if self.worst is not None and not np.isfinite(self.worst):
            raise ParameterError(f"PartScores.worst: expected a finite score or None, got {self.worst!r}")
        if int(self.size) < 1:
            raise ParameterError(f"PartScores.size: expected >= 1, got {self.size!r}")
        check_scalar(self.scale, "PartScores.scale", float, min_val=0, include_boundaries="neither")


@runtime_checkable
class PartScorer(Protocol):
    """Anything that can score the structures of a part under the current model."""

    def part_scores(self, part: Part) -> PartScores:  # pragma: no cover - protocol
        ...


def check_strategy(strategy) -> str:
    """Return ``strategy`` if it is a known strategy name, else raise ParameterError listing them."""
    if strategy not in STRATEGIES:
        raise ParameterError(f"strategy: expected one of {', '.join(repr(s) for s in STRATEGIES)}, "
                             f"got {strategy!r}")
    return strategy


def _margin(scores: PartScores, strategy: str) -> float:
    if strategy == "scoring":
        return scores.best / (scores.size * scores.scale)
    if strategy == "best-vs-worst":
        if scores.worst is None:
            raise ParameterError("strategy 'best-vs-worst': the scorer gave no worst score for this part; "
                                 "use a scorer that reports one, or another strategy")
        return max(scores.best - scores.worst, 0.0) / (scores.size * scores.scale)
    if scores.second is None:
        return np.inf
    return max(scores.best - scores.second, 0.0) / scores.scale


def uncertainty_from_scores(scores: PartScores, strategy: str) -> float:
    """Uncertainty ``q = exp(-m)`` of one part (see the module notes for ``m``).

    Parameters
    ----------
    scores : PartScores
    strategy : {"scoring", "best-vs-worst", "best-vs-2nd"}
        ``"random"`` needs a generator: use :func:`pool_uncertainties`.

    Returns
    -------
    q : float, >= 0
    """
    check_strategy(strategy)
    if strategy == "random":
        raise ParameterError("strategy 'random' does not depend on scores; use pool_uncertainties(..., "
                             "random_state=...) to draw it")
    if not isinstance(scores, PartScores):
        raise ParameterError(f"scores: expected PartScores, got {type(scores).__name__}")
    m = _margin(scores, strategy)
    return float(np.exp(-np.clip(m, -_MAX_EXPONENT, np.inf)))


def _rng(random_state) -> np.random.Generator:
    if isinstance(random_state, np.random.Generator):
        return random_state
    if random_state is None or (is_integer(random_state) and random_state >= 0):
        return np.random.default_rng(random_state)
    raise ParameterError(f"random_state: expected None, an int >= 0 or a numpy Generator, got {random_state!r}")


def check_n_jobs(n_jobs) -> int:
    """Return ``n_jobs`` as an int >= 1 (``-1``: one thread per CPU), else raise ParameterError."""
    if not (is_integer(n_jobs) and (n_jobs >= 1 or n_jobs == -1)):
        raise ParameterError(f"n_jobs: expected an integer >= 1 or -1 (one thread per CPU), got {n_jobs!r}")
    return max(1, os.cpu_count() or 1) if n_jobs == -1 else int(n_jobs)


def score_parts(parts: SequenceT[Part], scorer, *, n_jobs: int = 1) -> list:
    """``scorer.part_scores(p)`` for every part, in order, on ``n_jobs`` threads.

    The decoders behind the scorers release the GIL (numba ``nogil``), so
    threads run them in parallel; the result is the same list as the serial
    loop's whatever ``n_jobs`` is. The scorer must tolerate concurrent calls.

    Parameters
    ----------
    parts : sequence of Part, length n
    scorer : PartScorer
    n_jobs : int
        Threads (``1``: serial, ``-1``: one per CPU).

    Returns
    -------
    scores : list of PartScores, length n
    """
    n_jobs = check_n_jobs(n_jobs)
    parts = list(parts)
    if not hasattr(scorer, "part_scores"):
        raise ParameterError(f"scorer: expected an object with part_scores(part) -> PartScores, "
                             f"got {type(scorer).__name__}")
    if n_jobs == 1 or len(parts) < 2:
        return [scorer.part_scores(p) for p in parts]
    # interleaved chunks balance long and short parts between the threads
    n = min(n_jobs, len(parts))
    chunks = [list(range(k, len(parts), n)) for k in range(n)]
    out: list = [None] * len(parts)

    def work(idx):
        for i in idx:
            out[i] = scorer.part_scores(parts[i])

    with ThreadPoolExecutor(max_workers=n) as pool:
        for fut in [pool.submit(work, idx) for idx in chunks]:
            fut.result()  # re-raises the first error of a thread
    return out


def pool_uncertainties(parts: SequenceT[Part], scorer, strategy: str, *, random_state=None,
                       n_jobs: int = 1) -> np.ndarray:
    """Uncertainty of every part of a pool.

    Parameters
    ----------
    parts : sequence of Part, length n
    scorer : PartScorer
        Not called for ``"random"``.
    strategy : str
        One of :data:`STRATEGIES`.
    random_state : None, int or numpy Generator
        Source of the ``"random"`` draws.
    n_jobs : int
        Threads scoring the parts (see :func:`score_parts`); the result does not depend on it.

    Returns
    -------
    q : ndarray, shape (n,)
    """
    check_strategy(strategy)
    n_jobs = check_n_jobs(n_jobs)
    parts = list(parts)
    if strategy == "random":
        return _rng(random_state).random(len(parts))
    scores = score_parts(parts, scorer, n_jobs=n_jobs)
    return np.array([uncertainty_from_scores(s, strategy) for s in scores], dtype=np.float64)


def rank_parts(uncertainties, *, random_state=None) -> np.ndarray:
    """Order of parts from most to least uncertain, ties broken by a seeded permutation.

    Parameters
    ----------
    uncertainties : array_like, shape (n,)
        NaN is treated as the least uncertain.
    random_state : None, int or numpy Generator

    Returns
    -------
    order : ndarray of int, shape (n,)
    """
    q = np.asarray(uncertainties, dtype=np.float64).reshape(-1)
    tiebreak = _rng(random_state).permutation(q.shape[0])
    key = np.where(np.isnan(q), -np.inf, q)
    return np.lexsort((tiebreak, -key))


def select_batch(parts: SequenceT[Part], uncertainties, n: int, *, suppress: str | None = "overlap",
                 random_state=None) -> list:
    """Indices of the ``n`` most uncertain parts, skipping redundant ones.

    Parameters
    ----------
    parts : sequence of Part, length N
    uncertainties : array_like, shape (N,)
    n : int
        Batch size, >= 1 (fewer are returned when the pool runs out).
    suppress : {"overlap", "item", None}
        ``"overlap"`` skips a part that overlaps one already chosen (same item,
        intersecting ranges); ``"item"`` allows at most one part per item;
        ``None`` takes the top ``n``.
    random_state : None, int or numpy Generator
        Tie-breaking.

    Returns
    -------
    chosen : list of int, most uncertain first
    """
    parts = list(parts)
    q = np.asarray(uncertainties, dtype=np.float64).reshape(-1)
    if q.shape[0] != len(parts):
        raise ParameterError(f"uncertainties: expected {len(parts)} values (one per part), got {q.shape[0]}")
    check_int(n, "n", min_val=1)
    if suppress not in SUPPRESS:
        raise ParameterError(f"suppress: expected one of {SUPPRESS}, got {suppress!r}")
    chosen: list = []
    items: set = set()
    for i in rank_parts(q, random_state=random_state):
        p = parts[i]
        if suppress == "overlap" and any(p.overlaps(parts[j]) for j in chosen):
            continue
        if suppress == "item" and p.item_id in items:
            continue
        chosen.append(int(i))
        items.add(p.item_id)
        if len(chosen) == n:
            break
    return chosen


def next_queries(parts: SequenceT[Part], scorer, n: int = 1, *, strategy: str = "best-vs-2nd",
                 suppress: str | None = "overlap", random_state=None, n_jobs: int = 1) -> list:
    """The next ``n`` parts to ask about, as :class:`~marginalia.types.Query` objects.

    Parameters
    ----------
    parts : sequence of Part
        The unlabelled pool.
    scorer : PartScorer
    n : int
    strategy : str
        One of :data:`STRATEGIES`.
    suppress : {"overlap", "item", None}
    random_state : None, int or numpy Generator
    n_jobs : int
        Threads scoring the parts (see :func:`score_parts`).

    Returns
    -------
    queries : list of Query, rank 0 first
    """
    parts = list(parts)
    if not parts:
        raise ParameterError("parts: the pool of unlabelled parts is empty; nothing left to query")
    rng = _rng(random_state)
    q = pool_uncertainties(parts, scorer, strategy, random_state=rng, n_jobs=n_jobs)
    chosen = select_batch(parts, q, n, suppress=suppress, random_state=rng)
    return [Query(item_id=parts[i].item_id, start=parts[i].start, stop=parts[i].stop, uncertainty=float(q[i]),
                  strategy=strategy, rank=r) for r, i in enumerate(chosen)]
