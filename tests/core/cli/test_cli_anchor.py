"""``marginalia-cli anchor``: sync anchors placed from the command line, stored at once as one step, or refused."""

import pytest

from marginalia.cli import main
from marginalia.engine import Engine
from tests.core.sync.synthetic import SR, stretched_pair


@pytest.fixture
def project(tmp_path):
    """A project of takes a, b, c (one melody at three tempo curves, about 6.7, 7.0 and 7.4 s long)."""
    from marginalia.io.audio import write_wav
    ya, yb, _, _ = stretched_pair(0)
    _, yc, _, _ = stretched_pair(0, start_b=0.5, stretch=(1.2, 0.9))
    for name, y in (("a", ya), ("b", yb), ("c", yc)):
        write_wav(tmp_path / f"{name}.wav", y, SR)
    path = tmp_path / "p.marginalia"
    assert main(["project", "create", str(path), "--import", *(str(tmp_path / f"{n}.wav") for n in "abc"),
                 "-q"]) == 0
    with Engine.open(path, read_only=True) as eng:
        return path, {it.name: it.id for it in eng.items()}


def _anchors(path, a, b):
    with Engine.open(path, read_only=True) as eng:
        return [(x.reference_s, x.target_s) for x in eng.sync_anchors(a, b)], eng.history()


def _one_error_line(capsys):
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "Traceback" not in err, err
    return err


def test_times_are_stored_as_one_step_that_one_restore_takes_back(project, capsys):
    path, ids = project
    assert main(["anchor", str(path), "--from", "a", "--to", "b", "--times", "0.5:0.6", "-q"]) == 0
    assert main(["anchor", str(path), "--from", "a", "--to", "b", "--times", "1.0:1.2", "3.0:3.5"]) == 0
    line = capsys.readouterr().err.strip().splitlines()[-1]
    assert line.startswith("anchor: 2 sync anchors stored between a and b as one step (3 in all); to take them back: "
                           f"marginalia-cli restore {path} --to ")
    got, steps = _anchors(path, ids["a"], ids["b"])
    assert got == [(0.5, 0.6), (1.0, 1.2), (3.0, 3.5)]
    assert [s.name for s in steps[-2:]] == ["sync anchor 0.50 s of a \u2194 0.60 s of b", "2 sync anchors between a and b"]
    # seen from b's side too, and taken back together by the restore the line names
    with Engine.open(path, read_only=True) as eng:
        assert [(x.reference_s, x.target_s) for x in eng.sync_anchors(ids["b"], ids["a"])][1:] == [(1.2, 1.0),
                                                                                                  (3.5, 3.0)]
    assert main(["restore", str(path), "--to", line.rsplit(" ", 1)[1], "-q"]) == 0
    assert _anchors(path, ids["a"], ids["b"])[0] == [(0.5, 0.6)]


def test_a_csv_in_the_sync_map_format_is_read_and_its_rows_named_when_refused(project, tmp_path, capsys):
    path, ids = project
    table = tmp_path / "fixes.csv"
    table.write_text("reference_time_s,target_time_s\n0.5,0.6\n2.0,2.4\n")
    assert main(["anchor", str(path), "--from", "b", "--to", "c", "--csv", str(table), "-q"]) == 0
    assert _anchors(path, ids["b"], ids["c"])[0] == [(0.5, 0.6), (2.0, 2.4)]
    # the third row crosses the project's anchor at 2.0 s -> 2.4 s: nothing of the file is stored
    table.write_text("reference_time_s,target_time_s\n4.0,4.5\n1.0,3.0\n")
    assert main(["anchor", str(path), "--from", "b", "--to", "c", "--csv", str(table)]) != 0
    err = _one_error_line(capsys)
    assert f"{table}, line 3" in err and "crosses the anchor 2.00 s \u2194 2.40 s" in err
    assert _anchors(path, ids["b"], ids["c"])[0] == [(0.5, 0.6), (2.0, 2.4)]
    # a bad time names the file and the line
    table.write_text("reference_time_s,target_time_s\n1.0,abc\n")
    assert main(["anchor", str(path), "--from", "b", "--to", "c", "--csv", str(table)]) != 0
    err = _one_error_line(capsys)
    assert str(table) in err and "line 2" in err and "target_time_s" in err


@pytest.mark.parametrize("argv, expected", [
    (["--from", "a", "--to", "b", "--times", "1.0:1.2", "2.0:1.0"],
     "--times 2.0:1.0: 2.00 s \u2194 1.00 s crosses --times 1.0:1.2 (1.00 s \u2194 1.20 s)"),
    (["--from", "a", "--to", "b", "--times", "1.0:99"], "--times 1.0:99: 99.000 s lies past the end of b"),
    (["--from", "a", "--to", "nobody", "--times", "1:1"], "item 'nobody': no item of"),
    (["--from", "a", "--to", "a", "--times", "1:1"], "a sync anchor joins two different recordings"),
    (["--from", "a", "--to", "b", "--times", "1.0-1.2"], "--times '1.0-1.2': expected REFERENCE_S:TARGET_S"),
    (["--from", "a", "--to", "b", "--times", "1:-2"], "--times '1:-2': expected REFERENCE_S:TARGET_S"),
])
def test_refusals_are_one_line_and_store_nothing(project, capsys, argv, expected):
    path, ids = project
    before = _anchors(path, ids["a"], ids["b"])
    assert main(["anchor", str(path), *argv]) != 0
    assert expected in _one_error_line(capsys)
    after = _anchors(path, ids["a"], ids["b"])
    assert after[0] == before[0] == [] and len(after[1]) == len(before[1])

