"""What every subcommand shares: usage errors, progress, input discovery, table printing."""

from __future__ import annotations

import argparse
import os
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional

from ..atomic import folder_writable
from ..checks import is_number
from ..exceptions import MarginaliaError, ParameterError, UsageError, WrongTaskError  # noqa: F401 (re-exported)
from ..progress import NullProgressBar, ProgressBar
from ..text import with_article

__all__ = [
    "UsageError",
    "WrongTaskError",
    "EXIT_OK",
    "EXIT_FAILED",
    "EXIT_USAGE",
    "make_progress",
    "InputSet",
    "discover_inputs",
    "format_table",
    "report_failures",
    "AUDIO_SUFFIXES",
    "PROFILE_SUFFIXES",
    "SCORE_SUFFIXES",
    "file_kind",
    "require_file",
    "check_output",
    "project_command",
]

EXIT_OK = 0
EXIT_FAILED = 1
EXIT_USAGE = 2

AUDIO_SUFFIXES = (".wav", ".flac", ".ogg", ".mp3", ".m4a", ".aiff", ".aif")
PROFILE_SUFFIXES = (".csv", ".csv.gz", ".tsv", ".tsv.gz", ".bedgraph", ".bedgraph.gz", ".bg", ".bg.gz")
SCORE_SUFFIXES = (".mid", ".midi", ".musicxml", ".mxl", ".mei", ".krn")


#: the file name meaning standard input (where a single file is read) or standard output (written)
STDIO = "-"
_stdin_copy: list = []


def stdin_file(flag: str, suffix: str = "") -> Path:
    """Standard input copied to a temporary file (read once per command), for readers that take a path.

    The copy is named ``stdin<suffix>`` so that a table without a profile id names its profile ``stdin``.
    """
    import atexit
    import shutil
    import tempfile
    if _stdin_copy:
        if _stdin_copy[0][0] != flag:
            raise UsageError(f"{flag} -: standard input is already read for {_stdin_copy[0][0]}; only one input "
                             "can come from it")
        return _stdin_copy[0][1]
    folder = tempfile.mkdtemp(prefix="marginalia-stdin-")
    atexit.register(shutil.rmtree, folder, True)
    path = Path(folder) / f"stdin{suffix}"
    with open(path, "wb") as fh:
        shutil.copyfileobj(sys.stdin.buffer, fh)
    _stdin_copy.append((flag, path))
    return path


def write_output(value, write) -> None:
    """Run ``write(path)`` for an output file, or into a temporary file copied to standard output for ``-``."""
    from ..atomic import publish
    if str(value) != STDIO:
        publish(Path(value), write)
        return
    import shutil
    import tempfile
    with tempfile.TemporaryDirectory(prefix="marginalia-stdout-") as folder:
        tmp = Path(folder) / "out"
        write(tmp)
        sys.stdout.flush()
        with open(tmp, "rb") as fh:
            shutil.copyfileobj(fh, sys.stdout.buffer)
        sys.stdout.buffer.flush()


def write_text_output(value, text: str) -> None:
    """Write ``text`` to an output file (atomically), or to standard output for ``-``."""
    if str(value) == STDIO:
        sys.stdout.write(text)
        sys.stdout.flush()
        return
    from ..batch import atomic_write_text
    atomic_write_text(value, text)


def require_file(flag: str, value, what: str = "file", *, stdin: bool = True, stdin_suffix: str = ".csv") -> Path:
    """``value`` as a Path to an existing regular file, else a usage error saying what is wrong.

    ``-`` (when ``stdin``) is standard input, copied to a temporary file named ``stdin<stdin_suffix>``.
    """
    if stdin and str(value) == STDIO:
        return stdin_file(flag, stdin_suffix)
    p = Path(value)
    if p.is_dir():
        raise UsageError(f"{flag} {str(p)!r} is a folder; expected {with_article(what)}")
    if not p.exists():
        raise UsageError(f"{flag} {str(p)!r}: no such {what}")
    if not p.is_file():
        raise UsageError(f"{flag} {str(p)!r} is not a regular file (a pipe or a device?); expected {with_article(what)}")
    return p


#: folders made by :func:`check_output` in this run (removed again, if still empty, when the command fails)
CREATED_FOLDERS: list = []


def remove_created_folders() -> None:
    """Remove the folders :func:`check_output` made in this run that are still empty (a failed command)."""
    for folder in sorted(CREATED_FOLDERS, key=lambda f: -len(f.parts)):
        try:
            folder.rmdir()
        except OSError:
            pass
    CREATED_FOLDERS.clear()


