"""The app's two themes, calm dark (the default) and light, for every widget and plot: colours, pens, style sheet.

The colours are module attributes read when something is drawn; :func:`use` sets them for one
theme before the window is built (the theme is chosen at start: ``marginalia --theme light``, or
View ▸ Light theme, which applies from the next start).
"""

from __future__ import annotations

import pyqtgraph as pg
from PySide6 import QtGui, QtWidgets
from PySide6.QtCore import Qt

from marginalia import resources
from marginalia.types import REGION_KIND_NAMES, RegionKind

STYLE_DIR = resources.path("style")
ICON_DIR = resources.path("icons")

#: the colours of each theme; the dark theme's are also the module's defaults below
THEMES = {
    "dark": {
        "BACKGROUND": "#1f2228", "PANEL": "#262a31", "FOREGROUND": "#c9ced6", "MUTED": "#7d8590",
        "GRID_ALPHA": 0.12,
        "DATA": "#7fa8d6",          # observed samples (logratio points, feature curves)
        "PREDICTION": "#f2b24c",    # current model's best structure
        "STALE": "#8b9098",         # prediction made by an older model
        "RUNNER_UP": "#c678dd",     # second-best structure, drawn faintly
        "BOUNDARY_LABEL": "#f5f5f5", "ANCHOR": "#4fd1c5", "QUERY": "#e06c75", "SELECTION": "#ffffff",
        "LEGEND_TEXT": "#e6e6e6",
        "REGION_ALPHA": 55,         # opacity of a label's fill (of 255)
        # a question's two answers, a colour-blind-safe pair (Okabe & Ito sky blue and reddish purple; orange
        # would merge with the prediction's own colour and with the spectrogram's bright bins)
        "QUESTION_MODEL": "#56B4E9", "QUESTION_RUNNER": "#CC79A7",
        "qss": "marginalia.qss",
        "palette": {"Window": "#262a31", "WindowText": "#c9ced6", "Base": "#1f2228", "AlternateBase": "#2b3038",
                    "ToolTipBase": "#30353d", "ToolTipText": "#c9ced6", "Text": "#c9ced6", "Button": "#2d323a",
                    "ButtonText": "#c9ced6", "Highlight": "#3d6fa8", "HighlightedText": "#ffffff",
                    "PlaceholderText": "#7d8590"},
    },
    "light": {
        # darker strokes of the same hues, so lines and points keep their contrast on white
        "BACKGROUND": "#ffffff", "PANEL": "#f3f4f6", "FOREGROUND": "#24292f", "MUTED": "#6e7781",
        "GRID_ALPHA": 0.18,
        "DATA": "#3b6ea5", "PREDICTION": "#c77700", "STALE": "#8c959f", "RUNNER_UP": "#9a3fb0",
        "BOUNDARY_LABEL": "#24292f", "ANCHOR": "#0f8579", "QUERY": "#c0392b", "SELECTION": "#000000",
        "LEGEND_TEXT": "#24292f",
        # fills over white need more opacity to stay apart under colour-vision deficiency
        # (benchmarks/experiments/palette_colour_blind.py --theme light)
        "REGION_ALPHA": 90,
        "QUESTION_MODEL": "#0072B2", "QUESTION_RUNNER": "#B0558F",
        "qss": "marginalia-light.qss",
        "palette": {"Window": "#f3f4f6", "WindowText": "#24292f", "Base": "#ffffff", "AlternateBase": "#f6f8fa",
                    "ToolTipBase": "#ffffff", "ToolTipText": "#24292f", "Text": "#24292f", "Button": "#eaeef2",
                    "ButtonText": "#24292f", "Highlight": "#2f6fb5", "HighlightedText": "#ffffff",
                    "PlaceholderText": "#6e7781"},
    },
}
#: the theme in use (set by :func:`use`)
NAME = "dark"
BACKGROUND = "#1f2228"
PANEL = "#262a31"
FOREGROUND = "#c9ced6"
MUTED = "#7d8590"
GRID_ALPHA = 0.12
DATA = "#7fa8d6"
PREDICTION = "#f2b24c"
STALE = "#8b9098"
RUNNER_UP = "#c678dd"
BOUNDARY_LABEL = "#f5f5f5"
ANCHOR = "#4fd1c5"
QUERY = "#e06c75"
SELECTION = "#ffffff"
LEGEND_TEXT = "#e6e6e6"
QUESTION_MODEL = "#56B4E9"
QUESTION_RUNNER = "#CC79A7"
REGION_ALPHA = 55


