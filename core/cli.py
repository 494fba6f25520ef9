"""``marginalia-cli``: the headless command line.

Subcommands (``marginalia-cli COMMAND --help`` shows examples for each):

* ``project``  create a project from data files (``project create P --import FILES``), add files, list items
* ``train``    fit a model from a project's labels, or from profile/annotation files, or from score/audio pairs
* ``predict``  segment or align files and folders with a model
* ``align``    align one score to one recording (with or without a model)
* ``evaluate`` label error of a model on annotated profiles, or onset error of an alignment
* ``query``    the parts of a project to label next
* ``export``   write a project's labels, predictions or a dataset bundle
* ``import``   bring Audacity / Sonic Visualiser / TextGrid / JAMS / aCGH labels into a project
* ``batch``    ``predict``/``evaluate`` on a Dask cluster, resumable

Exit codes: 0 success, 1 some items failed (or the work could not be done),
2 the command line is wrong. Errors are one line on stderr; ``--debug``
shows the traceback.
"""

from __future__ import annotations

import argparse
import os
import sys
import traceback
import warnings
from typing import Optional, Sequence

from .exceptions import MarginaliaError

__all__ = ["main", "build_parser"]

PROG = "marginalia-cli"

_EPILOG = """\
examples:
  marginalia-cli project create study.marginalia --import profiles.csv.gz coriell.csv
  marginalia-cli import study.marginalia annotations.csv --format annotations-csv
  marginalia-cli train --task segmentation --profiles profiles.csv.gz --annotations annotations.csv --out cgh.model
  marginalia-cli predict cgh.model --profiles profiles.csv.gz --out predictions/
  marginalia-cli evaluate cgh.model --profiles profiles.csv.gz --annotations annotations.csv
  marginalia-cli align --score piece.mid --audio piece.wav --out piece_alignment.csv
  marginalia-cli query project.marginalia --strategy best-vs-2nd -n 50 --out next.csv
  marginalia-cli batch predict cgh.model --profiles profiles.csv.gz --out predictions/ --workers 2

exit codes: 0 ok, 1 some items failed, 2 usage error
"""


class _Parser(argparse.ArgumentParser):
    """An ArgumentParser whose usage errors raise instead of exiting, so ``main`` returns 2."""

    def error(self, message):
        raise _ArgparseError(self, message)


class _ArgparseError(Exception):
    def __init__(self, parser, message):
        super().__init__(message)
        self.parser = parser


def build_parser() -> argparse.ArgumentParser:
    """The full argument parser (subcommands registered by :mod:`marginalia.cli_commands`)."""
    from .cli_commands import COMMANDS

    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--debug", action="store_true", default=argparse.SUPPRESS,
                        help="show the full traceback of an error")
    common.add_argument("-q", "--quiet", action="store_true", default=argparse.SUPPRESS,
                        help="no progress bar or status lines")

    parser = _Parser(prog=PROG, description="Marginalia without a window: train, predict, align, evaluate, "
                                            "query and export; batch work on Dask.",
                     epilog=_EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter, parents=[common])
    parser.add_argument("--version", action="version", version=f"{PROG} {_version()}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    for module in COMMANDS:
        module.add_parser(sub, [common])
    return parser


def _warning_printer(prog: str, debug: bool):
    """``warnings.showwarning`` for the command line: Marginalia's own warnings as one line each.

    Warnings raised by Marginalia (a skipped annotation row, a constant feature) say something
    about the user's data and are printed as ``prog: warning: ...``; third-party libraries'
    warnings (librosa on a very short recording, say) are shown only with ``--debug``, since the
    command reports the actual problem itself.
    """
    package_dir = os.path.dirname(os.path.abspath(__file__))

    def show(message, category, filename, lineno, file=None, line=None):
        ours = (category.__module__ or "").startswith("marginalia.") or os.path.abspath(filename).startswith(package_dir)
        if ours:
            print(f"{prog}: warning: {message}", file=sys.stderr, flush=True)
        elif debug:
            print(warnings.formatwarning(message, category, filename, lineno, line), end="", file=sys.stderr)

    return show


def _version() -> str:
    from .models.persistence import library_version
    return library_version()


def main(argv: Optional[Sequence[str]] = None) -> int:
    """Run the command line; returns the exit code (0 ok, 1 items failed, 2 usage error)."""
    from .cli_commands._common import EXIT_FAILED, EXIT_USAGE, UsageError

    argv = list(sys.argv[1:] if argv is None else argv)
    parser = build_parser()
    debug = "--debug" in argv
    try:
        args = parser.parse_args(argv)
    except _ArgparseError as exc:
        exc.parser.print_usage(sys.stderr)
        print(f"{exc.parser.prog}: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except SystemExit as exc:  # --help and --version
        return int(exc.code or 0)
    args.debug = getattr(args, "debug", False)
    args.quiet = getattr(args, "quiet", False)
    if args.command is None:
        parser.print_help(sys.stderr)
        return EXIT_USAGE
    prog = f"{PROG} {args.command}"
    try:
        with warnings.catch_warnings():
            warnings.showwarning = _warning_printer(prog, debug)
            return int(args.run(args))
    except UsageError as exc:
        if debug:
            traceback.print_exc()
        print(f"{prog}: error: {_one_line(exc)}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        print(f"{prog}: interrupted; finished items are kept, run the command again to resume", file=sys.stderr)
        return 130
    except (MarginaliaError, OSError, ValueError) as exc:
        if debug:
            traceback.print_exc()
        print(f"{prog}: error: {_one_line(exc)}", file=sys.stderr)
        return EXIT_FAILED
    except Exception as exc:  # noqa: BLE001 - the contract is one clear line, not a traceback
        if debug:
            traceback.print_exc()
        print(f"{prog}: internal error: {type(exc).__name__}: {_one_line(exc)} (run with --debug for the "
              "traceback and report it)", file=sys.stderr)
        return EXIT_FAILED


def _one_line(exc: BaseException) -> str:
    return " ".join(str(exc).split()) or type(exc).__name__


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
