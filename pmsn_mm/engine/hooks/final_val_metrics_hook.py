"""End a training log on the latest validation's metrics."""
from numbers import Real
from typing import Dict, Optional

from mmengine.hooks import Hook
from mmpretrain.registry import HOOKS


@HOOKS.register_module()
class FinalValMetricsHook(Hook):
    """Repeat the latest validation's metrics as the log's last line.

    mmengine logs them in the middle of a run's last lines; this hook logs
    e.g. ``Final validation (iteration 1170): knn_digit/top1: 33.2500`` when
    the run ends (``Last validation (iteration N; training stopped at M)``
    if it went on after it; nothing without validation).
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
