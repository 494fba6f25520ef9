import json
import math

import pytest
from hypothesis import given, settings

from marginalia.exceptions import DataFormatError, ParameterError
from marginalia.io.cgh import CghRegionLabel
from marginalia.project.codec import (
    dumps_label,
    label_from_dict,
    label_to_dict,
    labels_digest,
    loads_label,
    task_of_label,
)
from marginalia.types import AnchorLabel, BoundaryLabel, RegionKind, RegionLabel

from .labels_strategies import any_label, sync_anchor_labels


@settings(max_examples=150)
@given(any_label | sync_anchor_labels())
@pytest.mark.slow
def test_round_trip_is_exact(label):
    back = loads_label(dumps_label(label))
    assert type(back) is type(label)
    assert back == label
    assert (back.id, back.author, back.created) == (label.id, label.author, label.created)
    assert dumps_label(back) == dumps_label(label)


def test_region_kind_is_stored_by_value_and_restored_as_enum():
    lab = RegionLabel("it", id="a", created=5.0, start=0, stop=4, kind=RegionKind.AT_LEAST_ONE)
    data = json.loads(dumps_label(lab))
    assert data["kind"] == ">=1" and data["type"] == "RegionLabel"
    assert loads_label(dumps_label(lab)).kind is RegionKind.AT_LEAST_ONE


def test_int_and_float_inputs_give_the_same_text():
    a = AnchorLabel("it", id="x", created=3.0, event=2, time_s=1, tolerance_s=0)
    b = AnchorLabel("it", id="x", created=3, event=2, time_s=1.0, tolerance_s=0.0)
    assert dumps_label(a) == dumps_label(b)


def test_digest_ignores_order_and_sees_content():
    a = BoundaryLabel("it", id="a", created=1.0, index=3)
    b = BoundaryLabel("it", id="b", created=1.0, index=4)
    c = BoundaryLabel("it", id="b", created=1.0, index=5)
    assert labels_digest([a, b]) == labels_digest([b, a])
    assert labels_digest([a, b]) != labels_digest([a, c])
    assert labels_digest([]) != labels_digest([a])


@pytest.mark.parametrize("data, match", [
    ({"type": "Nope"}, "unknown type 'Nope'"),
    ([1, 2], "expected a JSON object"),
    ({"type": "BoundaryLabel", "item_id": "i", "id": "a", "author": "", "created": 1.0},
     r"missing field\(s\) \['index'\]"),
    ({"type": "BoundaryLabel", "item_id": "i", "id": "a", "author": "", "created": 1.0, "index": 2, "x": 1},
     r"unknown field\(s\) \['x'\]"),
    ({"type": "BoundaryLabel", "item_id": "i", "id": "a", "author": "", "created": 1.0, "index": 0},
     "index must be >= 1"),
])
def test_bad_dicts_raise_data_format_errors(data, match):
    with pytest.raises(DataFormatError, match=match):
        label_from_dict(data)


def test_bad_inputs_name_the_problem():
    with pytest.raises(DataFormatError, match="not valid JSON"):
        loads_label("{nope")
    with pytest.raises(ParameterError, match="expected one of"):
        label_to_dict({"type": "RegionLabel"})
    with pytest.raises(DataFormatError, match="field created must be a number"):
        loads_label('{"type":"BoundaryLabel","item_id":"i","id":"a","author":"","created":"soon","index":2}')


def test_non_finite_floats_round_trip_as_strings():
    lab = CghRegionLabel("chr1", id="a", created=float("inf"), start=0, stop=5, kind=RegionKind.ONE,
                         annotation="1breakpoint")
    text = dumps_label(lab)
    assert '"min_bp":"nan"' in text and '"created":"inf"' in text
    back = loads_label(text)
    assert type(back) is CghRegionLabel and back.created == float("inf")
    assert math.isnan(back.min_bp) and math.isnan(back.max_bp) and back.annotation == "1breakpoint"


def test_task_of_label():
    assert task_of_label(BoundaryLabel("i", index=2)) == "segmentation"
    assert task_of_label(AnchorLabel("i", event=0, time_s=1.0)) == "alignment"


def test_a_suggestion_is_stored_with_its_flag_and_a_label_exactly_as_before_suggestions_existed():
    label = RegionLabel("1:1", id="r1", author="", created=5.0, start=3, stop=9, kind=RegionKind.ZERO)
    assert "suggested" not in label_to_dict(label)            # files and digests of plain labels are unchanged
    assert dumps_label(label) == ('{"author":"","created":5.0,"id":"r1","item_id":"1:1","kind":"0","start":3,'
                                  '"stop":9,"type":"RegionLabel"}')
    import dataclasses
    suggestion = dataclasses.replace(label, suggested=True)
    assert label_to_dict(suggestion)["suggested"] is True
    assert loads_label(dumps_label(suggestion)) == suggestion and loads_label(dumps_label(label)) == label
    with pytest.raises(DataFormatError, match="field suggested must be true or false"):
        label_from_dict(dict(label_to_dict(label), suggested="yes"))
    with pytest.raises(ParameterError, match="suggested: expected True or False"):
        RegionLabel("1:1", start=0, stop=2, kind=RegionKind.ZERO, suggested=1)


def test_a_sync_anchor_is_a_flat_object_of_the_sync_task_and_old_types_encode_as_before():
    from marginalia.types import SyncAnchorLabel
    lab = SyncAnchorLabel("take1", id="x", created=2.0, target_id="take2", reference_s=1, target_s=1.25)
    assert json.loads(dumps_label(lab)) == {"type": "SyncAnchorLabel", "item_id": "take1", "id": "x", "author": "",
                                            "created": 2.0, "target_id": "take2", "reference_s": 1.0,
                                            "target_s": 1.25}
    assert task_of_label(lab) == "sync" and loads_label(dumps_label(lab)).flipped().flipped() == lab
    assert dumps_label(AnchorLabel("it", id="x", created=3.0, event=2, time_s=1.0)) == (
        '{"author":"","created":3.0,"event":2,"id":"x","item_id":"it","time_s":1.0,"tolerance_s":0.05,'
        '"type":"AnchorLabel"}')
    for bad in ({"target_id": ""}, {"target_id": "take1"}, {"reference_s": -1.0}, {"target_s": float("nan")}):
        with pytest.raises(ParameterError, match="SyncAnchorLabel"):
            SyncAnchorLabel("take1", **{"target_id": "take2", **bad})
