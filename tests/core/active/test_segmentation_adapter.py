import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from benchmarks.research.active_loop import ActiveLoop, PartPool
from marginalia.active.parts import Part, make_parts
from marginalia.active.segmentation_adapter import SegmentationAdapter, segmentation_part_scores, shift_labels
from marginalia.active.uncertainty import uncertainty_from_scores
from marginalia.decoders.brute import brute_second_best
from marginalia.exceptions import InfeasibleLabelsError, ParameterError
from marginalia.models.segmentation import SegmentationModel
from marginalia.types import BoundaryLabel, RegionLabel


def _task(Xs, w=None):
    task = SegmentationAdapter(SegmentationModel())
    task.initialize({f"i{k}": X for k, X in enumerate(Xs)})
    if w is not None:
        task.w_ = np.asarray(w, dtype=float)
    return task


@settings(max_examples=12)
@given(data=st.data(), T=st.integers(3, 7), p=st.integers(1, 2))
def test_part_scores_with_the_unrestricted_runner_up_match_the_brute_force_oracle(data, T, p):
    seed = data.draw(st.integers(0, 10_000))
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(T + 3, p))
    X[(T + 3) // 2:, 0] += data.draw(st.floats(0, 3))
    w = np.r_[rng.uniform(0.1, 2.0, p), rng.uniform(0.05, 3.0)]
    task = _task([X], w)
    start = data.draw(st.integers(0, 3))
    part = Part("i0", start, start + T, "window")
    labels = []
    if data.draw(st.booleans()):
        labels.append(RegionLabel(item_id="i0", start=start, stop=start + 2, kind="0"))
    scores = segmentation_part_scores(task.model, task.w_, X, part, labels, runner_up="any")
    assert task.part_scores(X, part, labels).best == pytest.approx(scores.best, rel=1e-9, abs=1e-9)
    metric, pen = task.model.decoder_metric(w)
    cons = task.model.constraints(shift_labels(labels, part), T)
    rows = brute_second_best(X[start:start + T], pen, metric=metric, constraints=cons)
    assert scores.best == pytest.approx(-rows[0][0], rel=1e-9, abs=1e-9)
    assert scores.second == pytest.approx(-rows[1][0], rel=1e-9, abs=1e-9)
    assert scores.size == T and scores.scale == pytest.approx(pen)
    # the worst proxy is a real cost, at least half of the true worst (unconstrained) cost
    every = rows if not labels else brute_second_best(X[start:start + T], pen, metric=metric)
    worst = max(c for c, _ in every)
    assert 0.5 * worst - 1e-9 <= -scores.worst <= worst + 1e-9


def test_shift_labels_keeps_ids_and_drops_labels_outside():
    part = Part("a", 10, 20, "window")
    r = RegionLabel(item_id="a", start=12, stop=18, kind="1")
    b = BoundaryLabel(item_id="a", index=15)
    out = shift_labels([r, b, RegionLabel(item_id="a", start=5, stop=12), BoundaryLabel(item_id="a", index=20)],
                       part)
    assert [(x.id, type(x).__name__) for x in out] == [(r.id, "RegionLabel"), (b.id, "BoundaryLabel")]
    assert (out[0].start, out[0].stop, out[1].index) == (2, 8, 5)



def one_change_labels(item_id, at, half, T):
    """Labels of a sequence of ``T`` points with one change near ``at``: exactly one change in
    ``[at - half, at + half)``, none before or after."""
    return [RegionLabel(item_id=item_id, start=0, stop=at - half, kind="0"),
            RegionLabel(item_id=item_id, start=at - half, stop=at + half, kind="1"),
            RegionLabel(item_id=item_id, start=at + half, stop=T, kind="0")]

def _expert_items(n, seed, T=40):
    """Feature 0 holds the change the expert labels; feature 1 an irrelevant jump."""
    rng = np.random.default_rng(seed)
    items, labels = {}, {}
    for i in range(n):
        c, d = int(rng.integers(8, T - 8)), int(rng.integers(5, T - 5))
        X = rng.normal(0, 0.3, (T, 2))
        X[c:, 0] += 1.5
        X[d:, 1] += 2.5
        k = f"s{seed}_{i}"
        items[k] = X
        labels[k] = one_change_labels(k, c, 2, T)
    return items, labels


@pytest.mark.slow
@pytest.mark.parametrize("learner", ["perceptron", "combined"])
def test_segmentation_loop_end_to_end_improves_the_held_out_error(learner):
    items, labels = _expert_items(10, 0)
    test_items, test_labels = _expert_items(8, 1)
    held_out = [(test_items[k], test_labels[k]) for k in test_items]
    task = SegmentationAdapter(SegmentationModel())
    session = ActiveLoop(items, task, lambda q, p: labels[p.item_id], strategy="best-vs-2nd",
                            learner=learner, refit_every=3, held_out=held_out, random_state=0)
    session.run(max_steps=4)
    session.finish()
    losses = [r["held_out_loss"] for r in session.curve_]
    assert losses[0] > 0.2
    assert losses[-1] < losses[0]
    assert task.model_w_[1] < task.model_w_[0]  # the irrelevant feature lost weight
    if learner == "combined":
        assert task.n_refits_ == 2 and session.curve_[-1]["final"]


def test_conflicting_and_out_of_range_labels_on_windows():
    items, _ = _expert_items(1, 0)
    X = items["s0_0"]
    parts = make_parts("s0_0", 40, kind="window", window=20, hop=10)
    session = ActiveLoop(PartPool(items, parts), SegmentationAdapter(SegmentationModel()), lambda q, p: [],
                            random_state=0)
    session.teach([(parts[0], [RegionLabel(item_id="s0_0", start=0, stop=20, kind="0")])])
    with pytest.raises(InfeasibleLabelsError, match="conflict"):
        session.teach([(parts[1], [RegionLabel(item_id="s0_0", start=12, stop=18, kind="1")])])
    assert len(session.unlabelled) == len(parts) - 1
    with pytest.raises(ParameterError, match="past the last sample"):
        session.model.check_labels("s0_0", X, [BoundaryLabel(item_id="s0_0", index=45)])
    # the session still works after the refusals
    row = session.teach([(parts[1], [RegionLabel(item_id="s0_0", start=20, stop=30, kind="1")])])
    assert row["n_parts_labelled"] == 2


def test_bad_model_and_part_are_refused():
    with pytest.raises(ParameterError, match="model"):
        SegmentationAdapter(object())
    with pytest.raises(ParameterError, match="features"):
        SegmentationAdapter(features=3)
    X = np.random.default_rng(0).normal(size=(10, 1))
    task = _task([X])
    with pytest.raises(ParameterError, match="ends after"):
        task.part_scores(X, Part("i0", 5, 15, "window"), [])


def test_part_scores_are_cached_until_w_or_the_part_labels_change():
    X = np.random.default_rng(1).normal(size=(30, 1))
    X[15:] += 2.0
    task = _task([X])
    part = Part("i0", 0, 20, "window")
    first = task.part_scores(X, part, [])
    assert task.part_scores(X, part, []) is first
    outside = RegionLabel(item_id="i0", start=22, stop=28, kind="0")
    assert task.part_scores(X, part, [outside]) is first  # a label outside the part changes nothing
    inside = RegionLabel(item_id="i0", start=2, stop=12, kind="1")
    constrained = task.part_scores(X, part, [inside])
    assert constrained is not first and constrained.best < first.best  # forced change costs score
    task.w_ = task.w_ * 2.0
    rescaled = task.part_scores(X, part, [])
    assert rescaled is not first and rescaled.best == pytest.approx(2 * first.best)
    # uncertainty is invariant to a rescaling of w (scale = the current penalty)
    from marginalia.active.uncertainty import uncertainty_from_scores
    assert uncertainty_from_scores(rescaled, "best-vs-2nd") == pytest.approx(
        uncertainty_from_scores(first, "best-vs-2nd"))


def _zigzag_parts(n=300, n_parts=3):
    """Three parts of one item: flat, a clear change, a change worth just more than its price.

    The noise is a deterministic zig-zag (±1), so no stretch of it looks like a change.
    """
    model = SegmentationModel(metric="diagonal")
    zig = np.where(np.arange(n) % 2 == 0, 1.0, -1.0)
    X = np.tile(zig, n_parts)[:, None].copy()
    model.fit_scales([X])
    w = model.default_w([X])
    metric, pen = model.decoder_metric(w, X.shape[0])
    # splitting n samples in halves at a jump d drops the scatter by (n / 4) (metric d)^2
    d_ambiguous = np.sqrt(1.05 * pen / (n / 4)) / metric[0]
    X[n + n // 2:2 * n, 0] += 1.0   # part 1: a change worth 5.5 prices, located to a few samples only
    X[2 * n + n // 2:, 0] += d_ambiguous   # part 2: a change worth 1.05 prices
    parts = [Part("a", k * n, (k + 1) * n, "window") for k in range(n_parts)]
    return model, w, X, parts


def test_best_vs_2nd_calls_a_clear_change_confident_and_an_ambiguous_one_uncertain():
    model, w, X, parts = _zigzag_parts()
    q = [uncertainty_from_scores(segmentation_part_scores(model, w, X, p, []), "best-vs-2nd") for p in parts]
    flat, clear, ambiguous = q
    assert ambiguous > 0.9            # 5 % of a change's price decides it
    assert clear < 0.5 and flat < 0.5  # the closest call is a spurious change worth ~nothing
    assert np.argsort(q)[-1] == 2
    # the unrestricted runner-up (the clear change moved by one sample) calls the clear part as
    # uncertain as the ambiguous one: the defect the count runner-up fixes
    old = uncertainty_from_scores(segmentation_part_scores(model, w, X, parts[1], [], runner_up="any"),
                                  "best-vs-2nd")
    assert old > 0.8


def test_labels_inside_a_part_decide_its_runner_up():
    model, w, X, parts = _zigzag_parts()
    amb = parts[2]
    mid = amb.start + (amb.stop - amb.start) // 2
    # "exactly one change" around the ambiguous change: removing it breaks the label, adding one too
    labels = [RegionLabel(item_id="a", start=mid - 20, stop=mid + 20, kind="1")]
    free = segmentation_part_scores(model, w, X, amb, [], warm=False)
    held = segmentation_part_scores(model, w, X, amb, labels, warm=False)
    assert held.best == pytest.approx(free.best)
    assert (held.best - held.second) / held.scale > 0.5  # the close call is gone, the next one is far
    assert (free.best - free.second) / free.scale < 0.1
