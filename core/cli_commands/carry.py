"""``marginalia-cli carry PROJECT --from ITEM --to ITEM...``: one recording's labels onto the others."""

from __future__ import annotations

import sys

from ._common import EXIT_OK, UsageError, info, make_progress, project_command, require_file

__all__ = ["add_parser", "run", "find_recording"]

HELP = "carry the labels of one recording onto other recordings of the same music (one undoable step)"
EPILOG = """\
Each target is aligned to the source recording (`marginalia-cli sync`; --model: a sync aligner trained
by `train --task sync`; without it, the project's sync metric learned in the app (Model > Learn the sync
metric) if it has one, else the Euclidean cost), through the project's sync anchors between the two
recordings (placed in the app's View > Compare with another recording, or by `marginalia-cli anchor`),
and every label of the source is mapped through that path: regions and boundaries land on the
corresponding frames of the target; score anchors and event spans on the corresponding times, when the
target has a score with those events. Labels the target already has are not added twice. All carried
labels are stored as ONE step of the project's history: one undo (or `marginalia-cli restore`) takes them
all back. Nothing is stored when a carried label contradicts a label of a target (the message names
both); the project must not be open in the app. With --suggest they are stored as suggestions instead:
shown in the app, learned from and exported only once accepted (a suggestion that contradicts a
target's labels is left out and counted).

ITEM is an item's id or its name, as listed by `marginalia-cli project list PROJECT`.

examples:
  marginalia-cli carry study.marginalia --from take1 --to take2 take3 take4
  marginalia-cli carry study.marginalia --from take1 --to take2 --model piano_sync.model
"""


def add_parser(sub, parents) -> None:
    p = project_command(sub, "carry", HELP, EPILOG, parents)
    p.add_argument("--from", dest="source", metavar="ITEM", required=True, help="the labelled recording")
    p.add_argument("--to", dest="targets", metavar="ITEM", nargs="+", required=True,
                   help="the recordings that receive the labels")
    p.add_argument("--model", metavar="MODEL", help="a sync aligner trained by `train --task sync` (optional)")
    p.add_argument("--suggest", action="store_true",
                   help="store suggestions to review in the app (accept, move or reject) instead of labels; a "
                        "suggestion that contradicts a target's labels is left out")
    p.set_defaults(run=run)


def find_recording(items, name: str, project: str, why: str = "carry maps labels between audio recordings"):
    """The audio item of a project named by its id or its name; one line naming the fix otherwise."""
    hits = [it for it in items if it.id == name] or [it for it in items if it.name == name]
    if not hits:
        raise UsageError(f"item {name!r}: no item of {project!r} has this id or name; list them with "
                         f"`marginalia-cli project list {project}`")
    if len(hits) > 1:
        raise UsageError(f"item {name!r}: {len(hits)} items have this name; give the id instead "
                         f"({', '.join(it.id for it in hits)})")
    if hits[0].kind != "audio":
        raise UsageError(f"item {name!r} is {hits[0].kind} data; {why}")
    return hits[0]


def run(args) -> int:
    from ..engine import Engine
    from .sync import load_sync_aligner
    require_file("PROJECT", args.project, "project file", stdin=False)
    aligner = load_sync_aligner(args.model) if args.model else None    # None: the project's sync model
    with Engine.open(args.project) as eng:
        items = eng.items()
        source = find_recording(items, args.source, args.project)
        targets = [find_recording(items, t, args.project) for t in args.targets]
        if any(t.id == source.id for t in targets):
            raise UsageError(f"--to: {args.source!r} is the source itself; name other recordings")
        if len({t.id for t in targets}) != len(targets):
            raise UsageError("--to: an item is named twice")
        if not eng.labels(source.id):
            raise UsageError(f"item {args.source!r} has no labels to carry")
        steps = eng.history()
        n_anchors = sum(len(eng.sync_anchors(source.id, t.id)) for t in targets)
        cost = (f"the sync model {args.model}" if args.model else
                f"the project's learned sync metric ({eng.sync_model_id})" if eng.sync_model_id else
                "the Euclidean cost")
        info(args, f"carry: aligning with {cost} through {n_anchors} sync anchor{'s' if n_anchors != 1 else ''}")
        progress = make_progress(args, len(targets) + 1, "carry", unit="recordings")
        with progress:
            report = eng.carry_labels(source.id, [t.id for t in targets], aligner=aligner,
                                      progress=lambda done, total, message: progress.advance(message=message),
                                      as_suggestions=args.suggest)
    for why, n in report.skipped.items():
        print(f"carry: warning: {n} label(s) not carried: {why}", file=sys.stderr)
    if not report.stored:
        already = f": the {report.already} carried label(s) are already there" if report.already else ""
        info(args, f"carry: nothing added to the {len(targets)} recording(s){already}")
        return EXIT_OK
    undo = f"; to take them all back: marginalia-cli restore {args.project} --to {steps[-1].id}" if steps else ""
    what = "suggested label(s) to review in the app" if args.suggest else "label(s)"
    info(args, f"carry: {len(report.stored)} {what} added to {len(targets)} recording(s) as one step{undo}")
    return EXIT_OK
