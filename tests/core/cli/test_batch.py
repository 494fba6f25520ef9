"""marginalia.batch: resumable runs, per-item failures, atomic writes, clusters that are not there."""

import json
import os
import time

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from marginalia.batch import (
    BatchTask,
    ClusterError,
    atomic_write_text,
    make_chunks,
    marker_path,
    open_client,
    run_batch,
    safe_key,
)
from marginalia.exceptions import ParameterError
from marginalia.progress import NullProgressBar


def write_square(x, *, out_dir):
    """A task: writes x*x to a file; fails on negative input."""
    if x < 0:
        raise ParameterError(f"x: expected >= 0, got {x}")
    name = f"sq_{x}.txt"
    atomic_write_text(os.path.join(out_dir, name), str(x * x))
    return {"files": [name], "value": x * x}


def tasks(values):
    return [BatchTask(f"item {v}", (v,)) for v in values]


def test_runs_every_item_and_collects_results(tmp_path):
    progress = NullProgressBar()
    rep = run_batch(write_square, tasks([1, 2, 3]), out_dir=tmp_path, fingerprint="m1", progress=progress)
    assert rep.ok and sorted(rep.done) == ["item 1", "item 2", "item 3"] and rep.skipped == []
    assert {k: v["value"] for k, v in rep.results.items()} == {"item 1": 1, "item 2": 4, "item 3": 9}
    assert (tmp_path / "sq_3.txt").read_text() == "9"
    assert progress.done == 3 and progress.total == 3


def test_threads_run_the_costliest_first_and_give_the_same_results(tmp_path):
    started = []

    def record(x, *, out_dir):
        started.append(x)
        time.sleep(0.01)
        return write_square(x, out_dir=out_dir)

    work = [BatchTask(f"item {v}", (v,), cost=float(v)) for v in [3, 9, 1, -4, 7]]
    one = run_batch(write_square, work, out_dir=tmp_path / "one", fingerprint="m1")
    progress = NullProgressBar()
    two = run_batch(record, work, out_dir=tmp_path / "two", fingerprint="m1", progress=progress, threads=2)
    assert two.results == one.results and two.failed == one.failed and sorted(two.done) == sorted(one.done)
    assert set(started[:2]) == {9, 7} and sorted(started) == [-4, 1, 3, 7, 9]
    assert progress.done == 5 and progress.failed == 1
    assert (tmp_path / "two" / "sq_9.txt").read_text() == "81" and marker_path(tmp_path / "two", "item 9").exists()


def test_a_failing_item_is_reported_and_the_others_finish(tmp_path):
    rep = run_batch(write_square, tasks([1, -2, 3]), out_dir=tmp_path, fingerprint="m1")
    assert rep.failed == [("item -2", "x: expected >= 0, got -2")]
    assert sorted(rep.done) == ["item 1", "item 3"]
    assert not marker_path(tmp_path, "item -2").exists()


def test_resume_skips_finished_items_with_the_same_fingerprint_only(tmp_path):
    run_batch(write_square, tasks([1, 2]), out_dir=tmp_path, fingerprint="m1")
    stamp = (tmp_path / "sq_1.txt").stat().st_mtime_ns
    rep = run_batch(write_square, tasks([1, 2, 3]), out_dir=tmp_path, fingerprint="m1")
    assert rep.skipped == ["item 1", "item 2"] and rep.done == ["item 3"]
    assert rep.results["item 2"] == {"value": 4}  # read back from the marker
    assert (tmp_path / "sq_1.txt").stat().st_mtime_ns == stamp
    rep = run_batch(write_square, tasks([1, 2, 3]), out_dir=tmp_path, fingerprint="m2")  # another model
    assert rep.skipped == [] and len(rep.done) == 3
    rep = run_batch(write_square, tasks([1]), out_dir=tmp_path, fingerprint="m2", resume=False)
    assert rep.done == ["item 1"]


def test_an_item_whose_output_vanished_is_redone(tmp_path):
    run_batch(write_square, tasks([5]), out_dir=tmp_path, fingerprint="m1")
    (tmp_path / "sq_5.txt").unlink()
    rep = run_batch(write_square, tasks([5]), out_dir=tmp_path, fingerprint="m1")
    assert rep.done == ["item 5"] and (tmp_path / "sq_5.txt").read_text() == "25"


