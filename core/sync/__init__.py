"""Audio-to-audio synchronisation: align two recordings of the same music and carry labels between them.

* :mod:`.model` -- :class:`WarpingModel`: the joint feature map, losses (Hamming, symmetric area) and
  decoders of metric learning for DTW (Lajugie 2015, ch. 5; Lajugie et al., ICML 2014);
* :mod:`.frank_wolfe` -- :class:`WarpingFrankWolfe`: its block-coordinate Frank-Wolfe learner;
* :mod:`.aligner` -- :class:`SyncAligner`: the product's aligner of two recordings (features, metric,
  exact DTW through anchors inside an optional corridor, runner-up margin), saved as model task ``"sync"``;
* :mod:`.question` -- :class:`SyncQuestion`: where an anchor would change the path the most
  (:meth:`SyncAligner.question`).

The exact DTW decoders they use are :mod:`marginalia.decoders.warping` (``marginalia.dtw``).
"""

from .aligner import SYNC_FEATURES, SyncAligner, SyncFeatures, SyncResult, warping_from_times
from .frank_wolfe import WarpingFrankWolfe
from .model import WarpingModel, area_curvature_bound, warping_matrix
from .question import SyncQuestion

__all__ = ["SYNC_FEATURES", "SyncAligner", "SyncFeatures", "SyncResult", "SyncQuestion", "warping_from_times",
           "WarpingFrankWolfe", "WarpingModel", "area_curvature_bound", "warping_matrix"]
