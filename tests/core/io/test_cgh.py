"""aCGH tables: round trips, the fast scanner against the csv-module reader, and every bad input."""

import gzip
import math
import warnings

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from marginalia.exceptions import DataFormatError, ParameterError
from marginalia.io import _csvscan, cgh
from marginalia.types import RegionKind, RegionLabel, Segmentation, Sequence

HEADER = "profile.id,chromosome,position,logratio\n"


def _write(tmp_path, name, text):
    p = tmp_path / name
    p.write_text(text, encoding="utf-8")
    return p


def _profiles(tmp_path):
    rows = []
    for pid in ("1", "7"):
        for chrom in ("2", "X"):
            for i in range(6):
                rows.append(f"{pid},{chrom},{(i + 1) * 1000},{0.1 * i - (0.5 if chrom == 'X' else 0):.3f}\n")
    return _write(tmp_path, "profiles.csv", HEADER + "".join(rows))


# ------------------------------------------------------------------ profiles


def test_read_profiles_groups_and_fields(tmp_path):
    seqs = cgh.read_profiles(_profiles(tmp_path))
    assert [s.name for s in seqs] == ["1:2", "1:X", "7:2", "7:X"]
    s = seqs[1]
    assert s.kind == "cgh" and s.units == "bp" and s.group == "X"
    assert s.meta["profile_id"] == "1" and s.meta["chromosome"] == "X"
    assert s.meta["source"].endswith("profiles.csv")
    np.testing.assert_array_equal(s.positions, [1000, 2000, 3000, 4000, 5000, 6000])
    np.testing.assert_allclose(s.values[:, 0], [-0.5, -0.4, -0.3, -0.2, -0.1, 0.0])


def test_gzip_tab_separated_with_extra_columns(tmp_path):
    text = "probe\tprofile.id\tchromosome\tposition\tlogratio\n" \
           "a\t3\t1\t10\t0.5\nb\t3\t1\t20\t-0.25\n"
    p = tmp_path / "p.tsv.gz"
    with gzip.open(p, "wt") as fh:
        fh.write(text)
    (s,) = cgh.read_profiles(p)
    assert s.name == "3:1"
    np.testing.assert_array_equal(s.values[:, 0], [0.5, -0.25])


def test_rows_of_a_sequence_need_not_be_contiguous(tmp_path):
    p = _write(tmp_path, "p.csv", HEADER + "1,1,10,0.1\n1,2,10,0.2\n1,1,20,0.3\n")
    seqs = cgh.read_profiles(p)
    assert [s.name for s in seqs] == ["1:1", "1:2"]
    np.testing.assert_array_equal(seqs[0].values[:, 0], [0.1, 0.3])


def test_unsorted_positions_are_sorted_with_a_warning(tmp_path):
    p = _write(tmp_path, "p.csv", HEADER + "1,1,30,3\n1,1,10,1\n1,1,20,2\n")
    with pytest.warns(cgh.UnsortedPositionsWarning, match="1:1"):
        (s,) = cgh.read_profiles(p)
    np.testing.assert_array_equal(s.positions, [10, 20, 30])
    np.testing.assert_array_equal(s.values[:, 0], [1, 2, 3])


def test_duplicate_positions_are_all_kept_in_file_order(tmp_path):
    p = _write(tmp_path, "p.csv", HEADER + "1,1,10,1\n1,1,20,2\n1,1,20,5\n1,1,30,3\n")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        (s,) = cgh.read_profiles(p)
    np.testing.assert_array_equal(s.positions, [10, 20, 20, 30])
    np.testing.assert_array_equal(s.values[:, 0], [1, 2, 5, 3])


def test_quoted_csv_as_written_by_r(tmp_path):
    p = _write(tmp_path, "p.csv", '"profile.id","chromosome","position","logratio"\n"1","3",5,"0.5"\n"1","3",9,-1\n')
    (s,) = cgh.read_profiles(p)
    assert s.name == "1:3"
    np.testing.assert_array_equal(s.values[:, 0], [0.5, -1.0])


