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


def _grads_finite_flag(optimizer: Optimizer) -> Optional[torch.Tensor]:
    """A 0-dim bool tensor on the gradients' device: whether every gradient
    is finite (None without gradients). Not read: no host sync.

    The max-abs norm is finite exactly when every entry is (it cannot
    overflow as an L2 norm can).
    """
    grads = [
        p.grad for group in optimizer.param_groups for p in group['params']
        if p.grad is not None
    ]
    if not grads:
        return None
    return torch.isfinite(
        torch.nn.utils.get_total_norm(grads, norm_type=float('inf')))


def _grads_finite(optimizer: Optimizer) -> bool:
    """Whether every gradient is finite (reads one device value)."""
    flag = _grads_finite_flag(optimizer)
    return flag is None or bool(flag)


@HOOKS.register_module()
class NonFiniteGuardHook(Hook):
    """Catch a diverging run at the iteration it diverges (docs/distributed.md,
    'Non-finite guard'): gradients checked before every optimizer step
    (``'skip'``: one host sync per step), loss terms after every iteration;
    ``'stop'`` raises :class:`NonFiniteTrainingError`, ``'skip'`` after more
    than ``max_skips`` bad iterations; non-finite checkpoints are never
    written. Runs before ``CheckpointHook``.

    Args:
        action: ``'stop'`` or ``'skip'``. Defaults to ``'stop'``.
        max_skips: Bad iterations tolerated with ``'skip'``. Defaults to 10.
    """

    priority = 'NORMAL'

    def __init__(self, action: str = 'stop', max_skips: int = 10) -> None:
        check_choice('NonFiniteGuardHook action', action, ACTIONS)
        self.action = action
        self.max_skips = check_int('NonFiniteGuardHook max_skips', max_skips,
                                   0)
        self._handles: list = []
        self._dropped_step = False
        self._grads_ok: Optional[torch.Tensor] = None
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

    # not traced by torch.compile (mmengine's compile=True compiles the
    # whole train_step, optimizer included): plain eager bookkeeping
    @torch._dynamo.disable
    def _before_step(self, optimizer: Optimizer, args, kwargs) -> None:
        if self.action == 'stop':  # read after the iteration, with the loss
            flag = _grads_finite_flag(optimizer)
            if flag is not None:
                self._grads_ok = flag if self._grads_ok is None else (
                    self._grads_ok & flag)
            return
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
        # one device read for all flags (the gradient flag last)
        device = next(iter(terms.values())).device if terms else (
            self._grads_ok.device if self._grads_ok is not None else 'cpu')
        if self._grads_ok is not None:
            grads_bad = (~self._grads_ok).to(device)
        else:
            # a fill on the device, not an upload of a Python bool
            grads_bad = torch.full((), self._dropped_step, dtype=torch.bool,
                                   device=device)
        flags = torch.stack(
            [~torch.isfinite(v).all() for v in terms.values()] +
            [grads_bad]).float()
        self._dropped_step = False
        self._grads_ok = None
        local = flags
        if get_dist_info()[1] > 1:
            flags = flags.clone()
            all_reduce(flags, op='max')
        # the local and the global flags as the bits of one integer: a
        # single device read (`.item()`) on every device
        num = local.numel()
        bits = torch.pow(2, torch.arange(2 * num, device=local.device))
        code = int((torch.cat([local, flags]).long() * bits).sum().item())
        local_bad = [bool(code >> i & 1) for i in range(num - 1)]
        global_bad = [bool(code >> (num + i) & 1) for i in range(num)]
        if not any(global_bad):
            return
        dropped = bool(global_bad[-1])
        bad = [key for key, flag in zip(terms, global_bad[:-1]) if flag]
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
