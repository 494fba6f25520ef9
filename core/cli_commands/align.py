"""``marginalia-cli align --score S.mid --audio A.wav --out OUT.csv``: one score against one recording."""

from __future__ import annotations

import argparse
import copy
from dataclasses import dataclass
from pathlib import Path
from types import SimpleNamespace
from typing import Optional

import numpy as np

from ..types import MidiScore, Sequence
from ._common import EXIT_OK, STDIO, UsageError, check_output, info, require_file, write_output

__all__ = ["add_parser", "run", "Recording", "load_recording", "least_sure", "write_alignment_outputs",
           "train_alignment_pairs"]

HELP = "align a MIDI score to an audio recording"
EPILOG = """\
output: one row per score event
  event,score_time_s,audio_time_s,pitches,margin,rival_time_s
  (score_time_s: the event's onset in the score MIDI's own seconds; pitches: space-separated MIDI numbers;
  margin: what moving this onset to rival_time_s, its closest rival within half a second, costs the
  aligner's objective: the smaller, the less sure; inf for an onset that may not move)

The recording is aligned by marginalia.align.ScoreAligner: semitone-band chroma and onset chroma
against each score event's pitch classes, decoded by the monotone alignment decoder with a duration
prior from the score's own timing stretched to the length of the recording (--prior-weight scales it;
0 turns it off), then each onset refined below the frame size. Silence before and after the music is
absorbed by rest states. --model uses the aligner `train --task alignment` fitted (its learned frame
scorers and options); without it, the default aligner.

examples:
  marginalia-cli align --score piece.mid --audio take1.wav --out take1_alignment.csv
  marginalia-cli align --score piece.mid --audio take1.wav --out take1.csv --midi take1_aligned.mid
  marginalia-cli align --score piece.mid --audio take1.wav --model piano.model --out take1.csv
"""


def add_parser(sub, parents) -> None:
    p = sub.add_parser("align", help=HELP, description=HELP + ".", epilog=EPILOG, parents=parents,
                       formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--score", metavar="S.mid", required=True,
                   help="the score: MIDI, or MusicXML/MXL with the [music] extra (repeats as written)")
    p.add_argument("--audio", metavar="A.wav", required=True, help="the recording (WAV, FLAC, OGG, MP3)")
    p.add_argument("--model", metavar="MODEL", help="an aligner trained by `train --task alignment` (optional)")
    p.add_argument("--out", metavar="OUT.csv", required=True, help="the alignment table to write")
    p.add_argument("--midi", metavar="OUT.mid", help="also write the score with note times following the audio")
    p.add_argument("--prior-weight", type=float, default=1.0,
                   help="strength of the duration prior, relative to the aligner's own (default 1; 0 = off)")
    p.set_defaults(run=run)


@dataclass(frozen=True, eq=False)
class Recording:
    """A loaded recording with what segmentation and alignment need.

    Attributes
    ----------
    audio_path : str
    score : MidiScore or None
    features : Sequence
        Standardised MFCC(+deltas) and chroma frames, positions in seconds, shape (T, p).
    times : ndarray, shape (T,)
        Frame times in seconds.
    energy_db : ndarray, shape (T,)
        Frame loudness (dB): mean power of the log-mel bands.
    frame_rate : float
    """

    audio_path: str
    score: Optional[MidiScore]
    features: Sequence
    times: np.ndarray
    energy_db: np.ndarray
    frame_rate: float


def load_recording(audio_path, score_path=None) -> Recording:
    """Decode a recording with the same features as the app's items (and read its score)."""
    from ..items import ItemLoader
    record = SimpleNamespace(id=f"cli:{audio_path}", name=Path(audio_path).stem, kind="audio",
                             task="alignment" if score_path else "segmentation", source_path=str(audio_path),
                             source_hash=None,
                             meta={"score_path": str(score_path)} if score_path else {})
    data = ItemLoader(max_items=1).load(record)
    image_db = np.asarray(data.spectrogram[0], dtype=np.float64)  # (F, T) dB
    energy_db = 10.0 * np.log10(np.maximum(np.mean(10.0 ** (image_db / 10.0), axis=0), 1e-12))
    times = np.asarray(data.sequence.positions, dtype=np.float64)
    return Recording(audio_path=str(audio_path), score=data.score, features=data.sequence, times=times,
                     energy_db=energy_db, frame_rate=float(data.frame_rate))