_number_text = st.one_of(
    st.floats(allow_nan=False, allow_infinity=False, width=64).map(repr),
    st.floats(-1e6, 1e6, allow_nan=False).map(lambda x: f"{x:.6f}"),
    st.floats(-1e6, 1e6, allow_nan=False).map(lambda x: f"{x:.4e}"),
    st.integers(-10**20, 10**20).map(str),
    st.sampled_from(["0", "-0", ".5", "5.", "+3", "1E5", "00012.50", " 7 ", "1e-30", "123456789012345678"]),
)


@pytest.mark.slow
@settings(max_examples=300)
@given(_number_text)
def test_kernel_number_parser_agrees_with_float(text):
    v = _csvscan.parse_decimal(text)
    if v is not None:  # None means 'Python decides'; when the kernel answers it must be exact
        assert v == float(text) and math.copysign(1, v) == math.copysign(1, float(text))


@pytest.mark.parametrize("text, value", [("0.125", 0.125), ("-12.5", -12.5), ("00012.50", 12.5), (".5", 0.5),
                                         ("5.", 5.0), ("+3", 3.0), ("1E5", 1e5), ("9007199254740991", 2.0 ** 53 - 1),
                                         ("0.0000000000000000012345", float("0.0000000000000000012345"))])
def test_kernel_number_parser_answers_common_numbers_itself(text, value):
    assert _csvscan.parse_decimal(text) == value


@pytest.mark.parametrize("text", ["", ".", "-", "1.2.3", "1e", "9007199254740993", "1.23456789012345678", "nan"])
def test_kernel_number_parser_leaves_the_rest_to_python(text):
    assert _csvscan.parse_decimal(text) is None


@settings(max_examples=30)
@given(st.lists(st.tuples(st.sampled_from(["1", "2", "10", '"2"', '"10"']), st.sampled_from(["1", "X", '"X"']),
                          st.integers(1, 50), _number_text, st.sampled_from(["", "a", '"b"', '"c,d"'])),
                min_size=1, max_size=25))
@pytest.mark.slow
def test_fast_reader_equals_csv_module_reader(tmp_path_factory, rows):
    p = tmp_path_factory.mktemp("fast") / "p.csv"
    p.write_text(HEADER.strip() + ",note\n" + "".join(f"{a},{b},{c},{d},{e}\n" for a, b, c, d, e in rows))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", cgh.UnsortedPositionsWarning)
        fast = cgh.read_profiles(p)
        slow = cgh.read_profiles(p, _force_python=True)
    assert [s.name for s in fast] == [s.name for s in slow]
    for a, b in zip(fast, slow):
        np.testing.assert_array_equal(a.positions, b.positions)
        np.testing.assert_array_equal(a.values, b.values)


@settings(max_examples=20)
@given(st.lists(st.lists(st.floats(-5, 5, allow_nan=False), min_size=1, max_size=8), min_size=1, max_size=4))
def test_write_then_read_profiles_round_trip(tmp_path_factory, chroms):
    seqs = [Sequence(values=v, positions=np.arange(len(v)) * 100.0 + 1, name=f"9:{k + 1}", units="bp",
                     kind="cgh", meta={"profile_id": "9", "chromosome": str(k + 1)}) for k, v in enumerate(chroms)]
    p = tmp_path_factory.mktemp("rt") / "p.csv"
    cgh.write_profiles(p, seqs)
    back = cgh.read_profiles(p)
    assert [s.name for s in back] == [s.name for s in seqs]
    for a, b in zip(seqs, back):
        np.testing.assert_array_equal(a.values, b.values)
        np.testing.assert_array_equal(a.positions, b.positions)


