"""Hermite-moment features of a 1-d signal (Lajugie 2015, §4.4.2, §4.5.5).

A change in the *distribution* of a 1-d signal (mean, spread, skew, tails)
becomes a change in the *mean* of the columns ``f_n(x)`` for well chosen
``f_n``; the change-point cost of :mod:`marginalia.models.segmentation` only sees
changes in mean, so these columns let it see the rest.  Plain monomials
``x**n`` explode on outliers; Hermite functions stay bounded.

Definition used here
--------------------
1. The signal is put on a robust scale: ``z = (x - median(x)) / s`` with
   ``s`` the noise level estimated from first differences,
   ``s = 1.4826 * MAD(diff(x)) / sqrt(2)`` (insensitive to the changes
   themselves, unlike the global MAD).
2. Each sample is mapped to ``n`` Hermite values of order ``n`` in
   ``orders``:

   * ``kind="function"`` (default): the orthonormal Hermite functions
     ``h_n(z) = He_n(z) exp(-z²/4) / sqrt(n! sqrt(2π))`` (bounded: robust
     moments in the sense of Welling 2005);
   * ``kind="polynomial"``: the probabilists' polynomials ``He_n(z)``
     (``He_0 = 1, He_1 = z, He_2 = z² - 1, ...``), as printed in Lajugie (2015).
3. The values are averaged over the window ``[t - half_width, t + half_width]``
   (clipped at the ends) giving local moments; ``half_width=0`` is the
   point-wise map of Lajugie (2015).
"""

from __future__ import annotations

import math

import numpy as np

from ..checks import check_choice, check_signal
from ..exceptions import ParameterError

__all__ = ["hermite_features", "hermite_values", "robust_noise_scale"]


def robust_noise_scale(x) -> float:
    """Noise standard deviation of a piecewise-constant signal from its first differences.

    Parameters
    ----------
    x : array_like, shape (T,)

    Returns
    -------
    scale : float
        ``1.4826 * median(|d - median(d)|) / sqrt(2)`` with ``d = diff(x)``;
        falls back to the standard deviation of ``x``, then to 1.0, when that is 0.
    """
    arr = check_signal(x, "x")
    if arr.shape[0] >= 3:
        d = np.diff(arr)
        s = 1.4826 * float(np.median(np.abs(d - np.median(d)))) / math.sqrt(2.0)
        if s > 0:
            return s
    s = float(np.std(arr))
    return s if s > 0 else 1.0


def hermite_values(z, orders=(0, 1, 2, 3, 4), *, kind="function") -> np.ndarray:
    """Hermite polynomials or functions of ``z``.

    Parameters
    ----------
    z : array_like, shape (T,)
    orders : sequence of int
        Non-negative orders.
    kind : {"function", "polynomial"}

    Returns
    -------
    values : ndarray, shape (T, len(orders))
    """
    z = check_signal(z, "z")
    orders = _check_orders(orders)
    check_choice(kind, "kind", ("function", "polynomial"))
    top = max(orders)
    # probabilists' recurrence He_{n+1} = z He_n - n He_{n-1}
    he = np.empty((top + 1, z.shape[0]))
    he[0] = 1.0
    if top >= 1:
        he[1] = z
    for n in range(1, top):
        he[n + 1] = z * he[n] - n * he[n - 1]
    out = he[list(orders)].T.copy()
    if kind == "function":
        norms = np.array([math.sqrt(math.factorial(n) * math.sqrt(2 * math.pi)) for n in orders])
        out *= np.exp(-0.25 * z * z)[:, None] / norms[None, :]
    return out


def _check_orders(orders) -> tuple:
    try:
        orders = tuple(int(o) for o in orders)
    except (TypeError, ValueError):
        raise ParameterError(f"orders: expected a sequence of non-negative integers, got {orders!r}") from None
    if not orders or min(orders) < 0 or max(orders) > 30:
        raise ParameterError(f"orders: expected a non-empty sequence of integers in 0..30, got {orders!r}")
    return orders


def hermite_features(x, orders=(0, 1, 2, 3, 4), *, half_width=2, kind="function",
                     center=None, scale=None) -> np.ndarray:
    """Local Hermite moments of a 1-d signal around each sample.

    Parameters
    ----------
    x : array_like, shape (T,) or (T, 1)
        The signal (e.g. one chromosome's logratio). Must be finite.
    orders : sequence of int, default (0, 1, 2, 3, 4)
        Hermite orders, one output column each (Lajugie 2015 uses the first five).
    half_width : int, default 2
        Moments are averaged over ``2 * half_width + 1`` samples centred on
        each sample (fewer at the ends). ``0`` is the point-wise map.
    kind : {"function", "polynomial"}
        Bounded Hermite functions (robust) or plain Hermite polynomials.
    center, scale : float, optional
        Fix the standardisation instead of estimating it from ``x`` (use the
        same values for every sequence of a dataset to make features comparable).

    Returns
    -------
    features : ndarray, shape (T, len(orders))
        Column ``k`` is the local mean of order ``orders[k]``.
    """
    arr = check_signal(x, "x")
    try:
        hw = int(half_width)
    except (TypeError, ValueError):
        raise ParameterError(f"half_width: expected a non-negative integer, got {half_width!r}") from None
    if hw < 0 or hw != half_width:
        raise ParameterError(f"half_width: expected a non-negative integer, got {half_width!r}")
    c = float(np.median(arr)) if center is None else float(center)
    s = robust_noise_scale(arr) if scale is None else float(scale)
    if not (np.isfinite(c) and np.isfinite(s) and s > 0):
        raise ParameterError(f"center/scale: expected a finite center and a positive scale, got {c!r}, {s!r}")
    values = hermite_values((arr - c) / s, orders, kind=kind)
    if hw == 0:
        return values
    T = arr.shape[0]
    csum = np.vstack([np.zeros((1, values.shape[1])), np.cumsum(values, axis=0)])
    idx = np.arange(T)
    lo = np.maximum(idx - hw, 0)
    hi = np.minimum(idx + hw + 1, T)
    return (csum[hi] - csum[lo]) / (hi - lo)[:, None]
