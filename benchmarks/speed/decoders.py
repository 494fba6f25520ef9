"""All decoder benchmarks in one run: segmentation, alignment and warping (DTW).

Runs ``benchmarks/speed/decoders_segmentation.py`` and ``benchmarks/speed/decoders_alignment.py``
(each prints its own table with its references measured in the same process)
and merges their rows into ``benchmarks/results/decoders.json``.

Usage: ``python -m benchmarks.speed.decoders [--quick] [--data DIR]``
"""

from __future__ import annotations

import argparse
import json

from benchmarks._common import ROOT  # noqa: E402
from benchmarks.speed import (
    decoders_alignment,  # noqa: E402
    decoders_segmentation,  # noqa: E402
)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="smaller problems and references (under a minute each)")
    ap.add_argument("--data", default=str(ROOT.parent / "shared" / "data"), help="folder of the shared real data")
    args = ap.parse_args(argv)
    forwarded = (["--quick"] if args.quick else []) + ["--data", args.data]
    decoders_segmentation.main(forwarded)
    decoders_alignment.main(forwarded)
    results = ROOT / "benchmarks" / "results"
    rows = []
    for name in ("decoders_segmentation", "decoders_alignment"):
        path = results / f"{name}.json"
        rows += [dict(r, suite=name) for r in json.loads(path.read_text())]
    (results / "decoders.json").write_text(json.dumps(rows, indent=2))
    met = [r for r in rows if r.get("meets_target") is not None]
    print(f"\n{sum(r['meets_target'] for r in met)}/{len(met)} decoder targets met; rows in {results / 'decoders.json'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
