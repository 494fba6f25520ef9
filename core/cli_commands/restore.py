"""``marginalia-cli restore PROJECT --to STEP``: the labels of a past step back, as one new step."""

from __future__ import annotations

import argparse

from ._common import EXIT_OK, UsageError, info, require_file

__all__ = ["add_parser", "run"]

HELP = "bring a project's labels back to what they were after a step of its history"
EPILOG = """\
The labels become exactly those the project had right after STEP (see 'marginalia-cli history').
This is ONE new step of the history: nothing is lost, and restoring the step before it takes it back.
Labels of items removed since STEP cannot come back and are left out. The project must not be open
in the app (close it there first).

examples:
  marginalia-cli history project.marginalia
  marginalia-cli restore project.marginalia --to 57
"""


def add_parser(sub, parents) -> None:
    p = sub.add_parser("restore", help=HELP, description=HELP + ".", epilog=EPILOG, parents=parents,
                       formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("project", metavar="PROJECT", help="a Marginalia project file")
    p.add_argument("--to", dest="step", type=int, required=True, metavar="STEP",
                   help="the step id, as listed by 'marginalia-cli history PROJECT'")
    p.set_defaults(run=run)


def run(args) -> int:
    from ..engine import Engine
    require_file("PROJECT", args.project, "project file")
    with Engine.open(args.project) as eng:
        steps = eng.history()
        target = next((s for s in steps if s.id == args.step), None)
        if target is None:
            known = f"steps run from {steps[0].id} to {steps[-1].id}" if steps else "it has no label edits yet"
            raise UsageError(f"--to {args.step}: project {args.project!r} has no step {args.step} ({known}); "
                             f"list them with 'marginalia-cli history {args.project}'")
        previous = steps[-1]
        new = eng.restore(target.id)
        n = len(eng.labels())
    if new is None:
        info(args, f"restore: the labels already are those after step {target.id} ({target.name}); nothing changed")
        return EXIT_OK
    info(args, f"restore: labels after step {target.id} ({target.name}) restored as step {new.id}: {new.effect}; "
               f"the project has {n} label{'s' if n != 1 else ''}. To take it back: "
               f"marginalia-cli restore {args.project} --to {previous.id}")
    return EXIT_OK
