"""The recipe's stage settings: small validated objects, the flat shorthand, and model files written before them."""

import dataclasses
import json
import pathlib

import pytest

import marginalia as mg
from marginalia.cgh.recipe import CghSegmenter
from marginalia.cgh.settings import (
    STAGES,
    LawSettings,
    LearningSettings,
    PlatformSettings,
    PruningSettings,
    WindowSettings,
)
from marginalia.exceptions import ParameterError

DATA = pathlib.Path(__file__).parent / "data"


def test_the_defaults_are_the_stages_defaults():
    seg = CghSegmenter()
    assert seg.learning == LearningSettings(learner="ssvm", C=1.0, max_iter=5, rho=1.0, random_state=0)
    assert seg.windows == WindowSettings(metric_window=6000)
    assert seg.platforms == PlatformSettings(density_split=5.0, min_class_sequences=4, min_class_profiles=4)
    assert seg.law == LawSettings() and seg.law.law_metric == "auto" and seg.law.law_metric_margin == 2
    assert seg.pruning == PruningSettings(prune=True, candidates="auto", overseg_penalty=2.0, spike_threshold=4.0)
    assert seg.min_size == 3 and seg.n_jobs == 1
    # each stage's constructor is small: the recipe's two dozen settings are spread over five of them
    assert all(len(dataclasses.fields(cls)) <= 7 for cls in STAGES.values())


def test_a_field_by_name_is_short_for_its_stage():
    short = CghSegmenter(max_iter=2, prune=False, law_metric="logratio", metric_window=None, density_split=None)
    long = CghSegmenter(LearningSettings(max_iter=2), WindowSettings(metric_window=None),
                        PlatformSettings(density_split=None), LawSettings(law_metric="logratio"),
                        PruningSettings(prune=False))
    assert short.settings() == long.settings()
    # a name overrides that field of a stage given whole, and leaves the stage's other fields
    both = CghSegmenter(learning=LearningSettings(C=0.5), max_iter=3)
    assert (both.learning.C, both.learning.max_iter) == (0.5, 3)
    assert set(short.settings()) == {f.name for cls in STAGES.values() for f in dataclasses.fields(cls)}


@pytest.mark.parametrize("kwargs, name", [
    ({"learner": "boosting"}, "learner"), ({"C": 0}, "C"), ({"max_iter": 2.5}, "max_iter"), ({"rho": -1}, "rho"),
    ({"metric_window": 0}, "metric_window"), ({"density_split": float("nan")}, "density_split"),
    ({"min_class_sequences": True}, "min_class_sequences"), ({"margin": "wide"}, "margin"),
    ({"alphas": ()}, "alphas"), ({"law_metric": "euclidean"}, "law_metric"), ({"law_metric_margin": 1.5},
                                                                                 "law_metric_margin"),
    ({"prune": "yes"}, "prune"), ({"candidates": "all"}, "candidates"), ({"overseg_penalty": -2}, "overseg_penalty"),
    ({"spike_threshold": 0}, "spike"), ({"max_iters": 5}, "unknown setting 'max_iters'"),
])
def test_a_wrong_setting_is_refused_by_name_before_any_work(kwargs, name):
    with pytest.raises(ParameterError, match=name):
        CghSegmenter(**kwargs)


def test_a_stage_must_be_its_settings_object():
    with pytest.raises(ParameterError, match="pruning: expected a PruningSettings"):
        CghSegmenter(pruning={"prune": False})
    with pytest.raises(dataclasses.FrozenInstanceError):
        CghSegmenter().learning.max_iter = 9          # a change goes through dataclasses.replace, and is checked


def test_settings_given_as_lists_are_frozen_as_tuples():
    law = LawSettings(counts=[0, 1], alphas=[1e-2], margin=[0.5, 1.0])
    assert law.counts == (0, 1) and law.alphas == (1e-2,) and law.margin == (0.5, 1.0)
    assert LawSettings(margin=0.75).margin == 0.75


@pytest.mark.slow
def test_a_model_file_written_before_the_stage_settings_still_loads_and_segments_the_same():
    """``recipe-0.2.0.model``: ``mg.CghSegmenter(max_iter=1).fit`` on the demo, saved by Marginalia 0.2.0 when the
    recipe took its settings as two dozen flat keywords; the JSON beside it holds what that recipe predicted."""
    expected = json.loads((DATA / "recipe-0.2.0.json").read_text(encoding="utf-8"))
    recipe = mg.load_model(DATA / "recipe-0.2.0.model", task="segmentation").penalty_law()
    assert isinstance(recipe, CghSegmenter)
    assert recipe.to_dict()["recipe"] == expected["recipe"]
    assert recipe.pruning.spike_threshold == expected["spike_threshold"]
    assert recipe.law_metrics_ == expected["law_metrics"] and recipe.pruner_candidates_ == expected["pruner_candidates"]
    profiles = mg.read_profiles(mg.demo_file("profiles.csv"))
    assert {p.name: recipe.segment(p).changes.tolist() for p in profiles} == expected["changes"]
