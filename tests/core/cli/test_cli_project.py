"""train / query / export on a Marginalia project made through the engine."""

import csv

import pytest

from marginalia.cli import main

from .conftest import LAYOUT, positions


@pytest.fixture(scope="module")
def project(cgh_dir, tmp_path_factory):
    from marginalia.engine import Engine
    path = tmp_path_factory.mktemp("project") / "p.marginalia"
    with Engine.create(path) as eng:
        eng.import_files([cgh_dir / "profiles.csv"])
        eng.import_labels("annotations-csv", cgh_dir / "annotations.csv")
    return path


def rows(path):
    with open(path, newline="") as fh:
        return list(csv.DictReader(fh))


@pytest.mark.slow
def test_train_from_a_project_gives_a_model_that_predicts_the_files(project, cgh_dir, tmp_path, capsys):
    model = tmp_path / "p.model"
    assert main(["train", str(project), "--out", str(model), "--max-iter", "5"]) == 0
    assert "6 labelled cgh items, 9 labels" in capsys.readouterr().err
    out = tmp_path / "pred"
    assert main(["predict", str(model), "--profiles", str(cgh_dir / "profiles.csv"), "--out", str(out), "-q"]) == 0
    pos = positions()
    assert {(r["profile.id"], r["chromosome"], float(r["position"])) for r in rows(out / "breaks.csv")} == {
        (p, c, (pos[k - 1] + pos[k]) / 2) for (p, c), k in LAYOUT.items() if k is not None}


def test_query_writes_a_ranked_table(project, tmp_path, capsys):
    out = tmp_path / "q.csv"
    assert main(["query", str(project), "--strategy", "best-vs-2nd", "-n", "4", "--out", str(out)]) == 0
    table = rows(out)
    assert 1 <= len(table) <= 4
    assert [int(r["rank"]) for r in table] == list(range(len(table)))
    u = [float(r["uncertainty"]) for r in table]
    assert u == sorted(u, reverse=True)
    names = {f"{p}:{c}" for p, c in LAYOUT}
    for r in table:
        assert r["item_name"] in names and r["strategy"] == "best-vs-2nd" and r["units"] == "bp"
        assert 0 <= int(r["start"]) < int(r["stop"]) <= 60
        assert float(r["start_position"]) == positions()[int(r["start"])]
    assert main(["query", str(project), "-n", "2", "--strategy", "random"]) == 0
    printed = capsys.readouterr().out.splitlines()
    assert printed[0].startswith("rank,item_id") and len(printed) == 3


def test_export_annotations_round_trip(project, cgh_dir, tmp_path):
    out = tmp_path / "ann.csv"
    assert main(["export", str(project), "--format", "annotations-csv", "--out", str(out), "-q"]) == 0
    key = lambda r: (r["profile.id"], r["chromosome"], float(r["min"]), float(r["max"]), r["annotation"])  # noqa: E731
    assert sorted(map(key, rows(out))) == sorted(map(key, rows(cgh_dir / "annotations.csv")))


def test_export_checks_file_or_folder_and_missing_project(project, tmp_path, capsys):
    assert main(["export", str(project), "--format", "bundle", "--out", str(tmp_path / "bundle"), "-q"]) == 0
    assert (tmp_path / "bundle" / "manifest.json").is_file()
    code = main(["export", str(project), "--format", "breaks-csv", "--out", str(tmp_path)])
    assert code == 2 and "writes a file" in capsys.readouterr().err
    code = main(["export", str(tmp_path / "none.marginalia"), "--format", "breaks-csv", "--out", "x.csv"])
    assert code == 2 and "no such project" in capsys.readouterr().err
    # a per-item format with no item it applies to (no audio here) is a failure, not "wrote 0 file(s)"
    code = main(["export", str(project), "--format", "audacity", "--out", str(tmp_path / "tracks")])
    assert code == 1 and "nothing to write" in capsys.readouterr().err


def test_query_on_an_empty_project_says_so(tmp_path, capsys):
    from marginalia.engine import Engine
    Engine.create(tmp_path / "empty.marginalia").close()
    assert main(["query", str(tmp_path / "empty.marginalia")]) == 2
    assert "has no items: import data into it first" in capsys.readouterr().err


@pytest.mark.slow
def test_a_project_of_cgh_items_trains_the_recipe_unless_plain_is_asked(project, tmp_path, capsys):
    from marginalia.models.files import load_model
    model = tmp_path / "recipe.model"
    assert main(["train", str(project), "--out", str(model), "--max-iter", "3"]) == 0
    assert "recipe penalty-law" in capsys.readouterr().err
    m = load_model(model, task="segmentation")
    assert m.provenance["recipe"] == "penalty-law" and m.provenance["learner_params"]["prune"] is True
    assert m.penalty_law() is not None
    plain = tmp_path / "plain.model"
    assert main(["train", str(project), "--out", str(plain), "--max-iter", "3", "--recipe", "plain"]) == 0
    assert load_model(plain, task="segmentation").penalty_law() is None


def test_query_and_export_run_while_the_app_has_the_project_open(project, tmp_path, capsys):
    from marginalia.engine import Engine
    with Engine.open(project):            # what the app holds: the write lock
        assert main(["query", str(project), "-n", "3", "-q"]) == 0
        assert len(capsys.readouterr().out.strip().splitlines()) == 4
        assert main(["export", str(project), "--format", "segments-csv", "--out", str(tmp_path / "s.csv"), "-q"]) == 0
        assert len((tmp_path / "s.csv").read_text().splitlines()) > 1
