"""Read the real files of every format Marginalia accepts and print what was read.

Usage: ``python -m benchmarks.quality.read_real_formats [--quick] [--data PATH]``

Copy number: the Coriell DNAcopy wide table (positions in kb, read with ``position_unit="kb"``; read without
it, the reader's unit warning is shown; empty cells = probes a cell line lacks, counted independently
with the csv module), the SegAnnDB probe files and labels (``position,logratio`` / ``min,max,annotation``),
the animint signals and labels (``signal,base,logratio`` / ``signal,first.base,last.base,annotation``), the
neuroblastoma long table, and a bedGraph written from it (SegAnnDB's upload format) read back. Scores:
Vienna 4x22 MusicXML and Bach10 MXL through the ``[music]`` extra when it is installed. Each file is
timed; ``benchmarks/results/read_real_formats.json`` holds the rows (value = seconds to read).
"""

from __future__ import annotations

import argparse
import csv
import gzip
import pathlib
import sys
import tempfile
import time
import warnings

from benchmarks._common import (  # noqa: E402
    ROOT,  # noqa: E402
    result_row,
    write_rows,
)
from marginalia.exceptions import MarginaliaError  # noqa: E402
from marginalia.io import cgh  # noqa: E402


def timed(fn):
    t = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        out = fn()
    return time.perf_counter() - t, out


def coriell_missing(path) -> int:
    """Empty or NA sample cells of the Coriell table, counted with the csv module (the check)."""
    with open(path, newline="") as fh:
        rows = list(csv.reader(fh))
    return sum(1 for r in rows[1:] for v in r[3:] if v.strip() in ("", "NA"))


def read_cgh(data: pathlib.Path, rows: list, quick: bool) -> None:
    d = data / "cgh"
    print("== copy number")
    cases = [("coriell (DNAcopy wide)", d / "coriell" / "coriell.csv", None),
             ("segannot low (SegAnnDB)", d / "segannot" / "low_probes.csv", d / "segannot" / "low_annotations.csv"),
             ("segannot high (SegAnnDB)", d / "segannot" / "high_probes.csv", d / "segannot" / "high_annotations.csv"),
             ("animint intreg", d / "animint_intreg" / "signals.csv", d / "animint_intreg" / "annotations.csv"),
             ("neuroblastoma small (long)", d / "neuroblastoma" / "profiles_small.csv.gz",
              d / "neuroblastoma" / "annotations_small.csv")]
    for case, probes, labels in cases:
        if not probes.exists():
            print(f"{case}: {probes} missing, skipped")
            continue
        unit = "kb" if probes.name == "coriell.csv" else None
        if unit is not None:
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                cgh.read_profiles(probes)
            said = [str(w.message) for w in caught if issubclass(w.category, cgh.PositionUnitWarning)]
            print(f"{case} read as bp: {said[0] if said else 'no unit warning'}")
        try:
            t, seqs = timed(lambda: cgh.read_profiles(probes, position_unit=unit))
        except MarginaliaError as exc:
            print(f"{case}: FAILED {exc}")
            rows.append(result_row(f"read {probes.name}", None, "s"))
            continue
        n = sum(s.n_samples for s in seqs)
        profiles = sorted({s.meta["profile_id"] for s in seqs})
        line = (f"{case}: {probes.relative_to(data)} -> {len(seqs)} sequences, {n} probes, layout "
                f"{seqs[0].meta['layout']}, profiles {profiles[:4]}{' ...' if len(profiles) > 4 else ''}, "
                f"first {seqs[0].name!r}")
        if probes.name == "coriell.csv":
            with open(probes) as fh:
                n_rows = sum(1 for _ in fh) - 1
            missing = coriell_missing(probes)
            line += f"; {n_rows} clones x 2 samples - {missing} empty cells = {2 * n_rows - missing} (csv module)"
            line += f"; positions read in kb, up to {max(float(s.positions.max()) for s in seqs):,.0f} bp"
            assert n == 2 * n_rows - missing, "wide reader lost or invented probes"
        if labels is not None and labels.exists():
            tl, labs = timed(lambda: cgh.read_annotations(labels, seqs, unknown_sequences="warn",
                                                          empty_regions="warn"))
            with open(labels) as fh:
                n_label_rows = sum(1 for _ in fh) - 1
            line += f"; labels {labels.name}: {len(labs)} of {n_label_rows} rows mapped"
            rows.append(result_row(f"read {labels.name}", tl, "s"))
        print(line)
        rows.append(result_row(f"read {probes.name}", t, "s"))
    # bedGraph: SegAnnDB's upload format, written from the long table, read back
    src = d / "neuroblastoma" / "profiles_small.csv.gz"
    if src.exists():
        seqs = cgh.read_profiles(src)
        seqs = seqs[:20] if quick else seqs
        with tempfile.TemporaryDirectory() as tmp:
            bg = pathlib.Path(tmp) / "probes.bedGraph.gz"
            by_profile: dict = {}
            for s in seqs:
                by_profile.setdefault(s.meta["profile_id"], []).append(s)
            lines = []
            for pid, ss in by_profile.items():
                lines.append(f'track type=bedGraph name="{pid}"\n')
                lines.extend(f"chr{s.meta['chromosome']}\t{int(p) - 1}\t{int(p)}\t{v!r}\n"
                             for s in ss for p, v in zip(s.positions.tolist(), s.values[:, 0].tolist()))
            bg.write_bytes(gzip.compress("".join(lines).encode()))
            t, back = timed(lambda: cgh.read_profiles(bg))
        same = [(b.positions.tolist(), b.values[:, 0].tolist()) for b in back] == \
            [(s.positions.tolist(), s.values[:, 0].tolist()) for s in seqs]
        print(f"bedGraph (SegAnnDB upload) of {len(seqs)} neuroblastoma sequences: read back {len(back)} sequences, "
              f"{sum(b.n_samples for b in back)} probes, identical values and positions: {same}")
        rows.append(result_row("read bedGraph.gz of neuroblastoma sequences", t, "s"))


