"""What every benchmark script shares: the repository root and the result-row format of ``benchmarks/results/*.json``.

A row is ``{"case", "value", "unit", "target", "better", "reference", "meets_target"}``; ``reference``
is ``{"name", "value"}`` or None. Scripts run as modules from the repository root
(``python -m benchmarks.quality.quality_cgh``), import the installed package as ``marginalia`` and this
module as ``benchmarks._common``.
"""

from __future__ import annotations

import contextlib
import math
import pathlib
import shutil
import tempfile

__all__ = ["ROOT", "result_row", "reference", "format_row", "write_rows", "scratch"]

#: the repository root (results go to ``ROOT / "benchmarks" / "results"``, the shared data is ``ROOT.parent``)
ROOT = pathlib.Path(__file__).resolve().parents[1]


def _finite(value) -> bool:
    return value is not None and math.isfinite(float(value))


def reference(name: str, value):
    """A reference figure measured in the same run, or None when it could not be measured."""
    return None if value is None else {"name": name, "value": float(value)}


def result_row(case: str, value, unit: str, target=None, better: str = "lower", reference=None, *,
               meets=None, beat_reference: bool = False) -> dict:
    """One result row.

    ``meets_target`` is, unless given as ``meets``: None without a target; False when the value is
    missing or not finite; else the comparison with ``target`` in the ``better`` direction. With
    ``beat_reference`` and no target, the value must beat the reference instead.
    """
    if better not in ("lower", "higher"):
        raise ValueError(f"better must be 'lower' or 'higher', got {better!r}")
    lower = better == "lower"
    if meets is None and target is not None:
        meets = _finite(value) and (value <= target if lower else value >= target)
    elif meets is None and beat_reference and reference is not None:
        ref = reference["value"]
        meets = _finite(value) and (value < ref if lower else value > ref)
    return {"case": case, "value": None if value is None else float(value), "unit": unit, "target": target,
            "better": better, "reference": reference, "meets_target": None if meets is None else bool(meets)}


def record_row(rows: list, case: str, value, unit: str, target=None, better: str = "lower", reference=None, *,
               note: str = "") -> dict:
    """:func:`result_row` (judged against the reference when there is no target), appended to ``rows`` and printed
    as soon as it is measured (with ``note``); ``functools.partial(record_row, ROWS)`` is a benchmark's ``row``."""
    r = result_row(case, value, unit, target, better, reference, beat_reference=True)
    rows.append(r)
    print(format_row(r, note=note), flush=True)
    return r


def format_row(r: dict, *, width: int = 56, note: str = "") -> str:
    """One printable line of a row: case, value, unit, target, reference, ok / MISSED."""
    value = "n/a" if r["value"] is None else f"{r['value']:.4g}"
    target = "" if r["target"] is None else f"{'<=' if r['better'] == 'lower' else '>='} {r['target']:g}"
    ref = "" if r["reference"] is None else f"{r['reference']['name']}={r['reference']['value']:.4g}"
    flag = "" if r["meets_target"] is None else ("ok" if r["meets_target"] else "MISSED")
    return f"{r['case']:<{width}} {value:>10} {r['unit']:<8} {target:<10} {ref:<34} {flag} {note}".rstrip()


def pump(app, until=None, timeout=60.0, *, poll_s: float = 0.001) -> bool:
    """Run a Qt application's events until ``until()`` is true (True) or ``timeout`` seconds pass (False).

    Without ``until``, run them for ``timeout`` seconds and return True.
    """
    import time

    end = time.perf_counter() + timeout
    while time.perf_counter() < end:
        app.processEvents()
        if until is not None and until():
            return True
        time.sleep(poll_s)
    return until is None


def themed_app(theme_name: str = "dark"):
    """The QApplication of an offscreen benchmark, styled as ``marginalia`` styles itself (palette, style sheet,
    plot colours): a screenshot shows the window a user sees, not Qt's default widgets around the app's plots."""
    from PySide6 import QtWidgets

    from marginalia.app import theme
    app = QtWidgets.QApplication.instance() or QtWidgets.QApplication([])
    theme.apply_theme(app, theme_name)
    return app


def has_cgh_data(data) -> bool:
    """Whether the aCGH data set (neuroblastoma profiles) is under the data folder ``data``."""
    import pathlib

    return (pathlib.Path(data) / "cgh" / "neuroblastoma" / "profiles_small.csv.gz").exists()


def cgh_data_missing(data) -> bool:
    """True (after saying so) when the aCGH data is not under ``data``: the benchmark has nothing to measure."""
    if has_cgh_data(data):
        return False
    print(f"no aCGH data under {data}; nothing to measure")
    return True


def save_rows(path, rows: list) -> None:
    """Write the result ``rows`` (a JSON list) to ``path``, making its folder, and say where."""
    import json
    import pathlib

    path = pathlib.Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(rows, indent=1))
    print(f"wrote {path}")


def write_rows(path, payload: dict, *, width: int = 70) -> None:
    """Write ``payload`` (holding its result ``"rows"``) as JSON to ``path``, then print the rows and the path."""
    import json
    import pathlib

    path = pathlib.Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(payload, indent=1))
    print()
    for r in payload["rows"]:
        print(format_row(r, width=width))
    print(f"\nwrote {path}")


@contextlib.contextmanager
def scratch(prefix: str):
    """A new scratch folder (``pathlib.Path``) for the files one script makes (projects, settings, models).

    It is made by ``tempfile.mkdtemp`` and removed at the end, even when the script fails; nothing outside it is
    touched.
    """
    work = pathlib.Path(tempfile.mkdtemp(prefix=prefix))
    try:
        yield work
    finally:
        shutil.rmtree(work, ignore_errors=True)
