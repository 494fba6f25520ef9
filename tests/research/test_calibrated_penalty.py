"""Per-sequence penalty offsets learned on top of a fixed segmentation metric."""

import math

import numpy as np
import pytest

from benchmarks.research.calibrated_penalty import PenaltyCalibration
from marginalia.cgh.penalty_regression import sequence_features
from marginalia.exceptions import NotFittedError, ParameterError
from marginalia.metrics import region_errors
from marginalia.models.segmentation import SegmentationModel
from marginalia.types import RegionKind, RegionLabel


def _item(rng, T=48):
    """A step whose noise level varies by sequence, labelled around the step and on both flat sides.

    The features are NOT rescaled per sequence, so one penalty cannot fit every noise level.
    """
    sigma = math.exp(rng.uniform(-1.5, 1.0))
    x = np.r_[np.zeros(T // 2), np.full(T // 2, 4 * sigma)] + rng.normal(0, sigma, T)
    h = T // 2
    labels = [RegionLabel(item_id="s", start=h - 6, stop=h + 6, kind=RegionKind.ONE),
              RegionLabel(item_id="s", start=0, stop=h - 6, kind=RegionKind.ZERO),
              RegionLabel(item_id="s", start=h + 6, stop=T, kind=RegionKind.ZERO)]
    return x[:, None], labels


@pytest.mark.slow
def test_calibration_fixes_a_penalty_that_ignores_the_noise_level():
    rng = np.random.default_rng(0)
    train = [_item(rng) for _ in range(24)]
    test = [_item(rng) for _ in range(12)]
    model = SegmentationModel(min_size=2, penalty_per="constant")
    w = model.initial_w([X for X, _ in train])
    cal = PenaltyCalibration(model, w, offsets=np.arange(-6.0, 6.01, 1.0), alpha=1e-3).fit(
        [X for X, _ in train], [l for _, l in train], np.array([sequence_features(X) for X, _ in train]))
    assert cal.intervals_.shape == (24, 2) and cal.errors_.shape == (24, 13)

    def total(decode):
        return sum(region_errors(l, decode(X)).errors for X, l in test)

    fixed = total(lambda X: model.decode(X, w))
    calibrated = total(lambda X: cal.decode(X, sequence_features(X)))
    oracle = sum(int(cal.errors(X, l).min()) for X, l in test)
    assert calibrated < fixed
    assert calibrated <= oracle + 3
    # noisier sequences get larger offsets
    quiet, loud = _item(np.random.default_rng(1))[0] * 0.3, _item(np.random.default_rng(1))[0] * 3
    assert cal.predict_offset(loud, sequence_features(loud)) > cal.predict_offset(quiet, sequence_features(quiet))


def test_grid_summary_and_validation():
    model = SegmentationModel(min_size=2, penalty_per="constant")
    X, labels = _item(np.random.default_rng(2))
    w = model.initial_w([X])
    cal = PenaltyCalibration(model, w, offsets=[-8.0, 0.0, 12.0])
    segs = cal.decode_grid(X)
    assert len(segs) == 3
    first, log_k0 = cal.grid_summary(segs)
    assert first == 12.0                                   # a huge penalty leaves no change
    assert log_k0 == pytest.approx(math.log1p(segs[1].n_segments - 1))
    with pytest.raises(NotFittedError):
        cal.predict_offset(X, sequence_features(X))
    with pytest.raises(ParameterError, match="offsets"):
        PenaltyCalibration(model, w, offsets=[1.0, 0.0]).decode_grid(X)
    with pytest.raises(ParameterError, match="same number"):
        cal.fit([X], [labels, labels], np.zeros((1, 3)))
