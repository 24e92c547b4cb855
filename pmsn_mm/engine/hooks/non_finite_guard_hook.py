"""Stop (or skip) on a non-finite loss or gradient; never save NaN weights."""
from typing import Dict, List, Optional

import torch
from mmengine.dist import all_reduce, get_dist_info
from mmengine.hooks import Hook
from mmengine.optim import OptimWrapperDict
from mmpretrain.registry import HOOKS
from torch.optim import Optimizer

from ...utils.validation import check_choice, check_int

#: What the hook does on a non-finite iteration.
ACTIONS = ('stop', 'skip')
#: Message-hub runtime key (checkpointed) of the number of skipped steps.
SKIPS_KEY = 'non_finite_guard/skipped_steps'


class NonFiniteTrainingError(RuntimeError):
    """Training produced a non-finite loss, gradient or weight."""


def _optimizers(optim_wrapper) -> List[Optimizer]:
    if isinstance(optim_wrapper, OptimWrapperDict):
        return [wrapper.optimizer for wrapper in optim_wrapper.values()]
    return [optim_wrapper.optimizer]


def _grads_finite(optimizer: Optimizer) -> bool:
    grads = [
        p.grad for group in optimizer.param_groups for p in group['params']
        if p.grad is not None
    ]
    if not grads:
        return True
    # The L2 norm is finite for finite gradients unless it overflows, and
    # fast (foreach); only a non-finite norm is checked element by element.
    if bool(torch.isfinite(torch.nn.utils.get_total_norm(grads))):
        return True
    return all(bool(torch.isfinite(grad).all()) for grad in grads)


