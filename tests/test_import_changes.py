"""What ``import pmsn_mm`` changes outside pmsn_mm: exactly the list of
``tests/_import_changes.py``, which docs/openmmlab.md prints.

One fresh interpreter imports mmengine and mmpretrain (all of mmpretrain's
modules registered), takes a snapshot of everything the import could change
outside pmsn_mm, imports pmsn_mm and compares:

- every name of every registry of mmengine, mmcv and mmpretrain, root
  registries included (by identity);
- every attribute of every loaded module of mmengine, mmcv, mmpretrain,
  torch and timm, and every attribute of every class defined in one (found
  by walking those modules, registered or not; methods by identity);
- ``os.environ``; torch's thread counts, default dtype, grad mode,
  determinism, matmul precision and the random states of torch, numpy and
  ``random``; ``sys.path``, import hooks, exception and display hooks,
  signal handlers, the working directory;
- the level, handlers, propagation and state of every logger (mmengine's
  ``MMLogger`` instances included) and ``logging.disable``;
- the warning filters, added and removed;
- torch's operators (``torch._C._dispatch_get_all_op_names``), its
  ``weights_only`` safe globals, mmengine's file backends and mmpretrain's
  ``ModelHub``.

Then the same process fakes eight side effects an import could have, one at
a time, and shows that the comparison reports each as a change not on the
list (and that undoing it leaves the import's own changes).
"""
import functools
import json
import os.path as osp
import subprocess
import sys
import textwrap
import time
from typing import List, Tuple

import pytest
import yaml

from tests import _import_changes as listed
from tests._configs import REPO

pytestmark = pytest.mark.slow  # pytest -m "not slow" skips it

#: Side effects faked after ``import pmsn_mm``: name -> (code that does it,
#: code that undoes it, the change the comparison must report: kind, key
#: (None: any), change). The code runs with ``saved`` (a dict) at hand.
INJECTIONS = {
    'torch.set_num_threads': (
        "saved['n'] = torch.get_num_threads()\n"
        "torch.set_num_threads(saved['n'] % 2 + 1)",
        "torch.set_num_threads(saved['n'])",
        ('process', 'torch.get_num_threads', 'changed')),
    'an os.environ write': (
        "os.environ['PMSN_MM_INJECTED'] = '1'",
        "del os.environ['PMSN_MM_INJECTED']",
        ('environment variable', 'PMSN_MM_INJECTED', 'added')),
    'a logger level': (
        "saved['level'] = logging.root.level\n"
        'logging.root.setLevel(logging.CRITICAL)',
        "logging.root.setLevel(saved['level'])",
        ('logger', 'root', 'changed')),
    'HistoryBuffer.mean patched': (
        'from mmengine.logging.history_buffer import HistoryBuffer\n'
        "saved['mean'] = HistoryBuffer.__dict__['mean']\n"
        'HistoryBuffer.mean = lambda self, window_size=None: 0.0',
        'from mmengine.logging.history_buffer import HistoryBuffer\n'
        "HistoryBuffer.mean = saved['mean']",
        ('class attribute',
         'mmengine.logging.history_buffer.HistoryBuffer.mean', 'changed')),
    'a new attribute of mmengine.runner': (
        'import mmengine.runner\n'
        'mmengine.runner.pmsn_helper = object()',
        'import mmengine.runner\n'
        'del mmengine.runner.pmsn_helper',
        ('module attribute', 'mmengine.runner.pmsn_helper', 'added')),
    'a removed warning filter': (
        "saved['filter'] = warnings.filters[-1]\n"
        "warnings.filters.remove(saved['filter'])\n"
        'warnings._filters_mutated()',
        "warnings.filters.append(saved['filter'])\n"
        'warnings._filters_mutated()',
        ('warning filter', None, 'removed')),
    'DataSample.set_gt_label patched': (
        'from mmpretrain.structures import DataSample\n'
        "saved['set'] = DataSample.__dict__['set_gt_label']\n"
        "DataSample.set_gt_label = lambda s, v: saved['set'](s, v)",
        'from mmpretrain.structures import DataSample\n'
        "DataSample.set_gt_label = saved['set']",
        ('class attribute',
         'mmpretrain.structures.data_sample.DataSample.set_gt_label',
         'changed')),
    'an upstream registry name replaced': (
        'from mmpretrain.registry import OPTIMIZERS\n'
        "saved['lars'] = OPTIMIZERS.module_dict['LARS']\n"
        "OPTIMIZERS._module_dict['LARS'] = "
        "OPTIMIZERS.module_dict['SyncFreeLARS']",
        'from mmpretrain.registry import OPTIMIZERS\n'
        "OPTIMIZERS._module_dict['LARS'] = saved['lars']",
        ('registry', 'mmpretrain.registry.OPTIMIZERS:LARS', 'replaced')),
}

