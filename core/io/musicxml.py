"""MusicXML (``.musicxml``, ``.xml``) and compressed MusicXML (``.mxl``) scores, read with partitura; MEI
(``.mei``) and Humdrum kern (``.krn``) through the same library (:func:`read_notation`).

partitura (the ``[music]`` extra: ``pip install marginalia-studio[music]``) parses the notation; this
module turns its notes into a :class:`~marginalia.types.MidiScore`: pitches, onsets and offsets in quarter
notes (``onsets_beats``) and in seconds through the score's tempo marks (``<sound tempo>``, read as
quarter notes per minute; before the first mark, its tempo; 120 in a score without any, as MIDI assumes),
one track per part.

Repeats
-------
By default a score is read as written: every note once, repeat signs and voltas ignored (the score's
time then runs straight through; a performance that plays a repeat has events the score lacks, which
the aligner treats as an insertion). ``repeats="unfold"`` unfolds the repeats as partitura's
``unfold_part_maximal`` does (every repeat taken, the last volta), which is what most performances of
classical pieces with written repeats play. A score starting with a pickup bar is shifted so that its
first note starts at 0.
"""

from __future__ import annotations

import warnings
import zipfile

import numpy as np

from ..checks import check_choice
from ..exceptions import DataFormatError, DataWarning, ParameterError, require_extra
from ..types import MidiScore
from ._common import existing_file

__all__ = ["MUSICXML_SUFFIXES", "NOTATION_SUFFIXES", "SCORE_SUFFIXES", "RepeatsWarning", "read_musicxml",
           "read_notation", "read_score"]

MUSICXML_SUFFIXES = (".musicxml", ".mxl", ".xml")
_DEFAULT_QPM = 120.0
_UNIT_QUARTERS = {"w": 4.0, "h": 2.0, "q": 1.0, "e": 0.5, "s": 0.25, "whole": 4.0, "half": 2.0, "quarter": 1.0,
                  "eighth": 0.5, "16th": 0.25}


class RepeatsWarning(DataWarning):
    """A score with repeat signs was read as written: a performance playing the repeats has notes it lacks."""


def _check_well_formed(p) -> None:
    """Name the line of an XML syntax error (an MEI file)."""
    import xml.etree.ElementTree as ET
    try:
        ET.parse(str(p))
    except ET.ParseError as exc:
        line, col = exc.position
        raise DataFormatError(f"not well-formed XML ({exc}); the file is damaged or not MEI", path=str(p),
                              where=f"line {line}, column {col}") from None


def _check_xml(p) -> None:
    """Name the line of an XML syntax error, and the part and measure of a note partitura would choke on
    (its own messages name neither)."""
    import xml.etree.ElementTree as ET
    try:
        if zipfile.is_zipfile(p):
            with zipfile.ZipFile(p) as z:
                names = [n for n in z.namelist() if n.endswith((".xml", ".musicxml")) and not n.startswith("META-INF")]
                if not names:
                    raise DataFormatError("the .mxl archive holds no MusicXML file", path=str(p))
                root = ET.fromstring(z.read(names[0]))
        else:
            root = ET.parse(str(p)).getroot()
    except ET.ParseError as exc:
        line, col = exc.position
        raise DataFormatError(f"not well-formed XML ({exc.msg if hasattr(exc, 'msg') else exc}); the file is "
                              "damaged or not MusicXML", path=str(p), where=f"line {line}, column {col}") from None
    except (zipfile.BadZipFile, OSError) as exc:
        raise DataFormatError(f"cannot open the .mxl archive ({exc})", path=str(p)) from None
    _check_notes(root, p)


def _check_notes(root, p) -> None:
    """Refuse, naming the part and measure, a pitch or a duration that is not one (a damaged export)."""
    if not root.tag.endswith("score-partwise"):
        if root.tag.endswith("score-timewise"):
            return   # partitura reads it; the checks below follow the partwise layout
        raise DataFormatError(f"the XML root is <{root.tag}>, not a MusicXML score (<score-partwise>)", path=str(p))
    names = {sp.get("id"): (sp.findtext("part-name") or "").strip() for sp in root.iter("score-part")}
    for part in root.iter("part"):
        pid = part.get("id", "?")
        label = f"part {pid}" + (f" ({names[pid]})" if names.get(pid) else "")
        divisions_seen = False
        for measure in part.iter("measure"):
            where = f"{label}, measure {measure.get('number', '?')}"
            for divisions in measure.iter("divisions"):
                text = (divisions.text or "").strip()
                try:
                    ok = float(text) > 0 and float(text) == int(float(text))
                except ValueError:
                    ok = False
                if not ok:
                    raise DataFormatError(f"<divisions> is {text!r}; expected a whole number > 0 (the divisions of a "
                                          "quarter note, which every duration counts in). Re-export the score",
                                          path=str(p), where=where)
                divisions_seen = True
            for note in measure.iter("note"):
                if not divisions_seen and note.find("duration") is not None:
                    raise DataFormatError("a note has a duration before any <divisions> says what a duration counts; "
                                          "add <attributes><divisions>N</divisions></attributes> to the first measure",
                                          path=str(p), where=where)
                pitch = note.find("pitch")
                if pitch is not None:
                    step, octave, alter = pitch.findtext("step"), pitch.findtext("octave"), pitch.findtext("alter")
                    if (step or "").strip() not in ("A", "B", "C", "D", "E", "F", "G"):
                        raise DataFormatError(f"a note's pitch step is {step!r}; expected A to G", path=str(p),
                                              where=where)
                    try:
                        int((octave or "").strip())
                        float((alter or "0").strip())
                    except ValueError:
                        raise DataFormatError(f"a note's octave {octave!r} or alter {alter!r} is not a number",
                                              path=str(p), where=where) from None
                duration = note.findtext("duration")
                if duration is not None:
                    try:
                        ok = float(duration.strip()) >= 0
                    except ValueError:
                        ok = False
                    if not ok:
                        raise DataFormatError(f"a note's duration is {duration!r}; expected a number of divisions "
                                              ">= 0", path=str(p), where=where)


