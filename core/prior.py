"""A prior model: what another project or a model file learned, as the start of this project's model.

"Model ▸ Start from another project or model file…" reads a model (a file written by
``marginalia-cli train`` or the app's model export, or the current model of another project),
checks it with the one model-file loader (:func:`marginalia.models.files.load_model`), and stores
its bytes *inside* the project with where they came from, so the project keeps its prior when the
source file moves or goes away.

The project's first predictions are the prior's. A retrain then couples the project's labels to
it: Lou et al. (2014, eq. 1.9) with two datasets, the source (its parameters ``w_s``) and this
project (``w_t``), minimises ``Σ_d ‖w_d‖²/(2C) + ρ/2 Σ_d ‖w_d − w̄‖² + Σ_n H_n(w_d)`` with
``w̄ = (w_s + w_t)/2``.

* From another project whose labelled items can be read (their data files are where the project
  says, and they hold at most :data:`SOURCE_SAMPLES_MAX` samples), the source's features and labels are
  stored in the project too, and the retrain is that objective itself:
  :class:`~marginalia.learners.transfer.TransferSSVM` over both datasets, in the prior's units and
  started from its parameters; the project decodes with ``w_t``.
* From a model file (or a project whose data cannot be read), the source has no labels here, so
  ``w_s`` stays frozen at the prior's parameters ``p``; the coupling term is then ``ρ/4 ‖w_t − p‖²``
  and completing the square gives one SSVM regularised towards a centre::

    ‖w‖²/(2C) + ρ/4 ‖w − p‖²  =  ‖w − c‖²/(2C') + const,   1/C' = 1/C + ρ/2,   c = (ρ/2) C' p

(:func:`coupled_ssvm_settings`), solved by :class:`~marginalia.learners.ssvm.SSVM` with
``center="initial"``. ``ρ = 0`` is the target-only fit, ``ρ → ∞`` keeps the prior. The default
``ρ = 1`` is the coupling the aCGH recipe uses across platforms
(:class:`~marginalia.cgh.settings.LearningSettings`, fixed before ``benchmarks/quality/transfer_recipe_cgh.py``
was run); ``benchmarks/quality/transfer_project_cgh.py`` measures this engine path.

The alignment task (recordings with their scores) takes a score aligner in the same way, from a
model file of ``marginalia-cli train --task alignment`` or another project's aligner: its scorers are
the project's first predictions, and a retrain's weak-supervision fit starts from them, pulls its ridge
towards them and keeps ``1 - blend`` of them (:meth:`marginalia.align.ScoreAligner.fit` with ``start``)
where it would otherwise use the untrained scorers. There is no coupling ρ for an aligner: its fit reads
no labels to weigh against the prior, only recordings and scores.

Segmentation models are taken on the features the app's task of that kind reads.
"""

from __future__ import annotations

import io
import json
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional

import numpy as np

from .exceptions import DataFormatError, MarginaliaError, ParameterError, UsageError, WrongTaskError

__all__ = ["PriorModel", "read_prior", "coupled_ssvm_settings", "pack_source_data", "unpack_source_data",
           "DEFAULT_RHO", "PRIOR_SETTING", "PROJECT_SUFFIX", "TASK_FEATURES", "PRIOR_KINDS", "PRIOR_TASK_KEYS",
           "SOURCE_SAMPLES_MAX"]

#: the coupling of the recipe's platforms (LearningSettings.rho), fixed before the transfer benchmark ran
DEFAULT_RHO = 1.0
#: the project setting naming each task's prior: ``{task key: {"model_id", "rho", "source", ...}}``
PRIOR_SETTING = "prior_models"
PROJECT_SUFFIX = ".marginalia"
#: a source project's labelled items are copied (features and labels) up to this many samples in all (about
#: 10 MB compressed); a larger source couples through its parameters only
SOURCE_SAMPLES_MAX = 400_000
#: the model file's feature recipe that the app's task of each item kind reads ("alignment": recordings with
#: a score)
TASK_FEATURES = {"cgh": "cgh-pointwise", "audio": "audio-frames", "series": "series", "alignment": "score-aligner"}
#: the kinds a prior is taken for, in the order a project source's models are looked for
PRIOR_KINDS = ("cgh", "audio", "series", "alignment")
_KIND_NAMES = {"cgh": "copy-number", "audio": "audio segmentation", "series": "series",
               "alignment": "audio-to-score alignment"}
