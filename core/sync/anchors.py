"""Sync anchors stored in a project, and the project's sync metric learned from them.

A :class:`~marginalia.types.SyncAnchorLabel` says that a moment of one recording is the same music
as a moment of another. It is stored as a label of the first recording (one row of the project's
labels, so every edit is saved at once, undone by the session's undo and listed in its history) and
read from either side: :func:`pair_anchors` turns the anchors stored the other way round.

:func:`learn_sync_metric` fits the project's sync metric (:meth:`SyncAligner.fit`, Frank-Wolfe on
the structured SVM; Lajugie 2015, ch. 5) from

* the anchored pairs: anchors are partial labels, so the path that passes through them under the
  current metric stands for the truth, and the metric and that path are fitted in turn (a latent
  structured SVM, :func:`fit_from_anchors`): the learned cost should make the path pass through the
  anchors by itself;
* the score-aligned pairs, free: two recordings of the same score whose alignments (the person's
  score anchors, else the alignment model's prediction) give the times of every note in both.

The metric is stored as the project's sync model (model task ``"warping"``, ``params["role"] ==
"sync"``) and every later sync or carry of the project uses it (:func:`project_aligner`). Its stored
versions are rows of ``Engine.model_versions`` (:func:`sync_versions`), and it goes out and comes in as
a model file (:func:`sync_model_writer`, :func:`import_sync_model`).
"""

from __future__ import annotations

import dataclasses
import json
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Optional

import numpy as np

from ..exceptions import CancelledError, InfeasibleLabelsError, ParameterError, UsageError
from ..types import AnchorLabel, SyncAnchorLabel

__all__ = ["SyncMetricReport", "pair_anchors", "anchor_times", "past_end", "crossed_anchor", "find_crossing",
           "recording_duration", "add_anchor", "add_anchors", "move_anchor", "delete_anchors", "anchored_truth",
           "fit_from_anchors",
           "project_aligner", "stored_aligner", "sync_model_id", "sync_versions", "fitted_from", "sync_model_writer",
           "import_sync_model", "read_project_sync_metric", "import_project_sync_metric", "learn_sync_metric",
           "SYNC_MODEL_TASK", "SYNC_MODEL_ROLE", "LATENT_ROUNDS"]

#: the store's task of a project's sync model, and the role that tells it from other models of that task
SYNC_MODEL_TASK = "warping"
SYNC_MODEL_ROLE = "sync"
#: score-aligned pairs a fit uses at most (each recording of a piece against the piece's first one)
MAX_SCORE_PAIRS = 20
#: fits of the latent alternation at most (:func:`fit_from_anchors`)
LATENT_ROUNDS = 3


def _stop_if_asked(cancel, what: str = "cancelled: nothing was stored"):
    if cancel is not None and cancel.is_set():
        raise CancelledError(what)


def pair_anchors(engine, reference_id: str, target_id: str) -> list:
    """The anchors between two recordings, seen from ``reference_id``, in reference time order.

    Anchors stored on the target (made when it was the reference) come flipped
    (:meth:`SyncAnchorLabel.flipped`: same id, times swapped).
    """
    out = [lab for lab in engine.session.labels(reference_id)
           if isinstance(lab, SyncAnchorLabel) and lab.target_id == target_id]
    out += [lab.flipped() for lab in engine.session.labels(target_id)
            if isinstance(lab, SyncAnchorLabel) and lab.target_id == reference_id]
    return sorted(out, key=lambda lab: (lab.reference_s, lab.target_s, lab.id))


def anchor_times(anchors) -> np.ndarray:
    """``(reference_s, target_s)`` of anchors, shape (K, 2)."""
    return np.array([(a.reference_s, a.target_s) for a in anchors], dtype=np.float64).reshape(-1, 2)


def recording_duration(engine, item_id: str) -> float:
    """Length (s) of a recording of the project (its audio file's header)."""
    from ..io.audio import audio_info
    from .carry import _audio_file
    return float(audio_info(_audio_file(engine, item_id)).duration_s)


def past_end(anchor: SyncAnchorLabel, duration: Callable) -> Optional[tuple]:
    """``(item_id, time_s, end_s)`` of the first time of ``anchor`` past its recording's end, else None.

    ``duration(item_id)`` gives a recording's length in seconds.
    """
    for item_id, t in ((anchor.item_id, anchor.reference_s), (anchor.target_id, anchor.target_s)):
        end = duration(item_id)
        if t > end:
            return item_id, t, end
    return None


