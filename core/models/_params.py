"""Validation shared by the models' parameter vectors."""

from __future__ import annotations

import inspect

import numpy as np

from ..exceptions import ParameterError


def init_params(obj) -> dict:
    """The arguments of ``obj``'s constructor, read back from the attributes of the same names.

    scikit-learn's ``get_params`` without nesting: a constructor that stores each argument unchanged
    under its own name (the convention of the aligners) is described by its signature alone, so
    ``type(obj)(**init_params(obj))`` is an unfitted copy and a new argument needs no list kept in step.
    """
    names = [name for name, p in inspect.signature(type(obj).__init__).parameters.items()
             if name != "self" and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)]
    return {name: getattr(obj, name) for name in names}


def check_param_vector(w, n_params: int, name: str = "w") -> np.ndarray:
    """``w`` as a finite float vector of shape (n_params,), else a ParameterError naming ``name``."""
    w = np.asarray(w, dtype=np.float64)
    if w.shape != (n_params,):
        raise ParameterError(f"{name}: expected a parameter vector of shape ({n_params},), got {w.shape}")
    if not np.all(np.isfinite(w)):
        raise ParameterError(f"{name}: contains NaN or inf; the learner diverged or was given bad features")
    return w


def n_features_of(model, n_features=None, *, first: str = "initial_w(Xs)") -> int:
    """``n_features`` when given, else the ``n_features_`` ``model`` learned, else a ParameterError.

    ``first`` names the call that sets ``n_features_``, for the message.
    """
    if n_features is not None:
        return int(n_features)
    if not hasattr(model, "n_features_"):
        raise ParameterError(f"{type(model).__name__}: number of features unknown; call {first} first")
    return model.n_features_

