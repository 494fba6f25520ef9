"""MusicXML scores through partitura (the [music] extra), on scores written here."""

import zipfile

import numpy as np
import pytest

from marginalia.exceptions import DataFormatError, MissingExtraError

pytest.importorskip("partitura")

from marginalia.io.midi import read_midi, write_midi  # noqa: E402
from marginalia.io.musicxml import read_musicxml, read_score  # noqa: E402


def _note(step, octave, duration=2, chord=False):
    return (f"<note>{'<chord/>' if chord else ''}<pitch><step>{step}</step><octave>{octave}</octave></pitch>"
            f"<duration>{duration}</duration><type>quarter</type></note>")


def _xml(measures_p1, measures_p2=None, tempo=90, repeat=False):
    def part(pid, measures):
        out = [f'<part id="{pid}">']
        for k, notes in enumerate(measures, 1):
            out.append(f'<measure number="{k}">')
            if k == 1:
                out.append("<attributes><divisions>2</divisions><time><beats>2</beats><beat-type>4</beat-type></time>"
                           "</attributes>")
                if pid == "P1":
                    out.append(f'<direction placement="above"><direction-type><words>Andante</words></direction-type>'
                               f'<sound tempo="{tempo}"/></direction>')
                if repeat:
                    out.append('<barline location="left"><repeat direction="forward"/></barline>')
            out.extend(notes)
            if repeat and k == len(measures):
                out.append('<barline location="right"><bar-style>light-heavy</bar-style>'
                           '<repeat direction="backward"/></barline>')
            out.append("</measure>")
        out.append("</part>")
        return "".join(out)

    plist = '<score-part id="P1"><part-name>Violin</part-name></score-part>'
    if measures_p2:
        plist += '<score-part id="P2"><part-name>Cello</part-name></score-part>'
    body = part("P1", measures_p1) + (part("P2", measures_p2) if measures_p2 else "")
    return ('<?xml version="1.0" encoding="UTF-8"?><score-partwise version="3.1">'
            f"<part-list>{plist}</part-list>{body}</score-partwise>")


def test_notes_parts_and_seconds_from_the_tempo_mark(tmp_path):
    p = tmp_path / "duo.musicxml"
    p.write_text(_xml([[_note("C", 5), _note("D", 5)], [_note("E", 5), _note("G", 5, chord=True), _note("F", 5)]],
                      [[_note("C", 3, 4)], [_note("G", 2, 4)]], tempo=90))
    s = read_musicxml(p)
    got = sorted(zip(s.onsets_beats.tolist(), s.pitches.tolist(), s.tracks.tolist()))
    assert got == [(0.0, 48, 1), (0.0, 72, 0), (1.0, 74, 0), (2.0, 43, 1), (2.0, 76, 0), (2.0, 79, 0), (3.0, 77, 0)]
    assert s.onsets_s == pytest.approx(s.onsets_beats * 60 / 90)          # 90 quarters per minute
    assert s.offsets_beats.max() == 4.0 and s.meta["parts"] == ("Violin", "Cello")
    assert s.meta["time_signatures"] == ((0.0, 2, 4),) and s.n_events == 4
    # the same score as compressed MusicXML
    mxl = tmp_path / "duo.mxl"
    with zipfile.ZipFile(mxl, "w") as z:
        z.writestr("META-INF/container.xml", '<?xml version="1.0"?><container><rootfiles>'
                   '<rootfile full-path="duo.musicxml"/></rootfiles></container>')
        z.writestr("duo.musicxml", p.read_text())
    assert read_score(mxl).pitches.tolist() == s.pitches.tolist()
    # written as MIDI, it reads back with the same notes and times (mido parses it)
    write_midi(tmp_path / "duo.mid", s)
    back = read_midi(tmp_path / "duo.mid")
    assert back.pitches.tolist() == s.pitches.tolist()
    assert back.onsets_s == pytest.approx(s.onsets_s, abs=2e-3)


def test_repeats_are_read_as_written_or_unfolded(tmp_path):
    p = tmp_path / "rep.musicxml"
    p.write_text(_xml([[_note("C", 4), _note("D", 4)], [_note("E", 4), _note("F", 4)]], repeat=True))
    from marginalia.io.musicxml import RepeatsWarning
    with pytest.warns(RepeatsWarning, match="1 repeat sign.*read as written") as caught:
        written = read_musicxml(p)
    assert len([w for w in caught if issubclass(w.category, RepeatsWarning)]) == 1
    assert written.n_notes == 4 and written.meta["repeats"] == {"mode": "written", "repeat_signs": 1}
    unfolded = read_musicxml(p, repeats="unfold")
    assert unfolded.n_notes == 8 and unfolded.pitches.tolist() == [60, 62, 64, 65] * 2
    assert np.all(np.diff(unfolded.onsets_s) > 0)


