"""Generic series CSV round trips and bad tables; file-kind sniffing."""

import gzip

import mido
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from marginalia.exceptions import DataFormatError, ParameterError
from marginalia.io import audio, read_series, sniff_kind, write_series
from marginalia.types import Sequence


@settings(max_examples=25)
@given(hnp.arrays(np.float64, st.tuples(st.integers(1, 8), st.integers(1, 3)),
                  elements=st.floats(-1e9, 1e9, allow_nan=False, allow_subnormal=False)),
       st.sampled_from([",", "\t", ";"]))
def test_series_round_trip_exact(tmp_path_factory, values, delimiter):
    seq = Sequence(values=values, positions=np.arange(values.shape[0]) * 0.1, units="s",
                   feature_names=tuple(f"f{j}" for j in range(values.shape[1])))
    p = tmp_path_factory.mktemp("ser") / "s.csv"
    write_series(p, seq, delimiter=delimiter)
    back = read_series(p)
    np.testing.assert_array_equal(back.values, seq.values)
    np.testing.assert_array_equal(back.positions, seq.positions)
    assert back.feature_names == seq.feature_names and back.units == "s"


def test_named_time_column_text_columns_and_headerless(tmp_path):
    p = tmp_path / "a.tsv"
    p.write_text("label\tx\ttime\ty\nA\t1\t0.5\t2\nB\t3\t0.75\t4\n")
    s = read_series(p, time_column="time")
    np.testing.assert_array_equal(s.positions, [0.5, 0.75])
    np.testing.assert_array_equal(s.values, [[1, 2], [3, 4]])
    assert s.feature_names == ("x", "y") and s.meta["skipped_columns"] == ("label",) and s.units == "s"
    q = tmp_path / "b.txt"
    q.write_text("1 10 100\n2 20 200\n")
    s = read_series(q, time_column=False)
    np.testing.assert_array_equal(s.positions, [0, 1])
    np.testing.assert_array_equal(s.values, [[1, 10, 100], [2, 20, 200]])


@pytest.mark.parametrize("text, kwargs, where, match", [
    ("", {}, None, "empty"),
    ("t,x\n", {}, None, "no data rows"),
    ("t,x\n0,1\n1,\n", {}, "line 3, column x", "empty value"),
    ("t,x\n0,1\n1,abc\n", {}, "line 3, column x", "'abc' is not a number"),
    ("t,x\n0,1\n1,nan\n", {}, "line 3, column x", "not finite"),
    ("t,x\n0,1\n2,1\n1,1\n", {}, "line 4, column t", "goes back"),
    ("t,x\n0,1\n1,2,3\n", {}, "line 3", "found 3 fields"),
    ("t,name\n0,a\n", {}, None, "no numeric column"),
    ("t,x\n0,1\n", {"time_column": "time"}, "line 1", "no column named 'time'"),
])
def test_bad_series(tmp_path, text, kwargs, where, match):
    p = tmp_path / "s.csv"
    p.write_text(text)
    with pytest.raises(DataFormatError, match=match) as info:
        read_series(p, **kwargs)
    assert info.value.where == where


def test_series_argument_validation(tmp_path):
    with pytest.raises(ParameterError, match="time_column"):
        read_series(tmp_path / "x.csv", time_column=True)
    with pytest.raises(ParameterError, match="delimiter"):
        write_series(tmp_path / "x.csv", Sequence(values=[1.0]), delimiter="x")


