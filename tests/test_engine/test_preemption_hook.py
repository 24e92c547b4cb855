"""PreemptionHook's settings, handlers, requeue rule and agreement (whole
runs, resumed exactly: tests/test_tools/test_preemption.py)."""
import os
import os.path as osp
import signal
from types import SimpleNamespace

import pytest
import torch
import torch.multiprocessing as mp
from mmengine.config import Config
from mmengine.runner import Runner

from pmsn_mm.engine.hooks import PreemptionHook, RNGStateHook
from pmsn_mm.engine.hooks.preemption_hook import EXIT_PREEMPTED, slurm_job_id
from pmsn_mm.engine.resume import (PREEMPTION_MARKER, read_preemption_marker,
                                   write_preemption_marker)
from tests._configs import TINY_PMSN, write_config
from tests._dist import free_port, gloo_group
from tests._preemption_hooks import SignalAtIterHook  # noqa: F401 (registers)
from tests._profiling import rule_failure
from tests._profiling.op_counter import OpCounter, assert_host_syncs

SLURM = ('SLURM_JOB_ID', 'SLURM_ARRAY_JOB_ID', 'SLURM_ARRAY_TASK_ID')


@pytest.mark.parametrize('kwargs, setting', [
    (dict(signals='SIGTERM'), 'signals'),
    (dict(signals=['SIGKILL']), 'signals'),
    (dict(signals=['SIGNOPE']), 'signals'),
    (dict(interval=0), 'interval'),
    (dict(interval=2.0), 'interval'),
    (dict(requeue='yes'), 'requeue'),
    (dict(requeue=1), 'requeue'),
    (dict(exit_code=256), 'exit_code'),
    (dict(exit_code=True), 'exit_code'),
])
def test_bad_settings_are_refused_by_name(kwargs, setting):
    with pytest.raises(ValueError, match=f'PreemptionHook {setting} must'):
        PreemptionHook(**kwargs)


def test_requeue_rule(monkeypatch):
    for name in SLURM:
        monkeypatch.delenv(name, raising=False)
    auto, always, never = (PreemptionHook(requeue=r)
                           for r in ('auto', True, False))
    assert slurm_job_id() is None  # outside Slurm: never
    assert not any(hook._should_requeue(signal.SIGUSR1)
                   for hook in (auto, always, never))
    monkeypatch.setenv('SLURM_JOB_ID', '77')
    assert slurm_job_id() == '77'
    assert auto._should_requeue(signal.SIGUSR1)
    assert not auto._should_requeue(signal.SIGTERM)  # scancel, preemption
    assert always._should_requeue(signal.SIGTERM)
    assert not never._should_requeue(signal.SIGUSR1)
    monkeypatch.setenv('SLURM_ARRAY_JOB_ID', '70')
    monkeypatch.setenv('SLURM_ARRAY_TASK_ID', '3')
    assert slurm_job_id() == '70_3'


def _fake_runner(work_dir: str) -> SimpleNamespace:
    return SimpleNamespace(
        work_dir=work_dir, iter=0, max_iters=10, hooks=[],
        logger=SimpleNamespace(info=lambda msg: None,
                               warning=lambda msg: None))


def test_handlers_set_a_flag_and_are_put_back(tmp_path):
    before = signal.getsignal(signal.SIGUSR1)
    hook = PreemptionHook(signals=['SIGUSR1', 'SIGUSR2'])
    runner = _fake_runner(str(tmp_path))
    hook.before_train(runner)
    try:
        with OpCounter() as counter:  # one process: a flag read, no op
            assert hook._agreed(runner) is None
        assert counter.ops == 0, rule_failure(counter.summary())
        os.kill(os.getpid(), signal.SIGUSR2)
        os.kill(os.getpid(), signal.SIGUSR1)  # a second one: counted only
        assert hook.received == signal.SIGUSR2 and hook.ignored == 1
        assert hook._agreed(runner) == signal.SIGUSR2  # one process
    finally:
        write_preemption_marker(str(tmp_path), 'x.pth', 3, 'SIGUSR2')
        hook.after_train(runner)  # the run finished
    assert signal.getsignal(signal.SIGUSR1) is before
    assert read_preemption_marker(str(tmp_path)) is None


