"""The active-learning loop (Lou et al. 2014, Alg. 1.2 and the combined strategy).

An :class:`ActiveLoop` repeatedly

1. scores every unlabelled part under the current parameters and picks the
   most uncertain ones (a batch, with overlapping parts suppressed);
2. asks the *oracle* (the annotator, or a replay of ground truth) for partial
   labels on each queried part;
3. updates the parameters: one structured-perceptron pass over every labelled
   item (Alg. 1.2 lines 8-11), and with ``learner="combined"`` a warm-started
   regularised (SSVM) fit every ``refit_every`` labelled parts and at
   :meth:`ActiveLoop.finish`;
4. records the average uncertainty of the remaining pool (and, with
   ``stopping_set="pool"``, of every part of the pool), the stopping measure
   η (eq. 1.8) and a learning-curve row.

The loop talks to the task (segmentation, alignment) through a small
:class:`LoopAdapter` protocol, so it does not depend on how a model or a
learner is implemented.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Protocol, runtime_checkable

import numpy as np

from marginalia.active.parts import Part, parts_for_items
from marginalia.active.stopping import StoppingCriterion, mean_uncertainty
from marginalia.active.uncertainty import (
    PartScores,
    _rng,
    check_n_jobs,
    check_strategy,
    pool_uncertainties,
    select_batch,
)
from marginalia.exceptions import InfeasibleLabelsError, MarginaliaError, ParameterError
from marginalia.types import Query

__all__ = ["LoopAdapter", "PartPool", "OracleError", "ActiveLoop", "LEARNERS", "STOPPING_SETS", "STOP_ON"]

LEARNERS = ("perceptron", "combined")
STOPPING_SETS = ("unlabelled", "pool")
STOP_ON = ("label", "refit")


class OracleError(MarginaliaError):
    """The oracle did not answer a query (it refused, returned nothing or failed).

    Attributes
    ----------
    query : Query
        The query that was not answered.
    """

    def __init__(self, message: str, query=None):
        self.query = query
        super().__init__(message)


@runtime_checkable
class LoopAdapter(Protocol):
    """What the loop needs from a task (model + decoders + learners).

    The adapter owns the parameters ``w_`` and the learner state.
    """

    w_: np.ndarray

    def initialize(self, items: Mapping[str, object]) -> None:
        """Set the starting parameters from the unlabelled items."""

    def check_labels(self, item_id: str, data, labels: list) -> None:
        """Raise ParameterError / InfeasibleLabelsError if ``labels`` (all labels of the item) are invalid."""

    def part_scores(self, data, part: Part, labels: list) -> PartScores:
        """Best / runner-up / worst scores of ``part`` under ``w_`` (``labels``: the item's labels)."""

    def perceptron_step(self, data, labels: list) -> None:
        """One structured-perceptron update of ``w_`` on one item with its partial labels."""

    def refit(self, data: list, labels: list) -> None:
        """Regularised fit of ``w_`` (warm-started) on items ``data`` with their label lists ``labels``."""

    def evaluate(self, held_out) -> float:
        """Loss of ``w_`` on a held-out set (its format is the adapter's)."""


@dataclass(frozen=True)
class PartPool:
    """The items and the parts of them that can be queried.

    Parameters
    ----------
    items : mapping of str to data
        Item id to whatever the loop adapter needs (e.g. a Sequence).
    parts : list of Part
        Every part must name an item of ``items``.
    """

    items: Mapping[str, object]
    parts: list = field(default_factory=list)

    def __post_init__(self):
        if not isinstance(self.items, Mapping):
            raise ParameterError(f"PartPool.items: expected a mapping of item id to data, "
                                 f"got {type(self.items).__name__}")
        parts = list(self.parts)
        for p in parts:
            if not isinstance(p, Part):
                raise ParameterError(f"PartPool.parts: expected Part objects, got {type(p).__name__}")
            if p.item_id not in self.items:
                raise ParameterError(f"PartPool.parts: part {p} names item {p.item_id!r}, which is not in items")
        if len(set(parts)) != len(parts):
            raise ParameterError("PartPool.parts: contains the same part twice")
        object.__setattr__(self, "items", dict(self.items))
        object.__setattr__(self, "parts", parts)

    @classmethod
    def from_items(cls, items: Mapping[str, object], *, window: int | None = None,
                   hop: int | None = None) -> "PartPool":
        """A pool with each item as one part (or its windows when longer than ``window``)."""
        return cls(items, parts_for_items(items, window=window, hop=hop))


def _check_int(name, value, minimum):
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < minimum:
        raise ParameterError(f"{name}: expected an integer >= {minimum}, got {value!r}")
    return int(value)


class ActiveLoop:
    """Query parts, receive labels from an oracle, update the model, record the learning curve.

    Parameters
    ----------
    pool : PartPool or mapping of str to data
        The unlabelled pool; a mapping makes every item one part.
    model : LoopAdapter
        The task: see :class:`LoopAdapter` (e.g.
        :class:`marginalia.active.segmentation_adapter.SegmentationAdapter`).
    oracle : callable ``(query, part) -> list of labels``
        Answers a query with partial labels that lie inside the part (an empty
        list is a valid answer: "nothing to mark here"). ``None`` or an
        exception means it refused: :class:`OracleError` is raised and the
        loop is unchanged.
    strategy : str
        One of ``"random"``, ``"scoring"``, ``"best-vs-worst"``, ``"best-vs-2nd"``.
    batch_size : int
        Parts queried per step.
    learner : {"perceptron", "combined"}
        ``"combined"`` adds a warm-started regularised fit every ``refit_every``
        labelled parts and at :meth:`finish` (Lou et al. 2014, §1.4.2).
    refit_every : int
    held_out : object, optional
        Passed to ``model.evaluate`` after every step for the learning curve.
    stopping : StoppingCriterion, optional
        Defaults to ``StoppingCriterion()``.
    stopping_set : {"unlabelled", "pool"}
        What the stopping criterion averages. ``"unlabelled"`` (Lou et al. 2014, Alg. 1.2
        line 12): the uncertainty of the parts still unlabelled; it also drifts
        down because the most uncertain parts are the ones taken out.
        ``"pool"`` (Vlachos 2008's fixed stopping set): the uncertainty of every
        part of the pool, scored without its labels, so the average moves only
        when the model does. Its strategy is the loop's, or best-vs-2nd for
        ``"random"``, whose draws say nothing about the model.
    stop_on : {"label", "refit"}
        When the stopping criterion receives a value. ``"label"`` (Lou et al. 2014, Alg.
        1.2): after every step. ``"refit"`` (``learner="combined"`` only):
        after the steps that ended in a regularised fit, so η's window counts
        refits; with a model that predicts from its latest regularised fit, the
        test error moves only there, and perceptron steps in between would fill
        the window with small moves that say the model has settled when the
        next refit may still change it.
    suppress : {"overlap", "item", None}
        Redundancy suppression within a batch.
    perceptron_epochs : int
        Passes over the labelled items per step (Alg. 1.2 uses one).
    random_state : None, int or numpy Generator
    n_jobs : int
        Threads that score the pool's parts (``-1``: one per CPU); the model's
        ``part_scores`` must tolerate concurrent calls. Results do not depend on it.

    Attributes
    ----------
    labels_ : dict of str to list
        Labels received so far, per item.
    labelled_parts_ : list of Part
    curve_ : list of dict
        One row per step: ``step``, ``n_parts_labelled``, ``fraction_parts``,
        ``fraction_size`` (share of the pool's indices), ``n_labels``,
        ``mean_uncertainty`` (of the unlabelled parts), ``mean_uncertainty_pool``
        (of every part, None unless ``stopping_set="pool"``), ``eta``, ``stop``, ``update_s``, ``score_s``,
        ``elapsed_s``, ``held_out_loss`` (None without a held-out set), ``refit``
        (whether the step ended in a regularised fit) and ``final``.
    stopping_ : StoppingCriterion
    """

    def __init__(self, pool, model, oracle: Callable, *, strategy: str = "best-vs-2nd", batch_size: int = 1,
                 learner: str = "perceptron", refit_every: int = 10, held_out=None,
                 stopping: StoppingCriterion | None = None, suppress: str | None = "overlap",
                 perceptron_epochs: int = 1, random_state=None, n_jobs: int = 1,
                 stopping_set: str = "unlabelled", stop_on: str = "label"):
        if isinstance(pool, Mapping):
            pool = PartPool.from_items(pool)
        if not isinstance(pool, PartPool):
            raise ParameterError(f"pool: expected a PartPool or a mapping of item id to data, "
                                 f"got {type(pool).__name__}")
        if not pool.parts:
            raise ParameterError("pool: has no parts; add items before starting active learning")
        missing = [m for m in ("initialize", "check_labels", "part_scores", "perceptron_step", "refit", "evaluate")
                   if not callable(getattr(model, m, None))]
        if missing:
            raise ParameterError(f"model: expected a LoopAdapter, {type(model).__name__} lacks {', '.join(missing)}")
        if not callable(oracle):
            raise ParameterError(f"oracle: expected a callable (query, part) -> labels, got {type(oracle).__name__}")
        if learner not in LEARNERS:
            raise ParameterError(f"learner: expected one of {LEARNERS}, got {learner!r}")
        if stopping is not None and not isinstance(stopping, StoppingCriterion):
            raise ParameterError(f"stopping: expected a StoppingCriterion, got {type(stopping).__name__}")
        if stopping_set not in STOPPING_SETS:
            raise ParameterError(f"stopping_set: expected one of {STOPPING_SETS}, got {stopping_set!r}")
        if stop_on not in STOP_ON:
            raise ParameterError(f"stop_on: expected one of {STOP_ON}, got {stop_on!r}")
        if stop_on == "refit" and learner != "combined":
            raise ParameterError('stop_on="refit" needs learner="combined" (the perceptron alone never refits)')
        self.pool = pool
        self.stopping_set = stopping_set
        self.stop_on = stop_on
        self.model = model
        self.oracle = oracle
        self.strategy = check_strategy(strategy)
        self.batch_size = _check_int("batch_size", batch_size, 1)
        self.learner = learner
        self.refit_every = _check_int("refit_every", refit_every, 1)
        self.held_out = held_out
        self.suppress = suppress
        self.perceptron_epochs = _check_int("perceptron_epochs", perceptron_epochs, 1)
        self.random_state = random_state
        self.n_jobs = check_n_jobs(n_jobs)
        self._rng = _rng(random_state)
        self.stopping_ = stopping if stopping is not None else StoppingCriterion()
        self.model.initialize(pool.items)
        self.labels_: dict = {}
        self.labelled_parts_: list = []
        self.curve_: list = []
        self._unlabelled = list(pool.parts)
        self._uncertainty: np.ndarray | None = None
        self._since_refit = 0
        self._total_size = sum(p.size for p in pool.parts)
        self._t0 = time.perf_counter()
        self._record(update_s=0.0)

    # ------------------------------------------------------------------ state

    @property
    def unlabelled(self) -> list:
        """Parts not labelled yet (nor skipped)."""
        return list(self._unlabelled)

    @property
    def done(self) -> bool:
        """True when the pool is exhausted or the stopping criterion has fired."""
        return not self._unlabelled or self.stopping_.fired_

    def stopping_signal(self) -> dict:
        """``{"eta", "fired", "evidence"}`` for the app."""
        return self.stopping_.as_dict()

    # ---------------------------------------------------------------- queries

    def _pool_uncertainty(self) -> np.ndarray:
        if self._uncertainty is None or len(self._uncertainty) != len(self._unlabelled):
            scorer = _PoolScorer(self)
            self._uncertainty = pool_uncertainties(self._unlabelled, scorer, self.strategy, random_state=self._rng,
                                                   n_jobs=self.n_jobs)
        return self._uncertainty

    def next_queries(self, n: int | None = None) -> list:
        """The most uncertain unlabelled parts (does not ask the oracle).

        Parameters
        ----------
        n : int, optional
            Defaults to ``batch_size``.

        Returns
        -------
        queries : list of Query
        """
        n = self.batch_size if n is None else _check_int("n", n, 1)
        if not self._unlabelled:
            raise ParameterError("the unlabelled pool is empty: every part is labelled or skipped")
        q = self._pool_uncertainty()
        chosen = select_batch(self._unlabelled, q, n, suppress=self.suppress, random_state=self._rng)
        return [Query(item_id=self._unlabelled[i].item_id, start=self._unlabelled[i].start,
                      stop=self._unlabelled[i].stop, uncertainty=float(q[i]), strategy=self.strategy, rank=r)
                for r, i in enumerate(chosen)]

    def _part_of(self, query) -> Part:
        for p in self._unlabelled:
            if p.item_id == query.item_id and p.start == query.start and p.stop == query.stop:
                return p
        raise ParameterError(f"query: no unlabelled part {query.item_id!r} [{query.start}, {query.stop}) "
                             "in the pool (already labelled, skipped, or never part of it)")

    # ------------------------------------------------------------------ steps

    def _ask(self, query, part) -> list:
        try:
            answer = self.oracle(query, part)
        except MarginaliaError as exc:
            raise OracleError(f"the oracle failed on {part.item_id!r} [{part.start}, {part.stop}): {exc}",
                              query) from exc
        except Exception as exc:  # an annotator callback may fail in any way; the loop must survive it
            raise OracleError(f"the oracle failed on {part.item_id!r} [{part.start}, {part.stop}): "
                              f"{type(exc).__name__}: {exc}", query) from exc
        if answer is None:
            raise OracleError(f"the oracle refused to label {part.item_id!r} [{part.start}, {part.stop}); "
                              "skip the part (ActiveLoop.skip) or ask again", query)
        try:
            labels = list(answer)
        except TypeError:
            raise OracleError(f"the oracle answered {type(answer).__name__} for {part.item_id!r}; "
                              "expected a list of labels", query) from None
        outside = [lab for lab in labels if not part.contains_label(lab)]
        if outside:
            raise ParameterError(f"oracle answer for {part.item_id!r} [{part.start}, {part.stop}): "
                                 f"{len(outside)} label(s) lie outside the part, e.g. {outside[0]!r}")
        return labels

    def teach(self, queries_and_labels) -> dict:
        """Add answers given outside the oracle (e.g. by the app), then update the model.

        Parameters
        ----------
        queries_and_labels : list of (Query or Part, list of labels)

        Returns
        -------
        row : dict
            The new learning-curve row.
        """
        answers = []
        for query, labels in queries_and_labels:
            part = query if isinstance(query, Part) else self._part_of(query)
            labels = list(labels)
            outside = [lab for lab in labels if not part.contains_label(lab)]
            if outside:
                raise ParameterError(f"labels for {part.item_id!r} [{part.start}, {part.stop}): "
                                     f"{len(outside)} label(s) lie outside the part, e.g. {outside[0]!r}")
            answers.append((part, labels))
        return self._apply(answers)

    def step(self) -> dict:
        """Query a batch, ask the oracle, update the model and record a curve row.

        Returns
        -------
        row : dict
            The new learning-curve row.

        Raises
        ------
        ParameterError
            The pool is empty, or an answer lies outside its part.
        OracleError
            The oracle refused or failed; nothing was changed.
        InfeasibleLabelsError
            An answer contradicts labels given earlier; nothing was changed.
        """
        queries = self.next_queries()
        answers = []
        for query in queries:
            part = self._part_of(query)
            answers.append((part, self._ask(query, part)))
        return self._apply(answers)

    def _apply(self, answers) -> dict:
        if not answers:
            raise ParameterError("answers: expected at least one (part, labels) pair")
        parts = [p for p, _ in answers]
        if len(set(parts)) != len(parts):
            raise ParameterError("answers: the same part is answered twice")
        # validate everything before changing anything, so a bad answer leaves the loop as it was
        staged = {}
        for part, labels in answers:
            if part not in self._unlabelled:
                raise ParameterError(f"part {part.item_id!r} [{part.start}, {part.stop}) is not in the "
                                     "unlabelled pool")
            staged.setdefault(part.item_id, list(self.labels_.get(part.item_id, [])))
            staged[part.item_id].extend(labels)
        for item_id, labels in staged.items():
            try:
                self.model.check_labels(item_id, self.pool.items[item_id], labels)
            except InfeasibleLabelsError as exc:
                raise InfeasibleLabelsError(f"the new labels on {item_id!r} conflict with earlier ones: {exc}",
                                            exc.label_ids) from exc
        t0 = time.perf_counter()
        saved = (dict(self.labels_), list(self._unlabelled), list(self.labelled_parts_), self._since_refit)
        self.labels_.update(staged)
        for part in parts:
            self._unlabelled.remove(part)
            self.labelled_parts_.append(part)
        try:
            refitted = self._update_model(len(parts))
        except BaseException:
            # the labels were not learned from: put them back so the step can be retried
            self.labels_, self._unlabelled, self.labelled_parts_, self._since_refit = saved
            raise
        finally:
            self._uncertainty = None
        return self._record(update_s=time.perf_counter() - t0, refit=refitted)

    def _labelled_data(self):
        ids = [i for i in self.labels_ if self.labels_[i]]
        return ids, [self.pool.items[i] for i in ids], [self.labels_[i] for i in ids]

    def _update_model(self, n_new: int) -> bool:
        """Perceptron pass(es) over the labelled items, and the regularised refit when due; True if it ran."""
        ids, data, labels = self._labelled_data()
        for _ in range(self.perceptron_epochs):
            for x, lab in zip(data, labels):
                self.model.perceptron_step(x, lab)
        if self.learner == "combined":
            self._since_refit += n_new
            if self._since_refit >= self.refit_every and data:
                self.model.refit(data, labels)
                self._since_refit = 0
                return True
        return False

    def finish(self) -> "ActiveLoop":
        """End of the replay: with ``learner="combined"``, a final regularised fit on every label."""
        ids, data, labels = self._labelled_data()
        if self.learner == "combined" and data:
            t0 = time.perf_counter()
            self.model.refit(data, labels)
            self._since_refit = 0
            self._uncertainty = None
            self._record(update_s=time.perf_counter() - t0, refit=True, final=True)
        return self

    def skip(self, part_or_query) -> None:
        """Remove a part from the pool without labelling it (the annotator cannot tell)."""
        part = part_or_query if isinstance(part_or_query, Part) else self._part_of(part_or_query)
        if part not in self._unlabelled:
            raise ParameterError(f"part {part.item_id!r} [{part.start}, {part.stop}) is not in the unlabelled pool")
        self._unlabelled.remove(part)
        self._uncertainty = None

    def run(self, *, max_steps: int | None = None, max_fraction: float = 1.0,
            until_stopped: bool = False) -> "ActiveLoop":
        """Step until the pool is exhausted, ``max_steps``, ``max_fraction`` of the parts, or (optionally) η fires.

        Parameters
        ----------
        max_steps : int, optional
        max_fraction : float in (0, 1]
            Stop once this share of the pool's parts is labelled.
        until_stopped : bool
            Also stop when the stopping criterion fires.
        """
        if max_steps is not None:
            _check_int("max_steps", max_steps, 0)
        if not (0 < max_fraction <= 1):
            raise ParameterError(f"max_fraction: expected a number in (0, 1], got {max_fraction!r}")
        steps = 0
        n_parts = len(self.pool.parts)
        while self._unlabelled and (max_steps is None or steps < max_steps) \
                and len(self.labelled_parts_) < max_fraction * n_parts - 1e-9 \
                and not (until_stopped and self.stopping_.fired_):
            self.step()
            steps += 1
        return self

    # ------------------------------------------------------------------- curve

    def _record(self, *, update_s: float, refit: bool = False, final: bool = False) -> dict:
        t0 = time.perf_counter()
        mean_q = mean_uncertainty(self._pool_uncertainty()) if self._unlabelled else None
        score_s = time.perf_counter() - t0
        mean_pool = None
        if self.stopping_set == "pool":
            strategy = "best-vs-2nd" if self.strategy == "random" else self.strategy
            mean_pool = mean_uncertainty(pool_uncertainties(self.pool.parts, _PoolScorer(self, unlabelled=True),
                                                            strategy, n_jobs=self.n_jobs))
        signal = mean_pool if self.stopping_set == "pool" else mean_q
        feeds = self.stop_on == "label" or refit
        if signal is not None and not final and feeds:
            self.stopping_.update(signal)
        loss = None if self.held_out is None else float(self.model.evaluate(self.held_out))
        n_parts = len(self.pool.parts)
        row = {
            "step": len(self.curve_),
            "n_parts_labelled": len(self.labelled_parts_),
            "fraction_parts": len(self.labelled_parts_) / n_parts,
            "fraction_size": sum(p.size for p in self.labelled_parts_) / self._total_size,
            "n_labels": sum(len(v) for v in self.labels_.values()),
            "mean_uncertainty": mean_q,
            "mean_uncertainty_pool": mean_pool,
            "eta": self.stopping_.eta_,
            "stop": bool(self.stopping_.fired_),
            "update_s": update_s,
            "score_s": score_s,
            "elapsed_s": time.perf_counter() - self._t0,
            "held_out_loss": loss,
            "refit": refit,
            "final": final,
        }
        self.curve_.append(row)
        return row


class _PoolScorer:
    """Binds the loop's items and labels to the adapter for :func:`pool_uncertainties`."""

    def __init__(self, loop: ActiveLoop, *, unlabelled: bool = False):
        self.loop = loop
        self.unlabelled = unlabelled  # score as if no label had been given (the fixed stopping set)

    def part_scores(self, part: Part) -> PartScores:
        s = self.loop
        labels = [] if self.unlabelled else s.labels_.get(part.item_id, [])
        return s.model.part_scores(s.pool.items[part.item_id], part, labels)
