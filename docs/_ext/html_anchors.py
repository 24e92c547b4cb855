"""Sphinx extension: ``<a id="name"></a>`` in Markdown becomes a link target.

GitHub renders the raw HTML anchors of generated pages such as
``docs/recipes.md`` (``.dev_scripts/recipes_to_md.py``) and their
``[text](#name)`` links work there; MyST keeps the anchor as raw HTML, which
its link resolution does not see. This transform turns each such anchor into
an explicit docutils target before MyST resolves ``#name`` links, so the
same file works on GitHub and in the built docs.
"""
import re

from docutils import nodes
from docutils.transforms import Transform
from sphinx.application import Sphinx

ANCHOR = re.compile(
    r'^\s*<a\s+(?:id|name)="(?P<id>[^"]+)"\s*>\s*(?P<close></a>)?\s*$')
CLOSE = re.compile(r'^\s*</a>\s*$')


class HtmlAnchorTargets(Transform):
    """Raw ``<a id="x"></a>`` nodes -> explicit targets named ``x``."""

    # before Sphinx collects labels (SphinxDomains, 850) and MyST resolves
    # ``#name`` links (ResolveAnchorIds, 879)
    default_priority = 840

    def apply(self, **kwargs) -> None:
        for raw in list(self.document.findall(nodes.raw)):
            match = ANCHOR.match(raw.astext())
            if 'html' not in raw.get('format', '').split() or not match:
                continue
            following = raw.next_node(descend=False, siblings=True)
            if not match.group('close'):
                # MyST splits an inline ``<a id="x"></a>`` into two nodes
                if not (isinstance(following, nodes.raw)
                        and CLOSE.match(following.astext())):
                    continue
                following.parent.remove(following)
            name = match.group('id')
            target = nodes.target('', '', ids=[name], names=[name])
            self.document.note_explicit_target(target, target)
            raw.parent.replace(raw, target)


def setup(app: Sphinx) -> dict:
    app.add_transform(HtmlAnchorTargets)
    return dict(parallel_read_safe=True, parallel_write_safe=True)
