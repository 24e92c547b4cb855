"""Target sharpening temperature schedule of (P)MSN."""
from mmpretrain.registry import HOOKS

from .linear_schedule_hook import LinearScheduleHook


@HOOKS.register_module()
class SharpenTemperatureHook(LinearScheduleHook):
    """Linear schedule of the sharpening temperature T (MSN: 0.25 → 0.25).

    Calls ``model.set_sharpen_temperature(T)`` before every training
    iteration (see :class:`LinearScheduleHook`); logs
    ``train/sharpen_temperature``.

    Args:
        start: Initial temperature, > 0. Defaults to 0.25.
        end: Final temperature, > 0. Defaults to 0.25.
        scale: Schedule length relative to the run. Defaults to 1.25.
    """

    setter = 'set_sharpen_temperature'
    log_name = 'sharpen_temperature'

    def __init__(self,
                 start: float = 0.25,
                 end: float = 0.25,
                 scale: float = 1.25) -> None:
        for name, value in (('start', start), ('end', end)):
            if not value > 0:
                raise ValueError(
                    f'temperature {name} must be > 0, got {value}.')
        super().__init__(start, end, scale)
