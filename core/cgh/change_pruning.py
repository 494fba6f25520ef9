"""Local keep-or-drop decisions on the changes of a segmentation, learned from region labels.

A penalty chosen per sequence decides all its changes at once; on high-density
aCGH arrays the expert keeps a few small focal events and rejects small
level shifts (waves) in the same chromosome, which no single penalty does.
:class:`ChangePruner` takes a segmentation (typically the penalty law's, or an
over-segmentation) and removes, one at a time, the change with the weakest
evidence while that evidence is below a learned threshold ``tau``. The
evidence of a change between a left segment of ``n_l`` samples and a right
one of ``n_r`` (``x`` in noise units, ``σ̂`` from first differences) is::

    score = log |mean_r - mean_l| + beta * log(n_l n_r / (n_l + n_r)) + gamma * log min(n_l, n_r)
            + delta * log max(sd_short, SPREAD_FLOOR)

(``beta = 0.5, gamma = delta = 0``: the log of a two-sample t statistic; ``beta =
gamma = delta = 0``: the log jump size). ``sd_short`` is the standard deviation
of the shorter of the two segments: a real focal event raises its few probes
alike (spread near the noise level, 1), while a cluster of outliers reaches the
same mean jump with a few wild probes. On the neuroblastoma high-density arrays
(changes of an over-segmentation, penalty 2 log T, that fall in labelled regions)
the short segments of changes the experts call real have a median spread of 1.1,
those of rejected ones 3.3; ranking the changes by the t statistic alone gives
ROC AUC 0.66, with the spread added 0.86. A negative ``delta`` lowers the evidence of scattered segments.
After a removal the neighbouring changes are rescored on the merged segment, so a
spurious change next to a real one does not survive because of it.

Single-probe spikes (a probe more than ``SPIKE_THRESHOLD`` noise units from the median of itself
and its two neighbours) are replaced by that median before scoring (:func:`despike`): a wild
probe makes a three-probe segment look like a focal event, and on the training labels such false
changes push the learned threshold up until real focal events are dropped too.

The candidates need not come from one penalty: :func:`oversegment` gives a
label-free over-segmentation (penalty ``2 log T`` in noise units) whose changes,
added to a learned segmentation's with :func:`with_changes_of`, let the rule keep
a change that segmentation's penalty missed.

The removal order does not depend on ``tau``: one elimination run per
sequence gives the whole path, and a change is removed at threshold ``tau``
iff the running maximum of the removal scores up to it is below ``tau``. The
fit counts the label errors (Hocking et al. 2013: FP for a change in a
``0breakpoints`` region, FN for none in a ``1breakpoint`` region, FP for two or
more there) along that path for every ``(beta, gamma, delta)`` of a small grid
and keeps the rule with the fewest training errors: when several reach it, the
one whose near-best thresholds (at most ``tolerance`` errors above its fewest) form
the longest run, at the middle of that run; no pruning at all when it is not
strictly better than keeping every change. Aiming at the middle of the thresholds
within one error of the best, rather than of the best ones alone, keeps the threshold
away from a lone training sequence's edge: on the neuroblastoma cohort it lowered the
recipe's test label errors in each of six cross-validation runs, 236 to 218 in all
(three splits by profile x two SSVM seeds; docs/research/).
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass

import numba
import numpy as np

from ..checks import check_int, check_signal
from ..decoders.segmentation import segment_penalized
from ..exceptions import NotFittedError, ParameterError
from ..features.hermite import robust_noise_scale
from ..types import RegionLabel, Segmentation

__all__ = ["ChangePruner", "ErrorTables", "elimination_path", "prune_changes", "oversegment", "with_changes_of",
           "despike", "DEFAULT_TOLERANCE", "OVERSEGMENT_PENALTY", "SPIKE_THRESHOLD"]

DEFAULT_BETAS = (0.0, 0.25, 0.5, 0.75, 1.0)
DEFAULT_GAMMAS = (-0.3, 0.0, 0.3)
DEFAULT_DELTAS = (0.0, -0.5, -1.0, -1.5, -2.0)
DEFAULT_TAUS = tuple(np.round(np.arange(-1.0, 4.0001, 0.05), 2))

#: training label errors above a rule's fewest that a threshold may make and still count as near-best
#: when the threshold is placed at the middle of the longest run of near-best ones
DEFAULT_TOLERANCE = 1


#: penalty per change of :func:`oversegment`, in units of ``log T`` (the signal in noise units): finer than
#: the learned laws' segmentations of the high-density aCGH arrays, with a candidate in all but 11 of their 120
#: labelled regions holding a change (3 times ``log T``: 38 missed)
OVERSEGMENT_PENALTY = 2.0

#: a probe this far (noise units) from the median of itself and its two neighbours is a spike; 4 is the
#: outlier scale of DNAcopy's smoothing of aCGH profiles. On the neuroblastoma high-density arrays it took
#: the recipe's pruned segmentations from 42 to 38 label errors of 676 (docs/research/)
SPIKE_THRESHOLD = 4.0

#: floor of the shorter segment's spread in the score (noise units): a segment of near-identical values
#: is as consistent as one at the noise level, not infinitely more
SPREAD_FLOOR = 0.5


@numba.njit(cache=True)
def _score(s1, s2, bounds, prv, nxt, j, beta, gamma, delta):
    a = bounds[prv[j]]
    b = bounds[j]
    c = bounds[nxt[j]]
    nl = b - a
    nr = c - b
    ml = (s1[b] - s1[a]) / nl
    mr = (s1[c] - s1[b]) / nr
    jump = abs(mr - ml)
    nh = nl * nr / (nl + nr)
    out = math.log(jump + 1e-12) + beta * math.log(nh) + gamma * math.log(min(nl, nr))
    if delta != 0.0:
        if nl <= nr:
            var = (s2[b] - s2[a]) / nl - ml * ml
        else:
            var = (s2[c] - s2[b]) / nr - mr * mr
        out += delta * 0.5 * math.log(max(var, SPREAD_FLOOR * SPREAD_FLOOR))
    return out


@numba.njit(cache=True)
def _eliminate(s1, s2, bounds, beta, gamma, delta):
    # bounds = 0, c_1 .. c_m, T; removes every change, weakest first; O(m^2), m is small
    n = bounds.shape[0]
    m = n - 2
    prv = np.arange(n) - 1
    nxt = np.arange(n) + 1
    alive = np.ones(n, dtype=np.bool_)
    score = np.full(n, np.inf)
    for j in range(1, n - 1):
        score[j] = _score(s1, s2, bounds, prv, nxt, j, beta, gamma, delta)
    order = np.empty(m, dtype=np.int64)
    death = np.empty(m)
    for k in range(m):
        best = np.inf
        bj = -1
        for j in range(1, n - 1):
            if alive[j] and score[j] < best:
                best = score[j]
                bj = j
        order[k] = bj
        death[k] = best
        alive[bj] = False
        p = prv[bj]
        q = nxt[bj]
        nxt[p] = q
        prv[q] = p
        if p > 0:
            score[p] = _score(s1, s2, bounds, prv, nxt, p, beta, gamma, delta)
        if q < n - 1:
            score[q] = _score(s1, s2, bounds, prv, nxt, q, beta, gamma, delta)
    return order, death


def _noise_units(x, scale, spike=None) -> np.ndarray:
    x = check_signal(x, "x")
    if scale is None:
        scale = robust_noise_scale(x)
    if not (np.isfinite(scale) and scale > 0):
        raise ParameterError(f"scale: expected a finite noise level > 0, got {scale!r}")
    z = (x - np.median(x)) / float(scale)
    return z if spike is None else despike(z, spike)


def _check_spike(spike) -> "float | None":
    if spike is None:
        return None
    spike = _check_exponent(spike, "spike")
    if spike <= 0:
        raise ParameterError(f"spike: expected a threshold > 0 in noise units (or None), got {spike!r}")
    return spike


def despike(z, threshold=SPIKE_THRESHOLD) -> np.ndarray:
    """``z`` with each interior probe farther than ``threshold`` from the median of itself and its two
    neighbours replaced by that median.

    A focal event of two or more probes survives (each of its probes has a neighbour at its level);
    the two end probes are kept as they are.

    Parameters
    ----------
    z : array_like, shape (T,)
        A signal in noise units.
    threshold : float
        In the units of ``z``.

    Returns
    -------
    ndarray, shape (T,)
        A copy.
    """
    z = np.array(check_signal(z, "z"), dtype=np.float64)
    threshold = _check_spike(threshold)
    if threshold is None or z.shape[0] < 3:
        return z
    med = np.median(np.stack([z[:-2], z[1:-1], z[2:]]), axis=0)
    spikes = np.abs(z[1:-1] - med) > threshold
    z[1:-1][spikes] = med[spikes]
    return z


def _check_seg(segmentation, T) -> Segmentation:
    if not isinstance(segmentation, Segmentation):
        raise ParameterError(f"segmentation: expected a Segmentation, got {type(segmentation).__name__}")
    if segmentation.n_samples != T:
        raise ParameterError(f"segmentation: covers {segmentation.n_samples} samples but x has {T}")
    return segmentation


def _check_exponent(v, name) -> float:
    try:
        v = float(v)
    except (TypeError, ValueError):
        raise ParameterError(f"{name}: expected a finite number, got {v!r}") from None
    if not math.isfinite(v):
        raise ParameterError(f"{name}: expected a finite number, got {v!r}")
    return v


def elimination_path(x, segmentation, *, beta=0.0, gamma=0.0, delta=0.0, scale=None, spike=None) -> tuple:
    """Order in which the changes of ``segmentation`` are removed, weakest evidence first.

    Parameters
    ----------
    x : array_like, shape (T,) or (T, 1)
        The 1-d signal (e.g. an aCGH logratio).
    segmentation : Segmentation
        Its candidate changes.
    beta, gamma : float
        Exponents of the harmonic and of the smaller segment length in the score.
    delta : float
        Exponent of the shorter segment's standard deviation (noise units, floored at
        ``SPREAD_FLOOR``) in the score.
    scale : float, optional
        Noise level of ``x`` (default: :func:`~marginalia.features.hermite.robust_noise_scale`).
    spike : float, optional
        Threshold of :func:`despike` applied to ``x`` in noise units first (default: none).

    Returns
    -------
    changes : ndarray of int, shape (m,)
        The change indices in removal order.
    scores : ndarray, shape (m,)
        The score of each change when it was removed (its neighbours then
        being the changes still present).
    """
    z = _noise_units(x, scale, _check_spike(spike))
    seg = _check_seg(segmentation, z.shape[0])
    beta, gamma = _check_exponent(beta, "beta"), _check_exponent(gamma, "gamma")
    delta = _check_exponent(delta, "delta")
    bounds = np.r_[0, np.asarray(seg.changes, dtype=np.int64)]
    s1, s2 = _prefix_sums(z)
    order, death = _eliminate(s1, s2, bounds, beta, gamma, delta)
    return bounds[order], death


def _prefix_sums(z) -> tuple:
    return np.r_[0.0, np.cumsum(z)], np.r_[0.0, np.cumsum(z * z)]


def _n_removed(scores, tau) -> int:
    """Changes removed at threshold ``tau``: the elimination stops at the first score >= tau."""
    if tau is None or scores.size == 0:
        return 0
    runmax = np.maximum.accumulate(scores)
    return int(np.searchsorted(runmax, tau, side="left"))


def prune_changes(x, segmentation, *, tau, beta=0.0, gamma=0.0, delta=0.0, scale=None, spike=None) -> Segmentation:
    """Remove the changes whose evidence stays below ``tau`` (weakest first, rescoring the neighbours).

    Parameters
    ----------
    x : array_like, shape (T,) or (T, 1)
    segmentation : Segmentation
        Candidate changes of ``x``.
    tau : float or None
        Threshold on the score (``None``: keep every change).
    beta, gamma, delta, scale, spike
        As in :func:`elimination_path`.

    Returns
    -------
    Segmentation
        The kept changes (a subset of the candidates).
    """
    if tau is not None:
        tau = _check_exponent(tau, "tau")
    changes, scores = elimination_path(x, segmentation, beta=beta, gamma=gamma, delta=delta, scale=scale,
                                       spike=spike)
    gone = set(changes[:_n_removed(scores, tau)].tolist())
    T = segmentation.n_samples
    kept = [int(c) for c in segmentation.changes[:-1] if int(c) not in gone]
    return Segmentation(np.array(kept + [T], dtype=np.int64), T)


def oversegment(x, *, penalty=OVERSEGMENT_PENALTY, min_size=3, scale=None, spike=None) -> Segmentation:
    """Candidate changes of ``x`` from its exact penalized segmentation in noise units, no learned parameter.

    Parameters
    ----------
    x : array_like, shape (T,) or (T, 1)
    penalty : float
        Cost of a change in units of ``log T`` (the squared residuals are in noise units).
    min_size : int
        Minimal segment length.
    scale : float, optional
        Noise level of ``x`` (default: :func:`~marginalia.features.hermite.robust_noise_scale`).
    spike : float, optional
        Threshold of :func:`despike` applied in noise units first (default: none).

    Returns
    -------
    Segmentation
    """
    z = _noise_units(x, scale, _check_spike(spike))
    penalty = _check_exponent(penalty, "penalty")
    if penalty < 0:
        raise ParameterError(f"penalty: expected >= 0, got {penalty!r}")
    T = z.shape[0]
    return segment_penalized(z, penalty * math.log(max(T, 2)), min_size=min(int(min_size), T)).segmentation


def with_changes_of(segmentation, other) -> Segmentation:
    """``segmentation`` with the changes of ``other`` (same length) added."""
    T = segmentation.n_samples
    if other.n_samples != T:
        raise ParameterError(f"other: covers {other.n_samples} samples, the segmentation {T}")
    return Segmentation(np.union1d(segmentation.changes, other.changes).astype(np.int64), T)


def _label_arrays(labels):
    regions = [lab for lab in labels if isinstance(lab, RegionLabel)]
    start = np.array([r.start for r in regions], dtype=np.int64)
    stop = np.array([r.stop for r in regions], dtype=np.int64)
    lo = np.array([r.kind.bounds[0] for r in regions], dtype=np.int64)
    hi = np.array([r.kind.bounds[1] if r.kind.bounds[1] is not None else np.iinfo(np.int64).max
                   for r in regions], dtype=np.int64)
    return start, stop, lo, hi


def _errors_along_path(all_changes, removed, labels) -> np.ndarray:
    """FP + FN after removing the first ``k`` changes of ``removed``, for ``k = 0..m``, shape (m + 1,)."""
    return _errors_along_path_of_arrays(all_changes, removed, _label_arrays(labels))


def _errors_along_path_of_arrays(all_changes, removed, label_arrays) -> np.ndarray:
    """:func:`_errors_along_path` with the labels already as ``_label_arrays(labels)``."""
    start, stop, lo, hi = label_arrays
    return _errors_along_path_kernel(np.asarray(all_changes, dtype=np.int64), np.asarray(removed, dtype=np.int64),
                                     start, stop, lo, hi)


@numba.njit(cache=True)
def _errors_along_path_kernel(all_changes, removed, start, stop, lo, hi):
    n = start.shape[0]
    count = np.zeros(n, dtype=np.int64)
    for c in all_changes:
        for r in range(n):
            if start[r] < c < stop[r]:
                count[r] += 1
    wrong = 0
    for r in range(n):
        wrong += (count[r] < lo[r]) + (count[r] > hi[r])
    out = np.empty(removed.shape[0] + 1, dtype=np.int64)
    out[0] = wrong
    for k in range(removed.shape[0]):
        c = removed[k]
        for r in range(n):
            if start[r] < c < stop[r]:
                before = (count[r] < lo[r]) + (count[r] > hi[r])
                count[r] -= 1
                wrong += (count[r] < lo[r]) + (count[r] > hi[r]) - before
        out[k + 1] = wrong
    return out


def _longest_run(mask) -> tuple:
    """Length and middle index of the longest run of True in ``mask`` (length 0 when none)."""
    best_len, best_mid, run = 0, 0, 0
    for i, ok in enumerate(list(mask) + [False]):
        if ok:
            run += 1
            continue
        if run > best_len:
            best_len, best_mid = run, i - run + (run - 1) // 2
        run = 0
    return best_len, best_mid


@dataclass(frozen=True)
class ErrorTables:
    """Training label errors (FP + FN) of each sequence along each rule's elimination path.

    Attributes
    ----------
    rules : list of (beta, gamma, delta)
        The rules, simplest first, length R.
    taus : ndarray, shape (K,)
        The thresholds.
    errors : ndarray of int32, shape (n_sequences, R, K)
        Label errors of each sequence pruned by each rule at each threshold.
    baseline : ndarray of int64, shape (n_sequences,)
        Label errors of each sequence's candidates as given.
    spike : float or None
        The despiking threshold the signals were read with.
    """

    rules: list
    taus: np.ndarray
    errors: np.ndarray
    baseline: np.ndarray
    spike: "float | None"


class ChangePruner:
    """Learned rule that drops changes with weak local evidence (see the module docstring).

    Parameters
    ----------
    betas, gammas : sequences of float
        Exponents tried for the harmonic segment length and the smaller segment length.
    taus : sequence of float
        Increasing thresholds tried (on the log scale of the score).
    deltas : sequence of float
        Exponents tried for the shorter segment's spread (``(0.0,)``: the rule of jumps and lengths alone).
    spike : float or None, default SPIKE_THRESHOLD
        The signals are :func:`despike`-d at this threshold (noise units) before scoring (``None``: as given).
    tolerance : int, default DEFAULT_TOLERANCE
        A threshold within this many training label errors of a rule's fewest is near-best;
        ``tau_`` is the middle of the longest run of near-best thresholds (0: of the best ones only).

    Attributes
    ----------
    beta_, gamma_, delta_ : float
    tau_ : float or None
        The chosen rule; ``tau_ is None`` when no pruning beat keeping every change on the training labels.
    spike_ : float or None
        The despiking threshold the rule was fitted with and applies.
    train_errors_ : int
        Training label errors (FP + FN) with the chosen rule.
    baseline_errors_ : int
        Training label errors of the candidate segmentations as given.
    """

    def __init__(self, betas=DEFAULT_BETAS, gammas=DEFAULT_GAMMAS, taus=DEFAULT_TAUS, deltas=DEFAULT_DELTAS,
                 spike=SPIKE_THRESHOLD, tolerance=DEFAULT_TOLERANCE):
        self.betas = betas
        self.gammas = gammas
        self.taus = taus
        self.deltas = deltas
        self.spike = spike
        self.tolerance = tolerance

    def _grids(self):
        out = []
        for name, g in (("betas", self.betas), ("gammas", self.gammas), ("taus", self.taus),
                        ("deltas", self.deltas)):
            a = np.asarray(g, dtype=np.float64).reshape(-1)
            if a.size == 0 or not np.all(np.isfinite(a)):
                raise ParameterError(f"{name}: expected a non-empty sequence of finite numbers, got {g!r}")
            out.append(a)
        if np.any(np.diff(out[2]) <= 0):
            raise ParameterError(f"taus: expected increasing thresholds, got {self.taus!r}")
        return out

    def fit(self, signals, segmentations, labels) -> "ChangePruner":
        """Choose the rule ``(beta, gamma, delta)`` with the fewest training label errors, and its ``tau``.

        ``tau`` is the middle of the longest run of thresholds within ``tolerance`` errors
        of that rule's fewest (see the module docstring).

        Parameters
        ----------
        signals : list of array_like, each (T_i,)
            1-d signals.
        segmentations : list of Segmentation
            Candidate changes of each signal.
        labels : list of label lists
            Region labels of each signal.
        """
        return self.fit_tables(self.error_tables(signals, segmentations, labels))

    def error_tables(self, signals, segmentations, labels) -> "ErrorTables":
        """Label errors of every sequence under every rule and threshold of this pruner's grids.

        :meth:`fit` on any subset of the sequences is :meth:`fit_tables` on these tables with
        that subset, which only sums them: cross-validating the rule costs one fit, not one per fold.

        Parameters
        ----------
        signals, segmentations, labels
            As in :meth:`fit`.

        Returns
        -------
        ErrorTables
        """
        betas, gammas, taus, deltas = self._grids()
        self._check_tolerance()
        signals, segmentations, labels = list(signals), list(segmentations), list(labels)
        if not (len(signals) == len(segmentations) == len(labels)) or not signals:
            raise ParameterError(f"signals, segmentations, labels: expected the same non-zero number of sequences, "
                                 f"got {len(signals)}, {len(segmentations)}, {len(labels)}")
        spike = _check_spike(self.spike)
        Z = [_noise_units(x, None, spike) for x in signals]
        for z, seg in zip(Z, segmentations):
            _check_seg(seg, z.shape[0])
        # rules from the simplest (pure jump size) on; ties keep the simpler one
        rules = sorted(itertools.product(betas, gammas, deltas), key=lambda r: (sum(abs(v) for v in r), r))
        errors = np.zeros((len(Z), len(rules), taus.size), dtype=np.int32)
        baseline = np.zeros(len(Z), dtype=np.int64)
        for i, (z, seg, labs) in enumerate(zip(Z, segmentations, labels)):
            cand = np.asarray(seg.changes[:-1], dtype=np.int64)
            bounds = np.r_[0, np.asarray(seg.changes, dtype=np.int64)]
            s1, s2 = _prefix_sums(z)
            label_arrays = _label_arrays(labs)   # once per sequence: the rules loop calls the kernel thousands of times
            for r, (b, g, d) in enumerate(rules):
                order, death = _eliminate(s1, s2, bounds, float(b), float(g), float(d))
                errs = _errors_along_path_of_arrays(cand, bounds[order], label_arrays)
                if r == 0:
                    baseline[i] = int(errs[0])
                runmax = np.maximum.accumulate(death) if death.size else death
                errors[i, r] = errs[np.searchsorted(runmax, taus, side="left")]
        return ErrorTables(rules=rules, taus=taus, errors=errors, baseline=baseline, spike=spike)

    def fit_tables(self, tables: "ErrorTables", index=None) -> "ChangePruner":
        """:meth:`fit` on the sequences ``index`` (default: all) of :meth:`error_tables`' output.

        Parameters
        ----------
        tables : ErrorTables
            From :meth:`error_tables` of a pruner with the same grids and ``spike``.
        index : array_like of int, optional
            The training sequences (positions in the tables), at least one.
        """
        self._check_tolerance()
        if not isinstance(tables, ErrorTables):
            raise ParameterError(f"tables: expected the ErrorTables of ChangePruner.error_tables, got "
                                 f"{type(tables).__name__}")
        index = np.arange(tables.errors.shape[0]) if index is None else np.asarray(index, dtype=np.int64)
        if index.size == 0:
            raise ParameterError("index: expected at least one training sequence")
        table = tables.errors[index].sum(axis=0, dtype=np.int64)     # (n_rules, n_taus)
        baseline = int(tables.baseline[index].sum())
        rules, taus = tables.rules, tables.taus
        self.spike_ = tables.spike
        self.baseline_errors_ = baseline
        best = int(table.min())
        if best >= baseline:
            self.beta_, self.gamma_, self.delta_ = (float(v) for v in rules[0])
            self.tau_ = None
            self.train_errors_ = baseline
            return self
        # among the rules reaching the fewest errors, the one whose near-best thresholds span the
        # widest interval (a margin in log units), at its middle; ties keep the simpler rule
        runs = [_longest_run(table[r] <= best + self.tolerance) if table[r].min() == best else (-1, 0)
                for r in range(len(rules))]
        r = int(np.argmax([length for length, _ in runs]))
        t = runs[r][1]
        self.beta_, self.gamma_, self.delta_ = (float(v) for v in rules[r])
        self.tau_ = float(taus[t])
        self.train_errors_ = int(table[r, t])
        return self

    def _check_tolerance(self) -> None:
        check_int(self.tolerance, "tolerance", min_val=0, what="a whole number of label errors")

    def _spike(self):
        # a rule set by hand (without fit or from_dict) reads the signal as given
        return getattr(self, "spike_", None)

    def prune(self, x, segmentation) -> Segmentation:
        """The changes of ``segmentation`` that the learned rule keeps."""
        if not hasattr(self, "tau_"):
            raise NotFittedError("ChangePruner: call fit before prune")
        return prune_changes(x, segmentation, tau=self.tau_, beta=self.beta_, gamma=self.gamma_,
                             delta=self.delta_, spike=self._spike())

    def decision_margin(self, x, segmentation, *, scale=None) -> float:
        """How far ``tau_`` is from the nearest threshold that would keep or drop a different set of changes.

        Parameters
        ----------
        x : array_like, shape (T,) or (T, 1)
        segmentation : Segmentation
            Candidate changes of ``x``.
        scale : float, optional
            Noise level of ``x`` (default: estimated from ``x``).

        Returns
        -------
        float
            ``min_j |M_j - tau_|`` over the running maxima ``M_j`` of the removal
            scores (log units of the score); ``inf`` without candidates or
            without a threshold (the rule keeps every change).
        """
        if not hasattr(self, "tau_"):
            raise NotFittedError("ChangePruner: call fit before decision_margin")
        if self.tau_ is None or segmentation.n_segments <= 1:
            return math.inf
        _, scores = elimination_path(x, segmentation, beta=self.beta_, gamma=self.gamma_, delta=self.delta_,
                                     scale=scale, spike=self._spike())
        return float(np.abs(np.maximum.accumulate(scores) - self.tau_).min())

    # ------------------------------------------------------------ files
    def to_dict(self) -> dict:
        """JSON-ready rule (``tau`` is ``None`` for "keep every change")."""
        if not hasattr(self, "tau_"):
            raise NotFittedError("ChangePruner: call fit before saving")
        d = {"beta": self.beta_, "gamma": self.gamma_, "delta": self.delta_, "tau": self.tau_}
        if self._spike() is not None:
            d["spike"] = self._spike()
        return d

    @classmethod
    def from_dict(cls, d) -> "ChangePruner":
        """Inverse of :meth:`to_dict`."""
        if not isinstance(d, dict) or not {"beta", "gamma", "tau"} <= set(d):
            raise ParameterError(f"change pruner: expected a dict with beta, gamma, tau; got {d!r}")
        p = cls()
        p.beta_ = _check_exponent(d["beta"], "beta")
        p.gamma_ = _check_exponent(d["gamma"], "gamma")
        p.delta_ = _check_exponent(d.get("delta", 0.0), "delta")   # rules saved before the spread term: none
        p.tau_ = None if d["tau"] is None else _check_exponent(d["tau"], "tau")
        p.spike_ = _check_spike(d.get("spike"))     # rules saved before despiking: the signal as given
        return p
