"""Sphinx configuration of powermodel's documentation.

Build: ``python -m sphinx -W --keep-going -b html docs docs/_build/html`` from the repository
root. Pages generated from the code (scenario keys, rules, variables, CLI, bibliography) and
the worked examples' figures are written into ``docs/_generated/`` by ``_ext/pm_docs.py``.
"""

import sys
from pathlib import Path

DOCS = Path(__file__).resolve().parent
sys.path.insert(0, str(DOCS.parent))  # document the powermodel of this checkout
sys.path.insert(0, str(DOCS / "_ext"))

import powermodel  # noqa: E402

project = "powermodel"
author = "the powermodel authors"
copyright = "the powermodel authors, BSD 3-Clause"
version = release = powermodel.__version__

extensions = [
    "myst_parser",
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "sphinx.ext.mathjax",
    "sphinx-mathjax-offline",  # MathJax served from the built site: equations render offline
    "sphinx.ext.githubpages",
    "numpydoc",
    "pm_docs",
]
source_suffix = {".md": "markdown", ".rst": "restructuredtext"}
root_doc = "index"
exclude_patterns = [
    "_build",
    "_generated/include",
    "_generated/figures",
    "_generated/static",
    "README.md",
]
templates_path = ["_templates"]

# MyST: LaTeX math as $...$ / $$...$$ and amsmath environments
myst_enable_extensions = ["dollarmath", "amsmath", "colon_fence", "deflist"]
myst_heading_anchors = 3

# API reference: one page per public module (the template lists and documents its members)
autosummary_generate = True
autodoc_typehints = "none"  # numpydoc's Parameters sections say the types and units
autodoc_default_options = {"member-order": "bysource"}
numpydoc_show_class_members = False
numpydoc_class_members_toctree = False
numpydoc_validation_checks = set()

html_theme = "pydata_sphinx_theme"
html_title = f"powermodel {release}"
html_static_path = ["_generated/static"]  # plotly.min.js, written at builder-inited
(DOCS / "_generated" / "static").mkdir(parents=True, exist_ok=True)
html_theme_options = {
    "navigation_with_keys": False,
    "show_toc_level": 2,
    "secondary_sidebar_items": ["page-toc"],
}
html_sidebars = {"**": ["sidebar-nav-bs"]}
html_show_sourcelink = False
