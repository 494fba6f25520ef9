"""The installed version of Marginalia (distribution ``marginalia-studio``, import name ``marginalia``)."""

DISTRIBUTION = "marginalia-studio"


def library_version() -> str:
    """The installed distribution's version, or ``"unknown"`` when run from an uninstalled checkout."""
    from importlib.metadata import PackageNotFoundError, version
    try:
        return version(DISTRIBUTION)
    except PackageNotFoundError:
        return "unknown"
