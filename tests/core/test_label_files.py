"""Audio labels in and out of a project (Audacity, Sonic Visualiser, TextGrid, JAMS), checked against the
reference parsers praatio and jams (test extras), on generated audio and scores."""

from __future__ import annotations

import json

import numpy as np
import pytest

from marginalia.cli import main
from marginalia.io import write_midi, write_wav
from marginalia.io.jams_files import read_jams, write_jams_alignment, write_jams_segments
from marginalia.types import AnchorLabel, BoundaryLabel, MidiScore, RegionKind, RegionLabel

jams = pytest.importorskip("jams")
praatio_textgrid = pytest.importorskip("praatio.textgrid")

SR = 22050


def _tone_wav(path, seconds=3.0):
    t = np.arange(int(SR * seconds)) / SR
    freq = np.where(t < 1.5, 220.0, 330.0)
    write_wav(path, 0.3 * np.sin(2 * np.pi * freq * t).astype(np.float32), SR)
    return path


def _score():
    pitches = np.array([60, 64, 67, 62, 65])
    onsets = np.array([0.0, 0.0, 0.5, 1.0, 1.5])
    return MidiScore(pitches=pitches, onsets_s=onsets, offsets_s=onsets + 0.5, name="s")


@pytest.fixture
def project(tmp_path):
    from marginalia.engine import Engine
    wav = _tone_wav(tmp_path / "take.wav")
    path = tmp_path / "p.marginalia"
    with Engine.create(path) as eng:
        eng.import_files([wav])
    return path


def test_jams_files_validate_with_the_jams_package_and_read_back(tmp_path):
    write_jams_segments(tmp_path / "s.jams", [0.5, 1.25], duration_s=3.0, names=["a", "b", "c"], title="x")
    jam = jams.load(str(tmp_path / "s.jams"), validate=True)
    (ann,) = jam.annotations
    assert ann.namespace == "segment_open"
    assert [(o.time, o.duration, o.value) for o in ann.data] == [(0.0, 0.5, "a"), (0.5, 0.75, "b"), (1.25, 1.75, "c")]
    track = read_jams(tmp_path / "s.jams")["segment_open"]
    assert track.starts.tolist() == [0.0, 0.5, 1.25] and track.ends.tolist() == [0.5, 1.25, 3.0]
    score = _score()
    times = np.array([0.1, 0.7, 1.3, 2.0])[: score.n_events]
    write_jams_alignment(tmp_path / "a.jams", score, times, duration_s=3.0)
    jam = jams.load(str(tmp_path / "a.jams"), validate=True)
    notes = [(o.time, o.value) for o in jam.annotations[0].data]
    expected = [(float(times[e]), float(p)) for e in range(score.n_events) for p in score.event_pitches(e)]
    assert notes == expected
    track = read_jams(tmp_path / "a.jams")["note_midi"]
    assert track.names[0] == "event 0" and track.starts.tolist() == [t for t, _ in expected]
    # a file written by the jams package itself (beats) reads as points
    other = jams.JAMS()
    other.file_metadata.duration = 3.0
    beat = jams.Annotation(namespace="beat")
    for t in (0.5, 1.0, 1.5):
        beat.append(time=t, duration=0.0, value=1)
    other.annotations.append(beat)
    other.save(str(tmp_path / "b.jams"))
    tr = read_jams(tmp_path / "b.jams")["beat"]
    assert tr.starts.tolist() == [0.5, 1.0, 1.5] and tr.ends.tolist() == tr.starts.tolist()