@pytest.mark.parametrize("force_python", [False, True])
@pytest.mark.parametrize("text, where, match", [
    ("", None, "empty"),
    ("\n  \n", None, "empty"),
    (HEADER, None, "no data rows"),
    ("profile.id,chromosome,position\n1,1,5\n", "line 1", "missing column 'logratio'"),
    ("profile.id,chromosome,probe,log_ratio\n1,1,5,0.1\n", "line 1", "missing column 'position'.*--columns"),
    (HEADER + "1,1,5,0.1\n1,1,6,abc\n", "line 3, column logratio", "'abc' is not a number"),
    (HEADER + "1,1,5,0.1\n\n1,1,6,NA\n", "line 4, column logratio", "'NA' is not a number"),
    (HEADER + "1,1,5,NaN\n", "line 2, column logratio", "finite"),
    (HEADER + "1,1,5,-inf\n", "line 2, column logratio", "finite"),
    (HEADER + "1,1,five,1\n", "line 2, column position", "not a number"),
    (HEADER + "1,1,5,0.1\n1,1,6\n", "line 3", "found 3 fields, expected 4"),
    (HEADER + "1,1,5,0.1,7\n", "line 2", "found 5 fields"),
])
def test_bad_profile_tables(tmp_path, text, where, match, force_python):
    p = _write(tmp_path, "bad.csv", text)
    with pytest.raises(DataFormatError, match=match) as info:
        cgh.read_profiles(p, _force_python=force_python)
    assert info.value.path == str(p)
    assert info.value.where == where


def test_missing_file_and_binary_file(tmp_path):
    with pytest.raises(DataFormatError, match="no such file"):
        cgh.read_profiles(tmp_path / "nope.csv")
    p = tmp_path / "bin.csv"
    p.write_bytes(b"profile.id,chromosome\n\xff\xfe\x00garbage")
    with pytest.raises(DataFormatError, match="not UTF-8"):
        cgh.read_profiles(p)
    with pytest.raises(ParameterError, match="path"):
        cgh.read_profiles(42)


# ------------------------------------------------------------------ annotations


def _seq(name, positions):
    pid, chrom = name.split(":")
    return Sequence(values=np.zeros(len(positions)), positions=positions, name=name, units="bp", kind="cgh",
                    meta={"profile_id": pid, "chromosome": chrom})


SEQS = [_seq("1:2", [100, 200, 300, 400, 500, 600]), _seq("1:X", [10, 20, 30])]
ANN_HEADER = "profile.id,chromosome,min,max,annotation\n"


def test_read_annotations_maps_words_and_probe_ranges(tmp_path):
    p = _write(tmp_path, "a.csv", ANN_HEADER + "1,2,150,400,0breakpoints\n1,2,100,600,1breakpoint\n"
               "1,2,250,700,normal\n1,X,5,30,breakpoint\n1,X,15,30,>0breakpoints\n")
    labels = cgh.read_annotations(p, SEQS)
    got = [(lab.item_id, lab.start, lab.stop, lab.kind, lab.annotation) for lab in labels]
    assert got == [("1:2", 1, 4, RegionKind.ZERO, "0breakpoints"), ("1:2", 0, 6, RegionKind.ONE, "1breakpoint"),
                   ("1:2", 2, 6, RegionKind.ZERO, "normal"), ("1:X", 0, 3, RegionKind.AT_LEAST_ONE, "breakpoint"),
                   ("1:X", 1, 3, RegionKind.AT_LEAST_ONE, ">0breakpoints")]
    assert all(isinstance(lab, RegionLabel) for lab in labels)
    assert labels[0].as_region_label() == RegionLabel(item_id="1:2", id=labels[0].id, created=labels[0].created,
                                                      start=1, stop=4, kind=RegionKind.ZERO)


def test_annotation_round_trip_is_byte_identical_and_value_identical(tmp_path):
    # a "real" file: extra columns, bp bounds between probes
    real = _write(tmp_path, "real.csv", "profile.id,chromosome,min,max,annotation,first.i,last.i\n"
                  "1,2,150,420,0breakpoints,2.0,4.0\n1,X,5,35.5,normal,1.0,3.0\n")
    labels = cgh.read_annotations(real, SEQS)
    out1 = tmp_path / "out1.csv"
    cgh.write_annotations(out1, labels, SEQS)
    assert out1.read_text() == ANN_HEADER + "1,2,150,420,0breakpoints\n1,X,5,35.5,normal\n"
    out2 = tmp_path / "out2.csv"
    cgh.write_annotations(out2, cgh.read_annotations(out1, SEQS), SEQS)
    assert out2.read_bytes() == out1.read_bytes()


