"""``marginalia-cli anchor PROJECT --from ITEM --to ITEM ...``: place, list, move or delete sync anchors in a project."""

from __future__ import annotations

import shlex

from ._common import EXIT_OK, UsageError, format_table, info, project_command, require_file

__all__ = ["add_parser", "run", "parse_time_pair"]

HELP = "place, list, move or delete sync anchors between two recordings of a project (one undoable step)"
EPILOG = """\
A sync anchor says that a moment of one recording is the same music as a moment of another: every later
`carry` (and the app's comparison) of the two recordings passes its path through it, and the project's
sync metric learns from it (Model > Learn the sync metric, or `train PROJECT --task sync`). Give the
anchors as REFERENCE_S:TARGET_S pairs (--times), or as a CSV with the columns
reference_time_s,target_time_s (--csv; the format of the `sync --out` time map and of `sync --anchors`).
Times are seconds of --from (the reference) and of --to (the target).

--list prints the pair's anchors (id, reference time, target time). --delete takes anchors away, each
named by its id (or the id's first 4 or more characters) or by its two times REFERENCE_S:TARGET_S (the
one anchor within --tolerance seconds of both); --move ID --times R:T puts one anchor at new times.

Every change is stored at once as ONE step of the project's history (one undo, or `marginalia-cli
restore`, takes it back; the line printed says how), or not at all: an anchor past the end of a
recording, two anchors that cross (one earlier in the reference and later in the target: the music
cannot go both ways), or one that crosses an anchor the project already has between the two recordings,
refuses the whole command in one line naming the anchor (its --times value, or its CSV line). The
project must not be open in the app (except for --list).

ITEM is an item's id or its name, as listed by `marginalia-cli project list PROJECT`.

examples:
  marginalia-cli anchor study.marginalia --from take1 --to take2 --times 12.5:13.1 40.2:42.0
  marginalia-cli anchor study.marginalia --from take1 --to take2 --csv fixes.csv
  marginalia-cli anchor study.marginalia --from take1 --to take2 --list
  marginalia-cli anchor study.marginalia --from take1 --to take2 --delete 12.5:13.1
  marginalia-cli anchor study.marginalia --from take1 --to take2 --move 3f2a...c9 --times 12.4:13.0
"""

#: default of --tolerance: how far (s) --delete R:T may be from an anchor's two times
TOLERANCE_S = 0.05


def add_parser(sub, parents) -> None:
    p = project_command(sub, "anchor", HELP, EPILOG, parents)
    p.add_argument("--from", dest="reference", metavar="ITEM", required=True, help="the reference recording")
    p.add_argument("--to", dest="target", metavar="ITEM", required=True, help="the target recording")
    given = p.add_mutually_exclusive_group(required=True)
    given.add_argument("--times", metavar="R:T", nargs="+",
                       help="anchors as REFERENCE_S:TARGET_S (seconds of --from and of --to), e.g. 12.5:13.1; "
                            "with --move, the anchor's new times")
    given.add_argument("--csv", metavar="CSV", help="anchors as a CSV with the columns reference_time_s,target_time_s")
    given.add_argument("--list", action="store_true", help="print the pair's anchors: id, reference and target time")
    given.add_argument("--delete", metavar="ANCHOR", nargs="+",
                       help="delete anchors, each named by its id (--list; its first 4 or more characters do) or by its "
                            "times REFERENCE_S:TARGET_S")
    p.add_argument("--move", metavar="ID",
                   help="move the anchor with this id (--list; its first 4 or more characters do) to the one --times "
                        "given")
    p.add_argument("--tolerance", metavar="S", type=float, default=TOLERANCE_S,
                   help=f"how far (s) a --delete R:T may be from an anchor's times (default {TOLERANCE_S:g})")
    p.set_defaults(run=run)


