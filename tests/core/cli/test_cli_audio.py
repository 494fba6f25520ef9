"""align (no model) on a synthesized performance; evaluate --alignment; predict audio -> Audacity labels."""

import csv
import re

import numpy as np
import pytest

from marginalia.cli import main
from marginalia.types import MidiScore

SR = 22050
LEAD = 0.4
STRETCH = 1.25
NOTES = [(60, 0.0, 0.5), (64, 0.5, 1.0), (67, 1.0, 1.5), (72, 1.5, 2.0), (65, 2.0, 2.6)]


def performed_onsets():
    return [LEAD + on * STRETCH for _, on, _ in NOTES]


@pytest.fixture(scope="module")
def performance(tmp_path_factory):
    """take.wav: the score played 25 % slower after 0.4 s of silence; take.mid: the score."""
    from marginalia.io.audio import write_wav
    from marginalia.io.midi import write_midi
    folder = tmp_path_factory.mktemp("audio")
    t = np.arange(int((LEAD + NOTES[-1][2] * STRETCH + 0.5) * SR)) / SR
    y = np.zeros_like(t)
    for pitch, on, off in NOTES:
        a, b = LEAD + on * STRETCH, LEAD + off * STRETCH
        f = 440.0 * 2 ** ((pitch - 69) / 12)
        m = (t >= a) & (t < b)
        y[m] += 0.3 * np.exp(-3 * (t[m] - a)) * (np.sin(2 * np.pi * f * t[m]) + 0.5 * np.sin(4 * np.pi * f * t[m]))
    write_wav(folder / "take.wav", y.astype(np.float32), SR)
    score = MidiScore(pitches=[n[0] for n in NOTES], onsets_s=[n[1] for n in NOTES], offsets_s=[n[2] for n in NOTES])
    write_midi(folder / "take.mid", score)
    return folder


def read_rows(path):
    with open(path, newline="") as fh:
        return list(csv.DictReader(fh))


def test_align_without_a_model_finds_every_onset_within_50_ms(performance, tmp_path, capsys):
    out = tmp_path / "take.csv"
    code = main(["align", "--score", str(performance / "take.mid"), "--audio", str(performance / "take.wav"),
                 "--out", str(out), "--midi", str(tmp_path / "take_aligned.mid")])
    assert code == 0
    rows = read_rows(out)
    assert list(rows[0]) == ["event", "score_time_s", "audio_time_s", "pitches", "margin", "rival_time_s"]
    assert [int(r["event"]) for r in rows] == list(range(len(NOTES)))
    margins = np.array([float(r["margin"]) for r in rows])
    assert np.all(margins >= 0)
    # the rival onsets lie within half a second of the onsets, and stderr names the five least sure ones
    rivals = np.array([float(r["rival_time_s"]) for r in rows])
    times = np.array([float(r["audio_time_s"]) for r in rows])
    assert np.all(np.abs(rivals - times) <= 0.55)
    line = next(x for x in capsys.readouterr().err.splitlines() if "least sure" in x)
    least = sorted(times[np.argsort(margins, kind="stable")[:5]])
    assert line.startswith("align: least sure of the onsets at " + ", ".join(f"{t:.2f} s" for t in least))
    assert [float(r["score_time_s"]) for r in rows] == pytest.approx([n[1] for n in NOTES])
    assert [r["pitches"] for r in rows] == [str(n[0]) for n in NOTES]
    err = np.abs(np.array([float(r["audio_time_s"]) for r in rows]) - performed_onsets())
    assert err.max() <= 0.05
    from marginalia.io.midi import read_midi
    aligned = read_midi(tmp_path / "take_aligned.mid")
    assert aligned.onsets_s == pytest.approx([float(r["audio_time_s"]) for r in rows], abs=2e-3)


