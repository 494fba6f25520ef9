"""Start Marginalia: ``python -m marginalia.app [--demo] [PROJECT]``."""

from __future__ import annotations

import argparse
import ctypes
import os
import re
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


#: Debian/Ubuntu package of each system library Qt's X11 plugin needs and a minimal system may lack
X11_PACKAGES = {
    "libxcb-cursor.so.0": "libxcb-cursor0",
    "libxcb-icccm.so.4": "libxcb-icccm4",
    "libxcb-keysyms.so.1": "libxcb-keysyms1",
    "libxcb-image.so.0": "libxcb-image0",
    "libxcb-render-util.so.0": "libxcb-render-util0",
    "libxcb-shape.so.0": "libxcb-shape0",
    "libxcb-randr.so.0": "libxcb-randr0",
    "libxcb-xkb.so.1": "libxcb-xkb1",
    "libxcb-xinerama.so.0": "libxcb-xinerama0",
    "libxkbcommon-x11.so.0": "libxkbcommon-x11-0",
    "libxkbcommon.so.0": "libxkbcommon0",
    "libEGL.so.1": "libegl1",
    "libGL.so.1": "libgl1",
    "libfontconfig.so.1": "libfontconfig1",
    "libdbus-1.so.3": "libdbus-1-3",
}
#: loaded by Qt (6.5 and later) at run time rather than linked, so the plugin loads without it
X11_RUNTIME_LIBRARIES = ("libxcb-cursor.so.0",)


def uses_x11(environ=None, platform: str | None = None) -> bool:
    """Whether Qt will pick its X11 (xcb) plugin with ``environ``'s settings."""
    environ = os.environ if environ is None else environ
    platform = sys.platform if platform is None else platform
    if not platform.startswith("linux") and "bsd" not in platform:
        return False
    qpa = (environ.get("QT_QPA_PLATFORM") or "").split(";")[0].split(":")[0].strip().lower()
    if qpa:
        return qpa == "xcb"
    return bool(environ.get("DISPLAY")) and not environ.get("WAYLAND_DISPLAY")


def _xcb_plugin_path() -> str | None:
    import PySide6

    path = os.path.join(os.path.dirname(PySide6.__file__), "Qt", "plugins", "platforms", "libqxcb.so")
    return path if os.path.exists(path) else None


def x11_problem(load=ctypes.CDLL, plugin: str | None = None) -> str | None:
    """Why Qt's X11 plugin cannot load here, with the command that fixes it; ``None`` when it can.

    Qt itself only says it "could not load the Qt platform plugin xcb" and aborts; this names the
    missing system library (the dynamic loader reports one at a time) and its Debian/Ubuntu package.

    Parameters
    ----------
    load : callable
        Opens a shared library by path or name, raising ``OSError`` when it cannot (``ctypes.CDLL``).
    plugin : str, optional
        Path of the plugin (default: PySide6's ``libqxcb.so``; no check when it is absent).
    """
    plugin = plugin or _xcb_plugin_path()
    if plugin is None:
        return None
    missing = []
    for name in (plugin, *X11_RUNTIME_LIBRARIES):
        try:
            load(name)
        except OSError as exc:
            found = re.search(r"(lib[\w.+-]+\.so[\w.]*)", str(exc))
            lib = found.group(1) if found else name
            if lib == os.path.basename(plugin):
                return f"marginalia: Qt's X11 plugin cannot be loaded ({exc})"
            if lib not in missing:
                missing.append(lib)
    if not missing:
        return None
    # the loader stops at the first missing library: name the whole set Qt documents for xcb at once
    packages = sorted({X11_PACKAGES.get(lib, lib) for lib in missing}
                      | {pkg for pkg in X11_PACKAGES.values() if pkg.startswith(("libxcb", "libxkb"))})
    return (f"marginalia: Qt's X11 plugin cannot load: this system lacks {', '.join(missing)} (the loader stops at "
            f"the first missing library). On Debian/Ubuntu, install the libraries it needs:\n"
            f"  sudo apt-get install {' '.join(packages)}\n(or run headless: QT_QPA_PLATFORM=offscreen make run)")


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="marginalia", description="Label the structure of sequences cheaply.")
    p.add_argument("project", nargs="?", metavar="PROJECT", help="a .marginalia project to open")
    p.add_argument("--demo", action="store_true", help="open the embedded demo project")
    p.add_argument("--theme", choices=("dark", "light"), default=None,
                   help="colour theme (default: the one chosen in View > Light theme, else dark)")
    return p


def create_window(args, settings=None, *, prepare: bool = True):
    """Build the main window for parsed ``args`` (opening the demo, a project or the last one).

    On the first start of an install (``prepare``, and the kernels not compiled yet) the window opens at once
    and the project follows when the background compilation of the kernels is done.
    """
    from marginalia.engine import Engine
    from marginalia.exceptions import MarginaliaError

    from . import errors
    from .main_window import MainWindow

    window = MainWindow(settings=settings)

    def open_what_was_asked():
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

    if prepare and not Engine.kernels_prepared():
        # the first start compiles the kernels in the background; the window is usable meanwhile
        window.prepare_kernels(then=open_what_was_asked)
    else:
        open_what_was_asked()
    return window


def missing_gui_libraries() -> str | None:
    """One line naming the extra to install when the GUI libraries are absent, else ``None``."""
    import importlib.util
    missing = [name for name in ("PySide6", "pyqtgraph") if importlib.util.find_spec(name) is None]
    if not missing:
        return None
    return (f"marginalia: the desktop app needs {' and '.join(missing)}, which the base install leaves out; "
            "install the [gui] extra: pip install 'marginalia-studio[gui]'")


def main(argv=None) -> int:
    args = build_parser().parse_args(argv)
    problem = missing_gui_libraries()
    if problem:
        print(problem, file=sys.stderr)
        return 2
    if not display_available():
        print(NO_DISPLAY, file=sys.stderr)
        return 2
    problem = x11_problem() if uses_x11() else None
    if problem:
        print(problem, file=sys.stderr)
        return 2
    from PySide6 import QtWidgets

    from . import errors, theme

    errors.setup_logging()
    app = QtWidgets.QApplication.instance() or QtWidgets.QApplication(sys.argv[:1])
    app.setApplicationName("Marginalia")
    app.setOrganizationName("Marginalia")
    from PySide6 import QtCore
    chosen = args.theme or str(QtCore.QSettings("Marginalia", "Marginalia").value("theme", "dark"))
    theme.apply_theme(app, chosen if chosen in theme.THEMES else "dark")
    holder = {}
    errors.install_excepthook(lambda: holder.get("window"))
    window = holder["window"] = create_window(args)
    window.show()
    return app.exec()


if __name__ == "__main__":
    sys.exit(main())