def crossed_anchor(anchor: SyncAnchorLabel, others) -> Optional[SyncAnchorLabel]:
    """The first of ``others`` (anchors of the same pair seen from the same side) that ``anchor`` crosses.

    Two anchors cross when one is earlier in the reference and later in the target: no path passes
    through both. An anchor with the same id (its older self) is not compared.
    """
    for other in others:
        if other.id != anchor.id and (anchor.reference_s - other.reference_s) * (anchor.target_s - other.target_s) < 0:
            return other
    return None


def find_crossing(times) -> Optional[tuple]:
    """Two anchors of one pair that cross, found in ``O(K log K)`` (a file may list many anchors).

    Parameters
    ----------
    times : array_like, shape (K, 2)
        ``(reference_s, target_s)`` of anchors seen from the same side.

    Returns
    -------
    (int, int) or None
        Indices ``(i, j)`` into ``times`` with ``i`` earlier in the reference and later in the target than
        ``j`` (no path passes through both), or None when every pair of anchors can be passed through.
    """
    t = np.asarray(times, dtype=np.float64).reshape(-1, 2)
    if len(t) < 2:
        return None
    order = np.lexsort((t[:, 1], t[:, 0]))
    ref, tgt = t[order, 0], t[order, 1]
    best = np.maximum.accumulate(tgt)
    start = np.searchsorted(ref, ref, side="left")        # first anchor at the same reference time
    before = np.where(start > 0, best[np.maximum(start - 1, 0)], -np.inf)   # latest target strictly earlier
    crossing = np.flatnonzero(tgt < before)
    if not crossing.size:
        return None
    p = int(crossing[0])
    return int(order[int(np.argmax(tgt[:start[p]]))]), int(order[p])


def _check_anchor(engine, anchor: SyncAnchorLabel, others) -> None:
    """Refuse an anchor past a recording's end or crossing another anchor of the pair, in one line."""
    names = {rec.id: rec.name for rec in engine.session.items()}
    late = past_end(anchor, lambda item_id: recording_duration(engine, item_id))
    if late is not None:
        item_id, t, end = late
        raise ParameterError(f"sync anchor: {t:.3f} s lies past the end of {names.get(item_id, item_id)} "
                             f"({end:.3f} s); place it inside the recording")
    other = crossed_anchor(anchor, others)
    if other is not None:
        raise InfeasibleLabelsError(
            f"sync anchor: {anchor.reference_s:.2f} s \u2194 {anchor.target_s:.2f} s crosses the anchor "
            f"{other.reference_s:.2f} s \u2194 {other.target_s:.2f} s (the music cannot go both ways); move or "
            "delete that one first", [other.id])


def _recordings(engine, reference_id, target_id) -> dict:
    from .carry import _check_recordings
    infos = _check_recordings(engine, [reference_id, target_id])
    if reference_id == target_id:
        raise UsageError("a sync anchor joins two different recordings")
    return infos


def add_anchor(engine, reference_id: str, target_id: str, reference_s: float, target_s: float) -> SyncAnchorLabel:
    """Store a new anchor between two recordings (one undoable step); returns it.

    Raises
    ------
    ParameterError
        A time past a recording's end.
    InfeasibleLabelsError
        The anchor crosses another anchor of the pair.
    """
    return add_anchors(engine, reference_id, target_id, [(reference_s, target_s)])[0]


