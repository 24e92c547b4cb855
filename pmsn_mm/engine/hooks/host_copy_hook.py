"""Count the host-to-device copies of each iteration of mmengine's loop."""
from typing import Dict, List, Optional, Union

import torch
from mmengine.hooks import Hook
from mmpretrain.registry import HOOKS
from mmpretrain.utils import get_ori_model

from pmsn_mm.engine.host_copies import HostCopyCounter


@HOOKS.register_module()
class HostCopyHook(Hook):
    """Run the training loop under a
    :class:`~pmsn_mm.engine.host_copies.HostCopyCounter` and keep its counts
    per iteration and phase (the CPU proxy of a GPU loop's blocking
    uploads; a diagnostic, not for production runs).

    From ``before_train`` to ``after_train`` the counter is the innermost
    ``TorchFunctionMode``; the model's parameters and buffers and the
    optimiser's state are device tensors, each batch handed to
    ``before_train_iter`` is marked as the loader's batch (this hook has the
    highest priority: it runs first). Phases of an iteration:

    - ``views``: the data pre-processor's forward (upload, views);
    - ``train_step``: the rest of ``model.train_step`` (forward, loss,
      backward, clipping, optimiser step);
    - ``hooks``: the ``before_train_iter`` and ``after_train_iter`` hooks
      (``TargetEMAHook``'s update, the guard, the logger, ...) and, with
      ``num_workers=0``, the loading of the next batch;
    - ``val``: a validation run inside the training loop.

    A ``non_blocking`` upload of the batch counts as ``batch`` only from
    pinned memory: on a GPU run the loader's tensors (``pin_memory=True``
    pins them), on a CPU run the config's ``train_dataloader.pin_memory``
    (what the same config would do on a GPU; nothing can be pinned here).

    Args:
        device: The modelled device (None: the data pre-processor's).

    Attributes:
        iters: One ``{phase: dict(blocking=..., batch=..., sites=...)}`` per
            finished iteration.
    """

    priority = 'HIGHEST'

    def __init__(self, device: Optional[Union[str, torch.device]] = None):
        self.device = device
        self.counter: Optional[HostCopyCounter] = None
        self._pinned: Optional[bool] = None
        self.iters: List[Dict[str, dict]] = []
        self._handles: list = []
        self._started = False

    def before_train(self, runner) -> None:
        model = get_ori_model(runner.model)
        pre = model.data_preprocessor
        device = self.device or getattr(pre, 'device', None) or next(
            model.parameters()).device
        self.counter = HostCopyCounter(device)
        self.counter.mark_device(runner.model, runner.optim_wrapper)
        # the loader as built (the saved config holds what the user wrote)
        loader = getattr(getattr(runner, 'train_loop', None), 'dataloader',
                         None)
        self._pinned = None if torch.device(
            device).type == 'cuda' else bool(
                getattr(loader, 'pin_memory', False))
        self.iters = []
        self._handles = [
            pre.register_forward_pre_hook(lambda *_: self._set('views')),
            pre.register_forward_hook(lambda *_: self._set('train_step')),
        ]
        self._set('hooks')
        self.counter.__enter__()

    def _set(self, phase: str) -> None:
        if self.counter is not None:
            self.counter.current = phase

    def _record(self) -> None:
        assert self.counter is not None  # the callers return without one
        if self._started:
            self.iters.append({
                phase: dict(blocking=c['blocking'], batch=c['batch'],
                            sites=dict(self.counter.sites[phase]))
                for phase, c in self.counter.copies.items()
            })
        self.counter.reset()

    def before_train_iter(self, runner, batch_idx: int,
                          data_batch=None) -> None:
        if self.counter is None:
            return
        self._record()
        self._started = True
        if data_batch is not None:
            self.counter.mark_batch(data_batch, pinned=self._pinned)
        self._set('hooks')

    def after_train_iter(self, runner, batch_idx: int, data_batch=None,
                         outputs=None) -> None:
        self._set('hooks')

    def before_val(self, runner) -> None:
        self._set('val')

    def after_val(self, runner) -> None:
        self._set('hooks')

    def after_train(self, runner) -> None:
        if self.counter is None:
            return
        self._record()
        self._started = False
        self.counter.__exit__(None, None, None)
        for handle in self._handles:
            handle.remove()
        self._handles = []
        for i, phases in enumerate(self.iters):
            runner.logger.info(
                f'HostCopyHook iteration {i + 1}: ' + '; '.join(
                    f'{p} {c["blocking"]} blocking, {c["batch"]} batch'
                    for p, c in phases.items()))
