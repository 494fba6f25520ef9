"""Sync anchors travel in dataset bundles: out and back onto the recordings of the same names, bad ones refused."""

import dataclasses
import json
import shutil

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from marginalia.engine import Engine
from marginalia.exceptions import DataFormatError
from marginalia.types import BoundaryLabel
from tests.core.sync.synthetic import three_takes_project


@pytest.fixture
def project(tmp_path):
    eng, ids, onsets = three_takes_project(tmp_path)
    yield eng, ids
    eng.close()


def _named(eng) -> list:
    """Every sync anchor as ``(reference name, target name, reference_s, target_s)``, from the first name's side."""
    names = {i.id: i.name for i in eng.items()}
    out = []
    for lab in eng.session.labels():
        if type(lab).__name__ == "SyncAnchorLabel":
            lab = lab if names[lab.item_id] < names[lab.target_id] else lab.flipped()
            out.append((names[lab.item_id], names[lab.target_id], lab.reference_s, lab.target_s))
    return sorted(out)


def _other_project(tmp_path, names="abc"):
    other = Engine.create(tmp_path / "q.marginalia")
    other.import_files([tmp_path / f"{n}.wav" for n in names])
    return other


def _write_manifest(folder, edit):
    path = folder / "manifest.json"
    data = json.loads(path.read_text())
    edit(data)
    path.write_text(json.dumps(data))


def test_sync_anchors_go_out_in_a_bundle_and_come_back_on_recordings_of_the_same_name(project, tmp_path):
    eng, ids = project
    eng.add_sync_anchor(ids["a"], ids["b"], 1.0, 1.2)
    eng.add_sync_anchor(ids["b"], ids["a"], 3.1, 2.5)          # stored on b's side
    eng.add_sync_anchor(ids["a"], ids["c"], 2.0, 2.6)
    eng.export("bundle", tmp_path / "bundle")
    manifest = json.loads((tmp_path / "bundle" / "manifest.json").read_text())
    assert sorted((e["reference_item"], e["target_item"], e["reference_s"], e["target_s"])
                  for e in manifest["sync_anchors"]) == sorted(
        [(ids["a"], ids["b"], 1.0, 1.2), (ids["b"], ids["a"], 3.1, 2.5), (ids["a"], ids["c"], 2.0, 2.6)])
    other = _other_project(tmp_path)
    try:
        assert {i.name: i.id for i in other.items()} != ids           # other ids: mapped by name
        before = len(other.labels())
        added = other.import_labels("bundle", tmp_path / "bundle")
        assert len(added) == 4 + 3 and len(other.labels()) == before + 4    # region and boundaries + anchors
        assert _named(other) == _named(eng) == [("a", "b", 1.0, 1.2), ("a", "b", 2.5, 3.1), ("a", "c", 2.0, 2.6)]
        oid = {i.name: i.id for i in other.items()}
        assert [(x.reference_s, x.target_s) for x in other.sync_anchors(oid["b"], oid["a"])] == [(1.2, 1.0),
                                                                                              (3.1, 2.5)]
        assert other.import_labels("bundle", tmp_path / "bundle") == []     # nothing new the second time
        other.undo()                                                        # the import of anchors: one step
        other.undo()
        assert _named(other) == [] and len(other.labels()) == before
    finally:
        other.close()
    # into the project it came from, after a boundary and an anchor moved: the moved ones stay (same ids), the
    # exported ones come back as new labels
    boundary = next(lab for lab in eng.labels(ids["a"]) if isinstance(lab, BoundaryLabel))
    eng.session.change_label(dataclasses.replace(boundary, index=boundary.index - 4))
    moved = eng.sync_anchors(ids["a"], ids["c"])[0]
    eng.move_sync_anchor(moved.id, ids["a"], 2.2, 2.8)
    added = eng.import_labels("bundle", tmp_path / "bundle")
    assert [type(x).__name__ for x in added] == ["BoundaryLabel", "SyncAnchorLabel"]
    assert added[0].index == boundary.index and added[0].id != boundary.id
    assert eng.session.label(boundary.id).index == boundary.index - 4
    assert [(x.reference_s, x.target_s) for x in eng.sync_anchors(ids["a"], ids["c"])] == [(2.0, 2.6), (2.2, 2.8)]


def test_a_bundle_without_sync_anchors_is_written_as_before(project, tmp_path):
    eng, _ = project
    eng.export("bundle", tmp_path / "bundle")
    assert "sync_anchors" not in json.loads((tmp_path / "bundle" / "manifest.json").read_text())


