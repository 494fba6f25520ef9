"""The labelled-region error against a brute-force count, and its known answers at the region edges."""

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import marginalia as mg
from marginalia.exceptions import ParameterError
from marginalia.metrics import RegionErrors, region_errors
from marginalia.types import BoundaryLabel, RegionKind, RegionLabel, Segmentation


@st.composite
def segmentation_and_labels(draw):
    T = draw(st.integers(2, 12))
    bps = sorted(draw(st.sets(st.integers(1, T - 1), max_size=T - 1)))
    labels = []
    for _ in range(draw(st.integers(0, 6))):
        if draw(st.booleans()):
            a = draw(st.integers(0, T - 2))
            b = draw(st.integers(a + 2, T))
            kind = draw(st.sampled_from(list(RegionKind)))
            labels.append(RegionLabel(item_id="s", start=a, stop=b, kind=kind))
        else:
            labels.append(BoundaryLabel(item_id="s", index=draw(st.integers(1, T - 1))))
    return Segmentation(bps + [T]), labels


@settings(max_examples=80)
@given(segmentation_and_labels())
def test_region_errors_match_a_brute_force_count(case):
    seg, labels = case
    fp = fn = n = 0
    for lab in labels:
        if not isinstance(lab, RegionLabel):
            continue
        n += 1
        inside = sum(1 for c in range(1, seg.n_samples) if c in set(seg.changes.tolist()) and lab.start < c < lab.stop)
        assert seg.changes_inside(lab.start, lab.stop) == inside
        if lab.kind in (RegionKind.ZERO, RegionKind.SAME):
            fp += inside >= 1
        elif lab.kind == RegionKind.ONE:
            fn += inside == 0
            fp += inside >= 2
        else:
            fn += inside == 0
    got = region_errors(labels, seg)
    assert (got.fp, got.fn, got.n_labels) == (fp, fn, n)
    assert got.errors == fp + fn
    assert got.rate == ((fp + fn) / n if n else 0.0)


def test_region_errors_known_answer_at_the_region_edges():
    seg = Segmentation([3, 6, 10])  # changes at 3 and 6
    labels = [RegionLabel(item_id="s", start=0, stop=3, kind=RegionKind.ZERO),   # change 3 is at the edge: none inside
              RegionLabel(item_id="s", start=0, stop=4, kind=RegionKind.ZERO),   # holds 3: FP
              RegionLabel(item_id="s", start=2, stop=7, kind=RegionKind.ONE),    # holds 3 and 6: FP
              RegionLabel(item_id="s", start=6, stop=10, kind=RegionKind.ONE),   # none inside: FN
              RegionLabel(item_id="s", start=5, stop=7, kind=RegionKind.AT_LEAST_ONE),  # holds 6: ok
              RegionLabel(item_id="s", start=3, stop=6, kind=RegionKind.SAME),   # 3 and 6 on its edges: ok
              BoundaryLabel(item_id="s", index=8)]                              # not a region: not counted
    assert region_errors(labels, seg) == RegionErrors(fp=2, fn=1, n_labels=6)


def test_region_errors_add_up_over_sequences():
    a, b = RegionErrors(fp=1, fn=0, n_labels=3), RegionErrors(fp=2, fn=4, n_labels=7)
    total = sum([a, b], RegionErrors())
    assert total == RegionErrors(fp=3, fn=4, n_labels=10) and total.errors == 7 and total.rate == 0.7
    assert RegionErrors().rate == 0.0


def test_region_errors_refuse_a_region_past_the_end():
    with pytest.raises(ParameterError, match="runs past the sequence end T=5"):
        region_errors([RegionLabel(item_id="s", start=0, stop=6, kind=RegionKind.ZERO)], Segmentation([5]))


def test_region_errors_refuse_swapped_arguments_and_foreign_items():
    seg = Segmentation([5])
    labels = [RegionLabel(item_id="s", start=0, stop=5, kind=RegionKind.ZERO)]
    with pytest.raises(ParameterError, match=r"expected a Segmentation, got list .*region_errors\(labels, segmentation\)"):
        region_errors(seg, labels)
    with pytest.raises(ParameterError, match="expected RegionLabel or BoundaryLabel items, got tuple"):
        region_errors([(0, 5, "0")], seg)


def test_region_errors_is_public():
    assert mg.region_errors is region_errors and "region_errors" in mg.__all__


@pytest.mark.parametrize("kind", list(RegionKind))
def test_one_rule_counts_a_region_short_or_over_its_bounds(kind):
    """``RegionKind.shortfall`` against the bounds read by hand; the three label counts agree with it."""
    from marginalia.models.segmentation import label_change_errors, label_violations

    lo, hi = kind.bounds
    for n in range(5):
        missing, extra = kind.shortfall(n)
        assert missing == (lo - n if n < lo else 0) and extra == (n - hi if hi is not None and n > hi else 0)
        seg = Segmentation(list(range(2, 2 + n)) + [10])        # n changes inside [1, 9)
        label = RegionLabel(item_id="s", start=1, stop=9, kind=kind)
        assert region_errors([label], seg) == RegionErrors(int(extra > 0), int(missing > 0), 1)
        assert label_violations([label], seg) == int(missing + extra > 0)
        assert label_change_errors([label], seg) == missing + extra
