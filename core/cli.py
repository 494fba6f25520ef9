"""``marginalia-cli``: the headless command line.

Subcommands (``marginalia-cli COMMAND --help`` shows examples for each):

* ``project``  create a project from data files (``project create P --import FILES``), add files, list items
* ``train``    fit a model from a project's labels, or from profile/annotation files, or from score/audio pairs
* ``predict``  segment or align files and folders with a model
* ``align``    align one score to one recording (with or without a model)
* ``sync``     align two recordings of the same music (a time map)
* ``carry``    carry one recording's labels onto other recordings of the same music
* ``evaluate`` label error of a model on annotated profiles, or onset error of an alignment
* ``query``    the parts of a project to label next
* ``export``   write a project's labels, predictions or a dataset bundle
* ``import``   bring Audacity / Sonic Visualiser / TextGrid / JAMS / aCGH labels into a project
* ``history``  every step of a project's label history, across sessions
* ``restore``  bring a project's labels back to their state after a step, as one new step
* ``batch``    ``predict``/``evaluate`` on a Dask cluster, resumable
* ``prepare``  compile the numerical kernels once, ahead of the first real use

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
from collections.abc import Sequence
from typing import Optional

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
  marginalia-cli sync --reference take1.wav --target take2.wav --out take1_to_take2.csv
  marginalia-cli carry project.marginalia --from take1 --to take2 take3
  marginalia-cli query project.marginalia --strategy best-vs-2nd -n 50 --out next.csv
  marginalia-cli history project.marginalia
  marginalia-cli restore project.marginalia --to 57
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
    from ._version import library_version
    return library_version()


def main(argv: Optional[Sequence[str]] = None) -> int:
    """Run the command line; returns the exit code (0 ok, 1 bad data or items failed, 2 usage error or missing file)."""
    from .cli_commands._common import EXIT_FAILED, EXIT_USAGE

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
    from .cli_commands._common import CREATED_FOLDERS, remove_created_folders
    CREATED_FOLDERS.clear()
    code = EXIT_FAILED
    try:
        try:
            code = _run(args, prog, debug)
            sys.stdout.flush()      # inside the try: a reader that went away (``| head``) shows here
        except BrokenPipeError:
            code = _stdout_closed()
        return code
    finally:
        if code != 0:       # a failed command leaves no empty --out folder behind
            remove_created_folders()


def _run(args, prog: str, debug: bool) -> int:
    """Run the parsed command; every failure becomes one line on stderr and an exit code."""
    from .cli_commands._common import EXIT_FAILED, EXIT_USAGE, UsageError
    try:
        from .cli_commands.prepare import cold_start_notice
        cold_start_notice(args)
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
    except BrokenPipeError:
        return _stdout_closed()
    except FileNotFoundError as exc:     # an input that vanished or was mistyped: a usage error
        if debug:
            traceback.print_exc()
        print(f"{prog}: error: {_os_error_line(exc)}", file=sys.stderr)
        return EXIT_USAGE
    except OSError as exc:
        if debug:
            traceback.print_exc()
        print(f"{prog}: error: {_os_error_line(exc)}", file=sys.stderr)
        return EXIT_FAILED
    except UnicodeEncodeError as exc:   # a file name from the shell that is not valid UTF-8
        if debug:
            traceback.print_exc()
        bad = exc.object[max(exc.start - 20, 0):exc.end + 20] if isinstance(exc.object, str) else ""
        print(f"{prog}: error: a file name is not valid UTF-8 text (near {bad!r}); rename it to a name without "
              "those bytes", file=sys.stderr)
        return EXIT_USAGE
    except MemoryError:
        if debug:
            traceback.print_exc()
        print(f"{prog}: error: not enough memory for this input; check that the files are the ones meant (a "
              "damaged file can claim absurd sizes), or run it on a machine with more memory", file=sys.stderr)
        return EXIT_FAILED
    except (MarginaliaError, ValueError) as exc:
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


#: the exit status of a command whose output pipe was closed (128 + SIGPIPE), as ``cat`` and ``grep`` give
EXIT_PIPE_CLOSED = 141


def _stdout_closed() -> int:
    """Standard output's reader has gone (``marginalia-cli ... | head``): stop quietly, as Unix tools do.

    Standard output is pointed at the null device so that the interpreter's final flush does not report
    the same closed pipe again.
    """
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError, AttributeError):
        pass    # not a real file (a test's capture): nothing will be flushed to it
    return EXIT_PIPE_CLOSED


def _os_error_line(exc: OSError) -> str:
    """``path: reason`` of an operating-system error, without Python's ``[Errno N]`` decoration."""
    reason = exc.strerror or _one_line(exc)
    names = [n for n in (exc.filename, exc.filename2) if n is not None]
    shown = " -> ".join(os.fsdecode(n) if isinstance(n, bytes) else str(n) for n in names)
    return f"{shown}: {reason}" if shown else reason


def _one_line(exc: BaseException) -> str:
    return " ".join(str(exc).split()) or type(exc).__name__


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
