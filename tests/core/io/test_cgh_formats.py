"""Copy-number layouts users already have (any column names, DNAcopy wide, bedGraph, SegAnnDB, animint) and the
segment outputs (segments.csv, DNAcopy/IGV .seg, bedGraph), on generated data."""

from __future__ import annotations

import gzip
import math

import numpy as np
import pytest

from marginalia.exceptions import DataFormatError, ParameterError
from marginalia.io import cgh
from marginalia.io.cgh_layouts import format_columns, parse_columns
from marginalia.io.segments import SegmentRow, read_segment_table
from marginalia.types import Segmentation, Sequence

RNG = np.random.default_rng(7)
POS = {("S1", "1"): [10, 20, 30, 40, 50], ("S1", "2"): [5, 15, 25], ("S2", "1"): [11, 21, 31, 41]}
VAL = {k: np.round(RNG.normal(size=len(v)), 6).tolist() for k, v in POS.items()}


def _standard(tmp_path):
    p = tmp_path / "standard.csv"
    rows = ["profile.id,chromosome,position,logratio"]
    rows += [f"{pid},{ch},{x},{y!r}" for (pid, ch), xs in POS.items() for x, y in zip(xs, VAL[(pid, ch)])]
    p.write_text("\n".join(rows) + "\n")
    return cgh.read_profiles(p)


def _as_dict(seqs):
    return {s.name: (s.positions.tolist(), s.values[:, 0].tolist()) for s in seqs}


@pytest.mark.parametrize("header, sep", [("Sample\tChrom\tPos\tLog2Ratio", "\t"), ("ID,chr,maploc,LRR", ","),
                                         ("sample;chromosome;base;value", ";")])
def test_long_tables_under_usual_spellings_read_like_the_standard_table(tmp_path, header, sep):
    p = tmp_path / "renamed.txt.csv"
    rows = [header] + [sep.join([pid, ch, str(x), repr(y)]) for (pid, ch), xs in POS.items()
                       for x, y in zip(xs, VAL[(pid, ch)])]
    p.write_text("\n".join(rows) + "\n")
    assert _as_dict(cgh.read_profiles(p)) == _as_dict(_standard(tmp_path))
    assert all(s.meta["layout"] == "long" for s in cgh.read_profiles(p))


@pytest.mark.parametrize("force_python", [False, True])
def test_explicit_columns_map_any_names(tmp_path, force_python):
    p = tmp_path / "odd.csv"
    rows = ["tumour,arm,coord,extra,ratio"] + [f"{pid},{ch},{x},zz,{y!r}" for (pid, ch), xs in POS.items()
                                                for x, y in zip(xs, VAL[(pid, ch)])]
    p.write_text("\n".join(rows) + "\n")
    with pytest.raises(DataFormatError) as info:
        cgh.read_profiles(p)
    msg = str(info.value)
    assert "['tumour', 'arm', 'coord', 'extra', 'ratio']" in msg and "--columns id=COL" in msg and "line 1" in msg
    spec = "id=tumour,chromosome=arm,position=coord,logratio=ratio"
    got = cgh.read_profiles(p, columns=spec, _force_python=force_python)
    assert _as_dict(got) == _as_dict(_standard(tmp_path))
    assert _as_dict(cgh.read_profiles(p, columns=parse_columns(spec))) == _as_dict(got)
    with pytest.raises(DataFormatError, match="no column 'nope'.*found columns"):
        cgh.read_profiles(p, columns="position=coord,logratio=nope")


def test_columns_text_is_checked():
    assert format_columns("logratio=a+b, position=p") == "position=p,logratio=a+b"
    for bad, match in (("position=p", "logratio missing"), ("size=3,position=p,logratio=l", "unknown role"),
                       ("position", "no '='"), ("position=a,position=b,logratio=c", "twice")):
        with pytest.raises(ParameterError, match=match):
            parse_columns(bad)


