"""Sphinx configuration of rankfast's documentation.

Build:  python -m sphinx -W -b html docs docs/_build/html
(tests/test_docs.py runs the same with warnings as errors).
"""
import re

import rankfast  # the installed package (pip install -e ".[docs]" for this checkout's)

project = "rankfast"
author = "the rankfast developers"
copyright = "the rankfast developers"
version = release = rankfast.__version__

extensions = ["sphinx.ext.autodoc", "numpydoc", "myst_parser"]
source_suffix = {".rst": "restructuredtext", ".md": "markdown"}
exclude_patterns = ["_build"]
smartquotes = False          # --normalize stays two hyphens, not an en dash

# The user guide is Markdown (through MyST): GitHub-style heading anchors
# (#model-selection) become link targets.
myst_heading_anchors = 3

autodoc_member_order = "bysource"
autodoc_default_options = {"members": True, "show-inheritance": False}
numpydoc_show_class_members = False          # autodoc lists the members once
numpydoc_class_members_toctree = False
numpydoc_validation_checks = set()

html_theme = "alabaster"
html_title = f"rankfast {release}"
html_static_path = []
html_theme_options = {"page_width": "1180px", "sidebar_width": "230px"}   # room for the tables


# The docstrings are written to be read by help() as well: |x| is an absolute
# value and coef_ a fitted attribute, where reStructuredText would see a
# substitution and a link.  Before numpydoc and docutils read a docstring,
# escape | and a word's trailing _ in prose, leaving literal blocks, doctest
# blocks and `backquoted` spans as they are.
_SPAN = re.compile(r"(``.*?``|``.*$|`[^`]*`)")     # an open ``span`` runs to the line end
_TRAILING_UNDERSCORE = re.compile(r"(\w)_(?=[^\w]|$)")
_STARRED = re.compile(r"(?<![\w\\])\*(?=\*?(args|kwargs)\b)")      # *args, **kwargs


def _escape_prose(text):
    parts = _SPAN.split(text)
    for i in range(0, len(parts), 2):           # the even parts are outside backquotes
        prose = _TRAILING_UNDERSCORE.sub(r"\1\\_", parts[i].replace("|", "\\|"))
        parts[i] = _STARRED.sub(r"\\*", prose)
    return "".join(parts)


def _indent(line):
    return len(line) - len(line.lstrip())


def escape_docstring(app, what, name, obj, options, lines):
    literal_indent = None            # inside a literal block: the indent of its "::" paragraph
    in_doctest = expect_literal = False
    expect_indent = 0                # the indent of a paragraph ending in "::"
    open_span = False                # a ``span`` goes on to the next line
    for i, line in enumerate(lines):
        stripped = line.strip()
        if not stripped:
            in_doctest = open_span = False
            continue
        if literal_indent is not None:
            if _indent(line) > literal_indent:
                continue
            literal_indent = None
        if expect_literal:
            expect_literal = False
            if _indent(line) > expect_indent:
                literal_indent = expect_indent
                continue
        if stripped.startswith(">>>") or in_doctest:
            in_doctest = True
            continue
        if stripped.startswith(".. "):       # a directive: its own syntax
            continue
        head, rest = "", line
        if open_span:
            if "``" not in line:
                continue
            cut = line.index("``") + 2
            head, rest = line[:cut], line[cut:]
        lines[i] = head + _escape_prose(rest)
        open_span = rest.count("``") % 2 == 1
        if stripped.endswith("::"):
            expect_literal, expect_indent = True, _indent(line)


def plain_tables(app, what, name, obj, options, lines):
    """The package docstring's name/description table, laid out for help(), as a literal block."""
    if what != "module" or name != "rankfast":
        return
    for i in range(len(lines) - 2):
        if lines[i].strip() == "Python API" and set(lines[i + 1].strip()) == {"-"}:
            end = i + 2
            while end < len(lines) and lines[end].strip():
                end += 1
            lines[i + 2:end] = ["::", ""] + ["    " + line for line in lines[i + 2:end]]
            return


def skip_scikit_learn_members(app, what, name, obj, skip, options):
    """Members scikit-learn adds (set_fit_request, ...) are documented by scikit-learn."""
    if what == "class" and getattr(obj, "__module__", "").startswith("sklearn."):
        return True
    return None


def setup(app):
    app.connect("autodoc-process-docstring", plain_tables, priority=90)
    app.connect("autodoc-process-docstring", escape_docstring, priority=100)
    app.connect("autodoc-skip-member", skip_scikit_learn_members)
