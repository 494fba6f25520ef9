"""Text tables whose last line has no line end (a copy cut short) are read with a warning naming the line."""

import warnings

import pytest

from marginalia.exceptions import DataWarning
from marginalia.io import UnterminatedTableWarning, read_alignment_csv, read_audacity_labels, read_series

TABLES = {
    "series.csv": (read_series, "time,x\n0,1.5\n1,2.5\n2,3.25"),
    "alignment.csv": (read_alignment_csv, "event,score_time_s,audio_time_s,pitches\n0,0,0.1,60\n1,0.5,0.62,62"),
    "labels.txt": (read_audacity_labels, "0.5\t1.25\tverse\n2.0\t3.5\tchor"),
}


@pytest.mark.parametrize("name", sorted(TABLES))
def test_cut_table_warns_and_a_complete_one_does_not(tmp_path, name):
    reader, text = TABLES[name]
    cut = tmp_path / name
    cut.write_text(text)
    with pytest.warns(UnterminatedTableWarning, match=rf"{name}, line {text.count(chr(10)) + 1}: the last line "
                                                      r"has no line end"):
        reader(cut)
    whole = tmp_path / f"whole_{name}"
    whole.write_text(text + "\n")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        reader(whole)


def test_the_warning_is_a_data_warning_the_app_shows():
    assert issubclass(UnterminatedTableWarning, DataWarning)