@pytest.mark.filterwarnings("ignore:.*not sorted by position")
@pytest.mark.parametrize("force_python", [False, True])
def test_dnacopy_wide_table_skips_missing_cells(tmp_path, force_python):
    # Clone,Chromosome,Position,<one column per sample>; empty and NA cells are probes a sample lacks
    p = tmp_path / "wide.csv"
    p.write_text("Clone,Chromosome,Position,Coriell.05296,Coriell.13330\n"
                 "GS1-232B23,1,0,,0.20747\n"
                 "RP11-82d16,1,468,0.008824,0.063076\n"
                 "RP11-62m23,1,2241,-0.00089,NA\n"
                 "RP11-111O5,2,100,0.5,0.25\n"
                 "RP11-111O6,2,90,0.75,-0.125\n")
    seqs = cgh.read_profiles(p, _force_python=force_python)
    got = _as_dict(seqs)
    assert list(got) == ["Coriell.05296:1", "Coriell.05296:2", "Coriell.13330:1", "Coriell.13330:2"]
    assert got["Coriell.05296:1"] == ([468.0, 2241.0], [0.008824, -0.00089])
    assert got["Coriell.13330:1"] == ([0.0, 468.0], [0.20747, 0.063076])
    assert got["Coriell.05296:2"] == ([90.0, 100.0], [0.75, 0.5])          # sorted by position
    assert all(not np.isnan(s.values).any() for s in seqs)
    assert {s.meta["layout"] for s in seqs} == {"wide"}
    only = cgh.read_profiles(p, columns="chromosome=Chromosome,position=Position,logratio=Coriell.13330+Coriell.05296")
    assert [s.name for s in only][:2] == ["Coriell.13330:1", "Coriell.13330:2"]


def test_bedgraph_with_tracks_gzipped(tmp_path):
    text = ("browser position chr1:1-100\n"
            'track type=bedGraph name="tumour A" description="x"\n'
            "chr1\t9\t10\t0.5\nchr1\t19\t20\t-0.25\nchr2\t4\t5\t1\n"
            "# a comment\n"
            "track type=bedGraph name=B\n"
            "chr1 99 100 2.5\n")
    p = tmp_path / "probes.bedGraph.gz"
    p.write_bytes(gzip.compress(text.encode()))
    got = _as_dict(cgh.read_profiles(p))
    assert got == {"tumour A:chr1": ([10.0, 20.0], [0.5, -0.25]), "tumour A:chr2": ([5.0], [1.0]),
                   "B:chr1": ([100.0], [2.5])}
    plain = tmp_path / "untitled.txt"
    plain.write_text(text)                      # recognised by its first lines, not only by its name
    assert _as_dict(cgh.read_profiles(plain)) == got
    bad = tmp_path / "bad.bedGraph"
    bad.write_text("track name=x\nchr1\t10\t5\t0.1\n")
    with pytest.raises(DataFormatError, match="line 2.*start < end"):
        cgh.read_profiles(bad)


def test_bedgraph_written_by_us_reads_back_as_segment_means(tmp_path):
    seq = Sequence(values=[1.0, 1.0, 3.0, 3.0], positions=[100, 200, 300, 400], name="4:7", units="bp", kind="cgh",
                   meta={"profile_id": "4", "chromosome": "7"})
    cgh.write_bedgraph(tmp_path / "g.bedGraph", {seq: Segmentation([2, 4])})
    (back,) = cgh.read_profiles(tmp_path / "g.bedGraph")
    assert back.name == "marginalia 4:chr7"
    assert back.positions.tolist() == [100.0, 300.0] and back.values[:, 0].tolist() == [1.0, 3.0]


def test_segannot_and_animint_files_with_their_labels(tmp_path):
    probes = tmp_path / "low_probes.csv"
    probes.write_text("position,logratio\n" + "".join(f"{100 * (i + 1)},{0.0 if i < 5 else 1.0}\n"
                                                       for i in range(10)))
    (seq,) = cgh.read_profiles(probes)
    assert seq.name == "low_probes:NA" and seq.n_samples == 10
    ann = tmp_path / "low_annotations.csv"
    ann.write_text("min,max,annotation\n150,850,1breakpoint\n100,300,0breakpoints\n")
    labels = cgh.read_annotations(ann, [seq])
    assert [(lab.item_id, lab.start, lab.stop, lab.annotation) for lab in labels] == [
        ("low_probes:NA", 1, 8, "1breakpoint"), ("low_probes:NA", 0, 3, "0breakpoints")]
    with pytest.raises(DataFormatError, match="names no profile and no chromosome.*2 were given"):
        cgh.read_annotations(ann, [seq, Sequence(values=[1.0, 2.0], name="x:1")])
    signals = tmp_path / "signals.csv"
    signals.write_text("signal,base,logratio\n" + "".join(f"{sig},{b},{v}\n" for sig in ("4.2", "11.2")
                                                          for b, v in ((10, 0.1), (20, 0.2), (30, 0.9))))
    seqs = cgh.read_profiles(signals)
    assert [s.name for s in seqs] == ["4.2:NA", "11.2:NA"]
    ann = tmp_path / "annotations.csv"
    ann.write_text("signal,first.base,last.base,annotation\n11.2,15,30,1breakpoint\n4.2,5,20,0breakpoints\n")
    labels = cgh.read_annotations(ann, seqs)
    assert [(lab.item_id, lab.start, lab.stop) for lab in labels] == [("11.2:NA", 1, 3), ("4.2:NA", 0, 2)]
    # written back under the standard header, they read back the same
    cgh.write_annotations(tmp_path / "std.csv", labels, seqs)
    again = cgh.read_annotations(tmp_path / "std.csv", seqs)
    assert [(lab.item_id, lab.start, lab.stop, lab.kind) for lab in again] == \
        [(lab.item_id, lab.start, lab.stop, lab.kind) for lab in labels]


