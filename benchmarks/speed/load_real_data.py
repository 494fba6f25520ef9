"""Load every real data file with marginalia.io: counts, load times, failures.

Usage: ``python -m benchmarks.speed.load_real_data [--quick] [--data PATH] [--repeat N]``

Reads the neuroblastoma aCGH profiles and annotations (including the large ``profiles_all.csv.gz``),
every Vienna 4x22 score/performance MIDI and rendered WAV, the Bach chorale MIDIs and renders, and the
folk-tune MIDIs. References timed in the same run: the csv-module reader of the same tables (our
exact fallback path), pandas.read_csv when installed, plain ``mido.MidiFile`` parsing and plain
``soundfile.read``. Writes ``benchmarks/results/load_real_data.json``.
"""

from __future__ import annotations

import argparse
import csv
import os
import pathlib
import sys
import time
import warnings

import mido  # noqa: E402
import numpy as np  # noqa: E402
import soundfile  # noqa: E402

from benchmarks._common import ROOT, format_row, save_rows  # noqa: E402
from benchmarks._common import result_row as row  # noqa: E402
from marginalia.exceptions import DataFormatError  # noqa: E402
from marginalia.io import audio, cgh, midi  # noqa: E402

_LAST_CPU = [0.0]


def best_of(n, fn):
    """(best wall time in s, last result) over n runs; the best CPU time is left in ``_LAST_CPU[0]``."""
    best, best_cpu, out = float("inf"), float("inf"), None
    for _ in range(max(n, 1)):
        t, c = time.perf_counter(), time.process_time()
        out = fn()
        best = min(best, time.perf_counter() - t)
        best_cpu = min(best_cpu, time.process_time() - c)
    _LAST_CPU[0] = best_cpu
    return best, out


def quiet(fn):
    def run():
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", cgh.UnsortedPositionsWarning)
            return fn()
    return run


def bench_cgh(data, rows, failures, args):
    base = data / "cgh" / "neuroblastoma"
    tables = [("profiles_small.csv.gz", "annotations_small.csv")]
    tables.append(("profiles_all.csv.gz", "annotations_all.csv"))
    repeat = 1 if args.quick else args.repeat
    for prof_name, ann_name in tables:
        path = base / prof_name
        if not path.exists():
            failures.append(f"missing {path}")
            continue
        t, seqs = best_of(repeat, quiet(lambda: cgh.read_profiles(path)))
        cpu = _LAST_CPU[0]
        n_probes = sum(s.n_samples for s in seqs)
        ref = None
        if not (args.quick and prof_name.startswith("profiles_all")):
            t_py, seqs_py = best_of(1, quiet(lambda: cgh.read_profiles(path, _force_python=True)))
            same = all(a.name == b.name and np.array_equal(a.values, b.values) for a, b in zip(seqs, seqs_py))
            if not same:
                failures.append(f"{prof_name}: fast and csv-module readers disagree")
            ref = {"name": "csv-module reader (same output)", "value": t_py}
        rows.append(row(f"read {prof_name}: {len(seqs)} sequences, {n_probes} probes, max "
                        f"{max(s.n_samples for s in seqs)}", t, "s",
                        target=1.0 if prof_name.startswith("profiles_small") else 5.0, reference=ref))
        rows.append(row("  CPU time of that read (less sensitive to the shared machine's load)", cpu, "s",
                        target=0.3 if prof_name.startswith("profiles_small") else 2.0))
        try:
            import pandas as pd  # only a reference, not a project dependency

            t_pd, _ = best_of(1, lambda: pd.read_csv(path, usecols=list(cgh.PROFILE_COLUMNS),
                                                         dtype={"profile.id": str, "chromosome": str}))
            rows.append(row(f"  reference pandas.read_csv {prof_name} (table only, no grouping; CPU "
                            f"{_LAST_CPU[0]:.3g} s)", t_pd, "s"))
        except ImportError:
            pass
        ann = base / ann_name
        try:
            cgh.read_annotations(ann, seqs)
        except DataFormatError as exc:
            rows.append(row(f"{ann_name} refused by the strict default: {str(exc).split(': ', 1)[-1][:70]}...",
                            1, "refused"))

        def read_lenient():
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always", cgh.DroppedRegionsWarning)
                labels = cgh.read_annotations(ann, seqs, empty_regions="warn")
            return labels, sum(int(str(w.message).split("dropped ")[1].split()[0]) for w in caught)

        t, (labels, n_dropped) = best_of(repeat, read_lenient)
        kinds = {}
        for lab in labels:
            kinds[lab.annotation] = kinds.get(lab.annotation, 0) + 1
        rows.append(row(f"read {ann_name}: {len(labels)} labels {kinds}, {n_dropped} rows without probes dropped",
                        t, "s", target=0.5))
        out = ROOT / "benchmarks" / "results" / f"_roundtrip_{ann_name}"
        cgh.write_annotations(out, labels, seqs)
        back = cgh.read_annotations(out, seqs)
        if [(a.start, a.stop, a.kind, a.min_bp, a.max_bp, a.annotation) for a in labels] != \
                [(a.start, a.stop, a.kind, a.min_bp, a.max_bp, a.annotation) for a in back]:
            failures.append(f"{ann_name}: write/read round trip changed labels")
        out.unlink()
        if prof_name.startswith("profiles_all"):
            for extra in ("neuroblastoma_annotations_detailed.csv", "neuroblastoma_annotations_systematic.csv"):
                p = data / "cgh" / extra
                try:
                    with warnings.catch_warnings():
                        warnings.simplefilter("ignore", cgh.DroppedRegionsWarning)
                        t, labs = best_of(1, lambda: cgh.read_annotations(p, seqs, unknown_sequences="skip",
                                                                         empty_regions="warn"))
                    rows.append(row(f"read {extra} (rows of profiles present here): {len(labs)} labels", t, "s"))
                except DataFormatError as exc:
                    rows.append(row(f"read {extra}: refused ({str(exc)[:90]}...)", 1, "refused", target=None))


