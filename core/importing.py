"""What an import of several files will do, before anything is stored.

:func:`plan_import` recognises each file (copy-number profiles in every layout the readers know, aCGH
label tables, audio label files, audio recordings, scores), says what it holds (items, label counts,
duration, score events) and proposes which score goes with which recording. The pairing is a guess:
a score whose file stem equals the recording's, or is the longest prefix of it (``Chopin_op10_no3.mid``
for ``Chopin_op10_no3_p01.wav``, the Vienna 4x22 layout). The caller shows the plan, lets the user
change the pairs, and passes the plan with the chosen pairs to :meth:`marginalia.engine.Engine.run_import`.
A file that cannot be read gets one line in :attr:`PlannedFile.error` and is left out of the import.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional

from .exceptions import DataFormatError, MarginaliaError, ParameterError

__all__ = ["PlannedFile", "ImportPlan", "plan_import", "guess_score", "check_pairs", "FILE_ROLES"]

#: what a file is to an import
FILE_ROLES = {
    "profiles": "copy-number profiles",
    "series": "series",
    "audio": "audio recording",
    "score": "score",
    "cgh_labels": "aCGH label table",
    "audio_labels": "audio labels",
    "error": "cannot be imported",
}

_TABLE_SUFFIXES = (".csv", ".csv.gz", ".tsv", ".tsv.gz", ".txt", ".bedgraph", ".bedgraph.gz", ".bg", ".bg.gz")
_SEPARATORS = "_-. "


@dataclass
class PlannedFile:
    """One file of an import plan.

    Attributes
    ----------
    path : str
    role : str
        A key of :data:`FILE_ROLES`.
    summary : str
        What it holds, in a few words ("24 sequences; long table (profile.id, ...)", "88.2 s").
    n_items : int
        Items it will add (a recording is one item; scores and label files add none).
    n_labels : int
        Labels (rows) a label file states.
    error : str or None
        Why it cannot be imported, in one line (the file is then left out).
    table : TablePreview or None
        For a delimited copy-number table (also one whose columns could not be mapped): its header, first
        rows and recognised naming (:class:`marginalia.io.cgh_layouts.TablePreview`), so a dialog can show
        the columns and let the user name them and choose the position unit.
    """

    path: str
    role: str
    summary: str = ""
    n_items: int = 0
    n_labels: int = 0
    error: Optional[str] = None
    table: Optional[object] = None

    @property
    def name(self) -> str:
        return Path(self.path).name


@dataclass
class ImportPlan:
    """Every file of an import with the recording -> score pairs proposed.

    Attributes
    ----------
    files : list of PlannedFile
        In the order given.
    pairs : dict
        ``{recording path: score path or None}`` for every readable recording; edit it to change the pairing.
    """

    files: list
    pairs: dict = field(default_factory=dict)

    def of_role(self, *roles) -> list:
        return [f for f in self.files if f.role in roles]

    @property
    def scores(self) -> list:
        """Paths of the readable scores (the choices of a pairing)."""
        return [f.path for f in self.of_role("score")]

    @property
    def errors(self) -> list:
        return [f for f in self.files if f.error]

    def summary(self, pairs: Optional[dict] = None) -> str:
        """What the import adds, in a sentence, with ``pairs`` (default: the proposed ones).

        ``"Will add 3 items (2 recordings with a score); 676 labels; not imported (no recording): x.mid."``
        """
        pairs = self.pairs if pairs is None else pairs
        n_items = sum(f.n_items for f in self.files if not f.error)
        n_labels = sum(f.n_labels for f in self.files if not f.error)
        paired = sum(1 for s in pairs.values() if s)
        parts = [f"Will add {_plural(n_items, 'item')}"
                 + (f" ({_plural(paired, 'recording')} with a score)" if pairs else "")]
        if n_labels:
            parts.append(_plural(n_labels, "label"))
        used = {s for s in pairs.values() if s}
        unused = [Path(s).name for s in self.scores if s not in used]
        if unused:
            parts.append(f"not imported (no recording): {', '.join(unused)}")
        if self.errors:
            parts.append(f"{_plural(len(self.errors), 'file')} left out (see the lines above)")
        return "; ".join(parts) + "."


def _plural(n: int, word: str) -> str:
    return f"{n} {word}{'' if n == 1 else 's'}"


def guess_score(recording, scores) -> Optional[str]:
    """The score proposed for ``recording``: same stem, else the longest stem that prefixes it, else None.

    A prefix counts only when the recording's stem continues with a separator (``_``, ``-``, ``.``, space),
    so ``op10.mid`` is not proposed for ``op100_p01.wav``.
    """
    stem = Path(recording).stem.lower()
    best, best_len = None, -1
    for s in scores:
        sstem = Path(s).stem.lower()
        if sstem == stem:
            return str(s)
        if stem.startswith(sstem) and stem[len(sstem)] in _SEPARATORS and len(sstem) > best_len:
            best, best_len = str(s), len(sstem)
    return best


def _table_suffix(path: Path) -> str:
    return "".join(path.suffixes[-2:]).lower() if path.suffix.lower() == ".gz" else path.suffix.lower()


def _plan_file(path: Path, loader, columns) -> PlannedFile:
    from .io.musicxml import SCORE_SUFFIXES
    from .items import AUDIO_SUFFIXES
    p = str(path)
    suffix = _table_suffix(path)
    if not path.is_file():
        return PlannedFile(p, "error", error=f"{path.name}: no such file")
    if suffix in SCORE_SUFFIXES:
        from .io.musicxml import read_score
        score = read_score(path)
        return PlannedFile(p, "score", f"{score.n_events} score events")
    if suffix in AUDIO_SUFFIXES:
        from .io.audio import audio_info
        info = audio_info(path)
        return PlannedFile(p, "audio", f"{info.duration_s:.1f} s recording", n_items=1)
    if suffix in (".textgrid", ".jams", ".json"):
        return _audio_labels(path)
    if suffix not in _TABLE_SUFFIXES:
        raise DataFormatError(f"unsupported file type {suffix or '(none)'!r}; expected copy-number tables, label "
                              "tables, audio recordings or scores", path=p)
    from .io.sniff import sniff_kind
    kind = sniff_kind(path)
    if kind == "cgh_annotations":
        return PlannedFile(p, "cgh_labels", "region labels (profile.id, chromosome, min, max, annotation)",
                           n_labels=_data_rows(path))
    if kind == "labels" and (columns is None or columns.startswith("unit=")):
        return _audio_labels(path)
    import dataclasses
    import warnings

    from .io.cgh_layouts import PositionUnitWarning, preview_table
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            specs = loader.describe(path, columns=columns)
        except DataFormatError as exc:
            table = _preview(path) if kind != "labels" else None
            if table is None:
                raise
            return PlannedFile(p, "error", error=_one_line(exc, path), table=table)
    hint = None
    for w in caught:      # passed on to the caller, who shows them; the unit hint is also kept for the dialog
        if issubclass(w.category, PositionUnitWarning):
            hint = "Mb" if "looks like Mb" in str(w.message) else "kb"
        warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)
    if specs and specs[0].kind == "cgh":
        from .io.cgh_layouts import describe_table
        n = len(specs)
        profiles = len({(s.meta or {}).get("profile_id") for s in specs})
        layout = describe_table(path, columns)
        table = preview_table(path)
        if table is not None and hint is None and not columns:
            hint = _unit_hint(loader, path)
        if table is not None and hint:
            table = dataclasses.replace(table, unit_hint=hint)
        return PlannedFile(p, "profiles", f"{n} sequence{'s' if n != 1 else ''} of {profiles} "
                                          f"profile{'s' if profiles != 1 else ''}; {layout}", n_items=n, table=table)
    n = sum(int((s.meta or {}).get("n_samples", 0)) for s in specs)
    return PlannedFile(p, "series", f"series of {n} samples", n_items=len(specs))


def _unit_hint(loader, path: Path):
    """kb/Mb when the table's positions look like it (the warning is not repeated when the loader's cache
    answered the plan, so the dialog asks the sequences themselves)."""
    import numpy as np

    from .io.cgh_layouts import position_unit_hint
    seqs = list(loader._read_profiles(path).values())    # the parse the plan just made (cached)
    tops = [float(s.positions.max()) for s in seqs if s.n_samples]
    fractional = any(bool(np.any(s.positions != np.floor(s.positions))) for s in seqs)
    return position_unit_hint([s.group for s in seqs if s.n_samples], tops, fractional=fractional)


def _preview(path: Path):
    """The table preview of a file the profile reader refused, when it is a delimited table with a header."""
    from .io.cgh_layouts import preview_table
    try:
        table = preview_table(path)
    except (OSError, EOFError, MarginaliaError):
        return None
    return table if table is not None and len(table.header) >= 2 and table.rows else None


def _audio_labels(path: Path) -> PlannedFile:
    from .label_files import read_label_tracks
    tracks = read_label_tracks(path)
    n = sum(len(t.names) for t in tracks.values())
    return PlannedFile(str(path), "audio_labels", f"labels of the recording {path.name.split('.')[0]}", n_labels=n)


def _data_rows(path: Path) -> int:
    import gzip
    opener = gzip.open if path.suffix.lower() == ".gz" else open
    with opener(path, "rt", encoding="utf-8", errors="replace") as fh:
        return max(0, sum(1 for line in fh if line.strip()) - 1)


def plan_import(paths, loader, *, columns=None) -> ImportPlan:
    """Recognise ``paths`` and propose the recording -> score pairs; reads files, stores nothing.

    Parameters
    ----------
    paths : iterable of path-like
    loader : ItemLoader
        Describes data files as items (the engine's, so that parsed tables are reused by the import).
    columns : str, optional
        Column mapping of the copy-number tables (``--columns`` text).

    Returns
    -------
    ImportPlan
    """
    files = []
    for path in (Path(p) for p in paths):
        try:
            files.append(_plan_file(path, loader, columns))
        except (MarginaliaError, OSError, ValueError) as exc:
            files.append(PlannedFile(str(path), "error", error=_one_line(exc, path)))
    plan = ImportPlan(files)
    scores = plan.scores
    plan.pairs = {f.path: guess_score(f.path, scores) for f in plan.of_role("audio")}
    return plan


def _one_line(exc: BaseException, path: Path) -> str:
    text = (" ".join(str(exc).split()) or type(exc).__name__).replace(str(path), path.name)
    return text if path.name in text else f"{path.name}: {text}"


def check_pairs(plan: ImportPlan, pairs: dict) -> dict:
    """``pairs`` restricted to the plan's recordings, every score one of the plan's (else ParameterError)."""
    scores = set(plan.scores)
    chosen = {}
    for rec in plan.pairs:
        score = pairs.get(rec, plan.pairs[rec]) if pairs is not None else plan.pairs[rec]
        if score and str(score) not in scores:
            raise ParameterError(f"pairs: {score} is not a readable score of this import")
        chosen[rec] = str(score) if score else None
    return chosen
