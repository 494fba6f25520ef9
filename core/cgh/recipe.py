"""The aCGH change-point recipe: a learned metric plus a per-sequence penalty law per array platform.

1. Input matrix of a sequence: logratio in noise units and its point-wise
   Hermite functions (:func:`~marginalia.cgh.features.pointwise_hermite_features`).
2. A diagonal Mahalanobis metric and a base penalty ``∝ log T`` learned
   from the partial labels by SSVM (Lajugie 2015, ch. 4; exact label-violation
   loss). ``learner="transfer"`` learns one per array platform with
   :class:`~marginalia.learners.transfer.TransferSSVM` (Lou et al. 2014, eq. 1.9,
   coupled by ``rho``); its errors swing more between folds, so it is not the default.
3. A :class:`~marginalia.cgh.penalty_law.PenaltyLaw` per probe-density class
   (low-density BAC arrays vs high-density oligo arrays, split at
   ``density_split`` probes per Mb): the log-penalty offset of a sequence is a
   linear function of its length, noise level, variance and change-count
   thresholds, learned by max-margin interval regression with the ridge and
   the margin chosen by cross-validation grouped by profile (the low-density
   arrays' wide zero-error intervals take a wide margin, which aims the law at
   their middle). A class with too few
   labelled sequences uses the law of all sequences. Each law decodes either
   with the learned metric or with the plain logratio in noise units
   (``law_metric="auto"``: the learned metric only when its law makes at least
   ``law_metric_margin`` fewer cross-validated label errors on the training
   sequences; on the neuroblastoma cohort the low-density arrays, a few hundred
   probes per chromosome, get the plain logratio and the high-density ones mostly
   keep the learned metric).
4. Optionally (``prune=True``; :func:`fit_cgh_recipe`'s default) a
   :class:`~marginalia.cgh.change_pruning.ChangePruner` per platform then drops,
   weakest first, the changes of that segmentation whose local evidence (jump in
   noise units, segment lengths, spread of the shorter segment) is below a
   threshold learned on the training labels: the law decides how many changes a
   sequence may have, the pruner which of them are real (on the high-density
   arrays it removes the small wave-like shifts and the outlier clusters the
   experts reject). Each pruner may also choose from the changes of a label-free
   over-segmentation of the logratio, so that it can keep a focal event the
   law's penalty missed (``candidates="auto"``: when that lowers its
   cross-validated label errors, as on the high-density arrays). What each step
   is worth on the neuroblastoma cohort is in the documentation's research notes.

:func:`fit_cgh_recipe` is the one entry point: ``fit_cgh_recipe(sequences,
labels).segment(seq)``.
"""

from __future__ import annotations

import hashlib
import math
import threading
from dataclasses import replace

import numpy as np

from ..checks import is_number
from ..exceptions import CancelledError, NotFittedError, ParameterError
from ..metrics import region_errors
from ..models.segmentation import SegmentationModel
from ..parallel import run_costliest_first
from ..types import Segmentation, Sequence
from .change_pruning import (
    DEFAULT_TOLERANCE,
    ChangePruner,
    _check_spike,
    oversegment,
    with_changes_of,
)
from .features import pointwise_hermite_features, probe_density
from .penalty_law import PenaltyLaw, check_margins
from .penalty_regression import sequence_features
from .settings import (
    DENSITY_SPLIT,
    LAW_MARGINS,  # noqa: F401 (imported from here by callers)
    LAW_METRICS,
    PRUNER_CANDIDATES,
    STAGES,
    stage_settings,
)
from .training_windows import WINDOW_MARGIN, window_training_set

__all__ = ["CghSegmenter", "fit_cgh_recipe", "density_class", "CANDIDATE_STAGE", "LAW_METRICS", "METRIC_MODES",
           "PRUNER_CANDIDATES", "profile_groups"]

#: how :meth:`CghSegmenter.fit` gets its metric (see its ``metric`` parameter)
METRIC_MODES = ("learn", "anchor", "keep")

#: versions of :meth:`CghSegmenter.to_dict`: 1 without pruners, 2 with them, 3 with pruners weighing the
#: short segment's spread (``delta``), 4 with pruners choosing from an over-segmentation's changes too;
#: an older reader would silently ignore what each version adds, so it refuses the file
RECIPE_VERSIONS = ("cgh-penalty-law/1", "cgh-penalty-law/2", "cgh-penalty-law/3", "cgh-penalty-law/4",
                   "cgh-penalty-law/5")

#: the ``progress`` stage of that choice, counted in pruner fits rather than probes
CANDIDATE_STAGE = "pruner candidates"

#: fewest groups (profiles) of a pruner's training sequences for ``candidates="auto"`` to compare candidate
#: sets (leaving out one group at a time); below it the comparison is noise and the law's candidates are kept.
#: Likewise a penalty law chooses among several margins only with this many profiles, else takes the first, and a
#: pruner's threshold aims at its near-best run (``ChangePruner.tolerance``) only with this many, else at its best
#: run (one error is a large share of a few chromosomes' labels). Figures: the documentation's research notes.
MIN_GROUPS_TO_COMPARE = 8

#: over-segmentations kept per recipe for :meth:`CghSegmenter.candidates_for` (an interactive redraw reuses them)
_OVERSEGMENTATION_CACHE = 512
_OVERSEGMENTATION_LOCK = threading.Lock()


def density_class(seq, split: float = DENSITY_SPLIT) -> str:
    """``"high"`` or ``"low"`` probe density of a :class:`~marginalia.types.Sequence` (``"low"`` without positions)."""
    pos = getattr(seq, "positions", None)
    d = float("nan") if pos is None else probe_density(pos)
    return "high" if np.isfinite(d) and d >= split else "low"