def add_anchors(engine, reference_id: str, target_id: str, times, *, sources=None) -> list:
    """Store new anchors between two recordings as ONE undoable step (all or none); returns them.

    Parameters
    ----------
    times : array_like, shape (K, 2)
        ``(reference_s, target_s)`` of every new anchor.
    sources : sequence of str, optional
        Where each anchor came from (e.g. ``"anchors.csv, line 3"``), the start of a refusal's line
        (default ``"sync anchor"``).

    Raises
    ------
    ParameterError
        No anchor, a time that is not a number >= 0, or a time past a recording's end.
    InfeasibleLabelsError
        Two of the anchors cross, or one crosses an anchor the project already has between the two
        recordings (its id listed).
    """
    infos = _recordings(engine, reference_id, target_id)
    try:
        t = np.asarray(times, dtype=np.float64).reshape(-1, 2)
    except (TypeError, ValueError):
        raise ParameterError("times: expected (reference_s, target_s) pairs of numbers") from None
    if not len(t):
        raise ParameterError("times: no sync anchor to add")
    sources = ["sync anchor"] * len(t) if sources is None else [str(x) for x in sources]
    if len(sources) != len(t):
        raise ParameterError(f"sources: expected {len(t)} places, one per anchor, got {len(sources)}")
    durations: dict = {}

    def duration(item_id):
        if item_id not in durations:
            durations[item_id] = recording_duration(engine, item_id)
        return durations[item_id]

    new = []
    for source, (ref_s, tgt_s) in zip(sources, t):
        try:
            anchor = SyncAnchorLabel(item_id=reference_id, target_id=target_id, reference_s=float(ref_s),
                                     target_s=float(tgt_s), author=engine.session.author)
        except ParameterError as exc:
            raise ParameterError(f"{source}: {' '.join(str(exc).split())}") from None
        late = past_end(anchor, duration)
        if late is not None:
            item_id, when, end = late
            raise ParameterError(f"{source}: {when:.3f} s lies past the end of {infos[item_id].name} "
                                 f"({end:.3f} s); place it inside the recording")
        new.append(anchor)
    old = pair_anchors(engine, reference_id, target_id)
    everything = new + old
    crossing = find_crossing(anchor_times(everything))
    if crossing is not None:
        i, j = sorted(crossing)          # the new anchors come first: ``i`` is one of them
        a, b = everything[i], everything[j]
        if i >= len(new):
            raise InfeasibleLabelsError(
                f"the project's sync anchors {a.reference_s:.2f} s \u2194 {a.target_s:.2f} s and {b.reference_s:.2f} s "
                f"\u2194 {b.target_s:.2f} s cross; delete one of them first", [a.id, b.id])
        if j >= len(new):
            raise InfeasibleLabelsError(
                f"{sources[i]}: {a.reference_s:.2f} s \u2194 {a.target_s:.2f} s crosses the anchor "
                f"{b.reference_s:.2f} s \u2194 {b.target_s:.2f} s (the music cannot go both ways); move or "
                "delete that one first", [b.id])
        # two new ones: the one listed later is named first
        raise InfeasibleLabelsError(
            f"{sources[j]}: {b.reference_s:.2f} s \u2194 {b.target_s:.2f} s crosses {sources[i]} "
            f"({a.reference_s:.2f} s \u2194 {a.target_s:.2f} s): the music cannot go both ways; correct one of "
            "them", [])
    ref_name, tgt_name = infos[reference_id].name, infos[target_id].name
    name = (f"sync anchor {new[0].reference_s:.2f} s of {ref_name} \u2194 {new[0].target_s:.2f} s of {tgt_name}"
            if len(new) == 1 else f"{len(new)} sync anchors between {ref_name} and {tgt_name}")
    engine.session.add_labels(new, name=name)
    return new


def move_anchor(engine, anchor_id: str, reference_id: str, reference_s: float, target_s: float) -> SyncAnchorLabel:
    """Move a stored anchor to new times, seen from ``reference_id`` (one undoable step); returns it so seen."""
    stored = engine.session.label(anchor_id)
    if not isinstance(stored, SyncAnchorLabel):
        raise ParameterError(f"label {anchor_id!r} is not a sync anchor")
    if reference_id not in (stored.item_id, stored.target_id):
        raise ParameterError(f"sync anchor {anchor_id!r} does not join recording {reference_id!r}")
    seen = stored if stored.item_id == reference_id else stored.flipped()
    moved = dataclasses.replace(seen, reference_s=float(reference_s), target_s=float(target_s))
    infos = _recordings(engine, moved.item_id, moved.target_id)
    _check_anchor(engine, moved, pair_anchors(engine, moved.item_id, moved.target_id))
    back = moved if stored.item_id == reference_id else moved.flipped()
    engine.session.edit_labels(changed=[back], name=(
        f"move sync anchor to {moved.reference_s:.2f} s of {infos[moved.item_id].name} \u2194 "
        f"{moved.target_s:.2f} s of {infos[moved.target_id].name}"))
    return moved


