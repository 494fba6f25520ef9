"""The subcommands of ``marginalia-cli``, one module each.

Each module has ``add_parser(subparsers, parents)`` (registers its arguments
and ``run``) and ``run(args) -> exit code``.
"""

from . import align, batch, evaluate, export, import_labels, predict, project, query, train

COMMANDS = (project, train, predict, align, evaluate, query, export, import_labels, batch)
