"""pyqtgraph views of one item: profile, spectrogram, score roll and the margin strip."""
