"""EMA target encoder whose momentum follows MSN's linear schedule."""
from typing import Any, Optional, cast

import torch
from mmengine.logging import MessageHub
from mmengine.model import ExponentialMovingAverage
from mmpretrain.registry import MODELS
from torch import Tensor, nn

from ...utils.validation import check_int, check_number, check_positive

#: Appended to a momentum error: the convention is easy to get backwards.
MOMENTUM_CONVENTION = ('mmengine convention: the momentum is the weight of '
                       "the online model; MSN's target momentum m is 1 - "
                       'momentum (MSN m = 0.996 -> momentum=0.004).')


@MODELS.register_module()
class LinearMomentumEMA(ExponentialMovingAverage):
    r"""EMA whose momentum moves linearly with the number of updates (MSN).

    Every update is ``averaged = (1 - m_t) * averaged + m_t * online``
    (mmengine's convention: ``m_t`` weighs the *online* model; MSN's
    target momentum is ``1 - m_t``), with

    .. math::

        m_t = m_0 + (m_{end} - m_0) \min(1, t / (s \cdot T))

    with ``t`` the updates so far (the ``steps`` buffer), ``T`` the training
    iterations and ``s`` the stretch (official MSN: 0.996 -> 1.0 over 1.25
    runs). The first update averages too (the copy is :meth:`sync_from`'s).

    Args:
        model: The online model to average.
        momentum: ``m_0``, in (0, 1). Defaults to 0.004 (MSN: 0.996).
        end_momentum: ``m_end``, in [0, 1). Defaults to 0.0 (MSN: 1.0).
        schedule_scale: ``s``, > 0. Defaults to 1.25.
        max_iters: ``T``; None reads it from the message hub.
        interval: Update every ``interval`` calls (mmengine).
        device: Device of the averaged copy (mmengine).
        update_buffers: Average buffers too (mmengine).
    """

    def __init__(self,
                 model: nn.Module,
                 momentum: float = 0.004,
                 end_momentum: float = 0.0,
                 schedule_scale: float = 1.25,
                 max_iters: Optional[int] = None,
                 interval: int = 1,
                 device: Optional[torch.device] = None,
                 update_buffers: bool = False) -> None:
        try:
            momentum = check_number('LinearMomentumEMA momentum', momentum,
                                    0, 1, low_open=True, high_open=True)
            end_momentum = check_number('LinearMomentumEMA end_momentum',
                                        end_momentum, 0, 1, high_open=True)
        except ValueError as err:
            raise ValueError(f'{err} {MOMENTUM_CONVENTION}') from None
        schedule_scale = check_positive('LinearMomentumEMA schedule_scale',
                                        schedule_scale)
        if max_iters is not None:  # None: read from the message hub
            max_iters = check_int('LinearMomentumEMA max_iters', max_iters,
                                  1)
        super().__init__(
            model,
            momentum=momentum,
            interval=interval,
            device=device,
            update_buffers=update_buffers)
        self.end_momentum = end_momentum
        self.schedule_scale = schedule_scale
        self.max_iters = max_iters
        self.current_momentum = momentum
        #: Host copy of ``steps``; None: re-read it (after a load).
        self._num_updates: Optional[int] = 0

    def momentum_at(self, steps: int) -> float:
        """``m_t`` after ``steps`` updates.

        Args:
            steps: Number of updates so far, >= 0.

        Returns:
            The momentum (mmengine convention).
        """
        if steps == 0 or self.end_momentum == self.momentum:
            return self.momentum
        max_iters = self.max_iters or MessageHub.get_current_instance(
        ).get_info('max_iters')
        if max_iters is None:
            raise RuntimeError(
                'LinearMomentumEMA needs the number of training iterations '
                'for its schedule: run it in an mmengine Runner (which '
                "records 'max_iters' in the message hub) or pass max_iters.")
        progress = min(1.0, steps / (self.schedule_scale * max_iters))
        return self.momentum + (self.end_momentum - self.momentum) * progress

    @torch.no_grad()
    def sync_from(self, model: nn.Module) -> None:
        """Make the average an exact copy of ``model`` (parameters and
        buffers), without counting an update: MSN's initial target.

        Args:
            model: The online model.
        """
        for avg, src in zip(self.module.state_dict().values(),
                            model.state_dict().values()):
            avg.copy_(src.to(avg.device))

    @property
    def num_updates(self) -> int:
        """Number of updates so far, ``t``, counted on the host.

        Mirrors the ``steps`` buffer without reading it every update (a
        host sync on a GPU); read once after a state dict load.
        """
        if self._num_updates is None:
            self._num_updates = int(self.steps)  # once after a load
        return self._num_updates

    def _load_from_state_dict(self, state_dict: dict, prefix: str, *args,
                              **kwargs) -> None:
        """Load as ``nn.Module`` does, then re-read ``steps`` on next use."""
        super()._load_from_state_dict(state_dict, prefix, *args, **kwargs)
        self._num_updates = None  # resynchronised from the loaded buffer

    @torch.no_grad()
    def update_parameters(self, model: nn.Module) -> None:
        """Average ``model`` in with the scheduled momentum of this update,
        ``m_t`` for ``t = steps``, then count it.

        mmengine's ``update_parameters``, but update 0 averages too and all
        tensors go together (``_foreach_lerp_``, ``_foreach_copy_``): no
        host sync, the same average as official MSN's.

        Args:
            model: The online model.
        """
        steps = self.num_updates
        self.current_momentum = self.momentum_at(steps)
        # keep_vars: no detach op per tensor (no_grad already applies)
        source = (model.state_dict(keep_vars=True) if self.update_buffers
                  else dict(model.named_parameters()))
        if steps % self.interval == 0:
            averaged, online = [], []
            for key, avg in self.avg_parameters.items():
                if avg.dtype.is_floating_point:
                    averaged.append(avg)
                    online.append(source[key].to(avg.device))
            if averaged:
                torch._foreach_lerp_(averaged, online, self.current_momentum)
        if not self.update_buffers:  # copied, not averaged (mmengine)
            copies, online = [], []
            for avg, src in zip(self.module.buffers(), model.buffers()):
                copies.append(avg)
                online.append(src.to(avg.device))
            if copies:
                torch._foreach_copy_(copies, online)
        self._num_updates = steps + 1
        self.steps.fill_(self._num_updates)

    def avg_func(self, averaged_param: Tensor, source_param: Tensor,
                 steps: int) -> None:
        """``averaged += m_t * (source - averaged)``, in place.

        Args:
            averaged_param: The averaged parameter.
            source_param: The online parameter.
            steps: Number of updates so far (unused: ``m_t`` is set once
                per update by :meth:`update_parameters`).
        """
        averaged_param.lerp_(source_param, self.current_momentum)

    def extra_repr(self) -> str:
        return (f'momentum={self.momentum}, end_momentum={self.end_momentum}, '
                f'schedule_scale={self.schedule_scale}, '
                f'max_iters={self.max_iters}')


