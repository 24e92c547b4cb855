"""EMA momentum schedule of the (P)MSN target encoder."""
from mmpretrain.registry import HOOKS

from .linear_schedule_hook import LinearScheduleHook


@HOOKS.register_module()
class TargetMomentumHook(LinearScheduleHook):
    """Linear EMA momentum schedule, MSN's 0.996 → 1.0 over 1.25× the run.

    Calls ``model.set_target_momentum(m)`` before every training iteration
    (see :class:`LinearScheduleHook`); logs ``train/target_momentum``.

    Args:
        start: Initial momentum. Defaults to 0.996.
        end: Final momentum. Defaults to 1.0.
        scale: Schedule length relative to the run. Defaults to 1.25.
    """

    setter = 'set_target_momentum'
    log_name = 'target_momentum'

    def __init__(self,
                 start: float = 0.996,
                 end: float = 1.0,
                 scale: float = 1.25) -> None:
        for name, value in (('start', start), ('end', end)):
            if not 0 <= value <= 1:
                raise ValueError(
                    f'momentum {name} must be in [0, 1], got {value}.')
        super().__init__(start, end, scale)
