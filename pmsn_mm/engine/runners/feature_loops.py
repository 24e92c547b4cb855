"""Val and test loops on frozen features (kNN and logistic-regression
evaluation of an encoder, during training or of any checkpoint)."""
from typing import Any, Dict, List, Union, cast

import torch
from mmengine.evaluator import Evaluator
from mmengine.runner import TestLoop, ValLoop, autocast
from mmpretrain.registry import LOOPS
from mmpretrain.utils import get_ori_model
from torch.utils.data import DataLoader

from pmsn_mm.evaluation.functional.features import STAGES, batch_features
from pmsn_mm.utils.validation import check_choice


class FeatureLoopMixin:
    """What the val and the test feature loops share: the ``stage`` setting
    and one batch (hooks, features, evaluator).

    Args:
        runner: The runner.
        dataloader: The dataloader (or its config).
        evaluator: The evaluator (or its config).
        fp16: Extract features under autocast. Defaults to False.
        stage: One of ``STAGES`` (``'backbone'``: ``extract_feat``;
            ``'neck'``, ``'probs'``: the model's later stages).
            Defaults to ``'backbone'``.
    """

    #: ``'val'`` or ``'test'``: which hooks :meth:`run_iter` calls.
    mode: str = 'val'
    # set by the mmengine loop this class is mixed into
    runner: Any
    evaluator: Evaluator
    fp16: bool

    def __init__(self,
                 runner,
                 dataloader: Union[DataLoader, Dict],
                 evaluator: Union[Evaluator, Dict, List],
                 fp16: bool = False,
                 stage: str = 'backbone') -> None:
        check_choice(f'{type(self).__name__} stage', stage, STAGES)
        # the mmengine loop's ``__init__`` (after this class in the MRO)
        cast(Any, super()).__init__(runner, dataloader, evaluator, fp16)
        self.stage = stage

    @torch.no_grad()
    def run_iter(self, idx: int, data_batch: dict) -> None:
        """Features of one batch, passed to the evaluator.

        Args:
            idx: Index of the batch.
            data_batch: A batch of the loop's dataloader.
        """
        runner = self.runner
        runner.call_hook(f'before_{self.mode}_iter', batch_idx=idx,
                         data_batch=data_batch)
        model = get_ori_model(runner.model)
        with autocast(enabled=self.fp16):
            outputs = list(batch_features(model, data_batch, self.stage))
        self.evaluator.process(data_samples=outputs, data_batch=data_batch)
        runner.call_hook(f'after_{self.mode}_iter', batch_idx=idx,
                         data_batch=data_batch, outputs=outputs)


@LOOPS.register_module()
class FeatureValLoop(FeatureLoopMixin, ValLoop):
    """mmengine's ``ValLoop`` whose outputs are frozen features.

    Every batch goes through
    :func:`~pmsn_mm.evaluation.functional.batch_features` (the model's
    data pre-processor, its first view, ``extract_feat``, 4-D maps pooled)
    instead of ``model.val_step``, so any self-supervised model with an
    ``extract_feat`` is evaluated alike (PMSN, PSwAV, mmpretrain's SimCLR
    and MAE, an ``ImageClassifier`` without head, ...), and the evaluator
    receives one Tensor of shape (D,) per sample: the contract of
    :class:`~pmsn_mm.evaluation.metrics.KNNAccuracy` and
    :class:`~pmsn_mm.evaluation.metrics.LogisticRegressionAccuracy` with a
    :class:`~pmsn_mm.datasets.KNNEvalDataset` (memory/train split + query
    split) as the dataset. Everything else is ``ValLoop``'s:
    ``val_interval`` / ``val_begin`` of the train loop, metrics in the log
    and the message hub (``val/<metric>``),
    ``CheckpointHook(save_best=...)``, ranks sharded by the sampler and
    gathered by the metric.

    Config::

        val_cfg = dict(type='FeatureValLoop')
        val_dataloader = dict(dataset=dict(type='KNNEvalDataset', ...), ...)
        val_evaluator = dict(type='KNNAccuracy', label_key='gt_label')

    Args:
        runner: The runner.
        dataloader: The val dataloader (or its config).
        evaluator: The evaluator (or its config).
        fp16: Extract features under autocast. Defaults to False.
        stage: One of ``STAGES`` (see :class:`FeatureLoopMixin`).
            Defaults to ``'backbone'``.
    """

    mode = 'val'


@LOOPS.register_module()
class FeatureTestLoop(FeatureLoopMixin, TestLoop):
    """mmengine's ``TestLoop`` on frozen features: :class:`FeatureValLoop`
    for ``tools/test.py CONFIG CHECKPOINT`` (the kNN and logistic-regression
    benchmark configs evaluate any checkpoint's encoder this way).

    Config::

        test_cfg = dict(type='FeatureTestLoop')
        test_dataloader = dict(dataset=dict(type='KNNEvalDataset', ...))
        test_evaluator = dict(type='KNNAccuracy', k=20)

    Args:
        runner: The runner.
        dataloader: The test dataloader (or its config).
        evaluator: The evaluator (or its config).
        fp16: Extract features under autocast. Defaults to False.
        stage: One of ``STAGES`` (see :class:`FeatureLoopMixin`).
            Defaults to ``'backbone'``.
    """

    mode = 'test'
