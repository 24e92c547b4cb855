"""Sphinx configuration of the pmsn_mm documentation.

Build (one command, from the repository root; ``-W`` turns every warning
into an error, as ``tests/test_docs_build.py`` runs it)::

    python -m sphinx -W --keep-going -b html docs docs/_build/html
"""
import os.path as osp
import sys

HERE = osp.dirname(osp.abspath(__file__))
sys.path.insert(0, osp.join(HERE, '_ext'))
sys.path.insert(0, osp.dirname(HERE))

from pmsn_mm.version import __version__  # noqa: E402

project = 'pmsn_mm'
author = 'pmsn_mm contributors'
copyright = 'pmsn_mm contributors'  # noqa: A001
release = version = __version__

extensions = [
    'myst_parser',
    'sphinx.ext.autodoc',
    'sphinx.ext.napoleon',
    'pmsn_registry',
    'html_anchors',
]
source_suffix = {'.rst': 'restructuredtext', '.md': 'markdown'}
root_doc = 'index'
exclude_patterns = ['_build', '_ext', 'Thumbs.db', '.DS_Store']

# Markdown pages: GitHub-style heading anchors (``page.md#a-section``),
# ``$...$`` left as text, tables and definition lists as on GitHub.
myst_heading_anchors = 3
myst_enable_extensions = ['deflist']

# Google-style docstrings (``Args:``, ``Returns:``, ``Raises:``).
napoleon_google_docstring = True
napoleon_numpy_docstring = False
napoleon_use_rtype = False
autodoc_member_order = 'bysource'
autodoc_typehints = 'description'
autodoc_typehints_description_target = 'documented_params'
autodoc_class_signature = 'separated'
autodoc_default_options = {'exclude-members': '__init__'}

html_theme = 'furo'
html_title = f'pmsn_mm {release}'