def delete_anchors(engine, anchor_ids) -> int:
    """Delete sync anchors (one undoable step); returns how many."""
    ids = list(anchor_ids)
    pairs = set()
    for anchor_id in ids:
        anchor = engine.session.label(anchor_id)
        if not isinstance(anchor, SyncAnchorLabel):
            raise ParameterError(f"label {anchor_id!r} is not a sync anchor")
        pairs.add(tuple(sorted((anchor.item_id, anchor.target_id))))
    if ids:
        names = {rec.id: rec.name for rec in engine.session.items()}
        between = "; ".join(sorted(" and ".join(sorted((names.get(a, a), names.get(b, b)))) for a, b in pairs))
        engine.session.edit_labels(deleted=ids, name=f"delete {len(ids)} sync anchor{'s' if len(ids) != 1 else ''} "
                                                     f"between {between}")
    return len(ids)


# ------------------------------------------------------------------ the project's sync metric

@dataclass(frozen=True)
class SyncMetricReport:
    """What :func:`learn_sync_metric` learned from.

    Attributes
    ----------
    model_id : str
        The stored sync model (later syncs and carries of the project use it).
    n_anchor_pairs, n_anchors : int
        Pairs of recordings with sync anchors, and their anchors.
    n_score_pairs, n_matched : int
        Pairs of recordings aligned to the same score, and the notes matched in them.
    weights : dict
        Mean weight of each kind of descriptor (``"chroma"``, ``"onsets"``, ``"loudness"``) in the
        learned metric (the Euclidean cost has 1 everywhere).
    n_iter : int
        Frank-Wolfe passes made, all rounds together.
    n_rounds : int
        Fits of the latent alternation made (:func:`fit_from_anchors`).
    """

    model_id: str
    n_anchor_pairs: int
    n_anchors: int
    n_score_pairs: int
    n_matched: int
    weights: dict
    n_iter: int
    n_rounds: int = 1

    def summary(self) -> str:
        """One line for the status bar: what the metric learned from and what it weighs."""
        parts = []
        if self.n_anchor_pairs:
            parts.append(f"{self.n_anchors} sync anchor{'s' if self.n_anchors != 1 else ''} on "
                         f"{self.n_anchor_pairs} pair{'s' if self.n_anchor_pairs != 1 else ''}")
        if self.n_score_pairs:
            parts.append(f"{self.n_score_pairs} score-aligned pair{'s' if self.n_score_pairs != 1 else ''} "
                         f"({self.n_matched} matched notes)")
        weighs = ", ".join(f"{k} {v:.2f}" for k, v in self.weights.items())
        fits = f"{self.n_rounds} fits, " if self.n_rounds > 1 else ""
        return (f"Learned the sync metric from {' and '.join(parts)} ({fits}{self.n_iter} Frank\u2013Wolfe passes): "
                f"it weighs {weighs} "
                "(Euclidean: 1 each); later comparisons and carries use it")


_GROUP_NAMES = ("chroma", "onsets", "loudness")


def _group_weights(aligner) -> dict:
    w = aligner.metric_weights()
    groups = aligner.descriptor_groups()
    return {_GROUP_NAMES[g]: float(w[groups == g].mean()) for g in np.unique(groups)}


def anchored_truth(aligner, reference, target, anchors) -> np.ndarray:
    """The matched times a pair with only anchors is learned from: the path through them under ``aligner``.

    Anchors are partial labels; completing them with the current metric's best path through them is
    one step of the latent structured SVM's alternation (the learned cost should then make the path
    pass through the anchors by itself).

    Parameters
    ----------
    aligner : SyncAligner
    reference, target : SyncFeatures
    anchors : sequence of SyncAnchorLabel or array_like, shape (K, 2)

    Returns
    -------
    ndarray, shape (L, 2)
        ``(reference_s, target_s)`` of every cell of that path.
    """
    times = anchor_times(anchors) if len(anchors) and isinstance(anchors[0], SyncAnchorLabel) else anchors
    return aligner.predict(reference, target, anchors=times, runner_up=False).table()