def parse_time_pair(text: str, option: str = "--times") -> tuple:
    """``"12.5:13.1"`` as ``(12.5, 13.1)``; a :class:`UsageError` naming the value (and ``option``) otherwise."""
    import math
    parts = text.split(":")
    try:
        pair = tuple(float(x) for x in parts) if len(parts) == 2 else ()
    except ValueError:
        pair = ()
    if len(pair) != 2 or not all(math.isfinite(x) and x >= 0 for x in pair):
        raise UsageError(f"{option} {text!r}: expected REFERENCE_S:TARGET_S, two times in seconds >= 0 joined by "
                         "a colon, e.g. 12.5:13.1")
    return pair


def _command(args, reference, target, tail: str) -> str:
    """A command line of ``anchor`` on the same pair, for the undo hint."""
    return (f"marginalia-cli anchor {shlex.quote(str(args.project))} --from {shlex.quote(reference.name)} "
            f"--to {shlex.quote(target.name)} {tail}")


def _undo(args, steps, inverse: str) -> str:
    """``"; to take ... back: COMMAND"``: restore the last step before the change, else its ``inverse`` command."""
    if steps:
        return f"marginalia-cli restore {shlex.quote(str(args.project))} --to {steps[-1].id}"
    return inverse


def _times(a) -> str:
    return f"{a.reference_s:g}:{a.target_s:g}"


def _check_options(args) -> None:
    if args.move is not None and (args.times is None or len(args.times) != 1):
        raise UsageError(f"--move {args.move}: give the anchor's new times as ONE --times REFERENCE_S:TARGET_S")
    if not (0 <= args.tolerance < float("inf")):
        raise UsageError(f"--tolerance {args.tolerance:g}: expected a number of seconds >= 0")


def run(args) -> int:
    from ..engine import Engine
    from .carry import find_recording
    require_file("PROJECT", args.project, "project file", stdin=False)
    _check_options(args)
    why = "sync anchors join two audio recordings"
    with Engine.open(args.project, read_only=bool(args.list)) as eng:
        items = eng.items()
        reference = find_recording(items, args.reference, args.project, why)
        target = find_recording(items, args.target, args.project, why)
        if reference.id == target.id:
            raise UsageError(f"--to: {args.target!r} is the --from recording itself; a sync anchor joins two "
                             "different recordings")
        if args.list:
            return _list(eng, reference, target)
        if args.delete is not None:
            return _delete(args, eng, reference, target)
        if args.move is not None:
            return _move(args, eng, reference, target)
        return _add(args, eng, reference, target)


def _list(eng, reference, target) -> int:
    anchors = eng.sync_anchors(reference.id, target.id)
    if not anchors:
        print(f"(no sync anchors between {reference.name} and {target.name})")
        return EXIT_OK
    rows = [(a.id, f"{a.reference_s:.3f}", f"{a.target_s:.3f}") for a in anchors]
    print(format_table(("id", f"{reference.name} (s)", f"{target.name} (s)"), rows))
    return EXIT_OK


def _add(args, eng, reference, target) -> int:
    from .sync import read_time_pairs
    if args.csv is not None:
        csv_path = require_file("--csv", args.csv, "CSV file", stdin=False)
        times, lines = read_time_pairs(csv_path, with_lines=True)
        if not len(times):
            raise UsageError(f"--csv {args.csv}: the table has a header but no anchors")
        sources = [f"{csv_path}, line {line}" for line in lines]
    else:
        times = [parse_time_pair(text) for text in args.times]
        sources = [f"--times {text}" for text in args.times]
    steps = eng.history()
    stored = eng.add_sync_anchors(reference.id, target.id, times, sources=sources)
    total = len(eng.sync_anchors(reference.id, target.id))
    n = len(stored)
    undo = _undo(args, steps, _command(args, reference, target, "--delete " + " ".join(a.id for a in stored)))
    info(args, f"anchor: {n} sync anchor{'s' if n != 1 else ''} stored between {reference.name} and {target.name} "
               f"as one step ({total} in all); to take {'them' if n != 1 else 'it'} back: {undo}")
    return EXIT_OK


