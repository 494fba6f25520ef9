"""Hypothesis strategies producing every label type (shared by the session tests)."""

import dataclasses

from hypothesis import strategies as st

from marginalia.io.cgh import CghRegionLabel
from marginalia.types import AnchorLabel, BoundaryLabel, EventSpanLabel, RegionKind, RegionLabel, WarpAnchorLabel

ids = st.text(alphabet="0123456789abcdef", min_size=1, max_size=8)
authors = st.text(max_size=6)
created = st.floats(min_value=1.0, max_value=2e9, allow_nan=False, allow_infinity=False)
times = st.floats(min_value=0.0, max_value=1e5, allow_nan=False, allow_infinity=False)


@st.composite
def region_labels(draw, item_id=None):
    start = draw(st.integers(0, 1000))
    kind = draw(st.sampled_from(list(RegionKind)))
    min_len = 2 if kind in (RegionKind.ONE, RegionKind.AT_LEAST_ONE) else 1
    stop = start + draw(st.integers(min_len, 500))
    return RegionLabel(item_id or draw(ids), id=draw(ids), author=draw(authors), created=draw(created),
                       start=start, stop=stop, kind=kind)


@st.composite
def boundary_labels(draw, item_id=None):
    return BoundaryLabel(item_id or draw(ids), id=draw(ids), author=draw(authors), created=draw(created),
                         index=draw(st.integers(1, 10**6)))


@st.composite
def anchor_labels(draw, item_id=None):
    return AnchorLabel(item_id or draw(ids), id=draw(ids), author=draw(authors), created=draw(created),
                       event=draw(st.integers(0, 5000)), time_s=draw(times), tolerance_s=draw(times))


@st.composite
def event_span_labels(draw, item_id=None):
    first = draw(st.integers(0, 100))
    t0 = draw(times)
    return EventSpanLabel(item_id or draw(ids), id=draw(ids), author=draw(authors), created=draw(created),
                          first=first, last=first + draw(st.integers(0, 50)), t0_s=t0, t1_s=t0 + draw(times))


@st.composite
def warp_anchor_labels(draw, item_id=None):
    return WarpAnchorLabel(item_id or draw(ids), id=draw(ids), author=draw(authors), created=draw(created),
                           ta=draw(st.integers(0, 10**5)), tb=draw(st.integers(0, 10**5)))


@st.composite
def sync_anchor_labels(draw, item_id=None):
    """Anchors between two recordings (not in :data:`any_label`: they need two audio items of a project)."""
    from marginalia.types import SyncAnchorLabel
    item = item_id or draw(ids)
    return SyncAnchorLabel(item, id=draw(ids), author=draw(authors), created=draw(created),
                           target_id=draw(ids.filter(lambda t: t != item)), reference_s=draw(times),
                           target_s=draw(times), suggested=draw(st.booleans()))


@st.composite
def cgh_region_labels(draw, item_id=None):
    base = draw(region_labels(item_id))
    lo = draw(st.floats(min_value=0, max_value=3e8))
    return CghRegionLabel(base.item_id, id=base.id, author=base.author, created=base.created, start=base.start,
                          stop=base.stop, kind=base.kind, min_bp=lo, max_bp=lo + draw(st.floats(0, 1e7)),
                          annotation=draw(st.sampled_from(["normal", "0breakpoints", "1breakpoint", ""])))


#: every label type, some of them suggestions (labels carried from another recording, not accepted yet)
any_label = st.one_of(region_labels(), boundary_labels(), anchor_labels(), event_span_labels(),
                      warp_anchor_labels(), cgh_region_labels()).flatmap(
    lambda lab: st.sampled_from([lab, dataclasses.replace(lab, suggested=True)]))
