"""Sphinx extension: the API reference of every module pmsn_mm registers.

``.. pmsn-registered:: MODELS`` (optionally ``:module: pmsn_mm.models.priors``)
expands to one ``autoclass`` / ``autofunction`` entry per object that
pmsn_mm registers into that registry, found by walking mmengine's registry
tree after ``import pmsn_mm`` (mmengine's root registries and all their
scoped children: mmcv's, mmpretrain's). Nothing is listed by hand, so a new
registered module appears by itself; one that no directive of the docs
takes (a new registry, or a module outside every ``:module:`` filter) is a
warning, which fails the build under ``-W``.
"""
import inspect
from typing import Dict, Iterator, List, Tuple

from docutils import nodes
from docutils.parsers.rst import directives
from docutils.statemachine import StringList
from sphinx.application import Sphinx
from sphinx.util import logging
from sphinx.util.docutils import SphinxDirective
from sphinx.util.nodes import nested_parse_with_titles

logger = logging.getLogger(__name__)


def _walk(registry) -> Iterator:
    yield registry
    for child in registry.children.values():
        yield from _walk(child)


def registered_objects() -> Dict[Tuple[str, str], object]:
    """Every object pmsn_mm registers, keyed by (registry, registered name).

    The registry is named by :func:`registry_key` (``'MODELS'``,
    ``'DATA_SAMPLERS'``, ...).

    Returns:
        ``{(REGISTRY, name): class or function}``, sorted by key.
    """
    import mmengine.registry as mmengine_registry

    import pmsn_mm  # noqa: F401  (registers everything)
    found = {}
    roots = [v for v in vars(mmengine_registry).values()
             if isinstance(v, mmengine_registry.Registry)]
    for root in roots:
        for registry in _walk(root):
            for name, obj in registry.module_dict.items():
                if getattr(obj, '__module__', '').startswith('pmsn_mm'):
                    found[(registry_key(registry), name)] = obj
    return dict(sorted(found.items()))


def registry_key(registry) -> str:
    """The registry's constant name in ``mmpretrain.registry`` (else
    ``mmengine.registry``, else mmengine's own name upper-cased): e.g.
    ``'DATA_SAMPLERS'``; mmengine's root registries that mmpretrain
    re-exports as ``MMENGINE_*`` keep mmengine's name."""
    import mmengine.registry as mmengine_registry
    import mmpretrain.registry as mmpretrain_registry
    for module in (mmpretrain_registry, mmengine_registry):
        for name, value in vars(module).items():
            if value is registry and not name.startswith('MMENGINE_'):
                return name
    return registry.name.upper().replace(' ', '_')


def _full_name(obj) -> str:
    return f'{obj.__module__}.{obj.__qualname__}'


class RegisteredDirective(SphinxDirective):
    """``.. pmsn-registered:: REGISTRY`` with an optional ``:module:``
    prefix: autodoc entries of the objects pmsn_mm registers there."""

    required_arguments = 1
    option_spec = {'module': directives.unchanged}

    def run(self) -> List[nodes.Node]:
        registry = self.arguments[0]
        prefix = self.options.get('module', 'pmsn_mm')
        # per document being read (Sphinx resets temp_data for each)
        taken = self.env.temp_data.setdefault('pmsn_registered_taken', set())
        documented = self.env.temp_data.setdefault(
            'pmsn_registered_documented', set())
        lines = []
        entries = [(name, obj)
                   for (reg, name), obj in registered_objects().items()
                   if reg == registry and (obj.__module__ == prefix or
                                           obj.__module__.startswith(
                                               prefix + '.'))]
        if not entries:
            logger.warning(f'pmsn-registered: nothing registered in '
                           f'{registry} from {prefix}',
                           location=self.get_location())
        for name, obj in entries:
            taken.add((registry, name))
            full = _full_name(obj)
            alias = '' if name == obj.__name__ else \
                f' (registered as ``{name}``)'
            lines.append(f'- ``{registry}``: ``type=\'{name}\'`` → '
                         f':py:obj:`{full}`{alias}')
        lines.append('')
        for name, obj in entries:
            full = _full_name(obj)
            if full in documented:
                continue  # registered twice: documented once
            documented.add(full)
            kind = 'autoclass' if inspect.isclass(obj) else 'autofunction'
            lines.append(f'.. {kind}:: {full}')
            if kind == 'autoclass':
                lines += ['   :members:', '   :show-inheritance:']
            lines.append('')
        node = nodes.container()
        nested_parse_with_titles(
            self.state, StringList(lines, source=self.get_source_info()[0]),
            node)
        return node.children


def check_everything_documented(app: Sphinx, env) -> None:
    """Warn about every registered object that no directive listed."""
    taken = set().union(*getattr(env, 'pmsn_registered_by_doc', {}).values())
    for key, obj in registered_objects().items():
        if key not in taken:
            logger.warning(
                f'{key[0]} {key[1]!r} ({_full_name(obj)}) is registered by '
                'pmsn_mm but not in the API reference: add a '
                'pmsn-registered directive for it to docs/api.rst')


def _collect(app: Sphinx, doctree) -> None:
    """Keep what the document just read listed (for the final check)."""
    env = app.env
    if not hasattr(env, 'pmsn_registered_by_doc'):
        env.pmsn_registered_by_doc = {}
    env.pmsn_registered_by_doc[env.docname] = env.temp_data.pop(
        'pmsn_registered_taken', set())


def _purge(app: Sphinx, env, docname: str) -> None:
    """Forget what a document listed before it is read again."""
    getattr(env, 'pmsn_registered_by_doc', {}).pop(docname, None)


def setup(app: Sphinx) -> dict:
    app.add_directive('pmsn-registered', RegisteredDirective)
    app.connect('doctree-read', _collect)
    app.connect('env-purge-doc', _purge)
    app.connect('env-check-consistency', check_everything_documented)
    return dict(parallel_read_safe=False, parallel_write_safe=True)
