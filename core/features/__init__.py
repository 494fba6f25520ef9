"""Features: Hermite moments (:mod:`.hermite`), robust standardisation (:mod:`.standardize`) and audio
features (:mod:`.audio`, imports librosa: import it explicitly)."""

from .hermite import hermite_features, hermite_values, robust_noise_scale
from .standardize import RobustStandardizer, check_features, robust_standardize

__all__ = ["hermite_features", "hermite_values", "robust_noise_scale", "RobustStandardizer", "check_features",
           "robust_standardize"]