class EMATargetMixin:
    """An algorithm with an EMA target encoder updated as official MSN does.

    The algorithm sets ``self.target_net`` (a :class:`LinearMomentumEMA`) and
    implements :meth:`ema_source`. :meth:`init_weights` copies the online
    weights into the target; :class:`~pmsn_mm.engine.hooks.TargetEMAHook` calls
    :meth:`update_target` after every step; ``loss`` calls
    :meth:`check_target_updated` first and :meth:`mark_target_update_due` last,
    so a step after one without target update is refused.
    """

    _target_update_due = False
    # set by the algorithm (an nn.Module) this class is mixed into
    target_net: LinearMomentumEMA
    training: bool

    def ema_source(self) -> nn.Module:
        """The online module the target averages."""
        raise NotImplementedError

    def init_weights(self) -> None:
        """Initialise, then copy the online weights into the target."""
        # the algorithm's base (mmengine's BaseModule) has init_weights
        cast(Any, super()).init_weights()
        self.target_net.sync_from(self.ema_source())

    def update_target(self) -> None:
        """Average the online weights into the target (after a step)."""
        self.target_net.update_parameters(self.ema_source())
        self._target_update_due = False

    def next_target_momentum(self) -> float:
        """The target momentum (MSN convention) of the coming update, from
        the target's host step counter (no device read)."""
        return 1.0 - self.target_net.momentum_at(self.target_net.num_updates)

    def check_target_updated(self) -> None:
        """Refuse a step whose previous one left the target without update."""
        if self.training and self._target_update_due:
            raise RuntimeError(
                f'{type(self).__name__}: the EMA target was not updated after '
                "the last training step. Add dict(type='TargetEMAHook') to "
                'default_hooks or custom_hooks (configs/_base_/'
                'default_runtime.py has it), or call model.update_target() '
                'after every optimizer step.')

    def mark_target_update_due(self) -> None:
        """Note that this training step needs :meth:`update_target`."""
        if self.training:
            self._target_update_due = True
