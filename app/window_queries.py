"""Active-learning questions: the queue, following a query to its item and range, accepting the model's answer."""

from __future__ import annotations

import dataclasses
import logging
import os
import tempfile
import time

import numpy as np

from marginalia.exceptions import MarginaliaError
from marginalia.types import AnchorLabel, describe_label

from . import errors
from .labelling import anchors_for_events, labels_from_structure

log = logging.getLogger("marginalia.app.window")


def _part(query) -> tuple:
    return query.item_id, query.start, query.stop


def first_disputed(engine, queries, like, *, cancel=None):
    """The first of ``queries`` whose part still holds a dispute, with its question; None if none does.

    Parts of the same kind and task as the shown item come first (someone labelling chromosomes
    is asked about chromosomes next), then the others in their order. A ranked part may have
    nothing left to ask (its runner-up gone under the labels of the last answer, or a random
    strategy's draw): it is passed over instead of ending the round.

    Parameters
    ----------
    engine : marginalia.engine.Engine
    queries : list of Query
        Ranked parts, best first.
    like : (dict, tuple or None)
        ``{item id: (kind, task)}`` and the ``(kind, task)`` of the shown item.

    Returns
    -------
    dict or None
        ``{"query", "question", "labels"}``: the part, its question and the ids of the labels
        its item held when the question was made.
    """
    pairs, here = like
    order = [q for q in queries if here is not None and pairs.get(q.item_id) == here]
    order += [q for q in queries if q not in order]
    for query in order:
        labels = frozenset(lab.id for lab in engine.labels(query.item_id))
        question = engine.question(query, cancel=cancel)
        if question is not None:
            return {"query": query, "question": question, "labels": labels}
    return None