@pytest.mark.filterwarnings("ignore::marginalia.io.cgh.DuplicateAnnotationsWarning")   # repeats are expected here
@settings(max_examples=30)
@given(st.lists(st.tuples(st.integers(0, 5), st.integers(1, 6), st.sampled_from(list(RegionKind))),
                min_size=1, max_size=6))
def test_plain_region_labels_survive_write_and_read(tmp_path_factory, spec):
    labels = []
    for a, length, kind in spec:
        stop = min(a + length, 6)
        if kind in (RegionKind.ONE, RegionKind.AT_LEAST_ONE) and stop - a < 2:
            continue
        labels.append(RegionLabel(item_id="1:2", start=a, stop=stop, kind=kind))
    assume(labels)   # a header-only table is refused on reading (tested elsewhere)
    p = tmp_path_factory.mktemp("ann") / "a.csv"
    cgh.write_annotations(p, labels, SEQS)
    back = cgh.read_annotations(p, SEQS)
    same = {RegionKind.SAME: RegionKind.ZERO}
    rows = [(a.start, a.stop, same.get(a.kind, a.kind)) for a in labels]
    # a row repeating an earlier one exactly (a repeated label, or "same" written as "0breakpoints") is read once
    assert [(b.start, b.stop, b.kind) for b in back] == list(dict.fromkeys(rows))


def test_edited_cgh_label_is_written_from_its_probes(tmp_path):
    import dataclasses
    p = _write(tmp_path, "a.csv", ANN_HEADER + "1,2,150,420,normal\n")
    (lab,) = cgh.read_annotations(p, SEQS)
    moved = dataclasses.replace(lab, start=0, kind=RegionKind.ONE)
    out = tmp_path / "o.csv"
    cgh.write_annotations(out, [moved], SEQS)
    assert out.read_text() == ANN_HEADER + "1,2,100,400,1breakpoint\n"


@pytest.mark.parametrize("row, where, match", [
    ("1,2,100,300,2breakpoints", "line 2, column annotation", "unknown annotation '2breakpoints'"),
    ("1,2,100,300,1breakpiont", "line 2, column annotation", r"'1breakpiont' \(did you mean '1breakpoint'\?\)"),
    ("1,2,400,300,normal", "line 2", "min=400 is greater than max=300"),
    ("1,2,410,490,1breakpoint", "line 2", "covers no probe"),
    ("1,2,150,250,1breakpoint", "line 2", "single probe"),
    ("1,3,100,300,normal", "line 2", "not among the 2 sequences"),
    ("1,2,abc,300,normal", "line 2, column min", "not a number"),
    ("1,2,300", "line 2", "found 3 fields"),
])
def test_bad_annotation_tables(tmp_path, row, where, match):
    p = _write(tmp_path, "a.csv", ANN_HEADER + row + "\n")
    with pytest.raises(DataFormatError, match=match) as info:
        cgh.read_annotations(p, SEQS)
    assert info.value.where == where and info.value.path == str(p)


def test_annotation_words_are_read_whatever_their_case(tmp_path):
    p = _write(tmp_path, "a.csv", ANN_HEADER + "1,2,100,300,0Breakpoints\n1,2,300,400,1BREAKPOINT\n")
    assert [lab.kind for lab in cgh.read_annotations(p, SEQS)] == [RegionKind.ZERO, RegionKind.ONE]