#: tempo ratios (recording's sounding time / score's own duration) beyond which a pair looks mismatched.
#: Score files often carry a nominal tempo: Vienna 4x22's Chopin op. 10 no. 3 score plays 20.8 s at its
#: own tempo while its 14 performances sound for 67-91 s (up to 4.4x), so the band is wide.
PLAUSIBLE_TEMPO_RATIO = (1 / 5, 5.0)
SILENT_PEAK = 1e-3   # -60 dBFS
SILENCE_DB = 35.0    # frames this far below the loudest frame count as silence


def check_plausible(recording) -> None:
    """Refuse a silent recording; warn when the music lasts far longer or shorter than the score.

    An alignment is always produced, so a wrong file (a 3 s excerpt, another piece) would
    otherwise pass unnoticed: the warning compares the sounding time of the recording with
    the score played at its own tempo.
    """
    import warnings

    from ..exceptions import DataFormatError
    from ..io.audio import load_audio
    y, _ = load_audio(recording.audio_path, sr=None)
    if not np.abs(y).max() >= SILENT_PEAK:
        raise DataFormatError("the recording is silent (peak below -60 dBFS): there is nothing to align",
                              path=recording.audio_path)
    loud = np.flatnonzero(recording.energy_db > recording.energy_db.max() - SILENCE_DB)
    sounding = (loud[-1] - loud[0] + 1) / recording.frame_rate if loud.size else 0.0
    score_s = float(recording.score.duration_s)
    ratio = sounding / score_s if score_s > 0 else 1.0
    if not PLAUSIBLE_TEMPO_RATIO[0] <= ratio <= PLAUSIBLE_TEMPO_RATIO[1]:
        warnings.warn(f"{Path(recording.audio_path).name} sounds for {sounding:.1f} s but the score plays "
                      f"{score_s:.1f} s at its own tempo ({ratio:.2f}x): is it a recording of this score, and "
                      "all of it?", UserWarning, stacklevel=2)


def least_sure(out, n: int = 5) -> list:
    """Audio times (s, in time order) of the ``n`` events whose onsets the aligner is least sure of."""
    if out.event_margins is None:
        return []
    m = np.asarray(out.event_margins)
    order = [int(e) for e in np.argsort(m, kind="stable") if np.isfinite(m[e])][:n]
    return sorted(float(out.event_times_s[e]) for e in order)


def write_alignment_outputs(out_dir: Path, stem: str, score: MidiScore, onset_times) -> list:
    """Write ``<stem>_alignment.csv`` and ``<stem>_aligned.mid`` atomically; returns their names."""
    from ..io.midi import write_alignment_csv, write_midi
    from ._work import publish
    out_dir.mkdir(parents=True, exist_ok=True)
    csv_name, mid_name = f"{stem}_alignment.csv", f"{stem}_aligned.mid"
    publish(out_dir / csv_name, lambda p: write_alignment_csv(p, score, onset_times))
    publish(out_dir / mid_name, lambda p: write_midi(p, score, times_s=onset_times))
    return [csv_name, mid_name]


