"""Unknown ``type`` names in a config, refused before anything is built
(not as the registry's bare ``KeyError`` mid-build) naming the key path and
the closest registered names (:class:`UnknownConfigTypeError`).

A type counts as known when mmengine could build it with *some* registry
(any registry of mmengine's tree or of a loaded ``*.registry`` module,
after lazy imports; a scoped name in its scope or an ancestor; a dotted
import path that resolves), so a valid config is never refused. The
closest names come from the registries the key path builds from, else
from every registry.
"""
import difflib
import importlib
import sys
from typing import (Any, Dict, Iterable, Iterator, List, Mapping, Optional,
                    Sequence, Set, Tuple)

from .errors import ConfigCheckError

#: Registries a config key (of any depth) builds from: key -> (module, name)
#: of the root registry, whose descendants count too.
NESTED_KEY_REGISTRIES = {
    'init_cfg': ('mmengine.registry', 'WEIGHT_INITIALIZERS'),
    'override': ('mmengine.registry', 'WEIGHT_INITIALIZERS'),
    'pipeline': ('mmengine.registry', 'TRANSFORMS'),
    'transforms': ('mmengine.registry', 'TRANSFORMS'),
    'dataset': ('mmengine.registry', 'DATASETS'),
    'datasets': ('mmengine.registry', 'DATASETS'),
    'sampler': ('mmengine.registry', 'DATA_SAMPLERS'),
    'batch_sampler': ('mmengine.registry', 'DATA_SAMPLERS'),
    'collate_fn': ('mmengine.registry', 'FUNCTIONS'),
    'augments': ('mmpretrain.registry', 'BATCH_AUGMENTS'),
    'optimizer': ('mmengine.registry', 'OPTIMIZERS'),
    'vis_backends': ('mmengine.registry', 'VISBACKENDS'),
    'metrics': ('mmengine.registry', 'METRICS'),
}
#: The same for the config's top-level keys.
TOP_KEY_REGISTRIES = {
    'model': ('mmengine.registry', 'MODELS'),
    'train_cfg': ('mmengine.registry', 'LOOPS'),
    'val_cfg': ('mmengine.registry', 'LOOPS'),
    'test_cfg': ('mmengine.registry', 'LOOPS'),
    'train_evaluator': ('mmengine.registry', 'METRICS'),
    'val_evaluator': ('mmengine.registry', 'METRICS'),
    'test_evaluator': ('mmengine.registry', 'METRICS'),
    'default_hooks': ('mmengine.registry', 'HOOKS'),
    'custom_hooks': ('mmengine.registry', 'HOOKS'),
    'optim_wrapper': ('mmengine.registry', 'OPTIM_WRAPPERS'),
    'param_scheduler': ('mmengine.registry', 'PARAM_SCHEDULERS'),
    'visualizer': ('mmengine.registry', 'VISUALIZERS'),
    'log_processor': ('mmengine.registry', 'LOG_PROCESSORS'),
    'model_wrapper_cfg': ('mmengine.registry', 'MODEL_WRAPPERS'),
    'strategy': ('mmengine.registry', 'STRATEGIES'),
}
#: How many closest names the message lists.
MAX_CLOSE = 5

Path = Tuple[Any, ...]


class UnknownConfigTypeError(ConfigCheckError, KeyError):
    """A config names a ``type`` that no registry knows.

    A ``KeyError``, as the registry's own error that it replaces (code that
    catches that one catches this one), printed without ``KeyError``'s quotes.

    Args:
        message: The error text.
        problems: ``(key path, type, closest names)`` of every unknown type.
    """

    def __init__(self, message: str,
                 problems: Sequence[Tuple[str, str, Tuple[str, ...]]] = ()):
        super().__init__(message)
        self.message = message
        self.problems = list(problems)

    def __str__(self) -> str:
        return self.message


