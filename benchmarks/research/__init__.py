"""Research code the benchmarks import and the installed package does not ship.

Reached only by benchmarks and their tests (``tests/research/``), so it stays out of ``marginalia``
(``tests/test_reachable.py`` checks that every installed module is reached from an entry point):

* :mod:`.active_loop` -- ``ActiveLoop``, the offline replay of an annotator (Lou et al. 2014, Alg. 1.2),
  with ``PartPool`` and the ``LoopAdapter`` protocol the product's loop adapters follow;
* :mod:`.penalty_adapter` -- ``PenaltyPathAdapter``, per-sequence penalties learned from labels in that loop;
* :mod:`.recipe_adapter` -- ``RecipeAdapter``, the app engine's aCGH learner replayed in the loop, and the
  retrain policies of the recipe's metric (``RETRAIN_POLICIES``, ``retrain_metric_mode``);
* :mod:`.alignment_adapter` -- ``AlignmentAdapter``, a frame-event scorer (chroma) learned from anchors in the loop;
* :mod:`.transfer_cv` -- ``TransferRhoCV``, the coupling of ``TransferSSVM`` chosen by cross-validation;
* :mod:`.calibrated_penalty` -- ``PenaltyCalibration``, a per-sequence penalty over a learned metric;
"""
