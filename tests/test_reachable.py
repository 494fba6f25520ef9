"""Nothing in the installed package is unreachable: every module is imported, directly or not, from an entry point.

The entry points are what a user runs or imports: the public API (``import marginalia``, with the modules its
``_API`` table loads on first use), the ``marginalia-cli`` and ``marginalia`` scripts of pyproject.toml,
``python -m marginalia`` / ``python -m marginalia.app``, and every subcommand module. The walk reads the import
statements of the source (top-level, and the lazy ones inside functions), so a module reached only by
benchmarks or tests is found here; research code belongs in ``benchmarks/research/``.
"""

import ast
import pathlib
import tomllib

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]
CONFIG = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
FOLDERS = {name: ROOT / folder for name, folder in CONFIG["tool"]["setuptools"]["package-dir"].items()}

#: shipped on purpose though no entry point imports them: the brute-force oracles a user (and the tests) can
#: check the exact decoders against (DESIGN.md, decoders/)
ORACLES = {"marginalia.decoders.brute", "marginalia.decoders.brute_alignment"}


def _folder(package: str) -> pathlib.Path:
    owner = max((name for name in FOLDERS if package == name or package.startswith(name + ".")), key=len)
    return FOLDERS[owner].joinpath(*package[len(owner):].split(".")[1:])


def _installed_modules() -> dict:
    """Module name -> source file, for every module of the packages pyproject.toml installs."""
    modules = {}
    for package in CONFIG["tool"]["setuptools"]["packages"]:
        folder = _folder(package)
        modules[package] = folder / "__init__.py"
        for path in folder.glob("*.py"):
            if path.name != "__init__.py":
                modules[f"{package}.{path.stem}"] = path
    return modules


MODULES = _installed_modules()


def _imported_names(name: str):
    """Every module name ``name``'s source imports, anywhere in the file (``from m import x`` yields ``m`` and
    ``m.x``, since ``x`` may be a submodule); for ``marginalia`` itself also the targets of ``_API``."""
    path = MODULES[name]
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                parts = package.split(".")
                base = ".".join(parts[:len(parts) - node.level + 1])
                module = f"{base}.{node.module}" if node.module else base
            else:
                module = node.module
            yield module
            yield from (f"{module}.{alias.name}" for alias in node.names)
        elif (name == "marginalia" and isinstance(node, ast.Assign)
              and any(getattr(t, "id", None) == "_API" for t in node.targets)):
            yield from (f"marginalia.{v.value}" for v in node.value.values)


def _entry_points() -> list:
    scripts = {**CONFIG["project"]["scripts"], **CONFIG["project"]["gui-scripts"]}
    starts = ["marginalia", "marginalia.__main__", "marginalia.app.__main__"]
    starts += [target.split(":")[0] for target in scripts.values()]
    starts += [m for m in MODULES if m.startswith("marginalia.cli_commands.")]
    return starts


def _reached(starts) -> set:
    seen, todo = set(), list(starts)
    while todo:
        name = todo.pop()
        if name not in MODULES or name in seen:
            continue
        seen.add(name)
        parts = name.split(".")
        todo += [".".join(parts[:i]) for i in range(1, len(parts))]   # importing a.b.c runs a and a.b first
        todo += _imported_names(name)
    return seen


@pytest.mark.slow
def test_the_walk_sees_entry_points_lazy_imports_and_the_api_table():
    starts = _entry_points()
    assert {"marginalia.cli", "marginalia.app.main", "marginalia.cli_commands.train"} <= set(starts)
    assert all(name in MODULES for name in starts), sorted(set(starts) - set(MODULES))
    # imported only inside TaskRegistry._make (a lazy import)
    assert "marginalia.tasks.segmentation" in _reached(["marginalia.tasks"])
    # the facade module of CghSegmenter, reached through the _API table, not an import statement
    assert "marginalia.cgh.recipe" in _reached(["marginalia"])


@pytest.mark.slow
def test_every_module_of_the_installed_package_is_reached_from_an_entry_point():
    unreached = sorted(set(MODULES) - _reached(_entry_points()) - ORACLES)
    assert unreached == [], ("reached only by benchmarks or tests; move them to benchmarks/research/ or delete "
                             f"them: {unreached}")


@pytest.mark.slow
def test_the_oracles_listed_apart_exist_and_are_really_not_imported():
    assert ORACLES <= set(MODULES)
    assert not ORACLES & _reached(_entry_points())
