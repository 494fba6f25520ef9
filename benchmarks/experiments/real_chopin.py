"""Two real recordings of Chopin op. 10 no. 3 (bars 1-8) aligned to their score, where no onset truth exists.

Usage: ``python -m benchmarks.experiments.real_chopin [--data DIR] [--out DIR] [--shot PNG]``

The recordings (Igoshina, Varsi; ``audio/real_audio_small/synctoolbox_chopin_op10_3``, the Sync Toolbox
examples) come with the excerpt's MIDI score but with no timing truth, so the alignment is checked three ways:

* **Agreement of two independent paths.** Each recording is aligned to the score (``marginalia-cli align``'s
  aligner); separately the two recordings are aligned to each other, audio to audio
  (:class:`marginalia.sync.SyncAligner`, which never sees the score). Carrying each event's onset in
  Igoshina through the audio-to-audio path should land on its onset in Varsi: the distance is an error of
  one of the three alignments, so small distances on most events say all three are right there.
* **Onsets heard in the audio.** The share of aligned onsets within 50 ms of an onset that librosa's
  spectral-flux onset detector finds in the recording (a soft, legato piece: the detector misses many
  attacks, so this is a floor), against the same share for the score's timing stretched onto the sounding
  part of the recording and for librosa chroma DTW (both computed here).
* **Listening.** ``<name>_clicks.wav`` in ``--out``: the recording with a short click mixed in at every
  aligned onset (a click on the attack merges with it; a wrong one is heard apart).

Prints the figures and writes ``real_chopin.json`` and the click tracks to ``--out`` (default
``benchmarks/results/real_chopin``); with ``--shot``, also the app's window on the first recording and its
score (a project of the two, aligned by the app), framed on the events where the three alignments disagree most.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np

from benchmarks._common import ROOT  # noqa: E402

SR = 22050
FOLDER = ("audio", "real_audio_small", "synctoolbox_chopin_op10_3")
PERFORMERS = ("Igoshina", "Varsi")


def with_clicks(y: np.ndarray, sr: int, times_s, *, click_hz: float = 1760.0, click_s: float = 0.03) -> np.ndarray:
    """The recording with a decaying sine click mixed in at every time of ``times_s``, scaled into [-1, 1]."""
    out = 0.7 * np.asarray(y, dtype=np.float64) / max(float(np.max(np.abs(y))), 1e-9)
    k = np.arange(int(round(click_s * sr)))
    click = 0.5 * np.sin(2 * np.pi * click_hz * k / sr) * np.exp(-k / (0.25 * k.size))
    for t in times_s:
        i = int(round(t * sr))
        if 0 <= i < out.size:
            n = min(click.size, out.size - i)
            out[i:i + n] += click[:n]
    return (out / max(1.0, float(np.max(np.abs(out))))).astype(np.float32)


def near_detected(times_s, detected_s, tol_s: float = 0.05) -> float:
    """Share of ``times_s`` within ``tol_s`` of a detected onset."""
    d = np.sort(np.asarray(detected_s, dtype=float))
    if d.size == 0:
        return 0.0
    t = np.asarray(times_s, dtype=float)
    i = np.clip(np.searchsorted(d, t), 1, d.size - 1) if d.size > 1 else np.zeros(t.size, int)
    gap = np.minimum(np.abs(t - d[i - 1 if d.size > 1 else 0]), np.abs(t - d[i]))
    return float(np.mean(gap <= tol_s))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", default=str(ROOT.parent / "shared" / "data"), help="the shared data folder")
    ap.add_argument("--out", default=str(ROOT / "benchmarks" / "results" / "real_chopin"))
    ap.add_argument("--shot", default=None, help="also save the app's window on the first recording here (PNG)")
    args = ap.parse_args(argv)
    import librosa

    from benchmarks.quality.quality_alignment import librosa_dtw
    from benchmarks.quality.weak_folk_bach import score_only_times
    from marginalia.align import ScoreAligner
    from marginalia.io.audio import load_audio, write_wav
    from marginalia.io.midi import read_midi
    from marginalia.sync import SyncAligner

    folder = Path(args.data).joinpath(*FOLDER)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    score = read_midi(folder / "Chopin_Op010-03-Measures1-8_MIDI.mid")
    aligner, syncer = ScoreAligner(), SyncAligner()
    rec, report = {}, {"events": int(score.n_events)}
    for name in PERFORMERS:
        y, sr = load_audio(folder / f"Chopin_Op010-03-Measures1-8_{name}.wav", sr=SR)
        feats = aligner.features(y, sr)
        times = aligner.align(y, sr, score, features=feats).event_times_s
        detected = librosa.onset.onset_detect(y=np.asarray(y, dtype=np.float32), sr=sr, units="time",
                                              backtrack=False)
        shares = {"ours": near_detected(times, detected),
                  "score timing stretched": near_detected(score_only_times(score, feats), detected),
                  "librosa chroma DTW": near_detected(librosa_dtw(y, sr, score), detected)}
        write_wav(out / f"{name}_clicks.wav", with_clicks(y, sr, times), sr)
        rec[name] = {"y": y, "times": times, "sync": syncer.compute_features(y, sr)}
        report[name] = {"duration_s": round(len(y) / sr, 2), "detected_onsets": int(len(detected)),
                        "within_50ms_of_a_detected_onset": shares,
                        "first_onset_s": float(times[0]), "last_onset_s": float(times[-1])}
        print(f"{name}: {len(y) / sr:.1f} s, {len(detected)} onsets detected; aligned onsets within 50 ms of one: "
              + ", ".join(f"{k} {100 * v:.1f} %" for k, v in shares.items()))
    a, b = PERFORMERS
    path = syncer.predict(rec[a]["sync"], rec[b]["sync"], runner_up=False)
    carried = path.map_times(rec[a]["times"])
    gap = np.abs(carried - rec[b]["times"])
    worst = np.argsort(-gap)[:5]
    report["agreement"] = {"median_ms": 1000 * float(np.median(gap)), "within_50ms": float(np.mean(gap <= 0.05)),
                           "within_100ms": float(np.mean(gap <= 0.10)), "max_s": float(gap.max()),
                           "worst_events": [{"event": int(e), "gap_s": float(gap[e]),
                                             "pitches": [int(p) for p in score.event_pitches(int(e))]}
                                            for e in worst]}
    ag = report["agreement"]
    print(f"{a} -> {b}: the score alignments and the audio-to-audio path agree within 50 ms on "
          f"{100 * ag['within_50ms']:.1f} % of the {score.n_events} events (within 100 ms {100 * ag['within_100ms']:.1f} %), "
          f"median {ag['median_ms']:.1f} ms, worst {ag['max_s']:.2f} s (event {int(worst[0])})")
    (out / "real_chopin.json").write_text(json.dumps(report, indent=1))
    if args.shot:
        window_shot(folder, args.shot, rec[a]["times"], [int(e) for e in worst[:3]])
    print(f"wrote {out / 'real_chopin.json'} and the click tracks {', '.join(f'{n}_clicks.wav' for n in PERFORMERS)}")
    return 0


def window_shot(folder: Path, png, times_s, events) -> None:
    """The app's window on the first performer's recording with its score, framed on ``events``."""
    import os
    import shutil

    os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
    from benchmarks._common import scratch, themed_app
    from benchmarks.images._shots import main_window, save_grab, wait
    from marginalia.engine import Engine

    app = themed_app()
    with scratch("real-chopin-") as work:
        wav = shutil.copy2(folder / f"Chopin_Op010-03-Measures1-8_{PERFORMERS[0]}.wav", work)
        mid = shutil.copy2(folder / "Chopin_Op010-03-Measures1-8_MIDI.mid", work)
        engine = Engine.create(work / "chopin.marginalia")
        engine.import_files([wav], scores={str(wav): str(mid)})
        item = engine.items()[0].id
        win = main_window(engine, work, (1400, 860))
        win.show()
        win.show_item(item)
        wait(app, lambda: win.current_item == item and win.current_prediction() is not None, 300)
        lo, hi = float(np.min(times_s[events])) - 1.5, float(np.max(times_s[events])) + 1.0
        win.active_view().main.setXRange(lo, hi, padding=0)
        wait(app, None, 0.5)
        save_grab(win, png)
        win.close()
        engine.close()


if __name__ == "__main__":
    raise SystemExit(main())
