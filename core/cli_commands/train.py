"""``marginalia-cli train``: fit a model from partial labels and write it to a file."""

from __future__ import annotations

import argparse
import hashlib
from pathlib import Path

from ..exceptions import ParameterError
from ._common import (
    EXIT_OK,
    UsageError,
    add_columns,
    add_jobs,
    check_output,
    columns_of,
    info,
    jobs_of,
    make_progress,
    positive_int,
    require_file,
)

__all__ = ["add_parser", "run", "LEARNERS"]

HELP = "fit a model from a project's labels, from profile/annotation files, or from score/audio pairs"
EPILOG = """\
forms:
  train PROJECT --out MODEL
      fit from the labels of a Marginalia project (segmentation items; --kind picks cgh/audio/series)
  train --task segmentation --profiles P.csv[.gz] --annotations A.csv --out MODEL
      fit from every labelled sequence of the files (annotations: profile.id,chromosome,min,max,annotation)
  train --task alignment --pairs PAIRS.csv --out MODEL [--max-iter N --ridge R]
      fit the score aligner that `align` runs (marginalia.align.ScoreAligner) from the scores and recordings
      alone (Lajugie 2015, ch. 6): align with the current frame scorers, refit them by ridge regression, N
      rounds (default 3); a pair's anchors constrain its alignments. PAIRS.csv has columns score,audio (paths
      relative to it) and optionally anchors (a CSV of event,audio_time_s[,tolerance_s] for that pair)
  train PROJECT --task sync --out MODEL [--C C --max-iter N]
      learn the project's sync metric from its sync anchors and its recordings aligned to the same score (as
      Model > Learn the sync metric does in the app), store it in the project (a new version; later `sync`
      and `carry` of the project use it) and write it to MODEL (the project must not be open in the app)
  train --task sync --pairs PAIRS.csv --out MODEL [--C C --max-iter N]
      learn the metric of the aligner that `sync` and `carry` run (marginalia.sync.SyncAligner; Lajugie
      2015, ch. 5) from recordings of the same music whose notes are timed in both. PAIRS.csv has columns
      reference,target,reference_onsets,target_onsets (paths relative to it); an onset table is a CSV with
      the times in onset_s, audio_time_s (what `align` writes) or time_s, matched by an event/id/note column
      when both have one, else row by row

recipes (--task segmentation on aCGH files):
  penalty-law learned metric (SSVM; --metric-learner) + a per-sequence penalty per array platform,
              then a learned rule per platform that drops changes with weak local evidence
              (--no-prune skips it) (default)
  plain       one model with one penalty law; the learner, metric and features below apply (giving
              --learner, --metric or --features other than their defaults selects it)

learners:
  ssvm        structured SVM by block-coordinate Frank-Wolfe (default; --C, --max-iter)
  perceptron  averaged structured perceptron (fast; --max-iter passes)
  partial     partial-label SSVM (CCCP + bundle method, at most 10 cutting planes per CCCP step; --C,
              --max-iter CCCP steps)

examples:
  marginalia-cli train --task segmentation --profiles profiles.csv.gz --annotations annotations.csv --out cgh.model
  marginalia-cli train --task segmentation --profiles p.csv --annotations a.csv --learner perceptron --out fast.model
  marginalia-cli train project.marginalia --out project.model
  marginalia-cli train --task alignment --pairs pairs.csv --out piano.model
  marginalia-cli train --task sync --pairs sync_pairs.csv --out piano_sync.model
  marginalia-cli train study.marginalia --task sync --out study_sync.model
"""

LEARNERS = ("ssvm", "perceptron", "partial")
#: flags of the chroma aligner that `train --task alignment` fitted before the score aligner
RETIRED_ALIGNMENT_FLAGS = ("--lam", "--mu", "--nu")


