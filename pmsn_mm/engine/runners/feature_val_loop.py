"""Validation loop on frozen features (the kNN evaluation during training)."""
from typing import Dict, List, Sequence, Union

import torch
from mmengine.evaluator import Evaluator
from mmengine.model import is_model_wrapper
from mmengine.runner import ValLoop, autocast
from mmpretrain.registry import LOOPS
from torch.utils.data import DataLoader

from pmsn_mm.evaluation.functional.features import STAGES, batch_features
from pmsn_mm.utils.validation import check_choice


@LOOPS.register_module()
class FeatureValLoop(ValLoop):
    """mmengine's ``ValLoop`` whose outputs are frozen features.

    Every batch goes through
    :func:`~pmsn_mm.evaluation.functional.batch_features` (the model's
    data pre-processor, its first view, ``extract_feat``, 4-D maps pooled)
    instead of ``model.val_step``, so any self-supervised model with an
    ``extract_feat`` is evaluated alike (PMSN, PSwAV, mmpretrain's SimCLR
    and MAE, ...), and the evaluator receives one Tensor of shape (D,) per
    sample: the contract of :class:`~pmsn_mm.evaluation.metrics.KNNAccuracy`
    with a :class:`~pmsn_mm.datasets.KNNEvalDataset` (memory + query split)
    as the val dataset. Everything else is ``ValLoop``'s: ``val_interval`` /
    ``val_begin`` of the train loop, metrics in the log and the message hub
    (``val/<metric>``), ``CheckpointHook(save_best=...)``, ranks sharded
    by the sampler and gathered by the metric.

    Config::

        val_cfg = dict(type='FeatureValLoop')
        val_dataloader = dict(dataset=dict(type='KNNEvalDataset', ...), ...)
        val_evaluator = dict(type='KNNAccuracy', label_key='gt_label')

    Args:
        runner: The runner.
        dataloader: The val dataloader (or its config).
        evaluator: The evaluator (or its config).
        fp16: Extract features under autocast. Defaults to False.
        stage: ``'backbone'`` (``extract_feat``) or ``'neck'`` (the neck on
            it). Defaults to ``'backbone'``.
    """

    def __init__(self,
                 runner,
                 dataloader: Union[DataLoader, Dict],
                 evaluator: Union[Evaluator, Dict, List],
                 fp16: bool = False,
                 stage: str = 'backbone') -> None:
        check_choice('FeatureValLoop stage', stage, STAGES)
        super().__init__(runner, dataloader, evaluator, fp16)
        self.stage = stage

    @torch.no_grad()
    def run_iter(self, idx: int, data_batch: Sequence[dict]) -> None:
        """Features of one batch, passed to the evaluator.

        Args:
            idx: Index of the batch.
            data_batch: A batch of the val dataloader.
        """
        self.runner.call_hook(
            'before_val_iter', batch_idx=idx, data_batch=data_batch)
        model = self.runner.model
        model = model.module if is_model_wrapper(model) else model
        with autocast(enabled=self.fp16):
            outputs = list(batch_features(model, data_batch, self.stage))
        self.evaluator.process(data_samples=outputs, data_batch=data_batch)
        self.runner.call_hook(
            'after_val_iter',
            batch_idx=idx,
            data_batch=data_batch,
            outputs=outputs)
