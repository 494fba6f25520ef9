"""Active-learning questions: the queue, following a query to its item and range, accepting the model's answer."""

from __future__ import annotations

import dataclasses
import logging
import time

import numpy as np

from marginalia.exceptions import MarginaliaError
from marginalia.types import AnchorLabel

from . import errors
from .labelling import anchors_for_events, labels_from_structure

log = logging.getLogger("marginalia.app.window")


class ActiveQueriesMixin:
    """Active-learning questions of :class:`~app.main_window.MainWindow`: the queue and its answers.

    Mixed into the window; uses its engine, runner, views and panels.
    """

    def refresh_queries(self, *, then_follow: bool = False):
        if self.engine is None:
            return
        engine = self.engine
        strategy = self.active_panel.current_strategy()
        if then_follow:
            # a later refresh (e.g. the one deferred to the first prediction) supersedes this one in the
            # "queries" lane: it must still take the user to the question they asked for
            self._follow_queries = True

        here = self.current_item

        def work(cancel, progress):
            qs = engine.next_queries(10, strategy=strategy, cancel=cancel)
            return qs, engine.learning_curve(here), engine.stopping_signal(here)

        def done(result):
            queries, curve, signal = result
            self.refresh_items()       # the ranking scored every whole item: the browser shows their margins
            names = {i: info.name for i, info in self.infos.items()}
            self.active_panel.set_queries(queries, names, self._describe_query)
            self.active_panel.set_curve(curve)
            self.active_panel.set_stopping(signal)
            self._show_item_queries()
            if getattr(self, "_follow_queries", False):
                self._follow_queries = False
                if queries:
                    self.follow_query(self._first_query_like_current(queries))
                elif not self.infos:
                    self.statusBar().showMessage("no question to ask yet: import data first (File \u25b8 Import)",
                                                 5000)
                else:
                    self.statusBar().showMessage("no question to ask: every part is certain", 5000)

        self.runner.submit("queries", work, on_done=done, on_error=self._on_background_error,
                           description="ranking questions")

    def _first_query_like_current(self, queries):
        """The best query on an item of the same kind and task as the shown one (else the best overall):
        someone labelling chromosomes is asked about chromosomes next."""
        here = self.infos.get(self.current_item)
        if here is not None:
            for q in queries:
                info = self.infos.get(q.item_id)
                if info is not None and (info.kind, info.task) == (here.kind, here.task):
                    return q
        return queries[0]

    def _refresh_curve(self):
        if self.engine is None:
            return
        try:
            self.active_panel.set_curve(self.engine.learning_curve(self.current_item))
            self.active_panel.set_stopping(self.engine.stopping_signal(self.current_item))
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
        self.refresh_queries(then_follow=True)

    def follow_query(self, query):
        """Show the query's item and frame its part."""
        self.current_query = query
        self.active_panel.set_current(query)
        self._pending_frame = query
        if query.item_id == self.current_item:
            self._apply_pending_frame()
            if self._drawn_prediction is not None:
                self._draw_prediction(self._drawn_prediction, force=True)   # this question's runner-up
        else:
            self.show_item(query.item_id)
        self.statusBar().showMessage(f"question {query.rank + 1}: is the model right here? "
                                     "(A: yes \u00b7 Shift+A: the runner-up is \u00b7 or draw a label)", 8000)

    def _apply_pending_frame(self):
        if self._pending_frame is None:
            return
        query = self._pending_frame
        self._pending_frame = None
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
        self.statusBar().showMessage(f"accepted the runner-up: {len(labels)} label(s) added", 4000)
        self._refresh_labels()
        self._on_undo_state(self.engine.can_undo, self.engine.can_redo)
        self._label_edited(self.current_item)
