"""``.. marginalia-cli::`` — the command-line reference, generated from :func:`marginalia.cli.build_parser`.

Every subcommand (nested ones too) gets a section with its one-line purpose and its full ``--help`` text,
so a command or option added to the parser appears in the documentation without editing a page.
"""

from __future__ import annotations

import argparse

from docutils import nodes
from docutils.parsers.rst import Directive


def _subcommands(parser: argparse.ArgumentParser):
    """(name, help line, parser) of each subcommand of ``parser``, in the parser's order."""
    for action in parser._actions:  # argparse has no public accessor for subparsers
        if isinstance(action, argparse._SubParsersAction):
            helps = {a.dest: a.help for a in action._choices_actions}
            for name, sub in action.choices.items():
                yield name, helps.get(name) or "", sub


def _section(document, title: str, ids: str, intro: str, parser: argparse.ArgumentParser):
    section = nodes.section(ids=[ids])
    section += nodes.title(text=title)
    if intro:
        section += nodes.paragraph(text=intro)
    text = parser.format_help()
    section += nodes.literal_block(text, text, language="text")
    for name, line, sub in _subcommands(parser):
        section += _section(document, f"{title} {name}", f"{ids}-{name}", line, sub)
    return section


class CliReference(Directive):
    has_content = False

    def run(self):
        import os

        from marginalia.cli import build_parser

        # argparse wraps help text to the terminal's width: fix it so the page does not depend on who builds it
        saved = os.environ.get("COLUMNS")
        os.environ["COLUMNS"] = "110"
        try:
            parser = build_parser()
            out = []
            top = parser.format_help()
            out.append(nodes.literal_block(top, top, language="text"))
            for name, line, sub in _subcommands(parser):
                out.append(_section(self.state.document, f"marginalia-cli {name}", f"cli-{name}", line, sub))
        finally:
            if saved is None:
                os.environ.pop("COLUMNS", None)
            else:
                os.environ["COLUMNS"] = saved
        return out


def setup(app):
    app.add_directive("marginalia-cli", CliReference)
    return {"version": "1", "parallel_read_safe": True}
