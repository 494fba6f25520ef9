"""What a WAV file's header says about its length, to catch files cut short.

libsndfile quietly reads a truncated WAV up to where its bytes end, so an
interrupted copy or recording decodes as a shorter, valid-looking signal. The
RIFF header still records how many bytes of samples the writer meant to put in
the ``data`` chunk; comparing that with what is decodable tells the two apart.
"""

from __future__ import annotations

import struct

#: sizes streaming writers leave as placeholders when they cannot seek back to fill them in
_PLACEHOLDER_SIZES = (0, 0xFFFFFFFF, 0x7FFFFFFF)
_MAX_CHUNKS = 64


def declared_wav_frames(path):
    """Frames the ``data`` chunk of a RIFF/WAVE file declares, or ``None`` when it does not say.

    Parameters
    ----------
    path : str or path-like

    Returns
    -------
    frames : int or None
        ``data`` chunk size // block align; ``None`` for non-RIFF files (FLAC, OGG, MP3,
        RF64/W64, ...), placeholder sizes and headers this reader does not understand.
    """
    with open(path, "rb") as fh:
        head = fh.read(12)
        if len(head) < 12 or head[:4] not in (b"RIFF", b"RIFX") or head[8:12] != b"WAVE":
            return None
        order = "<" if head[:4] == b"RIFF" else ">"
        block_align = None
        for _ in range(_MAX_CHUNKS):
            chunk = fh.read(8)
            if len(chunk) < 8:
                return None
            cid, size = chunk[:4], struct.unpack(order + "I", chunk[4:])[0]
            if cid == b"fmt ":
                body = fh.read(size)
                if len(body) < 14:
                    return None
                block_align = struct.unpack(order + "H", body[12:14])[0]
                if size % 2:
                    fh.read(1)
            elif cid == b"data":
                if block_align in (None, 0) or size in _PLACEHOLDER_SIZES:
                    return None
                return size // block_align
            else:
                fh.seek(size + (size % 2), 1)   # chunks are padded to an even length
    return None


def truncation_message(declared_frames: int, frames: int, sr: int):
    """A sentence for a file holding fewer frames than its header declares, else ``None``."""
    if declared_frames is None or frames >= declared_frames:
        return None
    return (f"the WAV header declares {declared_frames / sr:.1f} s of audio but the file holds only "
            f"{frames / sr:.1f} s: it is truncated (an interrupted copy, download or recording?). "
            "Copy or export the recording again")
