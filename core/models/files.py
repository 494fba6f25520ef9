"""Model files: what was learned, for which task, on which features (what ``marginalia-cli train`` writes).

The file format is the project's (:mod:`marginalia.models.persistence`: a JSON header
and the arrays in one ``.npz``). The command line adds one provenance entry,
``features = {"recipe": NAME}``, saying how an item's input matrix is made
(:data:`FEATURE_RECIPES`), so ``predict`` computes exactly the features the
model was trained on. The file's SHA-256 identifies the model in batch
markers, so a new model never reuses outputs of an old one.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional

import numpy as np

from ..batch import file_sha256
from ..exceptions import DataFormatError, ParameterError, UsageError, WrongTaskError
from ..text import exception_text, with_article
from ..types import Segmentation, Sequence

__all__ = ["TrainedModel", "load_model", "load_model_cached", "save_model", "FEATURE_RECIPES", "TASKS",
           "sequence_features", "recipe_for_kind"]

TASKS = ("segmentation", "alignment", "sync")
#: how a model's input matrix is made from an item, and which item kind it fits
FEATURE_RECIPES = {
    "cgh-hermite": ("cgh", "aCGH logratio in noise units and its local Hermite moments, shape (T, 6) "
                           "(the app's aCGH features)"),
    "cgh-logratio": ("cgh", "the raw aCGH logratio of each probe, shape (T, 1)"),
    "cgh-pointwise": ("cgh", "aCGH logratio in noise units and its point-wise Hermite functions, shape (T, 6) "
                             "(the input of the aCGH recipe, marginalia.cgh.recipe)"),
    "audio-frames": ("audio", "standardised MFCC (+deltas) and chroma frames of the recording (the app's audio "
                              "features)"),
    "series": ("series", "the values of a generic series as stored, shape (T, p)"),
    "score-aligner": ("audio", "the score aligner's semitone-band chroma and onset chroma of the recording, scored "
                               "against each score event's pitch classes (marginalia.align.ScoreAligner)"),
    "sync-aligner": ("audio", "the score aligner's chroma and onset chroma of both recordings, compared by the learned "
                              "metric of a sync aligner (marginalia.sync.SyncAligner)"),
    "sync-chroma": ("audio", "constant-Q chroma of both recordings, compared by the learned metric of a sync aligner "
                             "(marginalia.sync.SyncAligner)"),
}
#: the feature recipe of the chroma aligner that `train --task alignment` wrote before the score aligner
RETIRED_RECIPES = ("chroma",)


def recipe_for_kind(kind: str, *, raw: bool = False) -> str:
    """The default feature recipe of an item kind (``raw``: the plain logratio for aCGH)."""
    if kind == "cgh":
        return "cgh-logratio" if raw else "cgh-hermite"
    if kind == "audio":
        return "audio-frames"
    return "series"


def sequence_features(seq: Sequence, recipe: str) -> np.ndarray:
    """The model input of ``seq`` for a feature recipe, shape (T, p)."""
    if recipe not in FEATURE_RECIPES:
        raise ParameterError(f"features: unknown recipe {recipe!r}; expected one of {sorted(FEATURE_RECIPES)}")
    kind = FEATURE_RECIPES[recipe][0]
    if seq.kind != kind and not (kind == "series" and seq.kind not in ("cgh", "audio")):
        raise ParameterError(f"{seq.name or 'sequence'}: is {seq.kind!r} data but the model was trained on "
                             f"{kind!r} data ({recipe}); use a model trained on this kind of data")
    if recipe == "cgh-hermite":
        from ..tasks.segmentation import cgh_features
        return cgh_features(seq.values[:, 0])
    if recipe == "cgh-logratio":
        return np.asarray(seq.values[:, :1], dtype=np.float64)
    if recipe == "cgh-pointwise":
        from ..cgh.features import pointwise_hermite_features
        return pointwise_hermite_features(seq.values[:, 0])
    return np.asarray(seq.values, dtype=np.float64)


@dataclass
class TrainedModel:
    """A trained model as read from or written to a model file.

    Attributes
    ----------
    task : {"segmentation", "alignment", "sync"}
    features : str
        Key of :data:`FEATURE_RECIPES`.
    model : object
        The structured model (joint feature map and decoders), or for alignment the
        :class:`~marginalia.align.ScoreAligner` with its options.
    w : ndarray, shape (n_params,)
        The learned parameters (for alignment, the aligner's :meth:`~marginalia.align.ScoreAligner.scorer_weights`).
    provenance : dict
    path : Path or None
    sha256 : str
    """

    task: str
    features: str
    model: object
    w: np.ndarray
    provenance: dict = field(default_factory=dict)
    path: Optional[Path] = None
    sha256: str = ""

    def segment(self, seq: Sequence) -> Segmentation:
        """The model's best segmentation of one sequence (no labels).

        A model trained with the aCGH recipe (provenance ``penalty_law``) scales
        the penalty of each sequence by the learned per-sequence law.
        """
        require_task(self._name(), self.task, "segmentation")
        X = sequence_features(seq, self.features)
        expected = getattr(self.model, "n_features_", X.shape[1])
        if X.shape[1] != expected:
            raise ParameterError(f"{seq.name or 'sequence'}: has {X.shape[1]} features but model {self._name()} "
                                 f"was trained on {expected} ({self.features}); use a model trained on this kind "
                                 "of data")
        law = self.penalty_law()
        if law is not None:
            return law.segment(seq)
        return self.model.decode(X, self.w)

    def predict(self, data):
        """The model's output for one input: a :class:`Segmentation` of a sequence, or the onset time (s) of
        every score event of a loaded recording (see :meth:`segment` and :meth:`align`)."""
        return self.segment(data) if self.task == "segmentation" else self.align(data)

    def penalty_law(self):
        """The fitted :class:`~marginalia.cgh.recipe.CghSegmenter` of a recipe model, else None."""
        spec = self.provenance.get("penalty_law")
        if spec is None:
            return None
        def build():
            from ..cgh.recipe import CghSegmenter
            try:
                return CghSegmenter.from_dict(self.model, self.w, spec)
            except (ParameterError, TypeError, ValueError, KeyError, AttributeError, IndexError, OverflowError,
                    RecursionError) as exc:
                raise DataFormatError(f"unusable penalty law in the model file (field 'provenance.penalty_law': "
                                      f"{exception_text(exc)})",
                                      path=str(self.path) if self.path else None) from None
        return self._once("_penalty_law", build)

    def aligner(self):
        """The trained :class:`~marginalia.align.ScoreAligner` of an alignment model."""
        require_task(self._name(), self.task, "alignment")
        return self._once("_aligner", lambda: self.model.with_scorer_weights(self.w, self.provenance))

    def sync_aligner(self):
        """The :class:`~marginalia.sync.SyncAligner` of a sync model, with its learned metric."""
        require_task(self._name(), self.task, "sync")
        return self._once("_sync", lambda: self.model.with_metric_weights(self.w))

    def align(self, recording) -> np.ndarray:
        """Onset time (s) of every score event of a loaded recording (``audio_path`` and ``score``), shape (E,)."""
        from ..align import align_recording
        return align_recording(recording.audio_path, recording.score, aligner=self.aligner()).event_times_s

    @property
    def fingerprint(self) -> str:
        """What decides a prediction besides the input: the model file and the Marginalia version.

        Batch markers carry it, so outputs are reused only by the same model *and* the same code release.
        """
        from .persistence import library_version
        return f"{self.sha256}:{library_version()}"

    def _name(self) -> str:
        return repr(str(self.path)) if self.path else "(in memory)"

    def _once(self, key: str, build):
        """``build()``, made on the first call and kept on the instance for the later ones."""
        built = self.__dict__.get(key)
        if built is None:
            built = build()
            self.__dict__[key] = built
        return built


def require_task(name: str, got: str, wanted: str, *, needed_by: str = "expected") -> None:
    """Refuse a model of task ``got`` where one of task ``wanted`` is needed, naming the model ``name``.

    Raises
    ------
    WrongTaskError
        ``"model NAME: is a sync model; expected an alignment model"`` (``needed_by`` replaces ``expected``).
    """
    if got != wanted:
        raise WrongTaskError(f"model {name}: is {with_article(got)} model; {needed_by} {with_article(wanted)} model")


def save_model(path, cli_model) -> str:
    """Write a model file (atomically) that ``marginalia-cli predict`` and :func:`load_model` read.

    Parameters
    ----------
    path : path-like
        The file to write; its folder must exist.
    cli_model : TrainedModel, CghSegmenter, ScoreAligner or SyncAligner
        A loaded or trained model, a fitted copy-number recipe, a fitted score aligner or a fitted
        sync aligner.

    Returns
    -------
    str
        The file's SHA-256 (what batch runs record to tell models apart).
    """
    from .persistence import save_model_parts as _save
    if not isinstance(cli_model, TrainedModel):
        cli_model = _learner_as_trained_model(cli_model)
    prov = dict(cli_model.provenance)
    prov["features"] = dict(prov.get("features") or {}, recipe=cli_model.features)
    prov.setdefault("written_by", "marginalia-cli")
    path = Path(path)
    if path.parent and not path.parent.exists():
        raise ParameterError(f"--out {str(path)!r}: folder {str(path.parent)!r} does not exist; create it first")
    _save(str(path), cli_model.model, cli_model.w, prov)
    return file_sha256(path)


def _learner_as_trained_model(recipe) -> TrainedModel:
    from ..align import ScoreAligner
    from ..cgh.recipe import CghSegmenter
    from ..sync import SyncAligner
    if isinstance(recipe, SyncAligner):
        recipe.check_fitted()
        prov = {"learner": {"class": "WarpingFrankWolfe", "C": recipe.C, "loss": recipe.loss,
                            "max_iter": recipe.max_iter}, "written_by": "marginalia (Python)"}
        return TrainedModel("sync", f"sync-{recipe.features}", recipe, recipe.metric_weights(), prov)
    if isinstance(recipe, ScoreAligner):
        recipe.check_fitted()
        prov = {**getattr(recipe, "provenance_", {}), "written_by": "marginalia (Python)"}
        return TrainedModel("alignment", "score-aligner", recipe, recipe.scorer_weights(), prov)
    if not isinstance(recipe, CghSegmenter):
        raise ParameterError(f"model: expected a TrainedModel, a fitted CghSegmenter, ScoreAligner or SyncAligner, got "
                             f"{type(recipe).__name__}")
    prov = {"learner": recipe.learning.learner, "recipe": "penalty-law", "penalty_law": recipe.to_dict(),
            "written_by": "marginalia (Python)"}
    return TrainedModel("segmentation", "cgh-pointwise", recipe.model_, recipe.w_, prov)


def load_model(path, *, task: Optional[str] = None) -> TrainedModel:
    """Read a model file.

    Parameters
    ----------
    path : path-like
    task : {"segmentation", "alignment", "sync"}, optional
        Refuse a model of another task (:class:`WrongTaskError`, a usage error).

    Raises
    ------
    DataFormatError
        Missing or unreadable file, not a Marginalia model, newer format.
    WrongTaskError
        The model is for another task.
    """
    from .persistence import load_model_parts as _load
    p = Path(path)
    if p.is_dir():
        raise UsageError(f"model {str(p)!r} is a folder, not a model file")
    if not p.is_file():   # a wrong path on the command line: a usage error (exit 2) like any missing input
        raise UsageError(f"model {str(p)!r}: no such model file; train one with `marginalia-cli train`")
    with open(p, "rb") as fh:
        if fh.read(4) != b"PK\x03\x04":
            raise DataFormatError("not a Marginalia model file (expected the .npz archive written by "
                                  "`marginalia-cli train`)", path=str(p))
    _refuse_retired(p)
    model, w, prov = _load(str(p))
    got = _header_task(p)
    if got not in TASKS:
        raise DataFormatError(f"unknown task {got!r}; expected one of {list(TASKS)}", path=str(p))
    if task is not None:
        require_task(repr(str(p)), got, task, needed_by="this command needs")
    made_with = prov.get("features")
    recipe = made_with.get("recipe") if isinstance(made_with, dict) else None
    if recipe is None:
        # a model saved by the app: its task key says which items it was made for
        kind = str(prov.get("task", "")).partition("/")[2] or "series"
        recipe = ("score-aligner" if got == "alignment" else f"sync-{model.features}" if got == "sync"
                  else recipe_for_kind(kind))
    if not isinstance(recipe, str) or recipe not in FEATURE_RECIPES:
        raise DataFormatError(f"unknown feature recipe {recipe!r:.60}; expected one of {sorted(FEATURE_RECIPES)} "
                              "(a model from a newer Marginalia?)", path=str(p))
    # an absolute path: workers of a remote cluster may run in another folder
    loaded = TrainedModel(task=got, features=recipe, model=model, w=w, provenance=prov, path=p.resolve(),
                      sha256=file_sha256(p))
    loaded.penalty_law()  # a damaged law is refused now, not on the first sequence
    return loaded


def _header(path: Path) -> dict:
    """A model file's JSON header (read within the same bounds as by the loader; not yet checked)."""
    from ..validation import read_model_archive
    header = read_model_archive(str(path), str(path))[0]
    return header if isinstance(header, dict) else {}


def _header_task(path: Path) -> Optional[str]:
    return _header(path).get("task")


def model_file_task(path) -> Optional[str]:
    """The task a model file says it is for, or None (not a readable model file: its loader says why)."""
    p = Path(path)
    try:
        with open(p, "rb") as fh:
            if fh.read(4) != b"PK\x03\x04":
                return None
        task = _header_task(p)
    except (OSError, DataFormatError):
        return None
    return task if isinstance(task, str) else None


def _refuse_retired(path: Path) -> None:
    """Refuse a model of the chroma aligner that `train --task alignment` wrote before the score aligner."""
    header = _header(path)
    prov = header.get("provenance")
    made_with = prov.get("features") if isinstance(prov, dict) else None
    recipe = made_with.get("recipe") if isinstance(made_with, dict) else None
    if header.get("model_class") == "AlignmentModel" or recipe in RETIRED_RECIPES:
        raise DataFormatError("an alignment model of the retired chroma aligner, which this version no longer "
                              "runs; retrain it with this version: marginalia-cli train --task alignment --pairs "
                              "PAIRS.csv --out MODEL", path=str(path))


_cache: dict = {}
_cache_lock = threading.Lock()


def load_model_cached(path, sha256: str, *, task: Optional[str] = None) -> TrainedModel:
    """:func:`load_model` once per process and file content (checked against ``sha256``)."""
    key = (str(Path(path).resolve()), sha256)
    with _cache_lock:
        model = _cache.get(key)
    if model is None:
        model = load_model(path)
        if model.sha256 != sha256:
            raise DataFormatError("the model file changed while the batch was running; run it again",
                                  path=str(path))
        with _cache_lock:
            _cache.clear()
            _cache[key] = model
    if task is not None:
        require_task(repr(str(path)), model.task, task, needed_by="this command needs")
    return model

