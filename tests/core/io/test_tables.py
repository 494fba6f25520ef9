"""The one reader of the CLI's small CSV tables (pairs, anchors, onset and truth tables)."""

import csv
import gzip
import io

import pytest

from marginalia.exceptions import DataFormatError
from marginalia.io.tables import listed_file, read_csv_table


def test_rows_match_the_standard_csv_reader_with_stripped_header(tmp_path):
    text = '\ufeff score , audio\n"a.mid","b, c.wav"\nx.mid,y.wav\n'
    p = tmp_path / "pairs.csv"
    p.write_text(text, encoding="utf-8")
    path, header, rows = read_csv_table(p)
    assert path == p
    assert header == ["score", "audio"]
    expected = list(csv.reader(io.StringIO(text.lstrip("\ufeff"))))[1:]
    assert [[row[c] for c in header] for _, row in rows] == expected
    assert [line for line, _ in rows] == [2, 3]


def test_line_numbers_count_blank_lines_and_multiline_fields(tmp_path):
    p = tmp_path / "t.csv"
    p.write_text('a,b\n\n1,2\n"x\ny",3\n4,5\n', encoding="utf-8")
    _, _, rows = read_csv_table(p)
    assert [(line, row["a"]) for line, row in rows] == [(3, "1"), (5, "x\ny"), (6, "4")]


def test_gzip_compressed_table_reads_like_plain(tmp_path):
    p = tmp_path / "t.csv.gz"
    p.write_bytes(gzip.compress(b"event,audio_time_s\n0,1.5\n"))
    _, header, rows = read_csv_table(p)
    assert header == ["event", "audio_time_s"]
    assert rows == [(2, {"event": "0", "audio_time_s": "1.5"})]


@pytest.mark.parametrize("content, message", [
    (b"", "empty file"),
    (b"\xff\xfe\x00a", "not UTF-8"),
    (b"a,b\n1," + b"x" * (csv.field_size_limit() + 1) + b"\n", "line 2"),
])
def test_bad_tables_raise_one_line_naming_the_file(tmp_path, content, message):
    p = tmp_path / "bad.csv"
    p.write_bytes(content)
    with pytest.raises(DataFormatError) as err:
        read_csv_table(p)
    assert message in str(err.value) and "bad.csv" in str(err.value)


def test_missing_table_is_a_data_format_error(tmp_path):
    with pytest.raises(DataFormatError, match="no such file"):
        read_csv_table(tmp_path / "nothing.csv")


def test_listed_file_resolves_relative_to_the_table(tmp_path):
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "a.wav").write_bytes(b"")
    table = tmp_path / "pairs.csv"
    assert listed_file(table, 2, {"audio": " sub/a.wav "}, "audio") == tmp_path / "sub" / "a.wav"
    assert listed_file(table, 2, {"audio": ""}, "audio") is None
    assert listed_file(table, 2, {}, "audio") is None
    absolute = str(tmp_path / "sub" / "a.wav")
    assert listed_file(tmp_path / "elsewhere" / "t.csv", 2, {"audio": absolute}, "audio") == tmp_path / "sub" / "a.wav"
    with pytest.raises(DataFormatError, match="line 7") as err:
        listed_file(table, 7, {"audio": "missing.wav"}, "audio")
    assert "'audio'" in str(err.value)