@pytest.mark.slow
def test_import_labels_from_every_format_as_partial_labels(project, tmp_path, capsys):
    from praatio import textgrid as tgio

    from marginalia.engine import Engine
    (tmp_path / "take.txt").write_text("1.5\t1.5\tchange\n5.0\t5.0\tafter the end\n")
    tg = tgio.Textgrid()
    tg.addTier(tgio.IntervalTier("words", [(0.2, 1.0, "hello"), (1.0, 1.4, "world")], 0, 3.0))
    tg.save(str(tmp_path / "take.TextGrid"), format="long_textgrid", includeBlankSpaces=False)
    write_jams_segments(tmp_path / "take.jams", [0.2, 1.0, 1.4, 1.5, 2.0], duration_s=3.0)
    assert main(["import", str(project), str(tmp_path / "take.txt"), str(tmp_path / "take.TextGrid"),
                 str(tmp_path / "take.jams")]) == 0
    err = capsys.readouterr().err
    assert "1 label(s) not imported" in err and "after the end" in err and "outside the recording" in err
    with Engine.open(project, read_only=True) as eng:
        (item,) = eng.items()
        times = eng.sequence(item.id).positions
        labels = eng.labels(item.id)
    idx = lambda t: int(np.searchsorted(times, t))  # noqa: E731
    bounds = sorted(lab.index for lab in labels if isinstance(lab, BoundaryLabel))
    assert bounds == sorted({idx(1.5), idx(0.2), idx(1.0), idx(1.4), idx(2.0)})
    regions = sorted((lab.start, lab.stop) for lab in labels if isinstance(lab, RegionLabel))
    assert all(lab.kind is RegionKind.SAME for lab in labels if isinstance(lab, RegionLabel))
    assert (idx(0.2), idx(1.0)) in regions and (idx(1.0), idx(1.4)) in regions and (idx(2.0), len(times)) in regions
    # a file contradicting the labels is refused as a whole, naming itself
    write_jams_segments(tmp_path / "bad.jams", [2.5], duration_s=3.0)
    assert main(["import", str(project), str(tmp_path / "bad.jams"), "--item", "take"]) == 1
    assert "bad.jams: the file contradicts the project's labels" in capsys.readouterr().err
    # the same files again add nothing
    assert main(["import", str(project), str(tmp_path / "take.txt"), "-q"]) == 0
    with Engine.open(project, read_only=True) as eng:
        assert len(eng.labels(item.id)) == len(labels)
    # a file naming no item is refused with the items it could have meant
    (tmp_path / "other.txt").write_text("1.0\t1.0\tx\n")
    assert main(["import", str(project), str(tmp_path / "other.txt")]) == 1
    assert "no audio item named 'other'" in capsys.readouterr().err and "take" in err + "take"
    (tmp_path / "x.lab").write_text("1 2 a\n")
    assert main(["import", str(project), str(tmp_path / "x.lab")]) == 2


@pytest.mark.slow
def test_export_every_audio_label_format_then_read_with_the_reference_parsers(project, tmp_path):
    from marginalia.engine import Engine
    with Engine.open(project, read_only=True) as eng:
        (item,) = eng.items()
        pred = eng.prediction(item.id) or eng.predict(item.id)
        times = eng.sequence(item.id).positions
    expected = times[np.minimum(pred.structure.breakpoints, len(times) - 1)].tolist()
    for kind in ("sonic-visualiser", "textgrid", "jams", "audacity"):
        assert main(["export", str(project), "--format", kind, "--out", str(tmp_path / kind), "-q"]) == 0
    sv = np.loadtxt(tmp_path / "sonic-visualiser" / "take.csv", delimiter=",", usecols=0, ndmin=1).tolist()
    assert sv == pytest.approx(expected)
    tg = praatio_textgrid.openTextgrid(str(tmp_path / "textgrid" / "take.TextGrid"), includeEmptyIntervals=True)
    tier = tg.getTier(tg.tierNames[0])
    assert [e.start for e in tier.entries][1:] == pytest.approx([t for t in expected if 0 < t])
    jam = jams.load(str(tmp_path / "jams" / "take.jams"), validate=True)
    assert [o.time for o in jam.annotations[0].data][1:] == pytest.approx(expected)
    # and each file imports back as the same changes
    aud = np.loadtxt(tmp_path / "audacity" / "take.txt", delimiter="\t", usecols=(0, 1), ndmin=2)
    assert aud[:, 0].tolist() == pytest.approx(expected) and aud[:, 1].tolist() == pytest.approx(expected)
    for kind, name in (("sonic-visualiser", "take.csv"), ("textgrid", "take.TextGrid"), ("jams", "take.jams"),
                       ("audacity", "take.txt")):
        with Engine.open(project) as eng:
            eng.import_labels(kind, tmp_path / kind / name)
            got = sorted(lab.index for lab in eng.labels(item.id) if isinstance(lab, BoundaryLabel))
            assert set(pred.structure.breakpoints.tolist()) <= set(got)
            if kind == "audacity":      # point labels: exactly the predicted changes, nothing more
                assert got == sorted(pred.structure.breakpoints.tolist())
            for lab in list(eng.labels(item.id)):
                eng.delete_label(lab.id)


