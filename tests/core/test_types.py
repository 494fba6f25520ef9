import numpy as np
import pytest

from marginalia.exceptions import ParameterError
from marginalia.types import Alignment, AnchorLabel, MidiScore, RegionKind, RegionLabel, Segmentation, Sequence, Warping


def test_sequence_is_frozen_and_2d():
    s = Sequence(np.arange(5.0), name="x")
    assert s.values.shape == (5, 1)
    with pytest.raises(ValueError):
        s.values[0, 0] = 3.0


def test_sequence_rejects_nan_with_sample_index():
    with pytest.raises(ParameterError, match="sample 2"):
        Sequence([0.0, 1.0, np.nan])


def test_segmentation_validation_and_labels():
    seg = Segmentation([2, 5])
    assert seg.n_samples == 5
    assert seg.labels().tolist() == [0, 0, 1, 1, 1]
    with pytest.raises(ParameterError):
        Segmentation([3, 2, 5])
    with pytest.raises(ParameterError):
        Segmentation([2, 4], n_samples=5)


def test_alignment_and_warping_validation():
    al = Alignment([0, 3, 4], n_frames=6)
    assert al.frame_events().tolist() == [0, 0, 0, 1, 2, 2]
    with pytest.raises(ParameterError):
        Alignment([0, 0, 4], n_frames=6)
    w = Warping([[0, 0], [1, 1], [1, 2], [2, 2]])
    assert w.shape == (3, 3)
    with pytest.raises(ParameterError):
        Warping([[0, 0], [2, 2]])


def test_score_groups_events_and_builds_phi():
    sc = MidiScore(pitches=[60, 64, 67, 62], onsets_s=[0.0, 0.0, 0.0005, 1.0], offsets_s=[1, 1, 1, 2])
    assert sc.n_events == 2
    assert sc.event_pitches(0) == (60, 64, 67)
    phi = sc.event_matrix(12)
    assert phi.shape == (2, 12) and phi[0, 0] == 1 and phi[0, 4] == 1 and phi[1, 2] == 1
    np.testing.assert_allclose(sc.event_onsets_s, [0.0, 1.0])


def test_labels_get_ids_and_validate():
    lab = RegionLabel(item_id="a", start=3, stop=10, kind="1")
    assert lab.kind is RegionKind.ONE and len(lab.id) == 32 and lab.created > 0
    with pytest.raises(ParameterError):
        RegionLabel(item_id="a", start=5, stop=5)
    with pytest.raises(ParameterError):
        AnchorLabel(item_id="a", event=1, time_s=float("nan"))


def test_score_is_a_deprecated_alias_of_midiscore():
    import marginalia as mg
    from marginalia.types import MidiScore

    with pytest.warns(DeprecationWarning, match="use MidiScore"):
        from marginalia.types import Score
    assert Score is MidiScore
    with pytest.warns(DeprecationWarning):
        assert mg.Score is MidiScore
    assert "MidiScore" in mg.__all__ and "Score" not in mg.__all__
