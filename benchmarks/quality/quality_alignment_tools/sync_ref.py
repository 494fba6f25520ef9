"""Sync Toolbox reference aligner, run inside its own venv (it pins an older numba).

usage: python sync_ref.py jobs.json out.json

jobs.json: a list of {"id", "wav", "notes": [[start_s, duration_s, pitch, velocity], ...],
"event_onsets_s": [...], "stretch": bool}. For every job: chroma + DLNCO features of the audio
and of the score notes (stretched to the audio length when "stretch"), memory-restricted
multi-scale DTW, and the score's event onsets mapped through the warping path. Writes
{"id": {"times": [...], "cpu_s": float, "wall_s": float}}.
"""
import json
import sys
import time

import numpy as np
import pandas as pd
import soundfile as sf
from synctoolbox.dtw.mrmsdtw import sync_via_mrmsdtw
from synctoolbox.dtw.utils import compute_optimal_chroma_shift, make_path_strictly_monotonic, shift_chroma_vectors
from synctoolbox.feature.chroma import pitch_to_chroma, quantize_chroma, quantized_chroma_to_CENS
from synctoolbox.feature.csv_tools import df_to_pitch_features, df_to_pitch_onset_features
from synctoolbox.feature.dlnco import pitch_onset_features_to_DLNCO
from synctoolbox.feature.pitch import audio_to_pitch_features
from synctoolbox.feature.pitch_onset import audio_to_pitch_onset_features
from synctoolbox.feature.utils import estimate_tuning

RATE = 50


def run(job):
    y, sr = sf.read(job["wav"], dtype="float32")
    if y.ndim == 2:
        y = y.mean(axis=1)
    notes = np.asarray(job["notes"], dtype=np.float64)
    on = np.asarray(job["event_onsets_s"], dtype=np.float64)
    if job["stretch"]:
        factor = (len(y) / sr) / float((notes[:, 0] + notes[:, 1]).max())
        notes = notes.copy()
        notes[:, :2] *= factor
        on = on * factor
    df = pd.DataFrame({"start": notes[:, 0], "duration": notes[:, 1], "pitch": notes[:, 2].astype(int),
                       "velocity": notes[:, 3], "instrument": "piano"})
    t0, w0 = time.process_time(), time.time()
    tuning = estimate_tuning(y, sr)
    f_pitch = audio_to_pitch_features(f_audio=y, Fs=sr, tuning_offset=tuning, feature_rate=RATE)
    f_chroma = quantize_chroma(f_chroma=pitch_to_chroma(f_pitch=f_pitch))
    f_onset = audio_to_pitch_onset_features(f_audio=y, Fs=sr, tuning_offset=tuning)
    f_dlnco = pitch_onset_features_to_DLNCO(f_peaks=f_onset, feature_rate=RATE,
                                            feature_sequence_length=f_chroma.shape[1])
    s_pitch = df_to_pitch_features(df, feature_rate=RATE)
    s_chroma = quantize_chroma(f_chroma=pitch_to_chroma(f_pitch=s_pitch))
    s_onset = df_to_pitch_onset_features(df)
    s_dlnco = pitch_onset_features_to_DLNCO(f_peaks=s_onset, feature_rate=RATE,
                                            feature_sequence_length=s_chroma.shape[1])
    cens_a = quantized_chroma_to_CENS(f_chroma, 201, 50, RATE)[0]
    cens_s = quantized_chroma_to_CENS(s_chroma, 201, 50, RATE)[0]
    shift = compute_optimal_chroma_shift(cens_a, cens_s)
    s_chroma = shift_chroma_vectors(s_chroma, shift)
    s_dlnco = shift_chroma_vectors(s_dlnco, shift)
    wp = sync_via_mrmsdtw(f_chroma1=f_chroma, f_onset1=f_dlnco, f_chroma2=s_chroma, f_onset2=s_dlnco,
                          input_feature_rate=RATE, step_weights=np.array([1.5, 1.5, 2.0]),
                          threshold_rec=10 ** 6, verbose=False)
    wp = make_path_strictly_monotonic(wp)
    times = np.interp(on * RATE, wp[1], wp[0]) / RATE
    return {"times": times.tolist(), "cpu_s": time.process_time() - t0, "wall_s": time.time() - w0}


def main():
    jobs = json.load(open(sys.argv[1]))
    out = {}
    for job in jobs:
        try:
            out[job["id"]] = run(job)
        except Exception as exc:  # report, keep going
            out[job["id"]] = {"error": f"{type(exc).__name__}: {exc}"}
        print(job["id"], "error" if "error" in out[job["id"]] else f"{out[job['id']]['cpu_s']:.1f}s", flush=True)
    json.dump(out, open(sys.argv[2], "w"))


if __name__ == "__main__":
    main()
