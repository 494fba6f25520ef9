"""get_params of the aligners is read from their constructors' signatures (models._params.init_params)."""

import pytest

from marginalia.align import ScoreAligner
from marginalia.models._params import init_params
from marginalia.sync import SyncAligner

# the lists the aligners kept by hand before; a model file stores exactly these
SCORE_PARAMS = ("coarse", "onset_weight", "onset_decay_s", "silence_db", "prior_weight", "prior_span",
                "refine_frames", "runner_up", "n_iter", "ridge", "onset_bonus", "prior_shape", "count_runs",
                "rolled_chord_s", "blend")
SYNC_PARAMS = ("features", "coarse", "band", "max_cells", "pyramid", "corridor_s", "metric", "loss", "C",
               "max_iter", "train_pool", "runner_up", "refine_s", "refine_window_s", "step_cost")


@pytest.mark.parametrize("cls, names, changed", [
    (ScoreAligner, SCORE_PARAMS, {"coarse": 2, "blend": 0.25, "prior_shape": "quadratic"}),
    (SyncAligner, SYNC_PARAMS, {"coarse": 3, "band": 0.5, "metric": "diagonal", "C": 2.0}),
])
def test_params_are_the_constructor_arguments_in_order(cls, names, changed):
    obj = cls(**changed)
    params = obj.get_params()
    assert tuple(params) == names
    assert all(params[k] == v for k, v in changed.items())
    assert cls(**params).get_params() == params


def test_init_params_skips_star_arguments():
    class Thing:
        def __init__(self, a, b=2, *args, c=3, **kwargs):
            self.a, self.b, self.c = a, b, c

    assert init_params(Thing(1, c=5)) == {"a": 1, "b": 2, "c": 5}
