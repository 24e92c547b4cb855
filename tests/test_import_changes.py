"""What ``import pmsn_mm`` changes outside pmsn_mm: the list of
docs/openmmlab.md ("What ``import pmsn_mm`` changes") and nothing else.

One fresh interpreter imports mmengine and mmpretrain (with all of
mmpretrain's modules registered), takes a snapshot of everything the
import could change — every name every registry of the tree resolves, the
classes they resolve to, every public attribute of the upstream packages'
loaded modules, the warning filters, torch's safe globals, mmengine's file
backends, mmpretrain's model index — imports pmsn_mm, and compares.
"""
import json
import subprocess
import sys
import textwrap

import pytest

pytestmark = pytest.mark.slow  # pytest -m "not slow" skips it

SCRIPT = textwrap.dedent('''
    import json, sys, warnings
    import mmengine, mmpretrain, torch
    from mmengine.registry import Registry
    from mmpretrain.utils import register_all_modules
    register_all_modules(init_default_scope=False)
    UPSTREAM = ('mmengine', 'mmpretrain', 'mmcv', 'torch', 'timm')

    def tree():
        roots = {}
        for name, module in list(sys.modules.items()):
            if module is None or not name.endswith('registry'):
                continue
            for value in list(vars(module).values()):
                if isinstance(value, Registry):
                    while value.parent is not None:
                        value = value.parent
                    roots[id(value)] = value
        out, stack = [], list(roots.values())
        while stack:
            reg = stack.pop()
            out.append(reg)
            stack.extend(reg.children.values())
        return out

    def resolved():
        """(scope, registry, name) -> the object Registry.get finds."""
        out = {}
        for reg in tree():
            chain, node = [], reg
            while node is not None:
                chain.append(node)
                node = node.parent
            for node in reversed(chain):  # nearer registries win
                for name, obj in node.module_dict.items():
                    out[(reg.scope, reg.name, name)] = obj
        return out

    def module_attrs():
        out = {}
        for name, module in list(sys.modules.items()):
            if module is None or name.split('.')[0] not in UPSTREAM:
                continue
            for attr, value in list(vars(module).items()):
                if not attr.startswith('__'):
                    out[(name, attr)] = value
        return out

    def class_dicts(objects):
        return {id(c): dict(vars(c)) for c in objects if isinstance(c, type)}

    def describe(g):
        if isinstance(g, tuple):
            return f'{describe(g[0])} as {g[1]}'
        return f'{g.__module__}.{g.__qualname__}'

    def safe_globals():
        return [describe(g) for g in torch.serialization.get_safe_globals()]

    from mmengine.fileio.backends import registry_utils
    from mmpretrain.apis.model import ModelHub
    before = resolved()
    attrs = module_attrs()
    classes = class_dicts(before.values())
    filters = list(warnings.filters)
    globals_before = safe_globals()
    backends = dict(registry_utils.backends)
    models = set(ModelHub._models_dict)

    import pmsn_mm  # noqa: F401

    after = resolved()
    changed = sorted('/'.join(map(str, k)) for k, v in before.items()
                     if after.get(k) is not v)
    added = sorted({k[2] for k in set(after) - set(before)})
    added_modules = sorted({after[k].__module__.split('.')[0]
                            for k in set(after) - set(before)})
    # torch's add_safe_globals rebinds its set: compared as new_globals
    allow_list = ('torch._weights_only_unpickler', '_marked_safe_globals_set')
    rebound = sorted(f'{m}.{a}' for (m, a), v in attrs.items()
                     if sys.modules.get(m) is not None and (m, a) != allow_list
                     and vars(sys.modules[m]).get(a, v) is not v)
    touched = sorted(c.__qualname__ for c in before.values()
                     if isinstance(c, type)
                     and dict(vars(c)) != classes[id(c)])
    new_filters = [(f[0], f[1].pattern if f[1] else None, f[2].__name__,
                    f[3].pattern if f[3] else None, f[4])
                   for f in warnings.filters if f not in filters]
    print(json.dumps(dict(
        changed=changed, added=added, added_modules=added_modules,
        rebound=rebound, touched=touched, new_filters=new_filters,
        new_globals=[g for g in safe_globals() if g not in globals_before],
        new_backends=sorted(set(registry_utils.backends) - set(backends)),
        new_models=sorted(set(ModelHub._models_dict) - models))))
''')


