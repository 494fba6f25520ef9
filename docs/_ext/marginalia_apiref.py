"""``.. marginalia-api::`` — the Python API reference, generated from ``marginalia.__all__``.

Each public name is documented by autodoc from its docstring, grouped by the module that defines it, so a name
added to ``marginalia/__init__.py`` appears here without editing a page.
"""

from __future__ import annotations

from docutils import nodes
from docutils.statemachine import StringList
from sphinx.util.docutils import SphinxDirective
from sphinx.util.nodes import nested_parse_with_titles

#: module prefix (relative to marginalia) -> section title, in page order; the first matching prefix wins
GROUPS = [
    ("io.cgh", "Copy-number files"),
    ("io", "Music files and label tracks"),
    ("learners", "Learners"),
    ("cgh", "Learners"),
    ("align", "Learners"),
    ("models", "Model files"),
    ("decoders", "Decoders"),
    ("types", "Data and label types"),
    ("engine", "The project facade"),
    ("exceptions", "Errors"),
]


def _group(module: str) -> str:
    for prefix, title in GROUPS:
        if module == prefix or module.startswith(prefix + "."):
            return title
    return "Other"


class ApiReference(SphinxDirective):
    has_content = False

    def run(self):
        import marginalia

        sections: dict = {title: [] for _, title in GROUPS}
        sections.setdefault("Other", [])
        for name, module in marginalia._API.items():
            sections[_group(module)].append(name)
        sections["Other"].append("demo_file")
        lines = []
        for title, names in sections.items():
            if not names:
                continue
            lines += [title, "-" * len(title), ""]
            for name in names:
                kind = "autoclass" if isinstance(getattr(marginalia, name), type) else "autofunction"
                lines.append(f".. {kind}:: marginalia.{name}")
                if kind == "autoclass":
                    lines += ["   :members:", "   :exclude-members: __init__, __new__"]
                lines.append("")
        node = nodes.section()
        node.document = self.state.document
        nested_parse_with_titles(self.state, StringList(lines, "<marginalia-api>"), node)
        return node.children


def setup(app):
    app.add_directive("marginalia-api", ApiReference)
    return {"version": "1", "parallel_read_safe": True}
