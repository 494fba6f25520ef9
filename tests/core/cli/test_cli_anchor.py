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



def _last_line(capsys):
    return capsys.readouterr().err.strip().splitlines()[-1]


def test_the_first_anchor_of_a_project_without_history_says_how_to_take_it_back(project, capsys):
    path, ids = project
    assert _anchors(path, ids["a"], ids["b"]) == ([], [])
    assert main(["anchor", str(path), "--from", "a", "--to", "b", "--times", "1.0:1.2", "3.0:3.5"]) == 0
    line = _last_line(capsys)
    (first, second), _ = _anchors(path, ids["a"], ids["b"])
    with Engine.open(path, read_only=True) as eng:
        new_ids = [x.id for x in eng.sync_anchors(ids["a"], ids["b"])]
    hint = f"marginalia-cli anchor {path} --from a --to b --delete {new_ids[0]} {new_ids[1]}"
    assert line.endswith(f"(2 in all); to take them back: {hint}"), line
    assert main(hint.split()[1:] + ["-q"]) == 0
    got, steps = _anchors(path, ids["a"], ids["b"])
    assert got == [] and len(steps) == 2


def test_list_then_delete_by_id_and_by_times_as_one_step(project, capsys):
    path, ids = project
    assert main(["anchor", str(path), "--from", "a", "--to", "b", "--times", "0.5:0.6", "1.0:1.2", "3.0:3.5",
                 "-q"]) == 0
    capsys.readouterr()
    assert main(["anchor", str(path), "--from", "b", "--to", "a", "--list"]) == 0
    rows = [r.split() for r in capsys.readouterr().out.strip().splitlines()]
    assert rows[0] == ["id", "b", "(s)", "a", "(s)"]
    listed = {(float(r), float(t)): i for i, r, t in rows[2:]}
    assert sorted(listed) == [(0.6, 0.5), (1.2, 1.0), (3.5, 3.0)]       # seen from b's side
    n_steps = len(_anchors(path, ids["a"], ids["b"])[1])
    # one by its id, one by its times (0.02 s off, within the default tolerance), one named twice
    assert main(["anchor", str(path), "--from", "b", "--to", "a", "--delete", listed[(0.6, 0.5)], "3.52:2.99",
                 listed[(0.6, 0.5)]]) == 0
    line = _last_line(capsys)
    assert line.startswith("anchor: 2 sync anchors deleted between b and a as one step (1 left); to take them "
                           f"back: marginalia-cli restore {path} --to "), line
    got, steps = _anchors(path, ids["a"], ids["b"])
    assert got == [(1.0, 1.2)] and len(steps) == n_steps + 1
    assert main(["restore", str(path), "--to", line.rsplit(" ", 1)[1], "-q"]) == 0
    assert _anchors(path, ids["a"], ids["b"])[0] == [(0.5, 0.6), (1.0, 1.2), (3.0, 3.5)]
    assert main(["anchor", str(path), "--from", "a", "--to", "c", "--list"]) == 0
    assert capsys.readouterr().out.strip() == "(no sync anchors between a and c)"


def test_move_is_one_step_checked_like_a_new_anchor_and_taken_back_by_its_hint(project, capsys):
    path, ids = project
    assert main(["anchor", str(path), "--from", "a", "--to", "b", "--times", "1.0:1.2", "3.0:3.5", "-q"]) == 0
    with Engine.open(path, read_only=True) as eng:
        first = eng.sync_anchors(ids["a"], ids["b"])[0].id
    n_steps = len(_anchors(path, ids["a"], ids["b"])[1])
    assert main(["anchor", str(path), "--from", "a", "--to", "b", "--move", first, "--times", "2.0:2.5"]) == 0
    line = _last_line(capsys)
    assert line.startswith("anchor: sync anchor moved from 1 s \u2194 1.2 s to 2 s \u2194 2.5 s between a and b as "
                           f"one step; to take it back: marginalia-cli restore {path} --to "), line
    got, steps = _anchors(path, ids["a"], ids["b"])
    assert got == [(2.0, 2.5), (3.0, 3.5)] and len(steps) == n_steps + 1
    # seen from b's side, the same anchor moves with its times swapped
    assert main(["anchor", str(path), "--from", "b", "--to", "a", "--move", first, "--times", "0.8:0.7", "-q"]) == 0
    assert _anchors(path, ids["a"], ids["b"])[0] == [(0.7, 0.8), (3.0, 3.5)]


