"""Per-probe and per-sequence features of aCGH logratio profiles.

Per probe: the logratio in noise units and its point-wise Hermite functions
(Lajugie 2015, §4.4.2 with no averaging window), the input of the learned metric of
:mod:`marginalia.cgh.recipe`. Per sequence: the summaries a penalty law
needs (length, noise level, variance: :func:`~marginalia.cgh.penalty_regression.sequence_features`)
and the probe density, which tells the array platform apart (low-density BAC
arrays have ~1 probe per Mb, high-density oligo arrays ~25).
"""

from __future__ import annotations

import numpy as np

from ..checks import check_signal
from ..exceptions import ParameterError
from ..features.hermite import hermite_features, robust_noise_scale

__all__ = ["pointwise_hermite_features", "probe_density"]


def pointwise_hermite_features(logratio) -> np.ndarray:
    """Logratio in noise units and its Hermite functions of orders 0-4, shape (T, 6).

    Parameters
    ----------
    logratio : array_like, shape (T,) or (T, 1)
        Finite logratios of one sequence, ordered by position.

    Returns
    -------
    X : ndarray, shape (T, 6)
        Column 0 is ``z = (x - median(x)) / σ̂`` (``σ̂`` from first differences,
        :func:`~marginalia.features.hermite.robust_noise_scale`), columns 1-5 the
        bounded Hermite functions ``h_0..h_4`` of ``z``.
    """
    x = check_signal(logratio, "logratio")
    z = (x - np.median(x)) / robust_noise_scale(x)
    return np.column_stack([z, hermite_features(z, orders=(0, 1, 2, 3, 4), half_width=0, center=0.0, scale=1.0)])


def probe_density(positions) -> float:
    """Probes per megabase of one sequence.

    Parameters
    ----------
    positions : array_like, shape (T,)
        Non-decreasing probe positions in base pairs.

    Returns
    -------
    density : float
        ``T / span_in_Mb`` (``span`` at least 1 kb); ``nan`` for fewer than 2 probes.
    """
    p = np.asarray(positions, dtype=np.float64).reshape(-1)
    if not np.all(np.isfinite(p)):
        raise ParameterError("positions: contains NaN or inf; expected finite base-pair positions")
    if p.size < 2:
        return float("nan")
    span = max(float(p[-1] - p[0]), 1e3)
    return p.size / (span / 1e6)
