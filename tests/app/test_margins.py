"""One way to write a margin in the queue, the plot strip and the dataset browser."""

import math

from marginalia.app.panels.margins import format_margin, margin_from_uncertainty


def test_margins_are_readable_and_never_minus_zero():
    assert margin_from_uncertainty(1.0) == 0.0 and math.copysign(1.0, margin_from_uncertainty(1.0)) == 1.0
    assert [format_margin(m) for m in (-0.0, 0.0, 2.8e-3, 6.1e-4, 0.013, 0.41, 5.5, 250.0)] == \
        ["0", "0", "2.8e-3", "6.1e-4", "0.013", "0.41", "5.5", "250"]
    assert format_margin(None) == "\u2014" and format_margin(math.inf) == "\u221e"
    assert format_margin(margin_from_uncertainty(math.exp(-0.0028))) == "2.8e-3"
