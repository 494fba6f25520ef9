"""Command-line conventions: '-' is standard input/output for single files, evaluate --json, and the
alignment metrics under mir_eval's names (computed by mir_eval here to show they agree)."""

import io
import json
import sys

import numpy as np
import pytest

from marginalia.cli import main
from marginalia.cli_commands import _common
from marginalia.cli_commands._metrics import alignment_metrics

mir_eval = pytest.importorskip("mir_eval")


@pytest.mark.parametrize("seed", range(5))
def test_alignment_metrics_agree_with_mir_eval(seed):
    rng = np.random.default_rng(seed)
    ref = np.cumsum(rng.uniform(0.05, 1.0, size=40))
    est = np.maximum.accumulate(np.clip(ref + rng.normal(0, 0.2, size=40), 0, None))
    ours = alignment_metrics(ref, est)
    theirs = mir_eval.alignment.evaluate(ref, est)
    assert set(theirs) == set(ours)
    for k in theirs:
        assert ours[k] == pytest.approx(theirs[k], rel=1e-12, abs=1e-12), k


class _Stdin:
    def __init__(self, data: bytes):
        self.buffer = io.BytesIO(data)


@pytest.fixture(autouse=True)
def _fresh_stdin_copy():
    _common._stdin_copy.clear()
    yield
    _common._stdin_copy.clear()


def test_dash_reads_profiles_from_stdin_and_writes_csv_to_stdout(seg_model, cgh_dir, tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(sys, "stdin", _Stdin((cgh_dir / "profiles.csv").read_bytes()))
    assert main(["evaluate", str(seg_model), "--profiles", "-", "--annotations", str(cgh_dir / "annotations.csv"),
                 "--out", "-", "-q"]) in (0, 1)
    out, err = capsys.readouterr()
    assert out.splitlines()[0] == "profile.id,chromosome,labels,fp,fn,errors,changes"   # the CSV alone
    assert "label error:" in err and not (tmp_path / "-").exists()
    # the same with --json: one JSON document, and its figures match the CSV's overall row
    _common._stdin_copy.clear()
    monkeypatch.setattr(sys, "stdin", _Stdin((cgh_dir / "profiles.csv").read_bytes()))
    assert main(["evaluate", str(seg_model), "--profiles", "-", "--annotations", str(cgh_dir / "annotations.csv"),
                 "--json", "-q"]) in (0, 1)
    doc = json.loads(capsys.readouterr().out)
    overall = [r for r in out.splitlines() if r.startswith("overall")][0].split(",")
    assert doc["overall"]["labels"] == int(overall[2]) and doc["overall"]["errors"] == int(overall[5])
    assert len(doc["sequences"]) == 6
    assert main(["evaluate", str(seg_model), "--profiles", str(cgh_dir / "profiles.csv"), "--annotations",
                 str(cgh_dir / "annotations.csv"), "--json", "--out", "-"]) == 2


def test_dash_is_refused_where_a_folder_or_a_model_is_written(seg_model, cgh_dir, tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert main(["predict", str(seg_model), "--profiles", str(cgh_dir / "profiles.csv"), "--out", "-"]) == 2
    assert "standard output cannot hold" in capsys.readouterr().err
    assert not (tmp_path / "-").exists()
    assert main(["train", "--task", "segmentation", "--profiles", str(cgh_dir / "profiles.csv"), "--annotations",
                 str(cgh_dir / "annotations.csv"), "--out", "-"]) == 2
    assert not (tmp_path / "-").exists()


def test_export_and_query_write_to_stdout(cgh_dir, tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    project = tmp_path / "p.marginalia"
    assert main(["project", "create", str(project), "--import", str(cgh_dir / "profiles.csv"), "-q"]) == 0
    assert main(["import", str(project), str(cgh_dir / "annotations.csv"), "--format", "annotations-csv", "-q"]) == 0
    capsys.readouterr()
    assert main(["export", str(project), "--format", "seg", "--out", "-", "-q"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("ID\tchrom\tloc.start\tloc.end\tnum.mark\tseg.mean\n") and not (tmp_path / "-").exists()
    assert main(["query", str(project), "-n", "2", "--out", "-"]) == 0
    assert capsys.readouterr().out.startswith("rank,item_id")


@pytest.mark.slow
def test_a_closed_output_pipe_ends_quietly_with_status_141(cgh_dir, tmp_path):
    # `marginalia-cli project list P | head -0`: the reader is gone before the first line is written
    import subprocess
    project = tmp_path / "p.marginalia"
    assert main(["project", "create", str(project), "--import", str(cgh_dir / "profiles.csv"), "-q"]) == 0
    proc = subprocess.Popen([sys.executable, "-m", "marginalia", "project", "list", str(project)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    proc.stdout.close()
    err = proc.stderr.read().decode()
    assert proc.wait(timeout=120) == 141
    assert "Traceback" not in err and "BrokenPipe" not in err and "Exception ignored" not in err, err