def _logratio(seq) -> np.ndarray:
    values = np.asarray(seq.values, dtype=np.float64)
    return values[:, 0] if values.ndim == 2 else values


class CghSegmenter:
    """Learned metric + per-platform penalty law for aCGH logratio profiles.

    Each stage has its settings object (:mod:`marginalia.cgh.settings`); a field of any of them may also be
    given by its name: ``CghSegmenter(max_iter=2, prune=False)``.

    Parameters
    ----------
    learning : LearningSettings, optional
        The metric learner: ``learner`` (SSVM, transfer, partial-label), ``C``, ``max_iter``, ``rho``,
        ``random_state``.
    windows : WindowSettings, optional
        ``metric_window``: the longest chromosome the metric learner sees whole.
    platforms : PlatformSettings, optional
        ``density_split`` between the array platforms, and when a platform gets a law of its own
        (``min_class_sequences``, ``min_class_profiles``).
    law : LawSettings, optional
        The penalty laws' grid, ridge, margin and cross-validation, and the metric each decodes with
        (``law_metric``, ``law_metric_margin``).
    pruning : PruningSettings, optional
        ``prune``, the ``candidates`` each pruner chooses from, ``overseg_penalty``, ``spike_threshold``.
    min_size : int, default 3
        Minimal segment length (probes), of every stage.
    callback : callable, optional
        ``callback(learner, iteration)`` after each pass of the metric learner.
    should_stop : callable, optional
        Polled between sequences (metric steps, penalty-law decodings); when it returns True
        :meth:`fit` raises :class:`~marginalia.exceptions.CancelledError`. A pass over long
        chromosomes takes minutes, so a cancel cannot wait for the end of one.
    progress : callable, optional
        ``progress(stage, done, total)`` while the penalty laws decode their grids
        (``stage="penalty laws"``) and the pruners their training segmentations
        (``"change pruners"``): the sequences finished hold ``done`` of the ``total``
        samples (time grows with length, not with the number of sequences); then
        ``progress("pruner candidates", fits done, fits in all)`` while
        ``candidates="auto"`` compares the pruners' candidate sets.
    n_jobs : int, default 1
        Threads decoding those sequences (a high-density cohort spends minutes there).
    **settings
        Fields of the stages' settings by name (``max_iter=2`` is ``learning=LearningSettings(max_iter=2)``).

    Attributes
    ----------
    model_ : SegmentationModel
    w_ : ndarray, shape (7,)
        Metric (6 feature weights) and base penalty (the shared part for ``"transfer"``).
    w_by_class_ : dict
        Platform → its parameters (``"transfer"`` only; empty otherwise).
    laws_ : dict
        ``"all"`` and, when learned, ``"low"`` / ``"high"`` → :class:`PenaltyLaw`
        (a platform holding every training sequence uses ``"all"``, the same law, unless
        it has a metric of its own). A law's ``w`` is the shared ``w_`` (or its platform's ``w_by_class_`` entry)
        when it decodes with the learned metric, its own parameters otherwise.
    law_metrics_ : dict
        Same keys → ``"learned"`` or ``"logratio"``, what each law decodes with.
    law_cv_errors_ : dict
        Same keys → {metric: cross-validated label errors of its law} for the
        metrics compared (only the one used unless ``law_metric="auto"``).
    pruners_ : dict
        The keys of ``laws_``, and a platform without a law of its own (fewer than
        ``min_class_sequences`` training sequences) → :class:`~marginalia.cgh.change_pruning.ChangePruner`
        (empty without ``prune``). A platform's pruner is fitted on its sequences alone,
        on the candidates of the law that segments them.
    pruner_candidates_ : dict
        Same keys as ``pruners_`` → ``"law"`` or ``"union"``, what each pruner chooses from.
    pruner_cv_errors_ : dict
        Same keys as ``pruners_`` → {candidates: cross-validated label errors of its pruner} for the
        candidate sets compared (empty unless ``candidates="auto"``).
    metric_n_items_ : int or None
        Labelled sequences the metric was learned on (a kept metric carries its
        count over; None for a recipe read from a file).
    """

    def __init__(self, learning=None, windows=None, platforms=None, law=None, pruning=None, *, min_size=3,
                 callback=None, should_stop=None, progress=None, n_jobs=1, **settings):
        stages = stage_settings({"learning": learning, "windows": windows, "platforms": platforms, "law": law,
                                 "pruning": pruning}, settings)
        self.learning = stages["learning"]
        self.windows = stages["windows"]
        self.platforms = stages["platforms"]
        self.law = stages["law"]
        self.pruning = stages["pruning"]
        self.min_size = min_size
        self.callback = callback
        self.should_stop = should_stop
        self.progress = progress
        self.n_jobs = n_jobs

    def settings(self) -> dict:
        """Every stage's settings as one flat dict of field name -> value (what a model file's provenance records)."""
        return {name: value for stage in STAGES for name, value in vars(getattr(self, stage)).items()}

    # ------------------------------------------------------------ inputs
    @staticmethod
    def model_input(seq) -> np.ndarray:
        """The metric's input matrix of one sequence, shape (T, 6)."""
        return pointwise_hermite_features(_logratio(seq))

    @staticmethod
    def sequence_summary(seq) -> np.ndarray:
        """Per-sequence features of the penalty law: ``[log log T, log σ̂², log var]``, shape (3,)."""
        return sequence_features(_logratio(seq))

    def _class_of(self, seq) -> str:
        return "all" if self.platforms.density_split is None else density_class(seq, self.platforms.density_split)

    # ------------------------------------------------------------ fitting
    def fit(self, sequences, labels, groups=None, *, law_only=None, previous=None,
            metric="learn") -> "CghSegmenter":
        """Learn the metric and the penalty laws.

        Parameters
        ----------
        sequences : list of Sequence
            aCGH sequences (one chromosome of one profile each), at least 2.
        labels : list of label lists
            Region/boundary labels of each sequence (non-empty lists).
        groups : array_like, optional
            Group of each sequence for the cross-validation of the laws
            (default: ``seq.meta["profile_id"]`` when present, so the chromosomes of
            one profile stay together).
        law_only : (list of Sequence, list of label lists), optional
            More labelled sequences for the penalty laws and change pruners only,
            not for the metric (e.g. the 10⁴-10⁵-probe chromosomes of high-density
            arrays, whose loss-augmented decodings dominate a metric step); grouped by
            their ``meta["profile_id"]``.
        previous : CghSegmenter, optional
            A fitted recipe of the same features, typically the last fit of a
            growing label set (the app retrains after every few labels).
        metric : {"learn", "anchor", "keep"}, default "learn"
            ``"learn"``: the metric by the chosen learner, from scratch.
            ``"anchor"`` (``learner="ssvm"``, needs ``previous``): the SSVM
            regularised towards ``previous.w_`` in ``previous``'s feature units
            (``½λ‖w − w_prev‖²`` instead of ``½λ‖w‖²``), so a retrain moves the
            metric only as far as the new labels ask. ``"keep"`` (needs
            ``previous``): ``previous``'s metric unchanged; only the laws and
            pruners are refitted. On growing aCGH label sets neither beats
            ``"learn"`` on test error (``benchmarks/experiments/recipe_refit_stability.py``);
            ``"keep"`` redraws fewer chromosomes per retrain.
        """
        if metric not in METRIC_MODES:
            raise ParameterError(f"metric: expected one of {METRIC_MODES}, got {metric!r}")
        if metric != "learn":
            self._check_previous(previous, metric)
        sequences, labels = _labelled_pairs(list(sequences), list(labels))
        if len(sequences) != len(labels):
            raise ParameterError(f"labels: expected one label list per sequence ({len(sequences)}), got "
                                 f"{len(labels)}")
        if len(sequences) < 2:
            raise ParameterError(f"sequences: expected at least 2 labelled sequences, got {len(sequences)}")
        empty = [i for i, y in enumerate(labels) if not list(y)]
        if empty:
            raise ParameterError(f"labels: sequence {empty[0]} has no label; pass labelled sequences only")
        # the fit is a function of the *set* of labelled sequences: their order and the order of their labels
        # decide the SSVM's visiting order and the default groups, so both are made canonical first
        order = canonical_order(sequences)
        sequences = [sequences[i] for i in order]
        labels = [sorted(labels[i], key=_label_key) for i in order]
        if groups is not None and np.shape(groups) == (len(order),):
            groups = np.asarray(groups)[order]
        if groups is None:
            groups = [str((getattr(s, "meta", None) or {}).get("profile_id", i)) for i, s in enumerate(sequences)]
        groups = np.asarray(groups)
        if groups.shape != (len(sequences),):
            raise ParameterError(f"groups: expected one group per sequence ({len(sequences)}), got shape "
                                 f"{groups.shape}")
        Xs = [self.model_input(s) for s in sequences]
        classes = np.array([self._class_of(s) for s in sequences])
        if metric == "keep":
            self._keep_metric(previous, Xs[0].shape[1])
            self.metric_n_items_ = getattr(previous, "metric_n_items_", None)
        else:
            self._fit_metric(Xs, labels, classes, previous if metric == "anchor" else None)
            self.metric_n_items_ = len(sequences)
        if law_only is not None:
            more, more_labels = self._check_law_only(law_only)
            more_order = canonical_order(more)
            more = [more[i] for i in more_order]
            more_labels = [sorted(more_labels[i], key=_label_key) for i in more_order]
            sequences, labels = sequences + more, labels + more_labels
            Xs = Xs + [self.model_input(s) for s in more]
            classes = np.r_[classes, [self._class_of(s) for s in more]]
            groups = np.concatenate([groups.astype(str), [str((getattr(s, "meta", None) or {}).get(
                "profile_id", f"law-only {i}")) for i, s in enumerate(more)]])
        F = np.array([self.sequence_summary(s) for s in sequences])
        summaries: dict = {}     # w's bytes -> sequence index -> grid summary, shared by the laws of one w
        self.laws_, self.law_metrics_, self.law_cv_errors_ = {}, {}, {}
        self._choose_law("all", Xs, labels, F, groups, np.arange(len(Xs)), self.w_, summaries)
        if self.platforms.density_split is not None:
            for c in ("low", "high"):
                idx = np.flatnonzero(classes == c)
                same_as_pooled = idx.size == len(Xs) and c not in self.w_by_class_    # one platform, one metric
                profiles = np.unique(groups[idx]).size
                enough = (idx.size >= self.platforms.min_class_sequences
                          and profiles >= self.platforms.min_class_profiles)
                if enough and not same_as_pooled:
                    self._choose_law(c, Xs, labels, F, groups, idx, self.w_by_class_.get(c, self.w_), summaries)
        self.pruners_, self.pruner_candidates_, self.pruner_cv_errors_ = {}, {}, {}
        self._oversegmentations = {}
        if self.pruning.prune:
            self._fit_pruners(sequences, Xs, F, labels, classes, groups)
        return self

    @staticmethod
    def _check_law_only(law_only) -> tuple:
        try:
            more, more_labels = (list(v) for v in law_only)
        except (TypeError, ValueError):
            raise ParameterError("law_only: expected a pair (sequences, label lists)") from None
        if len(more) != len(more_labels):
            raise ParameterError(f"law_only: expected one label list per sequence ({len(more)}), got "
                                 f"{len(more_labels)}")
        empty = [i for i, y in enumerate(more_labels) if not list(y)]
        if empty:
            raise ParameterError(f"law_only: sequence {empty[0]} has no label; pass labelled sequences only")
        return more, [list(y) for y in more_labels]

    def _check_previous(self, previous, metric) -> None:
        if not isinstance(previous, CghSegmenter) or not hasattr(previous, "w_"):
            raise ParameterError(f'metric="{metric}": expected previous= a fitted CghSegmenter, got '
                                 f"{type(previous).__name__}")
        if metric == "anchor" and self.learning.learner != "ssvm":
            raise ParameterError(f'metric="anchor" needs learner="ssvm", got {self.learning.learner!r}')
        if previous.model_.min_size != self.min_size:
            raise ParameterError(f"previous: its model has min_size={previous.model_.min_size}, this recipe "
                                 f"{self.min_size}; a metric is only reused with the same settings")

    def _keep_metric(self, previous, n_features) -> None:
        """Adopt ``previous``'s units and metric(s) (copies: the two recipes stay independent)."""
        self.model_ = self._model_in_units_of(previous, n_features)
        self.w_ = np.array(previous.w_, dtype=np.float64)
        self.w_by_class_ = {k: np.array(v, dtype=np.float64)
                            for k, v in getattr(previous, "w_by_class_", {}).items()}

    def _model_in_units_of(self, fitted, n_features) -> SegmentationModel:
        """A fresh model of this recipe's settings in ``fitted``'s feature units (so its ``w`` means the same)."""
        model = SegmentationModel(min_size=self.min_size, penalty_per="log_length")
        return model.set_state(fitted.model_.get_state(), n_features=n_features)

    def _fit_pruners(self, sequences, Xs, F, labels, classes, groups) -> None:
        """One pruner per platform on its training sequences' law candidates (pooled one on all); sets ``pruners_``.

        The law's segmentation is one decoding per sequence (a law reads its training sequences'
        change-count features from its fit); the over-segmentation one more when it is a candidate.
        """
        keys = np.array([c if c in self.laws_ else "all" for c in classes])     # each sequence's law
        xs = [_logratio(s) for s in sequences]
        sizes = [X.shape[0] for X in Xs]
        modes = ("law", "union") if self.pruning.candidates == "auto" else (self.pruning.candidates,)
        index = {"all": np.arange(len(xs))}
        for c in np.unique(classes) if self.platforms.density_split is not None else ():
            # a platform too small for its own law (min_class_sequences, min_class_profiles) still gets its
            # own pruner, fitted on its chromosomes alone from the pooled law's candidates: the pooled pruner
            # is fitted mostly on the other platform's chromosomes, whose changes look different
            idx = np.flatnonzero(classes == c)
            if c in self.laws_ or idx.size < len(xs):
                index[str(c)] = idx
        # the comparison leaves out one group (profile) at a time: its pruners are then fitted on nearly
        # all the sequences, as the final one is; with 4 folds the union's larger candidate sets looked
        # worse than they do with every profile (docs/research/cgh-recipe.md)
        folds = {k: np.unique(groups[idx], return_inverse=True)[1].reshape(-1) for k, idx in index.items()}
        many = {k: np.unique(groups[idx]).size >= MIN_GROUPS_TO_COMPARE for k, idx in index.items()}
        compared = [k for k in index if len(modes) > 1 and np.unique(folds[k]).size > 1 and many[k]]
        tolerance = {k: DEFAULT_TOLERANCE if many[k] else 0 for k in index}
        # the comparison scores each held-out sequence on what a test sequence gets: the law's
        # segmentation at the offset of the law refitted without it (its own offset fits its labels);
        # only the sequences of a compared pruner need that second decoding
        held_out_offset = np.full(len(xs), np.nan)
        needed = np.zeros(len(xs), dtype=bool)
        for k in compared:
            needed[index[k]] = True
        for k in set(keys[needed]):
            offsets = self.laws_[k].out_of_fold_offsets()    # over the law's own training sequences
            mine = (keys == k) & needed
            held_out_offset[mine] = offsets[mine] if k == "all" else offsets[needed[keys == k]]

        def decode(i):
            law = self.laws_[keys[i]]
            seg = law.decode(Xs[i], F[i])
            held_out = law.model.decode(Xs[i], law.w_at(held_out_offset[i])) if np.isfinite(held_out_offset[i]) \
                else seg
            if "union" not in modes:
                return seg, None, held_out, None
            over = self._cached_oversegmentation(sequences[i], xs[i])
            return seg, with_changes_of(seg, over), held_out, with_changes_of(held_out, over)

        decoded = self._each(decode, list(range(len(Xs))), sizes, "change pruners")
        cands = {"law": [d[0] for d in decoded], "union": [d[1] for d in decoded]}
        held_out_cands = {"law": [d[2] for d in decoded], "union": [d[3] for d in decoded]}
        # the comparison fits a pruner per left-out profile and candidate set (from tabulated errors), then
        # prunes that profile's sequences: seconds on a cohort, reported as its own stage
        fits = {"done": 0, "total": sum(len(modes) * np.unique(folds[k]).size for k in compared)}
        if self.progress is not None and fits["total"]:
            self.progress(CANDIDATE_STAGE, 0, fits["total"])

        def fitted_one():
            fits["done"] += 1
            if self.progress is not None:
                self.progress(CANDIDATE_STAGE, fits["done"], fits["total"])
            self._stop_if_asked()

        for k, idx in index.items():
            x_k, y_k = [xs[i] for i in idx], [labels[i] for i in idx]
            rule = ChangePruner(spike=self.pruning.spike_threshold, tolerance=tolerance[k])
            mode = modes[0]
            tables = {}
            if k in compared:
                # each candidate set's errors under every rule are tabulated once; a fold's pruner sums them
                for m in modes:
                    self._stop_if_asked()
                    tables[m] = rule.error_tables(x_k, [cands[m][i] for i in idx], y_k)
                cv = {m: _pruner_cv_errors(x_k, [cands[m][i] for i in idx], y_k, folds[k], fitted_one,
                                           held_out_segs=[held_out_cands[m][i] for i in idx],
                                           spike=self.pruning.spike_threshold, tolerance=tolerance[k], tables=tables[m])
                      for m in modes}
                self.pruner_cv_errors_[k] = cv
                mode = "union" if cv["union"] < cv["law"] else "law"
            self.pruner_candidates_[k] = mode
            self.pruners_[k] = rule.fit_tables(tables[mode]) if mode in tables else \
                rule.fit(x_k, [cands[mode][i] for i in idx], y_k)

    def _oversegment(self, x) -> Segmentation:
        return oversegment(x, penalty=self.pruning.overseg_penalty, min_size=self.min_size, spike=self.pruning.spike_threshold)

    def _fit_metric(self, Xs, Ys, classes, anchor=None) -> None:
        # long chromosomes enter the metric step as windows around their labels (their loss-augmented
        # decodings dominate it); the laws and pruners below still see them whole
        window = self.windows.metric_window
        if window is None:
            Xw = []
        else:
            Xw, Yw, source = window_training_set(Xs, Ys, max_length=window, margin=min(WINDOW_MARGIN, window // 4))
        if len(Xw):
            Xs, Ys, classes = Xw, Yw, np.asarray(classes)[source]
        if anchor is None:
            model = SegmentationModel(min_size=self.min_size, penalty_per="log_length")
            model.initial_w(Xs, Ys, grid=np.exp2(np.arange(-4, 5, 0.5)))
        else:
            model = self._model_in_units_of(anchor, Xs[0].shape[1])
        self.w_by_class_ = {}
        if self.learning.learner == "ssvm":
            from ..learners.ssvm import SSVM
            ssvm = SSVM(model, C=self.learning.C, max_iter=self.learning.max_iter, random_state=self.learning.random_state,
                        callback=self.callback, should_stop=self.should_stop, warm_start=anchor is not None,
                        center="zero" if anchor is None else "initial")
            if anchor is not None:
                ssvm.w_ = model.check_w(np.array(anchor.w_, dtype=np.float64))
            fitted = ssvm.fit(Xs, Ys)
        elif self.learning.learner == "partial":
            from ..learners.partial import PartialLabelSSVM
            # bridge loss; each convex CCCP step is solved by one BCFW pass warm-started from the last
            fitted = PartialLabelSSVM(model, C=self.learning.C, strategy="bridge", max_outer=self.learning.max_iter, inner="bcfw",
                                      inner_max_iter=1, random_state=self.learning.random_state,
                                      callback=self.callback, should_stop=self.should_stop).fit(Xs, Ys)
        else:
            from ..learners.transfer import TransferSSVM
            fitted = TransferSSVM(model, rho=self.learning.rho, C=self.learning.C, max_iter=self.learning.max_iter,
                                  random_state=self.learning.random_state, callback=self.callback,
                                  should_stop=self.should_stop).fit(Xs, Ys, list(classes))
            self.w_by_class_ = {str(k): np.asarray(v, dtype=np.float64) for k, v in fitted.w_datasets_.items()}
        self._stop_if_asked()
        self.model_, self.w_ = model, np.asarray(fitted.w_, dtype=np.float64)

    def _each(self, fn, items: list, sizes, stage: str) -> list:
        """``[fn(i) for i in items]`` on ``n_jobs`` threads, the longest sequences first.

        ``sizes[i]`` is the length of sequence ``i``; progress is counted in samples, since one
        97,000-probe chromosome takes as long as hundreds of short ones. Polls ``should_stop``
        before starting each item and reports ``progress(stage, samples done, samples in all)``
        after each one.
        """
        out: dict = {}
        total = int(sum(sizes[i] for i in items))
        done = [0]
        if self.progress is not None and items:
            self.progress(stage, 0, total)

        def finished(i, result):
            out[i] = result
            done[0] += int(sizes[i])
            if self.progress is not None:
                self.progress(stage, done[0], total)

        run_costliest_first(fn, items, [sizes[i] for i in items], self.n_jobs, on_done=finished,
                            before_start=self._stop_if_asked)
        return [out[i] for i in items]

    def _stop_if_asked(self) -> None:
        if self.should_stop is not None and self.should_stop():
            raise CancelledError("the aCGH recipe fit was cancelled")

    def _law(self, Xs, Ys, F, groups, idx, w, summaries, stage="penalty laws") -> PenaltyLaw:
        margin = self.law.margin
        if np.unique(groups[idx]).size < MIN_GROUPS_TO_COMPARE:
            # on a few profiles the choice among margins fits the folds' noise: the first margin
            margin = check_margins(margin)[0]
        law = PenaltyLaw(self.model_, w, offsets=self.law.offsets, counts=self.law.counts, alphas=self.law.alphas,
                         margin=margin, cv=self.law.cv)
        done = summaries.setdefault(np.asarray(w, dtype=np.float64).tobytes(), {})
        todo = [int(i) for i in idx if int(i) not in done]
        sizes = [X.shape[0] for X in Xs]
        def summary_of(i):
            return law.grid_summary(Xs[i], Ys[i], should_stop=self.should_stop)

        for i, summary in zip(todo, self._each(summary_of, todo, sizes, stage)):
            done[i] = summary
        return law.fit([Xs[i] for i in idx], [Ys[i] for i in idx], F[idx], groups=groups[idx],
                       summaries=[done[i] for i in idx])

    def logratio_w(self) -> np.ndarray:
        """Parameters decoding the plain logratio in noise units: weight 1 on the input's first column, 0 elsewhere."""
        p = self.model_._p()
        B = np.zeros(p) if self.model_.metric == "diagonal" else np.zeros((p, p))
        B.flat[0] = 1.0
        return self.model_.join_w(B, 1.0)

    def _choose_law(self, key, Xs, Ys, F, groups, idx, learned_w, summaries) -> None:
        """Fit the law ``key`` on the sequences ``idx`` with the metric(s) of ``law_metric``; keep the best."""
        candidates = {"learned": learned_w, "logratio": self.logratio_w()}
        names = ("learned", "logratio") if self.law.law_metric == "auto" else (self.law.law_metric,)
        stage = {"learned": "penalty laws", "logratio": "penalty laws on the plain logratio"}
        laws = {name: self._law(Xs, Ys, F, groups, idx, candidates[name], summaries, stage[name]) for name in names}
        cv = {name: _cv_error_of(law) for name, law in laws.items()}
        if len(names) == 1:
            best = names[0]
        else:   # without cross-validation both are infinite, and inf <= inf - margin keeps the learned metric
            best = "learned" if cv["learned"] <= cv["logratio"] - self.law.law_metric_margin else "logratio"
        self.laws_[key], self.law_metrics_[key], self.law_cv_errors_[key] = laws[best], best, cv

    # ------------------------------------------------------------ prediction
    def law_for(self, seq) -> PenaltyLaw:
        """The penalty law used for ``seq`` (its platform's, else the pooled one)."""
        if not hasattr(self, "laws_"):
            raise NotFittedError("CghSegmenter: call fit before predicting")
        return self.laws_.get(self._class_of(seq), self.laws_["all"])

    def offset(self, seq) -> float:
        """Predicted log-penalty offset of one sequence."""
        return self.law_for(seq).predict_offset(self.model_input(seq), self.sequence_summary(seq))

    def penalty_factor(self, seq) -> float:
        """``exp(offset)`` of one sequence's penalty, the offset clipped to its law's grid (1.0 when not finite).

        Multiplies the shared model's penalty so that ``model_.decode`` with
        ``model_.scale_penalty(w, factor)`` is the sequence's law segmentation
        (before pruning); the interactive learners step the shared ``w`` through it.
        """
        delta = float(self.offset(seq))
        grid = np.asarray(self.law_for(seq).offsets, dtype=np.float64)
        delta = float(np.clip(delta, grid.min(), grid.max())) if math.isfinite(delta) else 0.0
        return math.exp(delta)

    def item_w(self, seq, shared_w=None) -> np.ndarray:
        """Parameters one sequence is decoded with before pruning: its law's metric, penalty times its factor.

        Parameters
        ----------
        seq : Sequence
        shared_w : ndarray, shape (7,), optional
            Stands for ``w_`` when the sequence's law decodes with the shared learned
            metric (the app passes its perceptron-stepped parameters); ignored for a law
            with parameters of its own (plain logratio, or a platform's ``"transfer"`` metric).
        """
        own = self.own_w(seq)
        w = own if own is not None else self.w_ if shared_w is None else shared_w
        return self.model_.scale_penalty(np.asarray(w, dtype=np.float64), self.penalty_factor(seq))

    def own_w(self, seq) -> "np.ndarray | None":
        """The parameters ``seq``'s law decodes with when they are not the shared ``w_``, else None.

        Not None for a law on the plain logratio or on a platform's ``"transfer"`` metric: a
        step on ``w_`` then does not move the sequence's redraw.
        """
        law = self.law_for(seq)
        return None if law.w is self.w_ else law.w

    def law_segment(self, seq) -> Segmentation:
        """Change points of one aCGH sequence under its penalty law, before any pruning."""
        law = self.law_for(seq)
        X = self.model_input(seq)
        return self.model_.decode(X, law.w_at(law.predict_offset(X, self.sequence_summary(seq))))

    def pruner_for(self, seq) -> "ChangePruner | None":
        """The change pruning rule applied to ``seq`` (its platform's), None when the recipe does not prune."""
        pruners = getattr(self, "pruners_", None)
        return pruners[self._pruner_key(seq)] if pruners else None

    def _pruner_key(self, seq) -> str:
        c = self._class_of(seq)
        return c if c in getattr(self, "pruners_", {}) else "all"

    def candidates_for(self, seq, segmentation, x=None) -> Segmentation:
        """The changes ``seq``'s pruner chooses from: ``segmentation``'s, plus its over-segmentation's if it takes them.

        ``x``: ``seq``'s logratio when the caller already has it (a redraw reads it once).
        """
        if getattr(self, "pruner_candidates_", {}).get(self._pruner_key(seq), "law") != "union":
            return segmentation
        x = _logratio(seq) if x is None else x
        return with_changes_of(segmentation, self._cached_oversegmentation(seq, x))

    def _cached_oversegmentation(self, seq, x) -> Segmentation:
        """``seq``'s over-segmentation (``x`` its logratio), computed once per recipe (the fit's are kept for redraws)."""
        key = (getattr(seq, "name", None), hashlib.blake2b(np.ascontiguousarray(x).tobytes(), digest_size=16).digest())
        with _OVERSEGMENTATION_LOCK:      # the app redraws items, and a fit decodes them, on several threads
            cache = self.__dict__.setdefault("_oversegmentations", {})
            over = cache.get(key)
        if over is None:
            over = self._oversegment(x)
            with _OVERSEGMENTATION_LOCK:
                while len(cache) >= _OVERSEGMENTATION_CACHE:
                    cache.pop(next(iter(cache)))
                cache[key] = over
        return over

    def pruned(self, seq, segmentation, *, extra_candidates=True) -> Segmentation:
        """The changes of ``segmentation`` (with the pruner's extra candidates) the recipe keeps for ``seq``.

        ``segmentation`` itself when the recipe does not prune. ``extra_candidates=False``
        prunes ``segmentation``'s own changes only (what a caller falls back on when an
        over-segmentation's change would contradict a user's label).
        """
        pruner = self.pruner_for(seq)
        if pruner is None:
            return segmentation
        x = _logratio(seq)
        candidates = self.candidates_for(seq, segmentation, x) if extra_candidates else segmentation
        return pruner.prune(x, candidates)

    def segment(self, seq) -> Segmentation:
        """Predicted change points of one aCGH sequence (pruned when the recipe has pruners)."""
        return self.pruned(seq, self.law_segment(seq))

    def predict(self, sequences):
        """Predicted change points of one sequence, or of each sequence of a list.

        Parameters
        ----------
        sequences : Sequence or list of Sequence
            aCGH sequences (one chromosome of one profile each).

        Returns
        -------
        Segmentation or list of Segmentation
            One per input sequence, in input order.
        """
        if isinstance(sequences, Sequence):
            return self.segment(sequences)
        return [self.segment(seq) for seq in sequences]

    # ------------------------------------------------------------ files
    def to_dict(self) -> dict:
        """JSON-ready laws and settings (the model and ``w_`` are saved by the model file itself)."""
        if not hasattr(self, "laws_"):
            raise NotFittedError("CghSegmenter: call fit before saving")
        d = {"recipe": "cgh-penalty-law/1", "density_split": self.platforms.density_split, "min_size": int(self.min_size),
             "laws": {k: law.to_dict() for k, law in self.laws_.items()}}
        pruners = getattr(self, "pruners_", None)
        if pruners:
            # a new version: an older Marginalia refuses the file instead of silently skipping the pruning
            d["recipe"] = "cgh-penalty-law/2"
            d["pruners"] = {k: p.to_dict() for k, p in pruners.items()}
            if any(rule["delta"] != 0.0 for rule in d["pruners"].values()):
                # pruners that weigh the short segment's spread: a Marginalia that would ignore it refuses
                d["recipe"] = "cgh-penalty-law/3"
            union = {k: m for k, m in getattr(self, "pruner_candidates_", {}).items() if m != "law"}
            if union:
                # pruners choosing among more changes than the law's: likewise
                d["recipe"] = "cgh-penalty-law/4"
                d["pruner_candidates"] = union
                d["overseg_penalty"] = float(self.pruning.overseg_penalty)
            if any("spike" in rule for rule in d["pruners"].values()):
                # pruners reading a despiked logratio (and so the over-segmentation): likewise
                d["recipe"] = "cgh-penalty-law/5"
                d["spike_threshold"] = _check_spike(self.pruning.spike_threshold)
        for k, law in self.laws_.items():
            if law.w is not self.w_:
                d["laws"][k]["w"] = [float(v) for v in law.w]
            d["laws"][k]["metric"] = getattr(self, "law_metrics_", {}).get(k, "learned")
        return d

    @classmethod
    def from_dict(cls, model, w, d: dict) -> "CghSegmenter":
        """Rebuild a fitted segmenter from a model, its parameters and :meth:`to_dict` output."""
        if not isinstance(d, dict) or d.get("recipe") not in RECIPE_VERSIONS:
            raise ParameterError(f"penalty law: unknown recipe {d.get('recipe') if isinstance(d, dict) else d!r}; "
                                 "expected 'cgh-penalty-law/1' to '/5' (a model from a newer Marginalia?)")
        split = d.get("density_split")
        if split is not None and not (is_number(split) and math.isfinite(split)):
            raise ParameterError(f"penalty law: density_split must be a number or null, got {split!r}")
        seg = cls(density_split=split, min_size=int(d.get("min_size", model.min_size)))
        seg.model_, seg.w_ = model, model.check_w(w)
        laws = d.get("laws") or {}
        if "all" not in laws:
            raise ParameterError("penalty law: the pooled law ('all') is missing")
        seg.laws_ = {k: PenaltyLaw.from_dict(model, model.check_w(v["w"]) if "w" in v else seg.w_, v)
                     for k, v in laws.items()}
        seg.law_metrics_ = {k: v.get("metric", "learned") for k, v in laws.items()}
        odd = {k: m for k, m in seg.law_metrics_.items() if m not in LAW_METRICS[1:]}
        if odd:
            raise ParameterError(f"penalty law: unknown metric(s) {odd}; expected 'learned' or 'logratio'")
        seg.law_cv_errors_ = {}
        seg.pruners_ = {}
        if d["recipe"] != "cgh-penalty-law/1":
            pruners = d.get("pruners")
            if not isinstance(pruners, dict) or "all" not in pruners:
                raise ParameterError(f"penalty law: recipe {d['recipe']!r} needs its change pruners ('all' missing)")
            seg.pruners_ = {k: ChangePruner.from_dict(v) for k, v in pruners.items()}
        seg.pruner_candidates_ = {k: "law" for k in seg.pruners_}
        seg.pruner_cv_errors_ = {}
        if d["recipe"] == "cgh-penalty-law/4" or "pruner_candidates" in d:
            seg.pruner_candidates_.update(_check_pruner_candidates(d.get("pruner_candidates"), seg.pruners_))
            seg.pruning = replace(seg.pruning, overseg_penalty=_check_overseg_penalty(d.get("overseg_penalty")))
        # recipes saved before despiking read the logratio as measured
        spike = _check_spike(d.get("spike_threshold")) if d["recipe"] == "cgh-penalty-law/5" else None
        seg.pruning = replace(seg.pruning, spike_threshold=spike)
        return seg


def _pruner_cv_errors(xs, segs, labels, folds, after_fold=None, held_out_segs=None, spike=None,
                      tolerance=DEFAULT_TOLERANCE, tables=None) -> int:
    """Label errors of pruners fitted on all folds but one, summed over the held-out folds.

    ``held_out_segs`` (default ``segs``) are the candidates a held-out sequence is pruned from;
    ``after_fold()`` is called after each fold (progress and cancel); ``spike``, ``tolerance``: the pruners';
    ``tables``: ``ChangePruner.error_tables`` of ``(xs, segs, labels)`` when already computed.
    """
    held_out_segs = segs if held_out_segs is None else held_out_segs
    if tables is None:
        tables = ChangePruner(spike=spike, tolerance=tolerance).error_tables(xs, segs, labels)
    total = 0
    for f in np.unique(folds):
        tr, te = np.flatnonzero(folds != f), np.flatnonzero(folds == f)
        pruner = ChangePruner(spike=spike, tolerance=tolerance).fit_tables(tables, tr)
        total += sum(region_errors(labels[i], pruner.prune(xs[i], held_out_segs[i])).errors for i in te)
        if after_fold is not None:
            after_fold()
    return int(total)


def _check_pruner_candidates(d, pruners) -> dict:
    if not isinstance(d, dict) or not d or not set(d) <= set(pruners) or set(d.values()) != {"union"}:
        raise ParameterError(f"penalty law: 'pruner_candidates' must map pruners {sorted(pruners)} to 'union', "
                             f"got {d!r}")
    return dict(d)


def _check_overseg_penalty(v) -> float:
    if not (is_number(v) and math.isfinite(v) and v >= 0):
        raise ParameterError(f"penalty law: 'overseg_penalty' must be a number >= 0, got {v!r}")
    return float(v)


def _cv_error_of(law: PenaltyLaw) -> float:
    """A fitted law's cross-validated label errors at its chosen margin and ridge (``inf`` without CV)."""
    errors = getattr(law, "cv_errors_", {})
    key = (law.margin_, law.alpha_)
    return float(errors[key]) if key in errors else float("inf")


def profile_groups(sequences, ids) -> list:
    """Cross-validation groups of the laws: each sequence's profile when there are at least 4, else ``ids``.

    Keeping a profile's chromosomes in one fold stops the laws from being tuned on a profile they are scored
    on; with fewer than 4 profiles that leaves too few folds, so every sequence is its own group.

    Parameters
    ----------
    sequences : list of Sequence
    ids : list of str
        One id per sequence (also the profile of a sequence without ``meta["profile_id"]``).
    """
    ids = [str(i) for i in ids]
    profiles = [str((getattr(s, "meta", None) or {}).get("profile_id") or i) for s, i in zip(sequences, ids)]
    return profiles if len(set(profiles)) >= 4 else ids


def canonical_order(sequences) -> list:
    """Indices that sort sequences by name, length and content: the same set gives the same order."""
    def key(i):
        seq = sequences[i]
        values = np.ascontiguousarray(getattr(seq, "values", np.empty(0)))
        return (str(getattr(seq, "name", "") or ""), values.shape[0], hashlib.sha1(values.tobytes()).hexdigest(), i)
    return sorted(range(len(sequences)), key=key)


def _label_key(label) -> str:
    fields = {k: v for k, v in sorted(vars(label).items()) if k not in ("id", "created", "author")}
    return type(label).__name__ + repr(sorted((k, repr(v)) for k, v in fields.items()))


def _labelled_pairs(sequences, labels):
    """``(sequences, label lists)`` from either one label list per sequence or one flat list of labels.

    A flat list (what :func:`~marginalia.io.cgh.read_annotations` returns) is grouped by each label's
    ``item_id``, matched to the sequence of that ``name``; sequences without a label are left out.
    """
    if not labels or all(isinstance(y, (list, tuple)) for y in labels):
        return sequences, labels
    names = [getattr(seq, "name", None) for seq in sequences]
    by_name = {name: [] for name in names}
    unknown = sorted({str(getattr(lab, "item_id", None)) for lab in labels
                      if getattr(lab, "item_id", None) not in by_name})
    if unknown:
        raise ParameterError(f"labels: {len(unknown)} label item id(s) match no sequence name, e.g. {unknown[0]!r}; "
                             "read the labels against the same sequences (read_annotations(path, sequences))")
    for lab in labels:
        by_name[lab.item_id].append(lab)
    kept = [i for i, name in enumerate(names) if by_name[name]]
    return [sequences[i] for i in kept], [by_name[names[i]] for i in kept]


def fit_cgh_recipe(sequences, labels, *, law_only=None, previous=None, metric="learn", **params) -> CghSegmenter:
    """Fit the aCGH recipe on labelled sequences; the result has ``.segment(seq)``.

    ``params`` are those of :class:`CghSegmenter`; ``prune`` defaults to True here
    (the best recipe measured by ``benchmarks/quality/quality_cgh.py``). ``law_only``,
    ``previous``, ``metric``: see :meth:`CghSegmenter.fit`.
    """
    params.setdefault("prune", True)
    return CghSegmenter(**params).fit(sequences, labels, law_only=law_only, previous=previous, metric=metric)