def test_an_item_whose_input_file_changed_is_redone(tmp_path):
    src_a, src_b = tmp_path / "a.csv", tmp_path / "b.csv"
    src_a.write_text("1,2\n")
    src_b.write_text("3,4\n")
    out = tmp_path / "out"
    items = [BatchTask("a", (1,), inputs=(str(src_a),)), BatchTask("b", (2,), inputs=(str(src_b),))]
    run_batch(write_square, items, out_dir=out, fingerprint="m1")
    assert run_batch(write_square, items, out_dir=out, fingerprint="m1").skipped == ["a", "b"]
    src_a.write_text("1,2,5\n")     # edited since the last run (same model): its items are stale
    rep = run_batch(write_square, items, out_dir=out, fingerprint="m1")
    assert rep.done == ["a"] and rep.skipped == ["b"]
    os.utime(src_b, ns=(src_b.stat().st_atime_ns, src_b.stat().st_mtime_ns + 10**9))   # touched, same size
    assert run_batch(write_square, items, out_dir=out, fingerprint="m1").done == ["b"]


def test_a_damaged_marker_means_not_done(tmp_path):
    run_batch(write_square, tasks([4]), out_dir=tmp_path, fingerprint="m1")
    marker_path(tmp_path, "item 4").write_text("{not json")
    assert run_batch(write_square, tasks([4]), out_dir=tmp_path, fingerprint="m1").done == ["item 4"]


def test_duplicate_keys_and_empty_fingerprint_are_refused(tmp_path):
    with pytest.raises(ParameterError, match="unique"):
        run_batch(write_square, tasks([1, 1]), out_dir=tmp_path, fingerprint="m")
    with pytest.raises(ParameterError, match="fingerprint"):
        run_batch(write_square, tasks([1]), out_dir=tmp_path, fingerprint="")


def test_atomic_write_leaves_no_temporary_file(tmp_path):
    target = tmp_path / "sub" / "out.csv"
    atomic_write_text(target, "a,b\n")
    atomic_write_text(target, "c,d\n")
    assert target.read_text() == "c,d\n"
    assert os.listdir(target.parent) == ["out.csv"]


def test_safe_key_is_file_safe_and_keeps_distinct_keys_distinct():
    keys = ["1:2", "1_2", "a/b", "a b", "plain"]
    safe = [safe_key(k) for k in keys]
    assert len(set(safe)) == len(keys)
    assert safe_key("plain") == "plain"
    assert all("/" not in s and ":" not in s and " " not in s for s in safe)


def test_marker_records_fingerprint_and_files(tmp_path):
    run_batch(write_square, tasks([2]), out_dir=tmp_path, fingerprint="abc")
    marker = json.loads(marker_path(tmp_path, "item 2").read_text())
    assert marker["fingerprint"] == "abc" and marker["files"] == ["sq_2.txt"] and marker["key"] == "item 2"


@pytest.mark.slow
def test_unreachable_scheduler_fails_fast_with_a_clear_message():
    import distributed  # noqa: F401 - importing Dask is not part of the wait being measured
    t0 = time.perf_counter()
    with pytest.raises(ClusterError, match=r"cannot reach the Dask scheduler at tcp://127\.0\.0\.1:9"):
        with open_client("tcp://127.0.0.1:9", timeout=1.0):
            pass
    assert time.perf_counter() - t0 < 8.0


def test_bad_cluster_arguments_are_refused():
    with pytest.raises(ParameterError, match="n_workers"):
        with open_client(n_workers=0):
            pass
    with pytest.raises(ParameterError, match="timeout"):
        with open_client("tcp://127.0.0.1:9", timeout=0):
            pass


@pytest.mark.slow
def test_thread_cluster_gives_the_same_results_as_in_process(tmp_path):
    with open_client(n_workers=2, processes=False) as client:
        rep = run_batch(write_square, tasks([1, -1, 2, 3]), out_dir=tmp_path / "dask", fingerprint="m", client=client)
    local = run_batch(write_square, tasks([1, -1, 2, 3]), out_dir=tmp_path / "local", fingerprint="m")
    assert rep.results == local.results and rep.failed == local.failed
    for name in ("sq_1.txt", "sq_2.txt", "sq_3.txt"):
        assert (tmp_path / "dask" / name).read_text() == (tmp_path / "local" / name).read_text()


@pytest.mark.slow
def test_worker_processes_give_the_same_results_as_in_process(tmp_path):
    # one real multi-process cluster: tasks and results are pickled across processes
    t0 = time.perf_counter()
    with open_client(n_workers=2, processes=True) as client:
        rep = run_batch(write_square, tasks([1, -1, 2, 3, 4]), out_dir=tmp_path / "dask", fingerprint="m",
                        client=client, chunk_size=2)
        pids = set(client.run(os.getpid).values())
    local = run_batch(write_square, tasks([1, -1, 2, 3, 4]), out_dir=tmp_path / "local", fingerprint="m")
    assert len(pids) == 2 and os.getpid() not in pids
    assert rep.results == local.results and rep.failed == local.failed
    assert sorted(os.listdir(tmp_path / "dask")) == sorted(os.listdir(tmp_path / "local"))
    assert time.perf_counter() - t0 < 60


