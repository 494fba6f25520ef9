"""``marginalia-cli carry PROJECT --from ITEM --to ITEM...``: one recording's labels onto the others."""

from __future__ import annotations

import argparse
import sys

from ._common import EXIT_OK, UsageError, info, make_progress, require_file

__all__ = ["add_parser", "run"]

HELP = "carry the labels of one recording onto other recordings of the same music (one undoable step)"
EPILOG = """\
Each target is aligned to the source recording (`marginalia-cli sync`; --model: a sync aligner trained
by `train --task sync`), and every label of the source is mapped through that path: regions and
boundaries land on the corresponding frames of the target; score anchors and event spans on the
corresponding times, when the target has a score with those events. Labels the target already has
are not added twice. All carried labels are stored as ONE step of the project's history: one undo
(or `marginalia-cli restore`) takes them all back. Nothing is stored when a carried label contradicts
a label of a target (the message names both); the project must not be open in the app.

ITEM is an item's id or its name, as listed by `marginalia-cli project list PROJECT`.

examples:
  marginalia-cli carry study.marginalia --from take1 --to take2 take3 take4
  marginalia-cli carry study.marginalia --from take1 --to take2 --model piano_sync.model
"""


def add_parser(sub, parents) -> None:
    p = sub.add_parser("carry", help=HELP, description=HELP + ".", epilog=EPILOG, parents=parents,
                       formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("project", metavar="PROJECT", help="a Marginalia project file")
    p.add_argument("--from", dest="source", metavar="ITEM", required=True, help="the labelled recording")
    p.add_argument("--to", dest="targets", metavar="ITEM", nargs="+", required=True,
                   help="the recordings that receive the labels")
    p.add_argument("--model", metavar="MODEL", help="a sync aligner trained by `train --task sync` (optional)")
    p.set_defaults(run=run)


def _find(items, name: str, project: str):
    hits = [it for it in items if it.id == name] or [it for it in items if it.name == name]
    if not hits:
        raise UsageError(f"item {name!r}: no item of {project!r} has this id or name; list them with "
                         f"`marginalia-cli project list {project}`")
    if len(hits) > 1:
        raise UsageError(f"item {name!r}: {len(hits)} items have this name; give the id instead "
                         f"({', '.join(it.id for it in hits)})")
    if hits[0].kind != "audio":
        raise UsageError(f"item {name!r} is {hits[0].kind} data; carry maps labels between audio recordings")
    return hits[0]


def run(args) -> int:
    from ..engine import Engine
    from ..io.audio import load_audio
    from ..sync.carry import carry_labels
    from ..types import label_fact
    from .sync import load_sync_aligner
    require_file("PROJECT", args.project, "project file", stdin=False)
    aligner = load_sync_aligner(args.model)
    with Engine.open(args.project) as eng:
        items = eng.items()
        source = _find(items, args.source, args.project)
        targets = [_find(items, t, args.project) for t in args.targets]
        if any(t.id == source.id for t in targets):
            raise UsageError(f"--to: {args.source!r} is the source itself; name other recordings")
        if len({t.id for t in targets}) != len(targets):
            raise UsageError("--to: an item is named twice")
        labels = eng.labels(source.id)
        if not labels:
            raise UsageError(f"item {args.source!r} has no labels to carry")
        src_features = aligner.compute_features(*load_audio(eng.audio_path(source.id), sr=22050))
        src_positions = eng.sequence(source.id).positions
        known = {label_fact(lab) for lab in eng.labels()}
        new, skipped = [], {}
        progress = make_progress(args, len(targets), "carry", unit="recordings")
        with progress:
            for target in targets:
                tgt_features = aligner.compute_features(*load_audio(eng.audio_path(target.id), sr=22050))
                result = aligner.predict(src_features, tgt_features, runner_up=False)
                score = eng.score(target.id)
                carried = carry_labels(labels, result, src_positions, eng.sequence(target.id).positions, target.id,
                                       target_events=None if score is None else score.n_events)
                for lab in carried.labels:
                    if label_fact(lab) not in known:
                        known.add(label_fact(lab))
                        new.append(lab)
                for _, why in carried.skipped:
                    skipped[why] = skipped.get(why, 0) + 1
                progress.advance(message=target.name)
        name = (f"carry of {len(labels)} label{'s' if len(labels) != 1 else ''} from {source.name} to "
                f"{len(targets)} recording{'s' if len(targets) != 1 else ''}")
        steps = eng.history()
        stored = eng.add_labels(new, name=name)
    for why, n in skipped.items():
        print(f"carry: warning: {n} label(s) not carried: {why}", file=sys.stderr)
    undo = (f"; to take them all back: marginalia-cli restore {args.project} --to {steps[-1].id}"
            if stored and steps else "")
    info(args, f"carry: {len(stored)} label(s) added to {len(targets)} recording(s) as one step{undo}")
    return EXIT_OK
