"""Learners, generic over models: BCFW structured SVM, averaged perceptron, partial labels,
transfer between datasets (the score aligner's weak supervision is
:meth:`marginalia.align.ScoreAligner.fit`)."""

from .partial import PartialLabelSSVM
from .perceptron import StructuredPerceptron
from .ssvm import SSVM
from .transfer import TransferSSVM

__all__ = ["SSVM", "StructuredPerceptron", "PartialLabelSSVM", "TransferSSVM"]