@settings(max_examples=40)
@given(st.lists(st.floats(0, 100), min_size=1, max_size=30), st.integers(1, 8))
def test_chunks_cover_every_task_once_and_balance_the_cost(costs, n_chunks):
    ts = [BatchTask(str(i), (i,), cost=c) for i, c in enumerate(costs)]
    chunks = make_chunks(ts, n_chunks)
    assert sorted(t.key for c in chunks for t in c) == sorted(t.key for t in ts)
    assert len(chunks) == min(n_chunks, len(ts))
    totals = [sum(t.cost for t in c) for c in chunks]
    assert totals == sorted(totals, reverse=True)
    # greedy LPT: no chunk exceeds the lightest one by more than the costliest single task
    assert max(totals) - min(totals) <= max(costs) + 1e-9


def test_atomic_write_gives_the_usual_permissions(tmp_path):
    import stat
    path = atomic_write_text(tmp_path / "t.csv", "a\n")
    plain = tmp_path / "plain.csv"
    plain.write_text("a\n")     # what open() gives under this process's umask (not mkstemp's owner-only 0600)
    assert stat.S_IMODE(path.stat().st_mode) == stat.S_IMODE(plain.stat().st_mode) != 0o600


def slow_square(x, *, out_dir):
    """A task that takes a while, so the items of one chunk finish at different times."""
    time.sleep(0.5)
    return write_square(x, out_dir=out_dir)


class TimedProgress(NullProgressBar):
    """A silent progress bar that records when each item was counted."""

    def __init__(self):
        super().__init__(0)
        self.times = []

    def advance(self, n=1, *, failed=False, message="", work=None):
        super().advance(n, failed=failed, message=message, work=work)
        self.times.append(time.perf_counter())


@pytest.mark.slow
def test_dask_progress_counts_each_item_when_it_ends_not_when_its_chunk_does(tmp_path):
    # one chunk of four half-second items: the chunk returns after ~2 s, its items end 0.5 s apart
    bar = TimedProgress()
    with open_client(n_workers=1, processes=False) as client:
        rep = run_batch(slow_square, tasks([1, 2, 3, 4]), out_dir=tmp_path, fingerprint="m", client=client,
                        chunk_size=4, progress=bar)
    assert sorted(rep.done) == ["item 1", "item 2", "item 3", "item 4"]
    assert bar.done == 4 and len(bar.times) == 4          # each item counted once
    assert bar.times[-1] - bar.times[0] > 1.0             # spread over the chunk, not all at its end


def test_items_that_finished_before_their_worker_died_keep_their_results(tmp_path):
    from marginalia.batch import _execute, _MarkerWatch, _outcomes_after_crash
    todo = tasks([2, 3, 4])
    fingerprints = {t.key: "m" for t in todo}
    watch = _MarkerWatch(tmp_path, todo, fingerprints, since=time.time())
    _execute(write_square, todo[0], str(tmp_path), "m", False)      # item 2 ends, then the worker dies on 3
    done, died, skipped = _outcomes_after_crash(watch, todo, RuntimeError("worker lost"))
    assert done == ("item 2", True, {"value": 4}, 0.0)
    assert died[:2] == ("item 3", False) and "worker lost" in died[2]
    assert skipped[:2] == ("item 4", False) and "not run" in skipped[2] and "'item 3'" in skipped[2]


def test_markers_of_an_earlier_run_are_not_taken_for_this_one(tmp_path):
    from marginalia.batch import _execute, _MarkerWatch
    todo = tasks([5])
    _execute(write_square, todo[0], str(tmp_path), "m", False)
    old = time.time() - 3600
    os.utime(marker_path(tmp_path, "item 5"), (old, old))
    watch = _MarkerWatch(tmp_path, todo, {"item 5": "m"}, since=time.time())
    assert watch.newly_finished() == [] and watch.marker("item 5") is None
    _execute(write_square, todo[0], str(tmp_path), "m", False)
    assert watch.newly_finished() == ["item 5"] and watch.newly_finished() == []


def square_or_die(x, *, out_dir):
    """A task whose item 99 kills the worker process running it."""
    if x == 99:
        os._exit(1)
    return write_square(x, out_dir=out_dir)


@pytest.mark.slow
def test_a_dying_worker_fails_only_the_items_it_did_not_finish(tmp_path):
    # one chunk: item 2 finishes and writes its marker, then item 99 kills the worker (on every retry)
    bar = NullProgressBar(0)
    with open_client(n_workers=2, processes=True) as client:
        rep = run_batch(square_or_die, tasks([2, 99]), out_dir=tmp_path, fingerprint="m", client=client,
                        chunk_size=2, progress=bar)
    assert rep.done == ["item 2"] and rep.results["item 2"] == {"value": 4}
    assert [k for k, _ in rep.failed] == ["item 99"] and "died while running it" in rep.failed[0][1]
    assert (tmp_path / "sq_2.txt").read_text() == "4"
    assert bar.done == 2 and bar.failed == 1