def bench_midi(data, rows, failures, args):
    groups = {
        "vienna4x22 score+performance": sorted((data / "alignment" / "vienna4x22").glob("*midi/*.mid")),
        "bach chorales score+perf": sorted((data / "alignment" / "bach_chorales").rglob("*.mid")),
        "folk tunes": sorted((data / "scores" / "folk").rglob("*.mid")),
    }
    for name, files in groups.items():
        if args.quick:
            files = files[:12]
        if not files:
            failures.append(f"no MIDI files for {name}")
            continue
        notes = events = 0
        refused = []
        t0 = time.perf_counter()
        for f in files:
            try:
                s = midi.read_midi(f)
                notes += s.n_notes
                events += s.n_events
            except DataFormatError as exc:
                refused.append(f"{f.name}: {exc}")
        t = time.perf_counter() - t0
        t1 = time.perf_counter()
        for f in files:
            try:
                mido.MidiFile(str(f))
            except Exception:  # noqa: BLE001 - a reference only
                pass
        t_ref = time.perf_counter() - t1
        failures.extend(refused)
        rows.append(row(f"read_midi {name}: {len(files)} files, {notes} notes, {events} events, "
                        f"{len(refused)} refused", t / len(files) * 1e3, "ms/file",
                        reference={"name": "mido.MidiFile parse only", "value": t_ref / len(files) * 1e3}))
        # our pass over the messages costs about as much as mido building them; small files add fixed costs
        rows.append(row(f"  read_midi time / mido parse time ({name})", t / t_ref, "ratio", target=2.5))
    # tempo-map check against the sensor-piano ground truth: every matched note's performed onset
    errors = []
    for gt in sorted((data / "alignment" / "vienna4x22" / "ground_truth").glob("*.csv"))[: 4 if args.quick else None]:
        perf = data / "alignment" / "vienna4x22" / "midi" / f"{gt.stem}.mid"
        if not perf.exists():
            continue
        s = midi.read_midi(perf)
        with open(gt, newline="") as fh:
            for r in csv.DictReader(fh):
                if r["label"] != "match":
                    continue
                same = s.onsets_s[s.pitches == int(r["pitch"])]
                # a matched note absent from the MIDI (one in Chopin_op38_p05) counts as a miss
                errors.append(float(np.min(np.abs(same - float(r["perf_onset_sec"])))) if same.size else np.inf)
    errors = np.asarray(errors)
    within = float(np.mean(errors <= 1e-3)) if errors.size else 0.0
    rows.append(row(f"read_midi onsets vs vienna4x22 ground truth: {errors.size} matched notes, median error "
                    f"{np.median(errors) * 1e3:.4f} ms, {int(np.sum(errors > 1e-3))} beyond 1 ms",
                    within, "fraction", target=0.999, better="higher"))
    # round trip of every Vienna score: pitch and onset kept to 1 ms
    worst = 0.0
    tmp = ROOT / "benchmarks" / "results" / "_roundtrip.mid"
    for f in groups["vienna4x22 score+performance"][: 6 if args.quick else None]:
        a = midi.read_midi(f)
        midi.write_midi(tmp, a)
        b = midi.read_midi(tmp)
        if a.pitches.tolist() != b.pitches.tolist():
            failures.append(f"{f.name}: round trip changed pitches")
        else:
            worst = max(worst, float(np.max(np.abs(a.onsets_s - b.onsets_s))))
    tmp.unlink(missing_ok=True)
    rows.append(row("MIDI -> MidiScore -> MIDI worst onset change (vienna4x22)", worst * 1e3, "ms", target=1.0))