def test_sniff_kind(tmp_path):
    files = {
        "p.csv": "profile.id,chromosome,position,logratio\n1,1,5,0.1\n",
        "a.csv": "profile.id,chromosome,min,max,annotation\n1,1,5,9,normal\n",
        "s.csv": "time,x\n0,1\n1,2\n",
        "l.txt": "0.5\t1.5\tverse\n2\t3\tchorus\n",
        "g.TextGrid": 'File type = "ooTextFile"\nObject class = "TextGrid"\n',
    }
    for name, text in files.items():
        (tmp_path / name).write_text(text)
    with gzip.open(tmp_path / "p.csv.gz", "wt") as fh:
        fh.write(files["p.csv"])
    audio.write_wav(tmp_path / "w.wav", np.zeros(100), 8000)
    mf = mido.MidiFile()
    mf.tracks.append(mido.MidiTrack())
    mf.save(str(tmp_path / "m.mid"))
    got = {name: sniff_kind(tmp_path / name) for name in [*files, "p.csv.gz", "w.wav", "m.mid"]}
    assert got == {"p.csv": "cgh", "a.csv": "cgh_annotations", "s.csv": "series", "l.txt": "labels",
                   "g.TextGrid": "labels", "p.csv.gz": "cgh", "w.wav": "audio", "m.mid": "midi"}
    (tmp_path / "e.csv").write_text("")
    with pytest.raises(DataFormatError, match="empty"):
        sniff_kind(tmp_path / "e.csv")
    (tmp_path / "b.bin").write_bytes(bytes(range(256)))
    with pytest.raises(DataFormatError, match="binary"):
        sniff_kind(tmp_path / "b.bin")
    (tmp_path / "t.txt").write_text("hello world\nthis is prose\n")
    with pytest.raises(DataFormatError, match="cannot tell"):
        sniff_kind(tmp_path / "t.txt")


def test_sniff_table_with_text_and_number_columns_is_a_series(tmp_path):
    p = tmp_path / "gt.csv"
    p.write_text("label,score_id,pitch,onset\nmatch,n1,59,0.0\ninsertion,n2,60,0.5\n")
    assert sniff_kind(p) == "series"
    s = read_series(p, time_column="onset")
    assert s.feature_names == ("pitch",) and s.meta["skipped_columns"] == ("label", "score_id")


@settings(max_examples=20)
@given(hnp.arrays(np.float64, st.tuples(st.integers(1, 6), st.integers(1, 3)),
                  elements=st.floats(-1e6, 1e6, allow_nan=False).map(lambda x: round(x, 3))),
       st.sampled_from([",", "\t", " "]))
def test_byte_scanner_and_csv_module_paths_agree(tmp_path_factory, values, delim):
    d = tmp_path_factory.mktemp("paths")
    body = "".join(f"{i * 0.5}{delim}" + delim.join(f"{v:.3f}" for v in row) + "\n" for i, row in enumerate(values))
    header = delim.join(["t"] + [f"x{j}" for j in range(values.shape[1])]) + "\n"
    (d / "plain.csv").write_text(header + body)                    # byte scanner (space: csv module)
    (d / "commented.csv").write_text("# made by a test\n" + header + body)  # csv module
    a, b = read_series(d / "plain.csv"), read_series(d / "commented.csv")
    np.testing.assert_array_equal(a.values, b.values)
    np.testing.assert_array_equal(a.positions, b.positions)
    np.testing.assert_allclose(a.values, np.round(values, 3))


@pytest.mark.parametrize("delim", [",", " "])
def test_large_series_beyond_the_sniffing_window(tmp_path, delim):
    n = 20_000  # ~300 KB: the header is sniffed from the first 64 KB, the rest is scanned
    t = (np.arange(n) * 0.01).tolist()
    x = np.sin(t).tolist()
    p = tmp_path / "big.csv"
    p.write_text(f"time{delim}x\n" + "".join(f"{a!r}{delim}{b!r}\n" for a, b in zip(t, x)))
    s = read_series(p)
    np.testing.assert_array_equal(s.positions, t)
    np.testing.assert_array_equal(s.values[:, 0], x)
    text = p.read_text().replace(f"{t[15000]!r}{delim}", f"{t[15000]!r}{delim}oops", 1)
    p.write_text(text)
    with pytest.raises(DataFormatError, match="not a number") as info:
        read_series(p)
    assert info.value.where == "line 15002, column x"
