"""Sphinx configuration of gkfda's documentation: the API reference from the docstrings
(numpydoc), the gallery of ``examples/gallery`` (sphinx-gallery) and the Markdown guides of
``docs/`` (myst-parser).

Build: ``sphinx-build -W --keep-going -b html docs/api OUT``.
"""

import functools
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
autodoc_default_options = {"members": True}
# The class pages list their methods, gkfda's inherited ones included (template, _skip_member);
# numpydoc's tables of every member, scikit-learn's included, would link to pages that are not
# generated.
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
# The landing page opens with the README up to this heading (what gkfda is, Install, Quick
# start), so that the site and the repository's front page say the same.
README_END = "\n## Choosing the parameters\n"


def _rewrite_link(match: "re.Match", base: Path = DOCS) -> str:
    """A Markdown link of a file in ``base``, as this site has it."""
    text, target = match.groups()
    path, _, anchor = target.partition("#")
    if not path or re.match(r"^[a-z][a-z0-9+.-]*:", path):  # an anchor or a URL
        return match.group(0)
    resolved = (base / path).resolve()
    if resolved.suffix == ".md" and resolved.parent == DOCS and resolved.stem in GUIDES:
        return f"[{text}]({resolved.name}{'#' + anchor if anchor else ''})"
    if resolved.is_file():
        return f"[{text}](path:{os.path.relpath(resolved, HERE)})"
    return text


def landing_text(stub: str) -> str:
    """The landing page: the README's first sections, then ``stub`` (its tables of contents)."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    head, found, _ = readme.partition(README_END)
    if not found:
        raise ValueError(f"README.md has no heading {README_END.strip()!r}, where the landing page ends")
    return _LINK.sub(functools.partial(_rewrite_link, base=ROOT), head.rstrip()) + "\n\n" + stub


def _read_guide(app, docname, source):
    if docname in GUIDES:
        text = (DOCS / f"{docname}.md").read_text(encoding="utf-8")
        source[0] = _LINK.sub(_rewrite_link, text)
    elif docname == "index":
        source[0] = landing_text(source[0])


def _defined_outside_gkfda(obj) -> bool:
    function = getattr(obj, "fget", obj)  # a property's getter
    if not callable(function):
        return False
    module = getattr(function, "__module__", None) or ""
    return module != "gkfda" and not module.startswith("gkfda.")


def _skip_member(app, what, name, obj, skip, options):
    # scikit-learn's metadata-routing setters (set_fit_request, ...) are generated per class;
    # their docstrings point into scikit-learn's own documentation.
    if re.fullmatch(r"set_\w+_request", name):
        return True
    # The class pages take inherited members (the template), so that what an estimator gets
    # from gkfda's own mixins (GreedyKFDA's sparsity path and bound) is on its page; what it
    # gets from scikit-learn's (get_params, fit_transform, ...) is documented there.
    if what == "class" and _defined_outside_gkfda(obj):
        return True
    return None


def setup(app):
    app.connect("source-read", _read_guide)
    app.connect("autodoc-skip-member", _skip_member)
