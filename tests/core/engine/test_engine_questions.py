"""Engine questions: ask about the top-ranked part, answer, and exactly the labels shown are stored."""

import math

import pytest

from marginalia.engine import Engine
from marginalia.exceptions import ParameterError
from marginalia.types import BoundaryLabel, RegionLabel, label_fact

from .test_engine_segmentation import _write_profiles


@pytest.mark.parametrize("which", ["model", "runner-up"])
def test_an_answer_stores_exactly_the_labels_the_question_shows(project, which):
    eng, _, _ = project
    query = eng.next_queries(3)[0]
    question = eng.question(query)
    assert question is not None and question.item_id == query.item_id
    # the question shows the margin its query was ranked by
    assert question.margin == pytest.approx(-math.log(query.uncertainty), rel=1e-9, abs=1e-12)
    shown = [label_fact(lab) for lab in question.answers[which]]
    stored = eng.answer(question, which)
    assert [label_fact(lab) for lab in stored] == shown
    assert sorted(map(label_fact, eng.labels(query.item_id))) == sorted(shown)
    # a count label on the disputed window only: no exact boundary, not the whole item
    a, b = question.region
    assert all(isinstance(lab, RegionLabel) and (lab.start, lab.stop) == (a, b) for lab in stored)
    assert not any(isinstance(lab, BoundaryLabel) for lab in eng.labels())
    assert eng.next_undo.name.startswith("answer: ")
    eng.undo()                                   # the answer is one undoable step
    assert eng.labels(query.item_id) == []
    # answering again stores it once
    assert len(eng.answer(question, which)) == len(shown)
    assert eng.answer(question, which) == []


def test_an_unknown_answer_is_refused(project):
    eng, _, _ = project
    question = eng.question(eng.next_queries(1)[0])
    with pytest.raises(ParameterError, match="answer: expected one of"):
        eng.answer(question, "both")



def test_undo_and_redo_bring_back_the_model_of_the_label_set(tmp_path):
    truth = _write_profiles(tmp_path / "profiles.csv")
    eng = Engine.create(tmp_path / "u.marginalia")
    try:
        eng.import_files([tmp_path / "profiles.csv"])
        item = next(i for i in eng.items() if i.name == "1:1")
        a, b = truth["1:1"]
        eng.add_label(RegionLabel(item_id=item.id, start=a - 30, stop=a + 30, kind="1"))
        eng.update_model(item.id)
        before_id, before = eng.model_id(item.id), eng.predict(item.id).margin
        # a label the model does not obey: the perceptron steps
        eng.add_label(RegionLabel(item_id=item.id, start=b - 30, stop=b + 30, kind="0"))
        eng.update_model(item.id)
        after_id, after = eng.model_id(item.id), eng.predict(item.id).margin
        assert after_id != before_id
        eng.undo()
        eng.update_model(item.id)
        assert eng.model_id(item.id) == before_id and eng.predict(item.id).margin == before
        eng.redo()
        eng.update_model(item.id)
        assert eng.model_id(item.id) == after_id and eng.predict(item.id).margin == after
    finally:
        eng.close()
