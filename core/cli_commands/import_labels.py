"""``marginalia-cli import PROJECT FILES...``: bring existing labels into a project as partial labels."""

from __future__ import annotations

import argparse
import sys
import warnings

from ._common import EXIT_FAILED, EXIT_OK, UsageError, info, require_file

__all__ = ["add_parser", "run"]

KINDS = ("auto", "audacity", "sonic-visualiser", "textgrid", "jams", "annotations-csv", "bundle")

HELP = "import labels (Audacity, Sonic Visualiser, Praat TextGrid, JAMS, aCGH annotations) into a project"
EPILOG = """\
formats (--format, default auto: from the file name):
  audacity          Audacity label track (.txt)                     on the audio item of the same name
  sonic-visualiser  Sonic Visualiser CSV layer (.csv)               on the audio item of the same name
  textgrid          Praat TextGrid, every tier (.TextGrid)          on the audio item of the same name
  jams              JAMS, every annotation (.jams)                  on the audio item of the same name
  annotations-csv   aCGH regions (profile.id,chromosome,min,max,annotation), by profile and chromosome
  bundle            every label and sync anchor of a dataset bundle folder

Audio labels become partial labels: a point is a change (or, on an audio item with a score, the onset of
the score event it names: "event 12" or "12"); a region is one segment with changes at its edges.
What cannot be mapped is listed as a warning and not imported. Labels the project already has are not
added twice. The import is one undo step in the app.

examples:
  marginalia-cli import project.marginalia interview.txt
  marginalia-cli import project.marginalia take1.TextGrid --item take1
  marginalia-cli import project.marginalia annotations.csv --format annotations-csv
"""


def add_parser(sub, parents) -> None:
    p = sub.add_parser("import", help=HELP, description=HELP + ".", epilog=EPILOG, parents=parents,
                       formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("project", metavar="PROJECT", help="a Marginalia project file")
    p.add_argument("files", metavar="FILES", nargs="+", help="label files (or a bundle folder)")
    p.add_argument("--format", dest="kind", metavar="KIND", choices=KINDS, default="auto",
                   help="one of: " + ", ".join(KINDS))
    p.add_argument("--item", metavar="NAME", help="the audio item the files label (default: each file's name)")
    p.set_defaults(run=run)


def run(args) -> int:
    from ..engine import Engine
    from ..label_files import label_kind_of
    require_file("PROJECT", args.project, "project file", stdin=False)
    kinds = []
    for f in args.files:
        if args.kind == "bundle":
            kinds.append("bundle")
            continue
        if args.kind == "auto" and f == "-":
            raise UsageError("FILES -: name the format of standard input with --format")
        if args.kind == "auto":
            try:
                kinds.append(label_kind_of(f))
            except Exception as exc:  # noqa: BLE001 - a ParameterError: the name says nothing; a usage error
                raise UsageError(str(exc)) from None
        else:
            kinds.append(args.kind)
    args.files = [f if kind == "bundle" else str(require_file("FILES", f, "label file", stdin_suffix=""))
                  for f, kind in zip(args.files, kinds)]
    total, failed = 0, []
    with Engine.open(args.project) as eng:
        for f, kind in zip(args.files, kinds):
            try:
                with warnings.catch_warnings():
                    warnings.simplefilter("always")
                    added = eng.import_labels(kind, f, item=args.item) if kind not in ("annotations-csv", "bundle") \
                        else eng.import_labels(kind, f)
            except Exception as exc:  # noqa: BLE001 - one file's problem is reported, the others go on
                failed.append((f, " ".join(str(exc).split())))
                continue
            total += len(added)
            info(args, f"import: {f}: {len(added)} label(s) added")
    for f, msg in failed:
        print(f"import: {f}: not imported: {msg}", file=sys.stderr)
    info(args, f"import: {total} label(s) added from {len(args.files) - len(failed)} file(s)"
               + (f", {len(failed)} file(s) failed" if failed else ""))
    return EXIT_FAILED if failed else EXIT_OK