def add_parser(sub, parents) -> None:
    p = sub.add_parser("train", help=HELP, description=HELP + ".", epilog=EPILOG, parents=parents,
                       formatter_class=argparse.RawDescriptionHelpFormatter)
    inp = p.add_argument_group("input", "what to learn from: a project, or the files of one task")
    inp.add_argument("project", metavar="PROJECT", nargs="?", help="a Marginalia project file")
    inp.add_argument("--task", choices=("segmentation", "alignment", "sync"), help="file-level form: what to learn")
    inp.add_argument("--profiles", metavar="P.csv[.gz]", action="append", default=[],
                     help="aCGH profiles table (repeatable)")
    inp.add_argument("--annotations", metavar="A.csv", action="append", default=[],
                     help="region annotations of the profiles (repeatable)")
    add_columns(inp)
    inp.add_argument("--pairs", metavar="PAIRS.csv", help="score,audio[,anchors] pairs for --task alignment; "
                     "reference,target,reference_onsets,target_onsets for --task sync")
    inp.add_argument("--kind", choices=("cgh", "audio", "series"),
                     help="project form: which items to learn from (default: the kind with most labels)")

    out = p.add_argument_group("output")
    out.add_argument("--out", metavar="MODEL", required=True, help="model file to write")

    model = p.add_argument_group("model", "the recipe, the learner and its main settings")
    model.add_argument("--recipe", choices=("penalty-law", "plain"), default=None,
                       help="--task segmentation on aCGH files: 'penalty-law' (the default with the default "
                            "learner, metric and features) learns a metric on point-wise Hermite features "
                            "(--metric-learner), then a per-sequence penalty per array platform (length, noise, "
                            "change-count thresholds; max-margin interval regression); 'plain' is one model with "
                            "one penalty law (--learner, --metric and --features apply to it)")
    model.add_argument("--learner", choices=LEARNERS, default="ssvm", help="learning algorithm (default: ssvm)")
    model.add_argument("--C", type=_positive_float, default=1.0, help="regularisation trade-off (default 1.0)")
    model.add_argument("--max-iter", type=positive_int, default=None,
                       help="passes over the data (default 50; 5 for the aCGH penalty-law recipe, as measured by "
                            "benchmarks/quality/quality_cgh.py; --task alignment: align/refit rounds, default 3)")
    model.add_argument("--metric", choices=("diagonal", "full"), default="diagonal",
                       help="segmentation: learn per-feature weights or a full PSD metric (default diagonal)")
    model.add_argument("--features", choices=("hermite", "raw"), default="hermite",
                       help="aCGH: logratio with its local Hermite moments (default, as in the app) or the raw "
                            "logratio only")
    model.add_argument("--min-size", type=positive_int, default=3,
                       help="penalty-law recipe: minimal segment length in probes (default 3)")
    model.add_argument("--seed", type=int, default=0, help="random seed of the learner (default 0)")
    add_jobs(model, "penalty-law recipe: the sequences of the penalty laws and pruners are decoded")
    model.add_argument("--ridge", type=_positive_float, default=None,
                       help="alignment: ridge strength pulling the frame scorers towards the untrained ones, per "
                            "frame (default 0.01)")
    for flag in RETIRED_ALIGNMENT_FLAGS:   # refused with what replaced them (see run)
        model.add_argument(flag, default=None, help=argparse.SUPPRESS)

    adv = p.add_argument_group(
        "advanced (research)",
        "the penalty-law recipe's research knobs; the defaults are the settings docs/accuracy.md measures")
    adv.add_argument("--metric-learner", choices=("ssvm", "transfer", "partial"), default="ssvm",
                     help="one metric by SSVM (default), one per array platform coupled by TransferSSVM, or one by "
                          "the partial-label SSVM (bridge loss)")
    adv.add_argument("--rho", type=_non_negative_float, default=1.0,
                     help="with --metric-learner transfer: coupling of the platforms (default 1)")
    adv.add_argument("--no-prune", dest="prune", action="store_false",
                     help="keep every change of the penalty law (by default a rule learned per array platform drops "
                          "the changes whose evidence, in noise units, is too weak)")
    adv.add_argument("--law-metric", choices=("auto", "learned", "logratio"), default="auto",
                     help="what each platform's penalty law decodes with: the learned metric, the plain logratio in "
                          "noise units, or (default) the learned metric only where its law makes at least 2 fewer "
                          "cross-validated label errors on the training sequences")
    adv.add_argument("--pruner-candidates", choices=("auto", "law", "union"), default="auto",
                     help="the changes each platform's pruning rule chooses from: the penalty law's, those plus a "
                          "label-free over-segmentation's (so a change the law missed can be kept), or (default) "
                          "whichever makes fewer cross-validated label errors")
    adv.add_argument("--law-margin", type=_non_negative_float, default=None, metavar="LOG_UNITS",
                     help="margin of each penalty law's interval regression, in log-penalty units (default: each "
                          "law chooses among 0.25, 0.5, 1, 1.5 and 2 with its ridge, by cross-validated label "
                          "errors on the training sequences)")
    # the recipe's default (change_pruning.SPIKE_THRESHOLD) is not imported here: the parser loads no numba
    adv.add_argument("--spike-threshold", type=_non_negative_float, default=None, metavar="SIGMAS",
                     help="the pruning rules and the over-segmentation read the logratio with each probe farther "
                          "than this many noise levels from the median of itself and its two neighbours replaced "
                          "by that median (default 4; 0 keeps every probe as measured)")
    p.set_defaults(run=run)


