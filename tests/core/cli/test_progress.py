"""The progress report: plain lines off a terminal, an in-place bar on one, correct rate and ETA."""

import io

import pytest

from marginalia.exceptions import ParameterError
from marginalia.progress import NullProgressBar, ProgressBar, format_duration


class FakeClock:
    def __init__(self):
        self.t = 100.0

    def __call__(self):
        return self.t


@pytest.mark.parametrize("seconds,text", [(0, "0s"), (42.4, "42s"), (185, "3m05s"), (3720, "1h02m"),
                                          (float("inf"), "?"), (float("nan"), "?"), (-1, "?")])
def test_format_duration(seconds, text):
    assert format_duration(seconds) == text


def test_rate_and_eta_follow_the_clock():
    clock = FakeClock()
    buf = io.StringIO()
    bar = ProgressBar(10, label="predict", stream=buf, tty=False, log_interval=0, clock=clock)
    assert bar.eta == float("inf")
    clock.t += 4.0
    bar.advance(2)
    assert bar.rate == pytest.approx(0.5)
    assert bar.eta == pytest.approx(16.0)
    assert buf.getvalue().splitlines()[-1] == "predict: 2/10 items (20%), 0.5 items/s, ETA 16s"


def test_eta_weighs_items_by_their_work_when_given():
    # 3 small items done in 3 s, one item 100 times their size left: not "ETA 1s"
    clock = FakeClock()
    buf = io.StringIO()
    bar = ProgressBar(4, label="predict", stream=buf, tty=False, log_interval=0, clock=clock)
    bar.set_work(103)
    for _ in range(3):
        clock.t += 1.0
        bar.advance(work=1)
    assert bar.eta == pytest.approx(100.0)
    assert buf.getvalue().splitlines()[-1] == "predict: 3/4 items (75%), 1 items/s, ETA 1m40s"
    clock.t += 100.0
    bar.advance(work=100)
    assert bar.eta == 0.0


def test_a_batch_reports_its_tasks_costs_as_work(tmp_path):
    from marginalia.batch import BatchTask, run_batch
    bar = ProgressBar(0, stream=io.StringIO(), tty=False, log_interval=0)
    tasks = [BatchTask(f"k{i}", (i,), cost=c) for i, c in enumerate([1.0, 5.0, 50.0])]
    run_batch(_square, tasks, out_dir=tmp_path, fingerprint="f", progress=bar)
    assert bar.total == 3 and bar.total_work == 56.0 and bar.work_done == 56.0


def _square(x, *, out_dir):
    return {"square": x * x}


def test_plain_lines_are_rate_limited_and_the_last_line_is_always_printed():
    clock = FakeClock()
    buf = io.StringIO()
    bar = ProgressBar(5, label="x", stream=buf, tty=False, log_interval=10.0, clock=clock)
    for _ in range(4):
        clock.t += 1.0
        bar.advance()
    assert len(buf.getvalue().splitlines()) == 1  # first line only: the others came within 10 s
    clock.t += 1.0
    bar.advance(failed=True)
    bar.close()
    lines = buf.getvalue().splitlines()
    assert lines[-1].startswith("x: 5/5 items (100%)") and "1 failed" in lines[-1] and "took 5s" in lines[-1]
    assert "\r" not in buf.getvalue()


def test_terminal_mode_redraws_one_line_and_ends_with_a_newline():
    clock = FakeClock()
    buf = io.StringIO()
    with ProgressBar(4, stream=buf, tty=True, width=8, clock=clock) as bar:
        clock.t += 1
        bar.advance(2)
    out = buf.getvalue()
    assert out.count("\n") == 1 and out.endswith("\n")
    assert "\r\x1b[2K[####....] 2/4 items (50%)" in out
    assert "[########] 2/4" not in out


def test_stream_that_is_not_a_tty_gets_plain_lines():
    buf = io.StringIO()  # StringIO.isatty() is False
    assert ProgressBar(1, stream=buf).tty is False


def test_engine_style_callback_sets_done_and_total():
    buf = io.StringIO()
    bar = ProgressBar(0, stream=buf, tty=False, log_interval=0)
    report = bar.callback()
    report(3, 7, "fitting")
    assert (bar.done, bar.total) == (3, 7)
    assert "3/7 items" in buf.getvalue()


def test_null_progress_counts_silently():
    buf = io.StringIO()
    bar = NullProgressBar(2, stream=buf)
    bar.advance()
    bar.close()
    assert bar.done == 1 and buf.getvalue() == ""


@pytest.mark.parametrize("total", [-1, 1.5, "3", True])
def test_bad_total_is_refused(total):
    with pytest.raises(ParameterError, match="total"):
        ProgressBar(total)


def test_no_eta_from_a_sliver_of_the_work():
    # a first item of 0.1 % of the work after a slow start would promise hours: the ETA waits for 1 %
    clock = FakeClock()
    bar = ProgressBar(300, stream=io.StringIO(), tty=False, log_interval=0, clock=clock)
    bar.set_work(100_000)
    clock.t += 3.0
    bar.advance(work=100)
    assert bar.eta == float("inf") and "ETA ?" in bar.text()
    clock.t += 3.0
    bar.advance(work=1_900)
    assert bar.eta == pytest.approx(98_000 * 6.0 / 2_000)


def test_a_resumed_batch_says_what_it_skipped_and_that_nothing_is_left(tmp_path):
    from marginalia.batch import BatchTask, run_batch
    tasks = [BatchTask(f"k{i}", (i,)) for i in range(3)]
    run_batch(_square, tasks[:2], out_dir=tmp_path, fingerprint="f")
    stream = io.StringIO()
    with ProgressBar(0, label="predict", stream=stream, tty=False, log_interval=0) as bar:
        run_batch(_square, tasks, out_dir=tmp_path, fingerprint="f", progress=bar)
    assert bar.total == 1 and bar.skipped == 2
    assert stream.getvalue().splitlines()[-1].endswith(", 2 items already done")
    stream = io.StringIO()
    with ProgressBar(0, label="predict", stream=stream, tty=False, log_interval=0) as bar:
        run_batch(_square, tasks, out_dir=tmp_path, fingerprint="f", progress=bar)
    assert stream.getvalue().strip() == "predict: nothing left to do, 3 items already done"
