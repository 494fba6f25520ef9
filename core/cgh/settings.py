"""The settings of the aCGH recipe, one small validated object per stage.

:class:`~marginalia.cgh.recipe.CghSegmenter` runs four stages, each configured by one of these (frozen, checked
when made, so a wrong value is refused by name before any work):

* :class:`LearningSettings` -- the metric learner (SSVM by default) and its passes;
* :class:`WindowSettings` -- how long chromosomes enter that learner (windows around their labels);
* :class:`PlatformSettings` -- how sequences are split into array platforms, each with a law of its own;
* :class:`LawSettings` -- the per-platform penalty laws (grid, ridge, margin, which metric they decode with);
* :class:`PruningSettings` -- the change pruners and the candidates they choose from.

``CghSegmenter(max_iter=2)`` is short for ``CghSegmenter(learning=LearningSettings(max_iter=2))``: a field of any
stage may be given by its name (:func:`stage_settings`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, fields, replace

from ..checks import check_bool, check_int, check_scalar, is_number
from ..exceptions import ParameterError
from .change_pruning import OVERSEGMENT_PENALTY, SPIKE_THRESHOLD, _check_spike
from .penalty_law import DEFAULT_COUNTS, DEFAULT_OFFSETS, check_margins
from .training_windows import MAX_WINDOW

__all__ = ["LearningSettings", "WindowSettings", "PlatformSettings", "LawSettings", "PruningSettings",
           "stage_settings", "STAGES", "METRIC_LEARNERS", "LAW_METRICS", "PRUNER_CANDIDATES", "DENSITY_SPLIT",
           "LAW_MARGINS", "LAW_METRIC_MARGIN"]

#: how the metric is learned (see :class:`LearningSettings`)
METRIC_LEARNERS = ("ssvm", "partial", "transfer")

#: which metric a penalty law decodes with (see :class:`LawSettings`)
LAW_METRICS = ("auto", "learned", "logratio")

#: with ``law_metric="auto"``, how many fewer cross-validated label errors the learned metric's law must make than
#: the plain logratio's to be kept: the metric was fitted on the very sequences that comparison scores
LAW_METRIC_MARGIN = 2

#: what a change pruner chooses from (see :class:`PruningSettings`)
PRUNER_CANDIDATES = ("auto", "law", "union")

#: probes per Mb separating low-density (BAC, ~1/Mb) from high-density (oligo, ~25/Mb) arrays
DENSITY_SPLIT = 5.0

# Interval-regression margins each penalty law chooses from (with its ridge, by cross-validated label errors;
# the first alone below MIN_GROUPS_TO_COMPARE profiles). The low-density arrays' zero-error offset intervals
# are wide, and a wider margin aims their law at the middle.
LAW_MARGINS = (0.25, 0.5, 1.0, 1.5, 2.0)


def _choice(value, name: str, choices: tuple):
    if value not in choices:
        raise ParameterError(f"{name}: expected one of {choices}, got {value!r}")
    return value


def _numbers(value, name: str) -> tuple:
    """A non-empty tuple of finite numbers from a sequence of them (lists become tuples: settings are frozen)."""
    try:
        values = tuple(value)
    except TypeError:
        values = ()
    if not values or not all(is_number(v) and math.isfinite(v) for v in values):
        raise ParameterError(f"{name}: expected a non-empty sequence of finite numbers, got {value!r}")
    return values


@dataclass(frozen=True)
class LearningSettings:
    """How the recipe learns its metric and base penalty.

    Parameters
    ----------
    learner : {"ssvm", "transfer", "partial"}, default "ssvm"
        SSVM (block-coordinate Frank-Wolfe, exact label-violation loss);
        :class:`~marginalia.learners.partial.PartialLabelSSVM` (bridge loss by CCCP: ``max_iter`` outer
        iterations, each convex step one warm-started BCFW pass); or
        :class:`~marginalia.learners.transfer.TransferSSVM` with one dataset per platform coupled by ``rho``
        (each platform then decodes with its own metric).
    C : float, default 1.0
        SSVM trade-off (> 0).
    max_iter : int, default 5
        SSVM passes.
    rho : float, default 1.0
        Coupling of the platforms for ``learner="transfer"`` (>= 0).
    random_state : int, default 0
    """

    learner: str = "ssvm"
    C: float = 1.0
    max_iter: int = 5
    rho: float = 1.0
    random_state: object = 0

    def __post_init__(self):
        _choice(self.learner, "learner", METRIC_LEARNERS)
        check_scalar(self.C, "C", float, min_val=0, include_boundaries="neither")
        check_int(self.max_iter, "max_iter", min_val=1)
        check_scalar(self.rho, "rho", float, min_val=0)


@dataclass(frozen=True)
class WindowSettings:
    """How long chromosomes enter the metric learner.

    Parameters
    ----------
    metric_window : int or None, default 6000
        Longest training window of the metric step, in probes: a longer chromosome enters it as
        :func:`~marginalia.cgh.training_windows.training_windows` cut around its labels (the penalty laws and
        pruners see it whole). ``None``: whole chromosomes, exact, about twice the fit time on the
        high-density arrays.
    """

    metric_window: object = MAX_WINDOW

    def __post_init__(self):
        if self.metric_window is not None:
            check_int(self.metric_window, "metric_window", min_val=1)


@dataclass(frozen=True)
class PlatformSettings:
    """How sequences are split into array platforms, and when a platform gets a penalty law of its own.

    Parameters
    ----------
    density_split : float or None, default 5.0
        Probes per Mb splitting the platforms; ``None``: one law for all.
    min_class_sequences : int, default 4
        A platform with fewer labelled training sequences uses the pooled law, which is fitted mostly on the
        other platform's chromosomes; 4 is enough for a law of its own to do better (see the research notes).
    min_class_profiles : int, default 4
        Likewise, a platform whose training sequences come from fewer groups (profiles: the ``groups`` of
        :meth:`~marginalia.cgh.recipe.CghSegmenter.fit`) uses the pooled law: a law fitted on every chromosome
        of 2-3 profiles learns those profiles' noise.
    """

    density_split: object = DENSITY_SPLIT
    min_class_sequences: int = 4
    min_class_profiles: int = 4

    def __post_init__(self):
        if self.density_split is not None:
            check_scalar(self.density_split, "density_split", float, min_val=0, include_boundaries="neither")
        check_int(self.min_class_sequences, "min_class_sequences", min_val=1)
        check_int(self.min_class_profiles, "min_class_profiles", min_val=1)


@dataclass(frozen=True)
class LawSettings:
    """The per-platform penalty laws (:class:`~marginalia.cgh.penalty_law.PenaltyLaw`).

    Parameters
    ----------
    offsets, counts, alphas, margin, cv
        Passed to :class:`~marginalia.cgh.penalty_law.PenaltyLaw` (``margin``: one number, or the numbers each
        law chooses from with its ridge ``alphas`` by cross-validated label errors).
    law_metric : {"auto", "learned", "logratio"}, default "auto"
        What each penalty law decodes with: the learned metric, the plain logratio in noise units (the input's
        first column alone, weight 1), or (``"auto"``) both fitted, keeping per law the learned metric only when
        it makes at least ``law_metric_margin`` fewer cross-validated label errors on the training sequences
        than the plain logratio. Neither metric is best on every platform, hence the per-law choice (figures in
        the research notes).
    law_metric_margin : int, default 2
        With ``law_metric="auto"``: label errors the learned metric's law must save over the plain logratio's
        to be kept: the comparison favours the learned metric, fitted on the very sequences whose held-out
        errors it counts.
    """

    offsets: tuple = tuple(float(v) for v in DEFAULT_OFFSETS)
    counts: tuple = DEFAULT_COUNTS
    alphas: tuple = (1e-3, 1e-2, 1e-1, 1.0)
    margin: object = LAW_MARGINS
    cv: int = 4
    law_metric: str = "auto"
    law_metric_margin: int = LAW_METRIC_MARGIN

    def __post_init__(self):
        object.__setattr__(self, "offsets", _numbers(self.offsets, "offsets"))
        object.__setattr__(self, "counts", _numbers(self.counts, "counts"))
        object.__setattr__(self, "alphas", _numbers(self.alphas, "alphas"))
        margins = check_margins(self.margin)
        if not is_number(self.margin):
            object.__setattr__(self, "margin", tuple(margins))
        check_int(self.cv, "cv", min_val=2)
        _choice(self.law_metric, "law_metric", LAW_METRICS)
        check_int(self.law_metric_margin, "law_metric_margin", min_val=0, what="an integer (label errors)")


@dataclass(frozen=True)
class PruningSettings:
    """The change pruners (:class:`~marginalia.cgh.change_pruning.ChangePruner`), one per platform.

    Parameters
    ----------
    prune : bool, default True
        Learn a pruner per platform (pooled ``"all"`` one as fallback) on the law's segmentations of the
        training sequences, and apply it in :meth:`~marginalia.cgh.recipe.CghSegmenter.segment`. A platform
        segmented by the pooled law (too few sequences for its own) still gets a pruner of its own.
    candidates : {"auto", "law", "union"}, default "auto"
        The changes each pruner chooses from: the law's segmentation (``"law"``), or that plus a label-free
        over-segmentation of the logratio (:func:`~marginalia.cgh.change_pruning.oversegment`,
        ``overseg_penalty`` times ``log T`` per change in noise units; ``"union"``), so that a change the law's
        penalty missed can still be kept; ``"auto"``: per pruner, the one with fewer cross-validated label
        errors on the training sequences (leaving out one group at a time; the law's candidates on ties and
        when the sequences form fewer than ``MIN_GROUPS_TO_COMPARE`` = 8 groups). A held-out sequence is pruned
        from the law's segmentation at the offset of the law refitted without its fold
        (:meth:`~marginalia.cgh.penalty_law.PenaltyLaw.out_of_fold_offsets`), as a new sequence would be. On
        the neuroblastoma cohort the high-density arrays take the union on most folds and the low-density ones
        the law (``benchmarks/quality/quality_cgh.py``).
    overseg_penalty : float, default 2.0
        Penalty of that over-segmentation, per ``log T`` (>= 0).
    spike_threshold : float or None, default 4.0
        The pruners and the over-segmentation read the logratio with single-probe spikes beyond this many
        noise units replaced (:func:`~marginalia.cgh.change_pruning.despike`; ``None``: as measured).
    """

    prune: bool = True
    candidates: str = "auto"
    overseg_penalty: float = OVERSEGMENT_PENALTY
    spike_threshold: object = SPIKE_THRESHOLD

    def __post_init__(self):
        check_bool(self.prune, "prune")
        _choice(self.candidates, "candidates", PRUNER_CANDIDATES)
        check_scalar(self.overseg_penalty, "overseg_penalty", float, min_val=0)
        object.__setattr__(self, "spike_threshold", _check_spike(self.spike_threshold))


#: the stages' names (``CghSegmenter``'s keyword and attribute) and settings classes
STAGES = {"learning": LearningSettings, "windows": WindowSettings, "platforms": PlatformSettings,
          "law": LawSettings, "pruning": PruningSettings}

#: a field's name -> the stage that holds it (every field name is held by one stage)
_FIELD_STAGE = {f.name: stage for stage, cls in STAGES.items() for f in fields(cls)}


def stage_settings(given: dict, overrides: dict) -> dict:
    """The settings of every stage: those ``given`` (stage name -> settings or None), with fields overridden.

    Parameters
    ----------
    given : dict
        Stage name (a key of :data:`STAGES`) -> its settings object, or None for the defaults.
    overrides : dict
        Field name (of any stage, e.g. ``max_iter``) -> value, applied to the stage that holds it.

    Returns
    -------
    dict
        Stage name -> settings object, for every stage of :data:`STAGES`.

    Raises
    ------
    ParameterError
        A stage given as something other than its settings class, or an unknown field name.
    """
    out = {}
    for stage, cls in STAGES.items():
        value = given.get(stage)
        if value is None:
            value = cls()
        elif not isinstance(value, cls):
            raise ParameterError(f"{stage}: expected a {cls.__name__} or None, got {type(value).__name__}")
        out[stage] = value
    unknown = sorted(set(overrides) - set(_FIELD_STAGE))
    if unknown:
        raise ParameterError(f"CghSegmenter: unknown setting {unknown[0]!r}; the settings are "
                             f"{', '.join(sorted(_FIELD_STAGE))}, or the stages {', '.join(STAGES)}")
    for stage in STAGES:
        mine = {name: v for name, v in overrides.items() if _FIELD_STAGE[name] == stage}
        if mine:
            out[stage] = replace(out[stage], **mine)
    return out