#: the engine task that reads each kind of prior
PRIOR_TASK_KEYS = {"cgh": "segmentation/cgh", "audio": "segmentation/audio", "series": "segmentation/series",
                   "alignment": "alignment/audio"}


@dataclass
class PriorModel:
    """A checked prior model, ready to store.

    Attributes
    ----------
    kind : str
        The item kind it segments (``"cgh"``, ``"audio"``, ``"series"``), or ``"alignment"`` for a score aligner.
    trained : TrainedModel
        As :func:`~marginalia.models.files.load_model` read it.
    blob : bytes
        The model file's bytes (what the project stores).
    source : str
        The file it was read from (a model file or a project).
    source_kind : {"model file", "project"}
    provenance : dict
        What the project records about it (source, SHA-256, learner, labels it was fitted on...).
    """

    kind: str
    trained: object
    blob: bytes
    source: str
    source_kind: str
    provenance: dict = field(default_factory=dict)
    #: a source project's labelled items (:func:`pack_source_data`), the second dataset of eq. 1.9; None for a
    #: model file or when the source's data files could not be read
    source_data: Optional[bytes] = None

    @property
    def w(self) -> np.ndarray:
        return np.asarray(self.trained.w, dtype=np.float64)

    def aligner(self):
        """The prior's :class:`~marginalia.align.ScoreAligner` (an alignment prior only)."""
        return self.trained.aligner()

    def task_arrays(self) -> dict:
        """The engine task's stored arrays for this model (units, ``w``, and a recipe's penalty laws; an
        alignment task's serialised aligner)."""
        if self.kind == "alignment":
            return {"aligner": np.frombuffer(self.aligner().to_bytes(), dtype=np.uint8)}
        arrays = dict(self.trained.model.get_state(), w=self.w)
        law = self.trained.provenance.get("penalty_law")
        if law is not None:
            arrays["recipe"] = np.array(json.dumps(law))
            arrays["recipe_w"] = self.w.copy()
        return arrays


def coupled_ssvm_settings(w_prior, rho: float, C: float = 1.0) -> tuple:
    """``(C', centre)`` of the SSVM that solves eq. 1.9 with the source frozen at ``w_prior`` (see above).

    Parameters
    ----------
    w_prior : ndarray, shape (n_params,)
    rho : float
        Coupling (> 0; ``inf`` keeps the prior).
    C : float
        The project's own trade-off.

    Returns
    -------
    tuple
        ``(C_eff, centre)``: float and ndarray of shape (n_params,).
    """
    rho = float(rho)
    if not rho > 0:
        raise ParameterError(f"rho: the coupled fit needs a coupling > 0, got {rho!r} (0 is the target-only fit)")
    p = np.asarray(w_prior, dtype=np.float64)
    if np.isinf(rho):
        return 1e-12 * float(C), p.copy()
    C_eff = 1.0 / (1.0 / float(C) + rho / 2.0)
    return C_eff, (rho / 2.0) * C_eff * p


def is_project_file(path) -> bool:
    """Whether ``path`` is (or says it is) a Marginalia project rather than a model file."""
    p = Path(path)
    if not p.is_file():
        return False
    with open(p, "rb") as fh:
        head = fh.read(16)
    return head.startswith(b"SQLite format 3") or p.suffix.lower() == PROJECT_SUFFIX


def open_source_project(path):
    """Another project's store, opened read-only to start from it; one line naming it when it cannot be read."""
    from .project import Session
    try:
        return Session.open(str(path), read_only=True)
    except MarginaliaError as exc:
        from .text import exception_text
        raise DataFormatError(f"cannot read it as a Marginalia project ({exception_text(exc)}); choose a project "
                              "or a model file", path=str(path)) from None


