"""``marginalia-cli evaluate``: labelled-region error of a model, or onset error of an alignment."""

from __future__ import annotations

import argparse
import csv
import io
import json
import math
import sys
import tempfile
import warnings

from ..batch import run_batch
from ..sanitize import formula_safe
from ._common import (
    EXIT_FAILED,
    EXIT_OK,
    STDIO,
    UsageError,
    add_columns,
    add_jobs,
    check_output,
    columns_of,
    format_table,
    info,
    jobs_of,
    make_progress,
    report_failures,
    require_file,
    write_text_output,
)

__all__ = ["add_parser", "run", "evaluate_profiles"]

HELP = "label error of a model on annotated profiles, or onset error of an alignment against ground truth"
EPILOG = """\
forms:
  evaluate MODEL --profiles P.csv[.gz] --annotations A.csv [--out TABLE.csv] [--summary]
      predicts every annotated sequence and counts the labelled regions it gets wrong:
      a 0breakpoints region with >= 1 predicted change is a false positive (FP); a 1breakpoint
      region with no change is a false negative (FN), with >= 2 changes a false positive.
  evaluate --alignment OUT.csv --truth GT.csv [--out SUMMARY.csv]
      onset error of an alignment (event,score_time_s,audio_time_s,pitches, as written by `align`)
      against ground truth (columns score time, performed onset and pitch, e.g. the Vienna 4x22
      ground_truth CSVs or the same format as OUT.csv): median, mean, % of events within 50/100/250 ms.

examples:
  marginalia-cli evaluate cgh.model --profiles profiles.csv.gz --annotations annotations.csv
  marginalia-cli evaluate --alignment piece_alignment.csv --truth piece_gt.csv
"""


def add_parser(sub, parents) -> None:
    p = sub.add_parser("evaluate", help=HELP, description=HELP + ".", epilog=EPILOG, parents=parents,
                       formatter_class=argparse.RawDescriptionHelpFormatter)
    add_evaluate_arguments(p)
    add_jobs(p, "annotated sequences are segmented")
    p.set_defaults(run=run)


def add_evaluate_arguments(p) -> None:
    p.add_argument("model", metavar="MODEL", nargs="?", help="a segmentation model file")
    p.add_argument("--profiles", metavar="P.csv[.gz]", help="aCGH profiles table")
    p.add_argument("--annotations", metavar="A.csv", help="region annotations of the profiles")
    add_columns(p)
    p.add_argument("--alignment", metavar="OUT.csv", help="an alignment written by `align` or `predict`")
    p.add_argument("--truth", metavar="GT.csv", help="ground-truth onsets for --alignment")
    p.add_argument("--out", metavar="TABLE.csv", help="also write the table as CSV")
    p.add_argument("--summary", action="store_true", help="print only the overall line, not every sequence")
    p.add_argument("--json", action="store_true",
                   help="print the results as one JSON object on stdout instead of the table (alignment metrics "
                        "also under mir_eval's names: pc, mae, aae, pcs, perceptual)")


def run(args) -> int:
    return dispatch(args, client=None)


def dispatch(args, *, client, work_dir=None) -> int:
    if getattr(args, "json", False) and args.out == STDIO:
        raise UsageError("--json and --out -: both would go to standard output; write the CSV to a file")
    alignment_form = args.alignment is not None or args.truth is not None
    profile_form = args.model is not None or args.profiles is not None or args.annotations is not None
    if alignment_form and profile_form:
        raise UsageError("give either MODEL --profiles --annotations, or --alignment --truth, not both")
    if alignment_form:
        if client is not None:
            raise UsageError("batch evaluate works on profiles; evaluate one alignment with `evaluate --alignment`")
        if not args.alignment or not args.truth:
            raise UsageError("--alignment OUT.csv needs --truth GT.csv (and the other way round)")
        return _evaluate_alignment(args)
    if not (args.model and args.profiles and args.annotations):
        raise UsageError("evaluate needs MODEL --profiles P.csv --annotations A.csv, or --alignment OUT.csv "
                         "--truth GT.csv")
    return evaluate_profiles(args, client=client, work_dir=work_dir)