def fit_from_anchors(learner, anchored, matched=(), *, start=None, rounds: int = None, callback=None):
    """Learn ``learner``'s metric from pairs with anchors (partial labels) and pairs with matched times.

    A latent structured SVM fitted by alternation: every anchored pair's path is completed through
    its anchors under the current metric (:func:`anchored_truth`), the metric is fitted on these
    completions and the matched pairs (:meth:`SyncAligner.fit`), and again with the new metric, until
    the completions stop changing or ``rounds`` fits are made. On the Vienna 4x22 pairs of
    ``benchmarks/quality/quality_sync.py`` a second and third round take the notes beyond 50 ms from
    42 to 31 and 29 with 5 anchors per piece (see docs/accuracy.md).

    Parameters
    ----------
    learner : SyncAligner
        Its options are those of the fit; it is fitted in place.
    anchored : sequence of (SyncFeatures, SyncFeatures, array_like (K, 2))
        Reference and target features and the anchors ``(reference_s, target_s)`` of each pair.
    matched : sequence of (SyncFeatures, SyncFeatures, array_like (N, 2))
        Pairs whose matched times are known throughout (e.g. two score alignments).
    start : SyncAligner, optional
        The metric of the first completion (the Euclidean cost when None).
    rounds : int, optional
        Fits at most (:data:`LATENT_ROUNDS` by default; one when no pair is anchored).
    callback : callable, optional
        ``callback(round, iteration)`` after every Frank-Wolfe pass (both from 0).

    Returns
    -------
    (SyncAligner, int, int)
        ``learner`` fitted, the rounds made and the Frank-Wolfe passes made in all.
    """
    from ..checks import check_int
    from . import SyncAligner
    anchored, matched = list(anchored), list(matched)
    rounds = 1 if not anchored else check_int(LATENT_ROUNDS if rounds is None else rounds, "rounds", min_val=1)
    # the completions are part of the fit, which learns the metric on the plain DTW cost: without the step cost
    plain = dict(learner.get_params(), step_cost=0.0)
    current = (SyncAligner(**plain) if start is None else
               SyncAligner(**dict(start.get_params(), step_cost=0.0)).with_metric_weights(start.metric_weights()))
    previous, passes, made = None, 0, 0
    for r in range(rounds):
        completed = [anchored_truth(current, fa, fb, a) for fa, fb, a in anchored]
        if previous is not None and all(np.array_equal(c, p) for c, p in zip(completed, previous)):
            break
        learner.fit([(fa, fb, c) for (fa, fb, _), c in zip(anchored, completed)] + matched,
                    callback=None if callback is None else (lambda _fw, it, r=r: callback(r, it)))
        passes += int(learner.n_iter_)
        made = r + 1
        current, previous = SyncAligner(**plain).with_metric_weights(learner.w_), completed
    return learner, made, passes


def _sync_models(engine) -> list:
    return [m for m in engine.session.models(SYNC_MODEL_TASK) if (m.params or {}).get("role") == SYNC_MODEL_ROLE]


def stored_aligner(params, model_id: str, where: str):
    """The fitted aligner of a stored sync model's ``params``, checked as a model file's is.

    A project file may come from anyone: its options must be valid and within the bounds a sync model
    file may set (:data:`marginalia.sync.aligner.FILE_BOUNDS`, so that it cannot make a sync decode the
    whole grid of a long pair), and its metric ``w`` must fit them.

    Raises
    ------
    DataFormatError
        One line naming the project (``where``), the model and the fix.
    """
    from ..exceptions import DataFormatError
    from . import SyncAligner
    try:
        options = params.get("options") if isinstance(params, dict) else None
        w = params.get("w") if isinstance(params, dict) else None
        if not isinstance(options, dict) or not all(isinstance(k, str) for k in options):
            raise ParameterError("options: expected a table of the sync aligner's options")
        try:
            aligner = SyncAligner(**options)
        except TypeError:
            unknown = sorted(set(options) - set(SyncAligner().get_params()))
            raise ParameterError(f"options: {', '.join(map(repr, unknown))[:120]} is no option of the sync aligner"
                                 ) from None
        if not isinstance(w, list):
            raise ParameterError("w: expected the metric's weights, a list of numbers")
        aligner.set_state({}, len(w))
        return aligner.with_metric_weights(np.asarray(w, dtype=np.float64))
    except (ParameterError, TypeError, ValueError, OverflowError) as exc:
        text = " ".join(str(exc).split())[:300]
        raise DataFormatError(f"its sync metric {str(model_id)[:60]} cannot be used ({text}); make an earlier "
                              "version current (Model \u25b8 Model versions) or learn the sync metric again",
                              path=where) from None


