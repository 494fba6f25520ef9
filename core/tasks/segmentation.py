"""Segmentation of aCGH profiles, audio and series: the engine's change-point task.

Features: for aCGH the logratio in noise units and its point-wise Hermite
functions (Lajugie 2015, §4.4.2; the inputs of the aCGH recipe,
:func:`~marginalia.cgh.recipe.fit_cgh_recipe`), for audio and series the
item's feature frames. The model is a
:class:`~marginalia.models.segmentation.SegmentationModel` with a learned diagonal
metric and penalty; interactive updates are averaged perceptron steps (Lou
et al. 2014, Alg. 1.2). A full retrain fits a warm-started SSVM on every labelled item;
for aCGH, once enough chromosomes are labelled, it fits the recipe instead:
the metric plus a per-platform law giving each chromosome its own penalty
from its length, noise and change-count thresholds, and a learned rule that
drops weak changes (:class:`~marginalia.cgh.change_pruning.ChangePruner`); the
redraws then use both, except where a label needs a dropped change.
"""

from __future__ import annotations

import io
import json
import os
import warnings

import numpy as np

# the decoders package is imported here (count_runner_up imports it), while the engine's task registry
# holds its lock: imported lazily from two threads at once (a worker's first prediction, the GUI thread's
# first label check) its circular package imports can meet half-initialised modules
from ..active.count_runner_up import segment_count_runner_up
from ..active.parts import Part, make_parts
from ..active.segmentation_adapter import segmentation_part_pair, segmentation_part_scores
from ..active.uncertainty import PartScores, uncertainty_from_scores
from ..cgh.features import pointwise_hermite_features
from ..cgh.recipe import CANDIDATE_STAGE, CghSegmenter, profile_groups
from ..exceptions import InfeasibleLabelsError, ParameterError
from ..features.hermite import hermite_features, robust_noise_scale
from ..learners.perceptron import StructuredPerceptron
from ..learners.ssvm import SSVM
from ..models.segmentation import PenaltyScaledModel, SegmentationModel
from ..types import BoundaryLabel, Prediction, RegionKind, RegionLabel
from .base import EngineTask, check_cancel, conflict_in_user_terms

__all__ = ["SegmentationTask", "cgh_features"]

#: parts longer than this many samples are cut into windows for active learning
PART_WINDOW = {"cgh": None, "audio": 1000, "series": 2000}
#: labelled aCGH chromosomes from which a full retrain fits the per-platform penalty laws
RECIPE_MIN_ITEMS = 8
#: names the aCGH input matrix, so a model saved for other inputs is not reused on these
CGH_INPUTS = "logratio+pointwise-hermite/1"


def cgh_features(logratio: np.ndarray) -> np.ndarray:
    """Raw logratio (in noise units) and its local Hermite moments, shape (T, 6)."""
    x = np.asarray(logratio, dtype=np.float64).reshape(-1)
    scale = robust_noise_scale(x) if x.shape[0] > 2 else 1.0
    scale = scale if np.isfinite(scale) and scale > 0 else 1.0
    center = float(np.median(x))
    herm = hermite_features(x, orders=(0, 1, 2, 3, 4), half_width=2, center=center, scale=scale)
    return np.hstack([((x - center) / scale)[:, None], herm])


#: before any label, an audio segmentation proposes segments this long (seconds) on average, or longer
UNTRAINED_SEGMENT_S = 2.0


