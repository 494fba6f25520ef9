"""Active learning: parts, uncertainty strategies, runner-ups and the stopping criterion the engine uses.

The submodules are small and importable on their own:

* :mod:`marginalia.active.parts` -- :class:`Part`, :func:`make_parts`, :func:`parts_for_items`, :func:`phrase_parts`;
* :mod:`marginalia.active.uncertainty` -- :data:`STRATEGIES`, :class:`PartScores`, :func:`next_queries`, ...;
* :mod:`marginalia.active.stopping` -- :class:`StoppingCriterion` (Lou et al. 2014, eq. 1.8);
* :mod:`marginalia.active.segmentation_adapter` -- :class:`SegmentationAdapter`, the loop adapter for change points,
  and ``segmentation_part_scores``, the engine's part scorer;
* :mod:`marginalia.active.count_runner_up` -- the runner-up a region label would tell apart from the best
  segmentation (a change, or a short pair, added or removed) and the local search that follows the optimum;
* :mod:`marginalia.active.warm_segmenter` -- :class:`WarmSegmenter`, best segmentations of many parts followed
  between exact decodes;
* :mod:`marginalia.active.realign` -- :class:`RealignAdapter`, anchors on a few windows and the whole performance
  re-aligned.

The offline replay loop (``ActiveLoop``) and the loop adapters only the benchmarks use live in
``benchmarks/research/``.
"""

from .parts import Part, make_parts, parts_for_items, phrase_parts
from .stopping import StoppingCriterion, convergence_eta, mean_uncertainty, robust_mean
from .uncertainty import (
                          STRATEGIES,
                          PartScorer,
                          PartScores,
                          next_queries,
                          pool_uncertainties,
                          rank_parts,
                          score_parts,
                          select_batch,
                          uncertainty_from_scores,
)

__all__ = [
    "Part", "make_parts", "parts_for_items", "phrase_parts",
    "StoppingCriterion", "convergence_eta", "mean_uncertainty", "robust_mean",
    "STRATEGIES", "PartScores", "PartScorer", "next_queries", "pool_uncertainties", "rank_parts", "score_parts", "select_batch",
    "uncertainty_from_scores",
]
