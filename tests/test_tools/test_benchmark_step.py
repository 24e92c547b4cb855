"""tools/speed/benchmark_step.py: its table (one row per phase of
``tests/_profiling/step_profiler.py``'s step) and ``--floor``, the step
against the bare encoder passes (the counts:
tests/test_profiling/test_step_profiler.py).
"""
import os.path as osp
from types import SimpleNamespace

import pytest
import torch
from torch import nn

from tests._configs import CONFIGS
from tests._tools import load_tool

pytestmark = pytest.mark.slow  # pytest -m "not slow" skips it

TOY = osp.join('pmsn',
               'pmsn_vit-mini-p4_1xb128-15e-cpu_shapes-digits-power-law.py')


def _tool():
    return load_tool('tools/speed/benchmark_step.py')


def test_main_prints_a_row_per_phase(capsys):
    result = _tool().main([
        osp.join(CONFIGS, TOY), '--batch-size', '2', '--repeats', '1',
        '--device', 'cpu'
    ])
    out = capsys.readouterr().out
    for phase in ('views', 'forward+loss', 'backward', 'optimizer',
                  'target update', 'hooks', 'images/s', 'of the step', 'h2d',
                  'batch'):
        assert phase in out
    assert result['images_per_s'] > 0 and 0 < result['views_share'] < 1
    assert set(result['seconds']) == set(result['counts'])


def test_floor_times_a_pmsn_step_against_its_encoder_passes(capsys):
    result = _tool().main([
        osp.join(CONFIGS, TOY), '--batch-size', '2', '--repeats', '2',
        '--device', 'cpu', '--floor'
    ])
    floor = result['floor']
    assert floor['median_step_s'] > 0 and floor['median_floor_s'] > 0
    assert floor['overhead'] == pytest.approx(
        floor['median_step_s'] / floor['median_floor_s'] - 1)
    assert floor['overhead_cpu'] == pytest.approx(
        floor['median_step_cpu_s'] / floor['median_floor_cpu_s'] - 1)
    assert 'overhead of the step over its floor' in capsys.readouterr().out


def test_floor_step_runs_the_encoder_on_every_view():
    """The floor's passes, against the views counted by hand: the target
    sees the first view, the online encoder the rest (random ones
    patch-dropped), and every online parameter gets a gradient."""
    class Encoder(nn.Module):

        def __init__(self):
            super().__init__()
            self.w = nn.Parameter(torch.ones(()))
            self.calls = []

        def forward(self, x, mask_ratio=0.0):
            self.calls.append((x.shape[0], mask_ratio))
            return (x.flatten(1) * self.w, )

    model = nn.Module()
    model.backbone = Encoder()
    model.neck = nn.Identity()
    model.target_net = Encoder()
    model.num_random_views, model.mask_ratio = 2, 0.3
    views = [torch.ones(3, 1, 2, 2) for _ in range(5)]
    _tool().floor_step(model, views)
    assert model.target_net.calls == [(3, 0.0)]
    # 2 random views (masked) in one batch, 2 focal views unmasked
    assert model.backbone.calls == [(6, 0.3), (6, 0.0)]
    assert model.backbone.w.grad == 4 * 3 * 4  # sum over 4 views of 3x4
    assert model.target_net.w.grad is None


def test_floor_refuses_a_model_without_an_ema_target():
    with pytest.raises(ValueError, match='--floor needs a PMSN or MSN'):
        _tool().time_step_and_floor(
            SimpleNamespace(model=object()), {}, 1)
