"""A dependency-free progress report for long command-line work.

On a terminal (the stream ``isatty()``) :class:`ProgressBar` redraws one line in
place -- a bar, items done, rate and estimated time left. When the output is
a file or a pipe (a log, a CI job) it prints plain lines instead, at most one
every ``log_interval`` seconds, so logs stay readable. (The engine's progress *events* for the app
are :class:`marginalia.events.Progress`.)

Examples
--------
>>> import io
>>> buf = io.StringIO()
>>> with ProgressBar(3, label="predict", stream=buf, log_interval=0) as bar:
...     for _ in range(3):
...         bar.advance()
>>> buf.getvalue().splitlines()[-1].startswith("predict: 3/3 items (100%)")
True
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from typing import Optional, TextIO

from .checks import check_int
from .exceptions import ParameterError

__all__ = ["ProgressBar", "format_duration", "NullProgressBar"]

#: share of the work (when items are weighed by it) done before an ETA is shown
MIN_WORK_FOR_ETA = 0.01


def format_duration(seconds: float) -> str:
    """A short human duration: ``"42s"``, ``"3m05s"``, ``"1h02m"``, or ``"?"`` when unknown.

    Parameters
    ----------
    seconds : float
        A non-negative duration; NaN, inf and negative values give ``"?"``.
    """
    if seconds is None or not (seconds >= 0) or seconds == float("inf"):
        return "?"
    s = int(round(seconds))
    if s < 60:
        return f"{s}s"
    if s < 3600:
        return f"{s // 60}m{s % 60:02d}s"
    return f"{s // 3600}h{(s % 3600) // 60:02d}m"


class ProgressBar:
    """Count finished items and show done/total, rate and ETA.

    Parameters
    ----------
    total : int
        Number of items expected (>= 0).
    label : str
        Shown at the start of each line (the command name).
    stream : text stream, optional
        Where to write; ``sys.stderr`` by default so stdout stays clean for data.
    tty : bool, optional
        Force the terminal (True) or plain-line (False) style; by default
        ``stream.isatty()``.
    log_interval : float
        Plain-line mode: minimum seconds between two lines (the last line is
        always printed).
    width : int
        Terminal mode: characters of the bar.
    clock : callable, optional
        Returns the time in seconds (for tests); ``time.monotonic`` by default.
    unit : str
        What is counted (``"items"``, ``"passes"``...).
    """

    def __init__(self, total: int, *, label: str = "", stream: Optional[TextIO] = None, tty: Optional[bool] = None,
                 log_interval: float = 5.0, width: int = 24, clock: Optional[Callable[[], float]] = None,
                 unit: str = "items"):
        check_int(total, "total", min_val=0)
        if log_interval < 0:
            raise ParameterError(f"ProgressBar: log_interval must be >= 0 seconds, got {log_interval!r}")
        self.total = total
        self.label = label
        self.unit = unit
        self.stream = sys.stderr if stream is None else stream
        if tty is None:
            isatty = getattr(self.stream, "isatty", None)
            tty = bool(isatty()) if callable(isatty) else False
        self.tty = tty
        self.log_interval = float(log_interval)
        self.width = int(width)
        self._clock = clock or time.monotonic
        self._start = self._clock()
        self._last_print = None
        self._printed_done = -1
        self.done = 0
        self.failed = 0
        self.skipped = 0
        self.total_work = None
        self.work_done = 0.0
        self._closed = False
        self._message = ""

    # ------------------------------------------------------------ counting
    def advance(self, n: int = 1, *, failed: bool = False, message: str = "", work: Optional[float] = None) -> None:
        """Record ``n`` more finished items (``failed=True`` also counts them as failures).

        ``work``: what they cost, in the units of :meth:`set_work` (default ``n``).
        """
        self.done += n
        self.work_done += float(n if work is None else work)
        if failed:
            self.failed += n
        if message:
            self._message = message
        self._render(final=False)

    def set_work(self, total_work: float) -> None:
        """Estimate the time left from work (e.g. probes) rather than items, when items differ in size.

        The line still counts items; only the ETA weighs each item by the ``work`` given to
        :meth:`advance`. Without it, a batch whose first items are the smallest promises
        seconds for minutes of work.
        """
        total_work = float(total_work)
        self.total_work = total_work if total_work > 0 else None

    def set_total(self, total: int, *, skipped: int = 0) -> None:
        """Change the expected number of items, e.g. after ``skipped`` finished ones (a resumed run)."""
        if total < 0 or skipped < 0:
            raise ParameterError(f"ProgressBar.set_total: total and skipped must be >= 0, got {total!r} and "
                                 f"{skipped!r}")
        self.total = int(total)
        self.skipped = int(skipped)

    def callback(self) -> Callable[[int, int, str], None]:
        """A ``progress(done, total, message)`` callable, the engine's progress convention."""

        def report(done: int, total: int, message: str = "") -> None:
            self.total = int(total)
            self.done = int(done)
            if message:
                self._message = message
            self._render(final=False)

        return report

    def close(self) -> None:
        """Print the final state (once)."""
        if self._closed:
            return
        self._closed = True
        self._render(final=True)

    def __enter__(self) -> "ProgressBar":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    # ------------------------------------------------------------- display
    @property
    def elapsed(self) -> float:
        """Seconds since the start."""
        return self._clock() - self._start

    @property
    def rate(self) -> float:
        """Items per second so far (0 before the first item)."""
        el = self.elapsed
        return self.done / el if el > 0 and self.done > 0 else 0.0

    @property
    def eta(self) -> float:
        """Estimated seconds left (``inf`` while unknown)."""
        if self.done >= self.total:
            return 0.0
        el = self.elapsed
        if self.total_work is not None:
            # one small item is no evidence: its time is mostly start-up (workers, reading inputs),
            # and scaled to the whole batch it promised hours for a job of minutes
            if self.work_done < MIN_WORK_FOR_ETA * self.total_work or el <= 0:
                return float("inf")
            return max(self.total_work - self.work_done, 0.0) * el / self.work_done
        r = self.rate
        return (self.total - self.done) / r if r > 0 else float("inf")

    def text(self) -> str:
        """The status line without the bar: ``"label: 12/50 items (24%), 3.1 items/s, ETA 12s"``."""
        pct = 100.0 * self.done / self.total if self.total else 100.0
        head = f"{self.label}: " if self.label else ""
        if self.total == 0 and self.skipped:
            return f"{head}nothing left to do, {self.skipped} {self.unit} already done"
        parts = [f"{head}{self.done}/{self.total} {self.unit} ({pct:.0f}%)", f"{self.rate:.3g} {self.unit}/s"]
        if self.done < self.total:
            parts.append(f"ETA {format_duration(self.eta)}")
        else:
            parts.append(f"took {format_duration(self.elapsed)}")
        if self.failed:
            parts.append(f"{self.failed} failed")
        if self.skipped:
            parts.append(f"{self.skipped} {self.unit} already done")
        return ", ".join(parts)

    def _bar(self) -> str:
        frac = min(1.0, self.done / self.total) if self.total else 1.0
        filled = int(round(frac * self.width))
        return "[" + "#" * filled + "." * (self.width - filled) + "]"

    def _render(self, *, final: bool) -> None:
        now = self._clock()
        if self.tty:
            line = f"{self._bar()} {self.text()}"
            if self._message and not final:
                line += f"  {self._message}"
            self.stream.write("\r\x1b[2K" + line + ("\n" if final else ""))
            self.stream.flush()
            return
        if not final and self._last_print is not None and now - self._last_print < self.log_interval:
            return
        if final and self._last_print is not None and self._printed_done == self.done:
            return  # the last plain line already says this
        self._last_print = now
        self._printed_done = self.done
        self.stream.write(self.text() + "\n")
        self.stream.flush()


class NullProgressBar(ProgressBar):
    """A progress that counts but never prints (``--quiet``)."""

    def __init__(self, total: int = 0, **kwargs):
        super().__init__(total, **kwargs)

    def _render(self, *, final: bool) -> None:
        pass