def read_prior(path, kinds, *, n_features: Optional[dict] = None) -> PriorModel:
    """Read and check a prior for a project whose items are of ``kinds``.

    Parameters
    ----------
    path : path-like
        A model file (``marginalia-cli train --out``, File ▸ Export ▸ aCGH model) or a Marginalia project.
    kinds : collection of str
        Item kinds of the project's segmentation items (``"cgh"``, ``"audio"``, ``"series"``), and
        ``"alignment"`` when it has recordings with a score.
    n_features : dict, optional
        ``{kind: number of input features}`` of the project's items, to refuse other inputs.

    Raises
    ------
    UsageError, WrongTaskError, DataFormatError
        One line naming the file and what to do.
    """
    p = Path(path)
    kinds = [k for k in kinds if k in PRIOR_KINDS]          # in the caller's order of preference
    if not kinds:
        raise UsageError("this project has no items yet; import profiles, recordings or series, then start "
                         "their model from a prior")
    if p.is_dir() or not p.is_file():
        raise UsageError(f"{str(p)!r}: no such file; choose a model file or a Marginalia project")
    if is_project_file(p):
        return _from_project(p, kinds, n_features)
    return _from_model_file(p, p.read_bytes(), kinds, n_features, "model file", {})


def _from_model_file(p: Path, blob: bytes, kinds, n_features, source_kind: str, extra: dict,
                     shown: Optional[str] = None) -> PriorModel:
    from .models.files import FEATURE_RECIPES, load_model
    shown = shown or str(p)
    trained = load_model(p)      # the one loader: refuses a corrupt, foreign or newer file in one line
    if trained.task == "alignment":
        return _aligner_prior(trained, blob, kinds, source_kind, extra, shown)
    if trained.task != "segmentation":
        raise WrongTaskError(f"{shown}: is {_article(trained.task)} model; this project's models are "
                             f"{_names(kinds)} models")
    kind = FEATURE_RECIPES[trained.features][0]
    if kind not in kinds:
        raise WrongTaskError(f"{shown}: segments {_KIND_NAMES.get(kind, kind)} data; this project has "
                             f"{_names(kinds)} items: choose a model trained on those")
    wanted = TASK_FEATURES[kind]
    if trained.features != wanted:
        raise DataFormatError(f"the model reads {trained.features!r} features but the app's {_KIND_NAMES[kind]} "
                              f"model reads {wanted!r}: train it with `marginalia-cli train` (its default recipe) "
                              "or export it from the app (File \u25b8 Export)", path=shown)
    model = trained.model
    if getattr(model, "metric", None) != "diagonal":
        raise DataFormatError(f"the model has a {getattr(model, 'metric', '?')!r} metric; the app learns a "
                              "diagonal one: train it with --metric diagonal", path=shown)
    want = (n_features or {}).get(kind)
    if want is not None and int(model.n_features_) != int(want):
        raise DataFormatError(f"the model reads {int(model.n_features_)} features per sample but this project's "
                              f"{_KIND_NAMES[kind]} items have {int(want)}: it was trained on other inputs",
                              path=shown)
    prov = trained.provenance or {}
    provenance = {"source": shown, "source_kind": source_kind, "sha256": trained.sha256, "kind": kind,
                  "features": trained.features, "learner": prov.get("learner"),
                  "n_labels": prov.get("n_labels"), "n_sequences": prov.get("n_sequences"),
                  "library_version": prov.get("library_version"), "penalty_law": "penalty_law" in prov,
                  "read": time.time(), **extra}
    return PriorModel(kind=kind, trained=trained, blob=bytes(blob), source=shown, source_kind=source_kind,
                      provenance={k: v for k, v in provenance.items() if v is not None})


