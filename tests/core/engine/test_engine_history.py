"""The engine's history and models: named imports, restore, and a model on more labels never lost silently."""

import pytest

from marginalia.exceptions import ParameterError
from marginalia.types import BoundaryLabel


def _truth_labels(eng, truth):
    return [BoundaryLabel(rec.id, index=int(k)) for rec in eng.session.items() for k in truth[rec.name]]


def test_an_import_is_a_named_step_that_restore_brings_back_after_it_was_undone_and_overwritten(project):
    eng, truth, tmp = project
    labels = eng.add_labels(_truth_labels(eng, truth), name="import of 8 labels from expert.csv")
    assert eng.next_undo.name == "import of 8 labels from expert.csv" and eng.next_undo.added == 8
    step = eng.undo()
    assert step.name == "import of 8 labels from expert.csv" and eng.labels() == []
    assert eng.next_redo.id == step.id
    eng.add_label(BoundaryLabel(labels[0].item_id, index=150))
    assert not eng.can_redo and eng.next_redo is None
    assert [s.kind for s in eng.history()] == ["edit", "undo", "edit"] and eng.history()[0].undone
    assert sorted(lab.id for lab in eng.labels_at(step.id)) == sorted(lab.id for lab in labels)
    new = eng.restore(step.id)
    assert (new.added, new.deleted) == (8, 1) and sorted(lab.id for lab in eng.labels()) == sorted(
        lab.id for lab in labels)
    with pytest.raises(ParameterError, match="no step 999"):
        eng.restore(999)


@pytest.mark.slow
def test_a_retrain_on_fewer_labels_keeps_the_better_model_and_revert_brings_it_back(project):
    eng, truth, _ = project
    eng.add_labels(_truth_labels(eng, truth))
    many = eng.retrain()
    first = eng.session.items()[0].id
    assert eng.better_model_than(many) is None
    versions = {v["id"]: v for v in eng.model_versions()}
    assert versions[many]["n_labels"] == 8 and versions[many]["current"]
    eng.undo()                                                # the labels go...
    lone = eng.add_label(BoundaryLabel(first, index=100))     # ... and models are fitted on what is left
    for k in range(8):                                        # enough of them to prune every older model
        lone = eng.change_label(BoundaryLabel(first, id=lone.id, index=20 + 25 * k))
        eng.update_model(first)
    versions = {v["id"]: v for v in eng.model_versions(first)}
    assert many in versions, "the model fitted on the most labels was pruned"
    latest = eng.model_id(first)
    assert versions[latest]["n_labels"] == 1 and len(versions) <= 6
    assert eng.better_model_than(latest)["id"] == many
    blob_many = eng.session.load_model(many).blob
    reverted = eng.revert_model(many)
    assert reverted != many and eng.model_id(first) == reverted
    now = eng.model_versions(first)[-1]
    assert (now["id"], now["trained_by"], now["reverted_from"], now["n_labels"], now["current"]) == (
        reverted, "revert", many, 8, True)
    pred = eng.predict(first)
    assert pred.model_id == reverted
    assert eng.session.load_model(reverted).blob == blob_many      # the very parameters fitted on 8 labels
    assert eng.revert_model(latest) != latest and eng.model_id(first) != reverted   # a revert is reverted the same way