def evaluate_profiles(args, *, client, work_dir=None) -> int:
    from ..metrics import RegionErrors
    from ..models.files import load_model
    from ._work import cached_annotations, evaluate_profile, profile_keys, profile_tasks
    args.profiles = str(require_file("--profiles", args.profiles))
    args.annotations = str(require_file("--annotations", args.annotations))
    if args.out:
        check_output("--out", args.out, "file")
    columns = columns_of(args)
    model = load_model(args.model, task="segmentation")
    labelled = cached_annotations(args.annotations, args.profiles, unknown_sequences="warn", columns=columns)
    keys = [k for k in profile_keys(args.profiles, columns) if f"{k[0]}:{k[1]}" in labelled]
    if not keys:
        raise UsageError("no annotation matches a sequence of the profiles; check that the files belong together")
    tasks = profile_tasks(model.path, model.sha256, args.profiles, keys=keys, annotations_path=args.annotations,
                          columns=columns)
    progress = make_progress(args, len(tasks), "evaluate")
    tmp = None
    if work_dir is None:
        tmp = tempfile.TemporaryDirectory(prefix="marginalia-evaluate-")
        work_dir = tmp.name
    try:
        rep = run_batch(evaluate_profile, tasks, out_dir=work_dir, fingerprint=model.fingerprint + ":" + _digest(args),
                        client=client, progress=progress, resume=tmp is None, debug=args.debug,
                        threads=jobs_of(args) if client is None else 1)
    finally:
        if tmp is not None:
            tmp.cleanup()
    rows, total, changes = [], RegionErrors(), 0
    for task, (pid, chrom) in zip(tasks, keys):
        res = rep.results.get(task.key)
        if res is None:
            continue
        err = RegionErrors(fp=res["fp"], fn=res["fn"], n_labels=res["n_labels"])
        total = total + err
        changes += int(res["n_changes"])
        rows.append([pid, chrom, err.n_labels, err.fp, err.fn, err.errors, res["n_changes"]])
    header = ["profile.id", "chromosome", "labels", "fp", "fn", "errors", "changes"]
    pct = 100.0 * total.rate
    overall = ["overall", f"{len(rows)} seqs", total.n_labels, total.fp, total.fn, total.errors, changes]
    shown = ([] if args.summary else rows) + [overall]
    if args.json:
        doc = {"overall": {"sequences": len(rows), "labels": total.n_labels, "fp": total.fp, "fn": total.fn,
                           "errors": total.errors, "changes": changes, "label_error_percent": pct}}
        if not args.summary:
            doc["sequences"] = [dict(zip(header, r)) for r in rows]
        print(json.dumps(doc, indent=1))
    else:
        human = sys.stderr if args.out == STDIO else sys.stdout
        print(format_table(header, shown), file=human)
        print(f"label error: {total.errors}/{total.n_labels} = {pct:.2f} % (FP {total.fp}, FN {total.fn}) "
              f"over {len(rows)} sequences", file=human)
    if args.out:
        buf = io.StringIO()
        w = csv.writer(buf, lineterminator="\n")
        w.writerow(header)
        w.writerows([[formula_safe(pid), formula_safe(chrom), *rest] for pid, chrom, *rest in rows] + [overall])
        write_text_output(args.out, buf.getvalue())
        info(args, f"evaluate: wrote {args.out}")
    report_failures(rep.failed, what="sequences")
    return EXIT_FAILED if rep.failed else EXIT_OK


def _digest(args) -> str:
    from ..batch import file_sha256
    return file_sha256(args.annotations)[:16]


def _evaluate_alignment(args) -> int:
    from ._metrics import ONSET_THRESHOLDS_S, onset_error_summary, read_alignment_table, read_truth_table
    pred = read_alignment_table(require_file("--alignment", args.alignment))
    truth = read_truth_table(require_file("--truth", args.truth))
    s = onset_error_summary(pred, truth)
    if s["n_matched"] < 0.5 * s["n_truth"]:
        warnings.warn(f"only {s['n_matched']} of the {s['n_truth']} ground-truth events match an event of "
                      f"{args.alignment} by pitch: are the alignment and {args.truth} of the same piece?",
                      UserWarning, stacklevel=1)
    keys = [f"within_{int(round(t * 1000))}ms" for t in ONSET_THRESHOLDS_S]
    header = ["events (truth)", "events (pred)", "matched", "median ms", "mean ms"] + [f"% <= {k[7:]}" for k in keys]
    row = [s["n_truth"], s["n_predicted"], s["n_matched"], 1000 * s["median_s"], 1000 * s["mean_s"]]
    row += [s[k] for k in keys]
    if args.json:
        print(json.dumps({k: (None if isinstance(v, float) and not math.isfinite(v) else v) for k, v in s.items()},
                         indent=1))
    else:
        header += ["pcs", "perceptual"]
        row += [s["pcs"], s["perceptual"]]
        print(format_table(header, [row]), file=sys.stderr if args.out == STDIO else sys.stdout)
    if args.out:
        buf = io.StringIO()
        w = csv.writer(buf, lineterminator="\n")
        w.writerow(list(s))
        w.writerow([s[k] for k in s])
        write_text_output(args.out, buf.getvalue())
        info(args, f"evaluate: wrote {args.out}")
    return EXIT_OK
