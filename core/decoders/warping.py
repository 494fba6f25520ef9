"""Exact dynamic time warping (Lajugie 2015, Alg. 8) that stays lean in memory.

A warping of sequences ``A`` (TA x p) and ``B`` (TB x p) is a monotone path of
cells from ``(0, 0)`` to ``(TA-1, TB-1)`` with steps (1,0), (0,1), (1,1)
(:class:`marginalia.types.Warping`). The decoders minimise the sum over the path of
``||L (a_i - b_j)||^2`` (a Mahalanobis cost with ``M = L^T L``), optionally

* inside a Sakoe--Chiba band that follows the diagonal scaled by ``TB / TA``,
* through anchor cells given by partial labels (:class:`WarpingConstraints`),
* augmented by the Hamming loss between binary warping matrices,
* returning the best path *different* from the best one (second best).

Costs are produced in row blocks by a numba kernel (``|a|^2 + |b|^2 - 2 a.b``) and the
recursion runs four rows at a time as a staircase (four independent add-min chains),
keeping five rows of ``D`` and a 2-bit decision per cell, so a full
10k x 10k problem needs ~25 MB, never a float ``TA x TB`` matrix.
"""

from __future__ import annotations

import math
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Optional

import numpy as np

from ..checks import check_int, check_matrix, check_scalar
from ..exceptions import InfeasibleLabelsError, ParameterError
from ..types import WarpAnchorLabel, Warping
from . import _warping_kernels as _k
from .metric import metric_transform

__all__ = [
    "WarpingConstraints",
    "WarpingResult",
    "LossAugmentedWarpingResult",
    "warping_constraints_from_labels",
    "band_limits",
    "dtw",
    "dtw_from_cost",
    "dtw_loss_augmented",
    "dtw_second_best",
    "warping_cost",
    "warping_hamming",
    "pairwise_cost",
    "dtw_linear",
    "warping_area_loss",
]

_BLOCK_CELLS = 1 << 16          # cost block size (floats) handed to the kernel: fits in L2
_THREADED_CELLS = 1 << 24       # from this size, cost blocks are computed on a second thread
_CHECKPOINT_BYTES = 32 * 2**20  # memory for second-best checkpoints
_EMPTY_I = np.zeros(0, np.int64)
_EMPTY_F = np.zeros(0, np.float64)
_EMPTY_2 = np.zeros((0, 0), np.float64)


@dataclass(frozen=True)
class WarpingResult:
    """A warping path and its cost (sum of the cell costs along it)."""

    warping: Warping
    cost: float


@dataclass(frozen=True)
class LossAugmentedWarpingResult:
    """The path minimising ``cost - loss_scale * loss`` (the most violating path).

    Attributes
    ----------
    warping : Warping
    cost : float
    loss : float
        Hamming distance between the binary warping matrices of ``warping`` and
        the reference (number of cells on exactly one of the two paths).
    objective : float
        ``cost - loss_scale * loss`` (the minimised value).
    """

    warping: Warping
    cost: float
    loss: float
    objective: float


@dataclass(frozen=True, eq=False)
class WarpingConstraints:
    """Cells every warping path must pass through.

    Parameters
    ----------
    anchors : array_like of int, shape (K, 2)
        ``(ta, tb)`` pairs, sorted, non-decreasing in both coordinates.
    label_ids : tuple of str, shape (K,), optional
    """

    anchors: np.ndarray
    label_ids: tuple = ()

    def __post_init__(self):
        an = np.array(self.anchors, dtype=np.int64, copy=True).reshape(-1, 2)
        ids = tuple(self.label_ids) or ("",) * an.shape[0]
        if len(ids) != an.shape[0]:
            raise ParameterError(f"WarpingConstraints.label_ids: expected {an.shape[0]} ids, got {len(ids)}")
        order = np.lexsort((an[:, 1], an[:, 0]))
        an = an[order]
        ids = tuple(ids[i] for i in order)
        if an.size and an.min() < 0:
            raise ParameterError(f"WarpingConstraints.anchors: frames must be >= 0, got {an.min()}")
        for t in range(1, an.shape[0]):
            if an[t, 1] < an[t - 1, 1]:
                pair = [x for x in (ids[t - 1], ids[t]) if x]
                raise InfeasibleLabelsError(
                    f"anchors: ({int(an[t - 1, 0])}, {int(an[t - 1, 1])}) and ({int(an[t, 0])}, {int(an[t, 1])}) "
                    f"cross; a monotone path cannot pass through both (labels {pair})", pair)
        an.setflags(write=False)
        object.__setattr__(self, "anchors", an)
        object.__setattr__(self, "label_ids", ids)

    def is_satisfied_by(self, warping: Warping) -> bool:
        """True when the path visits every anchor cell."""
        cells = {(int(i), int(j)) for i, j in warping.path}
        return all((int(i), int(j)) in cells for i, j in self.anchors)


