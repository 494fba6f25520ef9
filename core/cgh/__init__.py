"""The copy-number (aCGH) recipe and its parts, in one room.

* :mod:`marginalia.cgh.recipe` -- :class:`CghSegmenter`, the recipe: a learned metric, per-platform penalty
  laws and change pruning, fitted from partial labels;
* :mod:`marginalia.cgh.settings` -- one small validated settings object per stage of the recipe (metric
  learning, training windows, platforms, penalty laws, pruning);
* :mod:`marginalia.cgh.penalty_law` -- :class:`PenaltyLaw`, the penalty of a profile from its summaries;
* :mod:`marginalia.cgh.penalty_regression` -- interval regression of the log-penalty on sequence summaries;
* :mod:`marginalia.cgh.penalty_path` -- the whole penalty path of 1-d optimal partitioning and the label
  error along it (the targets of the interval regression);
* :mod:`marginalia.cgh.change_pruning` -- :class:`ChangePruner`, which drops the changes the labels say are false;
* :mod:`marginalia.cgh.training_windows` -- windows around the labels of long profiles, so training stays short;
* :mod:`marginalia.cgh.features` -- per-probe Hermite features and per-profile density of the logratio.

The generic learners the recipe fits with (SSVM, partial labels, transfer) stay in :mod:`marginalia.learners`.
"""
