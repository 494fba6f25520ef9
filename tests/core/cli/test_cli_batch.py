"""batch predict/evaluate on a real Dask LocalCluster give the single-process results."""

import importlib.util
import time

import pytest

from marginalia.cli import main


def _outputs(folder):
    return {name: (folder / name).read_text() for name in ("breaks.csv", "segments.csv")}


@pytest.mark.slow
def test_batch_predict_on_two_thread_workers_equals_predict(seg_model, cgh_dir, tmp_path, capsys):
    profiles = str(cgh_dir / "profiles.csv")
    assert main(["predict", str(seg_model), "--profiles", profiles, "--out", str(tmp_path / "single"), "-q"]) == 0
    assert main(["batch", "predict", str(seg_model), "--profiles", profiles, "--out", str(tmp_path / "dask"),
                 "--workers", "2", "--threads"]) == 0
    err = capsys.readouterr().err
    assert "2 worker(s) ready" in err
    # without bokeh every dashboard page is a 404: no link is given then
    assert ("batch: dashboard at" in err) == (importlib.util.find_spec("bokeh") is not None)
    assert _outputs(tmp_path / "dask") == _outputs(tmp_path / "single")


@pytest.mark.slow
def test_interrupted_batch_resumes_and_equals_predict(seg_model, cgh_dir, tmp_path, capsys):
    profiles = str(cgh_dir / "profiles.csv")
    assert main(["predict", str(seg_model), "--profiles", profiles, "--out", str(tmp_path / "single"), "-q"]) == 0
    out = tmp_path / "dask"
    # an interrupted run: only part of the items were done before
    assert main(["predict", str(seg_model), "--profiles", profiles, "--out", str(out), "-q"]) == 0
    for marker in sorted((out / ".batch").iterdir())[:3]:
        marker.unlink()
    (out / "breaks.csv").unlink()
    assert main(["batch", "predict", str(seg_model), "--profiles", profiles, "--out", str(out),
                 "--workers", "2", "--threads"]) == 0
    err = capsys.readouterr().err
    assert "3 already done, skipped" in err
    assert _outputs(out) == _outputs(tmp_path / "single")


@pytest.mark.slow
def test_batch_evaluate_equals_evaluate(seg_model, cgh_dir, tmp_path, capsys):
    args = [str(seg_model), "--profiles", str(cgh_dir / "profiles.csv"), "--annotations",
            str(cgh_dir / "annotations.csv"), "-q"]
    assert main(["evaluate"] + args + ["--out", str(tmp_path / "a.csv")]) == 0
    single = capsys.readouterr().out
    assert main(["batch", "evaluate"] + args + ["--out", str(tmp_path / "b.csv"), "--workers", "2", "--threads",
                                                "--work", str(tmp_path / "work")]) == 0
    assert capsys.readouterr().out == single
    assert (tmp_path / "a.csv").read_text() == (tmp_path / "b.csv").read_text()


@pytest.mark.slow
def test_unreachable_scheduler_fails_fast_with_one_clear_line(seg_model, cgh_dir, tmp_path, capsys):
    t0 = time.perf_counter()
    code = main(["batch", "predict", str(seg_model), "--profiles", str(cgh_dir / "profiles.csv"),
                 "--out", str(tmp_path / "o"), "--scheduler", "tcp://127.0.0.1:9", "--timeout", "1"])
    elapsed = time.perf_counter() - t0
    err = capsys.readouterr().err
    assert code == 1 and elapsed < 10
    assert "cannot reach the Dask scheduler at tcp://127.0.0.1:9" in err and "Traceback" not in err


def test_local_cluster_options_do_not_mix_with_a_scheduler(seg_model, cgh_dir, tmp_path, capsys):
    code = main(["batch", "predict", str(seg_model), "--profiles", str(cgh_dir / "profiles.csv"),
                 "--out", str(tmp_path / "o"), "--scheduler", "tcp://127.0.0.1:9", "--workers", "2"])
    assert code == 2 and "do not apply with --scheduler" in capsys.readouterr().err


@pytest.mark.slow
def test_batch_predict_on_an_existing_scheduler(seg_model, cgh_dir, tmp_path, capsys):
    from distributed import LocalCluster
    profiles = str(cgh_dir / "profiles.csv")
    assert main(["predict", str(seg_model), "--profiles", profiles, "--out", str(tmp_path / "single"), "-q"]) == 0
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=False, dashboard_address=None) as cluster:
        code = main(["batch", "predict", str(seg_model), "--profiles", profiles, "--out", str(tmp_path / "remote"),
                     "--scheduler", cluster.scheduler_address, "-q"])
    assert code == 0
    assert _outputs(tmp_path / "remote") == _outputs(tmp_path / "single")


@pytest.mark.slow
def test_scheduler_without_workers_is_a_clear_error(seg_model, cgh_dir, tmp_path, capsys):
    from distributed import LocalCluster
    with LocalCluster(n_workers=0, processes=False, dashboard_address=None) as cluster:
        code = main(["batch", "predict", str(seg_model), "--profiles", str(cgh_dir / "profiles.csv"),
                     "--out", str(tmp_path / "o"), "--scheduler", cluster.scheduler_address, "--timeout", "1"])
    err = capsys.readouterr().err
    assert code == 1 and "has no worker after 1 s" in err and "dask worker" in err


@pytest.mark.slow
def test_scheduler_from_dask_scheduler_address_and_from_a_scheduler_file(seg_model, cgh_dir, tmp_path, capsys,
                                                                         monkeypatch):
    from distributed import Client, LocalCluster
    profiles = str(cgh_dir / "profiles.csv")
    assert main(["predict", str(seg_model), "--profiles", profiles, "--out", str(tmp_path / "single"), "-q"]) == 0
    with LocalCluster(n_workers=1, threads_per_worker=1, processes=False, dashboard_address=None) as cluster:
        monkeypatch.setenv("DASK_SCHEDULER_ADDRESS", cluster.scheduler_address)
        assert main(["batch", "predict", str(seg_model), "--profiles", profiles, "--out", str(tmp_path / "env")]) == 0
        err = capsys.readouterr().err
        assert f"connecting to {cluster.scheduler_address} (from DASK_SCHEDULER_ADDRESS)" in err
        monkeypatch.delenv("DASK_SCHEDULER_ADDRESS")
        with Client(cluster) as c:
            c.write_scheduler_file(str(tmp_path / "scheduler.json"))
        assert main(["batch", "predict", str(seg_model), "--profiles", profiles, "--out", str(tmp_path / "file"),
                     "--scheduler-file", str(tmp_path / "scheduler.json")]) == 0
        assert "connecting to the scheduler of" in capsys.readouterr().err
    assert _outputs(tmp_path / "env") == _outputs(tmp_path / "single") == _outputs(tmp_path / "file")
    assert main(["batch", "predict", str(seg_model), "--profiles", profiles, "--out", str(tmp_path / "x"),
                 "--scheduler-file", str(tmp_path / "missing.json")]) == 1
    assert "no such file" in capsys.readouterr().err