def warping_constraints_from_labels(labels, n_a: int, n_b: int) -> WarpingConstraints:
    """Anchor cells from :class:`WarpAnchorLabel` labels.

    Raises
    ------
    ParameterError
        An anchor outside ``[0, n_a) x [0, n_b)``.
    InfeasibleLabelsError
        Two anchors out of order (``ta`` increases while ``tb`` decreases).
    """
    TA = check_int(n_a, "n_a", min_val=1)
    TB = check_int(n_b, "n_b", min_val=1)
    cells = [anchor_cell(lab, TA, TB) for lab in labels]
    ids = tuple(lab.id for lab in labels)
    return WarpingConstraints(np.array(cells, np.int64).reshape(-1, 2), ids)


def anchor_cell(label, n_a: int, n_b: int) -> tuple:
    """The grid cell ``(ta, tb)`` a :class:`WarpAnchorLabel` pins, checked to lie in ``[0, n_a) x [0, n_b)``.

    Raises
    ------
    ParameterError
        Not a WarpAnchorLabel, or a cell outside the grid.
    """
    if not isinstance(label, WarpAnchorLabel):
        raise ParameterError(f"labels: expected WarpAnchorLabel, got {type(label).__name__}")
    if label.ta >= n_a or label.tb >= n_b:
        raise ParameterError(f"WarpAnchorLabel {label.id}: cell ({label.ta}, {label.tb}) is outside the "
                             f"{n_a} x {n_b} grid; expected ta < {n_a} and tb < {n_b}")
    return label.ta, label.tb


# -------------------------------------------------------------- validation


def _features(name, X) -> np.ndarray:
    return np.ascontiguousarray(check_matrix(X, name, fix="features must be finite"))


def _transformed(A, B, metric):
    """Validated features mapped by the metric: rows ``L a`` so the cost is Euclidean."""
    A = _features("A", A)
    B = _features("B", B)
    p = A.shape[1]
    if B.shape[1] != p:
        raise ParameterError(f"B: has {B.shape[1]} features per frame, expected {p} like A")
    return np.ascontiguousarray(metric_transform(A, metric)), np.ascontiguousarray(metric_transform(B, metric))


def band_limits(n_a: int, n_b: int, band) -> tuple:
    """Columns allowed in every row by a Sakoe--Chiba band.

    Parameters
    ----------
    n_a, n_b : int
        ``TA`` and ``TB``.
    band : float or int or None or (lo, hi)
        Half-width around the diagonal ``j = i (TB-1)/(TA-1)``: a float in
        ``(0, 1]`` is a fraction of ``max(TA, TB)``, an int a number of cells;
        ``None`` allows every cell. A pair of integer arrays of shape (TA,)
        is a corridor given row by row (inclusive column limits, e.g. around
        the path of a coarser DTW); it must leave a monotone path.

    Returns
    -------
    lo, hi : ndarray of int64, shape (TA,)
        Non-decreasing inclusive column limits.

    Raises
    ------
    ParameterError
        The band leaves no monotone path; the message gives the minimal width.
    """
    TA = check_int(n_a, "n_a", min_val=1)
    TB = check_int(n_b, "n_b", min_val=1)
    if band is None:
        return np.zeros(TA, np.int64), np.full(TA, TB - 1, np.int64)
    if isinstance(band, tuple):
        return _corridor(band, TA, TB)
    w = _band_cells(band, TA, TB)
    lo, hi = _limits(TA, TB, w)
    if not _connected(lo, hi, TB):
        need = _minimal_band(TA, TB)
        raise ParameterError(
            f"band: {band!r} ({w:g} cells around the diagonal) leaves no path through a {TA} x {TB} grid; "
            f"expected at least {need} cells (band >= {need / max(TA, TB):.4g} as a fraction)")
    return lo, hi


