"""tests/_profiling/step_profiler.py: the counting pass (no timing) of one
training step, for the CPU toy PMSN config, the iNat18 PMSN config and one
config of every other family (narrowed encoders).

No phase copies anything to the device but the batch's own tensors, once,
non-blocking (``h2d`` 0: no per-sample upload, no constant built from
Python data in the step), for one config of every family at batch 2 and 4.

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
from tests._profiling import rule_failure
from tests._profiling.step_profiler import count_phases

pytestmark = pytest.mark.slow  # pytest -m "not slow" skips it

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


@pytest.fixture(scope='module')
def counts() -> Dict[str, Dict[int, dict]]:
    """``{config: {batch: count_phases(...)}}`` for batches 2 and 4."""
    import torch
    MMLogger.get_current_instance().setLevel(logging.WARNING)
    result = {}
    for name in (TOY, INAT18, *FAMILIES):
        result[name] = {}
        for batch in (2, 4):
            torch.manual_seed(0)
            cfg = Config.fromfile(osp.join(CONFIGS, name))
            shrink_model(cfg)
            result[name][batch] = count_phases(cfg, batch)
    return result


def _check(counts: dict, config: str, phase: str, max_syncs: int) -> None:
    small, large = counts[config][2], counts[config][4]
    assert phase in small, f'{config} has no phase {phase}'
    for batch, c in ((2, small), (4, large)):
        assert c[phase]['syncs'] <= max_syncs, rule_failure(
            f'{config} {phase} at batch {batch}: {c[phase]["syncs"]} host '
            f'syncs ({c[phase]["sync_ops"]}), at most {max_syncs} allowed')
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


#: One config per remaining family, for the copy count only: MAE, the
#: per-sample (MultiView) pipelines, the in-memory toy sets (data2vec's masks
#: collated with the batch), the paper-scale toy config.
COPY_ONLY = [
    osp.join('class_stratified', 'cpu_study', 'mae_vit-mini-p4_1xb60-cpu-toy'
             '-class-balanced-k10_power-law-overlay.py'),
    osp.join('class_stratified', 'cpu_study', 'data2vec_beit-mini-p4_1xb60-'
             'cpu-toy-class-balanced-k10_power-law-overlay.py'),
    osp.join('pmsn',
             'pmsn_vit-base-p16_16xb64-300e_in1k-uniform-per-sample.py'),
    osp.join('pswav', 'pswav_resnet50_8xb32-mcrop-coslr-200e_in1k-'
             'uniform-per-sample.py'),
    osp.join('pmsn', 'pmsn_vit-mini-p4_1xb64-cpu-toy_power-law-overlay.py'),
    osp.join('simclr', 'simclr_resnet18_2xb16-toy_power-law-overlay.py'),
    osp.join('pmsn',
             'pmsn_vit-tiny-p4_1xb1024-300e_shapes-digits-power-law.py'),
]


def _check_copies(by_batch: Dict[int, dict], config: str) -> None:
    """No blocking host-to-device copy in any phase; the batch uploaded in
    the views phase only, as many tensors at either batch size."""
    for batch, phases in by_batch.items():
        for phase, c in phases.items():
            assert c['h2d'] == 0, rule_failure(
                f'{config} {phase} at batch {batch}: {c["h2d"]} blocking '
                f'host-to-device copies ({c["h2d_sites"]})')
            if phase != 'views':
                assert c['h2d_batch'] == 0, (config, phase, batch)
    uploads = {b: p['views']['h2d_batch'] for b, p in by_batch.items()}
    assert len(set(uploads.values())) == 1 and min(uploads.values()) >= 1, (
        f'{config}: batch uploads {uploads}')


@pytest.mark.parametrize('config', [TOY, INAT18, *FAMILIES])
def test_no_phase_copies_to_the_device_besides_the_batch(counts, config):
    """No per-sample upload, no constant uploaded from Python data: the
    batch's own tensors move once, non-blocking."""
    _check_copies(counts[config], config)


@pytest.mark.parametrize('config', COPY_ONLY)
def test_no_copies_in_the_other_families(config):
    import torch
    MMLogger.get_current_instance().setLevel(logging.WARNING)
    by_batch = {}
    for batch in (2, 4):
        torch.manual_seed(0)
        cfg = Config.fromfile(osp.join(CONFIGS, config))
        shrink_model(cfg)
        by_batch[batch] = count_phases(cfg, batch)
    _check_copies(by_batch, config)


def test_every_phase_is_counted(counts):
    toy, inat = counts[TOY][2], counts[INAT18][2]
    assert list(toy) == ['views', 'forward+loss', 'backward', 'optimizer',
                         'target update', 'hooks']
    # clip_grad: mmengine clips (and reads the norm for its log) first
    assert 'grad clip' in inat
    assert all(c['ops'] > 0 for name, c in toy.items() if name != 'hooks')
