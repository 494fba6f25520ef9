"""marginalia.align.aligner on long recordings: the factored scores and the coarse-to-fine decode in a band.

Recordings with more (frame, state) cells than ``_FULL_DECODE_CELLS`` are decoded by
:func:`marginalia.align.banded.align_multiresolution` from the factored scores; here the threshold is set to 0
so that the short synthetic performances take that path, and everything must come out as with the full decoder.
"""

from __future__ import annotations

import numpy as np
import pytest

import marginalia.align.aligner as sa
from marginalia.align import ScoreAligner
from marginalia.align.dp import align_with_duration_costs
from marginalia.types import AnchorLabel
from tests.core.align.test_aligner import MELODY, SR, fermata_take, make_score, render, warped_onsets


@pytest.fixture(scope="module")
def long_example():
    # the melody four times over, with rubato: 48 events, about 20 s
    score = make_score(MELODY * 4)
    y, truth = render(score, warped_onsets(score.n_events, 5), seed=3)
    return score, y, truth


def test_the_factors_are_the_frame_scores(long_example):
    score, y, _ = long_example
    aligner = ScoreAligner()
    feats = aligner.features(y, SR)
    S, G = aligner._frame_scores(feats, score, aligner._W())
    A, B, C, D = aligner._factors(feats, score, aligner._W())
    np.testing.assert_allclose(A @ B.T, S, atol=1e-9)
    np.testing.assert_allclose(C @ D.T, G, atol=1e-9)
    A, B, C, D = ScoreAligner(onset_bonus=0.0)._factors(feats, score, aligner._W())
    assert C is None and D is None
    np.testing.assert_allclose(A @ B.T, ScoreAligner(onset_bonus=0.0)._frame_scores(feats, score, aligner._W())[0],
                               atol=1e-9)


@pytest.mark.parametrize("anchored", [False, True])
def test_the_banded_decode_gives_the_full_decoders_alignment_and_runner_up(long_example, monkeypatch, anchored):
    score, y, truth = long_example
    aligner = ScoreAligner()
    feats = aligner.features(y, SR)
    anchors = [AnchorLabel(item_id="x", event=20, time_s=float(truth[20]), tolerance_s=0.02)] if anchored else None
    full = aligner.align(y, SR, score, features=feats, anchors=anchors)
    monkeypatch.setattr(sa, "_FULL_DECODE_CELLS", 0)
    band = aligner.align(y, SR, score, features=feats, anchors=anchors)
    np.testing.assert_array_equal(band.frame_alignment.onsets, full.frame_alignment.onsets)
    np.testing.assert_allclose(band.event_times_s, full.event_times_s)
    np.testing.assert_allclose(band.moves.loss, full.moves.loss, atol=1e-8)
    np.testing.assert_array_equal(band.moves.moved_to, full.moves.moved_to)
    np.testing.assert_allclose(band.moves.own, full.moves.own, atol=1e-8)
    assert band.margin == pytest.approx(full.margin, abs=1e-8)
    assert np.abs(band.event_times_s - truth).max() < 0.05


def test_a_fermata_and_a_held_final_chord_in_the_band(monkeypatch):
    """The rests and the final chord may last the whole recording: the band decode keeps them exact."""
    monkeypatch.setattr(sa, "_FULL_DECODE_CELLS", 0)
    score, y, truth = fermata_take()
    err = np.abs(ScoreAligner().align(y, SR, score).event_times_s - truth)
    assert err.max() < 0.05, err


def test_fit_takes_the_banded_decode_too(long_example, monkeypatch):
    score, y, _ = long_example
    full = ScoreAligner(n_iter=1).fit([(y, SR, score)])
    monkeypatch.setattr(sa, "_FULL_DECODE_CELLS", 0)
    band = ScoreAligner(n_iter=1).fit([(y, SR, score)])
    np.testing.assert_allclose(band.W_, full.W_)


def banded_from_now_on(long_example, monkeypatch):
    """The example, an aligner, its features and its full-decoder alignment; later alignments go through the band."""
    score, y, _ = long_example
    aligner = ScoreAligner()
    feats = aligner.features(y, SR)
    full = aligner.align(y, SR, score, features=feats)
    monkeypatch.setattr(sa, "_FULL_DECODE_CELLS", 0)
    return score, y, aligner, feats, full


def test_a_band_that_had_to_widen_for_many_states_hands_over_to_the_full_decoder(long_example, monkeypatch):
    score, y, aligner, feats, full = banded_from_now_on(long_example, monkeypatch)
    seen = {}

    def gives_up(*args, give_up=None, info=None, **kwargs):   # as when the band widened for too many events
        seen["give_up"] = give_up
        info.update(coarse=True, gave_up=True)
    monkeypatch.setattr(sa, "align_multiresolution", gives_up)
    calls = []

    def spy(*args, **kwargs):
        calls.append(1)
        return align_with_duration_costs(*args, **kwargs)
    monkeypatch.setattr(sa, "align_with_duration_costs", spy)
    out = aligner.align(y, SR, score, features=feats)
    assert calls, "the full decoder did not run"
    assert seen["give_up"] == sa._BAND_MAX_WIDENED
    np.testing.assert_array_equal(out.frame_alignment.onsets, full.frame_alignment.onsets)


def spy_on_band(monkeypatch) -> list:
    """Every call of the band decoder from now on, as its keyword arguments (the decoder still runs)."""
    calls, band = [], sa.align_multiresolution

    def spy(*args, **kwargs):
        calls.append(kwargs)
        return band(*args, **kwargs)
    monkeypatch.setattr(sa, "align_multiresolution", spy)
    return calls


def test_a_recording_too_large_for_the_full_decoder_keeps_widening_its_band(long_example, monkeypatch):
    """Past the full decoder's memory budget the band is not abandoned: no give-up, no full decode."""
    score, y, aligner, feats, full = banded_from_now_on(long_example, monkeypatch)
    monkeypatch.setattr(sa, "_FULL_DECODE_MAX_CELLS", 0)
    calls = spy_on_band(monkeypatch)

    def no_full(*args, **kwargs):
        raise AssertionError("the full decoder ran past its memory budget")
    monkeypatch.setattr(sa, "align_with_duration_costs", no_full)
    out = aligner.align(y, SR, score, features=feats)
    assert [c["give_up"] for c in calls] == [None, None]  # both decodes of the prior (the second at the local tempo)
    np.testing.assert_array_equal(out.frame_alignment.onsets, full.frame_alignment.onsets)


def test_the_finest_coarse_reading_joins_the_band_while_its_tables_are_small(long_example, monkeypatch):
    score, y, aligner, feats, _ = banded_from_now_on(long_example, monkeypatch)
    calls = spy_on_band(monkeypatch)
    small = aligner.align(y, SR, score, features=feats)
    monkeypatch.setattr(sa, "_FINEST_COARSE_CELLS", 0)
    large = aligner.align(y, SR, score, features=feats)
    # the second decode of the prior (at the local tempo) reads at the coarsest factor only, from the first's band
    finest, coarsest = sa._BAND_FACTORS + (sa._FINEST_FACTOR,), sa._BAND_FACTORS[:1]
    assert [tuple(c["factor"]) for c in calls] == [finest, coarsest, sa._BAND_FACTORS, coarsest]
    assert calls[0]["band"] is None and calls[1]["band"] is not None
    # on this easy recording every reading gives the same alignment
    np.testing.assert_array_equal(small.frame_alignment.onsets, large.frame_alignment.onsets)
