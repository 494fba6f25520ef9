"""The embedded demo data reads back with our readers and is what make_demo.py generates."""

import importlib.util
import pathlib

import numpy as np

from marginalia.io import audio, cgh, midi

DEMO = pathlib.Path(__file__).resolve().parents[3] / "resources" / "demo"


def _make_demo():
    spec = importlib.util.spec_from_file_location("make_demo", DEMO / "make_demo.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_demo_files_read_back_consistently():
    seqs = cgh.read_profiles(DEMO / "profiles.csv")
    assert len(seqs) == 12 and all(200 <= s.n_samples <= 2000 for s in seqs)
    labels = cgh.read_annotations(DEMO / "annotations.csv", seqs)
    assert {lab.annotation for lab in labels} == set(cgh.ANNOTATION_KINDS)
    score = midi.read_midi(DEMO / "melody.mid")
    assert 15 <= score.duration_s <= 25 and score.tempo_map.shape[0] == 2
    assert max(len(score.event_pitches(e)) for e in range(score.n_events)) >= 3  # chords
    truth = midi.read_alignment_csv(DEMO / "melody_truth.csv")
    assert truth["event"].tolist() == list(range(score.n_events))
    np.testing.assert_allclose(truth["score_time_s"], score.event_onsets_s, atol=1e-9)
    assert np.all(np.diff(truth["audio_time_s"]) > 0)
    info = audio.audio_info(DEMO / "melody.wav")
    assert info.sr == 22050 and info.channels == 1 and truth["audio_time_s"][-1] < info.duration_s
    assert (DEMO / "melody.wav").stat().st_size < 1_000_000


def test_generator_reproduces_the_committed_files(tmp_path):
    _make_demo().main(tmp_path)
    for name in ("profiles.csv", "annotations.csv", "profiles_truth_breaks.csv", "melody.mid"):
        assert (tmp_path / name).read_bytes() == (DEMO / name).read_bytes(), name
    # onset times go through np.sin, whose last bit may differ between CPUs: compare values
    new_t, old_t = midi.read_alignment_csv(tmp_path / "melody_truth.csv"), midi.read_alignment_csv(
        DEMO / "melody_truth.csv")
    np.testing.assert_allclose(new_t["audio_time_s"], old_t["audio_time_s"], rtol=0, atol=1e-9)
    assert new_t["pitches"] == old_t["pitches"]
    new, _ = audio.load_audio(tmp_path / "melody.wav", sr=None)
    old, _ = audio.load_audio(DEMO / "melody.wav", sr=None)
    assert new.shape == old.shape and np.max(np.abs(new - old)) <= 2 / 32768
