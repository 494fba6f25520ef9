import numpy as np
import pytest

from benchmarks.research.active_loop import ActiveLoop, OracleError, PartPool
from marginalia.active.parts import Part, make_parts
from marginalia.active.stopping import StoppingCriterion
from marginalia.exceptions import InfeasibleLabelsError, ParameterError
from marginalia.types import BoundaryLabel, RegionLabel

from .toy_adapter import ToySegmentationAdapter, make_items


def truth_oracle(truth):
    def oracle(query, part):
        return part.labels_from_changes(truth[part.item_id], author="replay")
    return oracle


def _setup(n=14, seed=0):
    items, truth = make_items(n, seed=seed)
    test_items, test_truth = make_items(8, seed=seed + 100)
    held_out = [(test_items[k], test_truth[k]) for k in test_items]
    return items, truth, held_out


@pytest.mark.slow
@pytest.mark.parametrize("strategy", ["random", "scoring", "best-vs-worst", "best-vs-2nd"])
def test_loop_runs_end_to_end_and_the_learning_curve_improves(strategy):
    items, truth, held_out = _setup()
    task = ToySegmentationAdapter([1.0, 1.0, 1.0])
    session = ActiveLoop(items, task, truth_oracle(truth), strategy=strategy, held_out=held_out,
                            random_state=0)
    session.run(max_steps=5)
    curve = session.curve_
    assert [r["n_parts_labelled"] for r in curve] == list(range(6))
    assert curve[0]["held_out_loss"] >= 0.5  # the irrelevant feature fools the initial metric
    assert curve[-1]["held_out_loss"] < curve[0]["held_out_loss"]
    assert task.w_[1] < task.w_[0]  # it learned to ignore feature 1
    assert curve[-1]["fraction_parts"] == pytest.approx(5 / 14)
    assert all(r["mean_uncertainty"] is not None for r in curve)
    assert len(session.unlabelled) == 9 and len(session.labelled_parts_) == 5


def test_best_vs_2nd_is_reproducible_from_the_seed():
    items, truth, _ = _setup()
    runs = []
    for _ in range(2):
        s = ActiveLoop(items, ToySegmentationAdapter([1.0, 1.0, 1.0]), truth_oracle(truth),
                          strategy="random", random_state=7).run(max_steps=4)
        runs.append([p.item_id for p in s.labelled_parts_])
    assert runs[0] == runs[1]


def test_running_out_the_pool_and_then_stepping_raises_clearly():
    items, truth, _ = _setup(n=3)
    session = ActiveLoop(items, ToySegmentationAdapter([1.0, 0.0, 1.0]), truth_oracle(truth), batch_size=2,
                            random_state=0)
    session.run()
    assert session.done and session.unlabelled == []
    assert session.curve_[-1]["fraction_parts"] == 1.0 and session.curve_[-1]["mean_uncertainty"] is None
    with pytest.raises(ParameterError, match="empty"):
        session.step()


def test_empty_pool_and_bad_arguments_are_refused():
    task = ToySegmentationAdapter([1.0, 1.0, 1.0])
    with pytest.raises(ParameterError, match="pool"):
        ActiveLoop({}, task, lambda q, p: [])
    with pytest.raises(ParameterError, match="pool"):
        ActiveLoop([np.zeros(3)], task, lambda q, p: [])
    items, truth, _ = _setup(n=2)
    with pytest.raises(ParameterError, match="strategy"):
        ActiveLoop(items, task, truth_oracle(truth), strategy="greedy")
    with pytest.raises(ParameterError, match="learner"):
        ActiveLoop(items, task, truth_oracle(truth), learner="ssvm")
    with pytest.raises(ParameterError, match="oracle"):
        ActiveLoop(items, task, "me")
    with pytest.raises(ParameterError, match="model"):
        ActiveLoop(items, object(), truth_oracle(truth))
    with pytest.raises(ParameterError, match="batch_size"):
        ActiveLoop(items, task, truth_oracle(truth), batch_size=0)
    with pytest.raises(ParameterError, match="not in items"):
        PartPool(items, [Part("nope", 0, 3)])


@pytest.mark.slow
@pytest.mark.parametrize("answer", ["none", "raise", "number"])
def test_a_refusing_oracle_raises_and_the_session_stays_usable(answer):
    items, truth, held_out = _setup(n=6)
    good = truth_oracle(truth)
    mode = {"refuse": True}

    def oracle(query, part):
        if mode["refuse"]:
            if answer == "none":
                return None
            if answer == "number":
                return 3
            raise RuntimeError("annotator closed the dialog")
        return good(query, part)

    task = ToySegmentationAdapter([1.0, 1.0, 1.0])
    session = ActiveLoop(items, task, oracle, held_out=held_out, random_state=0)
    w_before = task.w_.copy()
    with pytest.raises(OracleError) as err:
        session.step()
    assert err.value.query is not None and err.value.query.item_id in str(err.value)
    assert len(session.unlabelled) == 6 and session.labels_ == {} and len(session.curve_) == 1
    assert np.array_equal(task.w_, w_before)
    mode["refuse"] = False
    row = session.step()
    assert row["n_parts_labelled"] == 1 and len(session.unlabelled) == 5


