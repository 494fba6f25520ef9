"""align (no model) on a synthesized performance; evaluate --alignment; predict audio -> Audacity labels."""

import csv
import re

import numpy as np
import pytest

from marginalia.cli import main
from marginalia.cli_commands._align import align_chroma, expected_durations, template_scores
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
    assert list(rows[0]) == ["event", "score_time_s", "audio_time_s", "pitches"]
    assert [int(r["event"]) for r in rows] == list(range(len(NOTES)))
    assert [float(r["score_time_s"]) for r in rows] == pytest.approx([n[1] for n in NOTES])
    assert [r["pitches"] for r in rows] == [str(n[0]) for n in NOTES]
    err = np.abs(np.array([float(r["audio_time_s"]) for r in rows]) - performed_onsets())
    assert err.max() <= 0.05
    from marginalia.io.midi import read_midi
    aligned = read_midi(tmp_path / "take_aligned.mid")
    assert aligned.onsets_s == pytest.approx([float(r["audio_time_s"]) for r in rows], abs=2e-3)


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


def test_template_scores_are_cosine_similarities():
    score = MidiScore(pitches=[60, 64, 67, 62], onsets_s=[0, 0, 0, 1], offsets_s=[1, 1, 1, 2])
    chroma = np.zeros((3, 12))
    chroma[0, [0, 4, 7]] = 1.0      # exactly the C major chord
    chroma[1, 2] = 2.0              # exactly D, at another scale
    S = template_scores(chroma, score)
    assert S.shape == (3, 2)
    assert S[0] == pytest.approx([1.0, 0.0]) and S[1] == pytest.approx([0.0, 1.0]) and S[2] == pytest.approx([0, 0])


def test_expected_durations_stretch_the_score_timing_to_the_music():
    score = MidiScore(pitches=[60, 62, 64], onsets_s=[0.0, 1.0, 3.0], offsets_s=[1.0, 3.0, 4.0])
    assert expected_durations(score, 40) == pytest.approx([10, 20, 10])


def test_align_chroma_recovers_blocks_and_rests():
    score = MidiScore(pitches=[60, 62, 64], onsets_s=[0.0, 1.0, 2.0], offsets_s=[1.0, 2.0, 3.0])
    chroma = np.zeros((30, 12))
    energy = np.full(30, -80.0)
    for cls, (a, b) in zip((0, 2, 4), ((4, 10), (10, 19), (19, 26))):
        chroma[a:b, cls] = 1.0
        energy[a:b] = 0.0
    res = align_chroma(chroma, np.arange(30) * 0.1, score, energy_db=energy, prior_weight=0.5)
    assert res.alignment.onsets.tolist() == [4, 10, 19]
    assert res.onset_times_s == pytest.approx([0.4, 1.0, 1.9])
    assert (res.lead_frames, res.trail_frames) == (4, 4)


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
                 "--max-iter", "10", "-q"]) == 0
    return out


def test_weakly_trained_alignment_model_aligns_within_50_ms(alignment_model, performance, tmp_path):
    from marginalia.models.files import load_model
    m = load_model(alignment_model, task="alignment")
    assert m.features == "chroma" and m.provenance["learner"] == "weak" and m.provenance["n_pairs"] == 1
    out = tmp_path / "a.csv"
    assert main(["align", "--score", str(performance / "take.mid"), "--audio", str(performance / "take.wav"),
                 "--model", str(alignment_model), "--out", str(out), "-q"]) == 0
    got = np.array([float(r["audio_time_s"]) for r in read_rows(out)])
    assert np.abs(got - performed_onsets()).max() <= 0.05


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


def test_expected_alignment_follows_the_score_between_the_sounds_and_through_anchors():
    from types import SimpleNamespace

    from marginalia.cli_commands._align import expected_alignment
    from marginalia.types import AnchorLabel
    score = MidiScore(pitches=[60, 62, 64, 65], onsets_s=[0, 1, 2, 3], offsets_s=[1, 2, 3, 4])
    T = 60
    energy = np.full(T, -90.0)
    energy[10:50] = 0.0  # sound from frame 10 to 49: 40 frames for 4 s of score
    rec = SimpleNamespace(score=score, chroma=np.zeros((T, 12)), energy_db=energy, times=np.arange(T) * 0.1,
                          audio_path="x.wav")
    assert expected_alignment(rec).onsets.tolist() == [0, 10, 20, 30, 40, 50]
    # the third event played late: the expected tempo bends through the anchor (score 0 s -> 1 s,
    # 2 s -> 3.5 s, 4 s -> 5 s); an onset falls on the first frame at or after its expected time
    late = AnchorLabel(item_id="x", event=2, time_s=3.5)
    assert expected_alignment(rec, [late]).onsets.tolist() == [0, 10, 23, 35, 43, 50]


def test_a_model_for_other_data_is_refused_before_any_work(seg_model, performance, tmp_path, capsys):
    code = main(["predict", str(seg_model), str(performance / "take.wav"), "--out", str(tmp_path / "o")])
    assert code == 2 and "trained on cgh data" in capsys.readouterr().err


def test_silent_recording_is_refused_and_a_fragment_is_flagged(performance, tmp_path, capsys):
    from marginalia.io.audio import load_audio, write_wav
    y, sr = load_audio(performance / "take.wav", sr=None)
    write_wav(tmp_path / "silent.wav", np.zeros_like(y), sr)
    write_wav(tmp_path / "fragment.wav", np.array(y[: len(y) // 6]), sr)
    args = ["align", "--score", str(performance / "take.mid"), "--out", str(tmp_path / "out.csv"), "--audio"]
    assert main(args + [str(tmp_path / "silent.wav")]) == 1
    assert "the recording is silent" in capsys.readouterr().err
    assert main(args + [str(tmp_path / "fragment.wav")]) == 0          # aligned, but the user is warned
    assert "is it a recording of this score, and all of it?" in capsys.readouterr().err
    assert main(args + [str(performance / "take.wav")]) == 0
    assert "warning" not in capsys.readouterr().err


def test_swapped_score_and_audio_are_named_as_such(performance, tmp_path, capsys):
    wav, mid = str(performance / "take.wav"), str(performance / "take.mid")
    assert main(["align", "--score", mid, "--audio", mid, "--out", str(tmp_path / "o.csv")]) == 1
    assert "this is a MIDI score, not an audio recording" in capsys.readouterr().err
    assert main(["align", "--score", wav, "--audio", wav, "--out", str(tmp_path / "o.csv")]) == 1
    assert "this is an audio recording: were the score and the audio swapped?" in capsys.readouterr().err
