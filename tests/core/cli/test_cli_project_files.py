"""project create / add / list from the command line: every CLI path can start from data files."""

import pytest

from marginalia.cli import main

from .conftest import LAYOUT


@pytest.mark.slow
def test_create_add_list_then_import_labels_and_export(cgh_dir, tmp_path, capsys):
    project = tmp_path / "study.marginalia"
    assert main(["project", "create", str(project), "--import", str(cgh_dir / "profiles.csv")]) == 0
    assert f"with {len(LAYOUT)} item(s)" in capsys.readouterr().err
    # a wide DNAcopy table added later
    wide = tmp_path / "wide.csv"
    wide.write_text("Clone,Chromosome,Position,A\n" + "".join(f"c{i},3,{i},{0.1 * (i > 4)}\n" for i in range(10)))
    assert main(["project", "add", str(project), str(wide)]) == 0
    assert main(["import", str(project), str(cgh_dir / "annotations.csv"), "--format", "annotations-csv", "-q"]) == 0
    capsys.readouterr()
    assert main(["project", "list", str(project)]) == 0
    rows = [line.split("\t") for line in capsys.readouterr().out.splitlines()]
    assert len(rows) == len(LAYOUT) + 1 and rows[-1][1:4] == ["A:3", "cgh", "segmentation"]
    assert sum(int(r[4]) for r in rows) == 9
    assert main(["export", str(project), "--format", "annotations-csv", "--out", str(tmp_path / "a.csv"), "-q"]) == 0
    assert len((tmp_path / "a.csv").read_text().splitlines()) == 10


def test_create_refuses_an_existing_file_and_leaves_nothing_behind_on_a_bad_file(cgh_dir, tmp_path, capsys):
    existing = tmp_path / "keep.marginalia"
    existing.write_bytes(b"not mine")
    assert main(["project", "create", str(existing)]) == 2
    assert existing.read_bytes() == b"not mine" and "already exists" in capsys.readouterr().err
    bad = tmp_path / "bad.csv"
    bad.write_text("profile.id,chromosome,probe,ratio\n1,1,5,0.1\n")
    before = sorted(p.name for p in tmp_path.iterdir())
    assert main(["project", "create", str(tmp_path / "new.marginalia"), "--import", str(bad)]) == 1
    assert "--columns" in capsys.readouterr().err
    assert sorted(p.name for p in tmp_path.iterdir()) == before
    assert main(["project", "create", str(tmp_path / "n.marginalia"), "--import", str(tmp_path / "missing.csv")]) == 2


@pytest.mark.slow
def test_columns_are_kept_with_the_items_and_the_project_reopens(cgh_dir, tmp_path, capsys):
    from marginalia.engine import Engine
    odd = tmp_path / "odd.csv"
    lines = (cgh_dir / "profiles.csv").read_text().splitlines()
    odd.write_text("\n".join(["tumour,arm,coord,ratio"] + lines[1:]) + "\n")
    project = tmp_path / "p.marginalia"
    spec = "id=tumour,chromosome=arm,position=coord,logratio=ratio"
    assert main(["project", "create", str(project), "--import", str(odd), "--columns", spec, "-q"]) == 0
    with Engine.open(project, read_only=True) as eng:
        items = eng.items()
        assert len(items) == len(LAYOUT)
        seq = eng.sequence(items[0].id)     # read again from the file, with the kept naming
        assert seq.n_samples == 60
    assert main(["project", "add", str(project), str(odd), "--columns", "position=coord"]) == 2
