"""End a training log on the latest validation's metrics."""
from numbers import Real
from typing import Dict, Optional

from mmengine.hooks import Hook
from mmpretrain.registry import HOOKS


@HOOKS.register_module()
class FinalValMetricsHook(Hook):
    """Repeat the latest validation's metrics as the log's last line.

    mmengine logs a validation's metrics in the middle of a run's last
    lines (before the best-checkpoint note and the run's end); this hook
    keeps the metrics of the latest validation and the iteration it ran at,
    and when the run ends logs e.g. ``Final validation (iteration 1170):
    knn_digit/top1: 33.2500  knn_background/top1: 37.6000`` (``Last
    validation (iteration N; training stopped at M)`` when the run went on
    after it); nothing when the run did not validate. ``tools/train.py``
    registers it.
    """

    priority = 'LOWEST'

    def __init__(self) -> None:
        self.metrics: Optional[Dict[str, object]] = None
        self.iter = 0

    def after_val_epoch(self,
                        runner,
                        metrics: Optional[Dict[str, object]] = None) -> None:
        """Keep the validation's metrics and the iteration it ran at."""
        self.metrics = dict(metrics or {})
        self.iter = runner.iter

    def final_line(self, runner) -> Optional[str]:
        """The line :meth:`after_run` logs (None: no validation ran).

        Args:
            runner: The runner, after training.
        """
        if not self.metrics:
            return None
        values = '  '.join(
            f'{name}: {value:.4f}' if isinstance(value, Real) else
            f'{name}: {value}' for name, value in self.metrics.items())
        final = self.iter == runner.iter
        when = (f'iteration {self.iter}' if final else
                f'iteration {self.iter}; training stopped at {runner.iter}')
        return f'{"Final" if final else "Last"} validation ({when}): {values}'

    def after_run(self, runner) -> None:
        """Log :meth:`final_line`, the run's last line."""
        line = self.final_line(runner)
        if line:
            runner.logger.info(line)