def _aligner_prior(trained, blob: bytes, kinds, source_kind: str, extra: dict, shown: str) -> PriorModel:
    """A score aligner's model file as the prior of the project's alignment task."""
    if "alignment" not in kinds:
        raise WrongTaskError(f"{shown}: is an audio-to-score alignment model; this project has no recording with a "
                             f"score (its items are {_names(kinds)} items)")
    trained.aligner()            # the scorers must make an aligner; the loader checked their length
    prov = trained.provenance or {}
    provenance = {"source": shown, "source_kind": source_kind, "sha256": trained.sha256, "kind": "alignment",
                  "features": trained.features, "learner": prov.get("learner"),
                  "n_pairs": prov.get("n_pairs"), "n_anchors": prov.get("n_anchors"),
                  "library_version": prov.get("library_version"), "read": time.time(), **extra}
    return PriorModel(kind="alignment", trained=trained, blob=bytes(blob), source=shown, source_kind=source_kind,
                      provenance={k: v for k, v in provenance.items() if v is not None})


def _aligner_of_project(source, p: Path):
    """``(model record, ScoreAligner)`` of a source project's current alignment model, or None when it has none."""
    from .align import ScoreAligner
    mine = [m for m in source.models("alignment") if (m.params or {}).get("task") == PRIOR_TASK_KEYS["alignment"]]
    if not mine:
        return None
    rec = max(mine, key=lambda m: m.created)
    full = source.load_model(rec.id)
    try:
        with np.load(io.BytesIO(full.blob)) as z:
            aligner = ScoreAligner.from_bytes(z["aligner"].tobytes())
    except (KeyError, ValueError, OSError, MarginaliaError) as exc:
        raise DataFormatError(f"its current alignment model {rec.id} cannot be read ({exc})", path=str(p)) from None
    if not hasattr(aligner, "W_"):
        raise WrongTaskError(f"{p}: its aligner was never trained (Model \u25b8 Retrain it there first); an untrained "
                             "aligner is what this project starts from anyway")
    return full, aligner


def _from_project(p: Path, kinds, n_features) -> PriorModel:
    """The current model of another project's task of one of ``kinds``, as a model file checked by the loader."""
    from .models.persistence import to_bytes
    from .tasks.segmentation import CGH_INPUTS
    source = open_source_project(p)
    try:
        found = None
        for kind in kinds:
            if kind == "alignment":
                got = _aligner_of_project(source, p)
                if got is not None:
                    found = (kind, got[0])
                    aligner = got[1]
                    break
                continue
            mine = [m for m in source.models("segmentation") if (m.params or {}).get("task") == PRIOR_TASK_KEYS[kind]]
            if mine:
                found = (kind, source.load_model(max(mine, key=lambda m: m.created).id))
                break
        if found is None:
            other = sorted({str((m.params or {}).get("task")) for m in source.models()
                            if not str((m.params or {}).get("task", "")).startswith("prior:")})
            what = f"only {', '.join(other)} models" if other else "no model yet (label and retrain it first)"
            raise WrongTaskError(f"{p}: the project has {what}; this project needs a model of {_names(kinds)} items")
        kind, full = found
        params = full.params or {}
        n_labels = params.get("n_labels")
        about = dict(task=PRIOR_TASK_KEYS[kind], written_by="marginalia (project prior)", exported_from=str(p),
                     model_id=full.id, label_hash=full.label_hash, learner=params.get("trained_by"),
                     n_labels=n_labels if isinstance(n_labels, int) else None,
                     features={"recipe": TASK_FEATURES[kind]})
        if kind == "alignment":
            model, w, prov = aligner, aligner.scorer_weights(), dict(getattr(aligner, "provenance_", {}))
        else:
            if kind == "cgh" and params.get("inputs") != CGH_INPUTS:
                raise DataFormatError(f"its copy-number model reads other inputs ({params.get('inputs')!r}); retrain "
                                      "it with this version first", path=str(p))
            try:
                with np.load(io.BytesIO(full.blob)) as z:
                    arrays = {k: z[k] for k in z.files}
                model, w, prov = _model_of_arrays(arrays, kind)
            except (KeyError, ValueError, OSError, ParameterError) as exc:
                raise DataFormatError(f"its current model {full.id} cannot be read ({exc})", path=str(p)) from None
        prov.update(about)
    finally:
        source.close()
    blob = to_bytes(model, w, prov)
    extra = {"source_model": full.id}
    got = (None, "an aligner couples through its scorers") if kind == "alignment" else \
        _source_data(p, kind, int(model.n_features_))
    if got[0] is None:
        extra["source_labels"] = f"not used: {got[1]}"
    else:
        extra.update(source_items=got[1], source_samples=got[2])
    with tempfile.TemporaryDirectory(prefix="marginalia-prior-") as tmp:
        f = Path(tmp) / "prior.npz"
        f.write_bytes(blob)
        prior = _from_model_file(f, blob, kinds, n_features, "project", extra, shown=str(p))
    prior.source_data = got[0]
    return prior


