"""The coupled regulariser of :class:`~marginalia.learners.transfer.TransferSSVM` and its conjugate.

For ``D`` datasets with parameter vectors stacked as ``Θ`` (shape (D, P)),
the regulariser is separable over the coordinates ``j``::

    R(Θ) = Σ_j ½ θ_jᵀ K_j θ_j,   K_j = I/C + ρ_j (I - 11ᵀ/D)

(``θ_j`` the column of ``Θ``: coordinate ``j`` of every dataset). It is
``Σ_d ‖θ_d‖²/(2C) + Σ_j ρ_j/2 Σ_d (θ_dj - mean_d θ_dj)²``: every coordinate
has its own coupling ``ρ_j`` (0 for a coordinate each dataset keeps to
itself, e.g. a per-platform penalty).

The dual of the transfer SSVM needs the maximiser of ``⟨Θ, U⟩ - R(Θ)`` over
the allowed set; :func:`coupled_argmax` gives it in closed form for the
unconstrained case and for the non-negative orthant (``K_j = aI - b11ᵀ`` is
an M-matrix, so the free coordinates are those with the largest ``u``: try
the top-``m`` sets in order).
"""

from __future__ import annotations

import numpy as np

from ..exceptions import ParameterError

__all__ = ["coupling_strengths", "coupled_argmax", "coupled_penalty"]


def coupling_strengths(rho, n_params: int, uncoupled=None) -> np.ndarray:
    """Per-coordinate coupling ``ρ_j``, shape (n_params,).

    Parameters
    ----------
    rho : float
        ``≥ 0`` or ``inf``.
    n_params : int
    uncoupled : sequence of int, optional
        Coordinates (negative indices allowed) whose ``ρ_j`` is 0.
    """
    rho = float(rho)
    if not rho >= 0:
        raise ParameterError(f"rho: expected a number >= 0 (or inf), got {rho!r}")
    out = np.full(int(n_params), rho)
    if uncoupled is not None:
        idx = np.asarray(list(uncoupled), dtype=np.int64).reshape(-1)
        if idx.size and (idx.min() < -n_params or idx.max() >= n_params):
            raise ParameterError(f"uncoupled: expected coordinate indices in [-{n_params}, {n_params}), "
                                 f"got {idx.tolist()}")
        out[idx] = 0.0
    return out


def coupled_argmax(U, C: float, rhos, nonneg: bool) -> np.ndarray:
    """``argmax_Θ ⟨Θ, U⟩ - R(Θ)`` (over ``Θ ≥ 0`` when ``nonneg``), shape (D, P).

    Parameters
    ----------
    U : ndarray, shape (D, P)
        Dual sums, one row per dataset.
    C : float
        Regularisation trade-off (> 0).
    rhos : ndarray, shape (P,)
        Per-coordinate coupling (``inf``: the datasets share the coordinate).
    nonneg : bool
        Constrain every entry to be ``≥ 0``.
    """
    U = np.asarray(U, dtype=np.float64)
    D, P = U.shape
    rhos = np.asarray(rhos, dtype=np.float64)
    out = np.empty_like(U)
    inf = np.isinf(rhos)
    if np.any(inf):
        # infinite coupling: one value per coordinate for all datasets, C · mean over the datasets of U
        shared = C * U[:, inf].mean(axis=0)
        out[:, inf] = np.maximum(shared, 0.0) if nonneg else shared
    fin = ~inf
    if np.any(fin):
        u = U[:, fin]
        a = 1.0 / C + rhos[fin]
        b = rhos[fin] / D
        if not nonneg:
            # K⁻¹ = C·11ᵀ/D + (I - 11ᵀ/D) / a
            mean = u.mean(axis=0)
            out[:, fin] = C * mean + (u - mean) / a
        else:
            out[:, fin] = _orthant_argmax(u, a, b)
    return out


def _orthant_argmax(u, a, b) -> np.ndarray:
    """Solve ``min_{x ≥ 0} ½ xᵀ(aI - b11ᵀ)x - uᵀx`` for every column of ``u`` (D, P).

    With free set ``F`` the solution is ``x = max(u + b S, 0) / a`` where
    ``S = Σ_F u / (a - b|F|)`` is the sum of the free values; ``F`` holds the
    ``m`` largest ``u`` for the one ``m`` that satisfies the KKT conditions.
    """
    D, P = u.shape
    srt = -np.sort(-u, axis=0)                     # descending per column
    cs = np.cumsum(srt, axis=0)                    # Σ of the top-m, m = 1..D
    m = np.arange(1, D + 1)[:, None]
    S = cs / (a[None, :] - b[None, :] * m)         # (D, P); a - b m ≥ 1/C > 0
    nxt = np.vstack([srt[1:], np.full((1, P), -np.inf)])
    ok = (srt + b * S > 0) & (nxt + b * S <= 0)
    # m = 0 (everything at 0) when no top-m set is consistent (all u ≤ 0)
    S_best = np.where(ok.any(axis=0), S[np.argmax(ok, axis=0), np.arange(P)], 0.0)
    return np.maximum(u + b * S_best, 0.0) / a


def coupled_penalty(Theta, C: float, rhos) -> float:
    """``R(Θ)`` for ``Θ`` of shape (D, P) (coordinates with ``ρ_j = inf`` must be equal across datasets)."""
    Theta = np.asarray(Theta, dtype=np.float64)
    rhos = np.asarray(rhos, dtype=np.float64)
    own = 0.5 * float(np.sum(Theta * Theta)) / C
    dev = Theta - Theta.mean(axis=0)
    fin = np.isfinite(rhos)
    return own + 0.5 * float(np.sum(rhos[fin] * np.sum(dev[:, fin] ** 2, axis=0)))
