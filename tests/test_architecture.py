"""Architecture rules of DESIGN.md that a test can check.

The source tree keeps ``core/`` (installed as the package ``marginalia``), ``app/`` (``marginalia.app``)
and ``resources/`` (``marginalia.resources``); the rules are stated on the installed names.
"""

import ast
import pathlib

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]
FORBIDDEN_IN_CORE = ("PySide6", "pyqtgraph", "shiboken6", "marginalia.app")
APP_MAY_IMPORT_FROM_CORE = ("marginalia.engine", "marginalia.types", "marginalia.exceptions", "marginalia.events",
                            "marginalia.resources", "marginalia.app")


def _imports(path):
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield alias.name
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            if node.module == "marginalia":  # "from marginalia import events" names the submodules
                for alias in node.names:
                    yield f"marginalia.{alias.name}"
            else:
                yield node.module


def _starts_with(name, prefixes):
    return any(name == p or name.startswith(p + ".") for p in prefixes)


def test_core_never_imports_qt_or_app():
    offenders = []
    for path in (ROOT / "core").rglob("*.py"):
        for name in _imports(path):
            if _starts_with(name, FORBIDDEN_IN_CORE):
                offenders.append(f"{path.relative_to(ROOT)} imports {name}")
    assert offenders == []


def test_app_uses_core_only_through_its_facade():
    offenders = []
    for path in (ROOT / "app").rglob("*.py"):
        for name in _imports(path):
            if _starts_with(name, ("marginalia",)) and not _starts_with(name, APP_MAY_IMPORT_FROM_CORE):
                offenders.append(f"{path.relative_to(ROOT)} imports {name}")
            if _starts_with(name, ("core", "app")):
                offenders.append(f"{path.relative_to(ROOT)} imports {name} (the installed name is marginalia)")
    assert offenders == []


@pytest.mark.slow
def test_no_module_imports_the_source_folder_names():
    """``core`` and ``app`` are folders of the checkout, not packages: installed, they are ``marginalia``."""
    offenders = []
    results = ROOT / "benchmarks" / "results"  # generated: the benchmarks' virtual environments live there
    for folder in ("core", "app", "tests", "benchmarks", "resources"):
        for path in (ROOT / folder).rglob("*.py"):
            if path.is_relative_to(results):
                continue
            for name in _imports(path):
                if _starts_with(name, ("core", "app")):
                    offenders.append(f"{path.relative_to(ROOT)} imports {name}")
    assert offenders == []


@pytest.mark.slow
def test_the_package_never_imports_the_benchmarks_or_the_tests():
    """``benchmarks/`` (with its research code) and ``tests/`` are not installed: the package cannot import them."""
    offenders = []
    for folder in ("core", "app", "resources"):
        for path in (ROOT / folder).rglob("*.py"):
            for name in _imports(path):
                if _starts_with(name, ("benchmarks", "tests")):
                    offenders.append(f"{path.relative_to(ROOT)} imports {name}")
    assert offenders == []


#: libraries that read or write file formats (audio, MIDI, scores, annotations)
FORMAT_LIBRARIES = ("librosa", "soundfile", "mido", "partitura", "music21", "jams", "praatio", "mir_eval")


@pytest.mark.slow
def test_only_io_imports_file_format_libraries():
    offenders = []
    for path in (ROOT / "core").rglob("*.py"):
        rel = path.relative_to(ROOT)
        if rel.parts[:2] == ("core", "io") or rel.parts[:2] == ("core", "features"):
            continue
        for name in _imports(path):
            if name.split(".")[0] in FORMAT_LIBRARIES:
                offenders.append(f"{rel} imports {name}")
    assert offenders == []