# ------------------------------------------------------------------ outputs


def _read_seg_like_igv(path):
    """A .seg reader written from IGV's description of the format (igv.org, "SEG file format"):

    tab-delimited; the first line that is not a ``#`` comment holds the column headings; column 1 is the
    sample, 2 the chromosome, 3 the start, 4 the end (1-based, inclusive), the LAST column the numeric value;
    with more than 5 columns the one before the value is the number of markers. IGV stores an interval
    0-based half-open, so it keeps ``[start - 1, end)``.
    """
    rows = []
    header = None
    for line in path.read_text().split("\n"):
        if not line or line.startswith("#"):
            continue
        tokens = line.split("\t")
        if header is None:
            header = tokens
            continue
        assert len(tokens) == len(header)
        marks = int(tokens[-2]) if len(tokens) > 5 else None
        rows.append((tokens[0], tokens[1], int(tokens[2]) - 1, int(tokens[3]), marks, float(tokens[-1])))
    return header, rows


def test_seg_file_loads_under_igv_rules_and_matches_segments_and_bedgraph(tmp_path):
    seqs = [Sequence(values=[1.0, 1.0, 3.0, 3.0, 5.0, 7.0], positions=[100, 200, 300, 400, 500, 600], name="4:7",
                     units="bp", kind="cgh", meta={"profile_id": "4", "chromosome": "7"}),
            Sequence(values=[0.25, 0.5, -1.0], positions=[7, 8, 9], name="tumour 2:X",
                     meta={"profile_id": "tumour 2", "chromosome": "X"})]
    segs = {seqs[0]: Segmentation([2, 4, 6]), seqs[1]: Segmentation([2, 3])}
    cgh.write_seg_file(tmp_path / "s.seg", segs)
    header, rows = _read_seg_like_igv(tmp_path / "s.seg")
    assert header == ["ID", "chrom", "loc.start", "loc.end", "num.mark", "seg.mean"]
    assert rows == [("4", "7", 99, 200, 2, 1.0), ("4", "7", 299, 400, 2, 3.0), ("4", "7", 499, 600, 2, 6.0),
                    ("tumour 2", "X", 6, 8, 2, 0.375), ("tumour 2", "X", 8, 9, 1, -1.0)]
    cgh.write_bedgraph(tmp_path / "s.bedGraph", segs)
    bed = [ln.split("\t") for ln in (tmp_path / "s.bedGraph").read_text().splitlines() if not ln.startswith("track")]
    assert [(int(a), int(b), float(v)) for _, a, b, v in bed] == [(r[2], r[3], r[5]) for r in rows]
    cgh.write_segments(tmp_path / "s.csv", segs)
    table = read_segment_table(tmp_path / "s.csv")
    assert [(r.profile_id, r.chromosome, r.first - 1, r.last, r.probes, r.mean) for r in table] == rows
    seq_bad = Sequence(values=[1.0], positions=[1], name="a\tb:1", meta={"profile_id": "a\tb", "chromosome": "1"})
    with pytest.raises(ParameterError, match="tab"):
        cgh.write_seg_file(tmp_path / "bad.seg", {seq_bad: Segmentation([1])})


def test_segment_tables_of_earlier_versions_still_read(tmp_path):
    old = tmp_path / "old.csv"
    old.write_text("profile.id,chromosome,chromStart,chromEnd,mean\n4,7,100,200,1\n")
    assert read_segment_table(old) == [SegmentRow("4", "7", 100.0, 200.0, None, 1.0)]
    other = tmp_path / "other.csv"
    other.write_text("a,b\n1,2\n")
    with pytest.raises(DataFormatError, match="not a segments table"):
        read_segment_table(other)
    assert math.isfinite(read_segment_table(old)[0].mean)


