"""The wheel as a user installs it: built, installed non-editable in a fresh environment without extras, used.

``make test`` runs this after the suite (``make wheel-check`` alone). It checks what the editable install of the
development environment hides: only the package ``marginalia`` at the top of site-packages, its resources in the
wheel, no Qt and no Dask in the base install, the command line and the Python API working on the demo, and one
clear line when an extra is missing. It prints the figures a release note gives (wheel size, install size,
import time, command-line cold start).

Run from the repository root: ``python tests/wheel_check.py [--keep DIR]``.
"""

from __future__ import annotations

import argparse
import doctest
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def run(cmd, *, cwd, env=None, check=True, timeout=600):
    proc = subprocess.run([str(c) for c in cmd], cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)
    if check and proc.returncode != 0:
        sys.exit(f"wheel check: `{' '.join(map(str, cmd))}` failed ({proc.returncode}):\n{proc.stdout}\n{proc.stderr}")
    return proc


def folder_size(path: Path) -> int:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file() and not p.is_symlink())


def check(condition: bool, message: str) -> None:
    if not condition:
        sys.exit(f"wheel check: FAILED: {message}")
    print(f"  ok  {message}")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--keep", metavar="DIR", help="build and install in DIR and keep it (default: a temporary folder)")
    args = ap.parse_args(argv)
    work = Path(args.keep) if args.keep else Path(tempfile.mkdtemp(prefix="marginalia-wheel-"))
    work.mkdir(parents=True, exist_ok=True)
    try:
        return _check(work)
    finally:
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)


def _check(work: Path) -> int:
    dist, venv, user = work / "dist", work / "venv", work / "user"
    user.mkdir(exist_ok=True)
    print("wheel check: building the wheel")
    run([sys.executable, "-m", "build", "--wheel", "--outdir", dist, ROOT], cwd=work)
    wheel = next(dist.glob("marginalia_studio-*.whl"))
    print(f"wheel check: installing {wheel.name} ({wheel.stat().st_size / 1e6:.2f} MB) without extras")
    run([sys.executable, "-m", "venv", venv], cwd=work)
    py = venv / "bin" / "python"
    t0 = time.perf_counter()
    run([py, "-m", "pip", "install", "-q", "--disable-pip-version-check", wheel], cwd=work)
    install_s = time.perf_counter() - t0
    site = Path(run([py, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"], cwd=user).stdout.strip())
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    env["PATH"] = f"{venv / 'bin'}{os.pathsep}{env.get('PATH', '')}"

    tops = sorted(p.name for p in site.iterdir() if (p / "__init__.py").exists() or p.suffix == ".py")
    check("marginalia" in tops and "core" not in tops and "app" not in tops,
          "one top-level package of ours in site-packages "
          f"(found {', '.join(t for t in tops if t in ('marginalia', 'core', 'app'))})")
    for absent in ("PySide6", "pyqtgraph", "dask", "distributed"):
        check(not (site / absent).exists(), f"the base install has no {absent}")
    probe = ("import time; t = time.perf_counter(); import marginalia, sys; dt = time.perf_counter() - t; "
             "print(marginalia.__file__); print(round(dt * 1000)); "
             "print(sorted({m.split('.')[0] for m in sys.modules} & {'PySide6', 'dask', 'distributed', 'numba'}))")
    out = run([py, "-c", probe], cwd=user, env=env).stdout.splitlines()
    check(out[0].startswith(str(site)), f"marginalia is imported from the installed wheel ({out[0]})")
    check(out[2] == "[]", f"import marginalia loads no Qt, Dask or numba ({out[2]}; {out[1]} ms)")
    res = run([py, "-c", "from marginalia import resources as r; "
                         "print(all(r.path(*p).is_file() for p in [('demo', 'profiles.csv'), ('demo', 'melody.wav'), "
                         "('style', 'marginalia.qss'), ('style', 'marginalia-light.qss'), ('icons', 'marginalia.svg')]))"],
              cwd=user, env=env)
    check(res.stdout.strip() == "True", "the demo, both style sheets and the icons are in the wheel")

    cli = venv / "bin" / "marginalia-cli"
    demo = run([py, "-c", "import marginalia as mg; print(mg.demo_file('profiles.csv')); "
                          "print(mg.demo_file('annotations.csv'))"], cwd=user, env=env).stdout.split()
    t0 = time.perf_counter()
    run([cli, "--version"], cwd=user, env=env)
    version_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    run([cli, "-q", "train", "--task", "segmentation", "--profiles", demo[0], "--annotations", demo[1],
         "--out", "demo.model"], cwd=user, env=env)
    train_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    run([cli, "-q", "predict", "demo.model", "--profiles", demo[0], "--out", "predicted"], cwd=user, env=env)
    predict_s = time.perf_counter() - t0
    outputs = sorted(p.name for p in (user / "predicted").iterdir())
    check(bool(outputs), f"marginalia-cli train and predict on the demo ({', '.join(outputs)})")
    check(run([py, "-m", "marginalia", "--version"], cwd=user, env=env).returncode == 0, "python -m marginalia runs")

    gui = run([venv / "bin" / "marginalia", "--demo"], cwd=user, env=env, check=False)
    lines = gui.stderr.strip().splitlines()
    check(gui.returncode == 2 and len(lines) == 1 and "[gui]" in lines[0],
          f"the app without Qt says in one line which extra to install ({lines[0] if lines else 'nothing'})")
    batch = run([cli, "batch", "predict", "demo.model", "--profiles", demo[0], "--out", "b"], cwd=user, env=env,
                check=False)
    lines = batch.stderr.strip().splitlines()
    check(batch.returncode == 2 and len(lines) == 1 and "[batch]" in lines[0],
          f"batch without Dask says in one line which extra to install ({lines[0] if lines else 'nothing'})")

    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    examples = doctest.DocTestParser().get_examples(readme)
    script = ("import doctest, sys\nexamples = doctest.DocTestParser().get_doctest(open(sys.argv[1]).read(), {}, "
              "'README.md', None, 0)\nr = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS | "
              "doctest.NORMALIZE_WHITESPACE)\nr.run(examples)\nsys.exit(1 if r.failures else 0)\n")
    (user / "readme_example.py").write_text(script, encoding="utf-8")
    run([py, "readme_example.py", ROOT / "README.md"], cwd=user, env=env)
    check(len(examples) > 0, f"the README's Python example ({len(examples)} lines) runs against the wheel")

    print(f"wheel check: wheel {wheel.stat().st_size / 1e6:.2f} MB; base environment {folder_size(venv) / 1e6:.0f} MB "
          f"(installed in {install_s:.0f} s); import marginalia {out[1]} ms; marginalia-cli --version "
          f"{version_s:.2f} s; first train on the demo {train_s:.1f} s, then predict {predict_s:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
