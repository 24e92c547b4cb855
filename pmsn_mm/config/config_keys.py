"""Unknown config keys (``prior_wieght=5``), refused before anything is
built, naming the key path and the valid keys: :func:`check_config_keys`
compares every dict a registry builds as ``cls(**cfg)`` with what the class
accepts (:func:`valid_config_keys`: up the MRO through ``**kwargs``; an
open ``**kwargs`` accepts any key). Dicts their own builders read
(``init_cfg``, ...) are not checked; keys a builder consumes itself (a
hook's ``priority``, ...) count as valid.
"""
import difflib
import inspect
import sys
from typing import Any, Iterable, List, Mapping, Optional, Tuple

from torch import nn

from .config_types import (TOP_KEY_REGISTRIES, format_key_path,
                           iter_config_types, preferred_registry,
                           registry_descendants)
from .errors import ConfigCheckError

#: Keys whose dicts their own builders read (``build_norm_layer``,
#: mmengine's ``initialize``, the ``policies`` that mmpretrain's
#: ``RandAugment`` rewrites, ...), not ``cls(**cfg)``; nothing under them
#: is checked. Any other key ending in ``_cfg``/``_cfgs`` below the top
#: level is skipped too.
UNCHECKED_KEYS = frozenset({'init_cfg', 'override', 'policies'})
#: Top-level ``*_cfg`` keys whose dict is built as ``cls(**cfg)``.
BUILT_TOP_CFGS = frozenset({'train_cfg', 'val_cfg', 'test_cfg'})
#: Keys mmengine's ``build_scheduler_from_cfg`` consumes itself.
SCHEDULER_BUILDER_KEYS = frozenset({'convert_to_iter_based'})
#: Keys the runner takes out of a hook's dict (``Runner.register_hook``).
HOOK_RUNNER_KEYS = frozenset({'priority'})
#: Keys a model pops from a sub-model's dict (mmpretrain's multimodal).
SUBMODEL_PARENT_KEYS = frozenset({'pretrained'})
#: Dataloader keys ``Runner.build_dataloader`` reads (not ``DataLoader``).
DATALOADER_RUNNER_KEYS = frozenset({'dataset', 'sampler', 'batch_sampler',
                                    'collate_fn', 'num_batch_per_epoch',
                                    'worker_init_fn'})
#: ``optim_wrapper`` keys its builder and constructor take out.
OPTIM_WRAPPER_KEYS = frozenset({'constructor', 'paramwise_cfg', 'optimizer'})


class UnknownConfigKeyError(ConfigCheckError, TypeError):
    """A config gives a class keys its constructor does not take.

    A ``TypeError``, as Python's own error that it replaces.

    Args:
        message: The error text.
        problems: ``(key path, class, unknown keys, valid keys)`` per dict.
    """

    def __init__(self, message: str,
                 problems: Iterable[Tuple[str, str, Tuple[str, ...],
                                          Tuple[str, ...]]] = ()):
        super().__init__(message)
        self.problems = list(problems)


def valid_config_keys(cls: type) -> Optional[Tuple[str, ...]]:
    """The keyword arguments ``cls(...)`` accepts.

    Args:
        cls: A class.

    Returns:
        The names in signature order (own parameters first, then those of
        the bases its ``**kwargs`` reach), or None if any key is accepted.
    """
    names: List[str] = []
    for klass in cls.__mro__:
        init = klass.__dict__.get('__init__')
        if init is None:
            continue
        if klass is object:
            return None
        if klass is nn.Module:  # refuses any keyword argument itself
            return tuple(names)
        try:
            params = list(
                inspect.signature(inspect.unwrap(init)).parameters.values())
        except (TypeError, ValueError):  # builtins without a signature
            return None
        forwards = False
        for param in params[1:]:  # skip self
            if param.kind == param.VAR_KEYWORD:
                forwards = True
            elif (param.kind in (param.POSITIONAL_OR_KEYWORD,
                                 param.KEYWORD_ONLY)
                  and param.name not in names):
                names.append(param.name)
        if not forwards:
            return tuple(names)
    return None


