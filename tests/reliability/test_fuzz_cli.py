"""Any combination of command-line arguments ends in exit 0, 1 or 2 with clear lines, never an internal error.

Arguments are drawn from every subcommand's options, in any order, with values that are real
small files, missing paths, folders, hostile names and out-of-range numbers.
"""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from marginalia.cli import main
from marginalia.engine import Engine
from marginalia.types import RegionKind, RegionLabel

from .engine_kill_child import make_profiles

COMMANDS = ["train", "predict", "align", "evaluate", "query", "export", "batch predict", "batch evaluate"]
OPTIONS = ["--out", "--profiles", "--annotations", "--task", "--format", "--force", "-n", "--strategy", "--pairs",
           "--score", "--audio", "--model", "--max-iter", "--C", "--jobs", "--summary", "--retrain", "-q", "--truth",
           "--alignment", "--learner", "--workers"]


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    folder = tmp_path_factory.mktemp("cli")
    make_profiles(folder / "profiles.csv")
    (folder / "ann.csv").write_text("profile.id,chromosome,min,max,annotation\np0,1,1000,5000,0breakpoints\n")
    (folder / "bad.model").write_bytes(b"PK\x03\x04 not really")
    (folder / "empty").mkdir()
    with Engine.create(folder / "p.marginalia") as eng:
        ids = eng.import_files([folder / "profiles.csv"])
        eng.add_label(RegionLabel(ids[0], start=2, stop=10, kind=RegionKind.ZERO))
    return folder


def values(folder):
    return st.sampled_from([
        str(folder / "profiles.csv"), str(folder / "ann.csv"), str(folder / "bad.model"), str(folder / "p.marginalia"),
        str(folder / "empty"), str(folder / "missing.csv"), str(folder / "out" / "x.csv"), str(folder / "o"),
        "../../../etc/x", "", "-1", "0", "1e999", "nan", "segmentation", "alignment", "bundle", "annotations-csv",
        "random", "best-vs-2nd", "\u00e9\u00e9", "=cmd|' /C calc'!A0", "a" * 300,
    ])


@pytest.mark.slow
@settings(max_examples=25, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_random_argument_combinations_end_cleanly(files, data, capsys):
    argv = data.draw(st.sampled_from(COMMANDS)).split()
    for _ in range(data.draw(st.integers(0, 6))):
        if data.draw(st.booleans()):
            argv.append(data.draw(st.sampled_from(OPTIONS)))
        argv.append(data.draw(values(files)))
    code = main(argv)
    err = capsys.readouterr().err
    assert code in (0, 1, 2), (argv, code)
    assert "internal error" not in err and "Traceback" not in err, (argv, err)
    # a refused command left nothing behind in the scratch folders
    assert not (files / "out").exists() or code == 0, argv
    assert list((files / "empty").iterdir()) == [] or code == 0, argv
