"""Audio playback with a moving cursor; QtMultimedia is imported lazily and may be missing."""

from __future__ import annotations

import logging

from PySide6 import QtCore

log = logging.getLogger("marginalia.app.audio")


class AudioPlayer(QtCore.QObject):
    """Plays a span of an audio file and reports the position for the cursor.

    When QtMultimedia (or an audio device) is not available, :attr:`available` is False,
    :attr:`reason` says why, and :meth:`play` does nothing.

    Signals
    -------
    positionChanged(seconds or None)
        None when playback stops.
    """

    positionChanged = QtCore.Signal(object)

    def __init__(self, parent=None):
        super().__init__(parent)
        self.available = False
        self.reason = ""
        self._player = None
        self._output = None
        self._stop_at = None
        self._path = None
        try:
            from PySide6 import QtMultimedia  # noqa: F401  (optional module)
        except ImportError as exc:   # absent, or present without its system libraries (libpulse, ...)
            self.reason = f"audio playback is unavailable: Qt Multimedia cannot be loaded ({exc})"
            log.warning(self.reason)
            return
        try:
            from PySide6.QtMultimedia import QAudioOutput, QMediaDevices, QMediaPlayer
            if not QMediaDevices.audioOutputs():
                self.reason = "audio playback is unavailable: no audio output device found"
                return
            self._player = QMediaPlayer(self)
            self._output = QAudioOutput(self)
            self._player.setAudioOutput(self._output)
            self._player.positionChanged.connect(self._on_position)
            self.available = True
        except Exception as exc:  # a broken multimedia backend must not break the app
            self.reason = f"audio playback is unavailable: {exc}"
            log.warning(self.reason)

    def play(self, path: str, start_s: float = 0.0, stop_s: float | None = None) -> bool:
        """Play ``path`` from ``start_s`` to ``stop_s`` (end of file when None)."""
        if not self.available or not path:
            return False
        if path != self._path:
            self._player.setSource(QtCore.QUrl.fromLocalFile(path))
            self._path = path
        self._stop_at = stop_s
        self._player.setPosition(int(max(start_s, 0.0) * 1000))
        self._player.play()
        return True

    def stop(self):
        if self.available:
            self._player.stop()
        self.positionChanged.emit(None)

    def is_playing(self) -> bool:
        if not self.available:
            return False
        from PySide6.QtMultimedia import QMediaPlayer
        return self._player.playbackState() == QMediaPlayer.PlaybackState.PlayingState

    def _on_position(self, ms):
        t = ms / 1000.0
        if self._stop_at is not None and t >= self._stop_at:
            self.stop()
            return
        self.positionChanged.emit(t)