def _corridor(band, TA, TB) -> tuple:
    """Validated row-by-row column limits ``(lo, hi)`` of a corridor."""
    if len(band) != 2:
        raise ParameterError(f"band: a corridor is a pair (lo, hi) of column limits, got {len(band)} items")
    limits = []
    for name, values in zip(("lo", "hi"), band):
        arr = np.asarray(values)
        if arr.shape != (TA,) or not np.issubdtype(arr.dtype, np.integer):
            raise ParameterError(f"band: corridor {name} must be {TA} integer column limits (one per row), "
                                 f"got shape {arr.shape} of {arr.dtype}")
        limits.append(np.ascontiguousarray(arr, dtype=np.int64))
    lo, hi = limits
    if lo.min() < 0 or hi.max() > TB - 1 or np.any(np.diff(lo) < 0) or np.any(np.diff(hi) < 0) \
            or not _connected(lo, hi, TB):
        raise ParameterError(f"band: the corridor leaves no monotone path through the {TA} x {TB} grid; it must "
                             f"start at column 0, end at column {TB - 1}, with non-decreasing limits that overlap "
                             "from one row to the next")
    return lo, hi


def _band_cells(band, TA, TB) -> float:
    if isinstance(band, bool):
        raise ParameterError(f"band: expected None, a fraction in (0, 1] or a number of cells, got {band!r}")
    if isinstance(band, (int, np.integer)):
        if band < 0:
            raise ParameterError(f"band: expected a number of cells >= 0, got {band}")
        return float(band)
    if isinstance(band, (float, np.floating)) and math.isfinite(band) and 0 < band <= 1:
        return float(band) * max(TA, TB)
    raise ParameterError(f"band: expected None, a fraction in (0, 1] or a number of cells, got {band!r}")


def _limits(TA, TB, w):
    i = np.arange(TA, dtype=np.float64)
    centre = i * ((TB - 1) / (TA - 1)) if TA > 1 else np.zeros(1)
    lo = np.maximum(np.ceil(centre - w - 1e-9), 0).astype(np.int64)
    hi = np.minimum(np.floor(centre + w + 1e-9), TB - 1).astype(np.int64)
    if TA == 1:
        lo[0] = 0
        hi[0] = min(TB - 1, int(math.floor(w + 1e-9)))
    return lo, hi


def _connected(lo, hi, TB) -> bool:
    return bool(lo[0] == 0 and hi[-1] == TB - 1 and np.all(hi >= lo) and np.all(lo[1:] <= hi[:-1] + 1))


def _minimal_band(TA, TB) -> int:
    a, b = 0, max(TA, TB)
    while a < b:
        mid = (a + b) // 2
        lo, hi = _limits(TA, TB, float(mid))
        if _connected(lo, hi, TB):
            b = mid
        else:
            a = mid + 1
    return a


# ----------------------------------------------------------------- problem


class _Problem:
    """Validated cost source, band and anchor segments of one DTW call."""

    def __init__(self, *, Af=None, Bf=None, C=None, band=None, constraints=None):
        if C is not None:
            self.mode = 1
            self.C = C
            TA, TB = C.shape
            self.Af = self.Bf = _EMPTY_2
            self.na = np.zeros(TA)
            self.nb = np.zeros(TB)
        else:
            self.mode = 0
            self.C = _EMPTY_2
            self.Af, self.Bf = Af, Bf
            TA, TB = Af.shape[0], Bf.shape[0]
            self.na = np.einsum("ij,ij->i", Af, Af)
            self.nb = np.einsum("ij,ij->i", Bf, Bf)
        self.TA, self.TB = TA, TB
        self.lo, self.hi = band_limits(TA, TB, band)
        if constraints is None:
            constraints = WarpingConstraints(np.zeros((0, 2), np.int64))
        elif not isinstance(constraints, WarpingConstraints):
            raise ParameterError(f"constraints: expected WarpingConstraints or None, got {type(constraints).__name__}")
        points = [(0, 0)]
        for (ta, tb), lid in zip(constraints.anchors, constraints.label_ids):
            ta, tb = int(ta), int(tb)
            if ta >= TA or tb >= TB:
                raise ParameterError(f"constraints: anchor ({ta}, {tb}) (label {lid!r}) is outside the "
                                     f"{TA} x {TB} grid")
            if not self.lo[ta] <= tb <= self.hi[ta]:
                raise InfeasibleLabelsError(f"constraints: anchor ({ta}, {tb}) (label {lid!r}) lies outside the "
                                            f"band (row {ta} allows columns {int(self.lo[ta])}..{int(self.hi[ta])})",
                                            [lid] if lid else [])
            if (ta, tb) != points[-1]:
                points.append((ta, tb))
        if points[-1] != (TA - 1, TB - 1):
            points.append((TA - 1, TB - 1))
        self.segments = list(zip(points[:-1], points[1:])) or [((0, 0), (0, 0))]

    def segment(self, seg):
        """Local arrays of one segment between two consecutive anchor cells."""
        (i0, j0), (i1, j1) = seg
        lo = np.maximum(self.lo[i0:i1 + 1], j0) - j0
        hi = np.minimum(self.hi[i0:i1 + 1], j1) - j0
        if self.mode == 1:
            local = dict(Af=_EMPTY_2, Bf=_EMPTY_2, C=np.ascontiguousarray(self.C[i0:i1 + 1, j0:j1 + 1]))
        else:
            local = dict(Af=self.Af[i0:i1 + 1], Bf=self.Bf[j0:j1 + 1], C=_EMPTY_2)
        local.update(na=self.na[i0:i1 + 1], nb=self.nb[j0:j1 + 1], lo=lo, hi=hi,
                     shape=(i1 - i0 + 1, j1 - j0 + 1), origin=(i0, j0))
        return local

    def cost_of(self, path) -> float:
        return float(_k.path_cost(self.mode, self.Af, self.Bf, self.na, self.nb, self.C, path))