def project_aligner(engine, aligner=None):
    """``aligner`` when given, else the project's learned sync aligner, else the default (Euclidean) one."""
    from . import SyncAligner
    if aligner is not None:
        return aligner
    models = _sync_models(engine)
    if not models:
        return SyncAligner()
    newest = max(models, key=lambda m: m.created)
    key = ("aligner", newest.id)
    if key not in engine._sync_memo:
        engine._sync_memo[key] = stored_aligner(newest.params, newest.id, str(engine.path))
    return engine._sync_memo[key]


def fitted_from(params: dict) -> str:
    """What a stored sync model was fitted from, in a few words (``"5 sync anchors on 1 pair"``)."""
    if params.get("source"):
        what = "the project" if params.get("trained_by") == "project" else "the model file"
        return f"{what} {str(params['source']).replace(chr(92), '/').rsplit('/', 1)[-1][:80]}"
    parts = []
    n_anchors, n_pairs = params.get("n_anchors") or 0, params.get("n_anchor_pairs") or 0
    if n_anchors:
        parts.append(f"{n_anchors} sync anchor{'s' if n_anchors != 1 else ''} on {n_pairs} "
                     f"pair{'s' if n_pairs != 1 else ''}")
    n_scored, n_matched = params.get("n_score_pairs") or 0, params.get("n_matched") or 0
    if n_scored:
        parts.append(f"{n_scored} score-aligned pair{'s' if n_scored != 1 else ''} ({n_matched} matched notes)")
    return " and ".join(parts) or "nothing recorded"


def sync_versions(engine) -> list:
    """The project's stored sync models as rows of :meth:`Engine.model_versions`, oldest first.

    Each row has ``id``, ``task`` (``"sync"``), ``created``, ``n_labels`` (the sync anchors it was fitted
    on), ``trained_by`` (``"ssvm"``, ``"revert"``, ``"model-file"`` or ``"project"``), ``reverted_from``, ``rho`` (None),
    ``fitted_from`` (:func:`fitted_from`) and ``current`` (the newest: the one every sync and carry uses).
    """
    current = sync_model_id(engine)
    out = []
    for m in sorted(_sync_models(engine), key=lambda m: m.created):
        params = m.params or {}
        n = params.get("n_anchors")
        out.append({"id": m.id, "task": "sync", "created": m.created, "n_labels": n if isinstance(n, int) else None,
                    "trained_by": params.get("trained_by", ""), "reverted_from": params.get("reverted_from"),
                    "rho": None, "fitted_from": fitted_from(params), "current": m.id == current})
    return out


def sync_model_id(engine) -> Optional[str]:
    """Id of the project's newest sync model (None before one is learned)."""
    models = _sync_models(engine)
    return max(models, key=lambda m: m.created).id if models else None


def _score_key(engine, item):
    """What tells two recordings of the same score: its name and number of events (None without a score)."""
    if item.task != "alignment":
        return None
    score = engine.score(item.id)
    return None if score is None else (getattr(score, "name", None), int(score.n_events))


def _onsets(engine, item_id: str, cancel) -> np.ndarray:
    """Performed time (s) of every score event: the person's anchors, else the alignment's prediction."""
    n = int(engine.score(item_id).n_events)
    times = np.full(n, np.nan)
    for lab in engine.labels(item_id):
        if isinstance(lab, AnchorLabel) and lab.event < n:
            times[lab.event] = lab.time_s
    if np.isnan(times).any():
        pred = engine.prediction(item_id) or engine.predict(item_id, cancel=cancel)
        predicted = np.asarray(pred.times_s if pred.times_s is not None else np.full(n, np.nan), dtype=np.float64)
        if predicted.size == n:
            times = np.where(np.isnan(times), predicted, times)
    return times


