"""Warm the prior term's weight lambda up linearly (PMSN)."""
from typing import Optional, cast

from mmengine.hooks import Hook
from mmpretrain.registry import HOOKS
from mmpretrain.utils import get_ori_model

from pmsn_mm.utils.validation import check_int, check_number


@HOOKS.register_module()
class PriorWeightWarmupHook(Hook):
    """Raise ``lambda`` of Assran et al., ICLR 2023, arXiv:2210.07277,
    eq. (9) linearly from ``start_weight`` to the loss's ``prior_weight``
    over the first ``warmup_iters`` iterations (or ``warmup_ratio`` of the
    run): a large lambda from the first step can hold a run at the trivial
    solution ``p_i = prior`` (docs/toy_prior_study.md). A function of
    ``runner.iter`` alone, set on ``model.head.loss_module.prior_weight``.

    Args:
        warmup_iters: Warm-up iterations, >= 1 (or ``warmup_ratio``).
        warmup_ratio: Fraction of ``train_cfg.max_iters``, in (0, 1].
        start_weight: Weight at iteration 0, >= 0. Defaults to 0.0.
    """

    priority = 'NORMAL'

    def __init__(self,
                 warmup_iters: Optional[int] = None,
                 warmup_ratio: Optional[float] = None,
                 start_weight: float = 0.0) -> None:
        if (warmup_iters is None) == (warmup_ratio is None):
            raise ValueError('PriorWeightWarmupHook needs exactly one of '
                             'warmup_iters and warmup_ratio.')
        self.warmup_iters = None if warmup_iters is None else check_int(
            'warmup_iters', warmup_iters, 1)
        self.warmup_ratio = None if warmup_ratio is None else check_number(
            'warmup_ratio', warmup_ratio, 0, 1, low_open=True)
        self.start_weight = check_number('start_weight', start_weight, 0)
        self.end_weight: Optional[float] = None

    def _loss(self, runner):
        loss = getattr(
            getattr(get_ori_model(runner.model), 'head', None),
            'loss_module', None)
        if not hasattr(loss, 'prior_weight'):
            raise AttributeError(
                'PriorWeightWarmupHook needs a model whose head.loss_module '
                'has prior_weight (PMSNHead with PMSNLoss), but the model is '
                f'{type(get_ori_model(runner.model)).__name__}.')
        return loss

    def before_train(self, runner) -> None:
        # the configured lambda (the model is built from the config, also
        # on resume, so this is never a warmed-up value)
        self.end_weight = float(self._loss(runner).prior_weight)
        if self.warmup_ratio is not None:
            self.warmup_iters = max(
                1, round(self.warmup_ratio * runner.max_iters))

    def weight(self, iteration: int) -> float:
        """lambda before iteration ``iteration`` (0-based).

        Args:
            iteration: ``runner.iter``.

        Returns:
            The weight.
        """
        # both set by before_train at the latest
        frac = min(1.0, iteration / cast(int, self.warmup_iters))
        return self.start_weight + (cast(float, self.end_weight) -
                                    self.start_weight) * frac

    def before_train_iter(self,
                          runner,
                          batch_idx: int,
                          data_batch: Optional[dict] = None) -> None:
        weight = self.weight(runner.iter)
        self._loss(runner).prior_weight = weight
        runner.message_hub.update_scalar('train/prior_weight', weight)