def test_bad_scores_name_the_file_and_line(tmp_path, monkeypatch):
    p = tmp_path / "cut.musicxml"
    p.write_text(_xml([[_note("C", 4)]])[:-40])
    with pytest.raises(DataFormatError, match=r"cut.musicxml, line 1, column \d+: not well-formed XML"):
        read_musicxml(p)
    empty = tmp_path / "empty.musicxml"
    empty.write_text(_xml([["<note><rest/><duration>4</duration></note>"]]))
    with pytest.raises(DataFormatError, match="no notes"):
        read_musicxml(empty)
    import importlib.util
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "partitura" else real(name, *a))
    with pytest.raises(MissingExtraError, match="music"):
        read_musicxml(tmp_path / "rep.musicxml" if (tmp_path / "rep.musicxml").exists() else empty)


@pytest.mark.slow
def test_audio_with_a_musicxml_score_is_an_alignment_item(tmp_path):
    from marginalia.engine import Engine
    from marginalia.io import write_wav
    t = np.arange(22050 * 2) / 22050
    write_wav(tmp_path / "duo.wav", (0.2 * np.sin(2 * np.pi * 440 * t)).astype(np.float32), 22050)
    (tmp_path / "duo.musicxml").write_text(_xml([[_note("C", 5), _note("D", 5)], [_note("E", 5), _note("F", 5)]]))
    with Engine.create(tmp_path / "p.marginalia") as eng:
        eng.import_files([tmp_path / "duo.wav", tmp_path / "duo.musicxml"])
        (item,) = eng.items()
        assert item.task == "alignment"
        assert eng.data(item.id).score.n_events == 4


def test_a_damaged_note_is_named_by_part_and_measure(tmp_path):
    p = tmp_path / "bad.musicxml"
    p.write_text(_xml([[_note("C", 5), _note("D", 5)], [_note("H", 5), _note("F", 5)]],
                      [[_note("C", 3, 4)], [_note("G", 2, 4)]]))
    with pytest.raises(DataFormatError, match=r"bad.musicxml, part P1 \(Violin\), measure 2: a note's pitch step "
                                              r"is 'H'; expected A to G"):
        read_musicxml(p)
    q = tmp_path / "dur.musicxml"
    q.write_text(_xml([[_note("C", 5)]], [[_note("C", 3, 4)], [_note("G", 2, "x")]]))
    with pytest.raises(DataFormatError, match=r"part P2 \(Cello\), measure 2: a note's duration is 'x'"):
        read_musicxml(q)


@pytest.mark.parametrize("divisions, message", [("0", "<divisions> is '0'"), ("two", "<divisions> is 'two'"),
                                                ("1.5", "<divisions> is '1.5'")])
def test_bad_divisions_are_named_by_part_and_measure(tmp_path, divisions, message):
    p = tmp_path / "div.musicxml"
    xml = _xml([[_note("C", 4), _note("D", 4)], [_note("E", 4), _note("F", 4)]], [[_note("C", 3, 4)], [_note("G", 2, 4)]])
    # the second part's first measure says its divisions wrongly: partitura would read every duration wrong
    head, tail = xml.split('<part id="P2">', 1)
    p.write_text(head + '<part id="P2">' + tail.replace("<divisions>2</divisions>", f"<divisions>{divisions}</divisions>", 1))
    with pytest.raises(DataFormatError) as info:
        read_musicxml(p)
    assert str(info.value).startswith(f"{p}, part P2 (Cello), measure 1: {message}")


def test_a_score_without_divisions_or_with_impossible_durations_is_one_line(tmp_path):
    p = tmp_path / "nodiv.musicxml"
    p.write_text(_xml([[_note("C", 4), _note("D", 4)]]).replace("<divisions>2</divisions>", ""))
    with pytest.raises(DataFormatError, match=r"nodiv.musicxml, part P1 \(Violin\), measure 1: a note has a "
                                              "duration before any <divisions>"):
        read_musicxml(p)
    q = tmp_path / "neg.musicxml"
    q.write_text(_xml([[_note("C", 4), _note("D", 4, -2)]]))
    with pytest.raises(DataFormatError, match=r"neg.musicxml, part P1 \(Violin\), measure 1: a note's duration"):
        read_musicxml(q)


