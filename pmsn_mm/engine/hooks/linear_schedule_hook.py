"""Base hook: set a model scalar on a linear schedule every iteration."""
import math
from typing import Optional

from mmengine.hooks import Hook
from mmengine.model import is_model_wrapper


class LinearScheduleHook(Hook):
    """Before each training iteration, set ``model.<setter>(value)``.

    ``value = start + (end - start) * min(1, iter / (scale * max_iters))``.
    MSN stretches its momentum and temperature schedules over
    ``scale = 1.25`` times the training length, so they never reach ``end``.
    The value depends only on ``runner.iter``, so a resumed run continues the
    schedule where it stopped. The value is logged as ``train/<log_name>``.

    Args:
        start: Value at iteration 0.
        end: Value at iteration ``scale * max_iters``.
        scale: Stretch of the schedule relative to the run, > 0.
    """

    setter: str = ''
    log_name: str = ''
    priority = 'NORMAL'

    def __init__(self, start: float, end: float, scale: float = 1.25) -> None:
        for name, value in (('start', start), ('end', end), ('scale', scale)):
            if not math.isfinite(value):
                raise ValueError(f'{name} must be finite, got {value}.')
        if scale <= 0:
            raise ValueError(f'scale must be > 0, got {scale}.')
        self.start = float(start)
        self.end = float(end)
        self.scale = float(scale)

    def value_at(self, cur_iter: int, max_iters: int) -> float:
        """The scheduled value before iteration ``cur_iter`` (0-based)."""
        progress = min(1.0, cur_iter / (self.scale * max(1, max_iters)))
        return self.start + (self.end - self.start) * progress

    def before_train_iter(self,
                          runner,
                          batch_idx: int,
                          data_batch: Optional[dict] = None) -> None:
        model = runner.model.module if is_model_wrapper(
            runner.model) else runner.model
        setter = getattr(model, self.setter, None)
        if setter is None:
            raise TypeError(
                f'{type(self).__name__} needs a model with a public '
                f'`{self.setter}` method; {type(model).__name__} has none.')
        value = self.value_at(runner.iter, runner.max_iters)
        setter(value)
        runner.message_hub.update_scalar(f'train/{self.log_name}', value)