def _quarters_per_unit(unit) -> float:
    if not unit:
        return 1.0
    u = str(unit).strip()
    dots = len(u) - len(u.rstrip("."))
    base = _UNIT_QUARTERS.get(u.rstrip("."), 1.0)
    return base * (2.0 - 0.5 ** dots)


def read_musicxml(path, *, repeats: str = "written") -> MidiScore:
    """Read a MusicXML or MXL score into a :class:`~marginalia.types.MidiScore`.

    Parameters
    ----------
    path : str or path-like
    repeats : {"written", "unfold"}
        Read the notes once as written (repeat signs ignored), or unfold the repeats (see the module notes).

    Returns
    -------
    score : MidiScore
        ``onsets_beats``/``offsets_beats`` in quarter notes from the first note, seconds from the tempo
        marks, ``velocities`` 64 (notation has no velocity), ``tracks`` = part index, ``name`` = file stem,
        ``meta`` with ``source``, ``format`` (``musicxml``), ``parts`` (part names), ``repeats`` (the mode
        used and the number of repeat signs found), ``time_signatures`` ``(beat, numerator, denominator)``.

    Warns
    -----
    RepeatsWarning
        Once, when a score read as written has repeat signs.

    Raises
    ------
    MissingExtraError
        partitura is not installed (``pip install marginalia-studio[music]``).
    DataFormatError
        Not well-formed XML (the message names the line), a pitch, duration or ``<divisions>`` that is not one
        (named by part and measure), a file partitura cannot read, or a score without notes.
    """
    check_choice(repeats, "repeats", ("written", "unfold"))
    p = existing_file(path)
    return _read_notation(p, repeats, "musicxml")


def read_notation(path, *, repeats: str = "written") -> MidiScore:
    """Read a MusicXML/MXL, MEI (``.mei``) or Humdrum kern (``.krn``) score, chosen by its suffix.

    MEI and kern go through partitura like MusicXML (the ``[music]`` extra) and give the same
    :class:`~marginalia.types.MidiScore` as :func:`read_musicxml` (``meta["format"]`` ``"mei"`` or ``"kern"``).
    An MEI file that is not well-formed XML is refused naming the line; anything partitura cannot read is
    refused naming the file (partitura's MEI and kern readers do not say the part or measure).
    """
    check_choice(repeats, "repeats", ("written", "unfold"))
    p = existing_file(path)
    name = p.name.lower()
    kind = "mei" if name.endswith(".mei") else "kern" if name.endswith(".krn") else "musicxml"
    return _read_notation(p, repeats, kind)


_FORMAT_NAMES = {"musicxml": "MusicXML", "mei": "MEI", "kern": "Humdrum kern"}


