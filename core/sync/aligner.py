"""Align two recordings of the same music: DTW with a learned Mahalanobis cost (Lajugie 2015, ch. 5).

:class:`SyncAligner` computes frame descriptors of both recordings, decodes the cheapest warping path
under a diagonal metric ``M`` with the exact DTW of :mod:`marginalia.decoders.warping` (through
anchors the user gave, inside a corridor around a coarser path for long pairs), and reports the
runner-up path's margin. :meth:`SyncAligner.fit` learns ``M`` from aligned pairs (pairs of recordings
with matched onset times) by Frank-Wolfe on the structured SVM with the Hamming or symmetric-area
loss (:class:`marginalia.sync.frank_wolfe.WarpingFrankWolfe`; Lajugie et al., ICML 2014).
"""

from __future__ import annotations

import dataclasses
import math
import warnings
from dataclasses import dataclass
from typing import Optional

import numpy as np

from ..checks import check_bool, check_choice, check_int, check_scalar
from ..exceptions import InfeasibleLabelsError, NotFittedError, ParameterError
from ..models._params import check_param_vector, init_params
from ..types import Warping

__all__ = ["SyncAligner", "SyncFeatures", "SyncResult", "warping_from_times", "SYNC_FEATURES"]

#: frame descriptors a sync aligner can use
SYNC_FEATURES = {
    "aligner": "the score aligner's unit chroma, and its onset chroma decaying in 0.1 s, scaled by the recording's "
               "95th percentile and log-compressed, both damped in silence (25 per frame)",
    "chroma": "constant-Q chroma (librosa), unit norm (12 per frame)",
}
_SR = 22050


