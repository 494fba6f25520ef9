"""Audio-to-score alignment: the one score aligner the app, the command line and the Python API use.

* :mod:`.aligner` -- :class:`ScoreAligner`: its features (semitone-band chroma and onset chroma), the
  frame × event scores, decoding, onset refinement and weak supervision (:meth:`ScoreAligner.fit`);
* :mod:`.dp` -- the monotone decoder with a per-event duration cost table, and each event's best
  one-onset move (the runner-up and the margins of the active-learning questions);
* :mod:`.runs` -- runs of repeated notes counted onto their pitch's strikes;
* :mod:`.tempo` -- expected event durations at the local tempo of a first decoded path (the second decode).
"""

from .aligner import AlignmentFeatures, AlignmentOutput, ScoreAligner, align_recording

__all__ = ["AlignmentFeatures", "AlignmentOutput", "ScoreAligner", "align_recording"]