@pytest.mark.slow
def test_evaluate_alignment_against_ground_truth(performance, tmp_path, capsys):
    out = tmp_path / "take.csv"
    assert main(["align", "--score", str(performance / "take.mid"), "--audio", str(performance / "take.wav"),
                 "--out", str(out), "-q"]) == 0
    truth = tmp_path / "gt.csv"
    truth.write_text("pitch,score_onset_quarter,perf_onset_sec\n" +
                     "".join(f"{p},{on * 2},{t}\n" for (p, on, _), t in zip(NOTES, performed_onsets())))
    capsys.readouterr()
    summary = tmp_path / "summary.csv"
    assert main(["evaluate", "--alignment", str(out), "--truth", str(truth), "--out", str(summary)]) == 0
    printed = capsys.readouterr().out
    assert "median ms" in printed and "% <= 50ms" in printed
    row = read_rows(summary)[0]
    assert int(row["n_matched"]) == len(NOTES) and float(row["within_50ms"]) == 100.0
    assert float(row["median_s"]) <= 0.05
    assert "warning" not in capsys.readouterr().err
    # the truth of another piece: few events match by pitch, and the user is told
    other = tmp_path / "other_gt.csv"
    other.write_text("pitch,score_onset_quarter,perf_onset_sec\n" + "".join(f"{20 + i},{i},{i * 0.5}\n" for i in range(9)))
    assert main(["evaluate", "--alignment", str(out), "--truth", str(other)]) == 0
    assert "same piece?" in capsys.readouterr().err
    # an alignment without its pitches cannot be matched to the truth: refused, not scored as nan
    bare = tmp_path / "bare.csv"
    bare.write_text("\n".join(",".join(r.split(",")[:3]) for r in out.read_text().splitlines()) + "\n")
    assert main(["evaluate", "--alignment", str(bare), "--truth", str(truth)]) == 1
    assert "missing column(s) ['pitches']" in capsys.readouterr().err


def test_missing_score_file_is_a_usage_error(performance, tmp_path, capsys):
    code = main(["align", "--score", str(tmp_path / "none.mid"), "--audio", str(performance / "take.wav"),
                 "--out", str(tmp_path / "o.csv")])
    assert code == 2 and "--score" in capsys.readouterr().err


@pytest.mark.slow
def test_predict_audio_with_a_segmentation_model_writes_audacity_labels(performance, tmp_path, capsys):
    from marginalia.cli_commands.align import load_recording
    from marginalia.models.files import TrainedModel, save_model
    from marginalia.models.segmentation import SegmentationModel
    rec = load_recording(performance / "take.wav")
    model = SegmentationModel()
    X = np.asarray(rec.features.values)
    model.fit_scales([X])
    w = model.default_w()
    path = tmp_path / "audio.model"
    save_model(path, TrainedModel("segmentation", "audio-frames", model, w, {}))
    expected = model.decode(X, w)
    out = tmp_path / "labels"
    assert main(["predict", str(path), str(performance / "take.wav"), "--out", str(out), "-q"]) == 0
    lines = (out / "take.txt").read_text().splitlines()
    times = [float(line.split("\t")[0]) for line in lines]
    assert times == pytest.approx(rec.times[expected.breakpoints].tolist())
    assert len(lines) >= 1


def test_pairs_table_resolves_relative_paths_and_reads_anchors(tmp_path):
    from marginalia.cli_commands.align import read_pairs
    from marginalia.exceptions import DataFormatError
    (tmp_path / "a.mid").write_bytes(b"x")
    (tmp_path / "a.wav").write_bytes(b"x")
    (tmp_path / "a_anchors.csv").write_text("event,audio_time_s\n0,0.5\n3,2.25\n")
    pairs = tmp_path / "pairs.csv"
    pairs.write_text("score,audio,anchors\na.mid,a.wav,a_anchors.csv\n")
    (pair,) = read_pairs(pairs)
    assert pair.score == tmp_path / "a.mid" and pair.audio == tmp_path / "a.wav"
    assert [(a.event, a.time_s) for a in pair.anchors] == [(0, 0.5), (3, 2.25)]
    pairs.write_text("score,audio\na.mid,missing.wav\n")
    with pytest.raises(DataFormatError, match=r"pairs\.csv, line 2: column 'audio': no such file"):
        read_pairs(pairs)
    (tmp_path / "a_anchors.csv").write_text("event,audio_time_s\nfirst,0.5\n")
    pairs.write_text("score,audio,anchors\na.mid,a.wav,a_anchors.csv\n")
    with pytest.raises(DataFormatError, match=r"a_anchors\.csv, line 2: expected an integer event"):
        read_pairs(pairs)


