"""Start Marginalia: ``python -m app.main [--demo] [PROJECT]``."""

from __future__ import annotations

import argparse
import os
import sys

NO_DISPLAY = ("marginalia: no display found; run it on a desktop, or use QT_QPA_PLATFORM=offscreen / "
              "xvfb-run -a make run")
HEADLESS_PLATFORMS = ("offscreen", "minimal", "vnc", "linuxfb", "eglfs", "vkkhrdisplay")


def display_available(environ=None, platform: str | None = None) -> bool:
    """Whether Qt can open windows with ``environ``'s display settings."""
    environ = os.environ if environ is None else environ
    platform = sys.platform if platform is None else platform
    if not platform.startswith("linux") and "bsd" not in platform:
        return True
    qpa = (environ.get("QT_QPA_PLATFORM") or "").split(":")[0].strip().lower()
    if qpa in HEADLESS_PLATFORMS:
        return True
    if qpa == "xcb":
        return bool(environ.get("DISPLAY"))
    if qpa.startswith("wayland"):
        return bool(environ.get("WAYLAND_DISPLAY"))
    return bool(environ.get("DISPLAY") or environ.get("WAYLAND_DISPLAY"))


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="marginalia", description="Label the structure of sequences cheaply.")
    p.add_argument("project", nargs="?", metavar="PROJECT", help="a .marginalia project to open")
    p.add_argument("--demo", action="store_true", help="open the embedded demo project")
    return p


def create_window(args, settings=None):
    """Build the main window for parsed ``args`` (opening the demo, a project or the last one)."""
    from core.engine import Engine
    from core.exceptions import MarginaliaError

    from . import errors
    from .main_window import MainWindow

    window = MainWindow(settings=settings)
    try:
        if args.demo:
            window.set_engine(Engine.open_demo())
        elif args.project:
            window.open_project(args.project)
        else:
            last = window.settings.value("last_project")
            if last and os.path.exists(str(last)):
                window.open_project(str(last))
    except MarginaliaError as exc:
        window.last_error_dialog = errors.show_error(window, "Cannot open the project", exc)
    return window


def main(argv=None) -> int:
    args = build_parser().parse_args(argv)
    if not display_available():
        print(NO_DISPLAY, file=sys.stderr)
        return 2
    from PySide6 import QtWidgets

    from . import errors, theme

    errors.setup_logging()
    app = QtWidgets.QApplication.instance() or QtWidgets.QApplication(sys.argv[:1])
    app.setApplicationName("Marginalia")
    app.setOrganizationName("Marginalia")
    theme.apply_theme(app)
    holder = {}
    errors.install_excepthook(lambda: holder.get("window"))
    window = holder["window"] = create_window(args)
    window.show()
    return app.exec()


if __name__ == "__main__":
    sys.exit(main())