@HOOKS.register_module()
class NonFiniteGuardHook(Hook):
    """Catch a diverging run at the iteration it diverges.

    Without this hook a NaN/inf loss (a too-high lr, ``std = 0`` in the data
    pre-processor, ...) trains to the end, exits 0 and saves checkpoints full
    of NaN. With it:

    - Before every optimizer step (a ``torch.optim`` step pre-hook) the
      gradients are checked; if any is NaN/inf the step is not applied (all
      gradients are dropped, so the optimizer skips every parameter: no
      update, no weight decay, no moment or step-count change).
    - After every iteration the loss terms (the output keys containing
      ``'loss'``) are checked, on all ranks together when distributed.
      A non-finite loss or a dropped step is a *bad iteration*:
      ``action='stop'`` raises :class:`NonFiniteTrainingError` naming the
      iteration, the non-finite terms and the last good checkpoint;
      ``action='skip'`` logs a warning and goes on, and raises once more
      than ``max_skips`` iterations were bad (counted over the whole run,
      resumes included).
    - Before a checkpoint is written, every floating-point tensor of its
      ``state_dict`` (weights, buffers, EMA target, prototypes) is checked; a
      non-finite one raises instead of saving (on the rank that writes
      checkpoints; ``torchrun``/``srun --kill-on-bad-exit`` then end the
      others). Buffers updated by a bad
      forward pass (e.g. BatchNorm running stats) are not rolled back by
      ``'skip'``; this check keeps them out of checkpoints.

    Runs before ``CheckpointHook`` (priority NORMAL), so nothing is saved
    from a bad iteration. With ``AmpOptimWrapper`` the dynamic loss scaler
    skips overflowing steps itself before this hook sees them.

    Args:
        action: ``'stop'`` or ``'skip'``. Defaults to ``'stop'``.
        max_skips: With ``action='skip'``, the number of bad iterations
            tolerated, >= 0. Defaults to 10.
    """

    priority = 'NORMAL'

    def __init__(self, action: str = 'stop', max_skips: int = 10) -> None:
        check_choice('NonFiniteGuardHook action', action, ACTIONS)
        self.action = action
        self.max_skips = check_int('NonFiniteGuardHook max_skips', max_skips,
                                   0)
        self._handles: list = []
        self._dropped_step = False
        self._last_good: Optional[str] = None

    # ------------------------------------------------------------ set-up
    def before_train(self, runner) -> None:
        self._handles = [
            optimizer.register_step_pre_hook(self._before_step)
            for optimizer in _optimizers(runner.optim_wrapper)
        ]
        self._last_good = runner.message_hub.get_info('last_ckpt')

    def after_train(self, runner) -> None:
        for handle in self._handles:
            handle.remove()
        self._handles = []

    def _before_step(self, optimizer: Optimizer, args, kwargs) -> None:
        if _grads_finite(optimizer):
            return
        for group in optimizer.param_groups:
            for param in group['params']:
                param.grad = None
        self._dropped_step = True

    # ------------------------------------------------------------ checks
    def after_train_iter(self,
                         runner,
                         batch_idx: int,
                         data_batch: Optional[dict] = None,
                         outputs: Optional[Dict[str, torch.Tensor]] = None
                         ) -> None:
        terms = {
            key: torch.as_tensor(value).detach()
            for key, value in (outputs or {}).items() if 'loss' in key
        }
        local_bad = [not bool(torch.isfinite(v).all()) for v in terms.values()]
        flags = torch.tensor(
            local_bad + [self._dropped_step], dtype=torch.float32)
        self._dropped_step = False
        if get_dist_info()[1] > 1:
            all_reduce(flags, op='max')
        if not flags.any():
            return
        dropped = bool(flags[-1])
        bad = [key for key, flag in zip(terms, flags[:-1]) if flag]
        what = ', '.join(
            (f'{key}={terms[key].item()}' if terms[key].numel() == 1 else
             f'{key} (non-finite entries)') if is_bad else
            f'{key} (non-finite on another rank)'
            for key, is_bad in zip(terms, local_bad) if key in bad)
        problem = (f'non-finite loss ({what})' if bad else
                   'non-finite gradients (the loss was finite)')
        where = f'at iteration {runner.iter + 1}/{runner.max_iters}'
        if self.action == 'skip':
            skipped = runner.message_hub.get_info(SKIPS_KEY, 0) + 1
            runner.message_hub.update_info(SKIPS_KEY, skipped)
            if skipped <= self.max_skips:
                step = ('the optimizer step was skipped' if dropped else
                        'its gradients were finite, so the step was applied')
                runner.logger.warning(
                    f'NonFiniteGuardHook: {problem} {where}; {step} '
                    f'({skipped} of max_skips={self.max_skips}).')
                return
            problem += (f', {skipped} bad iterations in this run '
                        f'(max_skips={self.max_skips})')
        self._fail(runner, f'{problem} {where}.')

    def before_save_checkpoint(self, runner, checkpoint: dict) -> None:
        bad = [
            key for key, value in checkpoint.get('state_dict', {}).items()
            if torch.is_tensor(value) and value.is_floating_point()
            and not bool(torch.isfinite(value).all())
        ]
        if bad:
            shown = ', '.join(bad[:5]) + (', ...' if len(bad) > 5 else '')
            self._fail(
                runner, f'{len(bad)} non-finite tensors in the weights at '
                f'iteration {runner.iter + 1}/{runner.max_iters} ({shown}); '
                'the checkpoint was not written.')
        self._last_good = runner.message_hub.get_info('last_ckpt')

    def _fail(self, runner, problem: str) -> None:
        last = (f'the last good checkpoint is {self._last_good}'
                if self._last_good else 'no checkpoint was saved before')
        message = (
            f'Training stopped by NonFiniteGuardHook: {problem} Nothing from '
            f'this iteration was saved; {last}. Common causes: a too-high '
            'lr, std=0 in data_preprocessor, a bad input. Fix the cause and '
            'resume with `tools/train.py CONFIG --resume`, or set '
            "NonFiniteGuardHook(action='skip', max_skips=N) to skip such "
            'steps.')
        runner.logger.error(message)
        raise NonFiniteTrainingError(message)