def bench_audio(data, rows, failures, args):
    files = sorted((data / "alignment" / "vienna4x22" / "audio_rendered").glob("*.wav"))
    files += sorted((data / "alignment" / "bach_chorales" / "synth_perf").glob("*.wav"))
    if args.quick:
        files = files[:3]
    total_s = 0.0
    t_load = t_ref = t_info = 0.0
    for f in files:
        audio.clear_audio_cache()
        t, (y, sr) = best_of(1, lambda: audio.load_audio(f, sr=22050))
        t_load += t
        total_s += y.shape[0] / sr
        t_ref += best_of(1, lambda: soundfile.read(str(f), dtype="float32"))[0]
        t_info += best_of(1, lambda: audio.audio_info(f))[0]
    if not files:
        failures.append("no audio files found")
        return
    rows.append(row(f"load_audio {len(files)} WAVs ({total_s:.0f} s of audio) at 22050 Hz mono", t_load, "s",
                    target=None, reference={"name": "soundfile.read", "value": t_ref}))
    rows.append(row("  decoding speed", total_s / t_load, "x real time", target=100.0, better="higher"))
    rows.append(row(f"audio_info {len(files)} files (header only)", t_info / len(files) * 1e3, "ms/file",
                    target=5.0))
    f = files[0]
    audio.load_audio(f, sr=22050)
    t, _ = best_of(5, lambda: audio.load_audio(f, sr=22050))
    rows.append(row(f"load_audio cache hit ({f.name})", t * 1e3, "ms", target=1.0))
    audio.clear_audio_cache()
    t, _ = best_of(1, lambda: audio.load_audio(f, sr=16000))
    rows.append(row(f"load_audio with resampling 22050 -> 16000 Hz ({f.name})", t, "s"))


def bench_sniff(data, rows, failures, args):
    from marginalia.io import sniff_kind

    expected = {".mid": "midi", ".wav": "audio", ".gz": "cgh"}
    counts, wrong = {}, []
    files = [f for f in sorted(data.rglob("*")) if f.is_file()]
    t0 = time.perf_counter()
    for f in files:
        try:
            kind = sniff_kind(f)
        except DataFormatError:
            kind = "unknown"
        counts[kind] = counts.get(kind, 0) + 1
        if f.suffix in expected and kind != expected[f.suffix]:
            wrong.append(f"{f.name}: sniffed {kind}, expected {expected[f.suffix]}")
    t = time.perf_counter() - t0
    failures.extend(wrong)
    rows.append(row(f"sniff_kind over {len(files)} data files: {counts}", t / len(files) * 1e3, "ms/file",
                    target=5.0))


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="fewer files and repeats (under a minute)")
    ap.add_argument("--data", default=str(ROOT.parent / "shared" / "data"), help="the shared data folder")
    ap.add_argument("--repeat", type=int, default=3, help="best-of-N repeats for the table readers")
    args = ap.parse_args(argv)
    data = pathlib.Path(args.data)
    if not data.is_dir():
        print(f"data folder {data} not found; pass --data", file=sys.stderr)
        return 2
    (ROOT / "benchmarks" / "results").mkdir(parents=True, exist_ok=True)
    rows, failures = [], []
    t0 = time.perf_counter()
    # compile/load the numba scanner once so the first timed read is not a compile
    warm = ROOT / "benchmarks" / "results" / "_warm.csv"
    warm.write_text("profile.id,chromosome,position,logratio\n1,1,1,0.5\n")
    cgh.read_profiles(warm)
    warm.unlink()
    bench_cgh(data, rows, failures, args)
    bench_midi(data, rows, failures, args)
    bench_audio(data, rows, failures, args)
    bench_sniff(data, rows, failures, args)
    rows.append(row("files refused or wrong", len(failures), "count", target=0))
    load = os.getloadavg()
    print(f"load average {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}; total {time.perf_counter() - t0:.1f} s")
    width = max(len(r["case"]) for r in rows)
    for r in rows:
        print(format_row(r, width=width))
    for f in failures:
        print("FAILED:", f)
    save_rows(ROOT / "benchmarks" / "results" / "load_real_data.json", rows)
    return 0


if __name__ == "__main__":
    sys.exit(main())