#: the fewest leading characters of an id that name an anchor (as ``git`` takes a commit's)
MIN_ID_PREFIX = 4


def _by_id(anchors, which: str, option: str, reference, target):
    """The anchor of the pair whose id is ``which`` or starts with it (at least :data:`MIN_ID_PREFIX` characters,
    naming one anchor only), else a one-line :class:`UsageError` that says how to name it."""
    found = [a for a in anchors if a.id == which]
    if not found and len(which) >= MIN_ID_PREFIX:
        found = [a for a in anchors if a.id.startswith(which)]
    if not found:
        raise UsageError(f"{option} {which}: no sync anchor between {reference.name} and {target.name} has this "
                         f"id{' (or an id starting with it)' if len(which) >= MIN_ID_PREFIX else ''}; list them "
                         "with --list")
    if len(found) > 1:
        raise UsageError(f"{option} {which}: {len(found)} sync anchors have an id starting with it ("
                         + ", ".join(a.id for a in found) + "); give more of the id")
    return found[0]


def _find(anchors, which: str, tolerance: float, reference, target):
    """The anchor of the pair named by ``which``: its id (or the id's start), or its times R:T within
    ``tolerance``."""
    if ":" not in which:
        return _by_id(anchors, which, "--delete", reference, target)
    r, t = parse_time_pair(which, "--delete")
    near = [a for a in anchors if abs(a.reference_s - r) <= tolerance and abs(a.target_s - t) <= tolerance]
    if not near:
        raise UsageError(f"--delete {which}: no sync anchor between {reference.name} and {target.name} lies within "
                         f"{tolerance:g} s of {r:g} s and {t:g} s; list them with --list, or widen --tolerance")
    if len(near) > 1:
        raise UsageError(f"--delete {which}: {len(near)} sync anchors lie within {tolerance:g} s of it ("
                         + ", ".join(_times(a) for a in near) + "); name one by its id (--list) or narrow --tolerance")
    return near[0]


def _delete(args, eng, reference, target) -> int:
    anchors = eng.sync_anchors(reference.id, target.id)
    chosen = {}
    for which in args.delete:
        a = _find(anchors, which, float(args.tolerance), reference, target)
        chosen[a.id] = a
    steps = eng.history()
    n = eng.delete_sync_anchors(list(chosen))
    left = len(eng.sync_anchors(reference.id, target.id))
    undo = _undo(args, steps, _command(args, reference, target,
                                       "--times " + " ".join(_times(a) for a in chosen.values())))
    info(args, f"anchor: {n} sync anchor{'s' if n != 1 else ''} deleted between {reference.name} and {target.name} "
               f"as one step ({left} left); to take {'them' if n != 1 else 'it'} back: {undo}")
    return EXIT_OK


def _move(args, eng, reference, target) -> int:
    from ..exceptions import InfeasibleLabelsError, ParameterError
    old = _by_id(eng.sync_anchors(reference.id, target.id), args.move, "--move", reference, target)
    r, t = parse_time_pair(args.times[0])
    steps = eng.history()
    where = f"--move {args.move} --times {args.times[0]}"
    try:
        moved = eng.move_sync_anchor(old.id, reference.id, r, t)
    except InfeasibleLabelsError as exc:
        raise InfeasibleLabelsError(f"{where}: {_without_prefix(exc)}", exc.label_ids) from None
    except ParameterError as exc:
        raise ParameterError(f"{where}: {_without_prefix(exc)}") from None
    undo = _undo(args, steps, _command(args, reference, target, f"--move {old.id} --times {_times(old)}"))
    info(args, f"anchor: sync anchor moved from {old.reference_s:g} s \u2194 {old.target_s:g} s to "
               f"{moved.reference_s:g} s \u2194 {moved.target_s:g} s between {reference.name} and {target.name} "
               f"as one step; to take it back: {undo}")
    return EXIT_OK


def _without_prefix(exc) -> str:
    text = " ".join(str(exc).split())
    return text[len("sync anchor: "):] if text.startswith("sync anchor: ") else text