def check_output(flag: str, value, kind: str, *, stdout: bool = True) -> Path:
    """Check before any work that ``value`` can be written as a ``kind`` (``"file"`` or ``"folder"``).

    Missing parent folders are created (and removed again by the command line if the command fails
    before writing into them). Writability is tested by creating a scratch file, which
    also catches read-only mounts and immutable folders (permission bits do not stop root).
    ``-`` is standard output for a file (when ``stdout``), and refused for a folder.
    """
    if str(value) == STDIO:
        if kind == "folder":
            raise UsageError(f"{flag} -: this command writes a folder of files, which standard output cannot "
                             "hold; give a folder name")
        if not stdout:
            raise UsageError(f"{flag} -: this file is read back by name (a model file for predict and "
                             "evaluate); give a file name")
        return Path(STDIO)
    p = Path(value)
    if kind == "file" and p.is_dir():
        raise UsageError(f"{flag} {str(p)!r} is a folder; give a file name")
    if kind == "folder" and p.exists() and not p.is_dir():
        raise UsageError(f"{flag} {str(p)!r} is a file; this command writes a folder (give a folder name)")
    folder = p if kind == "folder" else (p.parent if str(p.parent) else Path("."))
    missing = []
    probe = folder.absolute()
    while not probe.exists() and probe != probe.parent:
        missing.append(probe)
        probe = probe.parent
    try:
        folder.mkdir(parents=True, exist_ok=True)
        CREATED_FOLDERS.extend(missing)
    except OSError as exc:
        raise UsageError(f"{flag} {str(p)!r}: cannot create folder {str(folder)!r} ({exc.strerror or exc}); "
                         "choose a folder you can write to") from None
    if not folder_writable(folder):
        raise UsageError(f"{flag} {str(p)!r}: cannot write into folder {str(folder)!r}; choose a folder you can "
                         "write to")
    return p


COLUMNS_HELP = ("which column of a profile table holds what, e.g. id=Sample,chromosome=Chr,position=Start,"
                "logratio=LRR (id and chromosome optional; logratio=S1+S2 for one column per sample). Without it "
                "the usual spellings are recognised (profile.id/sample/ID, chromosome/chrom/chr, position/pos/base/"
                "maploc, logratio/log2ratio/LRR), and DNAcopy wide tables and bedGraph files are read as they are")


def add_columns(p: argparse.ArgumentParser) -> None:
    """``--columns ROLE=COL,...`` and ``--position-unit``: how to read the profile tables."""
    p.add_argument("--columns", metavar="ROLE=COL,...", default=None, help=COLUMNS_HELP)
    p.add_argument("--position-unit", choices=("bp", "kb", "Mb"), default=None,
                   help="unit of the profile tables' positions (default bp): DNAcopy's Coriell table is in kb; "
                        "kb and Mb positions are converted to base pairs on reading")


def columns_of(args: argparse.Namespace):
    """``--columns`` and ``--position-unit`` of ``args`` checked, in canonical ``--columns`` text (None: neither)."""
    from ..io.cgh_layouts import with_unit
    value = getattr(args, "columns", None)
    unit = getattr(args, "position_unit", None)
    if value is None and unit is None:
        return None
    try:
        return with_unit(value, unit)
    except ParameterError as exc:
        flag = f"--columns {value!r}" if value is not None else f"--position-unit {unit}"
        raise UsageError(f"{flag}: {str(exc).removeprefix('columns: ')}") from None


def positive_int(text: str) -> int:
    """An argparse type: a whole number >= 1."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}")
    return value


def add_jobs(p: argparse.ArgumentParser, what: str = "items run") -> None:
    """``--jobs N``: threads of work done in this process."""
    p.add_argument("--jobs", type=positive_int, default=None,
                   help=f"{what} on this many threads (default: one per CPU; the outputs do not depend on it)")


def jobs_of(args: argparse.Namespace) -> int:
    """The thread count of ``--jobs``: one per CPU when not given, 1 for a command without the option."""
    if not hasattr(args, "jobs"):
        return 1
    return int(args.jobs or os.cpu_count() or 1)


def make_progress(args: argparse.Namespace, total: int, label: str, unit: str = "items") -> ProgressBar:
    """A progress bar on stderr, or a silent one with ``--quiet``."""
    if getattr(args, "quiet", False):
        return NullProgressBar(total, label=label, unit=unit)
    return ProgressBar(total, label=label, stream=sys.stderr, unit=unit)


def info(args: argparse.Namespace, message: str) -> None:
    """A status line on stderr (suppressed by ``--quiet``)."""
    if not getattr(args, "quiet", False):
        print(message, file=sys.stderr, flush=True)


def file_kind(path: Path) -> Optional[str]:
    """``"profiles"``, ``"audio"``, ``"score"`` or None from a file's suffix."""
    name = path.name.lower()
    if name.endswith(PROFILE_SUFFIXES):
        return "profiles"
    if name.endswith(AUDIO_SUFFIXES):
        return "audio"
    if name.endswith(SCORE_SUFFIXES):
        return "score"
    return None


def looks_like_profiles(path: Path) -> bool:
    """True when a table's header names the profile columns (so an annotation table in a folder is not data).

    An unreadable file counts as a profile table: reading it will then report what is wrong.
    """
    import gzip
    try:
        with open(path, "rb") as fh:
            gz = fh.read(2) == b"\x1f\x8b"
        opener = gzip.open if gz else open
        with opener(path, "rt", encoding="utf-8") as fh:
            header = fh.readline(65536)
    except (OSError, EOFError, UnicodeDecodeError):
        return True
    from ..io.cgh_layouts import is_bedgraph, looks_like_profile_header
    return is_bedgraph(path, header) or looks_like_profile_header(header, strict=True)


