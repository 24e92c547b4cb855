"""``mim train/test/run pmsn_mm ...`` from the built wheel in a fresh venv.

The wheel is built from a copy of the checkout's build inputs (setup.py's
``build_py`` copies ``configs/``, ``tools/`` and ``model-index.yml`` into
``pmsn_mm/.mim``, where openmim looks for them) and installed without
dependencies into a new venv. That venv reuses this environment's packages
(torch, mmpretrain, openmim, ...) through a ``.pth`` line naming our
site-packages, so nothing is downloaded; the checkout's editable pmsn_mm
stays invisible there, because ``.pth`` files of a directory added that way
are not processed (the editable finder is one). ``mim`` runs as the console
script pip would write, so openmim uses the venv's python (its
``sys.executable``) for the tools.
"""
import glob
import importlib.util
import json
import os
import os.path as osp
import re
import shutil
import subprocess
import sys
import sysconfig
import types

import mmpretrain
import pytest
import torch
import yaml
from mmengine.config import Config

from tests._configs import REPO

pytestmark = pytest.mark.slow  # pytest -m "not slow" skips it

#: What ``pip wheel`` reads from the checkout (MANIFEST.in ships the same).
BUILD_INPUTS = ('setup.py', 'MANIFEST.in', 'README.md', 'requirements.txt',
                'requirements', 'pmsn_mm', 'configs', 'tools',
                'model-index.yml')
TOY = 'pmsn_vit-mini-p4_1xb64-cpu-toy_power-law-overlay.py'
#: The toy config at test size: 2 iterations of batch 4, a 64-image kNN
#: memory and 64 queries, validated at the last iteration.
TOY_OPTIONS = {
    'train_cfg.max_iters': 2,
    'train_cfg.val_interval': 2,
    'train_dataloader.batch_size': 4,
    'train_dataloader.dataset.num_samples': 64,
    'val_dataloader.batch_size': 32,
    'val_dataloader.dataset.memory.num_samples': 64,
    'val_dataloader.dataset.query.num_samples': 64,
    'default_hooks.logger.interval': 1,
}
#: One query of 64, in percent: kNN top-1 of the same weights may differ by
#: one near-tie between two processes.
ONE_QUERY = 100 / 64