def learn_sync_metric(engine, *, cancel=None, progress: Optional[Callable] = None, options: Optional[dict] = None
                      ) -> SyncMetricReport:
    """Fit the project's sync metric from its sync anchors and its score-aligned pairs, and store it.

    Parameters
    ----------
    engine : Engine
    cancel : threading.Event, optional
        Set to stop (nothing is stored then).
    progress : callable, optional
        ``progress(done, total, message)``: each recording's features, then each Frank-Wolfe pass.
    options : dict, optional
        :class:`SyncAligner` options of the learned aligner (defaults otherwise).

    Returns
    -------
    SyncMetricReport

    Raises
    ------
    UsageError
        Nothing to learn from: no sync anchor and no two recordings aligned to the same score.
    """
    from ..project.codec import labels_digest
    from . import SyncAligner
    from .carry import _recording_features
    recordings = [rec for rec in engine.session.items() if rec.kind == "audio"]
    ids = {info.id for info in recordings}
    anchored: dict = {}
    for lab in engine.session.labels():
        if isinstance(lab, SyncAnchorLabel) and lab.item_id in ids and lab.target_id in ids:
            key = tuple(sorted((lab.item_id, lab.target_id)))
            anchored.setdefault(key, None)
    by_piece: dict = {}
    for info in recordings:
        key = _score_key(engine, info)
        if key is not None:
            by_piece.setdefault(key, []).append(info.id)
    scored = [(members[0], other) for members in by_piece.values() for other in members[1:]][:MAX_SCORE_PAIRS]
    scored = [pair for pair in scored if tuple(sorted(pair)) not in anchored]
    if not anchored and not scored:
        raise UsageError("nothing to learn the sync metric from: add sync anchors between two recordings "
                         "(View \u25b8 Compare with another recording), or align two recordings to the same score")
    current = project_aligner(engine)
    learner = SyncAligner(**dict(current.get_params(), **(options or {})))
    needed = sorted({i for pair in list(anchored) + scored for i in pair})
    rounds = LATENT_ROUNDS if anchored else 1
    total = len(needed) + rounds * int(learner.max_iter)
    features = {}
    for k, item_id in enumerate(needed):
        _stop_if_asked(cancel)
        features[item_id] = _recording_features(engine, learner, item_id)
        if progress is not None:
            progress(k + 1, total, f"features of {engine.item(item_id).name}")
    partial, data, anchors_used, n_matched = [], [], [], 0
    for ref, tgt in anchored:
        anchors = pair_anchors(engine, ref, tgt)
        anchors_used += anchors
        partial.append((features[ref], features[tgt], anchor_times(anchors)))
    n_score_pairs = 0
    for ref, tgt in scored:
        _stop_if_asked(cancel)
        a, b = _onsets(engine, ref, cancel), _onsets(engine, tgt, cancel)
        both = np.isfinite(a) & np.isfinite(b)
        if both.sum() < 2:
            continue
        data.append((features[ref], features[tgt], np.column_stack([a[both], b[both]])))
        n_score_pairs += 1
        n_matched += int(both.sum())
    if not data and not partial:
        raise UsageError("nothing to learn the sync metric from: the recordings aligned to the same score share "
                         "fewer than 2 aligned notes")

    def passed(round_, iteration):
        _stop_if_asked(cancel)
        if progress is not None:
            progress(len(needed) + round_ * int(learner.max_iter) + iteration + 1, total,
                     f"round {round_ + 1} of at most {rounds}, Frank\u2013Wolfe pass {iteration + 1}")

    learner, made, passes = fit_from_anchors(learner, partial, data, start=current, rounds=rounds, callback=passed)
    _stop_if_asked(cancel)
    if progress is not None:
        progress(total, total, "storing the metric")
    w = learner.metric_weights()
    model_id = f"sync@{time.time_ns() // 1000}"
    params = {"task": "sync", "role": SYNC_MODEL_ROLE, "trained_by": "ssvm", "options": learner.get_params(),
              "w": [float(v) for v in w], "n_anchor_pairs": len(anchored), "n_anchors": len(anchors_used),
              "n_score_pairs": n_score_pairs, "n_matched": n_matched, "n_rounds": made,
              "n_labels": len(anchors_used)}
    engine.session.save_model(model_id, SYNC_MODEL_TASK, params, json.dumps(params["w"]).encode(),
                              labels_digest(anchors_used))
    return SyncMetricReport(model_id, len(anchored), len(anchors_used), n_score_pairs, n_matched,
                            _group_weights(learner), passes, made)


# ------------------------------------------------------------ the sync model as a model file