SCRIPT = textwrap.dedent(r'''
    import collections, hashlib, json, logging, os, random, signal, sys
    import warnings
    import mmengine, mmpretrain, numpy, torch
    from mmengine.fileio.backends import registry_utils
    from mmengine.logging import MMLogger
    from mmengine.registry import Registry
    from mmpretrain.apis.model import ModelHub
    from mmpretrain.utils import register_all_modules
    register_all_modules(init_default_scope=False)
    UPSTREAM = ('mmengine', 'mmcv', 'mmpretrain', 'torch', 'timm')
    WITH_REGISTRIES = ('mmengine', 'mmcv', 'mmpretrain')


    def upstream_modules():
        return {name: module for name, module in list(sys.modules.items())
                if module is not None and name.split('.')[0] in UPSTREAM}


    def where(obj):
        return str(getattr(obj, '__module__', None) or
                   type(obj).__module__)


    def registries(modules):
        """'module.ATTR' (where the registry is defined) -> registry, for
        every registry of the trees of mmengine, mmcv and mmpretrain."""
        labels, roots = {}, {}
        for name, module in modules.items():
            if name.split('.')[0] not in WITH_REGISTRIES:
                continue
            for attr, value in list(vars(module).items()):
                if not isinstance(value, Registry):
                    continue
                rank = (not name.endswith('registry'),
                        len(f'{name}.{attr}'), f'{name}.{attr}')
                labels[id(value)] = min(labels.get(id(value), rank), rank)
                while value.parent is not None:
                    value = value.parent
                roots[id(value)] = value
        out, stack = {}, list(roots.values())
        while stack:
            reg = stack.pop()
            label = labels[id(reg)][2] if id(reg) in labels else \
                f'{reg.scope}:{reg.name}'
            out[label] = reg
            stack.extend(reg.children.values())
        return out


    def classes(modules):
        """Every class defined in an upstream module (nested ones too)."""
        seen, stack = {}, []
        with warnings.catch_warnings():  # deprecated aliases warn
            warnings.simplefilter('ignore')
            for module in modules.values():
                stack.extend(v for v in list(vars(module).values())
                             if isinstance(v, type))
            while stack:
                cls = stack.pop()
                if id(cls) in seen or \
                        where(cls).split('.')[0] not in UPSTREAM:
                    continue
                seen[id(cls)] = cls
                stack.extend(v for v in list(vars(cls).values())
                             if isinstance(v, type))
        return list(seen.values())


    def describe_global(g):
        if isinstance(g, tuple):
            return f'{describe_global(g[0])} as {g[1]}'
        return f'{g.__module__}.{g.__qualname__}'


    def filter_key(f):
        return json.dumps([f[0], getattr(f[1], 'pattern', f[1]),
                           f[2].__name__, getattr(f[3], 'pattern', f[3]),
                           f[4]])


    def loggers():
        manager = logging.root.manager
        named = [('root', logging.root)] + [
            (n, lg) for n, lg in list(manager.loggerDict.items())
            if isinstance(lg, logging.Logger)] + [
            (f'MMLogger:{n}', lg)
            for n, lg in list(MMLogger._instance_dict.items())]
        out = {name: (lg.level, tuple(map(id, lg.handlers)), lg.propagate,
                      lg.disabled) for name, lg in named}
        out['logging.disable'] = manager.disable
        return out


    def digest(state):
        return hashlib.sha1(repr(state).encode()).hexdigest()


    def process_state():
        signals = set(signal.valid_signals()) - {signal.SIGKILL,
                                                 signal.SIGSTOP}
        return {
            'torch.get_num_threads': torch.get_num_threads(),
            'torch.get_num_interop_threads':
            torch.get_num_interop_threads(),
            'torch.get_default_dtype': str(torch.get_default_dtype()),
            'torch.is_grad_enabled': torch.is_grad_enabled(),
            'torch.are_deterministic_algorithms_enabled':
            torch.are_deterministic_algorithms_enabled(),
            'torch.get_float32_matmul_precision':
            torch.get_float32_matmul_precision(),
            'torch random state': digest(torch.get_rng_state().tolist()),
            'numpy random state':
            digest(numpy.random.get_state()[1].tolist()),
            'random state': digest(random.getstate()),
            'sys.path': tuple(sys.path),
            'sys.meta_path': tuple(map(id, sys.meta_path)),
            'sys.path_hooks': tuple(map(id, sys.path_hooks)),
            'sys.excepthook': id(sys.excepthook),
            'sys.displayhook': id(sys.displayhook),
            'sys.stdout, sys.stderr': (id(sys.stdout), id(sys.stderr)),
            'sys.getrecursionlimit': sys.getrecursionlimit(),
            'signal handlers': tuple(id(signal.getsignal(s))
                                     for s in sorted(signals)),
            'os.getcwd': os.getcwd(),
        }


    def snapshot():
        modules = upstream_modules()
        return {
            'modules': set(modules),
            'registry': {label: (reg.scope, dict(reg.module_dict))
                         for label, reg in registries(modules).items()},
            'module attribute': {
                f'{name}.{attr}': value
                for name, module in modules.items()
                for attr, value in list(vars(module).items())
                if attr != '__warningregistry__'},
            'class attribute': {
                f'{where(c)}.{c.__qualname__}.{attr}': value
                for c in classes(modules)
                for attr, value in list(vars(c).items())},
            'environment variable': dict(os.environ),
            'logger': loggers(),
            'process': process_state(),
            'file backend': dict(registry_utils.backends),
            'file backend prefix': dict(registry_utils.prefix_to_backends),
            'warning filter': collections.Counter(
                map(filter_key, warnings.filters)),
            'torch operator': set(torch._C._dispatch_get_all_op_names()),
            'safe global': set(map(describe_global,
                                   torch.serialization.get_safe_globals())),
            'model index': set(ModelHub._models_dict),
        }


    def diff(before, after):
        """[kind, key, change, module of the new value, registry scope]
        for each difference."""
        out = [['upstream module', m, 'loaded', '', '']
               for m in sorted(after['modules'] - before['modules'])]
        for label in sorted(set(before['registry']) | set(after['registry'])):
            scope, old = before['registry'].get(label, ('', None))
            scope, new = after['registry'].get(label, (scope, None))
            if old is None or new is None:
                out.append(['registry', label,
                            'created' if old is None else 'dropped', '',
                            scope])
            old, new = old or {}, new or {}
            for name in sorted(set(old) | set(new)):
                key = f'{label}:{name}'
                if name not in new:
                    out.append(['registry', key, 'removed', '', scope])
                elif name not in old:
                    out.append(['registry', key, 'added', where(new[name]),
                                scope])
                elif new[name] is not old[name]:
                    out.append(['registry', key, 'replaced',
                                where(new[name]), scope])
        for kind in ('module attribute', 'class attribute',
                     'environment variable', 'logger', 'process',
                     'file backend', 'file backend prefix'):
            old, new = before[kind], after[kind]
            by_value = kind in ('environment variable', 'logger', 'process')
            for key in sorted(set(old) | set(new)):
                if key not in new:
                    out.append([kind, key, 'removed', '', ''])
                elif key not in old:
                    out.append([kind, key, 'added', where(new[key]), ''])
                elif new[key] is not old[key] and (
                        not by_value or new[key] != old[key]):
                    out.append([kind, key, 'changed', where(new[key]), ''])
        old, new = before['warning filter'], after['warning filter']
        out += [['warning filter', f, 'added', '', '']
                for f in sorted((new - old).elements())]
        out += [['warning filter', f, 'removed', '', '']
                for f in sorted((old - new).elements())]
        for kind in ('torch operator', 'safe global', 'model index'):
            old, new = before[kind], after[kind]
            out += [[kind, k, 'added', '', ''] for k in sorted(new - old)]
            out += [[kind, k, 'removed', '', ''] for k in sorted(old - new)]
        return out


    injections = json.loads(sys.argv[1])
    before = snapshot()
    import pmsn_mm  # noqa: F401
    out = dict(importing=diff(before, snapshot()), injections={})
    for name, (apply, undo) in injections.items():
        saved = {}
        exec(apply)
        out['injections'][name] = diff(before, snapshot())
        exec(undo)
    out['undone'] = diff(before, snapshot())
    print(json.dumps(out))
''')