def test_cli_names_a_damaged_score_in_one_line(tmp_path, capsys):
    from marginalia.cli import main
    from marginalia.io import write_wav
    t = np.arange(22050) / 22050
    write_wav(tmp_path / "duo.wav", (0.2 * np.sin(2 * np.pi * 440 * t)).astype(np.float32), 22050)
    (tmp_path / "duo.musicxml").write_text(_xml([[_note("C", 5), _note("D", 5)]]).replace(
        "<divisions>2</divisions>", "<divisions>0</divisions>"))
    code = main(["project", "create", str(tmp_path / "p.marginalia"), "--import", str(tmp_path / "duo.wav"),
                 str(tmp_path / "duo.musicxml")])
    err = capsys.readouterr().err
    assert code == 1 and "Traceback" not in err
    (line,) = [ln for ln in err.splitlines() if "error" in ln]
    assert "duo.musicxml, part P1 (Violin), measure 1: <divisions> is '0'" in line


KERN = ("**kern\t**kern\n*M2/4\t*M2/4\n*MM90\t*MM90\n=1\t=1\n4C\t4c\n4D\t4d\n=2\t=2\n4E\t4e\n4F\t4f\n"
        "==\t==\n*-\t*-\n")


def _mei(notes):
    body = "".join(f'<note xml:id="n{k}" pname="{p}" oct="4" dur="4"/>' for k, p in enumerate(notes))
    return ('<?xml version="1.0" encoding="UTF-8"?><mei xmlns="http://www.music-encoding.org/ns/mei" meiversion="4.0.1">'
            '<meiHead><fileDesc><titleStmt><title>t</title></titleStmt><pubStmt/></fileDesc></meiHead>'
            '<music><body><mdiv xml:id="d1"><score xml:id="s1"><scoreDef xml:id="sd" meter.count="2" meter.unit="4" '
            'key.sig="0"><staffGrp xml:id="g"><staffDef xml:id="f" n="1" lines="5" clef.shape="G" clef.line="2"/>'
            '</staffGrp></scoreDef><section xml:id="x"><measure xml:id="m1" n="1"><staff xml:id="t1" n="1">'
            f'<layer xml:id="l1" n="1">{body}</layer></staff></measure></section></score></mdiv></body></music></mei>')


def test_kern_and_mei_read_like_the_same_musicxml(tmp_path):
    (tmp_path / "duo.krn").write_text(KERN)
    kern = read_score(tmp_path / "duo.krn")
    xml = tmp_path / "duo.musicxml"
    xml.write_text(_xml([[_note("C", 4), _note("D", 4)], [_note("E", 4), _note("F", 4)]],
                        [[_note("C", 3), _note("D", 3)], [_note("E", 3), _note("F", 3)]]))
    ref = read_musicxml(xml)
    key = lambda sc: sorted(zip(sc.onsets_beats.tolist(), sc.pitches.tolist()))  # noqa: E731
    assert key(kern) == key(ref) and kern.meta["format"] == "kern"
    assert kern.onsets_s.tolist() == pytest.approx(ref.onsets_s.tolist())        # both at 90 quarters a minute
    (tmp_path / "solo.mei").write_text(_mei("cdef"))
    mei = read_score(tmp_path / "solo.mei")
    assert mei.pitches.tolist() == [60, 62, 64, 65] and mei.onsets_beats.tolist() == [0.0, 1.0, 2.0, 3.0]
    assert mei.meta["format"] == "mei"


def test_damaged_kern_and_mei_are_one_line_naming_the_file(tmp_path):
    bad = tmp_path / "cut.mei"
    bad.write_text(_mei("cd")[:-30])
    with pytest.raises(DataFormatError, match=r"cut.mei, line 1, column \d+: not well-formed XML"):
        read_score(bad)
    odd = tmp_path / "odd.mei"
    odd.write_text(_mei("cd").replace(' xml:id="n0"', ""))      # partitura needs an id on every note
    with pytest.raises(DataFormatError, match=r"odd.mei: partitura cannot read this MEI score"):
        read_score(odd)
    k = tmp_path / "bad.krn"
    k.write_text("**kern\n4Q\n*-\n")
    with pytest.raises(DataFormatError, match=r"bad.krn: "):
        read_score(k)
