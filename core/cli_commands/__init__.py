"""The subcommands of ``marginalia-cli``, one module each.

Each module has ``add_parser(subparsers, parents)`` (registers its arguments
and ``run``) and ``run(args) -> exit code``.
"""

from . import (
    align,
    anchor,
    batch,
    carry,
    evaluate,
    export,
    history,
    import_labels,
    predict,
    prepare,
    project,
    query,
    restore,
    sync,
    train,
)

COMMANDS = (project, train, predict, align, sync, anchor, carry, evaluate, query, export, import_labels, history, restore, batch,
            prepare)
