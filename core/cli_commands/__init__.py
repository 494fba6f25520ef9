"""The subcommands of ``marginalia-cli``, one module each.

Each module has ``add_parser(subparsers, parents)`` (registers its arguments
and ``run``) and ``run(args) -> exit code``.
"""

from . import align, batch, evaluate, export, history, predict, prepare, query, restore, train

COMMANDS = (train, predict, align, evaluate, query, export, history, restore, batch, prepare)