class _Exited(Exception):
    pass


def test_preemption_saves_once_with_states_and_marker(tmp_path,
                                                      monkeypatch):
    """In-process run (the exit patched): SIGUSR1 during iteration 3."""
    cfg = Config.fromfile(write_config(tmp_path, TINY_PMSN))
    cfg.work_dir = str(tmp_path / 'work')
    cfg.default_hooks.checkpoint.interval = 5
    cfg.custom_hooks = [dict(type='SignalAtIterHook', at=3)]
    codes = []

    def exit_(self, runner):
        codes.append(self.exit_code)
        raise _Exited

    monkeypatch.setattr(PreemptionHook, '_exit', exit_)
    monkeypatch.delenv('SLURM_JOB_ID', raising=False)
    runner = Runner.from_cfg(cfg)
    [hook] = [h for h in runner.hooks if isinstance(h, PreemptionHook)]
    try:
        with pytest.raises(_Exited):
            runner.train()
    finally:
        hook._restore_handlers()
    assert codes == [EXIT_PREEMPTED]
    work = cfg.work_dir
    assert read_preemption_marker(work) == dict(
        checkpoint=osp.join(work, 'iter_3.pth'), iter=3, signal='SIGUSR1')
    with open(osp.join(work, 'last_checkpoint')) as f:
        assert f.read() == osp.join(work, 'iter_3.pth')
    ckpt = torch.load(osp.join(work, 'iter_3.pth'), weights_only=False)
    assert ckpt['meta']['iter'] == 3 and len(ckpt['rng_states']) == 1
    assert not [n for n in os.listdir(work)
                if n.endswith('.pth') and n != 'iter_3.pth']
    assert PREEMPTION_MARKER in os.listdir(work)


def _agree(rank: int, port: int, out: str) -> None:
    """Rank 1 alone is signalled during iteration 3 (runner.iter 2)."""
    with gloo_group(rank, 2, port):
        hook = PreemptionHook(interval=2)
        runner = _fake_runner(out)
        hook.before_train(runner)
        try:
            stops = []
            for it in range(10):
                runner.iter = it
                if rank == 1 and it == 2:
                    os.kill(os.getpid(), signal.SIGUSR1)
                with OpCounter() as counter:  # what a GPU step would see
                    agreed = hook._agreed(runner)
                assert_host_syncs(counter, what=f'_agreed at iter {it}')
                if agreed is not None:
                    stops.append(it + 1)
                    break
        finally:
            hook._wait_pending()
            hook._restore_handlers()
        torch.save(stops, osp.join(out, f'stops{rank}.pth'))


@pytest.mark.slow
def test_two_ranks_agree_on_the_last_iteration(tmp_path):
    mp.spawn(_agree, args=(free_port(), str(tmp_path)), nprocs=2, join=True)
    stops = [torch.load(osp.join(tmp_path, f'stops{r}.pth')) for r in (0, 1)]
    # flags launched after iteration 4, read after iteration 6
    assert stops == [[6], [6]]


def test_rng_capture_is_a_no_op_in_one_process():
    hook = RNGStateHook()
    hook.capture(SimpleNamespace(iter=3))
    assert hook._states is None


def test_no_signals_turns_the_hook_off(tmp_path):
    before = signal.getsignal(signal.SIGTERM)
    hook = PreemptionHook(signals=[])
    runner = _fake_runner(str(tmp_path))
    hook.before_train(runner)
    assert signal.getsignal(signal.SIGTERM) is before
    assert hook._agreed(runner) is None
    hook.after_train(runner)
