"""Active learning: parts, uncertainty strategies, the stopping criterion and the query loop.

The submodules are small and importable on their own:

* :mod:`marginalia.active.parts` -- :class:`Part`, :func:`make_parts`, :func:`parts_for_items`, :func:`phrase_parts`;
* :mod:`marginalia.active.uncertainty` -- :data:`STRATEGIES`, :class:`PartScores`, :func:`next_queries`, ...;
* :mod:`marginalia.active.stopping` -- :class:`StoppingCriterion` (Lou et al. 2014, eq. 1.8);
* :mod:`marginalia.active.loop` -- :class:`ActiveSession`, :class:`PartPool`, :class:`OracleError`;
* :mod:`marginalia.active.segmentation_task` -- :class:`SegmentationTask`, the loop's adapter for change points,
  and ``segmentation_part_scores``, the engine's part scorer;
* :mod:`marginalia.active.count_runner_up` -- the runner-up a region label would tell apart from the best
  segmentation (a change, or a short pair, added or removed) and the local search that follows the optimum;
* :mod:`marginalia.active.warm_segmenter` -- :class:`WarmSegmenter`, best segmentations of many parts followed
  between exact decodes;
* :mod:`marginalia.active.penalty_task` -- :class:`PenaltyPathTask`, per-sequence penalties learned from labels;
* :mod:`marginalia.active.recipe_task` -- :class:`RecipeTask`, the app engine's aCGH learner (perceptron steps,
  the aCGH recipe every k labels) for offline replays (imported on demand: it loads the recipe's learners).
"""

from .loop import ActiveSession, OracleError, PartPool, TaskAdapter
from .parts import Part, make_parts, parts_for_items, phrase_parts
from .penalty_task import PenaltyPathTask
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
    "ActiveSession", "OracleError", "PartPool", "TaskAdapter", "PenaltyPathTask",
    "Part", "make_parts", "parts_for_items", "phrase_parts",
    "StoppingCriterion", "convergence_eta", "mean_uncertainty", "robust_mean",
    "STRATEGIES", "PartScores", "PartScorer", "next_queries", "pool_uncertainties", "rank_parts", "score_parts", "select_batch",
    "uncertainty_from_scores",
]
