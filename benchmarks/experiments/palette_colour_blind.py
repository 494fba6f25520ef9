"""How far apart the label kinds' colours stay for readers with colour-vision deficiency.

Usage: ``python -m benchmarks.experiments.palette_colour_blind [--theme dark|light] [--screenshot PNG --out PNG]``
(needs ``pip install colorspacious``, not a dependency)

Each region kind is drawn as a translucent fill over the plot background of the theme (dark by default); this
blends each kind's colour at the theme's fill opacity and at the outline's, simulates deuteranopia, protanopia
and tritanopia (Machado et al. 2009, severity 100) with colorspacious, and prints the smallest distance between
two kinds in CAM02-UCS (about 1 unit is a just-noticeable difference; under ~10, neighbouring labels are hard to
tell apart at a glance). With ``--screenshot``, also writes the screenshot as a reader with deuteranopia sees it,
to look at.
"""

from __future__ import annotations

import itertools
import sys

import numpy as np

BACKGROUND = (31, 34, 40)     # theme.BACKGROUND
OLD = {"no change": (98, 181, 122), "one change": (224, 108, 117), "at least one": (170, 120, 230),
       "same segment": (97, 160, 230)}


FILL_ALPHA = 55                 # theme's REGION_ALPHA


def set_background(theme_name: str) -> None:
    """Blend over the plot background of ``theme_name`` (marginalia.app.theme.THEMES) at its fill opacity."""
    global BACKGROUND, FILL_ALPHA
    from marginalia.app.theme import THEMES
    h = THEMES[theme_name]["BACKGROUND"].lstrip("#")
    BACKGROUND = tuple(int(h[i:i + 2], 16) for i in (0, 2, 4))
    FILL_ALPHA = THEMES[theme_name]["REGION_ALPHA"]


def blend(rgb, alpha):
    return tuple(alpha * c + (1 - alpha) * b for c, b in zip(rgb, BACKGROUND))


def min_distance(palette: dict, cvd: str, alpha: float) -> tuple:
    from colorspacious import cspace_convert
    space = {"name": "sRGB1+CVD", "cvd_type": cvd, "severity": 100} if cvd != "normal" else "sRGB1"
    seen = {k: cspace_convert(np.array(blend(v, alpha)) / 255.0, space, "CAM02-UCS") for k, v in palette.items()}
    return min((float(np.linalg.norm(seen[a] - seen[b])), f"{a} / {b}") for a, b in itertools.combinations(seen, 2))


def simulate_png(src: str, dst: str, cvd: str = "deuteranomaly") -> None:
    """Write ``src`` (a PNG) as a reader with ``cvd`` at severity 100 sees it."""
    from colorspacious import cspace_convert
    from PySide6 import QtGui
    image = QtGui.QImage(src).convertToFormat(QtGui.QImage.Format.Format_RGB888)
    w, h, stride = image.width(), image.height(), image.bytesPerLine()
    rgb = np.frombuffer(image.constBits(), np.uint8, count=stride * h).reshape(h, stride)[:, :3 * w]
    seen = cspace_convert(rgb.reshape(h, w, 3) / 255.0, {"name": "sRGB1+CVD", "cvd_type": cvd, "severity": 100},
                          "sRGB1")
    out = np.ascontiguousarray(np.clip(seen * 255.0, 0, 255).astype(np.uint8))
    QtGui.QImage(out.data, w, h, 3 * w, QtGui.QImage.Format.Format_RGB888).save(dst)


def main() -> int:
    import argparse
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--theme", choices=("dark", "light"), default="dark", help="the plot background to blend over")
    ap.add_argument("--screenshot", help="a PNG of the app to simulate deuteranopia on")
    ap.add_argument("--out", default="deuteranopia.png")
    args = ap.parse_args()
    try:
        import colorspacious  # noqa: F401
    except ImportError:
        print("palette_colour_blind: pip install colorspacious", file=sys.stderr)
        return 2
    sys.path.insert(0, ".")
    from marginalia.app.theme import REGION_RGB
    from marginalia.types import REGION_KIND_NAMES
    set_background(args.theme)
    print(f"over the {args.theme} theme's background {BACKGROUND}, fills at opacity {FILL_ALPHA}/255")
    new = {REGION_KIND_NAMES[k]: v for k, v in REGION_RGB.items()}
    for title, palette in (("previous palette", OLD), ("current palette", new)):
        print(title)
        for alpha, what in ((FILL_ALPHA / 255, "fill"), (200 / 255, "outline")):
            for cvd in ("normal", "deuteranomaly", "protanomaly", "tritanomaly"):
                d, pair = min_distance(palette, cvd, alpha)
                print(f"  {what:8s} {cvd:14s} closest pair {pair:30s} {d:5.1f}")
    if args.screenshot:
        simulate_png(args.screenshot, args.out)
        print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
