import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from marginalia.active.parts import Part
from marginalia.active.uncertainty import (
    STRATEGIES,
    PartScores,
    next_queries,
    pool_uncertainties,
    rank_parts,
    select_batch,
    uncertainty_from_scores,
)
from marginalia.exceptions import ParameterError
from marginalia.types import Query


class TableScorer:
    """Scores looked up in a table: a constructed example with a known answer."""

    def __init__(self, table):
        self.table = table
        self.calls = 0

    def part_scores(self, part):
        self.calls += 1
        return self.table[part]


def _pool():
    parts = [Part("a", 0, 10), Part("b", 0, 100), Part("c", 0, 10), Part("d", 0, 40)]
    # "c" is the known-uncertain part for every score-based strategy:
    # lowest best score per sample, smallest best-worst spread per sample, smallest best-2nd margin.
    table = {
        parts[0]: PartScores(best=-10.0, second=-14.0, worst=-60.0, size=10, scale=2.0),
        parts[1]: PartScores(best=-100.0, second=-103.0, worst=-900.0, size=100, scale=2.0),
        parts[2]: PartScores(best=-30.0, second=-30.5, worst=-40.0, size=10, scale=2.0),
        parts[3]: PartScores(best=-40.0, second=-44.0, worst=-300.0, size=40, scale=2.0),
    }
    return parts, TableScorer(table)


@pytest.mark.parametrize("strategy", ["scoring", "best-vs-worst", "best-vs-2nd"])
def test_each_strategy_ranks_the_known_uncertain_part_first(strategy):
    parts, scorer = _pool()
    q = pool_uncertainties(parts, scorer, strategy)
    assert int(np.argmax(q)) == 2
    queries = next_queries(parts, scorer, 1, strategy=strategy, random_state=0)
    assert queries == [Query("c", 0, 10, float(q[2]), strategy, 0)]


def test_margins_and_normalisation_follow_the_documented_formulas():
    s = PartScores(best=-30.0, second=-30.5, worst=-40.0, size=10, scale=2.0)
    assert uncertainty_from_scores(s, "best-vs-2nd") == pytest.approx(np.exp(-0.5 / 2.0))
    assert uncertainty_from_scores(s, "best-vs-worst") == pytest.approx(np.exp(-10.0 / (10 * 2.0)))
    assert uncertainty_from_scores(s, "scoring") == pytest.approx(np.exp(30.0 / (10 * 2.0)))
    # a part twice as long with the same per-sample scores is equally uncertain for scoring / best-vs-worst
    s2 = PartScores(best=-60.0, second=-60.5, worst=-80.0, size=20, scale=2.0)
    for strategy in ("scoring", "best-vs-worst", "best-vs-2nd"):
        assert uncertainty_from_scores(s2, strategy) == pytest.approx(uncertainty_from_scores(s, strategy))
    # a single feasible structure: nothing to ask
    assert uncertainty_from_scores(PartScores(best=1.0, second=None), "best-vs-2nd") == 0.0
    # identical best and runner-up: maximal uncertainty
    assert uncertainty_from_scores(PartScores(best=1.0, second=1.0), "best-vs-2nd") == 1.0


def test_random_strategy_is_seeded_and_ignores_the_scorer():
    parts, scorer = _pool()
    a = pool_uncertainties(parts, scorer, "random", random_state=3)
    b = pool_uncertainties(parts, scorer, "random", random_state=3)
    assert np.array_equal(a, b) and scorer.calls == 0
    assert np.all((a >= 0) & (a < 1))
    assert not np.array_equal(a, pool_uncertainties(parts, scorer, "random", random_state=4))


@settings(max_examples=40)
@given(n=st.integers(1, 12), seed=st.integers(0, 2**16))
def test_ties_are_broken_deterministically_by_the_seed(n, seed):
    q = np.full(n, 0.5)
    o1 = rank_parts(q, random_state=seed)
    o2 = rank_parts(q, random_state=seed)
    assert np.array_equal(o1, o2)
    assert sorted(o1.tolist()) == list(range(n))


@settings(max_examples=60)
@given(q=st.lists(st.floats(0, 1), min_size=1, max_size=15), seed=st.integers(0, 100))
def test_ranking_is_by_decreasing_uncertainty(q, seed):
    order = rank_parts(q, random_state=seed)
    ranked = np.asarray(q)[order]
    assert np.all(np.diff(ranked) <= 0)


def test_batch_suppresses_overlapping_and_same_item_parts():
    parts = [Part("a", 0, 10, "window"), Part("a", 5, 15, "window"), Part("a", 10, 20, "window"),
             Part("b", 0, 10, "window")]
    q = [0.9, 0.8, 0.7, 0.1]
    assert select_batch(parts, q, 3, suppress=None) == [0, 1, 2]
    assert select_batch(parts, q, 3, suppress="overlap") == [0, 2, 3]
    assert select_batch(parts, q, 3, suppress="item") == [0, 3]
    assert select_batch(parts, q, 10, suppress="overlap") == [0, 2, 3]


