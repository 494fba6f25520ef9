"""The project's exception hierarchy.

Every error a user can meet is a :class:`MarginaliaError`. Messages name the
argument or file, the value received, what was expected and what to do.
"""

from __future__ import annotations

__all__ = [
    "MarginaliaError",
    "DataFormatError",
    "ParameterError",
    "InfeasibleLabelsError",
    "NotFittedError",
    "StoreError",
    "ProjectInUseError",
    "ProjectVersionError",
    "ProjectDamagedError",
    "SourceMovedError",
    "CancelledError",
    "UsageError",
    "WrongTaskError",
    "MissingExtraError",
    "require_extra",
    "DataWarning",
]


class MarginaliaError(Exception):
    """Base class of every error raised on purpose by Marginalia."""


class DataFormatError(MarginaliaError, ValueError):
    """A file or table does not have the expected content.

    Parameters
    ----------
    message : str
        What is wrong and how to fix it.
    path : str, optional
        The file concerned.
    where : str, optional
        The line, record or column where it went wrong (e.g. ``"line 12"``).
    """

    def __init__(self, message: str, *, path: str | None = None, where: str | None = None):
        self.path = None if path is None else str(path)
        self.where = where
        prefix = ""
        if self.path:
            prefix = f"{self.path}"
            if where:
                prefix += f", {where}"
            prefix += ": "
        elif where:
            prefix = f"{where}: "
        super().__init__(prefix + message)


class ParameterError(MarginaliaError, ValueError):
    """A function argument has an invalid value."""


class InfeasibleLabelsError(ParameterError):
    """A set of partial labels that no structure can satisfy.

    Attributes
    ----------
    label_ids : tuple of str
        The ids (or descriptions) of the conflicting labels.
    """

    def __init__(self, message: str, label_ids=()):
        self.label_ids = tuple(label_ids)
        super().__init__(message)


class NotFittedError(MarginaliaError, RuntimeError):
    """A model or learner was used before being trained."""


class StoreError(MarginaliaError, RuntimeError):
    """The project store cannot be read or written."""


class ProjectInUseError(StoreError):
    """Another process holds the project open for writing."""


class ProjectVersionError(StoreError):
    """The project was written by a newer Marginalia (schema version too high)."""


class ProjectDamagedError(StoreError):
    """The project file is damaged. ``backups`` lists the good backups, newest first."""

    def __init__(self, message: str, backups=(), problem: str | None = None):
        self.backups = tuple(backups)
        #: what is wrong, in SQLite's words (may be long): the details a dialog shows on request
        self.problem = problem
        super().__init__(message)


class NotAProjectError(ProjectDamagedError):
    """The file opened as a project is no project at all (a text table, an audio file), and has no backups.

    Not damage: there is nothing to restore, and the message says how to bring such a file in (import it).
    """


class SourceMovedError(StoreError):
    """An item's source file moved or changed since it was imported."""

    def __init__(self, message: str, items=()):
        self.items = tuple(items)
        super().__init__(message)


class CancelledError(MarginaliaError):
    """Long work was cancelled by its caller."""


class UsageError(MarginaliaError):
    """A command was called wrongly: a missing file, an option out of range (the command line's exit code 2)."""


class WrongTaskError(UsageError, ParameterError):
    """A model file of another task than the caller needs (a segmentation model given to ``align``, say)."""


class MissingExtraError(UsageError, ImportError):
    """A feature needs an optional part of Marginalia that is not installed (the GUI, Dask).

    The message names the ``pip install`` command that adds it.
    """

    def __init__(self, extra: str, feature: str):
        self.extra = extra
        super().__init__(f"{feature} needs Marginalia's [{extra}] extra: pip install 'marginalia-studio[{extra}]'")


def require_extra(module: str, extra: str, feature: str) -> None:
    """Raise :class:`MissingExtraError` unless ``module`` can be imported."""
    import importlib.util
    if importlib.util.find_spec(module) is None:
        raise MissingExtraError(extra, feature)


class DataWarning(UserWarning):
    """A file was read, but something in it suggests its content may not be what its author meant.

    The app shows these after an import; the command line prints them. (Notes about how a file was
    read, such as probes sorted by position, are plain ``UserWarning``s.)
    """
