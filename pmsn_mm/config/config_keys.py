"""Unknown config keys of pmsn_mm modules: an error that lists the valid ones.

A typo in a config (``prior_wieght=5``) reaches the constructor as a keyword
argument and Python says only ``unexpected keyword argument
'prior_wieght'``. :func:`strict_config_keys` wraps a class's ``__init__`` so
that unknown keyword arguments raise a ``TypeError`` that names the class,
the unknown keys, the closest valid key and every valid key — before the
constructor runs. :func:`apply_strict_config_keys` does this for every class
that pmsn_mm registers into mmpretrain's registries, so new modules get it
without code of their own: ``import pmsn_mm`` calls it once, in
:func:`pmsn_mm.utils.setup_env.register_all_modules`, and from then on the
``__init__`` of every registered pmsn_mm class is this module's wrapper
(``functools.wraps`` of the constructor written in the class's own file,
which nothing in that file shows).

The valid keys are the constructor's named parameters, followed up the MRO
while a constructor forwards ``**kwargs`` to its base. If that chain ends in
an open ``**kwargs`` (``object``; ``torch.nn.Module`` counts as closed, it
refuses keyword arguments itself), any key is accepted and nothing is
checked: a valid config is never refused.
"""
import difflib
import functools
import inspect
from typing import Iterable, Optional, Tuple

from torch import nn

_CHECKED = '__pmsn_config_keys__'


def valid_config_keys(cls: type) -> Optional[Tuple[str, ...]]:
    """The keyword arguments ``cls(...)`` accepts.

    Args:
        cls: A class.

    Returns:
        The names in signature order (own parameters first, then those of
        the bases its ``**kwargs`` reach), or None if any key is accepted.
    """
    names = []
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


def strict_config_keys(cls: type) -> type:
    """Make ``cls(**kwargs)`` refuse unknown keys with the valid ones listed.

    Does nothing if :func:`valid_config_keys` is None. Idempotent.

    Args:
        cls: The class to wrap (its ``__init__`` is replaced in place).

    Returns:
        ``cls``, so this works as a class decorator.
    """
    if cls.__dict__.get(_CHECKED):
        return cls
    valid = valid_config_keys(cls)
    setattr(cls, _CHECKED, True)
    if valid is None:
        return cls
    allowed = frozenset(valid)
    init = cls.__init__

    @functools.wraps(init)
    def __init__(self, *args, **kwargs):
        unknown = kwargs.keys() - allowed
        if unknown:
            raise TypeError(unknown_keys_message(cls, unknown, valid))
        init(self, *args, **kwargs)

    cls.__init__ = __init__
    return cls


def apply_strict_config_keys(prefix: str = 'pmsn_mm.') -> int:
    """Apply :func:`strict_config_keys` to every class registered from
    ``prefix`` modules in mmpretrain's registries.

    Args:
        prefix: Module prefix of the classes to wrap.

    Returns:
        The number of classes looked at.
    """
    from mmengine.registry import Registry
    from mmpretrain import registry as mmpretrain_registry

    count = 0
    for registry in vars(mmpretrain_registry).values():
        if not isinstance(registry, Registry):
            continue
        for cls in list(registry.module_dict.values()):
            if isinstance(cls, type) and cls.__module__.startswith(prefix):
                strict_config_keys(cls)
                count += 1
    return count