def use(name: str) -> None:
    """Make ``name`` (``"dark"`` or ``"light"``) the theme every later drawing uses."""
    if name not in THEMES:
        raise ValueError(f"theme: expected one of {sorted(THEMES)}, got {name!r}")
    global NAME
    NAME = name
    for key, value in THEMES[name].items():
        if key.isupper():
            globals()[key] = value

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


def tint(alpha: int) -> QtGui.QBrush:
    """A see-through fill of the theme's text colour: highlights that show on a dark and on a light background."""
    c = QtGui.QColor(FOREGROUND)
    c.setAlpha(int(alpha))
    return QtGui.QBrush(c)


#: a suggested label (carried, not accepted yet) is drawn with dotted lines and this share of a label's fill
SUGGESTED_PEN_STYLE = Qt.PenStyle.DotLine
SUGGESTED_FILL = 0.4


def region_brush(kind: RegionKind, *, selected: bool = False, alpha: int | None = None,
                 suggested: bool = False) -> QtGui.QBrush:
    """Fill of a region label of ``kind`` (opacity ``alpha`` of 255, the theme's by default; more when selected,
    less for a suggestion)."""
    r, g, b = REGION_RGB[RegionKind(kind)]
    alpha = REGION_ALPHA if alpha is None else alpha
    if suggested:
        alpha = int(alpha * SUGGESTED_FILL)
    return pg.mkBrush(r, g, b, alpha + 35 if selected else alpha)


def region_pen(kind: RegionKind, *, selected: bool = False, suggested: bool = False) -> QtGui.QPen:
    r, g, b = REGION_RGB[RegionKind(kind)]
    if selected:
        return pg.mkPen(SELECTION, width=2, style=SUGGESTED_PEN_STYLE if suggested else Qt.PenStyle.SolidLine)
    return pg.mkPen(r, g, b, 200, width=2 if suggested else 1,
                    style=SUGGESTED_PEN_STYLE if suggested else Qt.PenStyle.SolidLine)


def label_pen(colour, *, selected: bool = False, suggested: bool = False) -> QtGui.QPen:
    """Pen of a line label (a boundary, an anchor): the selection colour when selected, dotted for a suggestion."""
    if selected:
        return pg.mkPen(SELECTION, width=3, style=Qt.PenStyle.DashDotLine)
    return pg.mkPen(colour, width=2, style=SUGGESTED_PEN_STYLE if suggested else Qt.PenStyle.SolidLine)


#: the tooltip's first line for a suggested label
SUGGESTED_TIP = "suggested (carried from another recording): Ctrl+Enter accepts it, Del rejects it, a drag moves it\n"


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


def apply_theme(app: QtWidgets.QApplication, name: str | None = None) -> None:
    """Apply the Fusion style, the palette and the style sheet of theme ``name`` (default: the one in use)."""
    if name is not None:
        use(name)
    configure_pyqtgraph()
    app.setStyle("Fusion")
    pal = QtGui.QPalette()
    for role, colour in THEMES[NAME]["palette"].items():
        pal.setColor(getattr(QtGui.QPalette.ColorRole, role), QtGui.QColor(colour))
    app.setPalette(pal)
    app.setWindowIcon(app_icon())
    qss = STYLE_DIR / THEMES[NAME]["qss"]
    if qss.exists():
        icons = (STYLE_DIR.parent / "icons").resolve().as_posix()
        app.setStyleSheet(qss.read_text(encoding="utf-8").replace("@ICONS@", icons))
