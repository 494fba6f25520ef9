"""Audacity, Sonic Visualiser and TextGrid label tracks: round trips, known layouts, bad files."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from marginalia.exceptions import DataFormatError, ParameterError
from marginalia.io import labels_audio as la

_times = st.lists(st.floats(0, 1e4, allow_nan=False), min_size=2, max_size=10).map(sorted)
_names = st.text(st.characters(blacklist_categories=("Cs", "Cc")), max_size=8)


@pytest.mark.slow
@settings(max_examples=30)
@given(_times, st.booleans(), st.data())
def test_audacity_round_trip(tmp_path_factory, times, regions, data):
    n = len(times) - 1 if regions else len(times)
    names = data.draw(st.lists(_names.filter(lambda s: s.strip() == s), min_size=n, max_size=n))
    p = tmp_path_factory.mktemp("aud") / "l.txt"
    la.write_audacity_labels(p, times, names, regions=regions)
    t = la.read_audacity_labels(p)
    starts, ends = (times[:-1], times[1:]) if regions else (times, times)
    assert t.starts.tolist() == starts and t.ends.tolist() == ends and list(t.names) == names


def test_audacity_layout_and_default_names(tmp_path):
    la.write_audacity_labels(tmp_path / "a.txt", [0.5, 1.25, 3.0], regions=True)
    assert (tmp_path / "a.txt").read_text() == "0.5\t1.25\t1\n1.25\t3\t2\n"
    la.write_audacity_labels(tmp_path / "b.txt", np.array([0.5, 1.25]))
    assert (tmp_path / "b.txt").read_text() == "0.5\t0.5\t1\n1.25\t1.25\t2\n"


def test_audacity_reader_skips_spectral_lines_and_rejects_bad_lines(tmp_path):
    p = tmp_path / "l.txt"
    p.write_text("1.0\t2.0\tverse\n\\\t100.0\t2000.0\n2.5\t2.5\n")
    t = la.read_audacity_labels(p)
    assert t.starts.tolist() == [1.0, 2.5] and t.names == ("verse", "")
    p.write_text("1.0\t2.0\tok\n3.0\tx\tbad\n")
    with pytest.raises(DataFormatError, match="'x' is not a time") as info:
        la.read_audacity_labels(p)
    assert info.value.where == "line 2"
    p.write_text("3.0\t2.0\tback\n")
    with pytest.raises(DataFormatError, match="before start"):
        la.read_audacity_labels(p)


def test_writer_validation(tmp_path):
    with pytest.raises(ParameterError, match="non-decreasing"):
        la.write_audacity_labels(tmp_path / "x.txt", [2.0, 1.0])
    with pytest.raises(ParameterError, match="expected 2 names"):
        la.write_audacity_labels(tmp_path / "x.txt", [1.0, 2.0], ["a"])
    with pytest.raises(ParameterError, match="tab or line break"):
        la.write_audacity_labels(tmp_path / "x.txt", [1.0], ["a\tb"])
    with pytest.raises(ParameterError, match="at least 2"):
        la.write_audacity_labels(tmp_path / "x.txt", [1.0], regions=True)


def test_sonic_visualiser_round_trip_and_layouts(tmp_path):
    la.write_sonic_visualiser_csv(tmp_path / "p.csv", [0.25, 1.0], ["a, b", "c"])
    assert (tmp_path / "p.csv").read_text() == '0.25,"a, b"\n1,c\n'
    t = la.read_sonic_visualiser_csv(tmp_path / "p.csv")
    assert t.starts.tolist() == [0.25, 1.0] and t.ends.tolist() == [0.25, 1.0] and t.names == ("a, b", "c")
    la.write_sonic_visualiser_csv(tmp_path / "r.csv", [0.5, 2.0, 2.5], regions=True)
    t = la.read_sonic_visualiser_csv(tmp_path / "r.csv")
    assert t.starts.tolist() == [0.5, 2.0] and t.ends.tolist() == [2.0, 2.5]
    (tmp_path / "v.csv").write_text("1.5,0.3,0.5,chorus\n")  # time,value,duration,label
    t = la.read_sonic_visualiser_csv(tmp_path / "v.csv")
    assert t.starts.tolist() == [1.5] and t.ends.tolist() == [2.0] and t.names == ("chorus",)


def test_textgrid_round_trip_and_short_format(tmp_path):
    p = tmp_path / "g.TextGrid"
    la.write_textgrid(p, [0.0, 1.5, 2.25, 4.0], ["sil", 'say "hi"', "end"], end_s=4.0, tier_name="words")
    tiers = la.read_textgrid(p)
    t = tiers["words"]
    assert t.starts.tolist() == [0.0, 1.5, 2.25] and t.ends.tolist() == [1.5, 2.25, 4.0]
    assert t.names == ("sil", 'say "hi"', "end")
    short = ('File type = "ooTextFile"\nObject class = "TextGrid"\n\n0\n3\n<exists>\n2\n'
             '"IntervalTier"\n"a"\n0\n3\n2\n0\n1\n"x"\n1\n3\n""\n'
             '"TextTier"\n"b"\n0\n3\n1\n2.5\n"beat"\n')
    (tmp_path / "s.TextGrid").write_text(short)
    tiers = la.read_textgrid(tmp_path / "s.TextGrid")
    assert tiers["a"].ends.tolist() == [1.0, 3.0] and tiers["a"].names == ("x", "")
    assert tiers["b"].starts.tolist() == [2.5] and tiers["b"].names == ("beat",)


def test_textgrid_bad_files(tmp_path):
    p = tmp_path / "bad.TextGrid"
    p.write_text("hello\n")
    with pytest.raises(DataFormatError, match="not a Praat TextGrid"):
        la.read_textgrid(p)
    la.write_textgrid(p, [1.0], end_s=2.0)
    p.write_text(p.read_text()[:-40])
    with pytest.raises(DataFormatError, match="truncated"):
        la.read_textgrid(p)
    with pytest.raises(ParameterError, match="end_s"):
        la.write_textgrid(p, [1.0], end_s=0.0)


def test_textgrid_in_utf16_as_praat_saves_it(tmp_path):
    from marginalia.io import sniff_kind
    p = tmp_path / "u.TextGrid"
    la.write_textgrid(p, [1.0], ["día", "noche"], end_s=2.0, tier_name="palabras")
    p.write_bytes(p.read_text(encoding="utf-8").encode("utf-16"))
    assert sniff_kind(p) == "labels"
    assert la.read_textgrid(p)["palabras"].names == ("día", "noche")
