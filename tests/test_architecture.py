"""Architecture rules of DESIGN.md that a test can check."""

import ast
import pathlib

ROOT = pathlib.Path(__file__).resolve().parents[1]
FORBIDDEN_IN_CORE = ("PySide6", "pyqtgraph", "app", "shiboken6")
APP_MAY_IMPORT_FROM_CORE = ("core.engine", "core.types", "core.exceptions", "core.events")


def _imports(path):
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield alias.name
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            if node.module == "core":  # "from core import events" names the submodules
                for alias in node.names:
                    yield f"core.{alias.name}"
            else:
                yield node.module


def test_core_never_imports_qt_or_app():
    offenders = []
    for path in (ROOT / "core").rglob("*.py"):
        for name in _imports(path):
            if name.split(".")[0] in FORBIDDEN_IN_CORE:
                offenders.append(f"{path.relative_to(ROOT)} imports {name}")
    assert offenders == []


def test_app_uses_core_only_through_its_facade():
    offenders = []
    for path in (ROOT / "app").rglob("*.py"):
        for name in _imports(path):
            if name.split(".")[0] == "core" and not name.startswith(APP_MAY_IMPORT_FROM_CORE):
                offenders.append(f"{path.relative_to(ROOT)} imports {name}")
    assert offenders == []


def test_only_io_imports_file_format_libraries():
    offenders = []
    for path in (ROOT / "core").rglob("*.py"):
        rel = path.relative_to(ROOT)
        if rel.parts[:2] == ("core", "io") or rel.parts[:2] == ("core", "features"):
            continue
        for name in _imports(path):
            if name.split(".")[0] in ("librosa", "soundfile", "mido"):
                offenders.append(f"{rel} imports {name}")
    assert offenders == []