@pytest.mark.slow
@settings(max_examples=50)
@given(spans=st.lists(st.tuples(st.integers(0, 3), st.integers(0, 20), st.integers(1, 8)), min_size=1, max_size=10),
       n=st.integers(1, 6), seed=st.integers(0, 50))
def test_batches_never_overlap_and_are_greedy(spans, n, seed):
    parts = [Part(f"i{i}", s, s + w, "window") for i, s, w in spans]
    q = np.random.default_rng(seed).random(len(parts))
    chosen = select_batch(parts, q, n, suppress="overlap", random_state=seed)
    assert 1 <= len(chosen) <= n
    for x in range(len(chosen)):
        for y in range(x + 1, len(chosen)):
            assert not parts[chosen[x]].overlaps(parts[chosen[y]])
    # greedy: any skipped part ranked above the last chosen overlaps a chosen one
    if len(chosen) < n:
        for i in range(len(parts)):
            if i not in chosen:
                assert any(parts[i].overlaps(parts[j]) for j in chosen)


def test_unknown_strategy_lists_the_valid_ones():
    parts, scorer = _pool()
    with pytest.raises(ParameterError) as err:
        next_queries(parts, scorer, strategy="entropy")
    assert "entropy" in str(err.value)
    for name in STRATEGIES:
        assert name in str(err.value)


def test_bad_inputs_are_refused():
    parts, scorer = _pool()
    with pytest.raises(ParameterError, match="empty"):
        next_queries([], scorer)
    with pytest.raises(ParameterError, match="n"):
        select_batch(parts, [0.1] * 4, 0)
    with pytest.raises(ParameterError, match="one per part"):
        select_batch(parts, [0.1] * 3, 1)
    with pytest.raises(ParameterError, match="suppress"):
        select_batch(parts, [0.1] * 4, 1, suppress="nearby")
    with pytest.raises(ParameterError, match="worst"):
        uncertainty_from_scores(PartScores(best=1.0, second=0.0), "best-vs-worst")
    with pytest.raises(ParameterError, match="best"):
        PartScores(best=np.nan)
    with pytest.raises(ParameterError, match="scale"):
        PartScores(best=1.0, scale=0.0)
    with pytest.raises(ParameterError, match="random_state"):
        pool_uncertainties(parts, scorer, "random", random_state="seed")
    with pytest.raises(ParameterError, match="scorer"):
        pool_uncertainties(parts, object(), "scoring")


def _segmentation_pool(n=14, seed=0):
    from marginalia.active.segmentation_adapter import SegmentationAdapter
    from marginalia.models.segmentation import SegmentationModel
    rng = np.random.default_rng(seed)
    items = {}
    for i in range(n):
        X = rng.normal(size=(int(rng.integers(8, 40)), 2))
        X[X.shape[0] // 2:, 0] += rng.uniform(0, 3)
        items[f"i{i}"] = X
    task = SegmentationAdapter(SegmentationModel())
    task.initialize(items)
    parts = [Part(k, 0, X.shape[0]) for k, X in items.items()] + [Part("i0", 2, 7, "window")]

    class Scorer:
        def part_scores(self, part):
            return task.part_scores(items[part.item_id], part, [])
    return parts, Scorer(), task


def test_threaded_scoring_gives_the_serial_scores():
    from marginalia.active.uncertainty import score_parts
    parts, scorer, task = _segmentation_pool()
    serial = score_parts(parts, scorer, n_jobs=1)
    task.clear_cache()
    threaded = score_parts(parts, scorer, n_jobs=2)
    assert threaded == serial
    for strategy in ("scoring", "best-vs-worst", "best-vs-2nd"):
        task.clear_cache()
        a = pool_uncertainties(parts, scorer, strategy, n_jobs=1)
        task.clear_cache()
        b = pool_uncertainties(parts, scorer, strategy, n_jobs=3)
        assert np.array_equal(a, b)


def test_threaded_scoring_reraises_a_scorer_error_and_checks_n_jobs():
    from marginalia.active.uncertainty import score_parts
    parts, _, _ = _segmentation_pool(n=4)

    class Failing:
        def part_scores(self, part):
            if part.item_id == "i2":
                raise ParameterError("cannot score i2")
            return PartScores(best=-1.0, second=-2.0)
    with pytest.raises(ParameterError, match="i2"):
        score_parts(parts, Failing(), n_jobs=2)
    for bad in (0, -2, 1.5, True):
        with pytest.raises(ParameterError, match="n_jobs"):
            pool_uncertainties(parts, Failing(), "best-vs-2nd", n_jobs=bad)
