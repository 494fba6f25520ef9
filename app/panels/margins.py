"""How the panels write a part's best-vs-2nd margin.

The engine ranks parts by the uncertainty ``q = exp(-m)`` of their margin ``m``
(the gap between the best structure and its runner-up, in change penalties;
``marginalia.active.uncertainty``). The close calls a user is asked about all have
``q`` = 0.99…, so the panels show ``m`` itself (0.00061, 0.02, 5.5), the number
the plot's margin strip shows too.
"""

from __future__ import annotations

import math


def margin_from_uncertainty(q) -> float:
    """``m = -ln q`` (``inf`` for ``q = 0``: a single feasible structure, nothing to decide); never ``-0``."""
    q = float(q)
    return math.inf if not q > 0.0 else max(-math.log(q), 0.0) + 0.0


def format_margin(m) -> str:
    """The one way every panel writes a margin.

    Two significant digits (``0.41``, ``5.5``); below 0.01 in scientific notation (``2.8e-3``) so the
    closest calls keep their digits; ``0`` for a tie (never ``-0``); ``∞`` for no runner-up,
    ``—`` for no margin (``None``).
    """
    if m is None:
        return "\u2014"
    m = float(m)
    if math.isinf(m):
        return "\u221e"
    if m <= 0.0:
        return "0"
    if m < 0.01:
        mant, exp = f"{m:.1e}".split("e")
        return f"{mant}e{int(exp)}"
    return f"{m:.2g}" if m < 100 else f"{m:.0f}"