def run(args) -> int:
    from ..align import ScoreAligner, align_recording
    from ..io.midi import write_alignment_csv, write_midi
    for flag, value in (("--score", args.score), ("--audio", args.audio)):
        require_file(flag, value, stdin=False)
    if not (np.isfinite(args.prior_weight) and args.prior_weight >= 0):
        raise UsageError(f"--prior-weight: expected a number >= 0, got {args.prior_weight}")
    for flag, value in (("--out", args.out), ("--midi", args.midi)):
        if value:
            check_output(flag, value, "file")
    aligner = ScoreAligner()
    if args.model:
        from ..models.files import load_model
        aligner = copy.copy(load_model(args.model, task="alignment").aligner())
    aligner.prior_weight = aligner.prior_weight * args.prior_weight
    info(args, f"align: reading {args.audio} and {args.score}")
    rec = load_recording(args.audio, args.score)
    check_plausible(rec)
    out = align_recording(args.audio, rec.score, aligner=aligner)
    onset_times = out.event_times_s
    if args.out == STDIO and args.midi == STDIO:
        raise UsageError("--out - and --midi -: only one output can go to standard output")
    write_output(args.out, lambda p: write_alignment_csv(p, rec.score, onset_times, margins=out.event_margins,
                                                         rival_times_s=out.event_rival_times_s))
    unsure = least_sure(out)
    if unsure:
        info(args, "align: least sure of the onsets at " + ", ".join(f"{t:.2f} s" for t in unsure)
                   + " (smallest margins; listen there first)")
    if args.midi:
        write_output(args.midi, lambda p: write_midi(p, rec.score, times_s=onset_times))
    info(args, f"align: {rec.score.n_events} events over {rec.times[-1]:.1f} s of audio; wrote {args.out}"
               + (f" and {args.midi}" if args.midi else ""))
    return EXIT_OK


@dataclass(frozen=True)
class TrainingPair:
    """One row of a PAIRS.csv: a score, its recording and optional anchor labels."""

    score: Path
    audio: Path
    anchors: tuple = ()
    anchors_path: Optional[Path] = None


def read_pairs(path) -> list:
    """Read ``score,audio[,anchors]`` rows; paths are relative to the PAIRS.csv's folder.

    An anchors file is a CSV ``event,audio_time_s`` (optionally ``tolerance_s``): score event ``event``
    (0-based, in score order) starts at ``audio_time_s`` seconds of the recording.

    Raises
    ------
    DataFormatError
        Missing columns, missing files, bad anchor rows -- naming the file and the line.
    """
    from ..exceptions import DataFormatError
    from ..io.tables import listed_file, read_csv_table
    from ..types import AnchorLabel
    p, header, rows = read_csv_table(require_file("--pairs", path))
    if "score" not in header or "audio" not in header:
        raise DataFormatError(f"expected the columns score,audio[,anchors]; found {header}", path=str(p))
    pairs = []
    for line, row in rows:
        score, audio = listed_file(p, line, row, "score"), listed_file(p, line, row, "audio")
        anchors_path = listed_file(p, line, row, "anchors") if "anchors" in header else None
        if score is None or audio is None:
            raise DataFormatError("every row needs a score and an audio file", path=str(p), where=f"line {line}")
        anchors, first_line = [], {}
        if anchors_path is not None:
            _, a_header, a_rows = read_csv_table(anchors_path)
            if "event" not in a_header or "audio_time_s" not in a_header:
                raise DataFormatError(f"expected the columns event,audio_time_s; found {a_header}",
                                      path=str(anchors_path))
            for a_line, a_row in a_rows:
                try:
                    kw = {"event": int(a_row["event"]), "time_s": float(a_row["audio_time_s"])}
                    if (a_row.get("tolerance_s") or "").strip():
                        kw["tolerance_s"] = float(a_row["tolerance_s"])
                    anchors.append(AnchorLabel(item_id=str(audio), **kw))
                except (TypeError, ValueError) as exc:
                    raise DataFormatError(f"expected an integer event and a time in seconds ({exc})",
                                          path=str(anchors_path), where=f"line {a_line}") from None
                seen = first_line.setdefault(kw["event"], a_line)
                if seen != a_line:
                    raise DataFormatError(f"event {kw['event']} is anchored twice (lines {seen} and {a_line}); keep "
                                          "one time per event", path=str(anchors_path), where=f"line {a_line}")
        pairs.append(TrainingPair(score, audio, tuple(anchors), anchors_path))
    if not pairs:
        raise DataFormatError("no pair listed", path=str(p))
    return pairs


