"""A brute-force segmentation task for testing the active-learning loop.

Items are tiny sequences (T <= 10, p features). The score of a segmentation y
is ``w · φ(y)`` with ``φ(y) = -(scatter_1(y), ..., scatter_p(y), n_changes(y))``
so ``w = (b_1..b_p, λ)`` is a diagonal metric and a change penalty. Every
segmentation is enumerated, which makes best, runner-up and worst exact.
"""

import itertools

import numpy as np

from marginalia.active.uncertainty import PartScores
from marginalia.exceptions import InfeasibleLabelsError
from marginalia.types import BoundaryLabel, RegionLabel


def all_segmentations(T):
    for k in range(T):
        yield from itertools.combinations(range(1, T), k)


def joint_features(X, cuts):
    T = X.shape[0]
    bounds = [0, *cuts, T]
    scatter = np.zeros(X.shape[1])
    for a, b in zip(bounds[:-1], bounds[1:]):
        seg = X[a:b]
        scatter += ((seg - seg.mean(0)) ** 2).sum(0)
    return -np.r_[scatter, len(cuts)]


def satisfies(cuts, labels):
    cs = set(cuts)
    for lab in labels:
        if isinstance(lab, BoundaryLabel) and lab.index not in cs:
            return False
        if isinstance(lab, RegionLabel):
            n = sum(lab.start < c < lab.stop for c in cs)
            lo, hi = lab.kind.bounds
            if n < lo or (hi is not None and n > hi):
                return False
    return True


class ToySegmentationAdapter:
    def __init__(self, w0):
        self.w0 = np.asarray(w0, dtype=float)
        self.refits = 0
        self._cache = {}
        self._masks = {}
        self._slices = {}

    def _table(self, X):
        key = id(X)
        if key not in self._cache:
            segs = list(all_segmentations(X.shape[0]))
            self._cache[key] = (X, segs, np.array([joint_features(X, c) for c in segs]))
        return self._cache[key][1:]

    def _slice(self, X, start, stop):
        key = (id(X), start, stop)
        if key not in self._slices:
            self._slices[key] = (X, X[start:stop])
        return self._slices[key][1]

    def _ranked(self, X, labels):
        segs, phi = self._table(X)
        key = (id(X), tuple(lab.id for lab in labels))
        ok = self._masks.get(key)
        if ok is None:
            ok = self._masks[key] = np.array([satisfies(c, labels) for c in segs])
        scores = phi @ self.w_
        idx = np.flatnonzero(ok)
        return idx[np.lexsort((idx, -scores[idx]))], segs, phi, scores

    def initialize(self, items):
        self.w_ = self.w0.copy()

    def check_labels(self, item_id, X, labels):
        segs, _ = self._table(X)
        if not any(satisfies(c, labels) for c in segs):
            raise InfeasibleLabelsError(f"labels of {item_id!r} admit no segmentation", [lab.id for lab in labels])

    def part_scores(self, X, part, labels):
        Xp = X if (part.start, part.stop) == (0, X.shape[0]) else self._slice(X, part.start, part.stop)
        inside = [lab for lab in labels if part.contains_label(lab)]
        shifted = [type(lab)(item_id=lab.item_id, id=lab.id, index=lab.index - part.start)
                   if isinstance(lab, BoundaryLabel) else
                   RegionLabel(item_id=lab.item_id, id=lab.id, start=lab.start - part.start,
                               stop=lab.stop - part.start, kind=lab.kind) for lab in inside]
        order, segs, phi, scores = self._ranked(Xp, shifted)
        second = float(scores[order[1]]) if len(order) > 1 else None
        return PartScores(best=float(scores[order[0]]), second=second, worst=float(scores[order[-1]]),
                          size=part.size, scale=max(float(self.w_[-1]), 1e-3))

    def decode(self, X, labels=()):
        order, segs, _, _ = self._ranked(X, list(labels))
        return segs[order[0]]

    def perceptron_step(self, X, labels):
        order_c, segs, phi, _ = self._ranked(X, labels)
        order_u, _, _, _ = self._ranked(X, [])
        self.w_ = np.maximum(self.w_ + phi[order_c[0]] - phi[order_u[0]], 0.0)

    def refit(self, data, labels):
        self.refits += 1
        for _ in range(5):
            for X, lab in zip(data, labels):
                self.perceptron_step(X, lab)

    def evaluate(self, held_out):
        errors = [len(set(self.decode(X)) ^ set(truth)) for X, truth in held_out]
        return float(np.mean(errors))


def make_items(n, T=8, seed=0):
    """Feature 0 holds one true change; feature 1 holds a larger irrelevant jump."""
    rng = np.random.default_rng(seed)
    items, truth = {}, {}
    for i in range(n):
        c = int(rng.integers(2, T - 1))
        d = int(rng.integers(1, T))
        X = rng.normal(0, 0.1, (T, 2))
        X[c:, 0] += 2.0
        X[d:, 1] += 3.0
        items[f"item{i}"] = X
        truth[f"item{i}"] = (c,)
    return items, truth
