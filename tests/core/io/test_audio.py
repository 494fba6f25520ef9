"""Audio decoding, resampling, caching and WAV writing, and damaged files."""

import os

import numpy as np
import pytest

from marginalia.exceptions import DataFormatError, ParameterError
from marginalia.io import audio


@pytest.fixture(autouse=True)
def _fresh_cache():
    audio.clear_audio_cache()
    yield
    audio.clear_audio_cache()


def _tone(freq, sr, seconds, amp=0.5):
    t = np.arange(int(sr * seconds)) / sr
    return amp * np.sin(2 * np.pi * freq * t)


def test_wav_round_trip_pcm16_and_float(tmp_path):
    y = _tone(440, 8000, 0.25)
    audio.write_wav(tmp_path / "a.wav", y, 8000)
    back, sr = audio.load_audio(tmp_path / "a.wav", sr=None)
    assert sr == 8000 and back.shape == y.shape and back.dtype == np.float32
    assert np.max(np.abs(back - y)) <= 1 / 32768 + 1e-7
    audio.write_wav(tmp_path / "f.wav", y, 8000, subtype="FLOAT")
    back, _ = audio.load_audio(tmp_path / "f.wav", sr=None)
    np.testing.assert_allclose(back, y.astype(np.float32), rtol=0, atol=0)


def test_stereo_mono_mix_and_info(tmp_path):
    left, right = _tone(200, 8000, 0.5, 0.25), _tone(300, 8000, 0.5, 0.5)
    audio.write_wav(tmp_path / "s.wav", np.column_stack([left, right]), 8000, subtype="FLOAT")
    info = audio.audio_info(tmp_path / "s.wav")
    assert (info.sr, info.channels, info.frames, info.format) == (8000, 2, 4000, "WAV")
    assert info.duration_s == pytest.approx(0.5)
    y, _ = audio.load_audio(tmp_path / "s.wav", sr=None)
    np.testing.assert_allclose(y, ((left + right) / 2).astype(np.float32), atol=1e-6)
    y2, _ = audio.load_audio(tmp_path / "s.wav", sr=None, mono=False)
    assert y2.shape == (4000, 2)


def test_resampling_keeps_duration_and_pitch(tmp_path):
    audio.write_wav(tmp_path / "t.wav", _tone(1000, 44100, 1.0), 44100, subtype="FLOAT")
    y, sr = audio.load_audio(tmp_path / "t.wav", sr=22050)
    assert sr == 22050 and abs(y.shape[0] - 22050) <= 1
    spectrum = np.abs(np.fft.rfft(y[2000:-2000] * np.hanning(y.shape[0] - 4000)))
    peak_hz = np.argmax(spectrum) * 22050 / (y.shape[0] - 4000)
    assert abs(peak_hz - 1000) < 2


def test_cache_decodes_once_and_sees_edits(tmp_path):
    p = tmp_path / "c.wav"
    audio.write_wav(p, _tone(440, 8000, 0.5), 8000)
    a, _ = audio.load_audio(p, sr=8000)
    b, _ = audio.load_audio(p, sr=8000)
    assert a is b and not a.flags.writeable
    assert audio.audio_cache_info()["hits"] == 1
    audio.write_wav(p, _tone(440, 8000, 0.25), 8000)
    os.utime(p, ns=(os.stat(p).st_atime_ns, os.stat(p).st_mtime_ns + 10**9))
    c, _ = audio.load_audio(p, sr=8000)
    assert c.shape[0] == 2000


def test_truncated_header(tmp_path):
    audio.write_wav(tmp_path / "g.wav", _tone(440, 8000, 0.1), 8000)
    p = tmp_path / "t.wav"
    p.write_bytes((tmp_path / "g.wav").read_bytes()[:30])
    for fn in (audio.load_audio, audio.audio_info):
        with pytest.raises(DataFormatError, match="cannot decode") as info:
            fn(p)
        assert info.value.path == str(p)