def format_key_path(path: Path) -> str:
    """``('model', 'head', 0)`` -> ``'model.head[0]'``.

    Args:
        path: Keys (str) and list positions (int) from the config's top.
    """
    text = ''
    for part in path:
        if isinstance(part, int):
            text += f'[{part}]'
        else:
            text += f'.{part}' if text else str(part)
    return text


def iter_config_types(node: Any, path: Path = ()) -> Iterator[
        Tuple[Path, str]]:
    """Every string ``type`` in a config tree, depth first.

    Args:
        node: A ``Config``, dict, list or tuple (anything else: no types).
        path: The key path of ``node``.

    Yields:
        The key path of each dict with a string ``type`` and that type.
    """
    from mmengine.config import Config
    if isinstance(node, Config):
        node = dict(node.items())
    if isinstance(node, Mapping):
        value = node.get('type')
        if isinstance(value, str):
            yield path, value
        for key, child in node.items():
            if key != 'type':
                yield from iter_config_types(child, path + (key, ))
    elif isinstance(node, (list, tuple)):
        for index, child in enumerate(node):
            yield from iter_config_types(child, path + (index, ))


def _registry_tree() -> List[Any]:
    """Every registry: the trees of mmengine's root registries and of the
    registries that loaded ``*.registry`` modules define, each with its
    modules imported (``import_from_location``)."""
    from mmengine.registry import Registry

    seen: Dict[int, Any] = {}
    while True:
        found: List[Any] = []
        for name, module in list(sys.modules.items()):
            if module is None or not (name == 'registry' or name.endswith(
                    '.registry') or name == 'mmengine.registry.root'):
                continue
            found.extend(value for value in list(vars(module).values())
                         if isinstance(value, Registry))
        stack = []
        for registry in found:
            while registry.parent is not None:
                registry = registry.parent
            stack.append(registry)
        new = []
        while stack:
            registry = stack.pop()
            if id(registry) in seen:
                continue
            seen[id(registry)] = registry
            new.append(registry)
            stack.extend(registry.children.values())
        if not new:
            return list(seen.values())
        for registry in new:  # may import modules that define registries
            try:
                registry.import_from_location()
            except Exception:  # noqa: BLE001  the build would say why
                pass


def registry_descendants(registry: Any) -> List[Any]:
    """A registry and every registry below it (mmengine's ``children``).

    Args:
        registry: An mmengine ``Registry``.

    Returns:
        The registries, the given one first.
    """
    out, stack = [], [registry]
    while stack:
        node = stack.pop()
        out.append(node)
        stack.extend(node.children.values())
    return out


def _names(registries: Sequence[Any]) -> Set[str]:
    return {name for registry in registries for name in registry.module_dict}


def _with_ancestors(registries: Sequence[Any]) -> List[Any]:
    out = []
    for registry in registries:
        while registry is not None:
            out.append(registry)
            registry = registry.parent
    return out


def _import_quietly(module: str) -> None:
    try:
        importlib.import_module(module)
    except Exception:  # noqa: BLE001  not a package with registries
        pass


def _resolves(value: str) -> bool:
    """Whether ``Registry.get``'s fallback finds a dotted import path."""
    from mmengine.utils import get_object_from_string
    try:
        return get_object_from_string(value) is not None
    except Exception:  # noqa: BLE001
        return False


def preferred_registry(path: Path) -> Optional[Tuple[str, str]]:
    """The registry a dict at ``path`` most likely builds from.

    Args:
        path: The dict's key path.

    Returns:
        ``(module, name)`` of the root registry, or None if the key path
        does not tell.
    """
    found = None
    for depth, part in enumerate(path):
        if isinstance(part, int):
            continue
        if depth == 0 and part in TOP_KEY_REGISTRIES:
            found = TOP_KEY_REGISTRIES[part]
        elif part in NESTED_KEY_REGISTRIES:
            found = NESTED_KEY_REGISTRIES[part]
        elif part.endswith(('norm_cfg', 'act_cfg', 'conv_cfg')):
            found = ('mmengine.registry', 'MODELS')
    return found


