"""FinalValMetricsHook: the latest validation's metrics as the log's last
line, 'Final' when it ran at the last iteration, 'Last' otherwise."""
import types

from pmsn_mm.engine.hooks import FinalValMetricsHook


class _Logger:

    def __init__(self):
        self.lines = []

    def info(self, line):
        self.lines.append(line)


def _runner(it):
    return types.SimpleNamespace(iter=it, logger=_Logger())


def test_final_line_after_the_last_validation():
    hook = FinalValMetricsHook()
    hook.after_val_epoch(_runner(6), dict(a=1.0, b=0.123456, note='x'))
    runner = _runner(6)
    hook.after_run(runner)
    assert runner.logger.lines == [
        'Final validation (iteration 6): a: 1.0000  b: 0.1235  note: x']


def test_last_line_when_training_went_on_and_none_without_validation():
    hook = FinalValMetricsHook()
    runner = _runner(9)
    hook.after_run(runner)
    assert runner.logger.lines == []
    hook.after_val_epoch(_runner(4), dict(acc=50))
    hook.after_val_epoch(_runner(6), dict(acc=75))  # the latest counts
    hook.after_run(runner)
    assert runner.logger.lines == [
        'Last validation (iteration 6; training stopped at 9): acc: '
        '75.0000']
    assert hook.priority == 'LOWEST'
