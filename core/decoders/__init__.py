"""Exact structured decoders: segmentation, alignment and warping.

Every decoder is a validated public function over private numba kernels, with
a constrained form (partial labels), a loss-augmented form (SSVM training) and
a second-best form (best-vs-second margins). ``brute`` and ``brute_alignment``
hold the brute-force oracles the tests compare against.
"""

from .alignment import (
                        AlignmentConstraints,
                        AlignmentResult,
                        LossAugmentedAlignmentResult,
                        align,
                        align_loss_augmented,
                        align_second_best,
                        align_with_duration_prior,
                        alignment_constraints_from_labels,
                        alignment_hamming,
                        alignment_onset_loss,
                        alignment_score,
)
from .seg_constraints import SegmentConstraints, constraints_from_labels
from .segmentation import (
                        LossAugmentedResult,
                        SegmentationResult,
                        frobenius_loss,
                        hamming_loss,
                        segment_fixed_k,
                        segment_loss_augmented,
                        segment_penalized,
                        segment_second_best,
                        segmentation_cost,
)
from .warping import (
                        LossAugmentedWarpingResult,
                        WarpingConstraints,
                        WarpingResult,
                        band_limits,
                        dtw,
                        dtw_from_cost,
                        dtw_loss_augmented,
                        dtw_second_best,
                        warping_constraints_from_labels,
                        warping_cost,
                        warping_hamming,
)

__all__ = [
    # segmentation
    "SegmentConstraints", "constraints_from_labels", "SegmentationResult", "LossAugmentedResult",
    "segment_penalized", "segment_fixed_k", "segment_loss_augmented", "segment_second_best",
    "segmentation_cost", "frobenius_loss", "hamming_loss",
    # alignment
    "AlignmentConstraints", "AlignmentResult", "LossAugmentedAlignmentResult", "alignment_constraints_from_labels",
    "align", "align_loss_augmented", "align_second_best", "align_with_duration_prior", "alignment_score",
    "alignment_hamming", "alignment_onset_loss",
    # warping
    "WarpingConstraints", "WarpingResult", "LossAugmentedWarpingResult", "warping_constraints_from_labels",
    "band_limits", "dtw", "dtw_from_cost", "dtw_loss_augmented", "dtw_second_best", "warping_cost",
    "warping_hamming",
]
