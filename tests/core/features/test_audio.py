import numpy as np
import pytest

from marginalia.exceptions import ParameterError
from marginalia.features.audio import FeatureCache, chroma, compute_features, log_mel, mfcc, onset_strength

SR = 8000


def _tone(freq, seconds=0.5):
    t = np.arange(int(SR * seconds)) / SR
    return 0.5 * np.sin(2 * np.pi * freq * t)


def test_shapes_and_times():
    y = _tone(440.0)
    fm = log_mel(y, SR, n_mels=16, hop_length=256, n_fft=512)
    assert fm.values.shape[1] == 16 and fm.values.shape[0] == fm.times.shape[0]
    np.testing.assert_allclose(np.diff(fm.times), 256 / SR)
    m = mfcc(y, SR, n_mfcc=5, hop_length=256, n_fft=512, n_mels=16)
    assert m.values.shape == (fm.values.shape[0], 15)
    o = onset_strength(y, SR, hop_length=256)
    assert o.values.shape[1] == 1


def test_chroma_of_an_a_peaks_at_a():
    fm = chroma(_tone(440.0, 1.0), SR, hop_length=512)
    assert fm.names[int(np.argmax(fm.values.mean(axis=0)))] == "A"


def test_onset_strength_peaks_at_a_click():
    y = np.zeros(SR)
    y[SR // 2: SR // 2 + 200] = np.random.default_rng(0).normal(0, 0.5, 200)
    fm = onset_strength(y, SR, hop_length=128)
    assert abs(fm.times[int(np.argmax(fm.values[:, 0]))] - 0.5) < 0.05


def test_cache_memory_lru_and_disk(tmp_path):
    y = _tone(220.0)
    cache = FeatureCache(max_items=1, directory=tmp_path)
    a = compute_features(y, SR, "log_mel", cache=cache, n_mels=8, hop_length=256, n_fft=512)
    b = compute_features(y, SR, "log_mel", cache=cache, n_mels=8, hop_length=256, n_fft=512)
    assert a is b and cache.hits == 1
    compute_features(y, SR, "log_mel", cache=cache, n_mels=4, hop_length=256, n_fft=512)
    assert len(cache) == 1  # LRU dropped the first one from memory
    fresh = FeatureCache(directory=tmp_path)
    c = compute_features(y, SR, "log_mel", cache=fresh, n_mels=8, hop_length=256, n_fft=512)
    assert fresh.hits == 1 and np.array_equal(c.values, a.values) and c.names == a.names


def test_the_disk_cache_takes_concurrent_writers_of_one_item(tmp_path):
    from concurrent.futures import ThreadPoolExecutor
    y = _tone(220.0)
    fm = compute_features(y, SR, "log_mel", n_mels=8, hop_length=256, n_fft=512)
    cache = FeatureCache(directory=tmp_path)
    with ThreadPoolExecutor(4) as pool:       # a retrain and a question ranking computing the same item
        list(pool.map(lambda _: cache.put("k", fm), range(16)))
    assert [p.name for p in tmp_path.iterdir()] == ["k.npz"]
    assert np.array_equal(FeatureCache(directory=tmp_path).get("k").values, fm.values)


def test_bad_inputs():
    with pytest.raises(ParameterError, match="mono"):
        log_mel(np.zeros((2, 100)), SR)
    with pytest.raises(ParameterError, match="sr"):
        log_mel(np.zeros(100), -1)
    with pytest.raises(ParameterError, match="non-finite"):
        log_mel(np.array([0.0, np.nan]), SR)
    with pytest.raises(ParameterError, match="kind"):
        compute_features(np.zeros(100), SR, "spectral_flatness")


def test_a_recording_shorter_than_one_window_gives_its_frames_without_a_warning():
    import warnings

    from marginalia.features.audio import log_mel, mfcc
    y = np.sin(2 * np.pi * 440 * np.arange(700) / 22050)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        mel = log_mel(y, 22050, n_fft=1024, hop_length=512)
        cep = mfcc(y, 22050, n_fft=1024, hop_length=512)
    assert mel.values.shape[0] == cep.values.shape[0] == 1 + 700 // 512
    assert np.all(np.isfinite(mel.values)) and np.all(np.isfinite(cep.values))
    # a recording of at least one window is analysed exactly as before
    long = np.sin(2 * np.pi * 440 * np.arange(5000) / 22050)
    import librosa
    ref = librosa.power_to_db(librosa.feature.melspectrogram(y=long.astype(np.float32), sr=22050, n_fft=1024,
                                                             hop_length=512, n_mels=64), ref=np.max)
    assert np.allclose(log_mel(long, 22050, n_fft=1024, hop_length=512).values, ref.T, atol=1e-3)
