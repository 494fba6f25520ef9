"""``marginalia-cli anchor PROJECT --from ITEM --to ITEM --times R:T...``: place sync anchors in a project."""

from __future__ import annotations

from ._common import EXIT_OK, UsageError, info, project_command, require_file

__all__ = ["add_parser", "run", "parse_time_pair"]

HELP = "place sync anchors between two recordings of a project (one undoable step)"
EPILOG = """\
A sync anchor says that a moment of one recording is the same music as a moment of another: every later
`carry` (and the app's comparison) of the two recordings passes its path through it, and the project's
sync metric learns from it (Model > Learn the sync metric, or `train PROJECT --task sync`). Give the
anchors as REFERENCE_S:TARGET_S pairs (--times), or as a CSV with the columns
reference_time_s,target_time_s (--csv; the format of the `sync --out` time map and of `sync --anchors`).
Times are seconds of --from (the reference) and of --to (the target).

All anchors are stored as ONE step of the project's history, at once (one undo, or `marginalia-cli
restore`, takes them all back), or none: an anchor past the end of a recording, two anchors that cross
(one earlier in the reference and later in the target: the music cannot go both ways), or one that
crosses an anchor the project already has between the two recordings, refuses the whole command in one
line naming the anchor (its --times value, or its CSV line). The project must not be open in the app.

ITEM is an item's id or its name, as listed by `marginalia-cli project list PROJECT`.

examples:
  marginalia-cli anchor study.marginalia --from take1 --to take2 --times 12.5:13.1 40.2:42.0
  marginalia-cli anchor study.marginalia --from take1 --to take2 --csv fixes.csv
"""


def add_parser(sub, parents) -> None:
    p = project_command(sub, "anchor", HELP, EPILOG, parents)
    p.add_argument("--from", dest="reference", metavar="ITEM", required=True, help="the reference recording")
    p.add_argument("--to", dest="target", metavar="ITEM", required=True, help="the target recording")
    given = p.add_mutually_exclusive_group(required=True)
    given.add_argument("--times", metavar="R:T", nargs="+",
                       help="anchors as REFERENCE_S:TARGET_S (seconds of --from and of --to), e.g. 12.5:13.1")
    given.add_argument("--csv", metavar="CSV", help="anchors as a CSV with the columns reference_time_s,target_time_s")
    p.set_defaults(run=run)


def parse_time_pair(text: str) -> tuple:
    """``"12.5:13.1"`` as ``(12.5, 13.1)``; a :class:`UsageError` naming the value otherwise."""
    import math
    parts = text.split(":")
    try:
        pair = tuple(float(x) for x in parts) if len(parts) == 2 else ()
    except ValueError:
        pair = ()
    if len(pair) != 2 or not all(math.isfinite(x) and x >= 0 for x in pair):
        raise UsageError(f"--times {text!r}: expected REFERENCE_S:TARGET_S, two times in seconds >= 0 joined by "
                         "a colon, e.g. 12.5:13.1")
    return pair


def run(args) -> int:
    from ..engine import Engine
    from .carry import find_recording
    from .sync import read_time_pairs
    require_file("PROJECT", args.project, "project file", stdin=False)
    if args.csv is not None:
        csv_path = require_file("--csv", args.csv, "CSV file", stdin=False)
        times, lines = read_time_pairs(csv_path, with_lines=True)
        if not len(times):
            raise UsageError(f"--csv {args.csv}: the table has a header but no anchors")
        sources = [f"{csv_path}, line {line}" for line in lines]
    else:
        times = [parse_time_pair(text) for text in args.times]
        sources = [f"--times {text}" for text in args.times]
    why = "sync anchors join two audio recordings"
    with Engine.open(args.project) as eng:
        items = eng.items()
        reference = find_recording(items, args.reference, args.project, why)
        target = find_recording(items, args.target, args.project, why)
        if reference.id == target.id:
            raise UsageError(f"--to: {args.target!r} is the --from recording itself; a sync anchor joins two "
                             "different recordings")
        steps = eng.history()
        stored = eng.add_sync_anchors(reference.id, target.id, times, sources=sources)
        total = len(eng.sync_anchors(reference.id, target.id))
    undo = f"; to take them back: marginalia-cli restore {args.project} --to {steps[-1].id}" if steps else ""
    n = len(stored)
    info(args, f"anchor: {n} sync anchor{'s' if n != 1 else ''} stored between {reference.name} and {target.name} "
               f"as one step ({total} in all){undo}")
    return EXIT_OK