def sync_model_writer(engine) -> Callable:
    """``write(path)`` writing the project's current sync metric as a model file (``marginalia-cli sync --model``).

    Raises
    ------
    ParameterError
        No sync metric learned yet.
    """
    from ..models.files import TrainedModel, save_model
    model_id = sync_model_id(engine)
    if model_id is None:
        raise ParameterError("export sync-model: no sync metric learned yet: place sync anchors (View \u25b8 Compare "
                             "with another recording) and use Model \u25b8 Learn the sync metric first")
    aligner = project_aligner(engine)
    params = engine.session.load_model(model_id).params or {}
    prov = {"learner": {"class": "WarpingFrankWolfe", "C": aligner.C, "loss": aligner.loss,
                        "max_iter": aligner.max_iter},
            "exported_from": str(engine.path), "model_id": model_id, "fitted_from": fitted_from(params),
            **{k: params[k] for k in ("n_anchor_pairs", "n_anchors", "n_score_pairs", "n_matched", "n_rounds")
               if isinstance(params.get(k), int)}}
    trained = TrainedModel("sync", f"sync-{aligner.features}", aligner, aligner.metric_weights(), prov)
    return lambda path: save_model(path, trained)


def _store_sync_metric(engine, aligner, source: str, sha256: str, counts: dict, trained_by: str) -> dict:
    """Store a checked aligner as a new version of the project's sync metric; the dict :meth:`Engine.start_from` returns."""
    w = [float(v) for v in aligner.metric_weights()]
    params = {"task": "sync", "role": SYNC_MODEL_ROLE, "trained_by": trained_by, "options": aligner.get_params(),
              "w": w, "source": source, "sha256": sha256, **counts}
    model_id = f"sync@{time.time_ns() // 1000}"
    engine.session.save_model(model_id, SYNC_MODEL_TASK, params, json.dumps(w).encode(), f"{trained_by}:{sha256}")
    return {"task": "sync", "source": source, "sha256": sha256, "version": model_id, "rho": None,
            "fitted_from": fitted_from(params)}


def _counts(prov) -> dict:
    prov = prov if isinstance(prov, dict) else {}
    return {k: prov[k] for k in ("n_anchor_pairs", "n_anchors", "n_score_pairs", "n_matched")
            if isinstance(prov.get(k), int) and not isinstance(prov.get(k), bool)}


def import_sync_model(engine, path) -> dict:
    """Store a sync model file (``train --task sync``, File \u25b8 Export \u25b8 sync metric) as the project's sync metric.

    The file is read and checked by the model-file loader (:func:`marginalia.models.files.load_model`:
    a damaged, foreign or hostile file is refused in one line and nothing changes); it becomes a new
    version of the project's sync model (``trained_by="model-file"``), which later syncs and carries use.

    Returns
    -------
    dict
        ``task`` (``"sync"``), ``source``, ``sha256``, ``version`` (the new model's id), ``rho`` (None) and
        ``fitted_from``.
    """
    from ..models.files import load_model
    trained = load_model(path, task="sync")
    return _store_sync_metric(engine, trained.sync_aligner(), str(path), trained.sha256, _counts(trained.provenance),
                              "model-file")


def read_project_sync_metric(path) -> Optional[tuple]:
    """Another project's current sync metric: ``(aligner, sha256, counts)``, or None when it has none.

    Its options are checked as a model file's are (:func:`stored_aligner`).

    Raises
    ------
    DataFormatError
        Not a readable project, or a sync metric that cannot be used (one line naming the project).
    """
    import hashlib

    from ..prior import open_source_project
    source = open_source_project(path)
    try:
        models = [m for m in source.models(SYNC_MODEL_TASK) if (m.params or {}).get("role") == SYNC_MODEL_ROLE]
        if not models:
            return None
        newest = source.load_model(max(models, key=lambda m: m.created).id)
    finally:
        source.close()
    aligner = stored_aligner(newest.params, newest.id, str(path))
    digest = hashlib.sha256(json.dumps({"options": aligner.get_params(), "w": list(map(float, aligner.metric_weights()))},
                                       sort_keys=True).encode()).hexdigest()
    return aligner, digest, _counts(newest.params)


def import_project_sync_metric(engine, path, found: tuple) -> dict:
    """Store another project's sync metric (:func:`read_project_sync_metric`'s ``found``) as this project's."""
    aligner, digest, counts = found
    return _store_sync_metric(engine, aligner, str(path), digest, counts, "project")
