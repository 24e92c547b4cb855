"""mmengine's ``compile=True`` on the CPU toy config: the model's train_step
is compiled (backbone and projector in graphs; the views, PMSN's loss and
the parameter update eager) and trains as the eager step does."""
import copy
import os.path as osp

import numpy as np
import pytest
import torch
from mmengine.config import Config
from mmengine.model import BaseModel
from mmengine.optim import OptimWrapper

from pmsn_mm.models.backbones import MSNViT
from pmsn_mm.models.utils import EagerUpdateTrainStepMixin
from tests._config_runs import shrink
from tests._configs import CONFIGS
from tests._tools import load_tool

TOY = osp.join(CONFIGS, 'pmsn',
               'pmsn_vit-mini-p4_1xb128-15e-cpu_shapes-digits-power-law.py')


class _Tiny(BaseModel):

    def __init__(self):
        super().__init__()
        self.fc = torch.nn.Linear(3, 2)

    def forward(self, inputs, data_samples=None, mode='loss'):
        return dict(loss=self.fc(inputs).pow(2).mean(),
                    stat=inputs.sum().detach())


class _TinyEager(EagerUpdateTrainStepMixin, _Tiny):
    pass


def test_the_mixin_step_is_mmengines_step():
    """Same parameters and log variables after 3 steps as BaseModel's."""
    torch.manual_seed(0)
    ours = _TinyEager()
    theirs = _Tiny()
    theirs.load_state_dict(ours.state_dict())
    wrappers = [OptimWrapper(torch.optim.SGD(m.parameters(), lr=0.1,
                                             momentum=0.9))
                for m in (ours, theirs)]
    for step in range(3):
        batch = dict(inputs=torch.randn(4, 3, generator=torch.Generator()
                                        .manual_seed(step)))
        log_ours = ours.train_step(copy.deepcopy(batch), wrappers[0])
        log_theirs = BaseModel.train_step(theirs, copy.deepcopy(batch),
                                          wrappers[1])
        assert log_ours.keys() == log_theirs.keys()
        for key in log_ours:
            torch.testing.assert_close(log_ours[key], log_theirs[key],
                                       rtol=0, atol=0)
    for p, q in zip(ours.parameters(), theirs.parameters()):
        torch.testing.assert_close(p, q, rtol=0, atol=0)


def test_msn_vit_drop_path_rates_are_python_floats():
    """mmpretrain's np.linspace rates become floats of the same value (a
    numpy scalar breaks torch.compile's graph in every block)."""
    vit = MSNViT(arch=dict(embed_dims=16, num_layers=4, num_heads=2,
                           feedforward_channels=32),
                 img_size=16, patch_size=4, drop_path_rate=0.3)
    rates = [m.drop_prob for m in vit.modules() if hasattr(m, 'drop_prob')]
    assert len(rates) >= 4
    assert all(type(r) is float for r in rates)
    expected = np.linspace(0, 0.3, 4)
    assert sorted(set(rates)) == pytest.approx(sorted(set(expected)))


def _run(tmp_path, name, compile_cfg):
    cfg = shrink(Config.fromfile(TOY), str(tmp_path / name))
    cfg.compile = compile_cfg
    path = str(tmp_path / f'{name}.py')
    cfg.dump(path)
    runner = load_tool('tools/train.py').main([path])
    losses = runner.message_hub.get_scalar('train/loss').data[0]
    return runner, np.asarray(losses, dtype=np.float64)


def test_compile_true_trains_the_toy_config_like_eager(tmp_path,
                                                        monkeypatch):
    """compile=True (mmengine) trains the shrunk CPU toy config for its
    2 iterations; its losses equal the eager run's (same seed; inductor
    draws random numbers with torch's generator) within float32
    round-off, and the backbone ran inside compiled graphs."""
    from torch._dynamo.utils import counters
    monkeypatch.chdir(tmp_path)
    torch._dynamo.reset()
    counters.clear()
    monkeypatch.setattr(torch._inductor.config, 'fallback_random', True)
    _, eager = _run(tmp_path, 'eager', False)
    assert counters['stats']['unique_graphs'] == 0
    runner, compiled = _run(tmp_path, 'compiled', True)
    assert runner.iter == 2
    assert counters['stats']['unique_graphs'] >= 1
    breaks = ' '.join(str(k) for k in counters['graph_break'])
    assert 'drop.py' not in breaks  # the ViT blocks are whole graphs
    assert len(eager) == len(compiled) == 2
    assert np.isfinite(compiled).all()
    np.testing.assert_allclose(compiled, eager, rtol=1e-4, atol=1e-5)
    torch._dynamo.reset()
