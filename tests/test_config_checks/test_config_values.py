"""One owner for each number a user sets: a batch size stated in a
dataloader and in its batch sampler must agree, or the config is refused
naming both, before anything is built (tools/train.py included)."""
import os.path as osp

import pytest
from mmengine.config import Config

from pmsn_mm.config import check_config_values
from tests._configs import REPO
from tests._tools import load_tool

STRATIFIED = osp.join(
    REPO, 'configs', 'class_stratified', 'cpu_study',
    'pmsn_vit-mini-p4_1xb60-cpu-toy-class-imbalanced-k2_power-law-overlay.py')


def _loader(size, **sampler):
    return dict(batch_size=size, batch_sampler=dict(
        type='ClassStratifiedBatchSampler', classes_per_batch=2, **sampler))


def test_the_dataloader_owns_the_batch_size():
    check_config_values(dict(train_dataloader=_loader(8)))
    check_config_values(dict(train_dataloader=_loader(8, batch_size=8)))
    check_config_values(dict(train_dataloader=dict(batch_size=8),
                             val_dataloader=None))


@pytest.mark.parametrize('loader', ['train_dataloader', 'test_dataloader'])
def test_a_second_batch_size_that_differs_is_refused(loader):
    with pytest.raises(ValueError) as err:
        check_config_values({loader: _loader(8, batch_size=4)})
    message = str(err.value)
    assert f'{loader}.batch_sampler.batch_size=4' in message
    assert f'{loader}.batch_size=8' in message


def test_train_tool_refuses_before_building(tmp_path):
    """The new user's case: the shipped class-stratified config with a
    sampler batch size of 4 under a dataloader batch size of 60."""
    assert Config.fromfile(STRATIFIED).train_dataloader.batch_size == 60
    train = load_tool('tools/train.py')
    with pytest.raises(ValueError, match=r'train_dataloader.batch_sampler.'
                       r'batch_size=4 differs from train_dataloader.'
                       r'batch_size=60'):
        train.main([STRATIFIED, '--work-dir', str(tmp_path / 'wd'),
                    '--cfg-options',
                    'train_dataloader.batch_sampler.batch_size=4'])
    assert not osp.exists(tmp_path / 'wd')


@pytest.mark.parametrize('name, hint', [
    ('cpu_threads', 'default_hooks.cpu_threads.threads=None'),
    ('rng_state', None)])
def test_a_default_hook_mmengine_cannot_drop(name, hint):
    from pmsn_mm.config.config_values import check_default_hooks
    cfg = dict(default_hooks=dict(checkpoint=None, **{name: None}))
    with pytest.raises(ValueError) as info:
        check_default_hooks(cfg)
    text = str(info.value)
    assert text.startswith(f'default_hooks.{name}=None: mmengine accepts '
                           'None only for its own default hooks')
    assert (hint in text) if hint else 'switch it off' not in text
    check_default_hooks(dict(default_hooks=dict(checkpoint=None)))