@pytest.mark.slow
def test_alignment_items_export_jams_and_take_event_anchors(tmp_path, capsys):
    from marginalia.engine import Engine
    wav = _tone_wav(tmp_path / "piece.wav")
    write_midi(tmp_path / "piece.mid", _score())
    path = tmp_path / "a.marginalia"
    with Engine.create(path) as eng:
        eng.import_files([wav, tmp_path / "piece.mid"])
        (item,) = eng.items()
        assert item.task == "alignment"
    assert main(["export", str(path), "--format", "jams", "--out", str(tmp_path / "j"), "-q"]) == 0
    jam = jams.load(str(tmp_path / "j" / "piece.jams"), validate=True)
    assert jam.annotations[0].namespace == "note_midi" and len(jam.annotations[0].data) == 5
    (tmp_path / "piece.txt").write_text("0.25\t0.25\tevent 1\n0.5\t0.5\tevent 9\n1.0\t1.0\tno event\n")
    assert main(["import", str(path), str(tmp_path / "piece.txt")]) == 0
    assert "2 label(s) not imported" in capsys.readouterr().err
    with Engine.open(path, read_only=True) as eng:
        (item,) = eng.items()
        (lab,) = eng.labels(item.id)
    assert isinstance(lab, AnchorLabel) and lab.event == 1 and lab.time_s == 0.25
    # our own alignment JAMS imports back as one anchor per event, at the exported times
    with Engine.open(path) as eng:
        eng.delete_label(lab.id)
        added = eng.import_labels("jams", tmp_path / "j" / "piece.jams")
    assert sorted(lab.event for lab in added) == list(range(4))
    onsets = sorted({o.time for o in jam.annotations[0].data})
    assert sorted(lab.time_s for lab in added) == pytest.approx(onsets)
    # and so does its Audacity track: the labels name the events, from event 0
    assert main(["export", str(path), "--format", "audacity", "--out", str(tmp_path / "a"), "-q"]) == 0
    lines = (tmp_path / "a" / "piece.txt").read_text().splitlines()
    assert [ln.split("\t")[2] for ln in lines] == [f"event {e}" for e in range(4)]
    with Engine.open(path) as eng:
        for lab in list(eng.labels(item.id)):
            eng.delete_label(lab.id)
        back = eng.import_labels("audacity", tmp_path / "a" / "piece.txt")
    written = [(int(ln.split("\t")[2].split()[1]), float(ln.split("\t")[0])) for ln in lines]
    assert sorted((lab.event, lab.time_s) for lab in back) == written


def test_jams_reader_refuses_what_is_not_jams(tmp_path):
    from marginalia.exceptions import DataFormatError
    (tmp_path / "x.jams").write_text("{not json")
    with pytest.raises(DataFormatError, match="not JSON"):
        read_jams(tmp_path / "x.jams")
    (tmp_path / "y.jams").write_text(json.dumps({"a": 1}))
    with pytest.raises(DataFormatError, match="no 'annotations'"):
        read_jams(tmp_path / "y.jams")


@pytest.mark.slow
def test_labels_from_standard_input_need_their_format_and_item(project, capsys, monkeypatch):
    import io
    import sys

    from marginalia.cli_commands import _common
    from marginalia.engine import Engine

    class _Stdin:
        buffer = io.BytesIO(b"1.5\t1.5\tchange\n")

    _common._stdin_copy.clear()
    monkeypatch.setattr(sys, "stdin", _Stdin())
    assert main(["import", str(project), "-"]) == 2
    assert "--format" in capsys.readouterr().err
    assert main(["import", str(project), "-", "--format", "audacity", "--item", "take", "-q"]) == 0
    _common._stdin_copy.clear()
    with Engine.open(project, read_only=True) as eng:
        (item,) = eng.items()
        (lab,) = eng.labels(item.id)
    assert isinstance(lab, BoundaryLabel)
