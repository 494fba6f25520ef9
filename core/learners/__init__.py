"""Learners, generic over models: BCFW structured SVM, averaged perceptron, partial labels,
transfer between datasets, weak supervision for audio-to-score."""

from .partial import PartialLabelSSVM
from .perceptron import StructuredPerceptron
from .ssvm import SSVM
from .transfer import TransferSSVM
from .weak import WeakAlignment

__all__ = ["SSVM", "StructuredPerceptron", "PartialLabelSSVM", "TransferSSVM", "WeakAlignment"]
