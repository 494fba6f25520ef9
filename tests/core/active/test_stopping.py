import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from marginalia.active.stopping import StoppingCriterion, convergence_eta, mean_uncertainty, robust_mean
from marginalia.exceptions import ParameterError


def test_robust_mean_drops_the_extreme_values():
    x = np.r_[np.full(18, 1.0), -1000.0, 1000.0]
    assert robust_mean(x) == pytest.approx(1.0)
    assert robust_mean([3.0]) == 3.0


@settings(max_examples=50)
@given(x=st.lists(st.floats(-1e3, 1e3), min_size=1, max_size=30))
def test_robust_mean_lies_between_the_quantiles(x):
    lo, hi = np.quantile(x, [0.1, 0.9])
    assert lo - 1e-9 <= robust_mean(x) <= hi + 1e-9


def test_eta_is_eq_1_8_on_a_known_sequence():
    h = [5.0, 4.0, 3.0, 2.0, 1.0]
    # window 4: robust means of [4,3,2,1] and [5,4,3,2] (quantile trimming keeps the middle values)
    expected = abs(robust_mean([4, 3, 2, 1]) - robust_mean([5, 4, 3, 2]))
    assert convergence_eta(h, 4) == pytest.approx(expected) and expected == pytest.approx(1.0)
    assert convergence_eta(h[:4], 4) is None


def test_fires_on_a_flat_sequence_and_not_on_a_decreasing_one():
    flat = StoppingCriterion(window=10, threshold=1e-3)
    fired = [flat.update(0.3 + 1e-5 * np.sin(i)) for i in range(30)]
    assert not any(fired[:10])  # needs window + 1 values
    assert fired[10] and flat.fired_at_ == 11
    assert "more labels are unlikely to help" in flat.evidence() and "η=" in flat.evidence()

    falling = StoppingCriterion(window=10, threshold=1e-3)
    assert not any(falling.update(1.0 - 0.01 * i) for i in range(60))
    assert falling.eta_ == pytest.approx(0.01)
    assert "still changing" in falling.evidence()


def test_fires_once_a_decreasing_curve_flattens():
    crit = StoppingCriterion(window=5, threshold=1e-3)
    curve = np.r_[np.linspace(1.0, 0.2, 20), np.full(20, 0.2)]
    fired_at = next(i for i, v in enumerate(curve) if crit.update(v))
    assert 20 <= fired_at <= 26
    assert crit.as_dict()["fired"] is True


def test_relative_threshold_is_scale_free():
    a, b = StoppingCriterion(4, 0.05, relative=True), StoppingCriterion(4, 0.05, relative=True)
    seq = [1.0, 0.9, 0.85, 0.84, 0.84, 0.839, 0.839]
    ra = [a.update(v) for v in seq]
    rb = [b.update(1000 * v) for v in seq]
    assert ra == rb and a.eta_ == pytest.approx(b.eta_)


def test_evidence_before_enough_values():
    crit = StoppingCriterion(window=3)
    crit.update(0.5)
    assert "1 of the 4" in crit.evidence() and crit.as_dict()["eta"] is None


def test_bad_inputs():
    with pytest.raises(ParameterError, match="window"):
        StoppingCriterion(window=0)
    with pytest.raises(ParameterError, match="threshold"):
        StoppingCriterion(threshold=-1.0)
    crit = StoppingCriterion()
    with pytest.raises(ParameterError, match="mean_uncertainty"):
        crit.update(float("nan"))
    with pytest.raises(ParameterError, match="mean_uncertainty"):
        crit.update("high")
    assert crit.history_ == []
    with pytest.raises(ParameterError, match="empty"):
        mean_uncertainty([])
    with pytest.raises(ParameterError, match="empty"):
        robust_mean([])
    assert mean_uncertainty([0.2, 0.4]) == pytest.approx(0.3)


def test_empty_or_non_finite_inputs_are_refused_naming_the_argument():
    from marginalia.active.stopping import StoppingCriterion, mean_uncertainty, robust_mean
    from marginalia.exceptions import ParameterError
    with pytest.raises(ParameterError, match="uncertainties: the unlabelled pool is empty"):
        mean_uncertainty([])
    with pytest.raises(ParameterError, match="uncertainties: expected finite values, got nan"):
        mean_uncertainty([0.1, float("nan")])
    with pytest.raises(ParameterError, match="values: expected finite values, got inf"):
        robust_mean([1.0, float("inf")])
    with pytest.raises(ParameterError, match="mean_uncertainty: expected a finite number, got nan"):
        StoppingCriterion(window=2, threshold=0.1).update(float("nan"))