def test_annotation_empty_files_and_skip_option(tmp_path):
    with pytest.raises(DataFormatError, match="empty"):
        cgh.read_annotations(_write(tmp_path, "e.csv", ""), SEQS)
    with pytest.raises(DataFormatError, match="no rows"):
        cgh.read_annotations(_write(tmp_path, "h.csv", ANN_HEADER), SEQS)
    with pytest.raises(DataFormatError, match="missing column 'annotation'"):
        cgh.read_annotations(_write(tmp_path, "m.csv", "profile.id,chromosome,min,max\n1,2,1,2\n"), SEQS)
    p = _write(tmp_path, "s.csv", ANN_HEADER + "5,5,1,2,normal\n1,X,10,20,normal\n")
    assert [lab.item_id for lab in cgh.read_annotations(p, SEQS, unknown_sequences="skip")] == ["1:X"]
    with pytest.raises(ParameterError, match="unknown_sequences"):
        cgh.read_annotations(p, SEQS, unknown_sequences="ignore")


# ------------------------------------------------------------------ predictions


def test_segments_breaks_and_bedgraph_known_answer(tmp_path):
    seq = Sequence(values=[1.0, 1.0, 3.0, 3.0, 5.0, 7.0], positions=[100, 200, 300, 400, 500, 600], name="4:7",
                   units="bp", kind="cgh", meta={"profile_id": "4", "chromosome": "7"})
    seg = Segmentation([2, 4, 6])
    cgh.write_segments(tmp_path / "s.csv", {seq: seg})
    assert (tmp_path / "s.csv").read_text() == ("profile.id,chromosome,first.position,last.position,probes,mean\n"
                                                "4,7,100,200,2,1\n4,7,300,400,2,3\n4,7,500,600,2,6\n")
    cgh.write_breaks(tmp_path / "b.csv", [(seq, seg)])
    assert (tmp_path / "b.csv").read_text() == "profile.id,chromosome,position\n4,7,250\n4,7,450\n"
    cgh.write_bedgraph(tmp_path / "g.bedGraph", {seq: seg})
    lines = (tmp_path / "g.bedGraph").read_text().splitlines()
    assert lines[0].startswith("track type=bedGraph")
    assert lines[1:] == ["chr7\t99\t200\t1", "chr7\t299\t400\t3", "chr7\t499\t600\t6"]


def test_prediction_writers_validate(tmp_path):
    seq = Sequence(values=[1.0, 2.0, 3.0], name="1:1")
    with pytest.raises(ParameterError, match="does not fit"):
        cgh.write_segments(tmp_path / "s.csv", {seq: Segmentation([2, 4])})
    with pytest.raises(ParameterError, match="Sequence, Segmentation"):
        cgh.write_breaks(tmp_path / "s.csv", [(seq, [3])])
    with pytest.raises(ParameterError, match="folder"):
        cgh.write_segments(tmp_path / "no" / "s.csv", {seq: Segmentation([3])})


def test_prediction_writers_accept_name_keys_with_sequences(tmp_path):
    seq = Sequence(values=[1.0, 3.0], positions=[10, 20], name="2:5", meta={"profile_id": "2", "chromosome": "5"})
    cgh.write_breaks(tmp_path / "b.csv", {"2:5": Segmentation([1, 2])}, [seq])
    assert (tmp_path / "b.csv").read_text() == "profile.id,chromosome,position\n2,5,15\n"
    with pytest.raises(ParameterError, match="'9:9' is not the name"):
        cgh.write_segments(tmp_path / "s.csv", {"9:9": Segmentation([2])}, [seq])


def test_empty_regions_can_be_dropped_with_one_warning(tmp_path):
    p = _write(tmp_path, "a.csv", ANN_HEADER + "1,2,410,490,1breakpoint\n1,2,100,300,normal\n1,2,150,250,1breakpoint\n")
    with pytest.warns(cgh.DroppedRegionsWarning, match=r"dropped 2 rows .*lines 2, 4"):
        labels = cgh.read_annotations(p, SEQS, empty_regions="warn")
    assert [(lab.start, lab.stop) for lab in labels] == [(0, 3)]
    with pytest.raises(ParameterError, match="empty_regions"):
        cgh.read_annotations(p, SEQS, empty_regions="skip")


