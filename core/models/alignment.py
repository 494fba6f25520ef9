"""Audio-to-score alignment model: per-class linear scorers (Lajugie 2015, eq. 6.1).

Input of one item: ``(X, Phi)`` with audio features ``X`` (T × p) and the
score template ``Phi`` (E events × K classes, e.g. pitch classes). The score
of frame ``t`` for event ``e`` is ``S[t, e] = (X W + 1 cᵀ) Φᵀ`` — each class
``k`` has a linear scorer ``W[:, k]`` and a bias ``c[k]``, an event scores the
sum of its classes — and an alignment ``y`` (onset of every event) scores
``Σ_t S[t, e_y(t)]``. This is linear in ``w = [vec(W), c]``:

    φ(x, y) = [vec(Xᵀ Z_y Φ), 1ᵀ Z_y Φ]      (Z_y the T × E assignment matrix)

Losses: ``"hamming"`` (frames given to the wrong event) and ``"onset"`` (area
between the event-index step functions, Lajugie 2015, §5.3.1 / eq. 6.5).
"""

from __future__ import annotations

import numpy as np

from ..exceptions import ParameterError
from ..features.standardize import check_features
from ..types import Alignment, AnchorLabel, EventSpanLabel
from ._params import check_param_vector
from .segmentation import PartialTarget

__all__ = ["AlignmentModel", "alignment_assignment"]


def alignment_assignment(y: Alignment) -> np.ndarray:
    """Assignment matrix ``Z`` (T × E) of an alignment; frames before the first onset are all-zero rows."""
    Z = np.zeros((y.n_frames, y.n_events))
    ev = y.frame_events()
    rows = np.flatnonzero(ev >= 0)
    Z[rows, ev[rows]] = 1.0
    return Z


def _dec():
    from ..decoders import alignment as aldec
    return aldec


def _unwrap(res):
    if isinstance(res, Alignment):
        return res
    return res.alignment if hasattr(res, "alignment") else res[0]