def _positive_float(text):
    try:
        v = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a positive number, got {text!r}") from None
    if not v > 0 or v == float("inf"):
        raise argparse.ArgumentTypeError(f"expected a positive number, got {text!r}")
    return v


def _non_negative_float(text):
    try:
        v = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number >= 0, got {text!r}") from None
    if not v >= 0 or v == float("inf"):
        raise argparse.ArgumentTypeError(f"expected a number >= 0, got {text!r}")
    return v


def _check_files(args) -> None:
    """Inputs first (a missing file is a usage error, exit 2), then --out: before minutes of training, not after."""
    for flag, paths in (("--profiles", args.profiles), ("--annotations", args.annotations)):
        for path in paths or ():
            require_file(flag, path)
    check_output("--out", args.out, "file", stdout=False)   # a model file is read back by name


def run(args) -> int:
    retired = [flag for flag in RETIRED_ALIGNMENT_FLAGS if getattr(args, flag[2:]) is not None]
    if retired:
        raise UsageError(f"{'/'.join(retired)}: belonged to the retired chroma aligner; --task alignment now fits "
                         "the score aligner that `align` runs: --ridge sets its ridge strength, --max-iter its "
                         "rounds, and its duration prior is built in")
    if args.max_iter is None and args.task not in ("alignment", "sync"):
        recipe = args.task == "segmentation" and args.project is None and _wants_recipe(args)
        args.max_iter = 5 if recipe else 50
        # a project's aCGH items may take the recipe too (decided once the items are read)
        args._max_iter_defaulted = args.project is not None
    if args.project is not None and args.task == "sync" and not (args.profiles or args.annotations or args.pairs):
        from .sync import train_project_sync
        return train_project_sync(args)
    if args.project is not None:
        if args.task or args.profiles or args.annotations or args.pairs:
            raise UsageError("give either PROJECT or the file-level form (--task with --profiles/--annotations "
                             "or --pairs), not both")
        _check_files(args)
        return _train_project(args)
    if args.task is None:
        raise UsageError("nothing to train from: give a PROJECT, or --task segmentation --profiles P.csv "
                         "--annotations A.csv, or --task alignment --pairs PAIRS.csv")
    if args.task == "segmentation":
        if not args.profiles or not args.annotations:
            raise UsageError("--task segmentation needs --profiles P.csv[.gz] and --annotations A.csv")
        if args.pairs:
            raise UsageError("--pairs is for --task alignment")
        _check_files(args)
        return _train_segmentation_files(args)
    if args.task == "sync":
        if not args.pairs:
            raise UsageError("--task sync needs --pairs PAIRS.csv (columns reference,target,reference_onsets,"
                             "target_onsets)")
        if args.profiles or args.annotations:
            raise UsageError("--profiles/--annotations are for --task segmentation")
        _check_files(args)
        from .sync import train_sync_pairs
        return train_sync_pairs(args)
    if not args.pairs:
        raise UsageError("--task alignment needs --pairs PAIRS.csv (columns score,audio[,anchors])")
    if args.profiles or args.annotations:
        raise UsageError("--profiles/--annotations are for --task segmentation")
    _check_files(args)
    from .align import train_alignment_pairs
    return train_alignment_pairs(args)