def read_scores(data: pathlib.Path, rows: list, quick: bool) -> None:
    print("== scores")
    from marginalia.exceptions import MissingExtraError
    from marginalia.io import musicxml
    files = sorted((data / "alignment" / "vienna4x22" / "musicxml").glob("*.musicxml")) + \
        sorted((data / "alignment" / "bach_chorales" / "mxl").glob("*.mxl"))
    if quick:
        files = files[:3]
    for f in files:
        try:
            t, score = timed(lambda: musicxml.read_musicxml(f))
        except MissingExtraError as exc:
            print(f"skipped: {exc}")
            return
        except MarginaliaError as exc:
            print(f"{f.relative_to(data)}: FAILED {exc}")
            rows.append(result_row(f"read {f.name}", None, "s"))
            continue
        rep = score.meta["repeats"]
        print(f"{f.relative_to(data)}: {score.n_notes} notes, {score.n_events} events, {len(score.meta['parts'])} "
              f"part(s), {float(score.offsets_s.max()):.1f} s at its tempo marks, {rep['repeat_signs']} repeat "
              f"sign(s) (read as written), {t:.2f} s to read")
        rows.append(result_row(f"read {f.name}", t, "s"))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="fewer files (under a minute)")
    ap.add_argument("--data", default=str(ROOT.parent / "shared" / "data"), help="the shared data folder")
    args = ap.parse_args(argv)
    data = pathlib.Path(args.data)
    if not data.exists():
        print(f"no data folder at {data}; pass --data PATH")
        return 1
    rows: list = []
    read_cgh(data, rows, args.quick)
    read_scores(data, rows, args.quick)
    write_rows(ROOT / "benchmarks" / "results" / "read_real_formats.json", {"rows": rows})
    return 0


if __name__ == "__main__":
    sys.exit(main())
