"""marginalia.sync.carry.carry_labels: the mapping of each kind of label through a path."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from marginalia.sync.carry import carry_labels
from marginalia.types import BoundaryLabel, RegionKind, RegionLabel


class Stretch:
    """A path that maps reference time t to ``a t + b`` (what :meth:`SyncResult.map_times` gives)."""

    def __init__(self, a, b):
        self.a, self.b = a, b

    def map_times(self, t):
        return np.maximum(self.a * np.asarray(t, dtype=np.float64) + self.b, 0.0)


HOP = 512 / 22050


@settings(max_examples=200, deadline=None)
@given(st.floats(0.6, 1.6), st.floats(0.0, 0.5), st.integers(1, 150), st.integers(1, 60))
def test_a_boundary_stated_at_a_regions_end_stays_at_that_end(a, b, start, length):
    """An imported region comes with boundaries at its edges: carried, they must still coincide."""
    src = np.arange(300) * HOP
    tgt = np.arange(420) * HOP
    stop = min(start + length, src.size - 1)
    labels = [RegionLabel(item_id="s", start=start, stop=stop, kind=RegionKind.SAME),
              BoundaryLabel(item_id="s", index=start), BoundaryLabel(item_id="s", index=stop)]
    carried = carry_labels(labels, Stretch(a, b), src, tgt, "t").labels
    region, first, last = carried
    assert first.index == region.start
    # a region squeezed into less than a frame keeps one frame, and its two edges meet
    assert last.index == region.stop or (last.index == first.index and region.stop == region.start + 1)
    assert 0 <= region.start < region.stop <= tgt.size


def test_region_edges_follow_the_path_within_a_frame():
    src = np.arange(300) * HOP
    tgt = np.arange(420) * HOP
    (region,) = carry_labels([RegionLabel(item_id="s", start=50, stop=120, kind=RegionKind.SAME)],
                             Stretch(1.3, 0.2), src, tgt, "t").labels
    assert region.start * HOP == pytest.approx(1.3 * 49.5 * HOP + 0.2, abs=HOP)
    assert region.stop * HOP == pytest.approx(1.3 * 119.5 * HOP + 0.2, abs=HOP)
    # a region reaching the source's end reaches the target's; one starting at 0 starts there
    (whole,) = carry_labels([RegionLabel(item_id="s", start=0, stop=300, kind=RegionKind.SAME)],
                            Stretch(1.3, 0.2), src, tgt, "t").labels
    assert (whole.start, whole.stop) == (0, 420)