@dataclass
class InputSet:
    """Files found among the command-line inputs, by kind.

    Attributes
    ----------
    profiles : list of Path
        aCGH profile tables.
    audio : list of (Path, Path or None)
        Audio recordings with the MIDI score of the same stem when there is one.
    ignored : list of (Path, str)
        Files in folders that are not used, with the reason (not an error).
    explicit : set of Path
        Resolved paths of the files named on the command line (not found in a folder).
    """

    profiles: list = field(default_factory=list)
    audio: list = field(default_factory=list)
    ignored: list = field(default_factory=list)
    explicit: set = field(default_factory=set)

    def drop_audio_found_in_folders(self, reason: str) -> list:
        """Move the audio found in folders to :attr:`ignored`; returns the explicit audio files left."""
        kept = []
        for audio, score in self.audio:
            if audio.resolve() in self.explicit:
                kept.append((audio, score))
            else:
                self.ignored.append((audio, reason))
        self.audio = kept
        return [audio for audio, _ in kept]


def discover_inputs(inputs, *, profiles=()) -> InputSet:
    """Sort files and folders given on the command line into profiles and (audio, score) pairs.

    Files named explicitly must exist and have a known type (else :class:`UsageError`);
    folders are searched recursively and files of unknown type inside them are
    listed as ignored. A score pairs with the audio of the same stem in the same folder.
    """
    found = InputSet()
    files: list = []
    for raw in inputs:
        p = Path(raw)
        if p.is_dir():
            for q in sorted(x for x in p.rglob("*") if x.is_file() and not x.name.startswith(".")):
                kind = file_kind(q)
                if kind is None or (kind == "profiles" and not looks_like_profiles(q)):
                    found.ignored.append((q, "not a profile table, audio or MIDI file"))
                else:
                    files.append(q)
        elif p.is_file():
            if file_kind(p) is None:
                raise UsageError(f"input {str(p)!r}: unsupported file type; expected an aCGH profiles table "
                                 f"({', '.join(PROFILE_SUFFIXES)}), audio ({', '.join(AUDIO_SUFFIXES)}) "
                                 f"or a MIDI score next to its audio")
            files.append(p)
            found.explicit.add(p.resolve())
        else:
            raise UsageError(f"input {str(p)!r}: no such file or folder")
    for raw in profiles:
        files.append(require_file("--profiles", raw))
        found.explicit.add(files[-1].resolve())
    scores = {}
    for f in files:
        if file_kind(f) == "score":
            scores[(f.parent.resolve(), f.stem)] = f
    paired = set()
    seen = set()
    for f in files:
        key = f.resolve()
        if key in seen:
            continue
        seen.add(key)
        kind = file_kind(f)
        if kind == "profiles":
            found.profiles.append(f)
        elif kind == "audio":
            score = scores.get((f.parent.resolve(), f.stem))
            if score is not None:
                paired.add(score.resolve())
            found.audio.append((f, score))
    for f in scores.values():
        if f.resolve() in paired:
            continue
        if f.resolve() in found.explicit:
            raise UsageError(f"score {str(f)!r} has no audio recording of the same name next to it "
                             f"(expected e.g. {str(f.with_suffix('.wav'))!r})")
        found.ignored.append((f, f"a score with no recording named {f.stem}.wav (or .flac, ...) next to it"))
    return found


def format_table(header, rows) -> str:
    """Rows as a text table with aligned columns (numbers right-aligned)."""
    cells = [[str(h) for h in header]] + [[_cell(v) for v in row] for row in rows]
    widths = [max(len(r[i]) for r in cells) for i in range(len(header))]
    numeric = [all(is_number(row[i]) for row in rows) if rows else False for i in range(len(header))]
    lines = []
    for k, r in enumerate(cells):
        parts = [c.rjust(w) if numeric[i] else c.ljust(w) for i, (c, w) in enumerate(zip(r, widths))]
        lines.append("  ".join(parts).rstrip())
        if k == 0:
            lines.append("  ".join("-" * w for w in widths))
    return "\n".join(lines)


def _cell(v) -> str:
    if isinstance(v, float):
        return f"{v:.4g}"
    return str(v)


def report_failures(failed, *, what: str = "items") -> None:
    """Print the failed items at the end of a command, one line each, on stderr."""
    if not failed:
        return
    print(f"{len(failed)} {what} failed:", file=sys.stderr)
    for key, message in failed:
        first = str(message).splitlines()[0] if message else ""
        rest = str(message).splitlines()[1:]
        print(f"  {key}: {first}", file=sys.stderr)
        for line in rest:
            print(f"    {line}", file=sys.stderr)



def project_command(sub, name: str, help_text: str, epilog: str, parents):
    """The parser of a subcommand ``name PROJECT ...`` (its help, its epilog kept as written, the PROJECT argument)."""
    p = sub.add_parser(name, help=help_text, description=help_text + ".", epilog=epilog, parents=parents,
                       formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("project", metavar="PROJECT", help="a Marginalia project file")
    return p
