"""``marginalia-cli export PROJECT --format KIND --out PATH``: labels, predictions or a dataset bundle."""

from __future__ import annotations

import argparse
from pathlib import Path

from ._common import EXIT_FAILED, EXIT_OK, STDIO, UsageError, info, require_file, write_output

__all__ = ["add_parser", "run", "FORMATS"]

#: the engine's export kinds (kept here so that --help works without opening anything)
FORMATS = ("annotations-csv", "segments-csv", "seg", "breaks-csv", "bedgraph", "audacity", "sonic-visualiser",
           "textgrid", "jams", "aligned-midi", "alignment-csv", "bundle", "sync-model")
#: the formats that write one file per item into a folder
FOLDER_FORMATS = ("audacity", "sonic-visualiser", "textgrid", "jams", "aligned-midi", "alignment-csv", "bundle")

HELP = "export a project's labels, predictions or a dataset bundle"
EPILOG = """\
formats:
  annotations-csv  region labels of aCGH items (profile.id,chromosome,min,max,annotation)      --out FILE
  segments-csv     predicted segments (profile.id,chromosome,first.position,last.position,probes,mean)
                   positions of each segment's first and last probe                              --out FILE
  seg              predicted segments as DNAcopy/IGV .seg (ID chrom loc.start loc.end num.mark seg.mean),
                   tab-separated, for IGV, cBioPortal and GISTIC                                 --out FILE
  breaks-csv       predicted changes (profile.id,chromosome,position)                           --out FILE
  bedgraph         predicted segment means as a bedGraph track                                  --out FILE
  audacity         predicted boundaries of audio items as Audacity label tracks                  --out DIR
  sonic-visualiser predicted boundaries (or aligned event onsets) as Sonic Visualiser CSV layers --out DIR
  textgrid         predicted segments (or aligned events) as Praat TextGrid interval tiers      --out DIR
  jams             audio segmentations (segment_open) and alignments (note_midi) as JAMS         --out DIR
  aligned-midi     each score with note times following its audio                               --out DIR
  alignment-csv    event,score_time_s,audio_time_s,pitches per audio item                        --out DIR
  bundle           manifest.json, per-item features (.npz), partial labels, sync anchors, models --out DIR
  sync-model       the project's learned sync metric as a model file (sync / carry --model)      --out FILE

examples:
  marginalia-cli export project.marginalia --format annotations-csv --out annotations.csv
  marginalia-cli export project.marginalia --format bundle --out dataset/

An export never overwrites or deletes what is already on disk: --out must be a new name, an empty
file or an empty folder. With --force it may also be a previous export of Marginalia (a folder
recognised by its manifest and holding only the files that export wrote, or a file of the same
format), which is then replaced as a whole.
"""


def add_parser(sub, parents) -> None:
    p = sub.add_parser("export", help=HELP, description=HELP + ".", epilog=EPILOG, parents=parents,
                       formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("project", metavar="PROJECT", help="a Marginalia project file")
    p.add_argument("--format", dest="kind", metavar="KIND", choices=FORMATS, required=True,
                   help="one of: " + ", ".join(FORMATS))
    p.add_argument("--out", metavar="PATH", required=True,
                   help="file or folder to write (see formats); - writes a single file to standard output")
    p.add_argument("--force", action="store_true",
                   help="replace a previous Marginalia export at --out (never anything else)")
    p.set_defaults(run=run)


def run(args) -> int:
    from ..engine import Engine
    from ..export_target import check_target
    from ..exports import layout_of
    require_file("PROJECT", args.project, "project file", stdin=False)
    out = Path(args.out)
    if args.out == STDIO:
        if args.kind in FOLDER_FORMATS:
            raise UsageError(f"--out -: --format {args.kind} writes a folder of files, which standard output cannot "
                             "hold; give a folder name")
        if args.kind == "sync-model":
            raise UsageError("--out -: a model file is a binary archive; give a file name (e.g. --out sync.model)")
        with Engine.open(args.project, read_only=True) as eng:
            written = []
            write_output(STDIO, lambda p: written.extend(eng.export(args.kind, p)))
        return EXIT_OK if written else EXIT_FAILED
    # before opening anything: --out must be writable and hold nothing the export did not create
    check_target(out, layout=layout_of(args.kind), kind=args.kind, force=args.force)
    with Engine.open(args.project, read_only=True) as eng:   # runs while the app has the project open
        written = eng.export(args.kind, out, force=args.force)
    if not written:
        info(args, f"export: nothing to write: the project has no items that --format {args.kind} applies to")
        return EXIT_FAILED
    info(args, f"export: wrote {len(written)} file(s) to {out}")
    return EXIT_OK