@pytest.fixture(scope='module')
def compared() -> dict:
    injections = {name: code[:2] for name, code in INJECTIONS.items()}
    start = time.monotonic()
    out = subprocess.run(
        [sys.executable, '-c', SCRIPT, json.dumps(injections)],
        capture_output=True, text=True, cwd=REPO)
    assert out.returncode == 0, out.stderr[-3000:]
    result = json.loads(out.stdout.strip().splitlines()[-1])
    result['seconds'] = time.monotonic() - start
    return result


@functools.lru_cache(maxsize=None)
def _model_index_names() -> Tuple[str, ...]:
    """The models of the checkout's model index, read here with PyYAML."""
    with open(osp.join(REPO, listed.MODEL_INDEX)) as f:
        metafiles = yaml.safe_load(f)['Import']
    names = []
    for metafile in metafiles:
        with open(osp.join(REPO, metafile)) as f:
            names += [model['Name'] for model in yaml.safe_load(f)['Models']]
    return tuple(names)


def _expected(change: list) -> bool:
    """Whether a difference is one the list allows."""
    kind, key, what, module, scope = change
    if kind == 'registry':
        registry, name = key.rsplit(':', 1)
        if what != 'added' or not module.startswith('pmsn_mm.'):
            return False
        return (name in listed.ROOT_REGISTRY_NAMES.get(registry, ())
                or scope == listed.NEW_NAMES_SCOPE)
    if kind == 'module attribute':
        return key in listed.MODULE_ATTRIBUTES
    if kind == 'logger':  # pmsn_mm's own loggers are pmsn_mm's
        return what == 'added' and key.split('.')[0] == 'pmsn_mm'
    if kind == 'warning filter':
        return what == 'added' and tuple(json.loads(key)) in {
            (*f, 0) for f in listed.WARNING_FILTERS}
    if kind == 'safe global':  # numpy 1.x: numpy.core
        return what == 'added' and key.replace(
            'numpy.core.', 'numpy._core.') in listed.SAFE_GLOBALS
    allowed = {'torch operator': listed.TORCH_OPERATORS,
               'file backend': listed.FILE_BACKENDS,
               'model index': _model_index_names()}
    return what == 'added' and key in allowed.get(kind, ())