@pytest.mark.parametrize("rows, message", [
    ("0,0.5\n0,1.5\n", r"anchors\.csv, line 3: event 0 is anchored twice \(lines 2 and 3\)"),
    ("0,3.0\n4,1.0\n", r"event 4 is anchored at 1 s, before event 0 at 3 s"),
    ("2,500\n", r"event 2 at 500 s is after the end of take\.wav"),
    ("90,1.0\n", r"event 90 is not in take\.mid \(events 0\.\.\d+\)"),
])
def test_anchors_no_alignment_can_satisfy_are_refused_with_file_and_events(performance, tmp_path, capsys,
                                                                          rows, message):
    (tmp_path / "anchors.csv").write_text("event,audio_time_s\n" + rows)
    pairs = tmp_path / "pairs.csv"
    pairs.write_text(f"score,audio,anchors\n{performance / 'take.mid'},{performance / 'take.wav'},anchors.csv\n")
    assert main(["train", "--task", "alignment", "--pairs", str(pairs), "--out", str(tmp_path / "m.model"),
                 "--max-iter", "2", "-q"]) == 1
    assert re.search(message, capsys.readouterr().err)
    assert not (tmp_path / "m.model").exists()


@pytest.fixture(scope="module")
def alignment_model(performance, tmp_path_factory):
    folder = tmp_path_factory.mktemp("almodel")
    (folder / "pairs.csv").write_text(f"score,audio\n{performance / 'take.mid'},{performance / 'take.wav'}\n")
    out = folder / "align.model"
    assert main(["train", "--task", "alignment", "--pairs", str(folder / "pairs.csv"), "--out", str(out),
                 "--max-iter", "2", "--ridge", "0.05", "-q"]) == 0
    return out


@pytest.mark.slow
def test_trained_model_is_the_fitted_score_aligner_and_align_uses_it(alignment_model, performance, tmp_path):
    from marginalia.align import ScoreAligner
    from marginalia.io.audio import load_audio
    from marginalia.io.midi import read_midi
    from marginalia.models.files import load_model
    m = load_model(alignment_model, task="alignment")
    assert m.features == "score-aligner" and m.provenance["learner"] == "score-aligner"
    assert m.provenance["n_pairs"] == 1 and m.provenance["learner_params"]["n_iter"] == 2
    # the model file holds what ScoreAligner.fit learns from the same pair, options included
    y, sr = load_audio(performance / "take.wav", sr=22050)
    score = read_midi(performance / "take.mid")
    fitted = ScoreAligner(n_iter=2, ridge=0.05).fit([(y, sr, score)])
    assert m.aligner().get_params() == fitted.get_params()
    assert m.aligner().W_ == pytest.approx(fitted.W_, abs=1e-9)
    assert not np.allclose(fitted.W_, ScoreAligner()._W())   # fit changed the scorers
    out = tmp_path / "a.csv"
    assert main(["align", "--score", str(performance / "take.mid"), "--audio", str(performance / "take.wav"),
                 "--model", str(alignment_model), "--out", str(out), "-q"]) == 0
    got = np.array([float(r["audio_time_s"]) for r in read_rows(out)])
    assert got == pytest.approx(fitted.align(y, sr, score).event_times_s, abs=1e-9)
    assert np.abs(got - performed_onsets()).max() <= 0.05


def test_a_fitted_aligner_saved_from_python_loads_back_as_the_same_aligner(performance, tmp_path):
    import marginalia as mg
    from marginalia.exceptions import NotFittedError
    y, sr = mg.load_audio(str(performance / "take.wav"), sr=22050)
    fitted = mg.ScoreAligner(n_iter=1, prior_weight=3.0).fit([(y, sr, mg.read_midi(str(performance / "take.mid")))])
    mg.save_model(tmp_path / "py.model", fitted)
    back = mg.load_model(tmp_path / "py.model", task="alignment").aligner()
    assert back.get_params() == fitted.get_params() and back.W_ == pytest.approx(fitted.W_, abs=1e-12)
    with pytest.raises(NotFittedError):
        mg.save_model(tmp_path / "unfitted.model", mg.ScoreAligner())


def _write_chroma_model(path):
    """A model file as `train --task alignment` wrote it with the retired chroma aligner."""
    import json
    header = {"format": "marginalia-model", "format_version": 1, "task": "alignment", "model_class": "AlignmentModel",
              "model_params": {"n_classes": 13, "loss": "hamming", "min_frames": 1, "frame_rate": 43.07},
              "n_features": 13, "state_keys": [],
              "provenance": {"learner": "weak", "features": {"recipe": "chroma"}, "written_by": "marginalia-cli"}}
    with open(path, "wb") as fh:
        np.savez_compressed(fh, w=np.zeros(13 * 13 + 13),
                            header=np.frombuffer(json.dumps(header, sort_keys=True).encode(), dtype=np.uint8))