def test_conflicting_labels_raise_and_leave_the_session_unchanged():
    items, truth, _ = _setup(n=1)
    X = items["item0"]
    parts = make_parts("item0", X.shape[0], kind="window", window=5, hop=3)  # [0,5) and [3,8)
    assert [(p.start, p.stop) for p in parts] == [(0, 5), (3, 8)]
    task = ToySegmentationAdapter([1.0, 1.0, 1.0])
    session = ActiveLoop(PartPool(items, parts), task, lambda q, p: [], random_state=0)
    session.teach([(parts[0], [RegionLabel(item_id="item0", start=0, stop=5, kind="0")])])
    w_before = task.w_.copy()
    n_rows = len(session.curve_)
    with pytest.raises(InfeasibleLabelsError, match="conflict"):
        session.teach([(parts[1], [BoundaryLabel(item_id="item0", index=4)])])
    assert session.unlabelled == [parts[1]] and len(session.labels_["item0"]) == 1
    assert np.array_equal(task.w_, w_before) and len(session.curve_) == n_rows
    session.teach([(parts[1], [BoundaryLabel(item_id="item0", index=6)])])
    assert session.unlabelled == [] and len(session.labels_["item0"]) == 2


def test_answers_outside_the_part_are_refused():
    items, truth, _ = _setup(n=2)
    session = ActiveLoop(items, ToySegmentationAdapter([1.0, 1.0, 1.0]),
                            lambda q, p: [BoundaryLabel(item_id=p.item_id, index=20)], random_state=0)
    with pytest.raises(ParameterError, match="outside the part"):
        session.step()
    assert len(session.unlabelled) == 2


def test_batches_query_distinct_parts_and_skip_removes_one():
    items, truth, _ = _setup(n=6)
    session = ActiveLoop(items, ToySegmentationAdapter([1.0, 1.0, 1.0]), truth_oracle(truth), batch_size=3,
                            random_state=0)
    queries = session.next_queries()
    assert len({q.item_id for q in queries}) == 3 and [q.rank for q in queries] == [0, 1, 2]
    assert all(queries[i].uncertainty >= queries[i + 1].uncertainty for i in range(2))
    session.skip(queries[0])
    assert len(session.unlabelled) == 5
    with pytest.raises(ParameterError, match="not in the unlabelled pool|no unlabelled part"):
        session.skip(queries[0])
    row = session.step()
    assert row["n_parts_labelled"] == 3


def test_combined_learner_refits_every_k_labels_and_at_finish():
    items, truth, held_out = _setup(n=8)
    task = ToySegmentationAdapter([1.0, 1.0, 1.0])
    session = ActiveLoop(items, task, truth_oracle(truth), learner="combined", refit_every=2,
                            held_out=held_out, random_state=0)
    session.run(max_steps=5)
    assert task.refits == 2
    session.finish()
    assert task.refits == 3 and session.curve_[-1]["final"]
    perceptron = ActiveLoop(items, ToySegmentationAdapter([1.0, 1.0, 1.0]), truth_oracle(truth), random_state=0)
    perceptron.run(max_steps=5).finish()
    assert perceptron.model.refits == 0


def test_stopping_on_refits_sees_one_value_per_regularised_fit():
    items, truth, held_out = _setup(n=10)
    runs = {}
    for stop_on in ("label", "refit"):
        crit = StoppingCriterion(window=2, threshold=0.0)
        session = ActiveLoop(items, ToySegmentationAdapter([1.0, 1.0, 1.0]), truth_oracle(truth),
                                learner="combined", refit_every=3, random_state=0, stopping=crit,
                                stopping_set="pool", stop_on=stop_on)
        session.run(max_steps=7)
        runs[stop_on] = (session, crit)
    by_label, at_refits = runs["label"], runs["refit"]
    # same queries and models: only what the criterion is fed differs
    assert [p.item_id for p in by_label[0].labelled_parts_] == [p.item_id for p in at_refits[0].labelled_parts_]
    assert [r["refit"] for r in at_refits[0].curve_] == [False, False, False, True, False, False, True, False]
    assert len(by_label[1].history_) == 8
    refit_rows = [r["mean_uncertainty_pool"] for r in at_refits[0].curve_ if r["refit"]]
    assert at_refits[1].history_ == refit_rows
    session, _ = at_refits
    session.finish()
    assert session.curve_[-1]["refit"] and len(session.stopping_.history_) == 2  # the final fit is not a round