class AlignmentModel:
    """Joint feature map, losses and decoders of template alignment.

    Parameters
    ----------
    n_classes : int, default 12
        ``K``, columns of the templates.
    loss : {"hamming", "onset"}
    min_frames : int, default 1
        Minimal frames per event.
    frame_rate : float, default 1.0
        Frames per second of ``X`` (to place partial labels given in seconds).

    Attributes
    ----------
    n_features_ : int
        ``p``.
    """

    task = "alignment"

    def __init__(self, n_classes=12, loss="hamming", min_frames=1, frame_rate=1.0):
        if int(n_classes) < 1:
            raise ParameterError(f"n_classes: expected a positive integer, got {n_classes!r}")
        if loss not in ("hamming", "onset"):
            raise ParameterError(f"loss: expected 'hamming' or 'onset', got {loss!r}")
        if int(min_frames) < 1:
            raise ParameterError(f"min_frames: expected a positive integer, got {min_frames!r}")
        if not (np.isfinite(frame_rate) and frame_rate > 0):
            raise ParameterError(f"frame_rate: expected a positive number of frames per second, got {frame_rate!r}")
        self.n_classes = int(n_classes)
        self.loss_name = loss
        self.min_frames = int(min_frames)
        self.frame_rate = float(frame_rate)

    def get_params(self) -> dict:
        return dict(n_classes=self.n_classes, loss=self.loss_name, min_frames=self.min_frames,
                    frame_rate=self.frame_rate)

    def get_state(self) -> dict:
        return {}

    def set_state(self, state: dict, n_features: int) -> "AlignmentModel":
        self.n_features_ = int(n_features)
        return self

    # ------------------------------------------------------------ checks
    def _check_item(self, item, name="x"):
        try:
            X, Phi = item
        except (TypeError, ValueError):
            raise ParameterError(f"{name}: expected a pair (X, Phi) of features (T, p) and template (E, K)") from None
        X = check_features(X, f"{name}.X")
        Phi = np.asarray(Phi, dtype=np.float64)
        if Phi.ndim != 2 or Phi.shape[1] != self.n_classes or Phi.shape[0] < 1:
            raise ParameterError(f"{name}.Phi: expected a template of shape (E, {self.n_classes}), got {Phi.shape}")
        if not np.all(np.isfinite(Phi)):
            raise ParameterError(f"{name}.Phi: contains NaN or inf")
        if hasattr(self, "n_features_") and X.shape[1] != self.n_features_:
            raise ParameterError(f"{name}.X: expected {self.n_features_} features (as the model), got {X.shape[1]}")
        if Phi.shape[0] * self.min_frames > X.shape[0]:
            raise ParameterError(f"{name}: {Phi.shape[0]} events of >= {self.min_frames} frames do not fit in "
                                 f"{X.shape[0]} frames")
        self.n_features_ = X.shape[1]
        return X, Phi

    def n_params(self, n_features=None) -> int:
        p = self.n_features_ if n_features is None else int(n_features)
        return p * self.n_classes + self.n_classes

    def check_w(self, w, name="w") -> np.ndarray:
        return check_param_vector(w, self.n_params(), name)

    def split_w(self, w) -> tuple:
        """``(W (p, K), c (K,))``."""
        w = self.check_w(w)
        p, K = self.n_features_, self.n_classes
        return w[:p * K].reshape(p, K), w[p * K:]

    def join_w(self, W, c) -> np.ndarray:
        return np.concatenate([np.asarray(W, dtype=np.float64).reshape(-1), np.asarray(c, dtype=np.float64)])

    def project(self, w) -> np.ndarray:
        """Scorers are unconstrained: identity."""
        return np.array(w, dtype=np.float64)

    def initial_w(self, items, Ys=None) -> np.ndarray:
        """Template matching: ``W = I`` when ``p == K`` (e.g. chroma against pitch classes), else 0; ``c = 0``."""
        items = list(items)
        if not items:
            raise ParameterError("items: expected at least one (X, Phi) pair, got none")
        for i, it in enumerate(items):
            self._check_item(it, f"items[{i}]")
        p, K = self.n_features_, self.n_classes
        W = np.eye(p, K) if p == K else np.zeros((p, K))
        return self.join_w(W, np.zeros(K))

    def default_w(self, items=None) -> np.ndarray:
        if not hasattr(self, "n_features_"):
            return self.initial_w(items)
        p, K = self.n_features_, self.n_classes
        return self.join_w(np.eye(p, K) if p == K else np.zeros((p, K)), np.zeros(K))

    # ------------------------------------------------------------ scores
    def scores(self, item, w) -> np.ndarray:
        """Frame × event scores ``S`` (T, E)."""
        X, Phi = self._check_item(item)
        W, c = self.split_w(w)
        return (X @ W + c[None, :]) @ Phi.T

    def joint_feature(self, item, y) -> np.ndarray:
        X, Phi = self._check_item(item)
        y = self._alignment(y, X.shape[0], Phi.shape[0])
        ZPhi = alignment_assignment(y) @ Phi           # (T, K)
        return np.concatenate([(X.T @ ZPhi).reshape(-1), ZPhi.sum(axis=0)])

    def score(self, item, y, w) -> float:
        return float(self.check_w(w) @ self.joint_feature(item, y))

    @staticmethod
    def _alignment(y, T, E) -> Alignment:
        if isinstance(y, PartialTarget):
            y = y.completion
        if not isinstance(y, Alignment):
            raise ParameterError(f"y: expected an Alignment, got {type(y).__name__}")
        if y.n_frames != T or y.n_events != E:
            raise ParameterError(f"y: aligns {y.n_events} events over {y.n_frames} frames, expected {E} over {T}")
        return y

    # ------------------------------------------------------------ targets
    def constraints(self, labels, n_frames, n_events):
        labels = list(labels or [])
        if not labels:
            return None
        return _dec().alignment_constraints_from_labels(labels, n_frames, n_events, self.frame_rate,
                                                        min_frames=self.min_frames)

    def make_target(self, item, y, w=None):
        X, Phi = self._check_item(item)
        if isinstance(y, Alignment):
            return self._alignment(y, X.shape[0], Phi.shape[0])
        if isinstance(y, PartialTarget):
            if w is None:
                return y
            labels = y.labels
        else:
            labels = tuple(y)
            for lab in labels:
                if not isinstance(lab, (AnchorLabel, EventSpanLabel)):
                    raise ParameterError(f"y: expected AnchorLabel/EventSpanLabel items, got {type(lab).__name__}")
        if w is None:
            w = self.default_w([item])
        comp = self.decode(item, w, constraints=self.constraints(labels, X.shape[0], Phi.shape[0]))
        return PartialTarget(tuple(labels), comp, X.shape[0])

    def violations(self, labels, y: Alignment) -> int:
        """Number of anchor/span labels whose onset window ``y`` misses."""
        labels = list(labels)
        if not labels:
            return 0
        n = 0
        for lab in labels:
            cons = self.constraints([lab], y.n_frames, y.n_events)
            n += int(not cons.is_satisfied_by(y))
        return n

    # ------------------------------------------------------------ decoding
    def decode(self, item, w, constraints=None) -> Alignment:
        return _unwrap(_dec().align(self.scores(item, w), min_frames=self.min_frames, constraints=constraints))

    def second_best(self, item, w, constraints=None) -> tuple:
        best, second = _dec().align_second_best(self.scores(item, w), min_frames=self.min_frames,
                                                constraints=constraints)
        return _unwrap(best), (None if second is None else _unwrap(second))

    def loss_augmented_decode(self, item, target, w, *, loss_scale=1.0) -> Alignment:
        X, Phi = self._check_item(item)
        truth = self._alignment(target, X.shape[0], Phi.shape[0])
        res = _dec().align_loss_augmented(self.scores(item, w), truth, loss=self.loss_name,
                                          loss_scale=float(loss_scale), min_frames=self.min_frames)
        return _unwrap(res)

    def loss(self, target, y_hat: Alignment) -> float:
        truth = target.completion if isinstance(target, PartialTarget) else target
        if self.loss_name == "hamming":
            return float(_dec().alignment_hamming(truth, y_hat))
        return float(_dec().alignment_onset_loss(truth, y_hat))