# ------------------------------------------------------------ segmentation


#: cutting planes per CCCP step of ``--learner partial`` (PartialLabelSSVM's bundle method)
PARTIAL_PLANES = 10


def make_learner(name: str, model, *, C: float, max_iter: int, seed: int, callback=None):
    """A learner of ``marginalia.learners`` by command-line name.

    ``max_iter`` is the number of passes (SSVM, perceptron) or of outer CCCP
    iterations (partial); ``callback(learner, iteration)`` is passed to the
    learners that report their iterations.
    """
    if name == "ssvm":
        from ..learners.ssvm import SSVM
        return SSVM(model, C=C, max_iter=max_iter, random_state=seed, callback=callback)
    if name == "perceptron":
        from ..learners.perceptron import StructuredPerceptron
        return _with_optional(StructuredPerceptron, model, C=C, max_iter=max_iter, random_state=seed,
                              callback=callback)
    if name == "partial":
        from ..learners.partial import PartialLabelSSVM
        # at most PARTIAL_PLANES cutting planes per CCCP step: each costs a decode of every sequence, and
        # the bundle's certified gap closes slowly on aCGH-sized features (the adaptive precision still
        # tightens from one step to the next)
        return _with_optional(PartialLabelSSVM, model, C=C, max_outer=max_iter, inner_max_iter=PARTIAL_PLANES,
                              random_state=seed, callback=callback)
    raise UsageError(f"--learner: unknown learner {name!r}; expected one of {list(LEARNERS)}")


def _with_optional(cls, model, **kwargs):
    """Construct a learner passing only the keyword arguments its ``__init__`` accepts."""
    import inspect
    accepted = inspect.signature(cls.__init__).parameters
    return cls(model, **{k: v for k, v in kwargs.items() if k in accepted})


def fit_segmentation(Xs, Ys, *, args, label: str):
    """Fit a segmentation model on matrices ``Xs`` with label lists ``Ys``; returns (model, w, learner)."""
    from ..models.segmentation import SegmentationModel
    model = SegmentationModel(metric=args.metric)
    unit = "outer iterations" if args.learner == "partial" else "passes"
    progress = make_progress(args, args.max_iter, label, unit=unit)
    learner = make_learner(args.learner, model, C=args.C, max_iter=args.max_iter, seed=args.seed,
                           callback=lambda _learner, _it: progress.advance())
    reports = getattr(learner, "callback", None) is not None
    if not reports:  # a learner without per-pass reports: one step for the whole fit
        progress.set_total(1)
        progress.unit = "fit"
    try:
        learner.fit(Xs, Ys)
        if not reports:
            progress.advance()
    finally:
        if progress.done < progress.total:  # converged early
            progress.set_total(progress.done)
        progress.close()
    return learner.model, learner.w_, learner


def _file_digest(paths) -> list:
    out = []
    for p in paths:
        h = hashlib.sha256(Path(p).read_bytes()).hexdigest()
        out.append({"path": str(Path(p).resolve()), "sha256": h})
    return out


