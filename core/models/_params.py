"""Validation shared by the models' parameter vectors."""

from __future__ import annotations

import numpy as np

from ..exceptions import ParameterError


def check_param_vector(w, n_params: int, name: str = "w") -> np.ndarray:
    """``w`` as a finite float vector of shape (n_params,), else a ParameterError naming ``name``."""
    w = np.asarray(w, dtype=np.float64)
    if w.shape != (n_params,):
        raise ParameterError(f"{name}: expected a parameter vector of shape ({n_params},), got {w.shape}")
    if not np.all(np.isfinite(w)):
        raise ParameterError(f"{name}: contains NaN or inf; the learner diverged or was given bad features")
    return w