def unknown_keys_message(cls: type, unknown: Iterable[str],
                         valid: Tuple[str, ...]) -> str:
    """The error text for unknown config keys of ``cls``.

    Args:
        cls: The configured class.
        unknown: The unknown keys.
        valid: The valid keys.
    """
    unknown = sorted(unknown)
    hints = [(key, match[0]) for key in unknown
             for match in [difflib.get_close_matches(key, valid, n=1)]
             if match]
    if len(unknown) == 1 and hints:
        hint = f' (did you mean {hints[0][1]!r}?)'
    elif hints:
        hint = ' (did you mean ' + ', '.join(
            f'{match!r} for {key!r}' for key, match in hints) + '?)'
    else:
        hint = ''
    listed = (f'valid keys: {", ".join(valid)}.'
              if valid else 'it takes no config keys.')
    return (f'{cls.__name__} got unknown config key(s) {unknown}{hint}; '
            f'{listed}')


def _checked_path(path: Tuple[Any, ...]) -> bool:
    """Whether the dict at ``path`` is built as ``cls(**cfg)``: under a
    top-level key the runner builds (``model``, the dataloaders, hooks,
    loops, ...; not a helper variable such as ``train_pipeline``), and not
    under a key that its own builder reads."""
    if not path or not isinstance(path[0], str) or not (
            path[0] in TOP_KEY_REGISTRIES or path[0].endswith('_dataloader')):
        return False
    for depth, part in enumerate(path):
        if not isinstance(part, str):
            continue
        if part in UNCHECKED_KEYS:
            return False
        if part.endswith(('_cfg', '_cfgs')) and not (
                depth == 0 and part in BUILT_TOP_CFGS):
            return False
    return True


def _registry_for(path: Tuple[Any, ...], scope: str) -> Optional[Any]:
    """The registry the runner builds the dict at ``path`` with: the
    descendant of the key's root registry for ``scope`` (or the root)."""
    preferred = preferred_registry(path)
    if preferred is None or preferred[1] == 'WEIGHT_INITIALIZERS':
        return None
    root = getattr(sys.modules.get(preferred[0]), preferred[1], None)
    if root is None:
        return None
    stack = [root]
    while stack:
        registry = stack.pop()
        if registry.scope == scope:
            return registry
        stack.extend(registry.children.values())
    return root


def _resolve(registry: Any, name: str) -> Optional[type]:
    """The class ``registry.get(name)`` returns, or None (not found, not a
    class; the type check reports unknown names)."""
    try:
        found = registry.get(name)
    except Exception:  # noqa: BLE001  a failed lazy import: the build says
        return None
    return found if isinstance(found, type) else None


def _extra_keys(path: Tuple[Any, ...], node: Mapping, registry: Any,
                scope: str) -> Optional[frozenset]:
    """Keys the builder of the dict at ``path`` consumes itself; None when
    the dict is not built as ``cls(**cfg)`` at all."""
    from mmengine.registry import HOOKS, PARAM_SCHEDULERS
    root = registry
    while root.parent is not None:
        root = root.parent
    if root is PARAM_SCHEDULERS:
        return SCHEDULER_BUILDER_KEYS
    if root is HOOKS:
        return HOOK_RUNNER_KEYS
    if path == ('optim_wrapper', ):
        constructor = _optim_constructor(node, scope)
        if constructor is None:
            return None
        return OPTIM_WRAPPER_KEYS | frozenset(
            getattr(constructor, 'wrapper_keys', ()))
    if path[0] == 'model' and len(path) > 1:
        return SUBMODEL_PARENT_KEYS
    return frozenset()


def _optim_constructor(node: Mapping, scope: str) -> Optional[type]:
    """The optimizer-wrapper constructor class of ``optim_wrapper`` when it
    is mmengine's default one or a subclass (whose keys are known)."""
    from mmengine.optim import DefaultOptimWrapperConstructor
    from mmengine.registry import OPTIM_WRAPPER_CONSTRUCTORS
    name = node.get('constructor', 'DefaultOptimWrapperConstructor')
    if not isinstance(name, str):
        return None
    registry = OPTIM_WRAPPER_CONSTRUCTORS
    for child in registry_descendants(OPTIM_WRAPPER_CONSTRUCTORS):
        if child.scope == scope:
            registry = child
    cls = _resolve(registry, name)
    if cls is None or not issubclass(cls, DefaultOptimWrapperConstructor):
        return None
    return cls


def _node_at(cfg: Any, path: Tuple[Any, ...]) -> Mapping:
    node = cfg
    for part in path:
        node = node[part]
    return node