def _train_segmentation_files(args) -> int:
    import warnings

    from ..io.cgh import UnsortedPositionsWarning, read_annotations, read_profiles
    from ..models.files import TrainedModel, recipe_for_kind, save_model, sequence_features
    recipe = recipe_for_kind("cgh", raw=args.features == "raw")
    seqs = []
    columns = columns_of(args)
    args.profiles = [str(require_file("--profiles", p)) for p in args.profiles]
    args.annotations = [str(require_file("--annotations", p)) for p in args.annotations]
    for path in args.profiles:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UnsortedPositionsWarning)  # sorted on reading; nothing to do
            seqs.extend(read_profiles(path, columns=columns))
    names = [s.name for s in seqs]
    if len(set(names)) != len(names):
        dup = next(n for n in names if names.count(n) > 1)
        raise UsageError(f"sequence {dup!r} appears in more than one --profiles file")
    labels: dict = {}
    for path in args.annotations:
        for lab in read_annotations(path, seqs, unknown_sequences="warn", empty_regions="warn"):
            labels.setdefault(lab.item_id, []).append(lab)
    train = [s for s in seqs if labels.get(s.name)]
    if not train:
        raise UsageError("no annotation matches a sequence of the profiles (annotations name sequences by "
                         "profile.id and chromosome); check that the files belong together")
    _check_annotations_hold(train, labels, args)
    if _wants_recipe(args):
        return _train_cgh_recipe(args, train, labels)
    info(args, f"train: {len(train)} labelled sequences, {sum(len(labels[s.name]) for s in train)} labels, "
               f"learner {args.learner}")
    Xs = [sequence_features(s, recipe) for s in train]
    Ys = [labels[s.name] for s in train]
    model, w, learner = fit_segmentation(Xs, Ys, args=args, label="train")
    from ..models.persistence import labels_hash
    prov = {"learner": args.learner, "learner_params": {"C": args.C, "max_iter": args.max_iter, "seed": args.seed},
            "trained_on": _file_digest(list(args.profiles) + list(args.annotations)),
            "label_hash": labels_hash([lab.as_region_label() if hasattr(lab, "as_region_label") else lab
                                       for y in Ys for lab in y]),
            "n_sequences": len(train), "n_labels": int(sum(len(y) for y in Ys))}
    save_model(args.out, TrainedModel("segmentation", recipe, model, w, prov))
    info(args, f"train: wrote {args.out}")
    return EXIT_OK


def _wants_recipe(args) -> bool:
    """``--recipe``, or by default the penalty-law recipe unless a plain-model option was changed."""
    recipe = getattr(args, "recipe", None)
    if recipe is None:
        return args.learner == "ssvm" and args.metric == "diagonal" and args.features == "hermite"
    return recipe == "penalty-law"


def _close(progress) -> None:
    """Close a bar (once; later calls do nothing), its total shrunk to what was done (a learner may stop early)."""
    if progress.done < progress.total:
        progress.set_total(progress.done)
    progress.close()


def _check_annotations_hold(train, labels, args) -> None:
    """Refuse, before any training, annotations of a sequence that no segmentation satisfies.

    The message names the sequence, the annotation rows as the table states them and the
    minimal segment length when that is what makes them impossible.
    """
    from ..decoders.seg_constraints import constraints_from_labels
    from ..exceptions import DataFormatError, InfeasibleLabelsError
    from ..io.cgh import describe_annotation
    files = ", ".join(str(p) for p in args.annotations)
    for s in train:
        if args.min_size > s.n_samples:
            raise UsageError(f"--min-size {args.min_size} is longer than sequence {s.name} ({s.n_samples} probes); "
                             f"use at most {s.n_samples}")
        try:
            constraints_from_labels(labels[s.name], s.n_samples).check_feasible(args.min_size)
        except InfeasibleLabelsError as exc:
            rows = "; ".join(describe_annotation(lab) for lab in labels[s.name] if lab.id in exc.label_ids)
            alone = len(exc.label_ids) == 1
            fix = (f"lower --min-size (now {args.min_size}) or widen the region" if alone else
                   "remove or correct one of these rows")
            raise DataFormatError(f"the annotations of {s.name} cannot all hold"
                                  + (f" with segments of at least {args.min_size} probes" if alone else "")
                                  + f": {rows}; {fix}", path=files) from None