def _run(env, *args, cwd):
    out = subprocess.run(list(args), cwd=cwd, env=env.vars,
                         capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
    return out.stdout + out.stderr


@pytest.fixture(scope='module')
def wheel_env(tmp_path_factory):
    """A venv with the wheel installed: python, mim and site-packages."""
    assert importlib.util.find_spec('mim'), (
        "openmim is missing: pip install -e '.[tests]'")
    root = tmp_path_factory.mktemp('wheel_env')
    src = root / 'src'
    skip = shutil.ignore_patterns('__pycache__', '*.pyc', '*.egg-info')
    for name in BUILD_INPUTS:
        path = osp.join(REPO, name)
        if osp.isdir(path):
            shutil.copytree(path, src / name, ignore=skip)
        else:
            os.makedirs(src, exist_ok=True)
            shutil.copyfile(path, src / name)
    subprocess.run([sys.executable, '-m', 'pip', 'wheel', '--no-deps',
                    '--no-build-isolation', '--no-index', '-q', str(src),
                    '-w', str(root / 'dist')], check=True, cwd=root)
    (wheel, ) = glob.glob(str(root / 'dist' / 'pmsn_mm-*.whl'))
    venv = root / 'venv'
    subprocess.run([sys.executable, '-m', 'venv', '--without-pip',
                    str(venv)], check=True)
    python = str(venv / 'bin' / 'python')
    site = subprocess.run(
        [python, '-c', 'import sysconfig; '
         "print(sysconfig.get_paths()['purelib'])"],
        check=True, capture_output=True, text=True).stdout.strip()
    ours = {sysconfig.get_paths()[k] for k in ('purelib', 'platlib')}
    with open(osp.join(site, '_reuse_test_env.pth'), 'w') as f:
        f.write('\n'.join(sorted(ours)) + '\n')
    env = dict(os.environ, OMP_NUM_THREADS='1')
    env.pop('PYTHONPATH', None)
    # pip comes from the reused site-packages and installs into this venv
    subprocess.run([python, '-m', 'pip', 'install', '--no-deps', '--no-index',
                    '--ignore-installed', '-q', wheel], check=True, env=env,
                   cwd=root)
    mim = str(venv / 'bin' / 'mim')
    with open(mim, 'w') as f:  # what pip writes for openmim's entry point
        f.write(f'#!{python}\nimport sys\nfrom mim.cli import cli\n'
                'sys.exit(cli())\n')
    os.chmod(mim, 0o755)
    return types.SimpleNamespace(python=python, mim=mim, site=site,
                                 root=root, vars=env)


def test_wheel_is_the_installed_pmsn_mm(wheel_env):
    out = _run(wheel_env, wheel_env.python, '-c',
               'import json, pmsn_mm, mmpretrain; print(pmsn_mm.__file__); '
               "print(json.dumps(mmpretrain.list_models('*pmsn*')))",
               cwd=wheel_env.root)
    lines = out.strip().splitlines()
    assert lines[-2] == osp.join(wheel_env.site, 'pmsn_mm', '__init__.py')
    # the model index shipped in .mim is registered: the checkout's names
    names = json.loads(lines[-1])
    assert names and names == mmpretrain.list_models('*pmsn*')
    mim_dir = osp.join(wheel_env.site, 'pmsn_mm', '.mim')
    assert osp.isfile(osp.join(mim_dir, 'model-index.yml'))
    assert osp.isfile(osp.join(mim_dir, 'tools', 'train.py'))
    assert osp.isfile(osp.join(mim_dir, 'configs', 'pmsn', TOY))


def test_mim_train_test_run(wheel_env, tmp_path):
    """Train the packaged toy config by name, test its checkpoint, and run
    the model converter, each through ``mim``."""
    train_dir = tmp_path / 'train'
    out = _run(wheel_env, wheel_env.mim, 'train', 'pmsn_mm', TOY,
               '--work-dir', str(train_dir), '--cfg-options',
               *(f'{k}={v}' for k, v in TOY_OPTIONS.items()),
               cwd=tmp_path)
    mim_tools = osp.join(wheel_env.site, 'pmsn_mm', '.mim', 'tools')
    packaged = osp.join(wheel_env.site, 'pmsn_mm', '.mim', 'configs', 'pmsn',
                        TOY)
    assert (f'Training command is {wheel_env.python} '
            f'{osp.join(mim_tools, "train.py")} {packaged}') in out
    ckpt = train_dir / 'iter_2.pth'
    with open(train_dir / 'last_checkpoint') as f:
        assert f.read().strip() == str(ckpt)
    state = torch.load(ckpt, map_location='cpu', weights_only=False)
    assert state['meta']['iter'] == 2
    (scalars, ) = glob.glob(str(train_dir / '*' / 'vis_data' / 'scalars.json'))
    with open(scalars) as f:
        val = [json.loads(line) for line in f if 'knn_digit/top1' in line]
    assert len(val) == 1  # the val loop ran once, at iteration 2

    # mim test: the same config with its kNN val loop as the test loop
    cfg = Config.fromfile(packaged)
    cfg.merge_from_dict(TOY_OPTIONS)
    cfg.test_dataloader = cfg.val_dataloader
    cfg.test_evaluator = cfg.val_evaluator
    cfg.test_cfg = dict(type='FeatureTestLoop')
    test_config = str(tmp_path / 'toy_test.py')
    cfg.dump(test_config)
    test_dir = tmp_path / 'test'
    _run(wheel_env, wheel_env.mim, 'test', 'pmsn_mm', test_config,
         '--checkpoint', str(ckpt), '--work-dir', str(test_dir),
         cwd=tmp_path)
    (result, ) = glob.glob(str(test_dir / '*' / '*.json'))
    with open(result) as f:
        metrics = json.load(f)
    for key in ('knn_digit/top1', 'knn_background/top1'):
        assert metrics[key] == pytest.approx(val[0][key], abs=ONE_QUERY)

    # mim run: any script under tools/, here the model converter
    backbone = tmp_path / 'backbone.pth'
    out = _run(wheel_env, wheel_env.mim, 'run', 'pmsn_mm', 'pmsn_to_backbone',
               str(ckpt), str(backbone), cwd=tmp_path)
    assert osp.join(mim_tools, 'model_converters',
                    'pmsn_to_backbone.py') in out
    extracted = torch.load(backbone, map_location='cpu')['state_dict']
    online = {k: v for k, v in state['state_dict'].items()
              if k.startswith('backbone.')}
    assert extracted.keys() == online.keys()
    assert all(torch.equal(extracted[k], online[k]) for k in online)


def test_mim_search_reads_the_packaged_index(wheel_env, tmp_path):
    out = _run(wheel_env, wheel_env.mim, 'search', 'pmsn_mm', '--model',
               'pswav', '--field', 'batch_size', cwd=tmp_path)
    listed = re.findall(r'config id: (\S+)', out)
    with open(osp.join(REPO, 'configs', 'pswav', 'metafile.yml')) as f:
        indexed = [model['Name'] for model in yaml.safe_load(f)['Models']]
    assert len(indexed) >= 7 and sorted(listed) == sorted(indexed)