class SegmentationTask(EngineTask):
    """Change points of the items of one kind."""

    name = "segmentation"
    #: the stopping signal rescores labelled chromosomes without their labels (a warm local search)
    stopping_without_labels = True
    #: part scores share only locked caches (features, the warm segmenter) and per-item penalty factors
    concurrent_part_scores = True

    def __init__(self, engine, kind: str):
        super().__init__(engine, kind)
        # aCGH segments shorter than 3 probes are noise far more often than biology (the recipe's setting)
        self.model = SegmentationModel(metric="diagonal", loss="frobenius", partial_loss="completion",
                                       min_size=3 if kind == "cgh" else 1)
        self._learner = None
        #: the fitted aCGH recipe whose penalty laws give each chromosome its penalty (None before)
        self.recipe = None
        self._factors: dict = {}
        self._coupling = None          # the coupling of the fit being committed (recorded with the model)

    # --------------------------------------------------------------- features
    def _compute_features(self, data) -> np.ndarray:
        if self.kind == "cgh":
            return pointwise_hermite_features(data.sequence.values[:, 0])
        return np.array(data.sequence.values, dtype=np.float64)

    # ------------------------------------------------------------ model state
    def ensure_model(self):
        """The online learner holding the current parameters (restored, or built on first use)."""
        with self._lock:
            if self._learner is not None:
                return self._learner
            self._learner = StructuredPerceptron(self.model, averaged=True, step="pa", C=1.0)
            if not self._restore_latest():
                Xs = [self.features(i) for i in self.item_ids()]
                if not Xs:
                    raise ParameterError(f"{self.key}: no items to build a model on")
                self.model.fit_scales(Xs)
                ids = self.item_ids()
                w0 = self._raw_logratio_start() if self.kind == "cgh" else self._untrained_start(ids, Xs)
                self._learner._start(w0)
                self._commit_model("initial")
            return self._learner

    def _raw_logratio_start(self) -> np.ndarray:
        """Before any label: optimal partitioning of the raw logratio with a BIC-like penalty.

        The Hermite columns start at weight 0; labels teach the model how much
        they help. The penalty factor is relative to the model's unit
        ``2 p · log T`` (p = 6 features), so 1/p gives the BIC-like ``2 log T``
        of a 1-d signal in noise units.
        """
        p = self.model._p()
        B = np.zeros(p)
        B[0] = 1.0
        return self.model.join_w(B, 1.0 / p)

    def _untrained_start(self, ids, Xs) -> np.ndarray:
        """Before any label on a recording: the default metric with a penalty sized for phrases, not frames.

        The model's units take the noise of each feature from first differences, which assumes independent
        noise between samples. Audio frames overlap and the deltas are smoothed over neighbouring frames, so
        first differences see a small fraction of the spread within a segment and the BIC-like unit penalty
        puts a change every few frames. Without labels to learn from, the penalty factor is instead the
        smallest power of two whose segmentation of the task's first recordings has segments of at least
        :data:`UNTRAINED_SEGMENT_S` seconds on average; labels then move it like any other weight.
        """
        w = self.model.default_w()
        lengths = []
        for item_id, X in list(zip(ids, Xs))[:3]:
            times = np.asarray(self.engine.data(item_id).sequence.positions, dtype=np.float64)
            step = float(np.median(np.diff(times))) if times.size > 1 else 0.0
            if step > 0:
                lengths.append((X, UNTRAINED_SEGMENT_S / step))
        if not lengths:
            return w

        def long_enough(k: int) -> bool:
            wk = self.model.scale_penalty(w, 2.0 ** k)
            return all(X.shape[0] / len(self.model.decode(X, wk).changes) >= frames for X, frames in lengths)

        lo, hi = 0, 20     # 2^20: a change only where the features jump by hundreds of noise units
        if long_enough(lo):
            return w
        while hi - lo > 1:
            mid = (lo + hi) // 2
            lo, hi = (lo, mid) if long_enough(mid) else (mid, hi)
        return self.model.scale_penalty(w, 2.0 ** hi)

    def _params(self) -> dict:
        params = super()._params()
        if self.kind == "cgh":
            params["inputs"] = CGH_INPUTS
        if self._coupling is not None:
            params["rho"] = float(self._coupling)
        return params

    def _state_arrays(self) -> dict:
        arrays = dict(self.model.get_state(), w=self._learner.w_)
        if self.recipe is not None:
            # the laws' own parameters: their change-count thresholds are measured under the fitted w
            arrays["recipe"] = np.array(json.dumps(self.recipe.to_dict()))
            arrays["recipe_w"] = np.asarray(self.recipe.w_, dtype=np.float64)
        return arrays

    def _restore_arrays(self, arrays: dict, params: dict) -> None:
        if params.get("task") != self.key:
            raise ParameterError("model for another task")
        if self.kind == "cgh" and params.get("inputs") != CGH_INPUTS:
            raise ParameterError(f"model for other aCGH inputs ({params.get('inputs')!r}, not {CGH_INPUTS!r})")
        w = np.asarray(arrays["w"], dtype=np.float64)
        self.model.set_state(arrays, n_features=np.asarray(arrays["feature_scale"]).shape[0])
        recipe = None
        if "recipe" in arrays:
            recipe = CghSegmenter.from_dict(self.model, np.asarray(arrays["recipe_w"], dtype=np.float64),
                                            json.loads(str(arrays["recipe"])))
        self._learner._start(self.model.check_w(w))
        self.recipe, self._factors = recipe, {}

    @property
    def w(self) -> np.ndarray:
        return self.ensure_model().w_

    # ----------------------------------------------------------------- labels
    def validate_label(self, label, pending=()) -> None:
        """Refuse a label that is out of range or contradicts the item's labels (and ``pending`` new ones)."""
        if not isinstance(label, (RegionLabel, BoundaryLabel)):
            raise ParameterError(f"a segmentation item takes region or boundary labels, got {type(label).__name__}")
        T = self.features(label.item_id).shape[0]
        end = label.stop if isinstance(label, RegionLabel) else label.index + 1
        if end > T:
            raise ParameterError(f"label reaches sample {end - 1} but the item has {T} samples (0..{T - 1})")
        others = [lab for lab in list(self.labels_of(label.item_id)) + list(pending)
                  if lab.id != label.id and lab.item_id == label.item_id]
        shortest = 1
        try:
            cons = self.model.constraints(others + [label], T)  # raises InfeasibleLabelsError naming the conflict
            if cons is not None:
                shortest = self.model.min_size
                cons.check_feasible(shortest)  # and with the decoder's shortest segment
        except InfeasibleLabelsError as exc:
            seq = self.engine.sequence(label.item_id)
            unit = {"bp": "probes", "s": "frames"}.get(seq.units, "samples")
            why = f" with segments of at least {shortest} {unit}" if shortest > 1 else ""
            raise conflict_in_user_terms(exc, others + [label], label, seq, why=why) from None


    def labels_from_prediction(self, item_id, pred, start, stop) -> list:
        """Boundary labels at the predicted changes in ``[start, stop)`` and "same segment" regions between
        them, leaving out those the item already holds (accepting twice adds nothing)."""
        seg = pred.structure
        changes = [int(c) for c in seg.breakpoints if start < c < stop]
        out = [BoundaryLabel(item_id=item_id, index=c) for c in changes]
        lo = start
        for c in changes + [stop]:
            if c - lo >= 2:
                out.append(RegionLabel(item_id=item_id, start=lo, stop=c, kind=RegionKind.SAME))
            lo = c
        held = {_label_key(lab) for lab in self.labels_of(item_id)}
        return [lab for lab in out if _label_key(lab) not in held]

    # --------------------------------------------------------------- learning
    def update(self, item_id: str, *, cancel=None) -> str:
        """One passive-aggressive perceptron step on the item's labels (no-op when the model already obeys them).

        With a fitted aCGH recipe the step is taken as the item sees the model (its
        penalty scaled by its law's offset), so a chromosome whose redraw already
        obeys its labels does not move the shared parameters. A chromosome whose law
        decodes with parameters of its own (the plain logratio) takes no step: its
        redraw obeys its labels through the constraints, and the next retrain learns
        from them.
        """
        learner = self.ensure_model()
        labels = self.labels_of(item_id)
        with self._lock:
            check_cancel(cancel)
            recalled = self._recall()     # a label set seen before (undo, redo) gets its model back
            if recalled is not None:
                return recalled
            if labels and not self._own_law_w(item_id):
                factor = self._penalty_factor(item_id)
                if factor == 1.0:
                    learner.partial_fit(self.features(item_id), labels)
                else:
                    learner.model = PenaltyScaledModel(self.model, factor)
                    try:
                        learner.partial_fit(self.features(item_id), labels)
                    finally:
                        learner.model = self.model
            return self._commit_model("perceptron")

    def fit(self, *, cancel=None, progress=None) -> str:
        """A full fit on every labelled item; the perceptron then continues from its solution.

        aCGH with at least :data:`RECIPE_MIN_ITEMS` labelled chromosomes: the
        recipe (metric + per-platform penalty laws); otherwise a warm-started SSVM.
        """
        learner = self.ensure_model()
        ids = [i for i in self.item_ids() if self.labels_of(i)]
        if not ids:
            return self.model_id
        prior = self._prior()
        if prior is not None:
            return self._fit_coupled(ids, prior, cancel, progress)
        if self.kind == "cgh" and len(ids) >= RECIPE_MIN_ITEMS:
            return self._fit_recipe(ids, cancel, progress)
        Xs = [self.features(i) for i in ids]
        labels = [self.labels_of(i) for i in ids]
        check_cancel(cancel)
        ssvm = SSVM(self.model, C=1.0, max_iter=50, warm_start=True, random_state=0,
                    should_stop=(lambda: cancel is not None and cancel.is_set()),
                    callback=_progress_callback(progress))
        ssvm.w_ = learner.w_.copy()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)  # "a single labelled sequence" is expected early on
            ssvm.fit(Xs, labels)
        check_cancel(cancel)
        with self._lock:
            learner._start(ssvm.w_)
            self.recipe, self._factors = None, {}
            return self._commit_model("ssvm")

    # ------------------------------------------------------------ prior model
    def _prior(self):
        """``(arrays, rho, source data blob or None)`` of the task's stored prior (:meth:`Engine.start_from`), or None."""
        entry = self.engine.prior(task_key=self.key)
        if entry is None:
            return None
        rec = self.engine.session.load_model(entry["model_id"])
        data = self.engine.session.load_model(entry["data_id"]).blob if entry.get("data_id") else None
        return self._arrays_of_file(rec.blob), float(entry.get("rho", 1.0)), data

    def _arrays_of_file(self, blob) -> dict:
        """The task's arrays of a model file's bytes (units, ``w`` and a recipe's penalty laws)."""
        from ..models.persistence import from_bytes
        model, w, prov = from_bytes(blob, task="segmentation")
        arrays = dict(model.get_state(), w=np.asarray(w, dtype=np.float64))
        if prov.get("penalty_law") is not None:
            arrays["recipe"] = np.array(json.dumps(prov["penalty_law"]))
            arrays["recipe_w"] = arrays["w"].copy()
        return arrays

    def _fit_coupled(self, ids, prior, cancel, progress) -> str:
        """The project's labels coupled to the prior model (Lou et al. eq. 1.9, source frozen; see marginalia.prior).

        The fit is in the prior's units (its feature and penalty scales) and regularised towards
        ``(ρ/2) C' w_prior``, which decodes as ``w_prior`` does; ``ρ = 0`` is the target-only SSVM
        from the prior's parameters. The prior's penalty laws are not refitted (the parameters the
        labels move are the metric and the base penalty).
        """
        from ..prior import coupled_ssvm_settings
        arrays, rho, data = prior
        w_prior = np.asarray(arrays["w"], dtype=np.float64)
        self.model.set_state(arrays, n_features=np.asarray(arrays["feature_scale"]).shape[0])
        Xs = [self.features(i) for i in ids]
        labels = [self.labels_of(i) for i in ids]
        check_cancel(cancel)
        if data is not None:
            return self._fit_with_source(Xs, labels, data, w_prior, rho, cancel, progress)
        if rho > 0:
            C, centre = coupled_ssvm_settings(w_prior, rho, C=1.0)
            center = "initial"
        else:
            C, centre, center = 1.0, w_prior, "zero"
        ssvm = SSVM(self.model, C=C, max_iter=50, warm_start=True, random_state=0, center=center,
                    should_stop=(lambda: cancel is not None and cancel.is_set()),
                    callback=_progress_callback(progress))
        ssvm.w_ = self.model.check_w(centre)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)
            ssvm.fit(Xs, labels)
        check_cancel(cancel)
        return self._commit_coupled(ssvm.w_, rho)

    def _fit_with_source(self, Xs, labels, data, w_prior, rho, cancel, progress) -> str:
        """Eq. 1.9 itself: the source project's labelled items and this project's as two coupled datasets.

        :class:`~marginalia.learners.transfer.TransferSSVM` in the prior's units, started from its
        parameters (which complete the partial labels); the project decodes with its own vector.
        """
        from ..learners.transfer import TransferSSVM
        from ..prior import unpack_source_data
        src_X, src_labels = unpack_source_data(data)
        learner = TransferSSVM(self.model, rho=rho, C=1.0, max_iter=50, random_state=0,
                               should_stop=(lambda: cancel is not None and cancel.is_set()),
                               callback=_progress_callback(progress))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)
            learner.fit(src_X + Xs, src_labels + labels, ["source"] * len(src_X) + ["project"] * len(Xs),
                        w_init=w_prior)
        check_cancel(cancel)
        return self._commit_coupled(learner.w_datasets_["project"], rho)

    def _commit_coupled(self, w, rho) -> str:
        """Make ``w``, fitted coupled to the prior with strength ``rho``, the task's model (a "coupled" version)."""
        with self._lock:
            self._learner._start(w)
            self.recipe, self._factors = None, {}
            self._coupling = rho
            try:
                return self._commit_model("coupled")
            finally:
                self._coupling = None

    # ------------------------------------------------- figures on the labels
    def label_errors_of_version(self, model_id, *, cancel=None):
        """:meth:`label_errors` of the stored model version ``model_id`` (None when it cannot be read)."""
        if model_id is None:
            return None
        try:
            rec = self.engine.session.load_model(model_id)
            with np.load(io.BytesIO(rec.blob)) as z:
                arrays = {k: z[k] for k in z.files}
        except (ParameterError, ValueError, OSError, KeyError):
            return None
        return self.label_errors(arrays, model_id, cancel=cancel)

    def label_errors_of_file(self, blob, key, *, cancel=None):
        """:meth:`label_errors` of a model file's bytes (the stored prior), remembered under ``key``."""
        return self.label_errors(self._arrays_of_file(blob), key, cancel=cancel)

    def label_errors(self, arrays, key, *, cancel=None):
        """Label errors of the model ``arrays`` on every labelled region of the task, or None.

        Each labelled item is decoded without its labels, as the model draws it (a recipe's penalty
        factor and pruning included), and scored by :func:`marginalia.metrics.region_errors`;
        remembered per ``key`` and label set.

        Returns
        -------
        dict or None
            ``{"errors", "fp", "fn", "n_regions"}`` summed over the items.
        """
        from ..metrics import RegionErrors, region_errors
        ids = [i for i in self.item_ids() if self.labels_of(i)]
        memo_key = (key, self.engine.session.labels_hash(ids))
        hit = self._recall_figures(memo_key)
        if hit is not None:
            return hit
        try:
            model = SegmentationModel(**self.model.get_params())
            model.set_state(arrays, n_features=np.asarray(arrays["feature_scale"]).shape[0])
            w = model.check_w(np.asarray(arrays["w"], dtype=np.float64))
            recipe = None
            if "recipe" in arrays:
                recipe_w = np.asarray(arrays.get("recipe_w", arrays["w"]), dtype=np.float64)
                recipe = CghSegmenter.from_dict(model, recipe_w, json.loads(str(arrays["recipe"])))
        except (KeyError, ValueError, TypeError, ParameterError):
            return None
        total = RegionErrors()
        for item_id in ids:
            check_cancel(cancel)
            X = self.features(item_id)
            if X.shape[1] != model._p():
                return None
            w_item = w
            seq = None
            if recipe is not None:
                seq = self.engine.data(item_id).sequence
                own = recipe.own_w(seq)
                w_item = model.scale_penalty(w if own is None else own, recipe.penalty_factor(seq))
            seg = model.decode(X, w_item)
            if recipe is not None and getattr(recipe, "pruners_", None):
                seg = recipe.pruned(seq, seg)
            total = total + region_errors(self.labels_of(item_id), seg)
        return self._remember_figures(memo_key, {"errors": total.errors, "fp": total.fp, "fn": total.fn,
                                                 "n_regions": total.n_labels})

    def _fit_recipe(self, ids, cancel, progress) -> str:
        """Fit the aCGH recipe on the labelled chromosomes and adopt its units, metric and laws."""
        seqs = [self.engine.data(i).sequence for i in ids]
        labels = [self.labels_of(i) for i in ids]
        groups = profile_groups(seqs, ids)
        check_cancel(cancel)

        def on_pass(learner, iteration):
            check_cancel(cancel)
            if progress is not None:
                done, total = int(iteration) + 1, int(learner.max_iter)
                progress(done, total + 1, f"metric: {done} of {total} passes done")

        def on_sequence(stage, done, total):
            if progress is not None:
                what = "of the pruner fits" if stage == CANDIDATE_STAGE else "of the probes"
                progress(done, total, f"{stage}: {100 * done // max(total, 1)} % {what}")

        recipe = CghSegmenter(min_size=self.model.min_size, prune=True, callback=on_pass,
                              should_stop=None if cancel is None else cancel.is_set, progress=on_sequence,
                              n_jobs=os.cpu_count() or 1)
        if progress is not None:
            progress(0, recipe.learning.max_iter + 1, f"metric: learning from {len(ids)} labelled chromosomes")
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)
            recipe.fit(seqs, labels, groups=groups)
        recipe.callback = recipe.should_stop = recipe.progress = None   # the task keeps the recipe: drop the job's hooks
        check_cancel(cancel)
        if progress is not None:
            progress(1, 1, "recipe fitted")
        with self._lock:
            self.model.set_state(recipe.model_.get_state(), n_features=self.model._p())
            self._learner._start(recipe.w_)
            self.recipe, self._factors = recipe, {}
            return self._commit_model("cgh-recipe")

    def _law_params(self, item_id: str) -> tuple:
        """``(penalty factor, the law's own w or None)`` of an item under the fitted recipe, ``(1.0, None)`` without one.

        Computed once per fitted recipe (see ``CghSegmenter.penalty_factor`` and ``own_w``),
        while perceptron steps between two retrains move the shared ``w``.
        """
        if self.recipe is None:
            return 1.0, None
        hit = self._factors.get(item_id)
        if hit is None:
            sequence = self.engine.data(item_id).sequence
            hit = (self.recipe.penalty_factor(sequence), self.recipe.own_w(sequence))
            self._factors[item_id] = hit
        return hit

    def _penalty_factor(self, item_id: str) -> float:
        """The item's penalty factor under the fitted recipe (1 without one)."""
        return self._law_params(item_id)[0]

    def _own_law_w(self, item_id: str) -> bool:
        """True when the fitted recipe decodes the item with its law's own parameters, not the shared ``w``."""
        return self._law_params(item_id)[1] is not None

    def item_w(self, item_id: str, w: np.ndarray) -> np.ndarray:
        """Parameters for one item: ``w`` (or its law's own) with its penalty times its penalty factor."""
        factor, own = self._law_params(item_id)
        return self.model.scale_penalty(w if own is None else own, factor)

    # ------------------------------------------------------------- prediction
    def predict(self, item_id: str, *, cancel=None) -> Prediction:
        learner = self.ensure_model()
        X = self.features(item_id)
        labels = self.labels_of(item_id)
        with self._lock:
            w = learner.w_.copy()
            model_id = self.model_id
        w = self.item_w(item_id, w)
        cons = self.model.constraints(labels, X.shape[0])
        check_cancel(cancel)
        (best, s_best), runner = self._second_best(X, w, cons)
        second, s_second = runner if runner is not None else (None, None)
        scale = self._scale(w)
        scores = PartScores(best=s_best, second=s_second, size=X.shape[0], scale=scale)
        window = PART_WINDOW.get(self.kind)
        if window is None or X.shape[0] <= window:
            # the item is one query part: its margin is the part's, as the queue computes it, so the queue,
            # the plot and the browser show one number
            scores = self.part_scores(Part(item_id, 0, X.shape[0]))
        # in change penalties, the unit of the queue's and the browser's margins (exp(-margin) = uncertainty)
        margin = float("inf") if scores.second is None else max(scores.best - scores.second, 0.0) / scores.scale
        self._uncertainty[item_id] = uncertainty_from_scores(scores, "best-vs-2nd")
        pruned = self._pruned(item_id, best, labels)
        if pruned != best:
            # the drawn structure is the recipe's pruned one; the decoder's optimum, with the weak changes
            # the pruning rule dropped, is the alternative a user can accept as the runner-up
            return Prediction(item_id=item_id, structure=pruned, model_id=model_id,
                              score=float(w @ self.model.joint_feature(X, pruned)), runner_up=best, margin=margin)
        return Prediction(item_id=item_id, structure=best, model_id=model_id, score=s_best, runner_up=second,
                          margin=margin)

    def _pruned(self, item_id: str, seg, labels):
        """The recipe's pruned prediction from ``seg`` (the labelled best), obeying the labels.

        An over-segmentation's change the rule keeps may contradict a label (a change in a
        "no change" region): then the rule prunes ``seg``'s own changes only, and ``seg``
        itself is drawn when even that drops a change the labels need.
        """
        if self.recipe is None or not getattr(self.recipe, "pruners_", None):
            return seg
        sequence = self.engine.data(item_id).sequence
        pruned = self.recipe.pruned(sequence, seg)
        if labels and self.model.violations(labels, pruned):
            pruned = self.recipe.pruned(sequence, seg, extra_candidates=False)
            if self.model.violations(labels, pruned):
                return seg
        return pruned

    def _second_best(self, X, w, cons):
        """``((best, score), (runner-up, score) or None)`` under ``w`` and the label constraints.

        The runner-up is the best structure with one change more or fewer (what a
        region label would decide; :func:`~marginalia.active.count_runner_up.segment_count_runner_up`),
        not the best with a change shifted by a sample, so the margin says how close the
        item is to a different answer. The decoder's costs are the model's scores negated
        (``⟨w, φ(X, y)⟩`` is minus the penalised scatter under the same metric and
        penalty), so they are used directly rather than recomputed from the data.
        """
        metric, pen = self.model.decoder_metric(w, X.shape[0])
        best, second = segment_count_runner_up(X, pen, metric=metric, min_size=self.model.min_size, constraints=cons)
        return ((best.segmentation, -float(best.cost)),
                None if second is None else (second.segmentation, -float(second.cost)))

    def _scale(self, w) -> float:
        pen = float(self.model.penalty(w))
        return max(pen, 1e-9 * max(1.0, float(np.abs(w).max())))

    # -------------------------------------------------------- active learning
    def parts(self) -> list:
        out = []
        window = PART_WINDOW.get(self.kind)
        for item_id in self.item_ids():
            T = int((self.engine.session.item(item_id).meta or {}).get("n_samples") or self.features(item_id).shape[0])
            out.extend(make_parts(item_id, T, kind="chromosome", window=window))
        return out

    def part_scores(self, part) -> PartScores:
        """Best, runner-up and worst-proxy scores of a part (see ``segmentation_part_scores``)."""
        w = self.item_w(part.item_id, self.ensure_model().w_)
        return segmentation_part_scores(self.model, w, self.features(part.item_id), part,
                                        self.labels_of(part.item_id))


    def question(self, query):
        """The question telling the part's best segmentation from its runner-up, or None when it has none.

        The part is decoded as its query score decodes it, so the question's margin is the queue's.
        """
        from ..active.questions import segmentation_question
        w = self.item_w(query.item_id, self.ensure_model().w_)
        part = Part(query.item_id, query.start, query.stop)
        best, runner, margin = segmentation_part_pair(self.model, w, self.features(query.item_id), part,
                                                      self.labels_of(query.item_id))
        if runner is None:
            return None
        seq = self.engine.sequence(query.item_id)
        return segmentation_question(query, best, runner, margin, positions=seq.positions, units=seq.units,
                                     item_name=self.engine.session.item(query.item_id).name)


def _progress_callback(progress):
    """Adapt ``progress(done, total, message)`` to the SSVM's per-pass callback."""
    if progress is None:
        return None

    def callback(learner, iteration):
        progress(int(iteration) + 1, int(learner.max_iter), f"SSVM pass {int(iteration) + 1}")
    return callback


def _label_key(label) -> tuple:
    """What a boundary or region label says, without its id and time stamp."""
    if isinstance(label, BoundaryLabel):
        return ("boundary", int(label.index))
    if isinstance(label, RegionLabel):
        return ("region", int(label.start), int(label.stop), RegionKind(label.kind))
    return ("other", getattr(label, "id", None))
