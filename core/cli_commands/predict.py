"""``marginalia-cli predict MODEL INPUTS... --out DIR``: segment or align files and folders."""

from __future__ import annotations

import argparse

from ..batch import BatchTask, run_batch
from ._common import (
    EXIT_FAILED,
    EXIT_OK,
    UsageError,
    WrongTaskError,
    add_columns,
    add_jobs,
    check_output,
    columns_of,
    discover_inputs,
    info,
    jobs_of,
    make_progress,
    report_failures,
)

__all__ = ["add_parser", "run", "predict_inputs", "refuse_sync_model"]

HELP = "segment or align files and folders with a trained model"
EPILOG = """\
outputs:
  aCGH profiles      DIR/breaks.csv    profile.id,chromosome,position (midway between the probes around a change)
                     DIR/segments.csv  profile.id,chromosome,first.position,last.position,probes,mean
                                       (positions of the segment's first and last probe, as in the input)
                     DIR/segments.seg  DNAcopy/IGV segments: ID chrom loc.start loc.end num.mark seg.mean
                                       (tab-separated; IGV, cBioPortal and GISTIC load it)
                     DIR/segments.bedGraph  segment means for genome browsers, one track per profile
  audio              DIR/<name>.txt    Audacity labels of the predicted boundaries (segmentation model)
  audio + score      DIR/<name>_aligned.mid and DIR/<name>_alignment.csv (alignment model; the score is the
                     .mid file of the same name next to the audio)

A run that stops half-way resumes where it stopped: items already predicted by the same model file
and Marginalia version are skipped (use --no-resume to redo them). Items that fail are listed at the end (exit code 1).

examples:
  marginalia-cli predict cgh.model --profiles profiles.csv.gz --out predictions/
  marginalia-cli predict cgh.model data/ --out predictions/
  marginalia-cli predict piano.model recordings/ --out aligned/
"""


def add_model_inputs(p: argparse.ArgumentParser) -> None:
    """The arguments ``predict`` and ``batch predict`` share."""
    p.add_argument("model", metavar="MODEL", help="a model file written by `marginalia-cli train`")
    p.add_argument("inputs", metavar="INPUTS", nargs="*",
                   help="files or folders: aCGH profile tables (.csv, .csv.gz), audio files, audio + MIDI score "
                        "pairs of the same name")
    p.add_argument("--profiles", metavar="P.csv[.gz]", action="append", default=[],
                   help="an aCGH profiles table (long or DNAcopy wide, any usual column names) or a bedGraph; "
                        "repeatable")
    add_columns(p)
    p.add_argument("--out", metavar="DIR", required=True, help="output folder (created if missing)")
    p.add_argument("--no-resume", dest="resume", action="store_false",
                   help="recompute items that a previous run already finished")


def add_parser(sub, parents) -> None:
    p = sub.add_parser("predict", help=HELP, description=HELP + ".", epilog=EPILOG, parents=parents,
                       formatter_class=argparse.RawDescriptionHelpFormatter)
    add_model_inputs(p)
    add_jobs(p)
    p.set_defaults(run=run)


def run(args) -> int:
    return predict_inputs(args, client=None, label="predict")


def refuse_sync_model(path, task: str) -> None:
    """A sync model holds a cost between two recordings: nothing to predict from one input, so refuse it at once."""
    if task == "sync":
        raise WrongTaskError(f"model {str(path)!r} is a sync model (a learned cost for aligning two recordings of the "
                             "same music); predict needs a segmentation or alignment model; align two recordings "
                             f"with `marginalia-cli sync --reference A.wav --target B.wav --model {path}`")


def _load_model(path):
    from ..models.files import load_model
    return load_model(path)


def predict_inputs(args, *, client, label: str) -> int:
    """Build the item list, run it (in process or on ``client``), merge the tables, report."""
    from ._work import merge_profile_outputs, predict_audio, predict_profile, profile_tasks
    if not args.inputs and not args.profiles:
        raise UsageError("nothing to predict: give INPUTS (files or folders) or --profiles P.csv")
    columns = columns_of(args)
    model = _load_model(args.model)
    refuse_sync_model(args.model, model.task)
    found = discover_inputs(args.inputs, profiles=args.profiles)
    if found.profiles and model.task != "segmentation":
        raise WrongTaskError(f"model {args.model!r} is a {model.task} model; aCGH profiles need a segmentation model")
    from ..models.files import FEATURE_RECIPES
    made_for = FEATURE_RECIPES[model.features][0]
    if found.profiles and made_for != "cgh":
        raise UsageError(f"model {args.model!r} was trained on {made_for} data ({model.features}); aCGH profiles "
                         "need a model trained on aCGH profiles")
    if found.audio and made_for != "audio":
        named = found.drop_audio_found_in_folders(f"audio, and model {args.model!r} was trained on {made_for} data")
        if named:
            raise UsageError(f"{str(named[0])!r} is audio but model {args.model!r} was trained on {made_for} data "
                             f"({model.features}); audio needs a model trained on audio")
    if found.audio and model.task == "alignment" and not any(score for _, score in found.audio):
        raise UsageError(f"model {args.model!r} is an alignment model but no audio has its MIDI score next to it "
                         "(same file name, .mid)")
    if not found.profiles and not found.audio:
        raise UsageError("no aCGH profile table or audio file among the inputs"
                         + (f" (ignored: {', '.join(str(p) for p, _ in found.ignored[:3])}"
                            f"{' ...' if len(found.ignored) > 3 else ''})" if found.ignored else ""))
    out = check_output("--out", args.out, "folder")
    failed = []
    profile_tasks_, profile_keys = [], []
    for path in found.profiles:
        try:
            ts = profile_tasks(model.path, model.sha256, path, columns=columns)
        except Exception as exc:  # noqa: BLE001 - an unreadable file is listed, the others go on
            failed.append((str(path), _one_line(exc)))
            continue
        profile_tasks_.extend(ts)
        profile_keys.extend(t.key for t in ts)
    audio_tasks = [BatchTask(str(audio), (str(model.path), model.sha256, str(audio.resolve()),
                                          None if score is None else str(score.resolve())),
                             cost=float(audio.stat().st_size),
                             inputs=(str(audio.resolve()),) + (() if score is None else (str(score.resolve()),)))
                   for audio, score in found.audio]
    for path, reason in found.ignored:
        info(args, f"{label}: ignoring {path} ({reason})")
    results = {}
    n_done = n_skipped = 0
    for func, group in ((predict_profile, profile_tasks_), (predict_audio, audio_tasks)):
        if not group:
            continue
        progress = make_progress(args, len(group), label)
        rep = run_batch(func, group, out_dir=out, fingerprint=model.fingerprint, client=client, progress=progress,
                        threads=jobs_of(args) if client is None and func is predict_profile else 1,
                        resume=args.resume, debug=args.debug)
        results.update(rep.results)
        failed.extend(rep.failed)
        n_done += len(rep.done)
        n_skipped += len(rep.skipped)
    written = []
    if profile_keys:
        written = merge_profile_outputs(out, [k for k in profile_keys if k in results])
    skipped = f" ({n_skipped} already done, skipped)" if n_skipped else ""
    info(args, f"{label}: {n_done + n_skipped} items predicted{skipped}, {len(failed)} failed"
               + (f"; wrote {', '.join(str(w) for w in written)}" if written else f"; outputs in {out}"))
    report_failures(failed)
    return EXIT_FAILED if failed else EXIT_OK


def _one_line(exc) -> str:
    return " ".join(str(exc).split()) or type(exc).__name__
