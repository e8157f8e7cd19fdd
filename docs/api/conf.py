"""Sphinx configuration of gkfda's documentation: the API reference from the docstrings
(numpydoc), the gallery of ``examples/gallery`` (sphinx-gallery) and the Markdown guides of
``docs/`` (myst-parser).

Build: ``sphinx-build -W --keep-going -b html docs/api OUT``.
"""

import os
import re
from pathlib import Path

import matplotlib

matplotlib.use("Agg")

import gkfda

HERE = Path(__file__).resolve().parent
DOCS = HERE.parent
ROOT = DOCS.parent

project = "gkfda"
author = "gkfda developers"
copyright = "gkfda developers"
release = version = gkfda.__version__

extensions = [
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "sphinx.ext.mathjax",
    "numpydoc",
    "myst_parser",
    "sphinx_gallery.gen_gallery",
]

source_suffix = {".rst": "restructuredtext", ".md": "markdown"}
templates_path = ["_templates"]
exclude_patterns = ["_build"]

autosummary_generate = True
autodoc_default_options = {"members": True, "inherited-members": False}
# The class pages list their own methods (template); numpydoc's tables of every member,
# inherited ones included, would link to pages that are not generated.
numpydoc_show_class_members = False
numpydoc_class_members_toctree = False

myst_heading_anchors = 3
myst_enable_extensions = ["dollarmath"]

sphinx_gallery_conf = {
    "examples_dirs": str(ROOT / "examples" / "gallery"),
    "gallery_dirs": "auto_examples",
    "filename_pattern": r"/plot_",
    "download_all_examples": False,
    "remove_config_comments": True,
    "matplotlib_animations": False,
    "within_subsection_order": "FileNameSortKey",
}

html_theme = "pydata_sphinx_theme"
html_title = f"gkfda {release}"
html_theme_options = {"navigation_with_keys": False, "show_toc_level": 2}
html_static_path = []

# The guides of docs/ are written for the repository (GitHub renders them where they are); here
# each is read through its stub page of the same name, so that links between guides stay links,
# links to other files of the repository become downloads and links to folders plain text.
GUIDES = ("architecture", "serving", "model-format", "scale", "defaults", "bad-input", "PERFORMANCE", "RESULTS")
_LINK = re.compile(r"(?<!!)\[([^\]]+)\]\(([^)\s]+)\)")


def _rewrite_link(match: "re.Match") -> str:
    text, target = match.groups()
    path, _, anchor = target.partition("#")
    if not path or re.match(r"^[a-z][a-z0-9+.-]*:", path):  # an anchor or a URL
        return match.group(0)
    if path.endswith(".md") and Path(path).stem in GUIDES and "/" not in path:
        return match.group(0)
    resolved = (DOCS / path).resolve()
    if resolved.is_file():
        return f"[{text}](path:{os.path.relpath(resolved, HERE)})"
    return text


def _read_guide(app, docname, source):
    if docname in GUIDES:
        text = (DOCS / f"{docname}.md").read_text(encoding="utf-8")
        source[0] = _LINK.sub(_rewrite_link, text)


def _skip_member(app, what, name, obj, skip, options):
    # scikit-learn's metadata-routing setters (set_fit_request, ...) are generated per class;
    # their docstrings point into scikit-learn's own documentation.
    if re.fullmatch(r"set_\w+_request", name):
        return True
    return None


def setup(app):
    app.connect("source-read", _read_guide)
    app.connect("autodoc-skip-member", _skip_member)
