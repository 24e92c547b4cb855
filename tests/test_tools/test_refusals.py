"""Every refusal is one message: what a user sees when pmsn_mm refuses a
command, run as the user runs it (a subprocess of tools/train.py,
tools/test.py, tools/dist_train.sh or a converter).

What must hold for each case (a list of cases, one loop; the cached linear
probe, tools/linear_probe_cached.py, too): the exit status
(1; 0 for "nothing to do"), the whole output (stdout and stderr) is the
message alone on one line — no traceback, no environment or config dump
before it, printed once — and the work dir is neither created nor changed.
"""
import os
import os.path as osp
import subprocess
import sys
from typing import Dict, List, NamedTuple, Optional, Tuple

import pytest

from tests._configs import CONFIGS, REPO, TINY_PMSN, write_config
from tests._image_folders import write_class_tree
from tests._linear_probe_toy import (save_pmsn_vit_checkpoint,
                                     write_toy_probe_config)

pytestmark = pytest.mark.slow  # pytest -m "not slow" skips it

TRAIN = osp.join(REPO, 'tools', 'train.py')
TEST = osp.join(REPO, 'tools', 'test.py')
CACHED = osp.join(REPO, 'tools', 'linear_probe_cached.py')
IMAGE_FOLDER_CFG = osp.join(CONFIGS, 'pmsn',
                            'pmsn_vit-small-p16_32xb128-300e_image-folder.py')
TOY_KNN = osp.join(CONFIGS, 'pmsn', 'benchmarks',
                   'vit-mini-p4-lastcls_knn-k20_shapes-digits.py')


def _env(**extra: str) -> Dict[str, str]:
    return dict(os.environ, PYTHONPATH=REPO, OMP_NUM_THREADS='1', **extra)


def _state(path: str) -> Optional[Dict[str, Tuple[int, float]]]:
    """Every file under ``path`` with its size and modification time (None
    where ``path`` does not exist)."""
    if not osp.exists(path):
        return None
    found = {}
    for root, _, files in os.walk(path):
        for name in files:
            full = osp.join(root, name)
            stat = os.stat(full)
            found[osp.relpath(full, path)] = (stat.st_size, stat.st_mtime_ns)
    return found