def test_an_id_is_named_by_its_first_characters_as_long_as_they_name_one_anchor(project, capsys):
    path, ids = project
    assert main(["anchor", str(path), "--from", "a", "--to", "b", "--times", "1.0:1.2", "3.0:3.5", "5.0:5.6",
                 "-q"]) == 0
    with Engine.open(path, read_only=True) as eng:
        first, second, third = (a.id for a in eng.sync_anchors(ids["a"], ids["b"]))
    assert main(["anchor", str(path), "--from", "a", "--to", "b", "--move", first[:6], "--times", "2.0:2.5",
                 "-q"]) == 0
    assert main(["anchor", str(path), "--from", "a", "--to", "b", "--delete", third[:4], "-q"]) == 0
    assert _anchors(path, ids["a"], ids["b"])[0] == [(2.0, 2.5), (3.0, 3.5)]
    # fewer than 4 characters, or a start two ids share, name nothing: refused in one line
    assert main(["anchor", str(path), "--from", "a", "--to", "b", "--delete", second[:3]]) != 0
    assert f"--delete {second[:3]}: no sync anchor between a and b has this id; list them" in _one_error_line(capsys)
    from marginalia.cli_commands._common import UsageError
    from marginalia.cli_commands.anchor import _by_id

    class _A:
        def __init__(self, i):
            self.id = i

    class _R:
        name = "a"

    with pytest.raises(UsageError, match="--move abcd: 2 sync anchors have an id starting with it "
                                         r"\(abcd01, abcd02\); give more of the id"):
        _by_id([_A("abcd01"), _A("abcd02")], "abcd", "--move", _R, _R)
    assert _by_id([_A("abcd01"), _A("abcd02")], "abcd02", "--move", _R, _R).id == "abcd02"
    assert _anchors(path, ids["a"], ids["b"])[0] == [(2.0, 2.5), (3.0, 3.5)]


@pytest.mark.parametrize("argv, expected", [
    (["--move", "FIRST", "--times", "4.0:3.0"],
     "--move FIRST --times 4.0:3.0: 4.00 s \u2194 3.00 s crosses the anchor 3.00 s \u2194 3.50 s"),
    (["--move", "FIRST", "--times", "1.0:99"], "--move FIRST --times 1.0:99: 99.000 s lies past the end of b"),
    (["--move", "nobody", "--times", "1.0:1.1"], "--move nobody: no sync anchor between a and b has this id (or an id starting "
                                                "with it)"),
    (["--move", "FIRST", "--times", "1.0:1.1", "2:2"], "give the anchor's new times as ONE --times"),
    (["--move", "FIRST", "--times", "1.0"], "--times '1.0': expected REFERENCE_S:TARGET_S"),
    (["--delete", "FIRST", "nobody"], "--delete nobody: no sync anchor between a and b has this id (or an id "
                                            "starting with it)"),
    (["--delete", "FIRST", "2.0:2.0"], "--delete 2.0:2.0: no sync anchor between a and b lies within 0.05 s"),
    (["--delete", "2.0:2.3", "--tolerance", "2"], "--delete 2.0:2.3: 2 sync anchors lie within 2 s of it (1:1.2, "
                                                  "3:3.5); name one by its id"),
    (["--delete", "1.0:x"], "--delete '1.0:x': expected REFERENCE_S:TARGET_S"),
    (["--delete", "1.0:1.2", "--tolerance", "-1"], "--tolerance -1: expected a number of seconds >= 0"),
])
def test_move_and_delete_refusals_are_one_line_and_change_nothing(project, capsys, argv, expected):
    path, ids = project
    assert main(["anchor", str(path), "--from", "a", "--to", "b", "--times", "1.0:1.2", "3.0:3.5", "-q"]) == 0
    with Engine.open(path, read_only=True) as eng:
        first = eng.sync_anchors(ids["a"], ids["b"])[0].id
    before = _anchors(path, ids["a"], ids["b"])
    assert main(["anchor", str(path), "--from", "a", "--to", "b", *(first if x == "FIRST" else x for x in argv)]) != 0
    assert expected.replace("FIRST", first) in _one_error_line(capsys)
    after = _anchors(path, ids["a"], ids["b"])
    assert after[0] == before[0] == [(1.0, 1.2), (3.0, 3.5)] and len(after[1]) == len(before[1])