def test_the_import_changes_only_what_is_listed(compared):
    surprises = [c for c in compared['importing'] if not _expected(c)]
    assert surprises == []
    print(f"compared in {compared['seconds']:.1f} s")


def test_every_listed_change_happens(compared):
    """The list holds nothing stale: each item is seen, and the model index
    adds every model of model-index.yml."""
    seen = {(c[0], c[1]) for c in compared['importing']}
    items = [('registry', f'{registry}:{name}')
             for registry, names in listed.ROOT_REGISTRY_NAMES.items()
             for name in names]
    items += [('module attribute', a) for a in listed.MODULE_ATTRIBUTES]
    items += [('torch operator', o) for o in listed.TORCH_OPERATORS]
    items += [('file backend', b) for b in listed.FILE_BACKENDS]
    items += [('warning filter', json.dumps([*f, 0]))
              for f in listed.WARNING_FILTERS]
    items += [('model index', m) for m in _model_index_names()]
    assert [i for i in items if i not in seen] == []
    safe = sorted(c[1].replace('numpy.core.', 'numpy._core.')
                  for c in compared['importing'] if c[0] == 'safe global')
    assert safe == sorted(listed.SAFE_GLOBALS)
    scoped = [c for c in compared['importing']
              if c[0] == 'registry' and c[4] == listed.NEW_NAMES_SCOPE]
    assert len(scoped) > 40  # pmsn_mm's classes