def test_samples_cut_short_are_refused_with_both_durations(tmp_path):
    audio.write_wav(tmp_path / "g.wav", _tone(440, 8000, 2.0), 8000)
    whole = (tmp_path / "g.wav").read_bytes()
    p = tmp_path / "cut.wav"
    p.write_bytes(whole[: len(whole) // 2])          # an interrupted copy: header intact, samples half gone
    for fn in (audio.load_audio, audio.audio_info):
        with pytest.raises(DataFormatError, match=r"declares 2\.0 s .* only 1\.0 s: it is truncated") as info:
            fn(p)
        assert info.value.path == str(p)
    assert audio.audio_info(tmp_path / "g.wav").frames == 16000   # the whole file still reads
    # a streaming writer's placeholder size (0xFFFFFFFF) says nothing about the length: not refused
    from marginalia.io.wav_header import declared_wav_frames
    assert declared_wav_frames(tmp_path / "g.wav") == 16000
    streamed = bytearray(whole)
    at = streamed.index(b"data") + 4
    streamed[at:at + 4] = b"\xff\xff\xff\xff"
    (tmp_path / "s.wav").write_bytes(bytes(streamed))
    assert declared_wav_frames(tmp_path / "s.wav") is None


def test_zero_length_audio(tmp_path):
    audio.write_wav(tmp_path / "g.wav", _tone(440, 8000, 0.1), 8000)
    p = tmp_path / "z.wav"
    header = bytearray((tmp_path / "g.wav").read_bytes()[:44])   # header only, no samples
    p.write_bytes(bytes(header))
    for fn in (audio.load_audio, audio.audio_info):   # its data chunk still declares 0.1 s
        with pytest.raises(DataFormatError, match=r"declares 0\.1 s .* only 0\.0 s: it is truncated"):
            fn(p)
    at = header.index(b"data") + 4
    header[at:at + 4] = bytes(4)                       # a data chunk of 0 bytes: an empty recording
    p.write_bytes(bytes(header))
    for fn in (audio.load_audio, audio.audio_info):
        with pytest.raises(DataFormatError, match="zero length"):
            fn(p)


@pytest.mark.parametrize("name", ["garbage.wav", "garbage.flac", "garbage.mp3", "garbage.xyz", "empty.ogg"])
def test_garbage_and_unsupported_files(tmp_path, name):
    p = tmp_path / name
    p.write_bytes(b"" if name.startswith("empty") else bytes(range(256)) * 8)
    with pytest.raises(DataFormatError, match="cannot decode|zero length"):
        audio.load_audio(p)


def test_argument_validation(tmp_path):
    with pytest.raises(ParameterError, match="sr"):
        audio.write_wav(tmp_path / "x.wav", [0.0, 0.1], 0)
    with pytest.raises(ParameterError, match="NaN"):
        audio.write_wav(tmp_path / "x.wav", [0.0, np.nan], 8000)
    with pytest.raises(ParameterError, match="shape"):
        audio.write_wav(tmp_path / "x.wav", np.zeros((2, 2, 2)), 8000)
    audio.write_wav(tmp_path / "x.wav", [0.0, 0.1], 8000)
    with pytest.raises(ParameterError, match="sr: expected"):
        audio.load_audio(tmp_path / "x.wav", sr=-5)
    with pytest.raises(DataFormatError, match="no such file"):
        audio.load_audio(tmp_path / "missing.wav")


@pytest.mark.parametrize("fmt, subtype, ext", [("FLAC", "PCM_16", "flac"), ("OGG", "VORBIS", "ogg"),
                                                ("MP3", "MPEG_LAYER_III", "mp3")])
def test_compressed_formats_decode(tmp_path, fmt, subtype, ext):
    import soundfile
    y = _tone(440, 22050, 0.5)
    p = tmp_path / f"c.{ext}"
    soundfile.write(str(p), y, 22050, format=fmt, subtype=subtype)
    info = audio.audio_info(p)
    assert info.sr == 22050 and info.channels == 1 and abs(info.duration_s - 0.5) < 0.06
    back, sr = audio.load_audio(p, sr=22050)
    n = min(back.shape[0], y.shape[0])
    # MP3 may delay the signal by its encoder padding: compare through the best of a few lags
    lags = range(0, 2000, 25) if fmt == "MP3" else [0]
    best = max(np.corrcoef(back[lag:n], y[: n - lag])[0, 1] for lag in lags)
    assert best > 0.9


def test_threads_decode_a_file_once(tmp_path, monkeypatch):
    import threading
    p = tmp_path / "t.wav"
    audio.write_wav(p, _tone(440, 8000, 0.5), 8000)
    calls = []
    real = audio._decode

    def slow_decode(path):
        calls.append(path)
        threading.Event().wait(0.05)
        return real(path)

    monkeypatch.setattr(audio, "_decode", slow_decode)
    out = []
    threads = [threading.Thread(target=lambda: out.append(audio.load_audio(p, sr=8000)[0])) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(calls) == 1 and len(out) == 4 and all(o is out[0] for o in out)


def test_clicked_excerpts_play_the_same_excerpt_once_per_candidate_with_a_click_at_it():
    from marginalia.io.audio import clicked_excerpts
    sr = 8000
    t = np.arange(4 * sr) / sr
    y = 0.3 * np.sin(2 * np.pi * 220 * t)
    signal, at = clicked_excerpts(y, sr, [1.5, 1.8], before_s=0.5, after_s=0.5, gap_s=0.25)
    length = round((1.8 + 0.5 - (1.5 - 0.5)) * sr)
    assert signal.dtype == np.float32 and signal.shape == (2 * length + round(0.25 * sr),)
    assert at == pytest.approx([0.5, length / sr + 0.25 + 0.8], abs=1.5 / sr)
    first, second = signal[:length].astype(float), signal[-length:].astype(float)
    clicks = first - second                       # the same excerpt: only the clicks differ
    loud = np.flatnonzero(np.abs(clicks) > 0.05)
    assert loud.min() == pytest.approx(0.5 * sr, abs=2) and 0.8 * sr < loud.max() <= 0.83 * sr
    assert not np.any(np.abs(clicks[round(0.53 * sr):round(0.8 * sr)]) > 1e-6)    # nothing between them
    assert np.all(np.abs(signal) <= 1.0)


@pytest.mark.parametrize("kwargs, match", [
    ({"y": np.zeros((10, 2))}, "mono signal"), ({"y": np.array([])}, "mono signal"),
    ({"times_s": []}, "at least one"), ({"times_s": [np.nan]}, "at least one"),
    ({"gap_s": -1.0}, "gap_s"), ({"click_hz": 0.0}, "click_hz"), ({"sr": 0}, "sr")])
def test_clicked_excerpts_refuse_bad_input_in_one_line(kwargs, match):
    from marginalia.io.audio import clicked_excerpts
    args = {"y": np.zeros(800), "sr": 8000, "times_s": [0.05]} | kwargs
    with pytest.raises(ParameterError, match=match):
        clicked_excerpts(args.pop("y"), args.pop("sr"), args.pop("times_s"), **args)
