"""Onset error: matching and summaries on known answers (the region error is tested in tests/core/test_metrics.py)."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from marginalia.cli_commands._metrics import (
    AlignmentTable,
    match_events,
    onset_error_summary,
    read_alignment_table,
    read_truth_table,
)
from marginalia.exceptions import DataFormatError


def table(score, audio, pitches):
    return AlignmentTable(np.asarray(score, float), np.asarray(audio, float), [tuple(p) for p in pitches])


def test_identical_pitch_sequences_match_one_to_one():
    t = table([0, 1, 2], [0, 1, 2], [(60,), (62, 65), (64,)])
    assert match_events(t, t).tolist() == [[0, 0], [1, 1], [2, 2]]


def test_matching_skips_an_event_missing_from_the_truth():
    pred = table([0, 1, 2, 3], [0.5, 1.0, 1.5, 2.0], [(60,), (62,), (64,), (65,)])
    truth = table([0, 1, 3], [0.52, 1.1, 2.3], [(60,), (62,), (65,)])
    assert match_events(pred, truth).tolist() == [[0, 0], [1, 1], [3, 2]]
    s = onset_error_summary(pred, truth)
    assert s["n_matched"] == 3 and s["n_truth"] == 3 and s["n_predicted"] == 4
    assert s["median_s"] == pytest.approx(0.1)
    assert s["mean_s"] == pytest.approx((0.02 + 0.1 + 0.3) / 3)
    assert s["within_50ms"] == pytest.approx(100 / 3)
    assert s["within_100ms"] == pytest.approx(200 / 3)
    assert s["within_250ms"] == pytest.approx(200 / 3)


@pytest.mark.slow
@settings(max_examples=60)
@given(st.lists(st.sets(st.integers(60, 64), min_size=1, max_size=2), min_size=1, max_size=6),
       st.lists(st.sets(st.integers(60, 64), min_size=1, max_size=2), min_size=1, max_size=6))
def test_matching_is_monotone_one_to_one_and_only_pairs_overlapping_events(a, b):
    pa = table(range(len(a)), range(len(a)), [sorted(x) for x in a])
    pb = table(range(len(b)), range(len(b)), [sorted(x) for x in b])
    pairs = match_events(pa, pb)
    if len(pairs):
        assert np.all(np.diff(pairs[:, 0]) > 0) and np.all(np.diff(pairs[:, 1]) > 0)
    for i, j in pairs:
        assert set(a[i]) & set(b[j])


def test_read_truth_groups_notes_into_events_and_drops_unmatched_rows(tmp_path):
    gt = tmp_path / "gt.csv"
    gt.write_text("label,score_id,perf_id,pitch,score_onset_beat,score_onset_quarter,perf_onset_sec\n"
                  "match,n1,n0,60,0,0.0,0.70\n"
                  "match,n2,n1,64,0,0.0,0.74\n"
                  "match,n3,n2,67,0,0.0,0.72\n"
                  "deletion,n4,,62,1,1.0,\n"
                  "match,n5,n4,65,2,2.0,1.90\n"
                  "insertion,,n5,70,,,2.2\n")
    t = read_truth_table(gt)
    assert t.score_time.tolist() == [0.0, 2.0]
    assert t.audio_time.tolist() == pytest.approx([0.72, 1.90])
    assert t.pitches == [(60, 64, 67), (65,)]


def test_read_alignment_table_reads_what_align_writes(tmp_path):
    f = tmp_path / "a.csv"
    f.write_text("event,score_time_s,audio_time_s,pitches\n0,0,0.5,60 64\n1,0.5,1.25,62\n")
    t = read_alignment_table(f)
    assert t.pitches == [(60, 64), (62,)] and t.audio_time.tolist() == [0.5, 1.25]


def test_bad_tables_name_the_file_and_the_problem(tmp_path):
    f = tmp_path / "a.csv"
    f.write_text("event,onset\n0,1\n")
    with pytest.raises(DataFormatError, match=r"a\.csv: missing column"):
        read_alignment_table(f)
    f.write_text("event,score_time_s,audio_time_s,pitches\n0,0,soon,60\n")
    with pytest.raises(DataFormatError, match=r"line 2: column 'audio_time_s': expected a number, got 'soon'"):
        read_alignment_table(f)
    f.write_text("event,onset\n0,1\n")
    with pytest.raises(DataFormatError, match="expected a score-time column"):
        read_truth_table(f)
