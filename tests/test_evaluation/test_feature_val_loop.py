"""FeatureValLoop: the evaluator gets frozen backbone features; the kNN
val loop on 2 gloo ranks equals 1 process."""
import os
import os.path as osp

import pytest
import torch
import torch.multiprocessing as mp
from mmengine.config import Config
from mmengine.evaluator import BaseMetric
from mmengine.runner import Runner
from mmpretrain.registry import METRICS

from pmsn_mm.engine.launcher import end_distributed, setup_cpu_distributed
from pmsn_mm.evaluation import FeatureValLoop
from tests._configs import CONFIGS, small_knn_eval
from tests._dist import free_port

pytestmark = pytest.mark.slow  # pytest -m "not slow" skips it

TOY = osp.join(CONFIGS, 'pmsn',
               'pmsn_vit-mini-p4_1xb128-15e-cpu_shapes-digits-power-law.py')


@METRICS.register_module(force=True)
class _KeepOutputs(BaseMetric):
    """Keeps what the loop hands to the evaluator."""
    default_prefix = 'keep'
    seen = []

    def process(self, data_batch, data_samples):
        type(self).seen.append((data_batch, list(data_samples)))
        self.results.append(len(data_samples))

    def compute_metrics(self, results):
        return dict(batches=float(len(type(self).seen)))


def _cfg(work_dir, memory=101, query=40):
    cfg = Config.fromfile(TOY)
    cfg.work_dir = str(work_dir)
    cfg.train_cfg.max_iters = 1
    cfg.train_dataloader.batch_size = 8
    cfg.train_dataloader.dataset.num_samples = 16
    small_knn_eval(cfg, memory=memory, query=query, k=5)
    cfg.val_dataloader.batch_size = 32
    # Runner.val() alone: CheckpointHook can only save best checkpoints
    # during training
    cfg.default_hooks.checkpoint.save_best = None
    cfg.log_level = 'WARNING'
    return cfg


def test_evaluator_receives_backbone_features(tmp_path):
    cfg = _cfg(tmp_path, memory=20, query=10)
    cfg.val_evaluator = dict(type='_KeepOutputs')
    _KeepOutputs.seen = []
    runner = Runner.from_cfg(cfg)
    assert isinstance(runner.val_loop, FeatureValLoop)
    assert runner.val() == {'keep/batches': 1.0}
    (batch, outputs), = _KeepOutputs.seen
    model = runner.model
    assert not model.training
    x = model.data_preprocessor(batch, False)['inputs']
    x = x[0] if isinstance(x, (list, tuple)) else x
    with torch.no_grad():
        cls = model.backbone(x)[-1]  # the ViT's CLS token, unmasked
    assert len(outputs) == 30 and outputs[0].shape == (64, )
    torch.testing.assert_close(torch.stack(outputs), cls)


def test_bad_stage_is_a_clear_error(tmp_path):
    cfg = _cfg(tmp_path)
    cfg.val_cfg = dict(type='FeatureValLoop', stage='head')
    with pytest.raises(ValueError,
                       match=r"stage must be one of \('backbone', 'neck', "
                       r"'probs'\)"):
        Runner.from_cfg(cfg).val()


def _worker(rank, port, work_dir, ckpt, out):
    os.environ.update(RANK=str(rank), LOCAL_RANK=str(rank), WORLD_SIZE='2',
                      MASTER_ADDR='127.0.0.1', MASTER_PORT=str(port))
    torch.set_num_threads(1)
    cfg = _cfg(work_dir)
    cfg.launcher = 'pytorch'
    cfg.load_from = ckpt
    cfg.experiment_name = f'rank{rank}'
    setup_cpu_distributed(cfg, 'pytorch')
    try:
        metrics = Runner.from_cfg(cfg).val()
        torch.save(metrics, osp.join(out, f'rank{rank}.pt'))
    finally:  # a rank that exits with a live gloo group may abort
        end_distributed()


def test_two_gloo_ranks_equal_one_process(tmp_path):
    cfg = _cfg(tmp_path / 'single')
    cfg.experiment_name = 'single'
    runner = Runner.from_cfg(cfg)
    ckpt = str(tmp_path / 'weights.pth')
    torch.save(dict(state_dict=runner.model.state_dict()), ckpt)
    cfg.load_from = ckpt
    single = Runner.from_cfg(cfg).val()
    assert set(single) == {'knn_digit/top1', 'knn_background/top1'}
    mp.spawn(_worker,
             args=(free_port(), str(tmp_path / 'dist'), ckpt, str(tmp_path)),
             nprocs=2, join=True)
    # 141 samples over 2 ranks: the sampler pads one, the metric drops it
    ranked = torch.load(tmp_path / 'rank0.pt')
    assert ranked == pytest.approx(single)
