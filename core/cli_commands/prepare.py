"""``marginalia-cli prepare``: compile the numerical kernels once, ahead of the first real use."""

from __future__ import annotations

import time

from ._common import EXIT_OK, info

__all__ = ["add_parser", "run", "NEEDS_KERNELS", "cold_start_notice"]

HELP = "compile the numerical kernels once (first run only; about a minute on 2 cores)"
EPILOG = """\
A fresh install compiles its kernels on first use; run this once after installing so that the first
`train`, `predict` or `align` answers at once. The app does the same in the background on its first start.
"""

#: the commands whose first run compiles kernels, and so get the one-line notice on a fresh install
NEEDS_KERNELS = ("train", "predict", "align", "evaluate", "query", "batch", "sync", "carry")

#: the module of an optional extra a command stops without, before it compiles anything
NEEDS_EXTRA = {"batch": "distributed"}


def add_parser(sub, parents) -> None:
    import argparse
    p = sub.add_parser("prepare", help=HELP, description=HELP + ".", epilog=EPILOG, parents=parents,
                       formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--jobs", type=int, default=None, metavar="N",
                   help="worker processes (default: one per core)")
    p.set_defaults(run=run)


def run(args) -> int:
    from ..exceptions import UsageError
    from ..prepare import WORKLOADS, prepare
    if args.jobs is not None and args.jobs < 1:
        raise UsageError(f"--jobs: expected a positive number, got {args.jobs}")
    info(args, f"prepare: compiling the kernels of {len(WORKLOADS)} workloads (first run only)")
    start = time.perf_counter()
    prepare(jobs=args.jobs, progress=lambda done, total, name: info(args, f"prepare: [{done}/{total}] {name}"))
    info(args, f"prepare: done in {time.perf_counter() - start:.0f} s; later runs load the compiled kernels")
    return EXIT_OK


def cold_start_notice(args) -> None:
    """One line before a command that will compile kernels on a fresh install (nothing once prepared)."""
    if args.command not in NEEDS_KERNELS:
        return
    import importlib.util
    extra = NEEDS_EXTRA.get(args.command)
    if extra is not None and importlib.util.find_spec(extra) is None:
        return          # the command stops at once on the missing extra, with its own line
    from ..prepare import is_prepared
    if not is_prepared():
        info(args, "marginalia-cli: first run: compiling the numerical kernels as they are needed (once per install; "
                   "`marginalia-cli prepare` does it ahead, on every core)")