def test_a_chroma_model_of_an_earlier_version_is_refused_with_one_line(performance, tmp_path, capsys):
    old = tmp_path / "piano.model"
    _write_chroma_model(old)
    for argv in (["align", "--score", str(performance / "take.mid"), "--audio", str(performance / "take.wav"),
                  "--model", str(old), "--out", str(tmp_path / "a.csv")],
                 ["predict", str(old), str(performance), "--out", str(tmp_path / "p")]):
        assert main(argv) == 1
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and str(old) in err[0] and "retired chroma aligner" in err[0]
        assert "retrain it with this version: marginalia-cli train --task alignment" in err[0]
    assert not (tmp_path / "a.csv").exists()


@pytest.mark.parametrize("flag", ["--lam", "--mu", "--nu"])
def test_flags_of_the_chroma_aligner_are_refused_naming_their_replacement(performance, tmp_path, capsys, flag):
    pairs = tmp_path / "pairs.csv"
    pairs.write_text(f"score,audio\n{performance / 'take.mid'},{performance / 'take.wav'}\n")
    assert main(["train", "--task", "alignment", "--pairs", str(pairs), "--out", str(tmp_path / "m.model"),
                 flag, "0.1"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and flag in err[0] and "retired chroma aligner" in err[0] and "--ridge" in err[0]
    assert not (tmp_path / "m.model").exists()


@pytest.mark.slow
def test_predict_folder_of_score_audio_pairs_writes_aligned_midi_and_csv(alignment_model, performance, tmp_path):
    out = tmp_path / "aligned"
    assert main(["predict", str(alignment_model), str(performance), "--out", str(out), "-q"]) == 0
    rows = read_rows(out / "take_alignment.csv")
    got = np.array([float(r["audio_time_s"]) for r in rows])
    assert np.abs(got - performed_onsets()).max() <= 0.05
    from marginalia.io.midi import read_midi
    assert read_midi(out / "take_aligned.mid").onsets_s == pytest.approx(got, abs=2e-3)
    # a segmentation-only command refuses the alignment model
    assert main(["evaluate", str(alignment_model), "--profiles", str(performance / "take.wav"),
                 "--annotations", str(performance / "take.wav"), "-q"]) == 2


@pytest.mark.slow
def test_a_model_for_other_data_is_refused_before_any_work(seg_model, performance, tmp_path, capsys):
    code = main(["predict", str(seg_model), str(performance / "take.wav"), "--out", str(tmp_path / "o")])
    assert code == 2 and "trained on cgh data" in capsys.readouterr().err


@pytest.mark.slow
def test_silent_recording_is_refused_and_a_fragment_is_flagged(performance, tmp_path, capsys):
    from marginalia.io.audio import load_audio, write_wav
    y, sr = load_audio(performance / "take.wav", sr=None)
    write_wav(tmp_path / "silent.wav", np.zeros_like(y), sr)
    write_wav(tmp_path / "fragment.wav", np.array(y[: len(y) // 10]), sr)
    args = ["align", "--score", str(performance / "take.mid"), "--out", str(tmp_path / "out.csv"), "--audio"]
    assert main(args + [str(tmp_path / "silent.wav")]) == 1
    assert "the recording is silent" in capsys.readouterr().err
    assert main(args + [str(tmp_path / "fragment.wav")]) == 0          # aligned, but the user is warned
    assert "is it a recording of this score, and all of it?" in capsys.readouterr().err
    assert main(args + [str(performance / "take.wav")]) == 0
    assert "warning" not in capsys.readouterr().err


@pytest.mark.slow
def test_swapped_score_and_audio_are_named_as_such(performance, tmp_path, capsys):
    wav, mid = str(performance / "take.wav"), str(performance / "take.mid")
    assert main(["align", "--score", mid, "--audio", mid, "--out", str(tmp_path / "o.csv")]) == 1
    assert "this is a MIDI score, not an audio recording" in capsys.readouterr().err
    assert main(["align", "--score", wav, "--audio", wav, "--out", str(tmp_path / "o.csv")]) == 1
    assert "this is an audio recording: were the score and the audio swapped?" in capsys.readouterr().err
