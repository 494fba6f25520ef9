"""One calm dark theme for every widget and plot: colours, pens and the Qt style sheet."""

from __future__ import annotations

import pyqtgraph as pg
from PySide6 import QtGui, QtWidgets

from marginalia import resources
from marginalia.types import REGION_KIND_NAMES, RegionKind

STYLE_DIR = resources.path("style")
ICON_DIR = resources.path("icons")

BACKGROUND = "#1f2228"
PANEL = "#262a31"
FOREGROUND = "#c9ced6"
MUTED = "#7d8590"
GRID_ALPHA = 0.12
DATA = "#7fa8d6"          # observed samples (logratio points, feature curves)
PREDICTION = "#f2b24c"    # current model's best structure
STALE = "#8b9098"         # prediction made by an older model
RUNNER_UP = "#c678dd"     # second-best structure, drawn faintly
BOUNDARY_LABEL = "#f5f5f5"
ANCHOR = "#4fd1c5"
QUERY = "#e06c75"
SELECTION = "#ffffff"

#: fill colour (r, g, b) of each region kind: calm blue for "no change", warm vermillion for "one change",
#: yellow for "at least one", grey for "same segment". Okabe & Ito's colours, chosen so that every pair stays
#: apart for readers with deuteranopia, protanopia or tritanopia even as faint fills on the dark background
#: (benchmarks/experiments/palette_colour_blind.py measures it).
REGION_RGB = {
    RegionKind.ZERO: (0, 114, 178),
    RegionKind.ONE: (213, 94, 0),
    RegionKind.AT_LEAST_ONE: (240, 228, 66),
    RegionKind.SAME: (160, 160, 160),
}
REGION_NAMES = REGION_KIND_NAMES


def region_brush(kind: RegionKind, *, selected: bool = False, alpha: int = 55) -> QtGui.QBrush:
    r, g, b = REGION_RGB[RegionKind(kind)]
    return pg.mkBrush(r, g, b, alpha + 35 if selected else alpha)


def region_pen(kind: RegionKind, *, selected: bool = False) -> QtGui.QPen:
    r, g, b = REGION_RGB[RegionKind(kind)]
    if selected:
        return pg.mkPen(SELECTION, width=2)
    return pg.mkPen(r, g, b, 200, width=1)


def kind_icon(kind: RegionKind, size: int = 14) -> QtGui.QIcon:
    """A small swatch of a region kind's colour (for menus and the toolbar)."""
    return swatch_icon(REGION_RGB[RegionKind(kind)], size)


def swatch_icon(rgb, size: int = 14) -> QtGui.QIcon:
    """A small rounded swatch of colour ``rgb`` (three ints 0-255, or a ``#rrggbb`` string)."""
    if isinstance(rgb, str):
        c = QtGui.QColor(rgb)
        rgb = (c.red(), c.green(), c.blue())
    r, g, b = rgb
    pix = QtGui.QPixmap(size, size)
    pix.fill(QtGui.QColor(0, 0, 0, 0))
    painter = QtGui.QPainter(pix)
    painter.setPen(QtGui.QPen(QtGui.QColor(r, g, b), 1))
    painter.setBrush(QtGui.QColor(r, g, b, 150))
    painter.drawRoundedRect(1, 1, size - 2, size - 2, 3, 3)
    painter.end()
    return QtGui.QIcon(pix)


def app_icon() -> QtGui.QIcon:
    path = ICON_DIR / "marginalia.svg"
    return QtGui.QIcon(str(path)) if path.exists() else QtGui.QIcon()


def prediction_pen(stale: bool, *, width: float = 2.0, dashed: bool = False) -> QtGui.QPen:
    """Pen of a predicted structure; stale predictions are grey and dashed."""
    from PySide6.QtCore import Qt

    pen = pg.mkPen(STALE if stale else PREDICTION, width=width)
    if stale or dashed:
        pen.setStyle(Qt.PenStyle.DashLine)
    return pen


def light_axes(plot) -> None:
    """Draw two tick levels (not three) on a plot's axes: its grid then paints ~7x faster."""
    for name in ("left", "bottom", "right", "top"):
        ax = plot.getAxis(name)
        if ax is not None:
            ax.setStyle(maxTickLevel=1)


def configure_pyqtgraph() -> None:
    """Global pyqtgraph options; call once before creating plots."""
    pg.setConfigOptions(antialias=False, background=BACKGROUND, foreground=FOREGROUND,
                        imageAxisOrder="row-major")


def apply_theme(app: QtWidgets.QApplication) -> None:
    """Apply the Fusion style, a dark palette and the style sheet to ``app``."""
    configure_pyqtgraph()
    app.setStyle("Fusion")
    pal = QtGui.QPalette()
    c = QtGui.QColor
    pal.setColor(QtGui.QPalette.ColorRole.Window, c(PANEL))
    pal.setColor(QtGui.QPalette.ColorRole.WindowText, c(FOREGROUND))
    pal.setColor(QtGui.QPalette.ColorRole.Base, c(BACKGROUND))
    pal.setColor(QtGui.QPalette.ColorRole.AlternateBase, c("#2b3038"))
    pal.setColor(QtGui.QPalette.ColorRole.ToolTipBase, c("#30353d"))
    pal.setColor(QtGui.QPalette.ColorRole.ToolTipText, c(FOREGROUND))
    pal.setColor(QtGui.QPalette.ColorRole.Text, c(FOREGROUND))
    pal.setColor(QtGui.QPalette.ColorRole.Button, c("#2d323a"))
    pal.setColor(QtGui.QPalette.ColorRole.ButtonText, c(FOREGROUND))
    pal.setColor(QtGui.QPalette.ColorRole.Highlight, c("#3d6fa8"))
    pal.setColor(QtGui.QPalette.ColorRole.HighlightedText, c("#ffffff"))
    pal.setColor(QtGui.QPalette.ColorRole.PlaceholderText, c(MUTED))
    app.setPalette(pal)
    app.setWindowIcon(app_icon())
    qss = STYLE_DIR / "marginalia.qss"
    if qss.exists():
        icons = (STYLE_DIR.parent / "icons").resolve().as_posix()
        app.setStyleSheet(qss.read_text(encoding="utf-8").replace("@ICONS@", icons))
