"""tools/cli_overrides.py: --cfg-options keys checked before they are
merged, --max-iters short runs of either loop, and a mistyped config path."""
import os.path as osp

import pytest
from mmengine.config import Config

from tests._configs import CONFIGS, TINY_PMSN, write_config
from tests._tools import import_beside_tools

cli = import_beside_tools('tools/cli_overrides.py')

MAIN_JOB = osp.join(
    CONFIGS, 'pmsn',
    'pmsn_vit-mini-p4_1xb128-15e-cpu_shapes-digits-power-law.py')
IMAGE_FOLDER = osp.join(CONFIGS, 'pmsn',
                        'pmsn_vit-small-p16_32xb128-300e_image-folder.py')


def test_a_misspelled_section_is_refused_with_the_closest():
    cfg = Config.fromfile(MAIN_JOB)
    with pytest.raises(KeyError) as info:
        cli.check_option_keys(cfg, {'train_dataloder.batch_size': 4})
    text = str(info.value)
    assert ("--cfg-options train_dataloder.batch_size: no config section "
            "'train_dataloder' (did you mean 'train_dataloader'?)") in text


def test_existing_and_runner_sections_are_accepted():
    cfg = Config.fromfile(MAIN_JOB)
    cli.check_option_keys(cfg, {'train_dataloader.batch_size': 4,
                                'model.head.prior.tau': 1.0,
                                'num_prototypes': 5,  # a helper variable
                                'load_from': 'x.pth',  # read by the runner
                                'model_wrapper_cfg.broadcast_buffers': False,
                                'env_cfg.cudnn_benchmark': True})
    assert {'train_dataloader', 'visualizer', 'custom_imports',
            'runner_type', 'find_unused_parameters'} <= cli.runner_keys()


def test_short_run_of_an_iteration_loop(tmp_path):
    cfg = Config.fromfile(MAIN_JOB)
    changes = cli.short_run(cfg, 3)
    assert cfg.train_cfg == dict(type='IterBasedTrainLoop', max_iters=3,
                                 val_interval=3)
    assert cfg.default_hooks.checkpoint.interval == 3
    assert cfg.default_hooks.checkpoint.save_last is True
    assert 'train_cfg.max_iters=3' in changes


def test_short_run_of_an_epoch_loop_counts_iterations():
    cfg = Config.fromfile(IMAGE_FOLDER)
    assert cfg.train_cfg.type == 'EpochBasedTrainLoop'
    cli.short_run(cfg, 5)
    assert cfg.train_cfg == dict(type='IterBasedTrainLoop', max_iters=5)
    # a small folder runs out: the loader goes on, as shuffled
    assert cfg.train_dataloader.sampler == dict(type='InfiniteSampler',
                                                shuffle=True)
    assert cfg.log_processor.by_epoch is False
    hook = cfg.default_hooks.checkpoint
    assert (hook.by_epoch, hook.interval, hook.save_last) == (False, 5, True)


@pytest.mark.parametrize('iters', [0, -1, 2.5, True])
def test_short_run_refuses_a_bad_length(iters):
    with pytest.raises(ValueError, match='--max-iters must be an int >= 1'):
        cli.short_run(Config.fromfile(MAIN_JOB), iters)


def test_a_mistyped_config_path_names_the_closest(tmp_path):
    wrong = ('configs/pmsn/'
             'pmsn_vit-mini-p4_1xb128-15e-cpu_shapes-digit-power-law.py')
    with pytest.raises(FileNotFoundError) as info:
        cli.check_config_path(wrong)
    text = str(info.value)
    assert text.startswith(f'Config file not found: {wrong}.')
    assert ('pmsn_vit-mini-p4_1xb128-15e-cpu_shapes-digits-power-law.py'
            in text.split('closest shipped configs:')[1])
    path = write_config(tmp_path, TINY_PMSN)
    assert cli.check_config_path(path) == path
    with pytest.raises(FileNotFoundError, match='No shipped config has a '
                       'close name'):
        cli.check_config_path('zzzz.py')