def _model_of_arrays(arrays: dict, kind: str) -> tuple:
    """``(SegmentationModel, w, provenance)`` from an engine task's stored arrays."""
    from .models.segmentation import SegmentationModel
    fs = np.asarray(arrays["feature_scale"])
    model = SegmentationModel(metric="diagonal", loss="frobenius", partial_loss="completion",
                              min_size=3 if kind == "cgh" else 1)
    model.set_state(arrays, n_features=fs.shape[0])
    w = model.check_w(np.asarray(arrays["w"], dtype=np.float64))
    prov: dict = {}
    if "recipe" in arrays:
        # the laws go with the parameters the app draws with, as File > Export > aCGH model writes them
        prov.update(recipe="penalty-law", penalty_law=json.loads(str(arrays["recipe"])))
    return model, w, prov


def pack_source_data(Xs, label_lists) -> bytes:
    """The source's labelled items as one compressed ``.npz`` blob: ``X0..X{n-1}`` and ``labels`` (JSON).

    Parameters
    ----------
    Xs : list of ndarray, each (T_i, p)
        The items' model inputs.
    label_lists : list of list of Label
        Each item's labels (sample-index space).
    """
    from .project.codec import label_to_dict
    arrays = {f"X{i}": np.asarray(X, dtype=np.float64) for i, X in enumerate(Xs)}
    arrays["labels"] = np.array(json.dumps([[label_to_dict(lab) for lab in labs] for labs in label_lists]))
    buf = io.BytesIO()
    np.savez_compressed(buf, **arrays)
    return buf.getvalue()


def unpack_source_data(blob) -> tuple:
    """``(Xs, label lists)`` from :func:`pack_source_data`'s blob."""
    from .project.codec import label_from_dict
    with np.load(io.BytesIO(bytes(blob)), allow_pickle=False) as z:
        rows = json.loads(str(z["labels"]))
        Xs = [np.asarray(z[f"X{i}"], dtype=np.float64) for i in range(len(rows))]
    return Xs, [[label_from_dict(d) for d in labs] for labs in rows]


def _source_data(path: Path, kind: str, n_features: int):
    """``(blob, items, samples)`` of a source project's labelled items of ``kind``, or ``(None, reason)``."""
    from .engine import Engine
    try:
        src = Engine.open(path, read_only=True)
    except MarginaliaError as exc:
        return None, f"not read ({exc.__class__.__name__})"
    try:
        recs = [r for r in src.session.items() if r.task == "segmentation" and r.kind == kind
                and src.labels(r.id)]
        if not recs:
            return None, "no labelled item"
        total = sum(int((r.meta or {}).get("n_samples") or 0) for r in recs)
        if total > SOURCE_SAMPLES_MAX:
            return None, f"{total} samples, more than {SOURCE_SAMPLES_MAX} to copy"
        Xs, labels = [], []
        for r in recs:
            X = src._tasks.get(r).features(r.id)
            if X.shape[1] != n_features:
                return None, "other inputs"
            Xs.append(X)
            labels.append(list(src.labels(r.id)))
        return pack_source_data(Xs, labels), len(recs), int(sum(X.shape[0] for X in Xs))
    except (MarginaliaError, OSError, ValueError) as exc:
        return None, f"its data files could not be read ({exc.__class__.__name__})"
    finally:
        src.close()


def _article(task: str) -> str:
    from .text import with_article
    return with_article(task)


def _names(kinds) -> str:
    return " and ".join(_KIND_NAMES.get(k, k) for k in kinds)
