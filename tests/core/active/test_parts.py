import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from marginalia.active.parts import Part, make_parts, parts_for_items, phrase_parts
from marginalia.exceptions import ParameterError
from marginalia.types import AnchorLabel, BoundaryLabel, MidiScore, RegionKind, RegionLabel, Segmentation, Sequence


@settings(max_examples=60)
@given(n=st.integers(1, 60), window=st.integers(1, 20), hop_frac=st.integers(1, 20))
def test_windows_cover_every_index_and_have_the_window_length(n, window, hop_frac):
    hop = min(hop_frac, window)
    parts = make_parts("a", n, kind="window", window=window, hop=hop)
    covered = np.zeros(n, dtype=int)
    for p in parts:
        covered[p.start:p.stop] += 1
        assert p.size == min(window, n)
        assert p.kind == "window" and p.item_id == "a"
    assert covered.min() >= 1
    assert [p.start for p in parts] == sorted(p.start for p in parts)
    if hop == window and n % window == 0:
        assert covered.max() == 1


def test_chromosome_is_whole_unless_longer_than_window():
    assert make_parts("c", 50) == [Part("c", 0, 50, "chromosome")]
    assert make_parts("c", 50, window=60) == [Part("c", 0, 50, "chromosome")]
    parts = make_parts("c", 50, window=20)
    assert [(p.start, p.stop, p.kind) for p in parts] == [(0, 20, "window"), (20, 40, "window"), (30, 50, "window")]


def test_parts_for_items_accepts_sequences_arrays_and_lengths():
    items = {"s": Sequence(np.zeros(7)), "a": np.zeros((5, 2)), "n": 3}
    parts = parts_for_items(items)
    assert [(p.item_id, p.start, p.stop) for p in parts] == [("s", 0, 7), ("a", 0, 5), ("n", 0, 3)]
    with pytest.raises(ParameterError, match="items"):
        parts_for_items([1, 2])


def test_labels_from_changes_fix_the_part_and_nothing_outside():
    part = Part("x", 10, 30)
    truth = Segmentation([5, 15, 16, 40])
    labels = part.labels_from_changes(truth.changes, author="oracle")
    bounds = sorted(lab.index for lab in labels if isinstance(lab, BoundaryLabel))
    regions = sorted((lab.start, lab.stop) for lab in labels if isinstance(lab, RegionLabel))
    assert bounds == [15, 16]
    assert regions == [(10, 15), (16, 30)]  # [15,16) has one sample: nothing to say
    assert all(lab.item_id == "x" and lab.author == "oracle" for lab in labels)
    assert all(lab.kind == RegionKind.ZERO for lab in labels if isinstance(lab, RegionLabel))
    assert all(part.contains_label(lab) for lab in labels)
    # a segmentation disagreeing inside the part violates some label; one agreeing inside does not
    def violates(seg):
        ch = set(seg.breakpoints.tolist())
        bad_b = any(b.index not in ch for b in labels if isinstance(b, BoundaryLabel))
        bad_r = any(any(r.start < c < r.stop for c in ch) for r in labels if isinstance(r, RegionLabel))
        return bad_b or bad_r
    assert not violates(truth)
    assert not violates(Segmentation([3, 15, 16, 35, 40]))
    assert violates(Segmentation([15, 40]))
    assert violates(Segmentation([15, 16, 20, 40]))


def test_select_labels_keeps_labels_inside_the_part_only():
    part = Part("x", 0, 10)
    inside = RegionLabel(item_id="x", start=2, stop=8, kind="1")
    across = RegionLabel(item_id="x", start=8, stop=12, kind="0")
    other = RegionLabel(item_id="y", start=2, stop=8, kind="0")
    edge = BoundaryLabel(item_id="x", index=10)
    assert part.select_labels([inside, across, other, edge]) == [inside]


def test_anchor_labels_on_event_parts():
    part = Part("p", 2, 5, "phrase", "events")
    labels = part.anchor_labels([0.0, 0.5, 1.0, np.nan, 2.0, 2.5], tolerance_s=0.1)
    assert [(a.event, a.time_s) for a in labels] == [(2, 1.0), (4, 2.0)]
    assert all(isinstance(a, AnchorLabel) and part.contains_label(a) for a in labels)
    with pytest.raises(ParameterError, match="axis"):
        Part("p", 0, 5).anchor_labels([0.0] * 5)
    with pytest.raises(ParameterError, match="axis"):
        part.labels_from_changes([3])


def test_phrase_parts_cut_at_gaps_and_max_events():
    onsets = [0, 1, 2, 3, 10, 11, 12, 13, 14, 15, 16]
    sc = MidiScore(pitches=[60] * len(onsets), onsets_s=onsets, offsets_s=[o + 0.5 for o in onsets])
    parts = phrase_parts("s", sc, max_events=4)
    assert [(p.start, p.stop) for p in parts] == [(0, 4), (4, 8), (8, 11)]
    assert all(p.size <= 4 and p.kind == "phrase" and p.axis == "events" for p in parts)
    assert sum(p.size for p in parts) == 11


@pytest.mark.parametrize("kwargs, match", [
    (dict(item_id="", start=0, stop=1), "item_id"),
    (dict(item_id="a", start=3, stop=3), "start"),
    (dict(item_id="a", start=-1, stop=3), "start"),
    (dict(item_id="a", start=0, stop=3, kind="chapter"), "kind"),
    (dict(item_id="a", start=0, stop=3, axis="pixels"), "axis"),
])
def test_bad_parts_are_refused(kwargs, match):
    with pytest.raises(ParameterError, match=match):
        Part(**kwargs)


def test_bad_make_parts_arguments():
    with pytest.raises(ParameterError, match="n"):
        make_parts("a", 0)
    with pytest.raises(ParameterError, match="window"):
        make_parts("a", 10, kind="window")
    with pytest.raises(ParameterError, match="hop"):
        make_parts("a", 10, kind="window", window=3, hop=4)