def _train_cgh_recipe(args, train, labels) -> int:
    """The aCGH recipe (:mod:`marginalia.cgh.recipe`): learned metric + per-platform penalty law + pruning."""
    if args.learner != "ssvm" or args.metric != "diagonal" or args.features != "hermite":
        raise UsageError("--recipe penalty-law learns a diagonal metric by SSVM on its own features; for "
                         "--learner/--metric/--features give --recipe plain")
    Ys = [labels[s.name] for s in train]
    info(args, f"train: {len(train)} labelled sequences, {sum(len(y) for y in Ys)} labels, recipe penalty-law "
               f"({args.metric_learner} metric, then a penalty law per array platform)")
    return _fit_and_save_recipe(args, train, Ys, {"trained_on": _file_digest(list(args.profiles) +
                                                                              list(args.annotations))})


def _fit_and_save_recipe(args, train, Ys, where: dict, groups=None) -> int:
    """Fit :class:`~marginalia.cgh.recipe.CghSegmenter` on ``train`` (Sequences) and write the model file."""
    from ..cgh.change_pruning import SPIKE_THRESHOLD
    from ..cgh.recipe import CANDIDATE_STAGE, CghSegmenter
    from ..cgh.settings import LawSettings, LearningSettings, PruningSettings
    from ..models.files import TrainedModel, save_model
    from ..models.persistence import labels_hash

    spike = getattr(args, "spike_threshold", None)
    spike = SPIKE_THRESHOLD if spike is None else (spike or None)     # 0: no despiking
    margin = getattr(args, "law_margin", None)
    law_margin = {} if margin is None else {"margin": margin}           # none given: the recipe's choice
    progress = make_progress(args, args.max_iter, "train: metric", unit="passes")
    stages: dict = {}

    def stage_progress(stage, done, total):
        """One bar per stage after the metric passes ("penalty laws", "change pruners", "pruner candidates")."""
        if stage not in stages:
            _close(progress)
            for bar in stages.values():
                _close(bar)
            unit = "fits" if stage == CANDIDATE_STAGE else "probes"
            stages[stage] = make_progress(args, total, f"train: {stage}", unit=unit)
        bar = stages[stage]
        bar.advance(done - bar.done)

    try:
        seg = CghSegmenter(
            LearningSettings(learner=args.metric_learner, C=args.C, max_iter=args.max_iter, rho=args.rho,
                             random_state=args.seed),
            law=LawSettings(law_metric=getattr(args, "law_metric", "auto"), **law_margin),
            pruning=PruningSettings(prune=getattr(args, "prune", True),
                                    candidates=getattr(args, "pruner_candidates", "auto"), spike_threshold=spike),
            min_size=args.min_size, callback=lambda _learner, _it: progress.advance(), progress=stage_progress,
            n_jobs=jobs_of(args)).fit(train, Ys, groups=groups)
    finally:
        for bar in [progress, *stages.values()]:
            _close(bar)
    prov = {"learner": "ssvm", "recipe": "penalty-law", "metric_learner": args.metric_learner,
            "learner_params": {"C": args.C, "max_iter": args.max_iter, "seed": args.seed, "min_size": args.min_size,
                               "rho": args.rho, "prune": bool(getattr(args, "prune", True)),
                               "law_metric": getattr(args, "law_metric", "auto"),
                               "law_metric_margin": seg.law.law_metric_margin,
                               "pruner_candidates": getattr(args, "pruner_candidates", "auto"),
                               "law_margin": "auto" if margin is None else margin,
                               "spike_threshold": spike},
            **where,
            "label_hash": labels_hash([lab.as_region_label() if hasattr(lab, "as_region_label") else lab
                                       for y in Ys for lab in y]),
            "n_sequences": len(train), "n_labels": int(sum(len(y) for y in Ys)),
            "penalty_law": seg.to_dict()}
    save_model(args.out, TrainedModel("segmentation", "cgh-pointwise", seg.model_, seg.w_, prov))
    extra = {k: " (+ over-segmentation's changes)" for k, m in seg.pruner_candidates_.items() if m == "union"}
    pruned = ", ".join(f"{k}: {'keeps all' if p.tau_ is None else f'drops changes scoring < {p.tau_:g}'}"
                       f"{extra.get(k, '')}" for k, p in sorted(seg.pruners_.items()))
    decodes = {"learned": "learned metric", "logratio": "plain logratio"}
    laws = ", ".join(f"{k} on the {decodes[seg.law_metrics_[k]]}, margin {seg.laws_[k].margin_:g}"
                     for k in sorted(seg.laws_))
    info(args, f"train: wrote {args.out} (penalty laws: {laws}"
               f"{'; change pruners: ' + pruned if pruned else ''})")
    return EXIT_OK


