"""benchmarks/README.md indexes every script, and every benchmark the repository names exists where it says."""

import pathlib
import re

ROOT = pathlib.Path(__file__).resolve().parents[1]
FOLDERS = ("speed", "quality", "experiments", "images")
TEXTS = ["README.md", "Makefile", "CHANGELOG.md", "benchmarks/README.md", *map(str, ROOT.glob("docs/**/*.md"))]


def _scripts() -> set:
    return {f"{folder}/{p.name}" for folder in FOLDERS for p in (ROOT / "benchmarks" / folder).glob("[!_]*.py")}


def test_the_index_has_one_line_per_script_with_its_command():
    index = (ROOT / "benchmarks" / "README.md").read_text(encoding="utf-8")
    for script in sorted(_scripts()):
        folder, name = script.split("/")
        section = index.split(f"## {folder}/")[1].split("\n## ")[0]
        rows = [line for line in section.splitlines() if line.startswith(f"| `{name}` |")]
        assert len(rows) == 1, f"benchmarks/README.md: no line (or several) for {script}"
        module = f"benchmarks.{folder}.{name[:-3]}"
        assert module in rows[0] or "`make " in rows[0], f"benchmarks/README.md: the line of {script} gives no command"


def test_every_benchmark_the_repository_names_exists():
    missing = []
    for text in TEXTS:
        path = ROOT / text
        content = path.read_text(encoding="utf-8")
        for module in re.findall(r"python -m (benchmarks(?:\.\w+)+)", content):
            if not (ROOT / (module.replace(".", "/") + ".py")).is_file():
                missing.append(f"{path.relative_to(ROOT)}: {module}")
        for file in re.findall(r"(?<![\w/])(benchmarks/[\w/]+\.py)", content):
            if not (ROOT / file).is_file():
                missing.append(f"{path.relative_to(ROOT)}: {file}")
    assert missing == []


def test_every_option_the_repository_gives_a_benchmark_is_one_it_accepts():
    """A page that shows ``python -m benchmarks.x --flag`` must name a flag the script declares: a renamed or
    dropped option would make the documented command stop with a usage error."""
    unknown = []
    for text in TEXTS:
        path = ROOT / text
        content = path.read_text(encoding="utf-8")
        for module, arguments in re.findall(r"python -m (benchmarks(?:\.\w+)+)([^`|)\n]*)", content):
            script = ROOT / (module.replace(".", "/") + ".py")
            if not script.is_file():
                continue  # reported by the test above
            source = script.read_text(encoding="utf-8")
            for flag in re.findall(r"(?<![\w-])--[a-z][\w-]*", arguments):
                if flag != "--help" and f'"{flag}"' not in source:
                    unknown.append(f"{path.relative_to(ROOT)}: {module} {flag}")
    assert unknown == []
