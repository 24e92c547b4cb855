"""Log how the mean prototype probability p̄ compares with the prior."""
import json
import os
import os.path as osp
from typing import Dict, List, Optional

import torch
from mmengine.dist import all_reduce, is_main_process
from mmengine.hooks import Hook
from mmengine.model import is_model_wrapper
from mmpretrain.registry import HOOKS
from torch import Tensor, nn
from torch.func import functional_call

from pmsn_mm.evaluation.functional.prior_diagnostics import (
    prior_diagnostics, sorted_probabilities, update_used_prototypes)

PREFIX = 'prototype_usage/'


@HOOKS.register_module()
class PrototypeUsageHook(Hook):
    """Prior diagnostics of a prototype model (PMSN/MSN) during training.

    Every ``probe_interval`` iterations the hook encodes one view of the
    current batch with the online backbone + neck (unmasked, without
    gradient, in the model's current train/eval mode as the loss sees it;
    on copies of the buffers, so BN running statistics are not updated) and
    takes the head's prototype probabilities (``head.probabilities(z)``:
    its temperature and label smoothing, as in the loss). Every ``interval``
    iterations it all-reduces the accumulated sums over ranks (global p̄) and

    - adds scalars ``prototype_usage/{entropy, effective_clusters,
      kl_forward, kl_reverse, num_used, num_used_cumulative,
      prior_effective_clusters}`` to ``runner.visualizer`` (so TensorBoard /
      W&B backends get them); ``kl_forward`` is ``KL(p̄ ‖ prior)``,
      ``num_used`` counts distinct argmax prototypes in the window and
      ``num_used_cumulative`` those since the start of this run;
    - writes ``<work_dir>/<out_dir>/iter_<n>.png`` (log-log rank vs
      probability of the sorted p̄, prior overlaid; also sent to the
      visualizer with ``add_image``) and ``iter_<n>.json`` (sorted p̄, sorted
      prior and the scalars), ``n = runner.iter + 1`` as in checkpoint names.

    This p̄ is a diagnostic: it is close to, but not the same as, the p̄ of
    the loss, which uses the patch-dropped anchor views (and all of them).
    The model is only read: ``backbone``, ``neck``, ``data_preprocessor``,
    ``head.probabilities`` and ``head.prior_probs`` (``PMSNHead``). The
    used-prototype sets live in the hook and
    restart with each run (they are not checkpointed).

    Args:
        interval: Log every ``interval`` training iterations, >= 1.
            Defaults to 50.
        probe_interval: Probe a batch every ``probe_interval`` iterations
            (p̄ of a log is the mean over the window's probes; a log
            iteration is always probed). None probes only at log iterations.
            Defaults to None.
        view_index: Which view of a multi-view batch to encode; ``1`` is the
            first anchor view of PMSN's ``[target, anchors...]`` order.
            Defaults to 1.
        out_dir: Folder of the plots, relative to ``runner.work_dir`` unless
            absolute. Defaults to ``'prototype_usage'``.
        add_image: Also send the plot to the visualizer. Defaults to True.
    """

    priority = 'LOW'

    def __init__(self,
                 interval: int = 50,
                 probe_interval: Optional[int] = None,
                 view_index: int = 1,
                 out_dir: str = 'prototype_usage',
                 add_image: bool = True) -> None:
        for name, value in (('interval', interval), ('probe_interval',
                                                     probe_interval)):
            if value is not None and (isinstance(value, bool) or
                                      not isinstance(value, int) or value < 1):
                raise ValueError(f'{name} must be an int >= 1 but is '
                                 f'{value!r}.')
        if interval is None:
            raise ValueError('interval must be an int >= 1 but is None.')
        if (isinstance(view_index, bool) or not isinstance(view_index, int)
                or view_index < 0):
            raise ValueError(
                f'view_index must be an int >= 0 but is {view_index!r}.')
        self.interval = interval
        self.probe_interval = probe_interval
        self.view_index = view_index
        self.out_dir = out_dir
        self.add_image = add_image
        self._reset_window()
        self._used: Optional[Tensor] = None

    def _reset_window(self) -> None:
        self._prob_sum: Optional[Tensor] = None
        self._count = 0
        self._window_used: Optional[Tensor] = None

    @staticmethod
    def _unwrap(model: nn.Module) -> nn.Module:
        return model.module if is_model_wrapper(model) else model

    @staticmethod
    def _check_model(model: nn.Module) -> None:
        head = getattr(model, 'head', None)
        missing = [
            name
            for name, ok in (('backbone', hasattr(model, 'backbone')),
                             ('data_preprocessor',
                              hasattr(model, 'data_preprocessor')),
                             ('head.probabilities',
                              hasattr(head, 'probabilities')),
                             ('head.prior_probs',
                              hasattr(head, 'prior_probs'))) if not ok
        ]
        if missing:
            raise AttributeError(
                f'PrototypeUsageHook needs a prototype model such as PMSN; '
                f'{type(model).__name__} lacks {missing}.')

    def before_train(self, runner) -> None:
        self._check_model(self._unwrap(runner.model))
        self._reset_window()
        self._used = None

    # ------------------------------------------------------------ probing
    @torch.no_grad()
    def anchor_probabilities(self, model: nn.Module,
                             data_batch: dict) -> Tensor:
        """Prototype probabilities of one view of a batch.

        Args:
            model: The (unwrapped) model.
            data_batch: A batch from the train dataloader.

        Returns:
            Tensor of shape (B, K).
        """
        inputs = model.data_preprocessor(data_batch, False)['inputs']
        if isinstance(inputs, (list, tuple)):
            if self.view_index >= len(inputs):
                raise ValueError(
                    f'view_index={self.view_index} but the batch has only '
                    f'{len(inputs)} views.')
            inputs = inputs[self.view_index]
        z = _call_keeping_buffers(model.backbone, inputs)
        neck = getattr(model, 'neck', None)
        if neck is not None:
            z = _call_keeping_buffers(neck, z)
        z = z[-1] if isinstance(z, (list, tuple)) else z
        return model.head.probabilities(z.float())

    def accumulate(self, probs: Tensor) -> None:
        """Add a batch of probabilities (N, K) to the current window."""
        probs = probs.detach().double()
        if self._prob_sum is None:
            self._prob_sum = probs.new_zeros(probs.shape[1])
            self._window_used = probs.new_zeros(
                probs.shape[1], dtype=torch.bool)
        self._prob_sum += probs.sum(dim=0)
        self._count += probs.shape[0]
        self._window_used = update_used_prototypes(self._window_used, probs)

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

    def _reduce(self) -> Tensor:
        """All-reduce the window over ranks; returns p̄ (K,), updates sets."""
        num = self._prob_sum.numel()
        used = self._window_used if self._used is None else self._used
        packed = torch.cat([
            self._prob_sum,
            self._prob_sum.new_tensor([float(self._count)]),
            self._window_used.double(), (used | self._window_used).double()
        ])
        all_reduce(packed, op='sum')
        self._window_used = packed[num + 1:2 * num + 1] > 0
        self._used = packed[2 * num + 1:] > 0
        return packed[:num] / packed[num]

    def log(self, runner) -> Dict[str, float]:
        """Reduce, log, plot and start a new window; returns the scalars."""
        if self._prob_sum is None:
            return {}
        mean_probs = self._reduce().cpu()
        window_used, used = self._window_used.cpu(), self._used.cpu()
        self._reset_window()
        if not is_main_process():
            return {}
        model = self._unwrap(runner.model)
        prior = model.head.prior_probs(torch.device('cpu'), torch.float64)
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
        log_now = self.every_n_train_iters(runner, self.interval)
        probe_now = log_now or (self.probe_interval is not None
                                and self.every_n_train_iters(
                                    runner, self.probe_interval))
        if probe_now and data_batch is not None:
            self.accumulate(
                self.anchor_probabilities(
                    self._unwrap(runner.model), data_batch))
        if log_now:
            self.log(runner)


def _call_keeping_buffers(module: nn.Module, x):
    """``module(x)`` on copies of its buffers (BN running stats stay put)."""
    buffers = {name: b.clone() for name, b in module.named_buffers()}
    return functional_call(module, buffers, (x, ), strict=False)


def _to_list(t: Tensor) -> List[float]:
    return [float(v) for v in t]
