"""The installed package: one namespace whose package list matches the tree, and a public API that resolves."""

import pathlib
import subprocess
import sys
import tomllib

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]


def _tree_packages():
    names = set()
    for folder, name in (("core", "marginalia"), ("app", "marginalia.app"), ("resources", "marginalia.resources")):
        for init in (ROOT / folder).rglob("__init__.py"):
            names.add(".".join((name, *init.parent.relative_to(ROOT / folder).parts)))
    return names


def test_pyproject_lists_every_package_of_the_tree():
    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    assert set(config["tool"]["setuptools"]["packages"]) == _tree_packages()


def test_every_public_name_resolves_and_is_documented():
    import marginalia as mg

    for name in mg.__all__:
        value = getattr(mg, name)
        if callable(value):
            assert (value.__doc__ or "").strip(), f"marginalia.{name} has no docstring"
    with pytest.raises(AttributeError, match="no attribute 'not_a_name'"):
        mg.not_a_name  # noqa: B018


def test_import_loads_neither_qt_nor_dask_nor_the_kernels():
    code = ("import sys, marginalia; "
            "print(sorted({m.split('.')[0] for m in sys.modules} & {'PySide6', 'pyqtgraph', 'dask', 'distributed', "
            "'numba', 'librosa'}))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def test_learners_share_one_verb():
    import marginalia as mg

    for learner in (mg.CghSegmenter, mg.ScoreAligner, mg.SSVM):
        assert callable(learner.fit) and callable(learner.predict)


def test_a_missing_demo_file_names_the_ones_there_are():
    import marginalia as mg

    assert pathlib.Path(mg.demo_file("profiles.csv")).is_file()
    with pytest.raises(mg.DataFormatError, match="profiles.csv"):
        mg.demo_file("nope.csv")


@pytest.mark.slow
def test_readme_example_runs(tmp_path, monkeypatch):
    """The README's Python example, run as a doctest (the same lines a user copies), in an empty folder."""
    import doctest

    monkeypatch.chdir(tmp_path)
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    parser = doctest.DocTestParser()
    test = parser.get_doctest(text, {}, "README.md", str(ROOT / "README.md"), 0)
    assert test.examples, "the README has no Python example"
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    runner.run(test)
    assert runner.failures == 0
