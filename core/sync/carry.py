"""Carry the labels of one recording onto another through a sync path.

Every label of the source states something at times of the source recording; the warping path
(:class:`~marginalia.sync.SyncResult`) says where those times fall in the target, so the same statement
becomes a label of the target: regions and boundaries (on the item's frames), score anchors and
event spans (in seconds, same score events). Warping anchors (which relate two recordings) are not
carried.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Optional

import numpy as np

from ..exceptions import ParameterError
from ..types import AnchorLabel, BoundaryLabel, EventSpanLabel, RegionKind, RegionLabel

__all__ = ["CarriedLabels", "CarryReport", "RecordingComparison", "carry_labels", "carry_between_items",
           "sync_between_items", "sync_state"]


@dataclass(frozen=True)
class CarriedLabels:
    """The labels made for one target and what could not be carried.

    Attributes
    ----------
    labels : tuple of Label
        New labels of the target (fresh ids).
    skipped : tuple of (Label, str)
        Source labels left out, with the reason.
    """

    labels: tuple
    skipped: tuple


def _positions(positions, name) -> np.ndarray:
    pos = np.asarray(positions, dtype=np.float64)
    if pos.ndim != 1 or pos.size < 2 or not np.all(np.isfinite(pos)) or np.any(np.diff(pos) < 0):
        raise ParameterError(f"{name}: expected increasing frame times (s) of at least 2 frames")
    return pos


def carry_labels(labels, result, source_positions, target_positions, target_item_id: str, *,
                 target_events=None) -> CarriedLabels:
    """Map the source labels onto the target.

    Parameters
    ----------
    labels : iterable of Label
        The source item's labels.
    result : SyncResult
        The path from the source (reference) recording to the target.
    source_positions, target_positions : array_like, shape (T_s,) and (T_t,)
        Times (s) of the items' frames (their sequences' positions): region and boundary labels
        count frames.
    target_item_id : str
    target_events : int, optional
        Number of events of the target's score; anchors and event spans need one with at least
        the events they name.

    Returns
    -------
    CarriedLabels
    """
    src = _positions(source_positions, "source_positions")
    tgt = _positions(target_positions, "target_positions")
    T = tgt.size
    out, skipped = [], []

    def fresh(lab, **fields):
        return replace(lab, item_id=target_item_id, id="", created=0.0, **fields)

    def edge(index):
        """Target frame index of the source's frame edge before ``index`` (0 and the end map to themselves).

        Region ends and boundaries are both such edges, mapped by one rule, so that a boundary stated at a
        region's end stays at that region's end."""
        if index <= 0:
            return 0
        if index >= src.size:
            return T
        t = result.map_times([0.5 * (src[index - 1] + src[index])])[0]
        return int(np.clip(np.searchsorted(tgt, t), 1, T - 1))

    for lab in labels:
        if isinstance(lab, RegionLabel):
            start = min(edge(lab.start), T - 1)
            stop = max(edge(lab.stop), start + 1)
            if lab.kind in (RegionKind.ONE, RegionKind.AT_LEAST_ONE) and stop - start < 2:
                stop = min(start + 2, T)
                start = stop - 2
            out.append(fresh(lab, start=start, stop=stop))
        elif isinstance(lab, BoundaryLabel):
            if lab.index >= src.size:
                skipped.append((lab, "past the end of the source"))
                continue
            out.append(fresh(lab, index=edge(lab.index)))
        elif isinstance(lab, (AnchorLabel, EventSpanLabel)):
            last = lab.event if isinstance(lab, AnchorLabel) else lab.last
            if target_events is None or last >= int(target_events):
                skipped.append((lab, "the target has no score with this event"))
                continue
            if isinstance(lab, AnchorLabel):
                out.append(fresh(lab, time_s=float(result.map_times([lab.time_s])[0])))
            else:
                t0, t1 = result.map_times([lab.t0_s, lab.t1_s])
                out.append(fresh(lab, t0_s=float(t0), t1_s=float(max(t0, t1))))
        else:
            skipped.append((lab, f"{type(lab).__name__} relates two recordings; it is not carried"))
    return CarriedLabels(tuple(out), tuple(skipped))


@dataclass(frozen=True)
class CarryReport:
    """What a carry between a project's recordings did.

    Attributes
    ----------
    stored : tuple of Label
        The labels added to the targets (one step of the project's history; empty: nothing added).
    per_target : dict
        ``{target item id: number of labels added to it}``.
    skipped : dict
        ``{reason: number of source labels}`` not carried.
    already : int
        Carried labels the targets already stated (not added twice).
    step_name : str
        The name of the history step (what Edit ▸ History and one undo show).
    """

    stored: tuple
    per_target: dict = field(default_factory=dict)
    skipped: dict = field(default_factory=dict)
    already: int = 0
    step_name: str = ""


#: recordings whose sync features an engine keeps (a 10-minute recording's are ~10 MB)
FEATURES_KEPT = 8


def _audio_file(engine, item_id: str) -> str:
    """The recording's file, without loading the item's display data (a missing file: the loader's one line)."""
    import os
    path = engine.session.item(item_id).source_path
    return path if path and os.path.isfile(path) else engine.audio_path(item_id)


def _recording_features(engine, aligner, item_id: str):
    """The recording's :class:`SyncFeatures` for ``aligner``, kept for the :data:`FEATURES_KEPT` most recent
    (each anchor edit in the compare view recomputes the path of the same two recordings)."""
    from ..io.audio import load_audio
    rec = engine.item(item_id)
    key = ("features", item_id, rec.source_path, rec.source_hash, aligner.features, int(aligner.coarse))
    memo = engine._sync_memo
    with engine._lock:                                    # the memo only: features are computed outside the lock
        found = memo.pop(key, None)
    if found is None:
        found = aligner.compute_features(*load_audio(_audio_file(engine, item_id), sr=22050))
    with engine._lock:
        memo[key] = found                                 # newest last
        for old in [k for k in memo if k[0] == "features"][:-FEATURES_KEPT]:
            del memo[old]
    return found


def _check_recordings(engine, item_ids) -> dict:
    """``{item id: ItemRecord}`` of the project's items, after checking that ``item_ids`` are recordings of it.

    The stored records (name, kind) suffice, and reading them is quick enough for the GUI thread.
    """
    from ..exceptions import UsageError
    infos = {rec.id: rec for rec in engine.session.items()}
    for item_id in item_ids:
        if item_id not in infos:
            raise UsageError(f"item {item_id!r}: not an item of this project")
        if infos[item_id].kind != "audio":
            raise UsageError(f"item {infos[item_id].name!r} is {infos[item_id].kind} data; only recordings are "
                             "aligned to each other")
    return infos


@dataclass(frozen=True)
class RecordingComparison:
    """Two recordings aligned to each other, and where the alignment is least sure.

    Attributes
    ----------
    path : SyncResult
        The warping path; ``path.map_times(reference_times_s)`` gives the target's times.
    question : SyncQuestion or None
        The reference time where the best path and its runner-up part most, with both candidate
        target times and the margin (None when no audible moment has a runner-up).
    anchors : tuple of SyncAnchorLabel
        The pair's stored anchors the path passes through, seen from the reference.
    model_id : str or None
        The project's sync model the path was found with (None: the aligner given, or the Euclidean cost).
    state : tuple
        Everything the path was computed from (:func:`sync_state`): equal states give the same path.
    """

    path: object
    question: object = None
    anchors: tuple = ()
    model_id: Optional[str] = None
    state: tuple = ()


def _state(anchors, model_id, aligner) -> tuple:
    import json
    return (tuple((a.id, float(a.reference_s), float(a.target_s)) for a in anchors), model_id,
            json.dumps(aligner.get_params(), sort_keys=True), tuple(float(v) for v in aligner.metric_weights()))


def sync_state(engine, reference_id: str, target_id: str) -> tuple:
    """Everything a sync of two recordings of a project depends on besides their audio, as a hashable tuple.

    The pair's stored anchors (id and both times, seen from ``reference_id``), the id of the project's sync
    model and that metric's options and weights: :func:`sync_between_items` gives the same path while it is
    unchanged (its :attr:`RecordingComparison.state` is this tuple as the sync read it).
    """
    from .anchors import pair_anchors, project_aligner, sync_model_id
    _check_recordings(engine, [reference_id, target_id])
    return _state(pair_anchors(engine, reference_id, target_id), sync_model_id(engine), project_aligner(engine))


def sync_between_items(engine, reference_id: str, target_id: str, *, aligner=None, cancel=None,
                       question: bool = False):
    """Align two recordings of a project (audio to audio).

    Parameters
    ----------
    engine : Engine
    reference_id, target_id : str
        Two different recordings of the project.
    aligner : SyncAligner, optional
        A trained sync aligner; the project's learned one (:func:`~marginalia.sync.anchors.learn_sync_metric`)
        otherwise, or the default (Euclidean) one.
    cancel : threading.Event, optional
    question : bool, default False
        Also find where an anchor would change the path the most (:meth:`SyncAligner.question`).

    The path passes through the pair's stored sync anchors (either way round).

    Returns
    -------
    RecordingComparison
    """
    from ..exceptions import CancelledError, UsageError
    from .anchors import anchor_times, pair_anchors, project_aligner, sync_model_id
    _check_recordings(engine, [reference_id, target_id])
    if reference_id == target_id:
        raise UsageError("choose another recording to compare this one with")
    model_id = sync_model_id(engine) if aligner is None else None
    aligner = project_aligner(engine, aligner)
    anchors = tuple(pair_anchors(engine, reference_id, target_id))
    times = anchor_times(anchors) if anchors else None
    ref = _recording_features(engine, aligner, reference_id)
    if cancel is not None and cancel.is_set():
        raise CancelledError("cancelled")
    tgt = _recording_features(engine, aligner, target_id)
    if cancel is not None and cancel.is_set():
        raise CancelledError("cancelled")
    path = aligner.predict(ref, tgt, anchors=times, runner_up=False)
    state = _state(anchors, model_id, aligner)
    if not question:
        return RecordingComparison(path, anchors=anchors, model_id=model_id, state=state)
    if cancel is not None and cancel.is_set():
        raise CancelledError("cancelled")
    return RecordingComparison(path, aligner.question(ref, tgt, anchors=times), anchors, model_id, state)


def carry_between_items(engine, source_id: str, target_ids, *, aligner=None, cancel=None,
                        progress: Optional[Callable] = None, as_suggestions: bool = False) -> CarryReport:
    """Carry every label of one recording of a project onto other recordings of it, as one undoable step.

    Each target is aligned to the source with the sync aligner (exact DTW on the recordings'
    chroma and onset features, :class:`~marginalia.sync.SyncAligner`) and the source's labels are
    mapped through the path (:func:`carry_labels`). Labels (or suggestions) a target already states
    are not added twice. As labels, the rest are validated together and stored as one step, or
    nothing is stored (a carried label that contradicts a target's labels is refused with both
    named). As suggestions (``as_suggestions``), each is checked against the target's labels on its
    own, one that contradicts them is left out (counted in ``skipped``), and the rest are stored as
    one step of suggested labels for the person to accept, move or reject.

    Parameters
    ----------
    engine : Engine
    source_id : str
        The labelled recording.
    target_ids : sequence of str
        Other recordings of the same music.
    aligner : SyncAligner, optional
        A trained sync aligner (``train --task sync``); the project's learned one otherwise, or the
        default (Euclidean) one. Each path passes through the stored sync anchors of its pair.
    cancel : threading.Event, optional
        Set to stop between targets (nothing is stored then).
    progress : callable, optional
        ``progress(done, total, message)`` after each target.
    as_suggestions : bool, default False
        Store suggested labels (``suggested=True``) rather than labels.

    Returns
    -------
    CarryReport
    """
    from ..exceptions import CancelledError, InfeasibleLabelsError, ParameterError, UsageError
    from ..types import label_fact
    from .anchors import anchor_times, pair_anchors, project_aligner

    target_ids = list(target_ids)
    infos = _check_recordings(engine, [source_id, *target_ids])
    if not target_ids:
        raise UsageError("no recording to carry the labels to: choose at least one other recording")
    if source_id in target_ids:
        raise UsageError(f"{infos[source_id].name!r} is the source itself; choose other recordings")
    if len(set(target_ids)) != len(target_ids):
        raise UsageError("a recording is chosen twice")
    labels = engine.labels(source_id)
    if not labels:
        raise UsageError(f"{infos[source_id].name!r} has no labels to carry")
    aligner = project_aligner(engine, aligner)

    def stop_if_asked():
        if cancel is not None and cancel.is_set():
            raise CancelledError("carry cancelled: nothing was stored")

    total = len(target_ids) + 1
    src_features = _recording_features(engine, aligner, source_id)
    src_positions = engine.sequence(source_id).positions
    if progress is not None:
        progress(1, total, f"features of {infos[source_id].name}")
    known = {label_fact(lab) for lab in engine.labels(suggestions=True)}
    new, per_target, skipped, already = [], {}, {}, 0
    for k, target in enumerate(target_ids):
        stop_if_asked()
        tgt_features = _recording_features(engine, aligner, target)
        anchors = pair_anchors(engine, source_id, target)
        result = aligner.predict(src_features, tgt_features, anchors=anchor_times(anchors) if anchors else None,
                                 runner_up=False)
        score = engine.score(target)
        carried = carry_labels(labels, result, src_positions, engine.sequence(target).positions, target,
                               target_events=None if score is None else score.n_events)
        per_target[target] = 0
        mine = []
        for lab in carried.labels:
            if label_fact(lab) in known:
                already += 1
                continue
            if as_suggestions:
                lab = replace(lab, suggested=True)
                try:
                    engine.validate_label(lab, pending=mine)
                except (ParameterError, InfeasibleLabelsError):
                    why = "it contradicts a label of the target"
                    skipped[why] = skipped.get(why, 0) + 1
                    continue
            known.add(label_fact(lab))
            mine.append(lab)
            per_target[target] += 1
        new.extend(mine)
        for _, why in carried.skipped:
            skipped[why] = skipped.get(why, 0) + 1
        if progress is not None:
            progress(k + 2, total, f"aligned {infos[target].name}")
    stop_if_asked()
    name = (f"{'suggestions from a carry' if as_suggestions else 'carry'} of {len(labels)} "
            f"label{'s' if len(labels) != 1 else ''} from {infos[source_id].name} to "
            f"{len(target_ids)} recording{'s' if len(target_ids) != 1 else ''}")
    stored = engine.add_labels(new, name=name) if new else []
    return CarryReport(stored=tuple(stored), per_target=per_target, skipped=skipped, already=already,
                       step_name=name)
