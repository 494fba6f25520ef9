"""Engine.carry_labels: one recording's labels onto others of a project, as one undoable step."""

import threading

import numpy as np
import pytest

from marginalia.exceptions import CancelledError, ParameterError, UsageError
from marginalia.types import BoundaryLabel
from tests.core.sync.synthetic import three_takes_project


@pytest.fixture
def project(tmp_path):
    eng, ids, onsets = three_takes_project(tmp_path)
    yield eng, ids, onsets
    eng.close()


@pytest.mark.slow
def test_every_label_lands_near_the_same_note_of_each_target_and_one_undo_takes_them_back(project):
    eng, ids, onsets = project
    steps = []
    report = eng.carry_labels(ids["a"], [ids["b"], ids["c"]], progress=lambda d, t, m: steps.append((d, t)))
    assert steps[-1] == (3, 3) and len(report.stored) == 8 and report.per_target == {ids["b"]: 4, ids["c"]: 4}
    assert report.step_name == "carry of 4 labels from a to 2 recordings" and report.skipped == {}
    for name in "bc":
        tpos = eng.sequence(ids[name]).positions
        bounds = sorted(tpos[lab.index] for lab in eng.labels(ids[name]) if isinstance(lab, BoundaryLabel))
        assert np.all(np.abs(np.array(bounds) - onsets[name][[3, 8, 15]]) < 0.05)
    again = eng.carry_labels(ids["a"], [ids["b"]])
    assert again.stored == () and again.already == 4            # nothing twice
    eng.undo()                                                  # the empty carry made no step: this is the carry
    assert eng.labels(ids["b"]) == [] and eng.labels(ids["c"]) == [] and len(eng.labels(ids["a"])) == 4


@pytest.mark.slow
def test_a_cancelled_carry_stores_nothing(project):
    eng, ids, _ = project
    cancel = threading.Event()
    with pytest.raises(CancelledError):
        eng.carry_labels(ids["a"], [ids["b"], ids["c"]], cancel=cancel,
                         progress=lambda d, t, m: cancel.set())
    assert eng.labels(ids["b"]) == [] and eng.labels(ids["c"]) == []


@pytest.mark.parametrize("source, targets, message", [
    ("b", ["c"], "'b' has no labels to carry"),
    ("a", [], "choose at least one other recording"),
    ("a", ["a"], "'a' is the source itself"),
    ("a", ["b", "b"], "a recording is chosen twice"),
    ("a", ["nope"], "'nope': not an item of this project"),
])
def test_impossible_carries_are_refused_in_one_line(project, source, targets, message):
    eng, ids, _ = project
    with pytest.raises(UsageError, match=message):
        eng.carry_labels(ids.get(source, source), [ids.get(t, t) for t in targets])


@pytest.mark.slow
def test_two_recordings_of_a_project_are_aligned_to_each_other(project):
    eng, ids, onsets = project
    compared = eng.sync_recordings(ids["a"], ids["b"], question=True)
    carried = compared.path.map_times(onsets["a"])
    assert np.median(np.abs(carried - onsets["b"])) < 0.03 and np.all(np.diff(carried) >= 0)
    q = compared.question                       # best vs second: two target times at least 0.25 s apart
    assert q is not None and abs(q.best_target_s - q.alternative_target_s) >= 0.25 - 1e-9 and q.margin >= 0
    assert eng.sync_recordings(ids["a"], ids["b"]).question is None
    with pytest.raises(UsageError, match="choose another recording"):
        eng.sync_recordings(ids["a"], ids["a"])
    with pytest.raises(UsageError, match="'nope': not an item of this project"):
        eng.sync_recordings(ids["a"], "nope")


@pytest.mark.slow
def test_carried_suggestions_are_shown_not_learned_until_accepted_and_one_undo_steps_back(project):
    from marginalia.types import RegionKind, RegionLabel
    eng, ids, _ = project
    hash_before = eng.session.labels_hash([ids["b"]])
    report = eng.carry_labels(ids["a"], [ids["b"]], as_suggestions=True)
    assert len(report.stored) == 4 and all(lab.suggested for lab in report.stored)
    assert report.step_name.startswith("suggestions from a carry of 4 labels")
    assert eng.labels(ids["b"]) == [] and len(eng.suggestions(ids["b"])) == 4
    assert len(eng.labels(ids["b"], suggestions=True)) == 4
    # not learned from, not counted, not exported, and not part of the label set a model remembers
    task = eng._tasks.get(eng.session.item(ids["b"]))
    assert task.labels_of(ids["b"]) == [] and eng.item_info(ids["b"]).n_labels == 0
    assert eng.session.labels_hash([ids["b"]]) == hash_before
    assert eng.carry_labels(ids["a"], [ids["b"]], as_suggestions=True).already == 4      # nothing twice
    # accept one, then the rest; one undo takes the last acceptance back
    first = eng.suggestions(ids["b"])[0]
    accepted = eng.accept_suggestions([first.id])
    assert [lab.id for lab in accepted] == [first.id] and not accepted[0].suggested
    assert [lab.id for lab in eng.labels(ids["b"])] == [first.id] and len(eng.suggestions(ids["b"])) == 3
    assert len(eng.accept_suggestions(item_id=ids["b"])) == 3 and eng.suggestions(ids["b"]) == []
    assert len(task.labels_of(ids["b"])) == 4 and eng.session.labels_hash([ids["b"]]) != hash_before
    eng.undo()
    assert len(eng.labels(ids["b"])) == 1 and len(eng.suggestions(ids["b"])) == 3
    with pytest.raises(ParameterError, match="is not a suggestion"):
        eng.accept_suggestions([first.id])
    assert eng.reject_suggestions(item_id=ids["b"]) == 3 and eng.suggestions(ids["b"]) == []
    eng.undo()
    assert len(eng.suggestions(ids["b"])) == 3
    # a suggestion that contradicts a label of the target is left out, the others are stored
    region = next(lab for lab in eng.suggestions(ids["b"]) if isinstance(lab, RegionLabel))
    eng.reject_suggestions(item_id=ids["b"])
    eng.delete_label(first.id)
    eng.add_label(RegionLabel(item_id=ids["b"], start=region.start, stop=region.stop, kind=RegionKind.ONE))
    report = eng.carry_labels(ids["a"], [ids["b"]], as_suggestions=True)
    assert report.skipped == {"it contradicts a label of the target": 1} and len(report.stored) == 3