class ActiveQueriesMixin:
    """Active-learning questions of :class:`~app.main_window.MainWindow`: the queue and its answers.

    Mixed into the window; uses its engine, runner, views and panels.
    """

    def refresh_queries(self, *, then_follow: bool = False):
        if self.engine is None:
            return
        engine = self.engine
        strategy = self.active_panel.current_strategy()
        self.active_panel.set_tasks(f"{info.task}/{info.kind}" for info in self.infos.values())
        task = self.active_panel.current_task()
        if then_follow:
            # a later refresh (e.g. the one deferred to the first prediction) supersedes this one in the
            # "queries" lane: it must still take the user to the question they asked for
            self._follow_queries = True

        here = self.current_item
        like = self._kind_and_task(here)
        follow = then_follow or getattr(self, "_follow_queries", False)

        def work(cancel, progress):
            qs = engine.next_queries(10, strategy=strategy, task_name=task, cancel=cancel)
            first = first_disputed(engine, qs, like, cancel=cancel) if follow else None
            return qs, first, engine.learning_curve(here), engine.stopping_signal(here)

        def done(result):
            queries, first, curve, signal = result
            self.refresh_items()       # the ranking scored every whole item: the browser shows their margins
            names = {i: info.name for i, info in self.infos.items()}
            self.active_panel.set_queries(queries, names, self._describe_query)
            self.active_panel.set_curve(curve)
            self.model_panel.set_stopping(signal)
            self._show_item_queries()
            if getattr(self, "_follow_queries", False):
                self._follow_queries = False
                if first is not None:
                    self._prefetch = first
                    self.follow_query(first["query"])
                elif not self.infos:
                    self.statusBar().showMessage("no question to ask yet: import data first (File \u25b8 Import)",
                                                 5000)
                else:
                    self.statusBar().showMessage("no question left to ask: every part is labelled or certain", 5000)

        def failed(exc):
            self._follow_queries = False     # no question is coming: A and B act on the view again
            self._on_background_error(exc)

        self.runner.submit("queries", work, on_done=done, on_error=failed, description="ranking questions")

    def _kind_and_task(self, item_id):
        """``{item id: (kind, task)}`` of every item and the pair of ``item_id``: who is "like" the shown item."""
        pairs = {i: (info.kind, info.task) for i, info in self.infos.items()}
        return pairs, pairs.get(item_id)

    def _refresh_curve(self):
        if self.engine is None:
            return
        try:
            self.active_panel.set_curve(self.engine.learning_curve(self.current_item))
            signal = self.engine.stopping_signal(self.current_item)
            self.model_panel.set_stopping(signal)
        except MarginaliaError as exc:
            log.warning("learning curve: %s", exc)

    def _describe_query(self, q):
        """The queried span as the Labels panel and the exported files number it: 0-based, both ends included."""
        info = self.infos.get(q.item_id)
        last = max(q.stop - 1, q.start)
        if info is not None and info.task == "alignment":
            return f"events {q.start}\u2013{last}"
        if info is None:
            return f"{q.start}\u2013{last}"
        unit = {"cgh": "probes", "audio": "frames"}.get(info.kind, "samples")
        return f"{unit} {q.start}\u2013{last}"

    def _show_item_queries(self):
        if self.current_item is None:
            return
        qs = [q for q in self.active_panel.queries() if q.item_id == self.current_item]
        self.active_view().set_queries([dataclasses.replace(q, start=a, stop=b)
                                        for q in qs for a, b in [self.query_samples(q)]])

    def next_question(self):
        """Ask the engine for the most useful part and jump to it."""
        self._answering = False
        self._drop_question()      # until the next one is shown, A and B answer nothing stale
        self.refresh_queries(then_follow=True)

    def _drop_question(self):
        self.current_question = None
        self._clear_question_overlays()
        self.active_panel.set_question(None)

    def follow_query(self, query):
        """Show the query's item, frame its part and ask the engine for the question about it."""
        self.current_query = query
        self.current_question = None
        self._clear_question_overlays()
        self.active_panel.set_current(query)
        self.active_panel.set_question(None)
        self._pending_frame = query
        if query.item_id == self.current_item:
            self._apply_pending_frame()
            if self._drawn_prediction is not None:
                self._draw_prediction(self._drawn_prediction, force=True)   # this question's runner-up
        else:
            self.show_item(query.item_id)
        ready = self._prefetched_question(query)
        if ready is not None:
            self._show_question(ready)
            return
        engine = self.engine
        self.runner.submit("question", lambda cancel, p: engine.question(query, cancel=cancel),
                           on_done=self._show_question, on_error=self._on_background_error,
                           description="narrowing the question")

    def _prefetched_question(self, query):
        """The question prefetched for ``query``, if it is still about the labels its item holds."""
        hit = getattr(self, "_prefetch", None)
        if hit is None or hit.get("question") is None:
            return None
        q = hit["question"]
        same = (q.query.item_id, q.query.start, q.query.stop) == (query.item_id, query.start, query.stop)
        if not same or hit["labels"] != self._label_ids(query.item_id):
            return None
        return q

    def _label_ids(self, item_id) -> frozenset:
        return frozenset(lab.id for lab in self.engine.labels(item_id))

    def _show_question(self, question):
        """Show ``question`` in the panel and on the view (zoomed to it), then prefetch the next one."""
        query = self.current_query
        if question is None:
            if query is not None and getattr(self, "_answering", False):
                # the answer just given settled the part the next question was to be about: rank anew
                self.next_question()
            elif query is not None:
                self.statusBar().showMessage("nothing disputed on this part any more: press Q for the next "
                                             "question", 6000)
            return
        self._answering = False
        if query is None or (question.query.item_id, question.query.start, question.query.stop) != \
                (query.item_id, query.start, query.stop):
            return                       # the person moved on to another question meanwhile
        self.current_question = question
        self._show_question_panel(question)
        if self.current_item == question.item_id and self._item_payload is not None and \
                self._pending_frame is None:
            self._draw_question()
        hear = " · Space: hear both onsets" if question.event is not None else ""
        self.statusBar().showMessage(f"{question.sentence}  (A: model · B: runner-up · N: neither, "
                                     f"then draw the label{hear})", 15000)
        self._start_prefetch()

    def _show_question_panel(self, question):
        """The question and its answers' labels in the panel, worded in the item's units once it is shown
        (sample numbers until then: the question may come before its item has loaded)."""
        positions, units = None, ""
        if self._item_payload is not None and self.current_item == question.item_id:
            seq = self._item_payload["sequence"]
            positions, units = seq.positions, seq.units
        self.active_panel.set_question(question, lambda lab: describe_label(lab, positions, units))

    def _recheck_question(self, pred):
        """Ask the shown question again when ``pred`` comes from a newer model than the question's.

        An answer retrains the model in the background while the next question (prepared under
        the model before the answer) is read: its margin and candidates would then disagree with
        the queue and the plot, which the new model redraws. The new model's question replaces it;
        if the new model has nothing left to ask there, the status bar says so.
        """
        q = self.current_question
        if q is None or self.engine is None or pred is None or pred.item_id != q.item_id or q.model_id is None \
                or pred.model_id == q.model_id or self.runner.is_busy("question"):
            return
        engine, query = self.engine, q.query

        def done(fresh):
            if self.current_question is not q:
                return                      # answered or moved on meanwhile
            if fresh is None:
                self._drop_question()
                self.statusBar().showMessage("the retrained model has nothing disputed here any more: press Q for "
                                             "the next question", 8000)
                return
            self._show_question(fresh)

        self.runner.submit("question", lambda cancel, p: engine.question(query, cancel=cancel), on_done=done,
                           on_error=self._on_background_error, description="asking the question under the new model")

    def play_question_onsets(self):
        """Play the shown alignment question's two candidate onsets: the excerpt with a click at the model's
        onset, then again with a click at the runner-up's (Space while such a question is shown)."""
        q = self.current_question
        if q is None or self.engine is None or self.audio is None:
            return
        if getattr(self, "_listen_dir", None) is None:
            self._listen_dir = tempfile.TemporaryDirectory(prefix="marginalia-listen-")
        path = os.path.join(self._listen_dir.name, f"question-{q.item_id}-{q.event}.wav")
        engine, audio = self.engine, self.audio

        def done(clicks):
            if self.current_question is not q or not audio.play(path):
                return
            said = ", then ".join(f"{'the model' if who == 'model' else 'the runner-up'}'s onset (click at "
                                  f"{at:.1f} s)" for who, at in clicks)
            self.statusBar().showMessage(f"playing {said}", 8000)

        self.runner.submit("listen", lambda cancel, p: engine.question_audio(q, path), on_done=done,
                           on_error=self._on_background_error, description="preparing the two onsets to hear")

    def _draw_question(self):
        q = self.current_question
        if q is None or q.item_id != self.current_item:
            return
        view = self.active_view()
        self._clear_question_overlays()
        view.set_question(q)
        view.frame(*q.view)

    def _clear_question_overlays(self):
        for view in (self.profile_view, getattr(self, "_spec_view", None)):
            if view is not None and getattr(view, "question_overlay", None) is not None:
                view.set_question(None)

    def _start_prefetch(self):
        """Rank the questions and narrow the next one in the background while the person reads this one."""
        if self.engine is None or self.current_question is None:
            return
        engine, strategy = self.engine, self.active_panel.current_strategy()
        task = self.active_panel.current_task()
        shown = self.current_question
        asked = shown.query
        like = self._kind_and_task(asked.item_id)

        def work(cancel, progress):
            queries = engine.next_queries(10, strategy=strategy, task_name=task, cancel=cancel)
            rest = [q for q in queries if _part(q) != _part(asked)]
            nxt = first_disputed(engine, rest, like, cancel=cancel) or {"query": None, "question": None,
                                                                       "labels": None}
            engine.prepare_answers(shown, cancel=cancel)     # what the redraw after A or B will need
            return {"all": queries, "queries": rest, **nxt}

        def done(result):
            self._prefetch = result
            # the ranking is under the model that learned from the last answer: the queue and the browser follow it
            self.refresh_items()
            names = {i: info.name for i, info in self.infos.items()}
            self.active_panel.set_queries(result["all"], names, self._describe_query)
            if self.current_query is not None:
                self.active_panel.set_current(self.current_query)
            self._show_item_queries()

        self._prefetch = None
        self.runner.submit("prefetch", work, on_done=done, on_error=self._on_background_error,
                           description="preparing the next question")

    def answer_question(self, which: str):
        """Store the labels the shown question's ``which`` answer writes, then go to the next question."""
        q = self.current_question
        if self.engine is None or q is None or q.item_id != self.current_item:
            return False
        self._edit_t0 = time.perf_counter()
        try:
            stored = self.engine.answer(q, which)      # one step: one undo takes the answer back
        except MarginaliaError as exc:
            self.last_error_dialog = errors.show_error(self, "This answer conflicts with your labels", exc)
            return True
        who = "the model" if which == "model" else "the runner-up"
        self.statusBar().showMessage(f"{who} is right: {len(stored)} label(s) added", 4000)
        self._refresh_labels()
        self._on_undo_state(self.engine.can_undo, self.engine.can_redo)
        self._label_edited(q.item_id)
        self._after_answer(q)
        return True

    def _after_answer(self, question):
        """Drop the answered part from the queue and show the prefetched next question (or rank anew)."""
        answered = question.query
        left = [q for q in self.active_panel.queries()
                if (q.item_id, q.start, q.stop) != (answered.item_id, answered.start, answered.stop)]
        names = {i: info.name for i, info in self.infos.items()}
        self._drop_question()
        hit = getattr(self, "_prefetch", None)
        self._answering = True
        if hit is not None and hit.get("query") is not None:
            self.active_panel.set_queries(hit["queries"], names, self._describe_query)
            self.follow_query(hit["query"])
            return
        self.active_panel.set_queries(left, names, self._describe_query)
        self.next_question()

    def _question_on_its_way(self) -> bool:
        """A question was asked for (Q) or is shown while its item still loads: A and B must wait for it.

        Without this guard, A pressed in that instant accepted the prediction over the part in view:
        labels about an item (or a range) the person never judged.
        """
        q = self.current_question
        waiting = (q is not None and q.item_id != self.current_item) or getattr(self, "_follow_queries", False) \
            or (self.current_query is not None and q is None and self.runner.is_busy("question"))
        if waiting:
            self.statusBar().showMessage("the question is on its way: answer it once it is shown", 4000)
        return bool(waiting)

    def answer_model(self):
        """``A``: the model is right on the shown question (without one: accept the prediction here)."""
        if not self.answer_question("model") and not self._question_on_its_way():
            self.accept_prediction_here()

    def answer_runner_up(self):
        """``B``: the runner-up is right on the shown question (without one: accept the runner-up here)."""
        if not self.answer_question("runner-up") and not self._question_on_its_way():
            self.accept_runner_up_here()

    def answer_neither(self):
        """``N``: neither is right; the person draws the label (nothing is written for them)."""
        if self.current_question is None:
            self.statusBar().showMessage("no question shown: press Q for one", 4000)
            return
        self.statusBar().showMessage("neither: draw the label yourself on the highlighted part (drag = region, "
                                     "keys 0/1/2/S pick its kind, Ctrl+click = boundary), then Q for the next "
                                     "question", 15000)

    def _apply_pending_frame(self):
        if self._pending_frame is None:
            return
        query = self._pending_frame
        self._pending_frame = None
        q = getattr(self, "current_question", None)
        if q is not None and q.query is query:
            self._show_question_panel(q)         # its item is shown now: the answers in its units
            self._draw_question()
            return
        start, stop = self.query_samples(query)
        self.active_view().frame(start, stop)

    def query_samples(self, query):
        """Sample (frame) range ``[start, stop)`` of a query on the current item.

        Alignment queries name score events ``start..stop-1``; they are placed with the
        drawn alignment (or the score's own timing when there is none).
        """
        info = self.infos.get(query.item_id)
        if info is None or info.task != "alignment" or self._frame_times is None:
            return query.start, query.stop
        T = len(self._frame_times)
        pred = self._drawn_prediction
        onsets = getattr(getattr(pred, "structure", None), "onsets", None)
        if onsets is not None and pred.item_id == query.item_id:
            start = int(onsets[min(query.start, len(onsets) - 1)])
            stop = int(onsets[query.stop]) if query.stop < len(onsets) else T
            return start, max(stop, start + 1)
        score = self.score_view.score if self._spec_view is not None else None
        if score is not None:
            ev_t = score.event_onsets_s
            t0 = ev_t[min(query.start, len(ev_t) - 1)]
            t1 = ev_t[query.stop] if query.stop < len(ev_t) else self._frame_times[-1]
            start, stop = np.searchsorted(self._frame_times, [t0, t1])
            return int(min(start, T - 1)), int(max(min(stop, T), start + 1))
        return 0, T

    def _part_here(self):
        """(start, stop) of the current query on this item, else of the visible range."""
        q = self.current_query
        if q is not None and q.item_id == self.current_item:
            return self.query_samples(q)
        view = self.active_view()
        if view.mapping is None:
            return None
        return view.mapping.region_indices(*view.x_range())

    def accept_prediction_here(self):
        if self.engine is None or self.current_item is None:
            return
        part = self._part_here()
        if part is None:
            return
        item_id = self.current_item
        engine = self.engine
        info = self.infos.get(item_id)
        if info is not None and info.task == "alignment":
            part = self._event_range(part)
        self._edit_t0 = time.perf_counter()
        self.runner.submit("accept", lambda c, p: engine.accept_prediction(item_id, *part),
                           on_done=lambda labels: self._after_accept(item_id, labels),
                           on_error=lambda e: self._show_error("Cannot accept the prediction here", e),
                           description="accepting the prediction")

    def _event_range(self, part):
        """Events whose drawn onsets fall in the frame range ``part`` (as ``[first, last+1)``)."""
        q = self.current_query
        if q is not None and q.item_id == self.current_item:
            return q.start, q.stop
        onsets = getattr(getattr(self._drawn_prediction, "structure", None), "onsets", None)
        if onsets is None:
            return 0, 0
        inside = np.flatnonzero((onsets >= part[0]) & (onsets < part[1]))
        return (int(inside[0]), int(inside[-1]) + 1) if inside.size else (0, 0)

    def _after_accept(self, item_id, labels):
        if self.current_question is not None and self.current_question.item_id == item_id:
            self._drop_question()
        if not labels:
            self.statusBar().showMessage("nothing to add here: it is already labelled (move or delete a label "
                                         "to change it)", 6000)
            return
        self.statusBar().showMessage(f"accepted the prediction: {len(labels)} label(s) added", 4000)
        self._refresh_labels()
        self._on_undo_state(self.engine.can_undo, self.engine.can_redo)
        self._label_edited(item_id)

    def accept_runner_up_here(self):
        pred = self._drawn_prediction
        part = self._part_here()
        info = self.infos.get(self.current_item)
        alignment = info is not None and info.task == "alignment"
        if alignment and pred is not None and part is not None:
            first, stop = self._event_range(part)
            anchored = {lab.event for lab in self.engine.labels(self.current_item) if isinstance(lab, AnchorLabel)}
            if stop > first and anchored.issuperset(range(first, stop)):
                self.statusBar().showMessage(f"events {first}\u2013{stop - 1} are already anchored: move or delete "
                                             "their anchors to change them", 6000)
                return
        if pred is None or part is None or pred.runner_up is None:
            self.statusBar().showMessage("no runner-up to accept here", 4000)
            return
        if alignment:
            labels = anchors_for_events(self.current_item, pred.runner_up, first, stop, self._frame_times,
                                        skip=anchored)
        else:
            labels = labels_from_structure(self.current_item, pred.runner_up, part[0], part[1], self._frame_times)
        if not labels:
            self.statusBar().showMessage("the runner-up has nothing to label in this part", 4000)
            return
        self._edit_t0 = time.perf_counter()
        try:
            self.engine.add_labels(labels)      # one edit: one undo takes the runner-up back
        except MarginaliaError as exc:
            self.last_error_dialog = errors.show_error(self, "The runner-up conflicts with your labels", exc)
            return
        if self.current_question is not None and self.current_question.item_id == self.current_item:
            self._drop_question()
        self.statusBar().showMessage(f"accepted the runner-up: {len(labels)} label(s) added", 4000)
        self._refresh_labels()
        self._on_undo_state(self.engine.can_undo, self.engine.can_redo)
        self._label_edited(self.current_item)
