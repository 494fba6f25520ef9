"""``marginalia-cli history`` and ``restore``: the issue's lost import, found and brought back from the shell."""

import csv
import io

import pytest

from marginalia.cli import main
from marginalia.engine import Engine
from marginalia.types import RegionKind, RegionLabel


@pytest.fixture
def project(cgh_dir, tmp_path):
    """9 imported labels, all deleted in a later session, then one new label: the import is out of undo's reach."""
    path = tmp_path / "p.marginalia"
    with Engine.create(path) as eng:
        eng.import_files([cgh_dir / "profiles.csv"])
        eng.import_labels("annotations-csv", cgh_dir / "annotations.csv")
    with Engine.open(path) as eng:
        item = eng.session.items()[1].id          # 1:2, a flat sequence with one 0breakpoints label
        gone = [lab.id for lab in eng.labels()]
        for label_id in gone:                      # the labels lost one by one (as by undos of an earlier session)
            eng.delete_label(label_id)
        eng.add_label(RegionLabel(item, start=0, stop=5, kind=RegionKind.ZERO, id="new"))
    return path


def test_history_lists_every_step_with_the_import_named(project, capsys):
    assert main(["history", str(project)]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0].split() == ["step", "time", "kind", "added", "changed", "deleted", "items", "undone", "what"]
    assert set(out[1]) == {"-", " "}
    assert out[2].split()[0] == "1" and out[2].endswith("import of 9 labels from annotations.csv")
    assert "6 items (1:1, 1:2, 2:1, ...)" in out[2]
    assert len(out) == 2 + 1 + 9 + 1   # header, rule, the import, 9 deletions, the new label
    assert out[-1].endswith("add 1 label on 1:2")
    assert main(["history", str(project), "--csv", "--last", "2"]) == 0
    rows = list(csv.DictReader(io.StringIO(capsys.readouterr().out)))
    assert [r["what"] for r in rows] == ["delete 1 label on 3:2", "add 1 label on 1:2"]
    assert rows[0]["deleted"] == "1" and rows[1]["added"] == "1" and rows[1]["kind"] == "edit"


def test_restore_brings_the_import_back_as_one_new_step(project, capsys):
    assert main(["restore", str(project), "--to", "1"]) == 0
    err = capsys.readouterr().err
    assert "labels after step 1 (import of 9 labels from annotations.csv) restored as step" in err
    assert "9 added, 1 deleted; the project has 9 labels" in err
    back = err.rsplit("--to ", 1)[1].split()[0]
    with Engine.open(project, read_only=True) as eng:
        assert len(eng.labels()) == 9 and "new" not in {lab.id for lab in eng.labels()}
        last = eng.history()[-1]
        assert last.name == "restore to step 1 (import of 9 labels from annotations.csv)"
    assert main(["restore", str(project), "--to", back, "-q"]) == 0       # and it is taken back the same way
    with Engine.open(project, read_only=True) as eng:
        assert [lab.id for lab in eng.labels()] == ["new"]
    assert main(["restore", str(project), "--to", back]) == 0
    assert "nothing changed" in capsys.readouterr().err


def test_restore_to_an_unknown_step_or_a_project_in_use_is_one_clear_line(project, capsys):
    assert main(["restore", str(project), "--to", "999"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "has no step 999 (steps run from 1 to " in err and "marginalia-cli history" in err
    with Engine.open(project):                                      # the app has it open
        assert main(["history", str(project), "--last", "1"]) == 0  # reading still works
        capsys.readouterr()
        assert main(["restore", str(project), "--to", "1"]) == 1
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "Traceback" not in err and err.startswith("marginalia-cli restore: error:")
