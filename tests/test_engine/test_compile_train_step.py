"""mmengine's ``compile=True`` on the ViT-S iNat18 config (two resolutions,
patch-drop): the model's train_step is compiled (backbone and projector in
graphs; the views, PMSN's loss and the parameter update eager) and trains as
the eager step does. (One config: each compiled run costs minutes of CPU;
the CPU toy config is the same PMSN step with one resolution and no
patch-drop, a subset of what this one compiles.)"""
import copy
import inspect
import logging
import os.path as osp
import re

import numpy as np
import pytest
import torch
from mmengine.config import Config
from mmengine.logging import MessageHub
from mmengine.model import BaseModel
from mmengine.optim import OptimWrapper
from mmpretrain.models.backbones.vision_transformer import \
    TransformerEncoderLayer

from pmsn_mm.datasets.sample_data import make_sample_data
from pmsn_mm.models.backbones import MSNViT
from tests._config_runs import shrink
from tests._configs import CONFIGS
from tests._tools import load_tool

pytestmark = pytest.mark.slow  # pytest -m "not slow" skips it

INAT = osp.join(CONFIGS, 'pmsn',
                'pmsn_vit-small-p16_32xb128-300e_inat18-power-law.py')


def _tiny_pmsn(tmp_path):
    from mmengine.registry import init_default_scope
    from mmpretrain.registry import MODELS

    from tests._configs import TINY_PMSN, write_config
    init_default_scope('mmpretrain')
    cfg = Config.fromfile(write_config(tmp_path, TINY_PMSN))
    torch.manual_seed(0)
    model = MODELS.build(cfg.model)
    model.init_weights()
    return model


def test_pmsns_step_is_mmengines_step(tmp_path):
    """PMSN.train_step (the update run eagerly) gives the same parameters
    and log variables after 3 steps as mmengine's BaseModel.train_step."""
    MessageHub.get_current_instance().update_info('max_iters', 10)
    ours = _tiny_pmsn(tmp_path)
    theirs = _tiny_pmsn(tmp_path)
    theirs.load_state_dict(ours.state_dict())
    wrappers = [OptimWrapper(torch.optim.SGD(m.parameters(), lr=0.1,
                                             momentum=0.9))
                for m in (ours, theirs)]
    for step in range(3):
        gen = torch.Generator().manual_seed(step)
        batch = dict(inputs=torch.randint(0, 256, (4, 1, 20, 20),
                                          dtype=torch.uint8, generator=gen))
        torch.manual_seed(step)
        log_ours = ours.train_step(copy.deepcopy(batch), wrappers[0])
        torch.manual_seed(step)
        log_theirs = BaseModel.train_step(theirs, copy.deepcopy(batch),
                                          wrappers[1])
        ours.update_target()
        theirs.update_target()
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


class _DynamoRecords(logging.Handler):
    """Dynamo's graph-break and recompile messages, with the training
    iteration during which each was logged."""

    def __init__(self):
        super().__init__(logging.DEBUG)
        self.breaks, self.recompiles = [], []

    def emit(self, record):
        info = MessageHub.get_current_instance().get_info('iter')
        if record.name.endswith('__graph_breaks'):
            self.breaks.append(record.getMessage())
        elif record.name.endswith('__recompiles'):
            self.recompiles.append((info, record.getMessage()))


def _narrow_inat(cfg, iters):
    """The shrunk iNat18 config at a compile-test size: ViT width 32, 2
    blocks, patch 8, 8 prototypes, its 12 views at 32 px (target + masked
    random view) and 16 px (10 focal views), batch 4, ``iters`` batches."""
    cfg.model.backbone.update(
        arch=dict(embed_dims=32, num_layers=2, num_heads=2,
                  feedforward_channels=64),
        img_size=32, patch_size=8)
    cfg.model.head.num_prototypes = 8
    for views in (cfg.data_preprocessor.views,
                  cfg.train_dataloader.dataset.pipeline[0].views):
        assert [v.size for v in views] == [224, 96]
        for view, size in zip(views, (32, 16)):
            view.size = size
    cfg.train_dataloader.num_batch_per_epoch = iters
    return cfg


def _in_a_block(message):
    """Whether a graph-break message places the break inside a ViT block
    (in the block's forward or in anything it calls)."""
    lines, first = inspect.getsourcelines(TransformerEncoderLayer.forward)
    path = inspect.getsourcefile(TransformerEncoderLayer.forward)
    frames = re.findall(r'File "([^"]+)", line (\d+)', message)
    frames += re.findall(r'in user code at (\S+):(\d+)', message)
    return any(osp.samefile(f, path) and first <= int(n) < first + len(lines)
               for f, n in frames if osp.exists(f))


def test_compile_true_trains_the_inat18_vit_config_like_eager(
        tmp_path, monkeypatch):
    """compile=True on the ViT-S iNat18 config (narrowed; still two
    resolutions and patch-drop on the random view) trains 3 iterations with
    the eager run's losses. Inductor draws its own random numbers
    (``fallback_random`` stays off): equal losses show that the patch-drop
    noise is drawn eagerly from torch's generator. No graph break inside a
    transformer block or in the patch-drop, and no recompilation once the
    step has run twice."""
    from torch._dynamo.utils import counters
    make_sample_data(str(tmp_path / 'data'), formats=('inat18', ),
                     inat18_all_classes=False)
    monkeypatch.chdir(tmp_path)
    losses = {}
    records = _DynamoRecords()
    torch._dynamo.reset()
    counters.clear()
    torch._logging.set_logs(graph_breaks=True, recompiles=True)
    logging.getLogger('torch._dynamo').addHandler(records)
    try:
        with torch._inductor.config.patch(fallback_random=False):
            for name, compile_cfg in (('eager', False), ('compiled', True)):
                cfg = _narrow_inat(
                    shrink(Config.fromfile(INAT), str(tmp_path / name)), 3)
                cfg.compile = compile_cfg
                path = str(tmp_path / f'{name}.py')
                cfg.dump(path)
                runner = load_tool('tools/train.py').main([path])
                assert runner.iter == 3
                losses[name] = np.asarray(
                    runner.message_hub.get_scalar('train/loss').data[0])
                if name == 'eager':
                    assert counters['stats']['unique_graphs'] == 0
    finally:
        logging.getLogger('torch._dynamo').removeHandler(records)
        torch._logging.set_logs()
    assert counters['stats']['unique_graphs'] >= 1
    assert records.breaks  # the eager views and PMSN loss
    assert not any(_in_a_block(m) for m in records.breaks)
    assert not any('patch_drop.py' in m or 'msn_vit.py' in m
                   for m in records.breaks)
    # mmpretrain's DropPath runs inside the graphs (no break in drop.py)
    assert not any('drop.py' in str(k) for k in counters['graph_break'])
    # both resolutions in the first step's graphs: nothing recompiled later
    assert records.recompiles == []
    assert len(losses['eager']) == len(losses['compiled']) == 3
    assert np.isfinite(losses['compiled']).all()
    np.testing.assert_allclose(losses['compiled'], losses['eager'],
                               rtol=1e-4, atol=1e-5)
    torch._dynamo.reset()