@pytest.mark.filterwarnings("ignore:.*not sorted by position")
@pytest.mark.slow
def test_engine_imports_wide_tables_and_bedgraph_and_exports_seg(tmp_path):
    from marginalia.engine import Engine
    wide = tmp_path / "wide.csv"
    wide.write_text("Clone,Chromosome,Position,A,B\n" + "".join(
        f"c{i},1,{10 * i},{'' if i == 3 else (0.0 if i < 10 else 1.0)},{0.5 if i < 6 else -0.5}\n" for i in range(20)))
    bed = tmp_path / "probes.bedGraph"
    bed.write_text('track type=bedGraph name="T"\n' + "".join(f"chr2\t{i}\t{i + 1}\t{float(i > 7)}\n"
                                                              for i in range(16)))
    eng = Engine.create(tmp_path / "p.marginalia")
    try:
        eng.import_files([wide, bed])
        names = sorted(i.name for i in eng.items())
        assert names == ["A:1", "B:1", "T:chr2"]
        by_name = {i.name: i for i in eng.items()}
        assert eng.sequence(by_name["A:1"].id).n_samples == 19        # the empty cell is no probe
        eng.export("seg", tmp_path / "out.seg")
        header, rows = _read_seg_like_igv(tmp_path / "out.seg")
        assert header[0] == "ID" and {r[0] for r in rows} == {"A", "B", "T"}
        assert all(r[4] >= 1 for r in rows) and sum(r[4] for r in rows) == 19 + 20 + 16
    finally:
        eng.close()


def test_describe_table_says_how_a_file_will_be_read(tmp_path):
    from marginalia.engine import Engine
    from marginalia.io.cgh_layouts import describe_table
    wide = tmp_path / "wide.csv"
    wide.write_text("Clone,Chromosome,Position,A,B\nc1,1,10,,0.5\nc2,1,20,0.1,NA\n")
    assert describe_table(wide) == "DNAcopy wide table, 2 samples: chromosome=Chromosome,position=Position,logratio=A+B"
    long = tmp_path / "long.tsv"
    long.write_text("Sample\tChr\tPos\tLRR\nx\t1\t5\t0.1\n")
    assert Engine.describe_table(long) == "long table: id=Sample,chromosome=Chr,position=Pos,logratio=LRR"
    bed = tmp_path / "p.bedGraph"
    bed.write_text("track name=x\nchr1\t0\t1\t0.5\n")
    assert describe_table(bed) == "bedGraph"
    odd = tmp_path / "odd.csv"
    odd.write_text("a,b,c\n1,2,3\n")
    with pytest.raises(DataFormatError, match="--columns"):
        describe_table(odd)
    assert describe_table(odd, "position=b,logratio=c") == "long table: position=b,logratio=c"


def _kb_table(path, unit_scale=1000):
    """A DNAcopy wide table in kb (Mb for unit_scale=1e6) spanning most of human chromosomes 1 and 2."""
    rng = np.random.default_rng(3)
    rows = ["Clone,Chromosome,Position,A,B"]
    for chrom, top_bp in (("1", 240_000_000), ("2", 230_000_000)):
        for k, bp in enumerate(np.linspace(500_000, top_bp, 40).round(-3)):
            a, b = rng.normal(size=2).round(5)
            rows.append(f"c{chrom}_{k},{chrom},{fmt(bp / unit_scale)},{'' if k == 3 else a},{b}")
    path.write_text("\n".join(rows) + "\n")
    return path


def fmt(x):
    from marginalia.io._common import fmt_number
    return fmt_number(x)