def test_a_no_change_region_without_probes_is_dropped_with_a_warning_even_when_strict(tmp_path):
    # no change index lies inside a region holding no probe, so the row can never be contradicted
    p = _write(tmp_path, "a.csv", ANN_HEADER + "1,2,410,490,normal\n1,2,100,300,normal\n")
    with pytest.warns(cgh.DroppedRegionsWarning, match=r"1 no-change row.*covers no probe.*lines 2\b"):
        labels = cgh.read_annotations(p, SEQS)
    assert [(lab.start, lab.stop) for lab in labels] == [(0, 3)]


@pytest.mark.parametrize("force_python", [False, True])
def test_crlf_line_ends_bom_and_padded_keys(tmp_path, force_python):
    p = tmp_path / "w.csv"
    p.write_bytes(b"\xef\xbb\xbfprofile.id,chromosome,position,logratio\r\n1, 2,10,0.5\r\n1,2 ,20,-0.5\r\n\r\n")
    (s,) = cgh.read_profiles(p, _force_python=force_python)
    assert s.name == "1:2"
    np.testing.assert_array_equal(s.values[:, 0], [0.5, -0.5])


def test_write_annotations_validates_labels(tmp_path):
    from marginalia.types import BoundaryLabel
    with pytest.raises(ParameterError, match="only RegionLabel"):
        cgh.write_annotations(tmp_path / "a.csv", [BoundaryLabel(item_id="1:2", index=2)], SEQS)
    with pytest.raises(ParameterError, match="'9:9' is not the name"):
        cgh.write_annotations(tmp_path / "a.csv", [RegionLabel(item_id="9:9", start=0, stop=2)], SEQS)
    with pytest.raises(ParameterError, match="exceeds the 3 probes"):
        cgh.write_annotations(tmp_path / "a.csv", [RegionLabel(item_id="1:X", start=0, stop=5)], SEQS)
    with pytest.raises(ParameterError, match="list of RegionLabel"):
        cgh.write_annotations(tmp_path / "a.csv", RegionLabel(item_id="1:X", start=0, stop=2), SEQS)


@pytest.mark.parametrize("text, plain", [
    (b'"a","b",1\n"c",2,"3"\n', True),
    (b'a,"b,c"\n', False),          # delimiter inside quotes
    (b'a,"b""c"\n', False),         # escaped quote
    (b'a,x"b"\n', False),           # quote inside a field
    (b'a,"b"x\n', False),           # text after the closing quote
    (b'a,"b\nc"\n', False),         # line break inside quotes
    (b'a,"b', False),               # unterminated
    (b'"a"\r\n"b"', True),
])
def test_plain_quotes_detection(text, plain):
    assert _csvscan.plain_quotes(np.frombuffer(text, dtype=np.uint8), ord(",")) is plain


def test_a_table_cut_mid_number_is_read_with_a_warning_naming_the_line(tmp_path):
    # "-0.153" cut to "-0." is still a number: only the missing line end tells the file was cut short
    text = "profile.id,chromosome,position,logratio\n1,1,100,0.25\n1,1,200,-0.5\n1,1,300,-0."
    cut = tmp_path / "cut.csv"
    cut.write_text(text)
    with pytest.warns(cgh.UnterminatedTableWarning, match=r"cut\.csv, line 4: the last line has no line end "
                                                          r"\('1,1,300,-0\.'\)"):
        seqs = cgh.read_profiles(cut)
    assert seqs[0].values[:, 0].tolist() == [0.25, -0.5, -0.0]
    whole = tmp_path / "whole.csv"
    whole.write_text(text + "153\n")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert cgh.read_profiles(whole)[0].values[-1, 0] == -0.153
    crlf = tmp_path / "crlf.csv"
    crlf.write_bytes((text + "153\r\n").replace("\n", "\r\n").encode().replace(b"\r\r\n", b"\r\n"))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        cgh.read_profiles(crlf)