def _check_anchors(pair: TrainingPair, score: MidiScore, duration_s: float) -> None:
    """Refuse anchors no alignment of this recording can satisfy, naming the anchors file and the events.

    Events must be in the score, times inside the recording, and a later event may not be
    anchored before an earlier one (beyond the anchors' tolerances).
    """
    if not pair.anchors:
        return
    from ..exceptions import DataFormatError
    where = str(pair.anchors_path)
    E = score.n_events
    for a in pair.anchors:
        if a.event >= E:
            raise DataFormatError(f"event {a.event} is not in {pair.score.name} (events 0..{E - 1})", path=where)
        if a.time_s - a.tolerance_s > duration_s:
            raise DataFormatError(f"event {a.event} at {a.time_s:g} s is after the end of {pair.audio.name} "
                                  f"({duration_s:.1f} s)", path=where)
    ordered = sorted(pair.anchors, key=lambda a: a.event)
    for before, after in zip(ordered, ordered[1:]):
        if after.time_s + after.tolerance_s < before.time_s - before.tolerance_s:
            raise DataFormatError(f"event {after.event} is anchored at {after.time_s:g} s, before event "
                                  f"{before.event} at {before.time_s:g} s; a later event cannot start earlier",
                                  path=where)


def train_alignment_pairs(args) -> int:
    """``train --task alignment --pairs PAIRS.csv``: fit the score aligner from score/audio pairs (plus anchors).

    :meth:`marginalia.align.ScoreAligner.fit` learns the frame scorers from the scores and
    recordings alone (align with the current scorers, refit them by ridge regression, ``--max-iter``
    rounds); a pair's anchors constrain its alignments. The fitted aligner is what ``align --model``
    and ``predict`` run.
    """
    from ..align import ScoreAligner
    from ..io.audio import load_audio
    from ..io.musicxml import read_score
    from ..models.files import TrainedModel, save_model
    from ..models.persistence import labels_hash
    from ._common import make_progress
    pairs = read_pairs(args.pairs)
    options = {k: v for k, v in (("n_iter", args.max_iter), ("ridge", args.ridge)) if v is not None}
    aligner = ScoreAligner(**options)
    data, anchors = [], []
    progress = make_progress(args, len(pairs), "train: reading", unit="pairs")
    with progress:
        for pair in pairs:
            score = read_score(pair.score)
            y, sr = load_audio(pair.audio, sr=22050)
            _check_anchors(pair, score, y.shape[0] / sr)
            data.append((aligner.features(y, sr), score))
            anchors.append(list(pair.anchors))
            progress.advance(message=pair.audio.name)
    n_anchors = sum(len(a) for a in anchors)
    info(args, f"train: {len(pairs)} score/audio pairs, {n_anchors} anchors, score aligner")
    progress = make_progress(args, int(aligner.n_iter), "train", unit="rounds")
    with progress:
        aligner.fit(data, anchors=anchors, callback=lambda _it, _n: progress.advance())
    prov = {"learner": "score-aligner",
            "learner_params": {"n_iter": int(aligner.n_iter), "ridge": float(aligner.ridge),
                               "blend": float(aligner.blend)},
            "trained_on": [{"score": str(p.score.resolve()), "audio": str(p.audio.resolve())} for p in pairs],
            "label_hash": labels_hash([a for p in pairs for a in p.anchors]),
            "n_pairs": len(pairs), "n_anchors": n_anchors}
    save_model(args.out, TrainedModel("alignment", "score-aligner", aligner, aligner.scorer_weights(), prov))
    info(args, f"train: wrote {args.out}")
    return EXIT_OK