@pytest.fixture(scope='module')
def changes() -> dict:
    out = subprocess.run([sys.executable, '-c', SCRIPT], capture_output=True,
                         text=True)
    assert out.returncode == 0, out.stderr[-3000:]
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_no_upstream_name_changes_meaning(changes):
    """Every name of every registry resolves to the same object after the
    import; every added name is pmsn_mm's."""
    assert changes['changed'] == []
    assert changes['added_modules'] == ['pmsn_mm']
    for variant in ('SyncFreeLARS', 'SyncFreeSimCLR', 'ModuloHueColorJitter',
                    'CheckedLoadImageFromFile',
                    'CoalescedOptimWrapperConstructor', 'PMSN'):
        assert variant in changes['added']
    for upstream in ('LARS', 'SimCLR', 'ColorJitter', 'LoadImageFromFile',
                     'DefaultOptimWrapperConstructor'):
        assert upstream not in changes['added']


def test_no_upstream_class_or_module_attribute_is_changed(changes):
    assert changes['touched'] == []
    assert changes['rebound'] == []


def test_the_one_warning_filter(changes):
    """mmcv-lite's MultiScaleDeformableAttention import warning, exactly."""
    from pmsn_mm.utils.upstream_notes import (MMCV_LITE_WARNING,
                                              MMCV_LITE_WARNING_MODULE)
    assert changes['new_filters'] == [[
        'ignore', MMCV_LITE_WARNING, 'UserWarning', MMCV_LITE_WARNING_MODULE,
        0
    ]]


def test_the_checkpoint_allow_list(changes):
    """torch's process-wide safe globals gain exactly the types of
    mmengine checkpoints (pmsn_mm.engine.checkpoint)."""
    from pmsn_mm.engine.checkpoint import checkpoint_safe_globals

    def describe(g):
        if isinstance(g, tuple):
            return f'{describe(g[0])} as {g[1]}'
        return f'{g.__module__}.{g.__qualname__}'

    assert sorted(changes['new_globals']) == sorted(
        describe(g) for g in checkpoint_safe_globals())
    assert ('pmsn_mm.engine.checkpoint.restricted_getattr as '
            'builtins.getattr') in changes['new_globals']
    assert any('HistoryBuffer' in g for g in changes['new_globals'])


def test_the_file_backend_and_the_model_index(changes):
    assert changes['new_backends'] == ['atomic_local']
    assert changes['new_models'] and all(
        name.startswith(('pmsn', 'pswav', 'vicreg', 'simclr', 'data2vec',
                         'mae', 'msn')) for name in changes['new_models'])


def test_docs_list_what_the_import_changes():
    """docs/openmmlab.md names each change the test above finds, and the
    variants with their upstream names."""
    import os.path as osp

    from tests._configs import REPO
    with open(osp.join(REPO, 'docs', 'openmmlab.md')) as f:
        text = f.read()
    section = text.split('## What `import pmsn_mm` changes', 1)[1]
    section = section.split('\n## ', 1)[0]
    for words in ('registry names', 'model index', 'atomic_local',
                  'allow-list', 'process-wide',
                  'MultiScaleDeformableAttention', 'Nothing else'):
        assert words in section, words
    for variant, upstream in (
            ('SyncFreeLARS', 'LARS'), ('SyncFreeSimCLR', 'SimCLR'),
            ('ModuloHueColorJitter', 'ColorJitter'),
            ('CheckedLoadImageFromFile', 'LoadImageFromFile'),
            ('CoalescedOptimWrapperConstructor',
             'DefaultOptimWrapperConstructor')):
        assert f'`{variant}`' in text and f'`{upstream}`' in text