@pytest.mark.parametrize("unit, scale", [("kb", 1_000), ("Mb", 1_000_000)])
def test_position_unit_converts_to_bp_and_round_trips(tmp_path, unit, scale):
    p = _kb_table(tmp_path / f"wide_{unit}.csv", scale)
    with pytest.warns(cgh.PositionUnitWarning, match=f"looks like {unit}.*--position-unit {unit}"):
        as_bp = cgh.read_profiles(p)
    seqs = cgh.read_profiles(p, position_unit=unit)
    assert [s.name for s in seqs] == [s.name for s in as_bp]
    for s, raw in zip(seqs, as_bp):
        assert s.positions.tolist() == np.round(raw.positions * scale).tolist()
        assert s.values.tolist() == raw.values.tolist()
    assert seqs[0].positions.max() == 240_000_000
    # the same through the columns text, alone or with a naming; bp given explicitly silences the warning
    assert _as_dict(cgh.read_profiles(p, columns=f"unit={unit}")) == _as_dict(seqs)
    named = cgh.read_profiles(p, columns=f"chromosome=Chromosome,position=Position,logratio=A+B,unit={unit}")
    assert _as_dict(named) == _as_dict(seqs)
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        cgh.read_profiles(p, position_unit="bp")
    # written back (in bp) and read again: the same sequences, no warning, no unit needed
    out = tmp_path / "back.csv"
    cgh.write_profiles(out, seqs)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert _as_dict(cgh.read_profiles(out)) == _as_dict(seqs)


def test_position_unit_is_checked_and_small_bp_tables_do_not_warn(tmp_path):
    import warnings
    with pytest.raises(ParameterError, match="not a position unit"):
        parse_columns("unit=miles")
    with pytest.raises(ParameterError, match="unit=kb but the position unit is Mb"):
        cgh.read_profiles(_kb_table(tmp_path / "w.csv"), columns="unit=kb", position_unit="Mb")
    assert format_columns("logratio=l,unit=KB,position=p") == "position=p,logratio=l,unit=kb"
    assert format_columns("unit=Mb") == "unit=Mb"
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        _standard(tmp_path)        # positions 5..50 on chromosomes 1 and 2: bp, far too short for kb


def test_cli_position_unit_reaches_the_project(tmp_path, capsys):
    from marginalia.cli import main
    from marginalia.engine import Engine
    p = _kb_table(tmp_path / "coriell_like.csv")
    proj = tmp_path / "p.marginalia"
    assert main(["project", "create", str(proj), "--import", str(p), "--position-unit", "kb", "-q"]) == 0
    assert "looks like kb" not in capsys.readouterr().err
    eng = Engine.open(proj)
    try:
        tops = sorted(float(eng.sequence(i.id).positions.max()) for i in eng.items())
    finally:
        eng.close()
    assert tops[-1] == 240_000_000
    assert main(["project", "create", str(tmp_path / "q.marginalia"), "--import", str(p)]) == 0
    assert "looks like kb" in capsys.readouterr().err
    assert main(["project", "create", str(tmp_path / "r.marginalia"), "--import", str(p), "--position-unit",
                 "km"]) == 2


def test_bedgraph_names_chromosomes_23_and_24_as_ucsc_does(tmp_path):
    from marginalia.io.segments import ucsc_chromosome
    assert [ucsc_chromosome(c) for c in ("7", "23", "24", "X", "chrx", "chr23", "MT", "chr1_random")] == \
        ["chr7", "chrX", "chrY", "chrX", "chrX", "chrX", "chrM", "chr1_random"]
    seqs = [Sequence(values=[0.5, 0.5, -1.0], positions=[1000, 2000, 3000], name=f"c:{ch}", units="bp", kind="cgh",
                     meta={"profile_id": "c", "chromosome": ch}) for ch in ("1", "23", "24")]
    cgh.write_bedgraph(tmp_path / "g.bedGraph", {s: Segmentation([2, 3]) for s in seqs})
    lines = (tmp_path / "g.bedGraph").read_text().splitlines()
    assert [ln.split("\t")[0] for ln in lines[1:]] == ["chr1", "chr1", "chrX", "chrX", "chrY", "chrY"]
    back = cgh.read_profiles(tmp_path / "g.bedGraph")
    assert [s.meta["chromosome"] for s in back] == ["chr1", "chrX", "chrY"]
    assert [s.values[:, 0].tolist() for s in back] == [[0.5, -1.0]] * 3


def test_a_position_unit_alone_does_not_make_a_series_a_profile_table(tmp_path):
    from marginalia.engine import Engine
    wide = _kb_table(tmp_path / "coriell_like.csv")
    series = tmp_path / "series.csv"
    series.write_text("a,b\n" + "".join(f"{k},{k * 2}\n" for k in range(20)))
    with Engine.create(tmp_path / "p.marginalia") as eng:
        eng.import_files([wide, series], columns="unit=kb")
        kinds = sorted({eng.item(i).kind for i in (it.id for it in eng.items())})
    assert kinds == ["cgh", "series"]
