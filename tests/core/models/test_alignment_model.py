import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from marginalia.exceptions import ParameterError
from marginalia.learners.ssvm import SSVM
from marginalia.models.alignment import AlignmentModel, alignment_assignment
from marginalia.models.persistence import from_bytes, to_bytes
from marginalia.types import Alignment


def all_alignments(T, E):
    for rest in itertools.combinations(range(1, T), E - 1):
        yield Alignment([0, *rest], T)


@settings(max_examples=15)
@given(st.integers(2, 6), st.integers(1, 3), st.integers(0, 10 ** 6), st.sampled_from(["hamming", "onset"]))
def test_decode_and_loss_augmented_match_brute_force(T, E, seed, loss):
    E = min(E, T)
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(T, 3))
    Phi = (rng.random((E, 4)) < 0.5).astype(float)
    m = AlignmentModel(n_classes=4, loss=loss)
    w = rng.normal(size=3 * 4 + 4)
    item = (X, Phi)
    m.initial_w([item])
    S = m.scores(item, w)
    cands = list(all_alignments(T, E))
    for y in cands[:3]:
        assert m.score(item, y, w) == pytest.approx(sum(S[t, e] for t, e in enumerate(y.frame_events())))
    best = max(m.score(item, y, w) for y in cands)
    assert m.score(item, m.decode(item, w), w) == pytest.approx(best)
    truth = cands[rng.integers(len(cands))]
    y = m.loss_augmented_decode(item, truth, w)
    aug = max(m.loss(truth, z) + m.score(item, z, w) for z in cands)
    assert m.loss(truth, y) + m.score(item, y, w) == pytest.approx(aug)


def synthetic(rng, T=60, E=6, p=4):
    classes = rng.integers(0, p, E)
    Phi = np.eye(p)[classes]
    onsets = np.sort(rng.choice(np.arange(1, T), E - 1, replace=False))
    y = Alignment([0, *onsets], T)
    X = rng.normal(0, 0.6, (T, p)) + alignment_assignment(y) @ Phi
    X = X[:, ::-1].copy()  # features in another order than the classes: W must learn the permutation
    return (X, Phi), y


def test_ssvm_learns_scorers():
    rng = np.random.default_rng(0)
    data = [synthetic(rng) for _ in range(6)]
    m = AlignmentModel(n_classes=4, loss="hamming")
    s = SSVM(m, C=10.0, max_iter=30, random_state=0).fit([d[0] for d in data], [d[1] for d in data])
    test = [synthetic(rng) for _ in range(4)]
    learned = np.mean([m.loss(y, m.decode(item, s.w_)) for item, y in test])
    start = np.mean([m.loss(y, m.decode(item, m.default_w())) for item, y in test])
    assert learned < 0.5 * start


def test_round_trip_and_errors():
    rng = np.random.default_rng(1)
    item, y = synthetic(rng)
    m = AlignmentModel(n_classes=4, frame_rate=20.0)
    w = m.initial_w([item]) + 0.5
    m2, w2, _ = from_bytes(to_bytes(m, w, {"features": {"kind": "chroma"}}), task="alignment")
    assert m2.decode(item, w2) == m.decode(item, w)
    with pytest.raises(ParameterError, match="Phi"):
        m.decode((item[0], np.ones((3, 5))), w)
    with pytest.raises(ParameterError, match="pair"):
        m.decode(item[0], w)
    with pytest.raises(ParameterError, match="do not fit"):
        AlignmentModel(n_classes=4, min_frames=20).decode(item, w)