class _SegmentDecoder:
    """Forward pass and backtracking on one segment (local coordinates)."""

    def __init__(self, prob, loc, shift=0.0, tlo=_EMPTY_I, thi=_EMPTY_I, bonus=0.0, checkpoints=False):
        self.prob, self.loc = prob, loc
        self.shift, self.tlo, self.thi, self.bonus = shift, tlo, thi, bonus
        na_, nb_ = loc["shape"]
        lo, hi = loc["lo"], loc["hi"]
        n = hi - lo + 1
        self.dir_off = np.zeros(na_ + 1, np.int64)
        np.cumsum((n + 3) // 4, out=self.dir_off[1:])
        self.dirs = np.zeros(int(self.dir_off[-1]), np.uint8)
        if checkpoints:
            cells = int(n.sum())
            self.k = k = int(max(32, -(-2 * 8 * cells // _CHECKPOINT_BYTES)))
            ck_rows = np.arange(k - 1, na_, k)
            self.row_ck_off = np.zeros(len(ck_rows) + 1, np.int64)
            np.cumsum(n[ck_rows], out=self.row_ck_off[1:])
            self.row_ck = np.empty(int(self.row_ck_off[-1]))
            first = ((lo + 1 + k - 1) // k) * k - 1
            count = np.maximum(0, (hi - first) // k + 1)
            self.col_ck_off = np.zeros(na_ + 1, np.int64)
            np.cumsum(count, out=self.col_ck_off[1:])
            self.col_ck = np.empty(int(self.col_ck_off[-1]))
        else:
            self.k = 0
            self.row_ck_off = self.col_ck_off = _EMPTY_I
            self.row_ck = self.col_ck = _EMPTY_F
        self.value = self._forward()

    def _forward(self):
        loc, prob = self.loc, self.prob
        na_, nb_ = loc["shape"]
        lo, hi = loc["lo"], loc["hi"]
        D = np.full((5, nb_ + 1), np.inf)
        D[4, 0] = 0.0  # virtual predecessor of (0, 0): row -1 lives in slot -1 % 5
        code = np.zeros((4, (nb_ + 7) // 4 * 4), np.uint8)  # rows read as 32-bit words when packed
        threaded = prob.mode == 0 and int((hi - lo + 1).sum()) >= _THREADED_CELLS
        budget = _BLOCK_CELLS * (4 if threaded else 1)  # bigger blocks amortise the hand-over between threads
        widest = int((hi - lo).max()) + 1
        rows = max(4, budget // widest // 4 * 4)  # whole groups of four rows (see _k.dtw_rows)
        # a band drifts right along the rows, so a block spans more columns than one row
        while rows > 4 and rows * (int((hi[np.minimum(np.arange(0, na_, rows) + rows, na_) - 1]
                                            - lo[np.arange(0, na_, rows)]).max()) + 1) > 2 * budget:
            rows = max(4, rows // 8 * 4)
        starts = np.arange(0, na_, rows)
        stops = np.minimum(starts + rows, na_)
        span = int((hi[stops - 1] - lo[starts]).max()) + 1

        def recursion(G, r0, r1):
            _k.dtw_rows(G, int(lo[r0]), r0, r1, lo, hi, D, self.dirs, self.dir_off, self.shift, self.tlo, self.thi,
                        self.bonus, self.k, self.row_ck, self.row_ck_off, self.col_ck, self.col_ck_off, code)

        blocks = list(zip(starts.tolist(), stops.tolist()))
        if prob.mode == 1:
            for r0, r1 in blocks:
                # a private copy: the kernel adds the loss terms in place
                recursion(np.array(loc["C"][r0:r1, lo[r0]:hi[r1 - 1] + 1], copy=True), r0, r1)
        else:
            Bt = np.ascontiguousarray(loc["Bf"].T)

            def costs(block, out):
                r0, r1 = block
                _k.cost_block(loc["Af"], Bt, loc["na"], loc["nb"], r0, r1, int(lo[r0]), int(hi[r1 - 1]), out)
                return out

            bufs = [np.empty((rows, span)) for _ in range(2 if threaded else 1)]
            if not threaded or len(blocks) < 3:
                _k.dtw_blocks(loc["Af"], Bt, loc["na"], loc["nb"], starts, stops, lo, hi, D, self.dirs, self.dir_off,
                              self.shift, self.tlo, self.thi, self.bonus, self.k, self.row_ck, self.row_ck_off,
                              self.col_ck, self.col_ck_off, code, bufs[0])
            else:
                # two cores: one thread computes the next cost block while this one runs the recursion
                with ThreadPoolExecutor(max_workers=1) as pool:
                    pending = pool.submit(costs, blocks[0], bufs[0])
                    for b, (r0, r1) in enumerate(blocks):
                        G = pending.result()
                        if b + 1 < len(blocks):
                            pending = pool.submit(costs, blocks[b + 1], bufs[(b + 1) % 2])
                        recursion(G, r0, r1)
        return float(D[(na_ - 1) % 5, nb_])

    def backtrack(self, i, j):
        na_, nb_ = self.loc["shape"]
        out = np.empty((na_ + nb_, 2), np.int64)
        n = _k.backtrack(self.dirs, self.dir_off, self.loc["lo"], i, j, out)
        return out[:n]

    def best_path(self):
        na_, nb_ = self.loc["shape"]
        return self.backtrack(na_ - 1, nb_ - 1)

    def runner_up(self, path):
        """(gap, path) of the best local path different from ``path``; gap is inf when none."""
        loc = self.loc
        preds = np.empty((path.shape[0], 3))
        Bt = np.ascontiguousarray(loc["Bf"].T) if self.prob.mode == 0 else _EMPTY_2
        _k.path_predecessors(self.prob.mode, loc["Af"], Bt, loc["na"], loc["nb"], loc["C"],
                             loc["lo"], loc["hi"], self.shift, self.tlo, self.thi, self.bonus,
                             self.k, self.row_ck, self.row_ck_off, self.col_ck, self.col_ck_off, path, preds)
        # the predecessor actually taken is the previous path cell
        step = np.diff(path, axis=0)
        taken = np.where(step[:, 0] == 0, 2, np.where(step[:, 1] == 0, 1, 0))
        rows = np.arange(1, path.shape[0])
        chosen = preds[rows, taken]
        others = preds[1:].copy()
        others[np.arange(rows.size), taken] = np.inf
        alt = others.min(axis=1)
        with np.errstate(invalid="ignore"):
            gap = np.where(np.isfinite(alt), np.maximum(alt - chosen, 0.0), np.inf)
        if gap.size == 0 or not np.isfinite(gap).any():
            return np.inf, None
        t = int(np.argmin(gap))
        which = int(np.argmin(others[t]))
        i, j = path[t + 1]
        pi, pj = (i - 1, j - 1) if which == 0 else ((i - 1, j) if which == 1 else (i, j - 1))
        prefix = self.backtrack(int(pi), int(pj))
        return float(gap[t]), np.vstack([prefix, path[t + 1:]])


def _solve(prob, shift=0.0, truth_rows=None, bonus=0.0, second=False):
    """Best path (and runner-up) over all segments, in global coordinates."""
    pieces, decs = [], []
    for seg in prob.segments:
        loc = prob.segment(seg)
        tlo = thi = _EMPTY_I
        if truth_rows is not None:
            (i0, j0), (i1, _) = seg
            tlo = truth_rows[0][i0:i1 + 1] - j0
            thi = truth_rows[1][i0:i1 + 1] - j0
        dec = _SegmentDecoder(prob, loc, shift, tlo, thi, bonus, checkpoints=second)
        if not np.isfinite(dec.value):
            raise InfeasibleLabelsError("constraints: no warping path satisfies the band and the anchors")
        decs.append(dec)
        pieces.append(dec.best_path() + np.array(loc["origin"]))
    best = _join(pieces)
    if not second:
        return best, None
    gaps = []
    for s, dec in enumerate(decs):
        local = pieces[s] - np.array(dec.loc["origin"])
        gaps.append(dec.runner_up(local))
    s = int(np.argmin([g for g, _ in gaps]))
    if not np.isfinite(gaps[s][0]):
        return best, None
    alt = list(pieces)
    alt[s] = gaps[s][1] + np.array(decs[s].loc["origin"])
    return best, _join(alt)


def _join(pieces):
    out = [pieces[0]] + [p[1:] for p in pieces[1:]]
    return np.vstack(out)


def _truth_rows(truth, TA, TB):
    if not isinstance(truth, Warping):
        raise ParameterError(f"truth: expected a Warping, got {type(truth).__name__}")
    if truth.shape != (TA, TB):
        raise ParameterError(f"truth: warps a {truth.shape[0]} x {truth.shape[1]} grid, expected {TA} x {TB}")
    p = truth.path
    tlo = np.full(TA, TB, np.int64)
    thi = np.full(TA, -1, np.int64)
    np.minimum.at(tlo, p[:, 0], p[:, 1])
    np.maximum.at(thi, p[:, 0], p[:, 1])
    return tlo, thi


# -------------------------------------------------------------------- API


def dtw(A, B, *, metric=None, band=None, constraints: Optional[WarpingConstraints] = None) -> WarpingResult:
    """Minimal-cost warping path between two feature sequences.

    Parameters
    ----------
    A : array_like, shape (TA, p) or (TA,)
    B : array_like, shape (TB, p) or (TB,)
        Finite features with the same ``p``.
    metric : None or array_like, shape (p,) or (q, p)
        ``None``: squared Euclidean cost; weights ``w`` (shape (p,)): cost
        ``sum_k w_k^2 (a_k - b_k)^2``; a matrix ``L`` (q, p): ``||L (a - b)||^2``.
    band : None, float in (0, 1] or int
        Sakoe--Chiba half-width (fraction of ``max(TA, TB)`` or cells).
    constraints : WarpingConstraints, optional
        Cells the path must visit.

    Returns
    -------
    WarpingResult

    Notes
    -----
    ``O(cells x p)`` time with ``cells = TA x TB`` or the band area;
    memory: ``cells / 4`` bytes of decisions and a few MB of cost blocks.
    """
    Af, Bf = _transformed(A, B, metric)
    prob = _Problem(Af=Af, Bf=Bf, band=band, constraints=constraints)
    path, _ = _solve(prob)
    return WarpingResult(Warping(path), prob.cost_of(path))


def dtw_from_cost(C, *, band=None, constraints: Optional[WarpingConstraints] = None) -> WarpingResult:
    """Minimal-cost warping path for a given cost matrix ``C`` of shape (TA, TB) (any finite values)."""
    C = _cost_matrix(C)
    prob = _Problem(C=C, band=band, constraints=constraints)
    path, _ = _solve(prob)
    return WarpingResult(Warping(path), prob.cost_of(path))


def _cost_matrix(C):
    C = check_matrix(C, "C", shape="(TA, TB) cost", allow_1d=False, axes=("frame of A", "frame of B"),
                     fix="costs must be finite")
    return np.ascontiguousarray(C)


def dtw_loss_augmented(A, B, truth: Warping, *, loss: str = "hamming", loss_scale: float = 1.0, metric=None,
                       band=None, constraints: Optional[WarpingConstraints] = None, cost=None
                       ) -> LossAugmentedWarpingResult:
    """Path minimising ``cost - loss_scale * hamming(path, truth)``.

    The Hamming distance between binary warping matrices is
    ``|Y| + |Y*| - 2 |Y and Y*|``: linear in the path, it adds ``-loss_scale``
    to every cell and ``+2 loss_scale`` to the cells of ``truth``.

    Parameters
    ----------
    A, B, metric, band, constraints
        As in :func:`dtw` (``A`` and ``B`` are ignored when ``cost`` is given).
    truth : Warping
        The reference path over the same ``TA x TB`` grid.
    loss : {"hamming"}
    loss_scale : float
        Finite, >= 0.
    cost : array_like, shape (TA, TB), optional
        A cost matrix to use instead of features.
    """
    if loss != "hamming":
        raise ParameterError(f"loss: expected 'hamming', got {loss!r}")
    c = check_scalar(loss_scale, "loss_scale", float, min_val=0)
    prob = _problem(A, B, metric, band, constraints, cost)
    rows = _truth_rows(truth, prob.TA, prob.TB)
    path, _ = _solve(prob, shift=-c, truth_rows=rows, bonus=2.0 * c)
    w = Warping(path)
    value = warping_hamming(w, truth)
    total = prob.cost_of(path)
    return LossAugmentedWarpingResult(w, total, float(value), total - c * value)


def _problem(A, B, metric, band, constraints, cost):
    if cost is not None:
        return _Problem(C=_cost_matrix(cost), band=band, constraints=constraints)
    Af, Bf = _transformed(A, B, metric)
    return _Problem(Af=Af, Bf=Bf, band=band, constraints=constraints)



def dtw_second_best(A, B, *, metric=None, band=None, constraints: Optional[WarpingConstraints] = None, cost=None):
    """The best warping path and the cheapest one different from it.

    Any other path leaves the best one for the last time at one of its cells,
    entering it from a predecessor the forward pass rejected; so the runner-up
    costs ``best + min over path cells of (second smallest - smallest
    predecessor value)``. Those values are recomputed exactly from row and
    column checkpoints on the ``k x k`` tiles the path crosses (~1 % of the
    forward work for a 10k x 10k grid).

    Returns
    -------
    best : WarpingResult
    second : WarpingResult or None
        ``None`` when a single path exists (e.g. ``TA == 1``).
    """
    prob = _problem(A, B, metric, band, constraints, cost)
    path, alt = _solve(prob, second=True)
    best = WarpingResult(Warping(path), prob.cost_of(path))
    if alt is None:
        return best, None
    return best, WarpingResult(Warping(alt), prob.cost_of(alt))


def warping_cost(A, B, warping: Warping, *, metric=None, cost=None) -> float:
    """Sum of the cell costs along ``warping`` (features with ``metric``, or a cost matrix ``cost``)."""
    prob_shape = None
    if cost is not None:
        C = _cost_matrix(cost)
        prob_shape = C.shape
        mode, Af, Bf, na, nb = 1, _EMPTY_2, _EMPTY_2, _EMPTY_F, _EMPTY_F
    else:
        Af, Bf = _transformed(A, B, metric)
        C, mode = _EMPTY_2, 0
        prob_shape = (Af.shape[0], Bf.shape[0])
        na = np.einsum("ij,ij->i", Af, Af)
        nb = np.einsum("ij,ij->i", Bf, Bf)
    if not isinstance(warping, Warping):
        raise ParameterError(f"warping: expected a Warping, got {type(warping).__name__}")
    if warping.shape != prob_shape:
        raise ParameterError(f"warping: ends at cell {tuple(int(x) - 1 for x in warping.shape)}, expected "
                             f"{(prob_shape[0] - 1, prob_shape[1] - 1)} for sequences of lengths {prob_shape}")
    return float(_k.path_cost(mode, Af, Bf, na, nb, C, warping.path))


def warping_hamming(a: Warping, b: Warping) -> int:
    """Number of cells on exactly one of the two paths (Hamming between binary warping matrices)."""
    for name, w in (("a", a), ("b", b)):
        if not isinstance(w, Warping):
            raise ParameterError(f"{name}: expected a Warping, got {type(w).__name__}")
    if a.shape != b.shape:
        raise ParameterError(f"b: warps a {b.shape[0]} x {b.shape[1]} grid, expected {a.shape[0]} x {a.shape[1]}")
    TB = a.shape[1]
    ca = a.path[:, 0] * TB + a.path[:, 1]  # paths are sorted, so the cell codes are unique and sorted
    cb = b.path[:, 0] * TB + b.path[:, 1]
    common = np.intersect1d(ca, cb, assume_unique=True).size
    return int(ca.size + cb.size - 2 * common)


# ------------------------------------------------- linear oracles and area


def pairwise_cost(A, B, *, metric=None) -> np.ndarray:
    """Dense matrix of cell costs ``C[i, j] = ||L (a_i - b_j)||^2``, shape (TA, TB).

    ``metric`` as in :func:`dtw`. Memory ``8 TA TB`` bytes: meant for the
    learners, whose linear oracles need the whole matrix anyway.
    """
    Af, Bf = _transformed(A, B, metric)
    na = np.einsum("ij,ij->i", Af, Af)
    nb = np.einsum("ij,ij->i", Bf, Bf)
    # the decoders' single-threaded kernel, not BLAS: a threaded GEMM on these
    # small blocks was 100x slower on a loaded 2-core machine
    C = np.empty((Af.shape[0], Bf.shape[0]))
    _k.cost_block(Af, np.ascontiguousarray(Bf.T), na, nb, 0, Af.shape[0], 0, Bf.shape[0] - 1, C)
    return C


def dtw_linear(A, B, offset, *, metric=None, band=None, constraints: Optional[WarpingConstraints] = None
               ) -> WarpingResult:
    """Path minimising ``sum over its cells of ||L (a_i - b_j)||^2 + offset[i, j]``.

    The linear oracle of Frank--Wolfe learners: any loss that is linear in
    the binary warping matrix (or the gradient of a relaxed loss) enters as
    ``offset``.

    Parameters
    ----------
    A, B, metric, band, constraints
        As in :func:`dtw`.
    offset : array_like, shape (TA, TB)
        Finite extra cost of every cell (any sign).

    Returns
    -------
    WarpingResult
        ``cost`` is the minimised objective (metric costs plus offsets).
    """
    C = pairwise_cost(A, B, metric=metric)
    try:
        off = np.asarray(offset, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise ParameterError(f"offset: expected a ({C.shape[0]}, {C.shape[1]}) array of floats ({exc})") from None
    if off.shape != C.shape:
        raise ParameterError(f"offset: expected shape {C.shape} (TA, TB), got {off.shape}")
    if not np.isfinite(off).all():
        raise ParameterError("offset: contains NaN or infinite values; offsets must be finite")
    C += off
    return dtw_from_cost(C, band=band, constraints=constraints)


def _column_runs(path, n_cols):
    """First and last row of every column of a path (``path`` sorted, steps of a warping)."""
    s = np.empty(n_cols, np.int64)
    e = np.empty(n_cols, np.int64)
    cols = path[:, 1]
    # cells are sorted by row then column, so within a column rows increase
    first = np.r_[True, cols[1:] != cols[:-1]]
    last = np.r_[cols[1:] != cols[:-1], True]
    s[cols[first]] = path[first, 0]
    e[cols[last]] = path[last, 0]
    return s, e


def warping_area_loss(a: Warping, b: Warping) -> float:
    """Symmetric area loss between two warpings (Lajugie 2015, eq. 5.7).

    ``1/2 (||L_A (Y_a - Y_b)||_F^2 + ||(Y_a - Y_b) L_B||_F^2)`` with ``Y`` the
    binary warping matrices and ``L_T`` the ``T x T`` lower triangular matrix
    of ones. When neither path has vertical moves the first term is the area
    between them (sum over columns of the row offsets); the second term does
    the same with the roles of rows and columns exchanged, so vertical and
    horizontal moves count alike. Computed from the runs of each column and
    row in ``O(TA + TB + area)``, without the dense matrices.
    """
    for name, w in (("a", a), ("b", b)):
        if not isinstance(w, Warping):
            raise ParameterError(f"{name}: expected a Warping, got {type(w).__name__}")
    if a.shape != b.shape:
        raise ParameterError(f"b: warps a {b.shape[0]} x {b.shape[1]} grid, expected {a.shape[0]} x {a.shape[1]}")
    TA, TB = a.shape
    s1, e1 = _column_runs(a.path, TB)
    s2, e2 = _column_runs(b.path, TB)
    # rows of Y L_B count the cells at columns >= j: the column runs of the
    # transposed paths, read from the right
    at = a.path[:, ::-1]
    bt = b.path[:, ::-1]
    at = at[np.lexsort((at[:, 1], at[:, 0]))]
    bt = bt[np.lexsort((bt[:, 1], bt[:, 0]))]
    r1, f1 = _column_runs(at, TA)
    r2, f2 = _column_runs(bt, TA)
    rows = _k.ramp_sq_diff(s1, e1, s2, e2, TA)
    cols = _k.ramp_sq_diff(TB - 1 - f1, TB - 1 - r1, TB - 1 - f2, TB - 1 - r2, TB)
    return 0.5 * float(rows + cols)