def _bad_bundles(ids):
    def set_field(key, value, k=0):
        return lambda d: d["sync_anchors"][k].__setitem__(key, value)
    return [
        (set_field("target_item", "nope"), r"field 'sync_anchors\[0\].target_item': 'nope' is no item of the bundle; "
                                           r"give the 'id' of one of the recordings"),
        (set_field("target_item", ids["a"]), r"'sync_anchors\[0\]': joins a recording to itself"),
        (set_field("reference_s", -1), r"'sync_anchors\[0\].reference_s': expected a time in seconds >= 0, got -1"),
        (set_field("target_s", "2"), r"'sync_anchors\[0\].target_s': expected a time in seconds >= 0"),
        (set_field("target_s", 99.0), r"'sync_anchors\[0\]': 99.000 s lies past the end of b \(\d+\.\d+ s\); "
                                      r"correct the time or remove the anchor"),
        (lambda d: d["sync_anchors"].append(dict(d["sync_anchors"][0], reference_s=0.5, target_s=3.0)),
         r"'sync_anchors\[2\]': 0.500 s \u2194 3.000 s crosses 'sync_anchors\[0\]' \(1.000 s \u2194 1.200 s\) "
         r"between a and b: the music cannot go both ways; correct or remove one of them"),
        (lambda d: d.__setitem__("sync_anchors", {}), r"field 'sync_anchors': expected a list"),
        (lambda d: d["sync_anchors"].__setitem__(0, 3), r"field 'sync_anchors\[0\]': expected an object"),
    ]


def test_bad_sync_anchors_are_refused_in_one_line_naming_the_manifest_and_nothing_is_stored(project, tmp_path):
    eng, ids = project
    eng.add_sync_anchor(ids["a"], ids["b"], 1.0, 1.2)
    eng.add_sync_anchor(ids["a"], ids["b"], 2.5, 3.1)
    eng.export("bundle", tmp_path / "bundle")
    other = _other_project(tmp_path)
    try:
        labels_before = other.session.labels()
        for k, (edit, message) in enumerate(_bad_bundles(ids)):
            folder = tmp_path / f"bad{k}"
            shutil.copytree(tmp_path / "bundle", folder)
            _write_manifest(folder, edit)
            with pytest.raises(DataFormatError, match=message) as info:
                other.import_labels("bundle", folder)
            assert str(info.value).startswith(str(folder / "manifest.json")) and "\n" not in str(info.value)
            assert other.session.labels() == labels_before
        # an anchor crossing one the project already has: refused, the project's stays
        oid = {i.name: i.id for i in other.items()}
        mine = other.add_sync_anchor(oid["b"], oid["a"], 0.6, 2.0)
        with pytest.raises(DataFormatError, match=r"'sync_anchors\[0\]': 1.000 s \u2194 1.200 s crosses the "
                                                  r"project's anchor 2.000 s \u2194 0.600 s between a and b"):
            other.import_labels("bundle", tmp_path / "bundle")
        assert other.session.labels() == labels_before + [mine]
    finally:
        other.close()


def test_anchors_between_recordings_the_project_lacks_are_skipped_with_a_warning(project, tmp_path):
    eng, ids = project
    eng.add_sync_anchor(ids["a"], ids["b"], 1.0, 1.2)
    eng.add_sync_anchor(ids["a"], ids["c"], 2.0, 2.6)
    eng.export("bundle", tmp_path / "bundle")
    other = _other_project(tmp_path, names="ac")
    try:
        with pytest.warns(UserWarning, match="skipped 1 sync anchor"):
            other.import_labels("bundle", tmp_path / "bundle")
        assert _named(other) == [("a", "c", 2.0, 2.6)]
    finally:
        other.close()


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 6), st.integers(0, 6)), max_size=9))
def test_find_crossing_finds_a_crossing_exactly_when_brute_force_does(times):
    from marginalia.sync.anchors import find_crossing
    crosses = lambda i, j: times[i][0] < times[j][0] and times[i][1] > times[j][1]  # noqa: E731
    found = find_crossing(times)
    any_crossing = any(crosses(i, j) for i in range(len(times)) for j in range(len(times)))
    assert (found is not None) == any_crossing
    if found is not None:
        assert crosses(*found)


def test_many_anchors_are_checked_in_well_under_a_second():
    import time

    import numpy as np

    from marginalia.sync.anchors import find_crossing
    t = np.sort(np.random.default_rng(0).uniform(0, 600, (200_000, 2)), axis=0)
    start = time.perf_counter()
    assert find_crossing(t) is None
    t[1000] = (t[1000, 0], t[0, 1])                        # one anchor whose target goes back to the start
    assert find_crossing(t) == (999, 1000)
    assert time.perf_counter() - start < 1.0
