"""Audio-to-audio synchronisation: align two recordings of the same music and carry labels between them.

* :mod:`.model` -- :class:`WarpingModel`: the joint feature map, losses (Hamming, symmetric area) and
  decoders of metric learning for DTW (Lajugie 2015, ch. 5; Lajugie et al., ICML 2014);
* :mod:`.frank_wolfe` -- :class:`WarpingFrankWolfe`: its block-coordinate Frank-Wolfe learner.

The exact DTW decoders they use are :mod:`marginalia.decoders.warping` (``marginalia.dtw``).
"""

from .frank_wolfe import WarpingFrankWolfe
from .model import WarpingModel, area_curvature_bound, warping_matrix

__all__ = ["WarpingFrankWolfe", "WarpingModel", "area_curvature_bound", "warping_matrix"]