def test_no_upstream_name_changes_meaning(compared):
    """pmsn_mm's variants are new names; upstream's stay upstream's."""
    added = {c[1].rsplit(':', 1)[1]: c[1].rsplit(':', 1)[0]
             for c in compared['importing'] if c[0] == 'registry'}
    assert added['SyncFreeLARS'] == 'mmpretrain.registry.OPTIMIZERS'
    assert added['PMSNRunner'] == 'mmengine.registry.RUNNERS'
    for variant in ('SyncFreeSimCLR', 'ModuloHueColorJitter',
                    'CheckedLoadImageFromFile',
                    'CoalescedOptimWrapperConstructor', 'PMSN'):
        assert variant in added
    for upstream in ('LARS', 'SimCLR', 'ColorJitter', 'LoadImageFromFile',
                     'DefaultOptimWrapperConstructor'):
        assert upstream not in added
    # test code registers when imported itself (tests/_profiling)
    assert 'HostCopyHook' not in added


def test_the_listed_filter_is_the_one_installed():
    """The list's filter is upstream_notes' (the code that installs it)."""
    from pmsn_mm.utils.upstream_notes import (MMCV_LITE_WARNING,
                                              MMCV_LITE_WARNING_MODULE)
    assert listed.WARNING_FILTERS == (
        ('ignore', MMCV_LITE_WARNING, 'UserWarning',
         MMCV_LITE_WARNING_MODULE), )


@pytest.mark.parametrize('name', list(INJECTIONS))
def test_each_faked_side_effect_is_caught(compared, name):
    kind, key, what = INJECTIONS[name][2]
    surprises = [c for c in compared['injections'][name]
                 if not _expected(c)]
    assert [c[0] for c in surprises] == [kind], surprises
    assert surprises[0][2] == what
    if key is not None:
        assert surprises[0][1] == key


def test_undoing_the_fakes_leaves_the_imports_changes(compared):
    assert compared['undone'] == compared['importing']


def _doc_lines() -> List[str]:
    """Each item of the list, as docs/openmmlab.md prints it."""
    lines = [f'{registry}: {name}'
             for registry, names in listed.ROOT_REGISTRY_NAMES.items()
             for name in names]
    lines.append(f'{listed.NEW_NAMES_SCOPE} registries: new names, each a '
                 'pmsn_mm class')
    lines.append(f'ModelHub: the models of {listed.MODEL_INDEX}')
    lines += [f'torch operator: {o}' for o in listed.TORCH_OPERATORS]
    lines += [f'module attribute: {a}' for a in listed.MODULE_ATTRIBUTES]
    lines += [f'safe global: {g}' for g in listed.SAFE_GLOBALS]
    lines += [f'file backend: {b}' for b in listed.FILE_BACKENDS]
    lines += [f'warning filter: {a} {c} from {m}: {msg}'
              for a, msg, c, m in listed.WARNING_FILTERS]
    return lines


def test_the_docs_print_the_list():
    """docs/openmmlab.md's section prints every item of the list, in one
    text block, and nothing else there; its prose names the variants with
    their upstream names."""
    with open(osp.join(REPO, 'docs', 'openmmlab.md')) as f:
        text = f.read()
    section = text.split('## What `import pmsn_mm` changes', 1)[1]
    section = section.split('\n## ', 1)[0]
    block = section.split('```text\n', 1)[1].split('```', 1)[0]
    assert block.splitlines() == _doc_lines()
    for words in ('tests/_import_changes.py', 'process-wide',
                  'Nothing else'):
        assert words in section, words
    for variant, upstream in (
            ('SyncFreeLARS', 'LARS'), ('SyncFreeSimCLR', 'SimCLR'),
            ('ModuloHueColorJitter', 'ColorJitter'),
            ('CheckedLoadImageFromFile', 'LoadImageFromFile'),
            ('CoalescedOptimWrapperConstructor',
             'DefaultOptimWrapperConstructor')):
        assert f'`{variant}`' in text and f'`{upstream}`' in text
