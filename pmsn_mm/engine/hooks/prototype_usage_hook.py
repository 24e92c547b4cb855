"""Log how the mean prototype probability p̄ compares with the prior."""
import json
import os
import os.path as osp
from typing import TYPE_CHECKING, Dict, List, Optional, cast

import torch
from mmengine.dist import is_main_process
from mmengine.hooks import Hook
from mmpretrain.registry import HOOKS
from mmpretrain.utils import get_ori_model
from torch import Tensor

from pmsn_mm.evaluation.functional.prior_diagnostics import (
    prior_diagnostics, sorted_probabilities)
from pmsn_mm.utils.validation import check_int

if TYPE_CHECKING:
    from pmsn_mm.models.heads import BasePrototypeHead

PREFIX = 'prototype_usage/'


@HOOKS.register_module()
class PrototypeUsageHook(Hook):
    """Prior diagnostics of a prototype model (PMSN/MSN) during training.

    After every iteration it reads the step's p̄ and argmax set from the head
    (``head.step_statistics()``; no second forward pass, already reduced over
    ranks). Every ``interval`` iterations it averages the window's p̄, adds
    scalars ``prototype_usage/{entropy, effective_clusters, kl_forward,
    kl_reverse, num_used, num_used_cumulative, prior_effective_clusters}`` to
    the visualizer and writes ``<work_dir>/<out_dir>/iter_<n>.png`` (log-log
    rank vs probability, prior overlaid) and ``iter_<n>.json``. The cumulative
    set restarts with each run.

    Args:
        interval: Log every ``interval`` iterations, >= 1. Defaults to 50.
        out_dir: Folder of the plots, relative to ``runner.work_dir`` unless
            absolute. Defaults to ``'prototype_usage'``.
        add_image: Also send the plot to the visualizer. Defaults to True.
    """

    priority = 'LOW'

    def __init__(self,
                 interval: int = 50,
                 out_dir: str = 'prototype_usage',
                 add_image: bool = True) -> None:
        self.interval = check_int('interval', interval, 1)
        self.out_dir = out_dir
        self.add_image = add_image
        self._reset_window()
        self._used: Optional[Tensor] = None

    def _reset_window(self) -> None:
        self._prob_sum: Optional[Tensor] = None
        self._count = 0
        self._window_used: Optional[Tensor] = None

    @staticmethod
    def _head(runner) -> 'BasePrototypeHead':
        model = get_ori_model(runner.model)
        head = getattr(model, 'head', None)
        if not (hasattr(head, 'step_statistics') and hasattr(head, 'prior')):
            raise AttributeError(
                'PrototypeUsageHook needs a prototype model whose head '
                'gives its step statistics (step_statistics()) and owns a '
                'prior, '
                f'such as PMSN with PMSNHead; {type(model).__name__} with '
                f'{type(head).__name__} has not.')
        return cast('BasePrototypeHead', head)  # or one alike

    def before_train(self, runner) -> None:
        self._head(runner)
        self._reset_window()
        self._used = None

    def accumulate(self, mean_probs: Tensor, used: Tensor) -> None:
        """Add a step's p̄ (K,) and argmax set (bool (K,)) to the window."""
        mean_probs = mean_probs.detach().double()
        if self._prob_sum is None:
            self._prob_sum = torch.zeros_like(mean_probs)
            self._window_used = torch.zeros_like(mean_probs, dtype=torch.bool)
        self._prob_sum += mean_probs
        self._count += 1
        assert self._window_used is not None  # set with _prob_sum
        self._window_used |= used.to(self._window_used.device)

    # ------------------------------------------------------------ logging
    @staticmethod
    def compute_scalars(mean_probs: Tensor, prior: Tensor, window_used: Tensor,
                        used: Tensor) -> Dict[str, float]:
        """The logged scalars (keys prefixed ``prototype_usage/``).

        Args:
            mean_probs: Tensor of shape (K,), p̄.
            prior: Tensor of shape (K,).
            window_used: Bool tensor (K,), argmax prototypes of the window.
            used: Bool tensor (K,), argmax prototypes since the start.

        Returns:
            Dict of floats.
        """
        stats = prior_diagnostics(mean_probs, prior)
        stats.pop('prior_entropy')
        stats['num_used'] = float(window_used.sum())
        stats['num_used_cumulative'] = float(used.sum())
        return {PREFIX + k: v for k, v in stats.items()}

    def log(self, runner) -> Dict[str, float]:
        """Reduce, log, plot and start a new window; returns the scalars."""
        if self._prob_sum is None:
            return {}
        mean_probs = (self._prob_sum / self._count).cpu()
        assert self._window_used is not None  # set with _prob_sum
        window_used = self._window_used.cpu()
        used = window_used if self._used is None else (self._used
                                                       | window_used)
        self._used = used
        self._reset_window()
        if not is_main_process():
            return {}
        prior = self._head(runner).prior.probs.detach().cpu().double()
        scalars = self.compute_scalars(mean_probs, prior, window_used, used)
        step = runner.iter + 1
        runner.visualizer.add_scalars(scalars, step=step)
        out_dir = osp.join(runner.work_dir, self.out_dir)
        os.makedirs(out_dir, exist_ok=True)
        # matplotlib only when a plot is drawn (`import pmsn_mm` stays light)
        from pmsn_mm.visualization import plot_rank_probability
        image = plot_rank_probability(
            mean_probs,
            prior,
            osp.join(out_dir, f'iter_{step}.png'),
            title=f'iter {step}: exp H = '
            f'{scalars[PREFIX + "effective_clusters"]:.2f}, '
            f'KL(p̄‖prior) = {scalars[PREFIX + "kl_forward"]:.3f}')
        if self.add_image:
            runner.visualizer.add_image('prototype_usage', image, step=step)
        p_sorted, q_sorted = sorted_probabilities(mean_probs, prior)
        short = {k[len(PREFIX):]: v for k, v in scalars.items()}
        record = dict(iter=step, mean_probs_sorted=_to_list(p_sorted),
                      prior_sorted=_to_list(q_sorted), **short)
        with open(osp.join(out_dir, f'iter_{step}.json'), 'w') as f:
            json.dump(record, f, indent=1)
        runner.logger.info(f'prototype usage at iter {step}: ' + ', '.join(
            f'{k} {v:.4g}' for k, v in short.items()))
        return scalars

    def after_train_iter(self,
                         runner,
                         batch_idx: int,
                         data_batch: Optional[dict] = None,
                         outputs: Optional[dict] = None) -> None:
        stats = self._head(runner).step_statistics()
        if stats is not None and stats.mean_probs is not None:
            self.accumulate(stats.mean_probs, stats.prototypes_used)
        if self.every_n_train_iters(runner, self.interval):
            self.log(runner)


def _to_list(t: Tensor) -> List[float]:
    return [float(v) for v in t]