def closest_names(name: str, names: Iterable[str],
                  n: int = MAX_CLOSE) -> List[str]:
    """The registered names closest to ``name`` (case-insensitive difflib).

    Args:
        name: The unknown name.
        names: Candidate names.
        n: At most this many.
    """
    by_lower: Dict[str, str] = {}
    for candidate in sorted(names):
        by_lower.setdefault(candidate.lower(), candidate)
    return [
        by_lower[match] for match in difflib.get_close_matches(
            name.lower(), list(by_lower), n=n, cutoff=0.6)
    ]


def unknown_type_line(key: str, value: str, close: Sequence[str],
                      kind: Optional[str]) -> str:
    """One unknown type, e.g. ``model.head.prior.type='PowerLawPriorr' is
    not a registered type (did you mean 'PowerLawPrior'?); closest model
    names: PowerLawPrior, UniformPrior``.

    Args:
        key: The key path of the ``type``.
        value: The unknown type.
        close: The closest registered names (with the value's scope).
        kind: Their registry (``'model'``), or None for every registry.
    """
    if not close:
        return (f'{key}={value!r} is not a registered type; no registered '
                'name is close to it')
    where = f'closest {kind} names' if kind else 'closest registered names'
    return (f'{key}={value!r} is not a registered type (did you mean '
            f'{close[0]!r}?); {where}: {", ".join(close)}')


def check_config_types(cfg: Any) -> None:
    """Refuse a config whose ``type`` names are in no registry (after
    importing ``custom_imports`` and the scopes' ``registry`` modules).

    Args:
        cfg: A loaded ``mmengine.config.Config`` (or a mapping).

    Raises:
        UnknownConfigTypeError: naming the key path of every unknown type,
            the type and the closest registered names.
    """
    found = list(iter_config_types(cfg))
    custom = cfg.get('custom_imports')
    if isinstance(custom, Mapping) and custom.get('imports'):
        from mmengine.utils import import_modules_from_strings
        import_modules_from_strings(**custom)
    scopes = {value.split('.', 1)[0] for _, value in found if '.' in value}
    default_scope = cfg.get('default_scope')
    if isinstance(default_scope, str):
        scopes.add(default_scope)
    for scope in sorted(scopes):
        if scope.isidentifier():
            _import_quietly(f'{scope}.registry')
    registries = _registry_tree()
    everything = _names(registries)
    by_scope: Dict[str, List[Any]] = {}
    for registry in registries:
        by_scope.setdefault(registry.scope, []).append(registry)

    problems = []
    for path, value in found:
        scope, _, name = value.partition('.')
        in_scope: Set[str] = set()
        if not name:  # not scoped
            if value in everything:
                continue
            scope, name = '', value
        else:
            in_scope = _names(_with_ancestors(by_scope.get(scope, [])))
            if name in in_scope or _resolves(value):
                continue
        preferred = preferred_registry(path)
        kind, close = None, []
        if preferred is not None:
            module = sys.modules.get(preferred[0])
            root = getattr(module, preferred[1], None)
            if root is not None:
                kind = root.name
                close = closest_names(name, _names(registry_descendants(root)))
        if not close:
            kind, close = None, closest_names(name, everything)
        # keep the scope where the name is found through it
        close = [f'{scope}.{match}' if match in in_scope else match
                 for match in close]
        problems.append((format_key_path(path + ('type', )), value,
                         tuple(close), kind))
    if not problems:
        return
    lines = [unknown_type_line(*problem) for problem in problems]
    advice = ('Check the spelling, or add the package that registers the '
              'type to custom_imports.')
    if len(lines) == 1:
        message = f'{lines[0]}. {advice}'
    else:
        message = (f'{len(lines)} unknown types in the config:\n' +
                   '\n'.join(f'  {line}' for line in lines) + f'\n{advice}')
    raise UnknownConfigTypeError(
        message, [problem[:3] for problem in problems])