# ----------------------------------------------------------------- project


def _train_project(args) -> int:
    from ..engine import Engine
    from ..models.files import TrainedModel, recipe_for_kind, save_model, sequence_features
    from ..types import BoundaryLabel, RegionLabel
    require_file("PROJECT", args.project, "project file", stdin=False)
    with Engine.open(args.project, read_only=True) as eng:
        by_kind: dict = {}
        for item in eng.items():
            if item.task != "segmentation" or item.n_labels == 0:
                continue
            by_kind.setdefault(item.kind, []).append(item)
        if not by_kind:
            raise ParameterError(f"project {args.project!r}: no labelled segmentation item; label some regions "
                                 "first (or train an alignment model with --task alignment --pairs)")
        kind = args.kind or max(by_kind, key=lambda k: sum(i.n_labels for i in by_kind[k]))
        items = by_kind.get(kind, [])
        if not items:
            raise ParameterError(f"--kind {kind}: the project has no labelled {kind} item (it has "
                                 f"{sorted(by_kind)})")
        recipe = recipe_for_kind(kind, raw=args.features == "raw")
        seqs, Xs, Ys = [], [], []
        for item in items:
            labs = [lab for lab in eng.labels(item.id) if isinstance(lab, (RegionLabel, BoundaryLabel))]
            if labs:
                seqs.append(eng.sequence(item.id))
                Xs.append(sequence_features(seqs[-1], recipe))
                Ys.append(labs)
        labels_hash = eng.session.labels_hash() if hasattr(eng.session, "labels_hash") else None
    if kind == "cgh" and _wants_recipe(args) and len(seqs) >= 2:
        # aCGH items train the same recipe as the file-level form (metric, penalty laws, change pruning)
        if args.max_iter is None or getattr(args, "_max_iter_defaulted", False):
            args.max_iter = 5
        info(args, f"train: {len(seqs)} labelled {kind} items, {sum(len(y) for y in Ys)} labels, recipe "
                   f"penalty-law ({args.metric_learner} metric, then a penalty law per array platform)")
        from ..cgh.recipe import profile_groups
        groups = profile_groups(seqs, [s.name or str(i) for i, s in enumerate(seqs)])
        return _fit_and_save_recipe(args, seqs, Ys, {"project": str(Path(args.project).resolve())}, groups=groups)
    info(args, f"train: {len(Xs)} labelled {kind} items, {sum(len(y) for y in Ys)} labels, learner {args.learner}")
    model, w, _ = fit_segmentation(Xs, Ys, args=args, label="train")
    prov = {"learner": args.learner, "learner_params": {"C": args.C, "max_iter": args.max_iter, "seed": args.seed},
            "project": str(Path(args.project).resolve()), "label_hash": labels_hash,
            "n_sequences": len(Xs), "n_labels": int(sum(len(y) for y in Ys))}
    save_model(args.out, TrainedModel("segmentation", recipe, model, w, prov))
    info(args, f"train: wrote {args.out}")
    return EXIT_OK