def config_key_problems(cfg: Any) -> List[Tuple[str, str, Tuple[str, ...],
                                                Tuple[str, ...]]]:
    """Every dict of ``cfg`` with keys its class does not take.

    Args:
        cfg: A loaded ``mmengine.config.Config`` (or mapping) whose types were
            checked (:func:`~pmsn_mm.config.config_types.check_config_types`).

    Returns:
        ``(key path, class name, unknown keys, valid keys)`` per such dict.
    """
    from mmengine.config import Config
    tree = dict(cfg.items()) if isinstance(cfg, Config) else cfg
    default_scope = cfg.get('default_scope') or 'mmengine'
    found = list(iter_config_types(tree))
    wrapper = tree.get('optim_wrapper')
    if isinstance(wrapper, Mapping) and 'type' not in wrapper:
        found.append((('optim_wrapper', ), 'OptimWrapper'))
    problems = []
    for path, value in found:
        if not _checked_path(path):
            continue
        node = _node_at(tree, path)
        scope = node.get('_scope_') or default_scope
        if '.' in value and value.split('.', 1)[0].isidentifier():
            scope = value.split('.', 1)[0]
        registry = _registry_for(path, scope)
        if registry is None:
            continue
        cls = _resolve(registry, value)
        if cls is None:
            continue
        valid = valid_config_keys(cls)
        extra = _extra_keys(path, node, registry, scope)
        if valid is None or extra is None:
            continue
        unknown = set(node) - {'type', '_scope_'} - set(valid) - extra
        if unknown:
            # what the builders take too, but a parent model's own keys
            accepted = valid + tuple(
                sorted(extra - set(valid) - SUBMODEL_PARENT_KEYS))
            problems.append((format_key_path(path), cls.__name__,
                             tuple(sorted(unknown)), accepted))
    problems.extend(_dataloader_problems(tree))
    return problems


def _dataloader_problems(tree: Mapping) -> List[Tuple[str, str,
                                                      Tuple[str, ...],
                                                      Tuple[str, ...]]]:
    """The keys of the dataloader dicts (``*_dataloader``, no ``type``)
    that neither mmengine's runner nor torch's ``DataLoader`` takes."""
    from torch.utils.data import DataLoader
    valid = tuple(name for name in inspect.signature(
        DataLoader.__init__).parameters if name != 'self')
    accepted = valid + tuple(sorted(DATALOADER_RUNNER_KEYS - set(valid)))
    problems = []
    for name, loader in tree.items():
        if not (isinstance(name, str) and name.endswith('_dataloader')
                and isinstance(loader, Mapping) and 'type' not in loader):
            continue
        unknown = set(loader) - set(accepted) - {'_scope_'}
        if unknown:
            problems.append((name, 'DataLoader', tuple(sorted(unknown)),
                             accepted))
    return problems


def check_config_keys(cfg: Any) -> None:
    """Refuse a config that gives a class keys its constructor does not
    take, before anything is built.

    Args:
        cfg: A loaded ``mmengine.config.Config`` whose types were checked
            by :func:`~pmsn_mm.config.config_types.check_config_types`.

    Raises:
        UnknownConfigKeyError: Naming, for every such dict, its key path, the
            class, the unknown keys, the closest valid key and every valid key.
    """
    problems = config_key_problems(cfg)
    if not problems:
        return
    lines = [
        f'{path}: ' + unknown_keys_message(type(name, (), {}), unknown, valid)
        for path, name, unknown, valid in problems
    ]
    if len(lines) == 1:
        message = lines[0]
    else:
        message = (f'{len(lines)} config entries with unknown keys:\n' +
                   '\n'.join(f'  {line}' for line in lines))
    raise UnknownConfigKeyError(message, problems)


def check_config(cfg: Any) -> None:
    """Every check of a config before it runs: unknown ``type`` names,
    unknown keys, numbers stated twice.

    Args:
        cfg: A loaded, merged ``mmengine.config.Config``.

    Raises:
        UnknownConfigTypeError, UnknownConfigKeyError, ValueError: see
        :func:`~pmsn_mm.config.config_types.check_config_types`,
        :func:`check_config_keys` and
        :func:`~pmsn_mm.config.config_values.check_config_values`.
    """
    from .config_types import check_config_types
    from .config_values import check_config_values
    check_config_types(cfg)
    check_config_keys(cfg)
    check_config_values(cfg)


__all__ = [
    'UnknownConfigKeyError', 'check_config', 'check_config_keys',
    'config_key_problems', 'unknown_keys_message', 'valid_config_keys'
]
