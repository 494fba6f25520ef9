"""Sphinx configuration of Marginalia's user documentation.

Builds offline: no intersphinx, no remote images. ``make docs`` runs ``sphinx-build -W`` (warnings are errors).
"""

import pathlib
import sys

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE / "_ext"))

import marginalia  # noqa: E402  (installed with `pip install -e .[docs]`)

project = "Marginalia"
author = "The Marginalia developers"
copyright = "The Marginalia developers, GPL-3.0-or-later"
release = marginalia.__version__
version = ".".join(release.split(".")[:2])

extensions = [
    "myst_parser",
    "sphinx.ext.autodoc",
    "numpydoc",
    "sphinx.ext.mathjax",
    "marginalia_cliref",
    "marginalia_apiref",
]

source_suffix = {".rst": "restructuredtext", ".md": "markdown"}
root_doc = "index"
exclude_patterns = ["_build"]
myst_enable_extensions = ["colon_fence", "dollarmath"]
myst_heading_anchors = 3

autodoc_member_order = "bysource"
autodoc_typehints = "none"
numpydoc_show_class_members = False
numpydoc_validation_checks = set()
numpydoc_xref_param_type = False

# mathjax is loaded from a CDN only by the reader's browser; the build itself never fetches anything
html_theme = "alabaster"
html_title = f"Marginalia {release}"
html_static_path = []
html_theme_options = {"description": "Label the structure of sequences cheaply", "fixed_sidebar": True,
                      "page_width": "1100px", "body_max_width": "none"}
