"""A fitted copy-number recipe is a function of the set of labels, not of the order they come in."""

from __future__ import annotations

import random

import numpy as np
import pytest

import marginalia as mg


@pytest.fixture(scope="module")
def demo():
    profiles = mg.read_profiles(mg.demo_file("profiles.csv"))
    return profiles, mg.read_annotations(mg.demo_file("annotations.csv"), profiles)


@pytest.mark.parametrize("seed", [0, 1])
@pytest.mark.slow
def test_the_same_labels_in_any_order_give_the_same_model(demo, seed):
    profiles, labels = demo
    reference = mg.CghSegmenter(max_iter=2).fit(profiles, labels)
    order = list(range(len(profiles)))
    random.Random(seed).shuffle(order)
    shuffled_labels = list(labels)
    random.Random(seed + 100).shuffle(shuffled_labels)
    again = mg.CghSegmenter(max_iter=2).fit([profiles[i] for i in order], shuffled_labels)
    assert np.array_equal(reference.w_, again.w_)
    assert reference.to_dict() == again.to_dict()
    assert [s.changes.tolist() for s in reference.predict(profiles)] == \
        [s.changes.tolist() for s in again.predict(profiles)]


@pytest.mark.slow
def test_label_lists_per_sequence_and_a_flat_list_fit_the_same_model(demo):
    profiles, labels = demo
    by_name = {p.name: [] for p in profiles}
    for lab in labels:
        by_name[lab.item_id].append(lab)
    labelled = [p for p in profiles if by_name[p.name]]
    nested = mg.CghSegmenter(max_iter=2).fit(labelled, [by_name[p.name] for p in labelled])
    flat = mg.CghSegmenter(max_iter=2).fit(profiles, labels)
    assert np.array_equal(nested.w_, flat.w_)


def test_a_label_of_no_given_sequence_is_named(demo):
    profiles, labels = demo
    with pytest.raises(mg.ParameterError, match="match no sequence name"):
        mg.CghSegmenter(max_iter=1).fit(profiles[:2], labels)