@dataclass(frozen=True, eq=False)
class SyncFeatures:
    """Frame descriptors of one recording.

    Attributes
    ----------
    X : ndarray, shape (T, p)
    frame_s : float
        Period of the frames (s).
    offset_s : float
        Centre time of frame 0 (s).
    duration_s : float
    """

    X: np.ndarray
    frame_s: float
    offset_s: float
    duration_s: float

    @property
    def n_frames(self) -> int:
        return int(self.X.shape[0])

    def times(self) -> np.ndarray:
        """Centre time (s) of every frame, shape (T,)."""
        return self.offset_s + self.frame_s * np.arange(self.n_frames)

    def frame_of(self, t_s) -> np.ndarray:
        """Nearest frame of times (s), clipped to the recording."""
        f = np.rint((np.asarray(t_s, dtype=np.float64) - self.offset_s) / self.frame_s)
        return np.clip(f, 0, self.n_frames - 1).astype(np.int64)

    def pooled(self, factor: int) -> "SyncFeatures":
        """Means of ``factor`` consecutive frames (the coarse level of a multi-resolution DTW)."""
        T, p = self.X.shape
        n = -(-T // factor)
        padded = np.zeros((n * factor, p))
        padded[:T] = self.X
        counts = np.minimum(factor, T - factor * np.arange(n))[:, None]
        X = padded.reshape(n, factor, p).sum(axis=1) / counts
        return SyncFeatures(X, self.frame_s * factor, self.offset_s + 0.5 * (factor - 1) * self.frame_s,
                            self.duration_s)


@dataclass(frozen=True, eq=False)
class SyncResult:
    """A warping path between a reference and a target recording.

    Attributes
    ----------
    warping : Warping
        The path on the frame grids (reference frames x target frames).
    reference_times_s, target_times_s : ndarray, shape (L,)
        Frame centre times of the path's cells.
    cost : float
        Cost of the path under the metric.
    margin : float or None
        Cost of the cheapest different path minus ``cost`` (None when not computed or no other path).
        That path may differ only in silence, where every path costs the same (margin 0): where to
        ask a person is :meth:`SyncAligner.question`.
    question_s : tuple of float or None
        ``(reference_s, target_s)`` of the first cell where the runner-up leaves the path.
    refiner : TimeRefiner or None
        Moves the times :meth:`map_times` reads off the path onto the target's matching attacks
        (:mod:`marginalia.sync.refine`); None: the path's times as they are.
    """

    warping: Warping
    reference_times_s: np.ndarray
    target_times_s: np.ndarray
    cost: float
    margin: Optional[float] = None
    question_s: Optional[tuple] = None
    refiner: Optional[object] = None

    def _curve(self):
        ref = self.reference_times_s
        tgt = self.target_times_s
        # several target frames per reference frame: their mean (and so on the other way)
        u, inv = np.unique(ref, return_inverse=True)
        mean = np.bincount(inv, weights=tgt) / np.bincount(inv)
        return u, np.maximum.accumulate(mean)

    def map_times(self, reference_times_s) -> np.ndarray:
        """Target times (s) of reference times (s), shape like the input.

        Interpolated along the path, then (with a :attr:`refiner`) moved onto the target's attacks
        that match the reference's around each time, and kept monotone in reference time.
        """
        t = np.asarray(reference_times_s, dtype=np.float64)
        if not np.all(np.isfinite(t)):
            raise ParameterError("reference_times_s: contains NaN or infinite values")
        u, mean = self._curve()
        if u.size == 1:
            return np.full_like(t, mean[0])
        # beyond the first and last frame centres: the path's end slopes
        out = np.interp(t, u, mean)
        lo, hi = t < u[0], t > u[-1]
        out[lo] = mean[0] + (t[lo] - u[0]) * (mean[1] - mean[0]) / (u[1] - u[0])
        out[hi] = mean[-1] + (t[hi] - u[-1]) * (mean[-1] - mean[-2]) / (u[-1] - u[-2])
        out = np.maximum(out, 0.0)
        return out if self.refiner is None else self.refiner(t, out)

    def table(self) -> np.ndarray:
        """``(reference_time_s, target_time_s)`` of every cell of the path, shape (L, 2)."""
        return np.column_stack([self.reference_times_s, self.target_times_s])


def _check_matched(matched, name) -> np.ndarray:
    try:
        m = np.asarray(matched, dtype=np.float64)
    except (TypeError, ValueError):
        raise ParameterError(f"{name}: expected (N, 2) matched times (reference_s, target_s)") from None
    if m.ndim != 2 or m.shape[1] != 2:
        raise ParameterError(f"{name}: expected (N, 2) matched times (reference_s, target_s), got shape {m.shape}")
    if not np.all(np.isfinite(m)) or (m.size and m.min() < 0):
        raise ParameterError(f"{name}: times must be finite and >= 0")
    return m


def _onset_block(onset_fine, coarse: int, n_frames: int, frame_s: float, decay_s: float = 0.1) -> np.ndarray:
    """Decaying onset chroma on one scale for the whole recording, log-compressed, shape (T, 12).

    The score aligner scales every frame's onset chroma to unit length, which suits matching a score
    event but hides how long ago the last attack was: in a run of repeated notes every frame then looks
    alike and a path may slip by one note. Here the decay stays visible (one scale per recording, its
    95th percentile of lengths) and the log compression evens out soft and loud attacks, so soundfonts
    or pianos with other dynamics still match.
    """
    on = np.asarray(onset_fine, dtype=np.float64)
    n = -(-on.shape[0] // coarse)
    padded = np.zeros((n * coarse, on.shape[1]))
    padded[:on.shape[0]] = on
    onset = padded.reshape(n, coarse, -1).sum(axis=1)
    out = np.zeros((n_frames, on.shape[1]))
    onset = onset[:n_frames]
    decay = math.exp(-frame_s / decay_s)
    acc = np.zeros(on.shape[1])
    for t in range(onset.shape[0]):  # one short vector operation per frame
        acc = acc * decay + onset[t]
        out[t] = acc
    scale = float(np.percentile(np.linalg.norm(out, axis=1), 95)) if n_frames else 1.0
    out /= max(scale, 1e-12)
    return np.log1p(10.0 * out) / math.log1p(10.0)


def warping_from_times(matched, fa: SyncFeatures, fb: SyncFeatures) -> Warping:
    """The warping path through matched times (e.g. the onsets of the same notes in two recordings).

    Between matched times the map is linear; the path visits, for every reference frame, the target
    frame nearest to its mapped time (made monotone) and connects them with DTW steps.

    Parameters
    ----------
    matched : array_like, shape (N, 2)
        ``(reference_s, target_s)`` of the same musical events, in any order; rows that go backwards
        in the target (after sorting by reference, then target time) are dropped.
    fa, fb : SyncFeatures
        The reference's and the target's frames.
    """
    m = _check_matched(matched, "matched")
    # by reference time, then target time: the notes of a chord give one path whatever the order of the rows
    m = m[np.lexsort((m[:, 1], m[:, 0]))]
    keep = m[:, 1] >= np.maximum.accumulate(np.r_[-np.inf, m[:-1, 1]]) if m.size else np.zeros(0, bool)
    m = m[keep]
    m = np.vstack([[0.0, 0.0], m, [fa.duration_s, fb.duration_s]])
    m[:, 1] = np.maximum.accumulate(m[:, 1])
    mapped = np.interp(fa.times(), m[:, 0], m[:, 1])
    j = np.maximum.accumulate(fb.frame_of(mapped))
    TA, TB = fa.n_frames, fb.n_frames
    j[0], j[-1] = max(j[0], 0), TB - 1
    cells = []
    prev = -1
    for i in range(TA):
        start = 0 if i == 0 else (prev + 1 if j[i] > prev else prev)
        for jj in range(start, int(j[i]) + 1):
            cells.append((i, jj))
        prev = int(j[i])
    return Warping(np.array(cells, np.int64))


def _tied_model(groups, loss):
    """A :class:`WarpingModel` whose diagonal metric has one weight per group of descriptors.

    The score aligner's 12 chroma and 12 onset-chroma descriptors each share one weight: a weight per pitch
    class would learn the keys of the training pieces, which says nothing about a piece in another key.
    """
    from .model import WarpingModel

    class TiedWarpingModel(WarpingModel):
        def __init__(self):
            super().__init__("diagonal", loss)
            self.groups = np.asarray(groups, dtype=np.int64)
            self.n_groups = int(self.groups.max()) + 1

        def n_params(self, n_features=None) -> int:
            return self.n_groups

        def split_w(self, w) -> np.ndarray:
            return self.check_w(w).copy()

        def join_w(self, M) -> np.ndarray:
            M = np.asarray(M, dtype=np.float64)
            if M.shape == self.groups.shape:
                return np.bincount(self.groups, weights=M) / np.bincount(self.groups)
            return self.check_w(M).copy()

        def project(self, w) -> np.ndarray:
            return np.maximum(np.asarray(w, dtype=np.float64), 0.0)

        def expand(self, w) -> np.ndarray:
            return self.project(self.check_w(w))[self.groups]

        def metric_matrix(self, w) -> np.ndarray:
            return np.diag(self.expand(w))

        def decoder_metric(self, w):
            return np.sqrt(self.expand(w))

        def joint_feature(self, item, y) -> np.ndarray:
            return np.bincount(self.groups, weights=super().joint_feature(item, y), minlength=self.n_groups)

        def joint_feature_relaxed(self, item, Z) -> np.ndarray:
            return np.bincount(self.groups, weights=super().joint_feature_relaxed(item, Z), minlength=self.n_groups)

        def initial_w(self, items, Ys=None) -> np.ndarray:
            self._check_items(items)
            return np.ones(self.n_groups)

        def default_w(self, items=None) -> np.ndarray:
            return np.ones(self.n_groups)

    return TiedWarpingModel()


#: the largest options a sync model file may set (10 to 100 times the defaults): a file may come from anyone
FILE_BOUNDS = {"coarse": 64, "max_cells": 400_000_000, "pyramid": 256, "corridor_s": 30.0, "max_iter": 100_000,
               "train_pool": 256, "refine_s": 1.0, "refine_window_s": 1.0, "step_cost": 100.0}
#: the widest Sakoe-Chiba band a sync model file may set, in frames (30 s of 11.6 ms frames) or as a fraction
FILE_BAND_FRAMES, FILE_BAND_FRACTION = 2600, 0.05


class SyncAligner:
    """Align a target recording to a reference recording of the same music.

    Parameters
    ----------
    features : {"aligner", "chroma"}, default "aligner"
        Frame descriptors (:data:`SYNC_FEATURES`): the score aligner's chroma and onset chroma, or
        constant-Q chroma.
    coarse : int, default 2
        Analysis hops (5.8 ms at 22.05 kHz) per frame; 2 gives 11.6 ms frames.
    band : None, float in (0, 1] or int, default None
        Sakoe-Chiba band of the DTW (fraction of the longer recording, or frames). ``None``: the
        whole grid for pairs up to ``max_cells`` cells, a multi-resolution corridor beyond.
    max_cells : int, default 40_000_000
        Largest grid decoded whole; longer pairs are decoded at ``pyramid`` times coarser frames
        first, then exactly inside a corridor of ``corridor_s`` around that path.
    pyramid : int, default 8
    corridor_s : float, default 1.0
        Half-width (s) of the corridor around the coarse path.
    metric : {"tied", "diagonal"}, default "tied"
        What :meth:`fit` learns: one weight per kind of descriptor (chroma, onset chroma), which carries
        over to pieces in other keys, or one weight per descriptor.
    loss : {"hamming", "area"}, default "hamming"
        Loss of :meth:`fit`: cells on exactly one of the two paths, or the symmetric area between them.
    C : float, default 1.0
        Regularisation of :meth:`fit` (larger: follow the training pairs more).
    max_iter : int, default 100
        Frank-Wolfe passes of :meth:`fit`.
    train_pool : int, default 4
        :meth:`fit` learns on frames this many times coarser (faster; the metric weighs the same
        descriptors).
    runner_up : bool, default True
        Also find the cheapest different path (its margin and where it leaves the best one).
    refine_s : float, default 0.06
        Carried times move by up to this much (s) onto the target's attacks that match the
        reference's over ``refine_window_s`` either side (:mod:`marginalia.sync.refine`; "aligner"
        features only); 0 leaves them on the path.
    refine_window_s : float, default 0.035
        Half-width (s) of the attack pattern compared (3 frames of 11.6 ms).
    step_cost : float, default 0.5
        Cost of every cell of a path, as a fraction of the pair's median cell cost (:meth:`predict` and
        :meth:`question`; :meth:`fit` learns the metric without it). A path that runs along one recording
        and then along the other visits more cells than the diagonal steps it replaces, so this makes the
        detour that slips by one chord of a run of repeated chords cost more than the few frames it saves;
        0 is the plain DTW cost.

    Attributes
    ----------
    w_ : ndarray, shape (p,)
        The diagonal of ``M`` (after :meth:`fit`; ones before: the Euclidean cost).
    n_iter_ : int
    """

    #: the task a model file of this aligner is for
    task = "sync"

    def __init__(self, features="aligner", coarse=2, band=None, max_cells=40_000_000, pyramid=8, corridor_s=1.0,
                 metric="tied", loss="hamming", C=1.0, max_iter=100, train_pool=4, runner_up=True, refine_s=0.06,
                 refine_window_s=0.035, step_cost=0.5):
        self.features = features
        self.coarse = coarse
        self.band = band
        self.max_cells = max_cells
        self.pyramid = pyramid
        self.corridor_s = corridor_s
        self.metric = metric
        self.loss = loss
        self.C = C
        self.max_iter = max_iter
        self.train_pool = train_pool
        self.runner_up = runner_up
        self.refine_s = refine_s
        self.refine_window_s = refine_window_s
        self.step_cost = step_cost

    # ---------------------------------------------------------- parameters
    def get_params(self) -> dict:
        return init_params(self)

    def _check_params(self):
        if self.features not in SYNC_FEATURES:
            raise ParameterError(f"features: expected one of {sorted(SYNC_FEATURES)}, got {self.features!r}")
        for name in ("coarse", "max_cells", "pyramid", "max_iter", "train_pool"):
            check_int(getattr(self, name), name, min_val=1)
        for name in ("corridor_s", "C", "refine_window_s"):
            check_scalar(getattr(self, name), name, float, min_val=0, include_boundaries="neither")
        for name in ("refine_s", "step_cost"):
            check_scalar(getattr(self, name), name, float, min_val=0, include_boundaries="left")
        check_choice(self.metric, "metric", ("tied", "diagonal"))
        check_choice(self.loss, "loss", ("hamming", "area"))
        if self.band is not None:
            from ..decoders.warping import band_limits
            band_limits(2, 2, self.band)
        check_bool(self.runner_up, "runner_up")

    @property
    def n_features_(self) -> int:
        """Descriptors per frame."""
        return 25 if self.features == "aligner" else 12

    def descriptor_groups(self) -> np.ndarray:
        """Group of every descriptor (chroma 0, onset chroma 1, constant 2), shape (p,)."""
        if self.features == "aligner":
            return np.r_[np.zeros(12, np.int64), np.ones(12, np.int64), 2]
        return np.zeros(12, np.int64)

    def _w(self) -> np.ndarray:
        return self.w_ if hasattr(self, "w_") else np.ones(self.n_features_)

    # ------------------------------------------------------------ features
    def compute_features(self, y, sr) -> SyncFeatures:
        """Frame descriptors of a mono recording.

        Parameters
        ----------
        y : array_like, shape (n,)
        sr : int
            Sample rate (Hz); analysed at the rate given (22.05 kHz is what the defaults are tuned on).
        """
        self._check_params()
        from ..checks import check_audio
        y, sr = check_audio(y, sr, name="audio_y", dtype=np.float64, min_sr=4000, max_sr=384000)
        duration = y.shape[0] / sr
        if self.features == "aligner":
            from ..align import ScoreAligner
            f = ScoreAligner(coarse=int(self.coarse)).features(y, sr)
            frame_s = f.hop_fine * f.coarse / f.sr
            offset = 0.5 * (f.coarse - 1) * f.hop_fine / f.sr
            X = np.array(f.X)
            X[:, 12:24] = _onset_block(f.onset_fine, f.coarse, X.shape[0], frame_s) * (1.0 - f.quiet)[:, None]
            return SyncFeatures(X, frame_s, offset, duration)
        from ..align.aligner import _fft_size
        from ..features.audio import chroma
        hop = _fft_size(sr) // 16 * int(self.coarse)
        fm = chroma(y, sr, hop_length=hop)
        return SyncFeatures(np.ascontiguousarray(fm.values, dtype=np.float64), hop / sr, float(fm.times[0]),
                            duration)

    def _as_features(self, x, name) -> SyncFeatures:
        if isinstance(x, SyncFeatures):
            if x.X.shape[1] != self.n_features_:
                raise ParameterError(f"{name}: has {x.X.shape[1]} descriptors per frame, expected "
                                     f"{self.n_features_} ({self.features} features)")
            return x
        try:
            y, sr = x
        except (TypeError, ValueError):
            raise ParameterError(f"{name}: expected (y, sr) of a mono recording or its SyncFeatures") from None
        return self.compute_features(y, sr)

    # -------------------------------------------------------------- decode
    def _anchor_cells(self, anchors, fa: SyncFeatures, fb: SyncFeatures, factor: int = 1):
        from ..decoders.warping import WarpingConstraints
        if anchors is None:
            return None
        a = _check_matched(anchors, "anchors")
        if a.shape[0] == 0:
            return None
        a = a[np.argsort(a[:, 0], kind="stable")]
        for k in range(1, a.shape[0]):
            if a[k, 1] < a[k - 1, 1]:
                raise InfeasibleLabelsError(
                    f"anchors: ({a[k - 1, 0]:.3f} s -> {a[k - 1, 1]:.3f} s) and ({a[k, 0]:.3f} s -> {a[k, 1]:.3f} s) "
                    "cross; the recordings cannot go through both in order; remove one of them", [])
        for k, (ta, tb) in enumerate(a):
            if ta > fa.duration_s + fa.frame_s or tb > fb.duration_s + fb.frame_s:
                raise ParameterError(f"anchors: row {k + 1} ({ta:.3f} s -> {tb:.3f} s) lies past the end of a "
                                     f"recording ({fa.duration_s:.3f} s and {fb.duration_s:.3f} s)")
        cells = np.column_stack([fa.frame_of(a[:, 0]) // factor, fb.frame_of(a[:, 1]) // factor])
        return WarpingConstraints(cells)

    def _decoder_metric(self):
        return np.sqrt(np.maximum(self._w(), 0.0))

    def _with_step_cost(self, fa: SyncFeatures, fb: SyncFeatures, metric):
        """``(fa, fb, metric)`` of the decoder, whose cell costs are ``step_cost`` times the pair's median cell
        cost more (a last descriptor ``+h`` in the reference and ``-h`` in the target, weight 1)."""
        from ..decoders.warping import pairwise_cost
        c = float(self.step_cost)
        if c == 0.0:
            return fa, fb, metric
        # the median over a grid of up to 600 x 600 frames spread over both recordings
        ia = np.unique(np.linspace(0, fa.n_frames - 1, min(600, fa.n_frames)).astype(np.int64))
        ib = np.unique(np.linspace(0, fb.n_frames - 1, min(600, fb.n_frames)).astype(np.int64))
        h = 0.5 * math.sqrt(c * float(np.median(pairwise_cost(fa.X[ia], fb.X[ib], metric=metric))))
        return (dataclasses.replace(fa, X=np.column_stack([fa.X, np.full(fa.n_frames, h)])),
                dataclasses.replace(fb, X=np.column_stack([fb.X, np.full(fb.n_frames, -h)])), np.r_[metric, 1.0])

    def _corridor(self, coarse_path, factor, TA, TB, radius):
        """Fine-grid column limits around a path of the ``factor`` times coarser grid."""
        TAc = -(-TA // factor)
        jmin = np.full(TAc, np.iinfo(np.int64).max)
        jmax = np.full(TAc, -1)
        np.minimum.at(jmin, coarse_path[:, 0], coarse_path[:, 1])
        np.maximum.at(jmax, coarse_path[:, 0], coarse_path[:, 1])
        k = max(1, -(-radius // factor))
        pad_min = np.r_[np.full(k, jmin[0]), jmin, np.full(k, jmin[-1])]
        pad_max = np.r_[np.full(k, jmax[0]), jmax, np.full(k, jmax[-1])]
        win = np.lib.stride_tricks.sliding_window_view
        lo_c = win(pad_min, 2 * k + 1).min(axis=1)
        hi_c = win(pad_max, 2 * k + 1).max(axis=1)
        rows = np.arange(TA) // factor
        lo = np.clip(lo_c[rows] * factor - radius, 0, TB - 1).astype(np.int64)
        hi = np.clip((hi_c[rows] + 1) * factor - 1 + radius, 0, TB - 1).astype(np.int64)
        lo[0], hi[-1] = 0, TB - 1
        return np.maximum.accumulate(lo), np.maximum.accumulate(hi)

    def predict(self, reference, target, *, anchors=None, runner_up=None) -> SyncResult:
        """The warping path from the reference recording to the target.

        Parameters
        ----------
        reference, target : (y, sr) or SyncFeatures
            Mono recordings (``y`` shape (n,)) or their :meth:`compute_features`.
        anchors : array_like, shape (K, 2), optional
            ``(reference_s, target_s)`` pairs the path must pass through (partial labels).
        runner_up : bool, optional
            Override the ``runner_up`` option for this call.

        Returns
        -------
        SyncResult

        Raises
        ------
        InfeasibleLabelsError
            Anchors that cross.
        """
        from ..decoders import warping as wdec
        self._check_params()
        fa = self._as_features(reference, "reference")
        fb = self._as_features(target, "target")
        second = self.runner_up if runner_up is None else check_bool(runner_up, "runner_up")
        refiner = self._refiner(fa, fb)
        fa, fb, metric = self._with_step_cost(fa, fb, self._decoder_metric())
        TA, TB = fa.n_frames, fb.n_frames
        band = self.band
        if band is None and TA * TB > int(self.max_cells) and min(TA, TB) > 4 * int(self.pyramid):
            f = int(self.pyramid)
            ca, cb = fa.pooled(f), fb.pooled(f)
            coarse = wdec.dtw(ca.X, cb.X, metric=metric, constraints=self._anchor_cells(anchors, fa, fb, f))
            radius = max(int(math.ceil(float(self.corridor_s) / max(fa.frame_s, fb.frame_s))), f)
            band = self._corridor(coarse.warping.path, f, TA, TB, radius)
        cons = self._anchor_cells(anchors, fa, fb)
        if second:
            best, alt = wdec.dtw_second_best(fa.X, fb.X, metric=metric, band=band, constraints=cons)
        else:
            best, alt = wdec.dtw(fa.X, fb.X, metric=metric, band=band, constraints=cons), None
        path = best.warping.path
        margin = question = None
        if alt is not None:
            margin = float(alt.cost - best.cost)
            on_best = set(map(tuple, path.tolist()))
            off = next((c for c in alt.warping.path.tolist() if tuple(c) not in on_best), None)
            if off is not None:
                question = (float(fa.times()[off[0]]), float(fb.times()[off[1]]))
        return SyncResult(best.warping, fa.times()[path[:, 0]], fb.times()[path[:, 1]], float(best.cost),
                          margin, question, refiner)

    def _refiner(self, fa: SyncFeatures, fb: SyncFeatures):
        """The :class:`TimeRefiner` of a pair, or None (no refinement, or no onset descriptors)."""
        from .refine import TimeRefiner, attacks
        search = int(round(float(self.refine_s) / fb.frame_s))
        if self.features != "aligner" or search < 1:
            return None
        half = max(1, int(round(float(self.refine_window_s) / fa.frame_s)))
        return TimeRefiner(attacks(fa.X[:, 12:24]), attacks(fb.X[:, 12:24]), (fa.offset_s, fa.frame_s),
                           (fb.offset_s, fb.frame_s), half, search)

    def question(self, reference, target, *, anchors=None, separation_s=0.25, max_cells=2_000_000):
        """The anchor that would change the path the most: where the best path and its runner-up part most.

        The runner-up is the cheapest path that lies at least ``separation_s`` away from the best path
        (in target time) at some reference time further than ``separation_s`` from every anchor; the
        question is the reference time where it is furthest from the best path
        (:mod:`marginalia.sync.question` explains the cost and why its margin is not 0 on silence). Pairs
        whose grid exceeds ``max_cells`` are asked on frames pooled as many times as needed (the
        answer's resolution is then the pooled frame; coarse frames blur the onsets, and on the generated
        repeat of the tests frames pooled 3 times already made a
        0.28 s local stray the runner-up instead of the repeat).

        Parameters
        ----------
        reference, target : (y, sr) or SyncFeatures
        anchors : array_like, shape (K, 2), optional
            ``(reference_s, target_s)`` pairs both paths must pass through.
        separation_s : float, default 0.25
            Least distance (s) between the two candidate target times.
        max_cells : int, default 2_000_000
            Largest grid asked on whole (the question holds about eight arrays of this many cells, 8
            bytes each: ~130 MB at the default).

        Returns
        -------
        SyncQuestion or None
            ``(reference_s, best_target_s, alternative_target_s, margin)``; None when no path can
            stray ``separation_s`` from the best one at an audible reference time (recordings too
            short or silent, or anchors everywhere).
        """
        from ..decoders.warping import pairwise_cost
        from .question import SyncQuestion, anchor_mask, ask, pool_factor, sounding_frames
        self._check_params()
        separation_s = check_scalar(separation_s, "separation_s", float, min_val=0, include_boundaries="neither",
                                    what="a finite number of seconds")
        fa, fb, metric = self._with_step_cost(self._as_features(reference, "reference"),
                                              self._as_features(target, "target"), self._decoder_metric())
        f = pool_factor(fa.n_frames, fb.n_frames, int(max_cells))
        ga, gb = (fa.pooled(f), fb.pooled(f)) if f > 1 else (fa, fb)
        C = pairwise_cost(ga.X, gb.X, metric=metric)
        cons = self._anchor_cells(anchors, fa, fb, f)
        if cons is not None:
            anchor_mask(C, cons.anchors)
        separation = max(1, int(math.ceil(float(separation_s) / max(ga.frame_s, gb.frame_s))))
        askable = sounding_frames(ga.X)
        # an anchor pins one cell, and a path may still run from it along its reference frame: without this
        # the question comes back to the moment just answered (or the frame next to it)
        for i in (np.asarray(cons.anchors, dtype=np.int64).reshape(-1, 2)[:, 0] if cons is not None else ()):
            askable[max(0, i - separation):i + separation + 1] = False
        got = ask(C, separation, askable)
        if got is None:
            return None
        i, j_best, j_alt, margin = got
        return SyncQuestion(float(ga.times()[i]), float(gb.offset_s + gb.frame_s * j_best),
                            float(gb.times()[j_alt]), float(margin))

    # ---------------------------------------------------------------- fit
    def fit(self, pairs, *, callback=None) -> "SyncAligner":
        """Learn the metric from aligned pairs.

        Parameters
        ----------
        pairs : sequence of (reference, target, matched)
            ``reference`` and ``target`` as in :meth:`predict`; ``matched`` (N, 2) the times
            ``(reference_s, target_s)`` of the same events in both (e.g. note onsets).
        callback : callable, optional
            ``callback(learner, iteration)`` after every Frank-Wolfe pass.

        Returns
        -------
        self
        """
        from .frank_wolfe import WarpingFrankWolfe
        from .model import WarpingModel
        self._check_params()
        pairs = list(pairs)
        if not pairs:
            raise ParameterError("pairs: expected at least one (reference, target, matched) pair, got none")
        Xs, Ys = [], []
        f = int(self.train_pool)
        for k, pair in enumerate(pairs):
            try:
                ref, tgt, matched = pair
            except (TypeError, ValueError):
                raise ParameterError(f"pairs[{k}]: expected (reference, target, matched)") from None
            fa = self._as_features(ref, f"pairs[{k}].reference").pooled(f)
            fb = self._as_features(tgt, f"pairs[{k}].target").pooled(f)
            m = _check_matched(matched, f"pairs[{k}].matched")
            if m.shape[0] < 2:
                raise ParameterError(f"pairs[{k}].matched: expected at least 2 matched times, got {m.shape[0]}")
            Xs.append((fa.X, fb.X))
            Ys.append(warping_from_times(m, fa, fb))
        model = (_tied_model(self.descriptor_groups(), self.loss) if self.metric == "tied"
                 else WarpingModel("diagonal", self.loss))
        fw = WarpingFrankWolfe(model, C=float(self.C), max_iter=int(self.max_iter), random_state=0,
                               callback=callback)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)
            fw.fit(Xs, Ys)
        w = np.maximum(fw.w_, 0.0)
        if self.metric == "tied":
            w = w[self.descriptor_groups()]
        if not np.any(w > 0):
            warnings.warn("SyncAligner.fit: the learned metric is zero (the pairs do not tell paths apart); "
                          "keeping the Euclidean cost", UserWarning, stacklevel=2)
            w = np.ones(self.n_features_)
        self.w_ = w * (w.size / w.sum())
        self.n_iter_ = int(fw.n_iter_)
        return self

    # ------------------------------------------- model files (marginalia.models.files)
    def get_state(self) -> dict:
        """Arrays a model file stores besides ``w``: none."""
        return {}

    def set_state(self, state: dict, n_features: int) -> "SyncAligner":
        """Check the options a model file gave this aligner (the loader calls it): refused unless valid and
        within :data:`FILE_BOUNDS`, so a hostile file cannot make a sync decode the whole grid of a long pair."""
        self._check_params()
        bounds = dict(FILE_BOUNDS)
        if self.band is not None:   # a band is decoded whole: as wide as the corridor at most
            bounds["band"] = FILE_BAND_FRAMES if isinstance(self.band, (int, np.integer)) else FILE_BAND_FRACTION
        for name, most in bounds.items():
            if getattr(self, name) > most:
                raise ParameterError(f"{name}: {getattr(self, name)!r} is more than a model file may set ({most}); "
                                     "retrain the sync model with this version's options")
        if int(n_features) != self.n_features_:
            raise ParameterError(f"n_features: {self.features} sync features have {self.n_features_} descriptors "
                                 f"per frame, got {n_features}")
        return self

    def check_w(self, w, name: str = "w") -> np.ndarray:
        w = check_param_vector(w, self.n_features_, name)
        if np.any(w < 0):
            raise ParameterError(f"{name}: metric weights must be >= 0")
        return w

    def metric_weights(self) -> np.ndarray:
        """The diagonal of ``M``, shape (p,) (what a model file stores)."""
        return self._w().copy()

    def with_metric_weights(self, w) -> "SyncAligner":
        """A fitted aligner with this one's options and the metric ``w``."""
        obj = type(self)(**self.get_params())
        obj._check_params()
        obj.w_ = self.check_w(w).copy()
        obj.n_iter_ = 0
        return obj

    def check_fitted(self):
        if not hasattr(self, "w_"):
            raise NotFittedError("SyncAligner: call fit(pairs) first (or use the unfitted aligner's predict())")
