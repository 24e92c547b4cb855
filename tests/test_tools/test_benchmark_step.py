"""tools/benchmarks/benchmark_step.py: its counting pass (no timing) on the
CPU toy PMSN config and the iNat18 PMSN config with a narrowed encoder.

A training step must not make the host wait for the device (no host syncs
in the model's phases; the per-iteration hooks read one device value per
step, next to mmengine's read of the loss values), and its op count must not
grow with the batch (no per-sample Python loops)."""
import logging
import os.path as osp
from typing import Dict

import pytest
from mmengine.config import Config
from mmengine.logging import MMLogger

from tests._config_runs import shrink_model
from tests._configs import CONFIGS
from tests._tools import load_tool

TOY = osp.join('pmsn',
               'pmsn_vit-mini-p4_1xb128-15e-cpu_shapes-digits-power-law.py')
INAT18 = osp.join('pmsn',
                  'pmsn_vit-small-p16_32xb128-300e_inat18-power-law.py')
#: One paper-scale config of every other method family (narrowed
#: encoders): PSwAV, VICReg, SimCLR, data2vec, MSN class-stratified.
FAMILIES = [
    osp.join('pswav',
             'pswav_resnet50_8xb32-mcrop-coslr-200e_inat18-power-law.py'),
    osp.join('vicreg', 'vicreg_resnet50_8xb128-amp-coslr-300e_in1k.py'),
    osp.join('class_stratified',
             'simclr_resnet50_16xb240-coslr-300e_in1k-class-imbalanced-k8.py'),
    osp.join('data2vec',
             'data2vec_beit-base-p16_16xb128-amp-coslr-800e_in1k.py'),
    osp.join('class_stratified',
             'pmsn_vit-base-p16_16xb60-300e_in1k-class-imbalanced-k2.py'),
]


def _tool():
    return load_tool('tools/benchmarks/benchmark_step.py')


@pytest.fixture(scope='module')
def counts() -> Dict[str, Dict[int, dict]]:
    """``{config: {batch: count_phases(...)}}`` for batches 2 and 4."""
    import torch
    tool = _tool()
    MMLogger.get_current_instance().setLevel(logging.WARNING)
    result = {}
    for name in (TOY, INAT18, *FAMILIES):
        result[name] = {}
        for batch in (2, 4):
            torch.manual_seed(0)
            cfg = Config.fromfile(osp.join(CONFIGS, name))
            shrink_model(cfg)
            result[name][batch] = tool.count_phases(cfg, batch)
    return result


def _check(counts: dict, config: str, phase: str, max_syncs: int) -> None:
    small, large = counts[config][2], counts[config][4]
    assert phase in small, f'{config} has no phase {phase}'
    for batch, c in ((2, small), (4, large)):
        assert c[phase]['syncs'] <= max_syncs, (
            f'{config} {phase} at batch {batch}: {c[phase]["syncs"]} host '
            f'syncs ({c[phase]["sync_ops"]})')
    assert small[phase]['ops'] == large[phase]['ops'], (
        f'{config} {phase}: {small[phase]["ops"]} aten ops at batch 2, '
        f'{large[phase]["ops"]} at batch 4')


#: Host syncs a phase may make: the guard's one read of all its flags per
#: step; mmengine reading the clipped gradient norm for its log.
ALLOWED = {'hooks': 1, 'grad clip': 1}


@pytest.mark.parametrize('config', [TOY, INAT18, *FAMILIES])
def test_no_phase_makes_a_host_sync_or_grows_with_the_batch(counts, config):
    """Every phase of the step (views, forward+loss, backward, clipping,
    optimizer, target update, hooks): no host sync beyond ALLOWED, the
    same aten ops at batch 2 and 4."""
    assert set(counts[config][2]) == set(counts[config][4])
    for phase in counts[config][2]:
        _check(counts, config, phase, ALLOWED.get(phase, 0))


def test_every_phase_is_counted(counts):
    toy, inat = counts[TOY][2], counts[INAT18][2]
    assert list(toy) == ['views', 'forward+loss', 'backward', 'optimizer',
                         'target update', 'hooks']
    # clip_grad: mmengine clips (and reads the norm for its log) first
    assert 'grad clip' in inat
    assert all(c['ops'] > 0 for name, c in toy.items() if name != 'hooks')


def test_main_prints_a_row_per_phase(capsys):
    result = _tool().main([
        osp.join(CONFIGS, TOY), '--batch-size', '2', '--repeats', '1',
        '--device', 'cpu'
    ])
    out = capsys.readouterr().out
    for phase in ('views', 'forward+loss', 'backward', 'optimizer',
                  'target update', 'hooks', 'images/s', 'of the step'):
        assert phase in out
    assert result['images_per_s'] > 0 and 0 < result['views_share'] < 1
    assert set(result['seconds']) == set(result['counts'])
