"""Read code blocks of the project's Markdown documents (test helper)."""
import os.path as osp
import re

from tests._configs import REPO


def doc_python_snippet(doc: str, section: str) -> str:
    """The first ```python block after the heading ``section`` of ``doc``.

    Args:
        doc: The document's path relative to the repository root.
        section: The heading line, e.g.
            ``'## Using pmsn_mm parts from any mmpretrain config'``.
    """
    with open(osp.join(REPO, doc)) as f:
        text = f.read()
    part = text[text.index(section):]
    return re.search(r'```python\n(.*?)\n```', part, re.S).group(1)
