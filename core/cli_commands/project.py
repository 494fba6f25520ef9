"""``marginalia-cli project create|add|list``: make and fill a project without the app."""

from __future__ import annotations

import argparse
import shutil
import sys
from pathlib import Path

from ._common import EXIT_OK, UsageError, add_columns, columns_of, info, require_file

__all__ = ["add_parser", "run"]

HELP = "create a project from data files, add files to it, or list its items"
EPILOG = """\
data files: copy-number tables (long or DNAcopy wide, any usual column names; bedGraph), audio
(WAV/FLAC/OGG/MP3) with its MIDI score of the same name next to it (one alignment item), generic
CSV/TSV series. Every file is read before anything is added, so a bad file adds nothing.

examples:
  marginalia-cli project create cgh.marginalia --import profiles.csv.gz
  marginalia-cli project add cgh.marginalia coriell.csv
  marginalia-cli import cgh.marginalia annotations.csv --format annotations-csv
  marginalia-cli project list cgh.marginalia
"""


def add_parser(sub, parents) -> None:
    p = sub.add_parser("project", help=HELP, description=HELP + ".", epilog=EPILOG, parents=parents,
                       formatter_class=argparse.RawDescriptionHelpFormatter)
    psub = p.add_subparsers(dest="project_command", metavar="{create,add,list}", parser_class=type(p))
    c = psub.add_parser("create", help="create a new project (refuses an existing file)", parents=parents,
                        epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    c.add_argument("project", metavar="PROJECT", help="the project file to create (e.g. study.marginalia)")
    c.add_argument("--import", dest="files", metavar="FILES", nargs="+", default=[], help="data files to import")
    add_columns(c)
    a = psub.add_parser("add", help="import data files into a project", parents=parents, epilog=EPILOG,
                        formatter_class=argparse.RawDescriptionHelpFormatter)
    a.add_argument("project", metavar="PROJECT", help="a Marginalia project file")
    a.add_argument("files", metavar="FILES", nargs="+", help="data files to import")
    add_columns(a)
    ls = psub.add_parser("list", help="list a project's items (tab-separated: id, name, kind, task, labels)",
                         parents=parents)
    ls.add_argument("project", metavar="PROJECT", help="a Marginalia project file")
    p.set_defaults(run=run)


def _files(values) -> list:
    return [require_file("FILES", f, "data file") for f in values]


def run(args) -> int:
    from ..engine import Engine
    cmd = args.project_command
    if cmd is None:
        raise UsageError("project needs a subcommand: create, add or list")
    if cmd == "list":
        require_file("PROJECT", args.project, "project file", stdin=False)
        with Engine.open(args.project, read_only=True) as eng:
            for it in eng.items():
                print(f"{it.id}\t{it.name}\t{it.kind}\t{it.task}\t{len(eng.labels(it.id))}")
        return EXIT_OK
    files = _files(args.files)
    columns = columns_of(args)
    if cmd == "add":
        require_file("PROJECT", args.project, "project file", stdin=False)
        with Engine.open(args.project) as eng:
            ids = eng.import_files(files, columns=columns)
        info(args, f"project add: {len(ids)} item(s) added to {args.project}")
        return EXIT_OK
    path = Path(args.project)
    if path.exists():
        raise UsageError(f"PROJECT {args.project!r} already exists; add files to it with "
                         f"`marginalia-cli project add {args.project} FILES...`")
    parent = path.parent if str(path.parent) else Path(".")
    if not parent.is_dir():
        raise UsageError(f"PROJECT {args.project!r}: folder {str(parent)!r} does not exist")
    before = {q.name for q in parent.iterdir()}
    try:
        with Engine.create(path) as eng:
            ids = eng.import_files(files, columns=columns) if files else []
    except BaseException:
        # a file could not be read: remove what this command made (the new project and its side files), only
        for q in parent.iterdir():
            if q.name not in before and q.name.startswith(path.name):
                shutil.rmtree(q) if q.is_dir() else q.unlink()
        raise
    info(args, f"project create: {args.project} with {len(ids)} item(s)")
    if not files:
        print(f"project create: the project is empty; add data with `marginalia-cli project add {args.project} "
              "FILES...`", file=sys.stderr)
    return EXIT_OK
