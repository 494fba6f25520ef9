"""Models: joint feature maps, losses and the link to the decoders, one module per task."""

from .persistence import from_bytes, labels_hash, load_model_parts, save_model_parts, to_bytes
from .segmentation import PartialTarget, SegmentationModel, label_violations

__all__ = ["SegmentationModel", "PartialTarget", "label_violations",
           "save_model_parts", "load_model_parts", "to_bytes", "from_bytes", "labels_hash"]