def _read_notation(p, repeats: str, kind: str) -> MidiScore:
    require_extra("partitura", "music", f"reading {_FORMAT_NAMES[kind]} scores")
    if kind == "musicxml":
        _check_xml(p)
    elif kind == "mei":
        _check_well_formed(p)
    import partitura as pt
    loader = {"musicxml": pt.load_score, "mei": getattr(pt, "load_mei", pt.load_score),
              "kern": getattr(pt, "load_kern", pt.load_score)}[kind]
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")   # partitura's notes on slurs and ties it drops are not the user's concern
            score = loader(str(p))
    except Exception as exc:  # noqa: BLE001 - partitura raises many kinds; the user needs the file and the cause
        raise DataFormatError(f"partitura cannot read this {_FORMAT_NAMES[kind]} score ({type(exc).__name__}: "
                              f"{exc}); check it opens in MuseScore or Verovio, and re-export it",
                              path=str(p)) from None
    parts = list(getattr(score, "parts", [score]))
    n_repeats = sum(len(list(part.iter_all(pt.score.Repeat))) for part in parts)
    if repeats == "unfold" and n_repeats:
        parts = [pt.score.unfold_part_maximal(part) for part in parts]
    elif n_repeats:
        warnings.warn(f"{p}: the score has {n_repeats} repeat sign(s); it is read as written, every note once "
                      "(repeats not unfolded), so a performance that plays the repeats has notes the score lacks "
                      "(aligned as insertions)", RepeatsWarning, stacklevel=2)
    pitch, on_q, off_q, track = [], [], [], []
    tempos, time_sigs = [], []
    for k, part in enumerate(parts):
        na = part.note_array()
        pitch.append(na["pitch"].astype(np.int64))
        on_q.append(na["onset_quarter"].astype(np.float64))
        off_q.append((na["onset_quarter"] + na["duration_quarter"]).astype(np.float64))
        track.append(np.full(na.shape[0], k, dtype=np.int64))
        qmap = part.quarter_map
        for tp in part.iter_all(pt.score.Tempo):
            tempos.append((float(qmap(tp.start.t)), float(tp.bpm) * _quarters_per_unit(getattr(tp, "unit", None))))
        for ts in part.iter_all(pt.score.TimeSignature):
            time_sigs.append((float(qmap(ts.start.t)), int(ts.beats), int(ts.beat_type)))
    pitches = np.concatenate(pitch) if pitch else np.zeros(0, dtype=np.int64)
    if pitches.size == 0:
        raise DataFormatError(f"the score has no notes ({len(parts)} part(s)); expected at least one pitched note",
                              path=str(p))
    on_q, off_q, tracks = np.concatenate(on_q), np.concatenate(off_q), np.concatenate(track)
    shift = float(on_q.min())
    on_q, off_q = on_q - shift, off_q - shift
    # tempo map in quarters: (quarter, quarters per minute), from 0
    marks = sorted({(max(q - shift, 0.0), qpm) for q, qpm in tempos if qpm > 0})
    if not marks or marks[0][0] > 0:
        marks.insert(0, (0.0, marks[0][1] if marks else _DEFAULT_QPM))
    q0 = np.array([q for q, _ in marks])
    keep = np.concatenate([[True], np.diff(q0) > 0])   # one tempo per position: the last mark there wins
    q0 = q0[keep]
    qpm = np.array([v for _, v in marks])[np.concatenate([keep[1:], [True]])] if len(marks) > 1 else \
        np.array([marks[0][1]])
    seconds_at = np.concatenate([[0.0], np.cumsum(np.diff(q0) * 60.0 / qpm[:-1])])

    def to_seconds(q):
        i = np.clip(np.searchsorted(q0, q, side="right") - 1, 0, len(q0) - 1)
        return seconds_at[i] + (q - q0[i]) * 60.0 / qpm[i]

    names = tuple(str(getattr(part, "part_name", None) or getattr(part, "id", "") or f"part {k + 1}")
                  for k, part in enumerate(parts))
    try:
        return _midi_score(p, pitches, to_seconds(on_q), to_seconds(off_q), on_q, off_q, tracks, q0, seconds_at,
                           qpm, names, repeats, n_repeats, time_sigs, shift, kind)
    except ParameterError as exc:   # e.g. a note ending before it starts: the file's durations are wrong
        raise DataFormatError(f"the notes read from it are not a score ({str(exc).split(': ', 1)[-1]}); check it "
                              "opens in MuseScore, and re-export it as MusicXML", path=str(p)) from None


def _midi_score(p, pitches, onsets_s, offsets_s, on_q, off_q, tracks, q0, seconds_at, qpm, names, repeats,
                n_repeats, time_sigs, shift, kind="musicxml") -> MidiScore:
    return MidiScore(pitches=pitches, onsets_s=onsets_s, offsets_s=offsets_s, onsets_beats=on_q,
                 offsets_beats=off_q, velocities=np.full(pitches.shape[0], 64, dtype=np.int64), tracks=tracks,
                 name=p.name.split(".")[0],
                 tempo_map=np.column_stack([q0, seconds_at, 60e6 / qpm]), ticks_per_beat=480,
                 meta={"source": str(p), "format": kind, "parts": names,
                       "repeats": {"mode": repeats, "repeat_signs": n_repeats},
                       "time_signatures": tuple(sorted({(max(b - shift, 0.0), n, d) for b, n, d in time_sigs}))})


#: notation suffixes read through partitura
NOTATION_SUFFIXES = MUSICXML_SUFFIXES + (".mei", ".krn")
#: every score file suffix the package reads
SCORE_SUFFIXES = (".mid", ".midi", ".musicxml", ".mxl", ".mei", ".krn")


def read_score(path) -> MidiScore:
    """Read a score by its suffix: MusicXML/MXL, MEI and kern through :func:`read_notation`, anything else as MIDI."""
    if str(path).lower().endswith(NOTATION_SUFFIXES):
        return read_notation(path)
    from .midi import read_midi
    return read_midi(path)
