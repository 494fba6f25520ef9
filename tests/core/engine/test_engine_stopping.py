"""The engine's stopping signal reads the fixed stopping set: every part scored without its labels."""

import numpy as np
import pytest

from marginalia.engine import Engine
from marginalia.tasks.base import STOPPING_THRESHOLD, STOPPING_WINDOW
from marginalia.types import RegionKind, RegionLabel


def _write_profiles(path, n_profiles=2, chroms=("1", "2"), T=200, seed=1):
    rng = np.random.default_rng(seed)
    rows = ["profile.id,chromosome,position,logratio"]
    for prof in range(1, n_profiles + 1):
        for chrom in chroms:
            mu = np.zeros(T)
            a = int(rng.integers(60, T - 60))
            mu[a:] = 0.5  # a change worth about three noise units: the model is unsure about it
            x = mu + 0.2 * rng.standard_normal(T)
            rows += [f"{prof},{chrom},{1000 + 700 * i},{x[i]:.5f}" for i in range(T)]
    path.write_text("\n".join(rows) + "\n")


@pytest.fixture
def engine(tmp_path):
    _write_profiles(tmp_path / "profiles.csv")
    eng = Engine.create(tmp_path / "p.marginalia")
    eng.import_files([tmp_path / "profiles.csv"])
    yield eng
    eng.close()


def _task(eng):
    return next(t for t in eng._tasks.all() if t.item_ids())


def test_labels_alone_do_not_move_the_signal_only_the_model_does(engine):
    eng = engine
    eng.next_queries(2)
    before = eng.learning_curve()[-1]["mean_uncertainty"]
    item = eng.items()[0].id
    # a label that pins the item's answer (the whole chromosome has no change): with the labels applied the
    # item's own part becomes certain, so the old signal (query scores, labels included) dropped here
    eng.add_label(RegionLabel(item_id=item, start=0, stop=200, kind=RegionKind.ZERO))
    eng.next_queries(2)
    rows = eng.learning_curve()
    assert len(rows) == 2 and rows[-1]["labels"] == 1
    assert rows[-1]["mean_uncertainty"] == pytest.approx(before, rel=1e-9)
    assert rows[-1]["mean_query_uncertainty"] < before  # the queries themselves do see the label
    # the model learns from the label: now the signal may move, and it is still every part without labels
    eng.update_model(item)
    eng.next_queries(2)
    task = _task(eng)
    parts = task.parts()
    task._without_labels.on = True
    try:
        from marginalia.active.uncertainty import uncertainty_from_scores
        expect = np.mean([uncertainty_from_scores(task.part_scores(p), "best-vs-2nd") for p in parts])
    finally:
        task._without_labels.on = False
    assert eng.learning_curve()[-1]["mean_uncertainty"] == pytest.approx(expect, rel=1e-9)


def test_asking_again_without_a_change_adds_no_round_and_the_app_sentence_is_kept(engine):
    eng = engine
    for _ in range(3):
        eng.next_queries(1)
    eng.next_queries(1, strategy="random")
    assert len(eng.learning_curve()) == 1  # the old signal recorded 4 identical rounds (a fake plateau)
    sig = eng.stopping_signal()
    assert sig["fired"] is False and sig["eta"] is None
    assert f"1 of the {STOPPING_WINDOW + 1} needed" in sig["evidence"]
    # feed the criterion a converged history: the app's sentence says more labels are unlikely to help
    task = _task(eng)
    for _ in range(STOPPING_WINDOW + 1):
        task._stopping.update(0.5)
    sig = eng.stopping_signal()
    assert sig["fired"] is True and sig["eta"] <= STOPPING_THRESHOLD
    assert sig["evidence"].startswith("more labels are unlikely to help")


def test_queries_and_the_signal_are_the_same_on_one_or_two_threads(tmp_path, monkeypatch):
    from marginalia.tasks import base
    _write_profiles(tmp_path / "profiles.csv", n_profiles=3, chroms=("1", "2", "3"))
    out = {}
    for threads in (1, 2):
        monkeypatch.setattr(base, "QUERY_THREADS", threads)
        with Engine.create(tmp_path / f"p{threads}.marginalia") as eng:
            eng.import_files([tmp_path / "profiles.csv"])
            item = eng.items()[0].id
            eng.add_label(RegionLabel(item_id=item, start=0, stop=200, kind=RegionKind.ZERO))
            eng.update_model(item)
            queries = eng.next_queries(4)
            assert _task(eng)._query_threads() == threads
            name = {i.id: i.name for i in eng.items()}  # item ids differ between projects, names do not
            out[threads] = ([(name[q.item_id], q.start, q.stop, q.uncertainty) for q in queries],
                            eng.learning_curve()[-1]["mean_uncertainty"])
    assert out[1] == out[2]


def test_cancelling_threaded_queries_stops_both_threads_soon_and_the_engine_stays_usable(tmp_path, monkeypatch):
    import threading

    from marginalia.exceptions import CancelledError
    from marginalia.tasks import base
    monkeypatch.setattr(base, "QUERY_THREADS", 2)
    _write_profiles(tmp_path / "profiles.csv", n_profiles=4, chroms=("1", "2", "3", "4", "5"))
    with Engine.create(tmp_path / "p.marginalia") as eng:
        eng.import_files([tmp_path / "profiles.csv"])
        task = _task(eng)
        n_parts = len(task.parts())
        cancel, calls, lock = threading.Event(), [], threading.Lock()
        real = task.part_scores

        def counting(part):
            with lock:
                calls.append(part)
                if len(calls) == 3:
                    cancel.set()
            return real(part)

        monkeypatch.setattr(task, "part_scores", counting)
        with pytest.raises(CancelledError):
            eng.next_queries(3, cancel=cancel)
        # each thread checks the flag before its next part: at most one part more per thread
        assert 3 <= len(calls) <= 3 + 2 < n_parts
        monkeypatch.setattr(task, "part_scores", real)
        assert len(eng.next_queries(3)) == 3
