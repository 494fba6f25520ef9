"""``marginalia-cli query PROJECT``: a ranked table of the parts to label next."""

from __future__ import annotations

import argparse
import csv
import io
import sys

from ..sanitize import formula_safe
from ._common import EXIT_OK, UsageError, check_output, info, require_file, write_text_output

__all__ = ["add_parser", "run", "STRATEGIES"]

STRATEGIES = ("best-vs-2nd", "best-vs-worst", "scoring", "random")
COLUMNS = ("rank", "item_id", "item_name", "start", "stop", "start_position", "stop_position", "units",
           "uncertainty", "strategy")

HELP = "rank the parts of a project where a label would help most"
EPILOG = """\
output (CSV, to --out or to stdout):
  rank,item_id,item_name,start,stop,start_position,stop_position,units,uncertainty,strategy
  start/stop index the item's samples (aCGH probes, audio frames) or score events (stop excluded);
  start_position/stop_position are the first and last sample's position (bp, s) for sample parts; rank 0
  is the best part to label next.

strategies (Lou et al. 2014, Table 1.2): best-vs-2nd (smallest margin between the best and second-best
structure; default), best-vs-worst, scoring, random.

examples:
  marginalia-cli query project.marginalia --strategy best-vs-2nd -n 50 --out next.csv
  marginalia-cli query project.marginalia -n 10
"""


def add_parser(sub, parents) -> None:
    p = sub.add_parser("query", help=HELP, description=HELP + ".", epilog=EPILOG, parents=parents,
                       formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("project", metavar="PROJECT", help="a Marginalia project file")
    p.add_argument("--strategy", choices=STRATEGIES, default="best-vs-2nd", help="uncertainty measure")
    p.add_argument("-n", type=int, default=50, help="how many parts (default 50)")
    p.add_argument("--out", metavar="Q.csv", help="write the table here instead of stdout")
    p.add_argument("--retrain", action="store_true", help="retrain the project's models from all labels first")
    p.set_defaults(run=run)


def fmt_number(x) -> str:
    """Integers without ``.0``; other numbers in the shortest form that reads back exactly."""
    x = float(x)
    return str(int(x)) if x.is_integer() and abs(x) < 1e15 else repr(x)


def run(args) -> int:
    from ..engine import Engine
    if args.n < 1:
        raise UsageError(f"-n: expected a positive number of parts, got {args.n}")
    require_file("PROJECT", args.project, "project file", stdin=False)
    if args.out:
        check_output("--out", args.out, "file")
    # read-only unless it retrains, so it runs while the app has the project open
    with Engine.open(args.project, read_only=not args.retrain) as eng:
        if args.retrain:
            info(args, "query: retraining from all labels")
            eng.retrain()
        items = {item.id: item for item in eng.items()}
        if not items:
            raise UsageError(f"PROJECT {args.project!r} has no items: import data into it first (in the app, "
                             "File \u25b8 Import)")
        queries = eng.next_queries(args.n, strategy=args.strategy)
        buf = io.StringIO()
        w = csv.writer(buf, lineterminator="\n")
        w.writerow(COLUMNS)
        for q in queries:
            item = items.get(q.item_id)
            first = last = units = ""
            if item is not None and item.task == "segmentation":
                seq = eng.sequence(q.item_id)
                if 0 <= q.start < q.stop <= seq.n_samples:
                    first, last = fmt_number(seq.positions[q.start]), fmt_number(seq.positions[q.stop - 1])
                    units = seq.units
            w.writerow([q.rank, formula_safe(q.item_id), formula_safe(item.name if item else ""), q.start, q.stop, first,
                        last, units, repr(float(q.uncertainty)), q.strategy])
    if args.out:
        write_text_output(args.out, buf.getvalue())
        info(args, f"query: wrote {len(queries)} parts to {args.out}")
    else:
        sys.stdout.write(buf.getvalue())
    return EXIT_OK