@pytest.fixture(scope='module')
def world(tmp_path_factory):
    """A finished tiny run (and cached linear probe), image folders (good
    and corrupt) and configs."""
    root = tmp_path_factory.mktemp('refusals')
    config = write_config(root, TINY_PMSN.replace('max_iters=6',
                                                  'max_iters=2'))
    done = str(root / 'done')
    out = subprocess.run([sys.executable, TRAIN, config, '--work-dir', done],
                         cwd=str(root), env=_env(), capture_output=True,
                         text=True, timeout=600)
    assert out.returncode == 0, out.stderr[-3000:]
    encoder = str(root / 'encoder.pth')
    save_pmsn_vit_checkpoint(encoder)
    probe = write_toy_probe_config(root, 'vit-lastcls', encoder)
    probed = str(root / 'probed')
    out = subprocess.run([sys.executable, CACHED, probe, encoder,
                          '--work-dir', probed, '--online-iters', '0'],
                         cwd=str(root), env=_env(), capture_output=True,
                         text=True, timeout=600)
    assert out.returncode == 0, out.stderr[-3000:]
    images = write_class_tree(root / 'images', {'a': 3, 'b': 3})
    os.makedirs(root / 'empty' / 'a')  # a class folder without images
    corrupt = write_class_tree(root / 'corrupt', {'a': 3, 'b': 3})
    for dirpath, _, files in os.walk(corrupt):
        for name in files:  # every image cut in half: the first batch fails
            path = osp.join(dirpath, name)
            with open(path, 'rb') as f:
                data = f.read()
            with open(path, 'wb') as f:
                f.write(data[:len(data) // 2])
    return dict(root=str(root), config=config, done=done, images=images,
                corrupt=corrupt,
                checkpoint=osp.join(done, 'iter_2.pth'), probe=probe,
                encoder=encoder, probed=probed)


class Case(NamedTuple):
    """A refused command: its arguments (``{key}`` filled from the world),
    environment, the words its message must hold, the exit status and the
    work dir that must be left as it was."""
    args: List[str]
    words: List[str]
    work_dir: str = '{root}/new'
    env: Dict[str, str] = {}
    status: int = 1


CASES = {
    'a second run into a finished work dir': Case(
        [TRAIN, '{config}', '--work-dir', '{done}'],
        ['already holds checkpoints', '--resume', '--overwrite'],
        work_dir='{done}'),
    'resuming a run that finished': Case(
        [TRAIN, '{config}', '--work-dir', '{done}', '--resume'],
        ['Nothing to train', 'iteration 2 of 2'], work_dir='{done}',
        status=0),
    'a second cached linear probe into its work dir': Case(
        [CACHED, '{probe}', '{encoder}', '--work-dir', '{probed}'],
        ['already holds checkpoints', '--resume', '--overwrite'],
        work_dir='{probed}'),
    'resuming a cached linear probe that finished': Case(
        [CACHED, '{probe}', '{encoder}', '--work-dir', '{probed}',
         '--resume'], ['Nothing to train', 'epoch 1 of 1'],
        work_dir='{probed}', status=0),
    'a missing image folder': Case(
        [TRAIN, IMAGE_FOLDER_CFG, '--work-dir', '{root}/new', '--max-iters',
         '2'], ['folder does not exist', 'IMAGE_FOLDER'],
        env={'IMAGE_FOLDER': '{root}/no_such_folder'}),
    'an image folder without images': Case(
        [TRAIN, IMAGE_FOLDER_CFG, '--work-dir', '{root}/new', '--max-iters',
         '2'], ['{root}/empty'], env={'IMAGE_FOLDER': '{root}/empty'}),
    'a batch larger than the data': Case(
        [TRAIN, IMAGE_FOLDER_CFG, '--work-dir', '{root}/new', '--max-iters',
         '2'], ['gives no batch', '6 images', 'batch_size'],
        env={'IMAGE_FOLDER': '{images}'}),
    'a corrupt image in the first batch (dataloader workers)': Case(
        [TRAIN, IMAGE_FOLDER_CFG, '--work-dir', '{root}/new', '--max-iters',
         '2', '--cfg-options', 'train_dataloader.batch_size=6',
         'train_dataloader.num_workers=2'],
        ['Cannot decode image', 'truncated'],
        env={'IMAGE_FOLDER': '{corrupt}'}),
    'a mistyped config key': Case(
        [TRAIN, '{config}', '--work-dir', '{root}/new', '--cfg-options',
         'model.head.temperatur=0.1'], ['temperatur']),
    'a setting outside its allowed values': Case(
        [TRAIN, '{config}', '--work-dir', '{root}/new', '--cfg-options',
         'train_dataloader.batch_sampler.classes_per_batch=3'],
        ['classes_per_batch', 'batch_size']),
    'a pretraining config given to tools/test.py': Case(
        [TEST, '{config}', '{checkpoint}', '--work-dir', '{root}/new'],
        ['has no test loop', 'benchmark']),
    'a checkpoint of another architecture': Case(
        [TEST, TOY_KNN, '{checkpoint}', '--work-dir', '{root}/new'],
        ['{checkpoint}']),
    'a file that is not a checkpoint (converter)': Case(
        [osp.join(REPO, 'tools', 'model_converters', 'pmsn_to_backbone.py'),
         '{config}', '{root}/new/backbone.pth'],
        ['cannot be read as a PyTorch checkpoint']),
}


def _fill(text: str, world: dict) -> str:
    return text.format(**world)


@pytest.mark.parametrize('name', list(CASES))
def test_a_refusal_is_its_message_alone(name, world):
    case = CASES[name]
    work_dir = _fill(case.work_dir, world)
    before = _state(work_dir)
    out = subprocess.run(
        [sys.executable] + [_fill(a, world) for a in case.args],
        cwd=world['root'], env=_env(**{k: _fill(v, world)
                                       for k, v in case.env.items()}),
        capture_output=True, text=True, timeout=600)
    seen = (out.stdout + out.stderr).strip()
    assert out.returncode == case.status, seen[-3000:]
    assert '\n' not in seen, seen[-3000:]  # one line: the message alone
    assert 'Traceback' not in seen and 'Error:' not in seen[:40], seen
    for word in case.words:
        assert _fill(word, world) in seen, seen
    assert _state(work_dir) == before  # not created, not changed


def test_debug_shows_the_traceback(world):
    out = subprocess.run(
        [sys.executable, TRAIN, world['config'], '--work-dir', world['done'],
         '--debug'], cwd=world['root'], env=_env(), capture_output=True,
        text=True, timeout=600)
    assert out.returncode == 1
    assert 'Traceback' in out.stderr
    assert 'already holds checkpoints' in out.stderr


def test_dist_train_prints_the_refusal_once(world):
    """Under tools/dist_train.sh with two ranks: once, not per rank, and
    not buried under torchrun's failure block."""
    port = 29700 + os.getpid() % 200
    out = subprocess.run(
        ['bash', osp.join(REPO, 'tools', 'dist_train.sh'), world['config'],
         '2', '--work-dir', world['done']], cwd=world['root'],
        env=_env(PORT=str(port)), capture_output=True, text=True,
        timeout=600)
    seen = (out.stdout + out.stderr).strip()
    assert out.returncode == 1, seen[-3000:]
    assert seen.count('already holds checkpoints') == 1, seen
    assert '\n' not in seen, seen[-3000:]
    for noise in ('Traceback', 'ChildFailedError', '[rank', 'FAILED'):
        assert noise not in seen, seen


def test_a_run_after_a_refused_one_in_the_same_second(tmp_path, monkeypatch):
    """A refused run's work dir is removed; a run built next in the same
    process and second (mmengine names its logger and visualizer by config
    file name and timestamp) gets fresh ones, not the removed run's."""
    import mmengine.runner.runner as mmengine_runner
    from mmengine.config import Config
    from mmengine.registry import RUNNERS

    monkeypatch.setattr(mmengine_runner.time, 'strftime',
                        lambda *args: '20260101_000000')
    config = write_config(tmp_path, TINY_PMSN.replace('max_iters=6',
                                                      'max_iters=1'))
    refused = Config.fromfile(config)
    refused.work_dir = str(tmp_path / 'refused')
    refused.train_dataloader.dataset.num_samples = 4  # too few per class
    runner = RUNNERS.build(refused)
    with pytest.raises(ValueError, match='needs 4 per batch'):
        runner.train()
    assert not osp.exists(refused.work_dir)
    ok = Config.fromfile(config)
    ok.work_dir = str(tmp_path / 'ok')
    RUNNERS.build(ok).train()
    assert osp.isfile(osp.join(ok.work_dir, '20260101_000000',
                               '20260101_000000.log'))
    assert osp.isfile(osp.join(ok.work_dir, 'iter_1.pth'))
