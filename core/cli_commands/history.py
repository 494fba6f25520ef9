"""``marginalia-cli history PROJECT``: every step of a project's label history, across sessions."""

from __future__ import annotations

import argparse
import csv
import datetime
import io
import sys

from ..batch import atomic_write_text
from ._common import EXIT_OK, check_output, format_table, require_file

__all__ = ["add_parser", "run", "COLUMNS", "step_rows"]

COLUMNS = ("step", "time", "kind", "added", "changed", "deleted", "items", "undone", "what")

HELP = "list every step of a project's label history (imports, edits, undos, restores)"
EPILOG = """\
output: a table, newest step last (or CSV with --out / --csv):
  step     the step's id, for 'marginalia-cli restore PROJECT --to STEP'
  time     when it was made (local time)
  kind     edit, undo, redo or remove_item (imports and restores are named edits)
  added/changed/deleted  its effect on the labels
  items    the items whose labels it touched
  undone   'yes' for an edit whose effect is reverted now (restore it to get it back)
  what     the step in words, e.g. 'import of 676 labels from annotations.csv'

Undo (Ctrl+Z) in the app reaches the steps of the session it was opened for; every step of every
session is listed here and any of them can be restored.

examples:
  marginalia-cli history project.marginalia
  marginalia-cli history project.marginalia --last 20
  marginalia-cli history project.marginalia --out history.csv
"""


def add_parser(sub, parents) -> None:
    p = sub.add_parser("history", help=HELP, description=HELP + ".", epilog=EPILOG, parents=parents,
                       formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("project", metavar="PROJECT", help="a Marginalia project file")
    p.add_argument("--last", type=int, default=None, metavar="N", help="only the N newest steps")
    p.add_argument("--csv", action="store_true", help="print CSV instead of an aligned table")
    p.add_argument("--out", metavar="H.csv", help="write the history as CSV here instead of stdout")
    p.set_defaults(run=run)


def step_rows(steps, item_names: dict) -> list:
    """One row per step, in :data:`COLUMNS` order."""
    from ..project.timeline import describe_items
    rows = []
    for s in steps:
        when = datetime.datetime.fromtimestamp(s.time).strftime("%Y-%m-%d %H:%M:%S")
        items = describe_items(s.item_ids, item_names) if s.item_ids else ""
        rows.append((s.id, when, s.kind, s.added, s.changed, s.deleted, items, "yes" if s.undone else "", s.name))
    return rows


def run(args) -> int:
    from ..engine import Engine
    from ._common import UsageError
    require_file("PROJECT", args.project, "project file")
    if args.last is not None and args.last < 1:
        raise UsageError(f"--last: expected a positive number of steps, got {args.last}")
    if args.out:
        check_output("--out", args.out, "file")
    with Engine.open(args.project, read_only=True) as eng:   # runs while the app has the project open
        steps = eng.history()
        names = {rec.id: rec.name for rec in eng.session.items()}
    if args.last is not None:
        steps = steps[-args.last:]
    rows = step_rows(steps, names)
    if args.out or args.csv:
        buf = io.StringIO()
        w = csv.writer(buf, lineterminator="\n")
        w.writerow(COLUMNS)
        w.writerows(rows)
        if args.out:
            atomic_write_text(args.out, buf.getvalue())
        else:
            sys.stdout.write(buf.getvalue())
        return EXIT_OK
    if not rows:
        print("(no label edits yet)")
        return EXIT_OK
    print(format_table(COLUMNS, rows))
    return EXIT_OK
