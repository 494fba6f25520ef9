"""Rough edges met by hand: formula cells, exit codes, raw errors, leftovers, absurd or unsorted input.

Each test is one observation of the report: formula-like profile ids went unescaped into CSV
outputs; a missing input was exit 1 in ``train`` (2 elsewhere); failed commands left empty
``--out`` folders; OS errors came out as ``[Errno 13] ...``; a non-UTF-8 project path gave an
encoding error; a 200 MB number failed with a bare "MemoryError"; unsorted positions passed
``predict`` silently; killed backups left ``.tmp-journal`` files.
"""

from __future__ import annotations

import csv
import os
from pathlib import Path

import numpy as np
import pytest

from marginalia.cli import main
from marginalia.engine import Engine
from marginalia.project import backups as backups_mod
from marginalia.sanitize import csv_text_cell, csv_text_value, formula_safe
from marginalia.types import RegionKind, RegionLabel

FORMULAS = ("=1+2", "@SUM(A1)", "+cmd", "-2+3", "=HYPERLINK(\"http://x\",\"y\")")


def write_profiles(path, pids, T=40, seed=0):
    rng = np.random.default_rng(seed)
    rows = ["profile.id,chromosome,position,logratio"]
    for pid in pids:
        for chrom in ("1", "2"):
            x = np.where(np.arange(T) < T // 2, 0.0, 0.8) + 0.1 * rng.standard_normal(T)
            cell = '"' + pid.replace('"', '""') + '"' if any(c in pid for c in ',"') else pid
            rows += [f"{cell},{chrom},{1000 + 500 * i},{x[i]:.4f}" for i in range(T)]
    Path(path).write_text("\n".join(rows) + "\n")


@pytest.fixture(scope="module")
def formula_project(tmp_path_factory):
    folder = tmp_path_factory.mktemp("formula")
    write_profiles(folder / "profiles.csv", FORMULAS)
    path = folder / "p.marginalia"
    with Engine.create(path) as eng:
        ids = eng.import_files([folder / "profiles.csv"])
        for item in ids[:4]:
            eng.add_label(RegionLabel(item, start=2, stop=10, kind=RegionKind.ZERO))
    return path


def test_formula_like_ids_are_escaped_in_every_csv_output(formula_project, tmp_path):
    for kind in ("annotations-csv", "segments-csv", "breaks-csv"):
        out = tmp_path / f"{kind}.csv"
        assert main(["export", str(formula_project), "--format", kind, "--out", str(out), "-q"]) == 0
        with open(out, newline="") as fh:
            rows = list(csv.reader(fh))[1:]
        assert rows
        for row in rows:
            assert not row[0].startswith(("=", "+", "-", "@")), (kind, row)
            assert csv_text_value(row[0]) in FORMULAS
    out = tmp_path / "q.csv"
    assert main(["query", str(formula_project), "-n", "3", "--strategy", "random", "--out", str(out)]) == 0
    with open(out, newline="") as fh:
        for row in list(csv.DictReader(fh)):
            assert not row["item_name"].startswith(("=", "+", "-", "@"))


def test_escaped_annotations_come_back_as_the_same_labels(formula_project, tmp_path):
    out = tmp_path / "a.csv"
    assert main(["export", str(formula_project), "--format", "annotations-csv", "--out", str(out), "-q"]) == 0
    with Engine.open(formula_project, read_only=True) as eng:
        before = sorted((eng.item_info(lab.item_id).name, lab.start, lab.stop) for lab in eng.labels())
    fresh = tmp_path / "fresh.marginalia"
    with Engine.create(fresh) as eng:
        eng.import_files([formula_project.parent / "profiles.csv"])
        eng.import_labels("annotations-csv", out)
        after = sorted((eng.item_info(lab.item_id).name, lab.start, lab.stop) for lab in eng.labels())
    assert after == before and len(after) == 4


@pytest.mark.parametrize("text", ["=1", "+1", "-x", "@a", "\tx", "\rx", "a,b", 'say "hi"', "plain", ""])
def test_csv_cells_round_trip_through_a_csv_reader(text, tmp_path):
    path = tmp_path / "c.csv"
    path.write_text(csv_text_cell(text) + ",1\n", newline="")
    with open(path, newline="") as fh:
        cell = next(csv.reader(fh))[0]
    assert csv_text_value(cell) == text
    assert not formula_safe(text).startswith(("=", "+", "-", "@", "\t", "\r"))


# ------------------------------------------------------------------ exit codes and one-line errors

@pytest.fixture(scope="module")
def cgh_files(tmp_path_factory):
    folder = tmp_path_factory.mktemp("files")
    write_profiles(folder / "p.csv", ["a"])
    (folder / "a.csv").write_text("profile.id,chromosome,min,max,annotation\na,1,1000,5000,0breakpoints\n")
    return folder


def test_a_missing_input_is_a_usage_error_in_every_command(cgh_files, tmp_path, capsys):
    p, a, none = cgh_files / "p.csv", cgh_files / "a.csv", str(tmp_path / "none.csv")
    calls = [
        ["train", "--task", "segmentation", "--profiles", str(p), "--annotations", none, "--out", "m.model"],
        ["train", "--task", "segmentation", "--profiles", none, "--annotations", str(a), "--out", "m.model"],
        ["evaluate", str(tmp_path / "none.model"), "--profiles", str(p), "--annotations", str(a)],
        ["query", str(tmp_path / "none.marginalia")],
        ["export", str(tmp_path / "none.marginalia"), "--format", "bundle", "--out", str(tmp_path / "b")],
    ]
    for argv in calls:
        assert main(argv) == 2, argv
        err = capsys.readouterr().err.strip()
        assert len(err.splitlines()) == 1 and "none." in err
    assert list(tmp_path.iterdir()) == []


def test_a_failed_command_leaves_no_empty_out_folder(cgh_files, tmp_path, capsys):
    out = tmp_path / "new" / "deeper" / "m.model"
    code = main(["train", "--task", "segmentation", "--profiles", str(cgh_files / "p.csv"), "--annotations",
                 str(cgh_files / "a.csv"), "--out", str(out), "-q"])
    assert code == 1 and "labelled sequences" in capsys.readouterr().err     # bad data: one labelled sequence
    assert list(tmp_path.iterdir()) == []


def test_os_errors_are_one_line_without_python_decoration(monkeypatch, tmp_path, capsys):
    from marginalia.cli_commands import query

    def denied(args):
        raise PermissionError(13, "Permission denied", str(tmp_path / "x.csv"))

    monkeypatch.setattr(query, "run", denied)
    assert main(["query", str(tmp_path / "p.marginalia")]) == 1
    err = capsys.readouterr().err.strip()
    assert err.endswith(f"{tmp_path / 'x.csv'}: Permission denied") and "Errno" not in err
    monkeypatch.setattr(query, "run", lambda args: (_ for _ in ()).throw(MemoryError()))
    assert main(["query", str(tmp_path / "p.marginalia")]) == 1
    assert "not enough memory" in capsys.readouterr().err


def test_a_project_path_that_is_not_utf8_is_named_clearly(tmp_path, capsys):
    bad = os.fsdecode(os.fsencode(str(tmp_path)) + b"/p\xff.marginalia")
    Path(bad).write_bytes(b"")
    code = main(["query", bad])
    err = capsys.readouterr().err.strip()
    assert code in (1, 2) and "not valid UTF-8" in err and "\\xff" in err and "codec" not in err


# ------------------------------------------------------------------ absurd and unsorted input

@pytest.fixture(scope="module")
def model(cgh_files, tmp_path_factory):
    folder = tmp_path_factory.mktemp("model")
    write_profiles(folder / "p2.csv", ["a", "b"])
    (folder / "a2.csv").write_text("profile.id,chromosome,min,max,annotation\na,1,1000,5000,0breakpoints\n"
                                   "b,2,1000,20000,>0breakpoints\n")
    out = folder / "m.model"
    assert main(["train", "--task", "segmentation", "--profiles", str(folder / "p2.csv"), "--annotations",
                 str(folder / "a2.csv"), "--out", str(out), "-q", "--max-iter", "3"]) == 0
    return out


def test_an_absurdly_long_number_is_refused_in_one_line(model, cgh_files, tmp_path, capsys):
    big = tmp_path / "big.csv"
    big.write_text((cgh_files / "p.csv").read_text() + "a,2,99000,1" + "0" * 5_000_000 + "\n")
    assert main(["predict", str(model), "--profiles", str(big), "--out", str(tmp_path / "o"), "-q"]) == 1
    err = capsys.readouterr().err
    assert "5,000,001 characters, which is not a number" in err and "MemoryError" not in err


def test_a_nul_byte_inside_a_number_is_refused(model, cgh_files, tmp_path, capsys):
    bad = tmp_path / "nul.csv"
    bad.write_bytes((cgh_files / "p.csv").read_bytes() + b"a,2,99000,0.\x001\n")
    assert main(["predict", str(model), "--profiles", str(bad), "--out", str(tmp_path / "o"), "-q"]) == 1
    assert "is not a number" in capsys.readouterr().err


def test_unsorted_positions_are_reported_by_predict(model, cgh_files, tmp_path, capsys):
    lines = (cgh_files / "p.csv").read_text().splitlines()
    (tmp_path / "u.csv").write_text("\n".join([lines[0]] + lines[1:][::-1]) + "\n")
    assert main(["predict", str(model), "--profiles", str(tmp_path / "u.csv"), "--out", str(tmp_path / "o"),
                 "-q"]) == 0
    assert "not sorted by position" in capsys.readouterr().err


def test_leftovers_of_killed_backups_are_pruned(tmp_path):
    project = tmp_path / "p.marginalia"
    folder = backups_mod.backups_dir(project)
    folder.mkdir()
    for name in ("p.marginalia.20260101T000000Z.w3.sqlite.tmp", "p.marginalia.20260101T000000Z.w3.sqlite.tmp-journal"):
        (folder / name).write_bytes(b"half")
    backups_mod.prune_backups(project, keep=5)
    assert list(folder.iterdir()) == []
