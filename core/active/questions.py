"""Questions a person answers in one look: where the best structure and its runner-up disagree.

A query names a part (a chromosome, a window of frames, a phrase of events); the
best structure and its runner-up on that part usually agree almost everywhere.
A question narrows the part to the place where they disagree and says, before
anyone answers, exactly which partial labels each answer writes:

* segmentation: the smallest window between two changes both structures share
  (or the part's ends) that holds every change they do not share. Inside it one
  of them has no change, so the question is "is there a change here?" and the
  answers are count labels on that window only ("no change", "exactly one
  change", "at least one change"); nothing is said about the rest of the item,
  and no exact boundary is claimed;
* alignment: the one event whose onset they place farthest apart; the answers
  are an anchor of that event at either onset.

The module is pure (no engine): the tasks compute the two structures, these
functions turn them into a :class:`Question`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional

import numpy as np

from ..exceptions import ParameterError
from ..types import AnchorLabel, MidiScore, Query, RegionKind, RegionLabel

__all__ = ["ANSWERS", "Question", "disputed_window", "count_kind", "segmentation_question", "alignment_question",
           "format_position"]

#: the answers a question offers labels for ("neither" writes nothing: the person draws the label)
ANSWERS = ("model", "runner-up")


@dataclass(frozen=True)
class Question:
    """One question about a part of an item, with the labels each answer writes.

    Parameters
    ----------
    query : Query
        The ranked part the question narrows.
    region : (int, int)
        The disputed range ``[start, stop)`` in the item's sample (frame) index, to highlight.
    view : (int, int)
        The range to show around it (the region with the context a person needs to judge it).
    sentence : str
        The question in one sentence.
    best_marks, runner_marks : tuple of int
        Sample (frame) indices of the changes (onsets) of the best structure and of the
        runner-up inside ``view``, to draw as two overlays.
    margin : float
        The part's best-vs-2nd margin, the ``m`` of the query's uncertainty ``exp(-m)``.
    answers : dict
        ``{"model": labels, "runner-up": labels}``: tuples of labels each answer stores.
    event : int, optional
        For alignments: the event asked about.
    model_id : str, optional
        The model the question was made under (set by the engine): a newer model may ask it otherwise.
    """

    query: Query
    region: tuple
    view: tuple
    sentence: str
    best_marks: tuple
    runner_marks: tuple
    margin: float
    answers: dict = field(default_factory=dict)
    event: Optional[int] = None
    model_id: Optional[str] = None

    @property
    def item_id(self) -> str:
        return self.query.item_id


def count_kind(n: int) -> RegionKind:
    """The region label that ``n`` changes inside a window satisfy and that tells 0 from more."""
    return RegionKind.ZERO if n == 0 else (RegionKind.ONE if n == 1 else RegionKind.AT_LEAST_ONE)


def disputed_window(best_changes, runner_changes, start: int, stop: int) -> Optional[tuple]:
    """The smallest ``[a, b)`` between changes both structures share that holds every change they do not.

    Parameters
    ----------
    best_changes, runner_changes : array_like of int
        Change indices (``start < c < stop`` are used; others are ignored).
    start, stop : int
        The part.

    Returns
    -------
    (a, b) or None
        ``a`` is the last shared change before the first differing one (else ``start``), ``b`` the
        first shared change after the last differing one (else ``stop``); None when they agree.
    """
    def inside(ch):
        ch = np.asarray(ch, dtype=np.int64).reshape(-1)
        return set(int(c) for c in ch[(ch > start) & (ch < stop)])

    b_set, r_set = inside(best_changes), inside(runner_changes)
    differ = b_set ^ r_set
    if not differ:
        return None
    shared = sorted(b_set & r_set)
    lo, hi = min(differ), max(differ)
    a = max([c for c in shared if c < lo], default=start)
    b = min([c for c in shared if c > hi], default=stop)
    return a, b


def format_position(value: float, units: str, step: float = 0.0) -> str:
    """A position for a sentence: Mb for base pairs, seconds for audio, with enough digits to tell ``step`` apart."""
    if units == "bp":
        digits = 1 if step >= 2e5 or step <= 0 else (2 if step >= 2e4 else 3)
        return f"{value / 1e6:.{digits}f}"
    if units == "s":
        return f"{value:.2f}"
    return f"{value:g}"


def _unit_word(units: str) -> str:
    return {"bp": " Mb", "s": " s"}.get(units, "")


def segmentation_question(query: Query, best_changes, runner_changes, margin: float, *, positions,
                          units: str, item_name: str, context: float = 0.5) -> Optional[Question]:
    """The question that tells a segmentation from its runner-up on the query's part.

    Parameters
    ----------
    query : Query
        The part ``[query.start, query.stop)`` (sample indices).
    best_changes, runner_changes : array_like of int
        Change indices of the two structures in the item's index (only those inside the part count).
    margin : float
    positions : ndarray, shape (T,)
        The item's sample positions (base pairs, seconds).
    units : str
        ``"bp"``, ``"s"`` or anything else.
    item_name : str
    context : float
        Share of the window's length shown on each side of it (within the part).

    Returns
    -------
    Question or None
        None when the two agree inside the part (nothing to ask).
    """
    start, stop = int(query.start), int(query.stop)
    window = disputed_window(best_changes, runner_changes, start, stop)
    if window is None:
        return None
    a, b = window
    positions = np.asarray(positions, dtype=np.float64)
    if positions.shape[0] < stop:
        raise ParameterError(f"positions: expected at least {stop} positions for the part, got {positions.shape[0]}")

    def count(ch):
        ch = np.asarray(ch, dtype=np.int64).reshape(-1)
        return int(np.count_nonzero((ch > a) & (ch < b)))

    answers = {"model": (RegionLabel(item_id=query.item_id, start=a, stop=b, kind=count_kind(count(best_changes))),),
               "runner-up": (RegionLabel(item_id=query.item_id, start=a, stop=b,
                                         kind=count_kind(count(runner_changes))),)}
    pad = int(round(context * (b - a)))
    v0, v1 = max(start, a - pad), min(stop, b + pad)

    def marks(ch):
        ch = np.asarray(ch, dtype=np.int64).reshape(-1)
        return tuple(int(c) for c in ch[(ch > v0) & (ch < v1)])

    lo, hi = float(positions[a]), float(positions[b - 1])
    word = _unit_word(units)
    where = f"between {format_position(lo, units, hi - lo)} and {format_position(hi, units, hi - lo)}{word}"
    sentence = f"Is there a change {where} on {item_name}?"
    return Question(query=query, region=(a, b), view=(v0, v1), sentence=sentence, best_marks=marks(best_changes),
                    runner_marks=marks(runner_changes), margin=float(margin), answers=answers)


def _note_names(pitches) -> str:
    names = ("C", "C#", "D", "D#", "E", "F", "F#", "G", "G#", "A", "A#", "B")
    return " ".join(f"{names[p % 12]}{p // 12 - 1}" for p in pitches)


def alignment_question(query: Query, best_onsets, runner_onsets, best_times_s, runner_times_s, margin: float, *,
                       score: Optional[MidiScore] = None, n_frames: int, anchored=(),
                       tolerance_s: float = 0.05) -> Optional[Question]:
    """The question that tells an alignment from its runner-up on a phrase: one event's onset.

    Parameters
    ----------
    query : Query
        The phrase: events ``[query.start, query.stop)``.
    best_onsets, runner_onsets : array_like of int, shape (E,)
        Onset frame of every event in the two alignments.
    best_times_s, runner_times_s : array_like of float, shape (E,)
        The same in seconds (the anchors' times).
    margin : float
    score : MidiScore, optional
        Names the event's notes in the sentence.
    n_frames : int
    anchored : iterable of int
        Events already anchored (never asked about).
    tolerance_s : float
        Tolerance of the anchors the answers write, at most half the distance between the two onsets
        (so each answer rules the other onset out).

    Returns
    -------
    Question or None
        None when no unanchored event of the phrase moves.
    """
    best_onsets = np.asarray(best_onsets, dtype=np.int64)
    runner_onsets = np.asarray(runner_onsets, dtype=np.int64)
    first, stop = int(query.start), min(int(query.stop), best_onsets.shape[0])
    events = [e for e in range(first, stop) if e not in set(int(x) for x in anchored)]
    if not events:
        return None
    shift = np.abs(runner_onsets[events] - best_onsets[events])
    if not shift.max() > 0:
        return None
    e = int(events[int(np.argmax(shift))])
    f0, f1 = sorted((int(best_onsets[e]), int(runner_onsets[e])))
    # context: from the previous event's onset to the next one's, in both alignments
    before = min(best_onsets[e - 1], runner_onsets[e - 1]) if e > 0 else max(f0 - (f1 - f0) - 1, 0)
    after = max(best_onsets[e + 1], runner_onsets[e + 1]) if e + 1 < best_onsets.shape[0] else n_frames - 1
    v0, v1 = int(max(before, 0)), int(min(after + 1, n_frames))
    t_best, t_run = float(best_times_s[e]), float(runner_times_s[e])
    what = "this note"
    if score is not None:
        pitches = score.event_pitches(e)
        what = f"{'this chord' if len(pitches) > 1 else 'this note'} ({_note_names(pitches)}, event {e})"
    sentence = f"Does {what} start at {t_best:.2f} s or at {t_run:.2f} s?"
    tol = min(float(tolerance_s), 0.5 * abs(t_run - t_best))
    answers = {"model": (AnchorLabel(item_id=query.item_id, event=e, time_s=t_best, tolerance_s=tol),),
               "runner-up": (AnchorLabel(item_id=query.item_id, event=e, time_s=t_run, tolerance_s=tol),)}
    return Question(query=query, region=(f0, f1 + 1), view=(min(v0, f0), max(v1, f1 + 1)), sentence=sentence,
                    best_marks=(int(best_onsets[e]),), runner_marks=(int(runner_onsets[e]),), margin=float(margin),
                    answers=answers, event=e)