def test_stopping_on_refits_needs_the_combined_learner():
    items, truth, _ = _setup(n=4)
    with pytest.raises(ParameterError, match="combined"):
        ActiveLoop(items, ToySegmentationAdapter([1.0, 1.0, 1.0]), truth_oracle(truth), stop_on="refit")
    with pytest.raises(ParameterError, match="stop_on"):
        ActiveLoop(items, ToySegmentationAdapter([1.0, 1.0, 1.0]), truth_oracle(truth), learner="combined",
                      stop_on="epoch")


def test_stopping_signal_is_recorded_and_can_end_the_run():
    items, truth, _ = _setup(n=14)
    crit = StoppingCriterion(window=2, threshold=0.5)  # fires as soon as it can
    session = ActiveLoop(items, ToySegmentationAdapter([1.0, 0.0, 1.0]), truth_oracle(truth), stopping=crit,
                            random_state=0)
    session.run(until_stopped=True)
    assert crit.fired_ and crit.fired_at_ == 3
    assert len(session.labelled_parts_) == 2 and session.done
    signal = session.stopping_signal()
    assert signal["fired"] and "η=" in signal["evidence"]
    assert session.curve_[-1]["stop"] and session.curve_[-1]["eta"] is not None


def test_a_failing_model_update_puts_the_labels_back():
    items, truth, _ = _setup(n=4)
    task = ToySegmentationAdapter([1.0, 1.0, 1.0])
    session = ActiveLoop(items, task, truth_oracle(truth), random_state=0)
    original = task.perceptron_step

    def broken(X, labels):
        raise ParameterError("perceptron: produced non-finite parameters")
    task.perceptron_step = broken
    with pytest.raises(ParameterError, match="non-finite"):
        session.step()
    assert len(session.unlabelled) == 4 and session.labels_ == {} and session.labelled_parts_ == []
    task.perceptron_step = original
    assert session.step()["n_parts_labelled"] == 1


def test_a_threaded_session_asks_the_same_queries_as_a_serial_one():
    items, truth, _ = _setup(n=6)
    runs = []
    for n_jobs in (1, 2):
        task = ToySegmentationAdapter([1.0, 1.0, 1.0])
        session = ActiveLoop(items, task, truth_oracle(truth), strategy="best-vs-2nd", random_state=0,
                                n_jobs=n_jobs)
        session.run(max_steps=3)
        runs.append(([(p.item_id, p.start) for p in session.labelled_parts_],
                     [r["mean_uncertainty"] for r in session.curve_]))
    assert runs[0] == runs[1]
    with pytest.raises(ParameterError, match="n_jobs"):
        ActiveLoop(items, ToySegmentationAdapter([1.0, 1.0, 1.0]), truth_oracle(truth), n_jobs=0)


def test_the_fixed_stopping_set_moves_only_with_the_model():
    items, truth, _ = _setup(n=10)
    task = ToySegmentationAdapter([1.0, 0.0, 1.0])
    session = ActiveLoop(items, task, truth_oracle(truth), strategy="best-vs-2nd", random_state=0,
                            stopping=StoppingCriterion(window=2, threshold=0.0), stopping_set="pool")
    w_before = task.w_.copy()
    session.run(max_steps=4)
    assert np.array_equal(task.w_, w_before)  # this metric already explains every label: no update
    pool = [r["mean_uncertainty_pool"] for r in session.curve_]
    left = [r["mean_uncertainty"] for r in session.curve_]
    assert max(pool) - min(pool) < 1e-12  # same model, same fixed set: the same average
    assert left[-1] < left[0]  # while the unlabelled average drifts down as the most uncertain parts go
    assert session.stopping_.fired_at_ == 3  # η = 0 as soon as a window is full


def test_random_queries_still_get_a_model_based_stopping_signal_and_bad_sets_are_refused():
    items, truth, _ = _setup(n=6)
    session = ActiveLoop(items, ToySegmentationAdapter([1.0, 1.0, 1.0]), truth_oracle(truth), strategy="random",
                            random_state=0, stopping_set="pool")
    session.run(max_steps=2)
    assert all(0 < r["mean_uncertainty_pool"] <= 1 for r in session.curve_)
    with pytest.raises(ParameterError, match="stopping_set"):
        ActiveLoop(items, ToySegmentationAdapter([1.0, 1.0, 1.0]), truth_oracle(truth), stopping_set="held-out")
