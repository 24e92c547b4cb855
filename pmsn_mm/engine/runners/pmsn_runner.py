"""``PMSNRunner``: mmengine's ``Runner`` with the checks of a pmsn_mm run,
set by every config (``runner_type='PMSNRunner'``) so that every launcher
runs it the same (docs/get_started.md, "Before a run starts"):

- :meth:`from_cfg`: :func:`pmsn_mm.config.check_config`, loaders fitted to
  the machine, gloo and a DDP wrapper on CPU; the run's kept config
  (log, dump, ``meta['cfg']``) stays the config as written;
- once built: upstream notes filtered, the build's console output held
  until the first iteration, so a refusal prints alone and leaves the work
  dir as it was (:mod:`pmsn_mm.engine.deferred_console`);
- :meth:`train`: the work-dir guard of :mod:`pmsn_mm.engine.resume`, and
  an empty training loader refused;
- :meth:`test`: a config without a test loop, or a checkpoint that does
  not fit the model, refused naming what differs.
"""
import copy
import logging
import os
import os.path as osp
import shutil
from contextvars import ContextVar
from typing import Any, Callable, Dict, List, Optional, Tuple, Union

import torch
from mmengine.config import Config
from mmengine.dist import is_main_process
from mmengine.hooks import Hook
from mmengine.logging import MMLogger
from mmengine.model import is_model_wrapper
# mmengine's root registry (a new name there): mmpretrain's tools/train.py
# builds runners with it, before any default scope is set
from mmengine.registry import RUNNERS
from mmengine.runner import Runner
from mmengine.runner.checkpoint import CheckpointLoader
from mmengine.visualization import Visualizer

from ...config import check_config
from ...datasets.non_empty import check_has_batches
from ...utils.refusal import (DeferredConsole, active_console, all_loggers,
                              refusal_message)
from ...utils.upstream_notes import (MMEngineFileClientNotes,
                                     unused_checkpoint_keys_unlisted)
from ..atomic_file_backend import atomic_write_bytes
from ..checkpoint_fit import (checkpoint_fit, config_vit_shape,
                              fitting_benchmarks)
from ..hooks.work_dir_overwrite_hook import WorkDirOverwriteHook
from ..launcher import explain_distributed_thread_notes, setup_cpu_distributed
from ..loaders import fit_loaders_to_machine
from ..optimizers import check_amp_device
from ..resume import RunPlan, plan_run


def distributed_wrapper(cfg: Any) -> None:
    """A distributed run without its own ``model_wrapper_cfg`` wraps the
    model in ``DeviceAwareDistributedDataParallel``, which also takes a
    frozen model (torch's DDP refuses the benchmarks' frozen encoder).

    Args:
        cfg: The config, changed in place.
    """
    if cfg.get('launcher', 'none') == 'none' or cfg.get('model_wrapper_cfg'):
        return
    cfg.model_wrapper_cfg = dict(
        type='DeviceAwareDistributedDataParallel',
        broadcast_buffers=False,
        find_unused_parameters=cfg.get('find_unused_parameters', False))


def _config_dump(cfg: Any) -> Optional[str]:
    """Where mmengine dumps the config in the work dir."""
    if not cfg.get('work_dir') or not getattr(cfg, 'filename', None):
        return None
    return osp.join(osp.abspath(cfg.work_dir), osp.basename(cfg.filename))


#: The config as the user wrote it, for the runner being built (mmengine's
#: ``from_cfg`` passes only one config to ``__init__``).
_WRITTEN: ContextVar[Optional[Config]] = ContextVar('pmsn_written_cfg',
                                                    default=None)


class RunStartedHook(Hook):
    """Releases the held console when a loop's first iteration starts
    (added by ``PMSNRunner``, not by configs).

    Args:
        console: The console to release, or None.
    """

    priority = 'HIGHEST'

    def __init__(self, console: Optional[DeferredConsole]) -> None:
        self.console = console
        self.started = False

    def release(self) -> None:
        """Mark the run started; print what the console held."""
        self.started = True
        if self.console is not None:
            self.console.release()

    def before_train_iter(self, runner, batch_idx: int,
                          data_batch=None) -> None:
        self.release()

    def before_val_iter(self, runner, batch_idx: int,
                        data_batch=None) -> None:
        self.release()

    def before_test_iter(self, runner, batch_idx: int,
                         data_batch=None) -> None:
        self.release()


class _WorkDirBefore:
    """What the work dir held before a runner was built (existence,
    entries, config dump), to leave it so when the run is refused.

    Args:
        cfg: The config (``work_dir``, ``filename``).
    """

    def __init__(self, cfg: Any) -> None:
        work_dir = cfg.get('work_dir')
        self.work_dir: Optional[str] = osp.abspath(work_dir) if work_dir \
            else None
        self.existed = self.work_dir is not None and osp.isdir(self.work_dir)
        self.entries = set(os.listdir(self.work_dir)) if self.existed \
            else set()
        self.dump = _config_dump(cfg)
        self.earlier: Optional[bytes] = None
        self.times: Optional[Tuple[int, int]] = None
        if self.dump is not None and osp.isfile(self.dump):
            with open(self.dump, 'rb') as f:
                self.earlier = f.read()
            stat = os.stat(self.dump)
            self.times = (stat.st_atime_ns, stat.st_mtime_ns)

    def restore(self) -> None:
        """Remove what the refused run created there (rank 0): its log
        folder, its config dump (the earlier one is put back), the work
        dir itself if the run created it."""
        if not is_main_process() or self.work_dir is None:
            return
        inside = self.work_dir + os.sep
        for logger in all_loggers():
            for handler in list(logger.handlers):
                if isinstance(handler, logging.FileHandler) and osp.abspath(
                        handler.baseFilename).startswith(inside):
                    handler.close()
                    logger.removeHandler(handler)
        # the refused run's logger and visualizer write into what is removed
        # below: a run built later in this process under the same name (same
        # config file name and second) must not get them back from mmengine
        for name, logger in list(MMLogger._instance_dict.items()):
            if name != 'mmengine' and getattr(logger, 'log_file', None) and \
                    osp.abspath(logger.log_file).startswith(inside):
                MMLogger._instance_dict.pop(name, None)
        kinds, found = [Visualizer], []  # each subclass has its own dict
        while kinds:
            kind = kinds.pop()
            found.append(kind)
            kinds.extend(kind.__subclasses__())
        for kind in found:
            for name, visualizer in list(kind._instance_dict.items()):
                if any(osp.abspath(str(getattr(backend, '_save_dir', ''))
                                   ).startswith(inside)
                       for backend in getattr(visualizer, '_vis_backends',
                                              {}).values()):
                    kind._instance_dict.pop(name, None)
        if not osp.isdir(self.work_dir):
            return
        if not self.existed:
            shutil.rmtree(self.work_dir, ignore_errors=True)
            return
        for name in set(os.listdir(self.work_dir)) - self.entries:
            path = osp.join(self.work_dir, name)
            if osp.isdir(path) and not osp.islink(path):
                shutil.rmtree(path, ignore_errors=True)
            elif self.dump is None or path != self.dump:
                os.remove(path)
        if self.dump is None:
            return
        if self.earlier is not None:
            atomic_write_bytes(self.earlier, self.dump)
            if self.times is not None:  # as it was, to the nanosecond
                os.utime(self.dump, ns=self.times)
        elif osp.isfile(self.dump):
            os.remove(self.dump)


def _refused(error: BaseException, console: Optional[DeferredConsole],
             before: _WorkDirBefore) -> None:
    """A run ended by ``error`` before its first iteration: a refusal drops
    the held console output and leaves the work dir as it was; a failure
    prints the held output (its traceback follows)."""
    if refusal_message(error) is not None:
        if console is not None:
            console.discard()
        before.restore()
    elif console is not None:
        console.release()


@RUNNERS.register_module()
class PMSNRunner(Runner):
    """mmengine's ``Runner`` with pmsn_mm's checks (see the module
    docstring). Every argument but ``run_plan`` is mmengine's; the config
    may also set ``overwrite_work_dir=True``.

    Args:
        run_plan: What :func:`~pmsn_mm.engine.resume.plan_run` decided
            before the runner was built (e.g. by the cached linear probe).
            Defaults to None: :meth:`train` plans.
    """

    # set by mmengine's Runner (its ``resume`` and ``load_from``)
    _resume: Union[bool, str]
    _load_from: Optional[str]

    def __init__(self, *args: Any, cfg: Any = None,
                 run_plan: Optional[RunPlan] = None, **kwargs: Any) -> None:
        # mmengine keeps ``cfg`` as written; the machine's fit is in the
        # arguments and ``model_wrapper_cfg`` (read by :meth:`wrap_model`)
        written = _WRITTEN.get()
        self._machine_cfg = cfg
        self._run_plan = run_plan
        super().__init__(*args, cfg=written if written is not None else cfg,
                         **kwargs)

    def wrap_model(self, model_wrapper_cfg: Optional[Dict],
                   model: torch.nn.Module) -> Any:
        """mmengine's ``wrap_model`` with the wrapper fitted to the machine
        (:func:`distributed_wrapper`, gloo DDP on a CPU).

        Args:
            model_wrapper_cfg: The written config's wrapper (unused when
                the machine's differs).
            model: The model.
        """
        machine = getattr(self, '_machine_cfg', None)
        if machine is not None:
            model_wrapper_cfg = machine.get('model_wrapper_cfg')
        return super().wrap_model(model_wrapper_cfg, model)

    def build_optim_wrapper(self, optim_wrapper: Any) -> Any:
        """mmengine's ``build_optim_wrapper`` of the wrapper as written, with
        ``AmpOptimWrapper`` without an accelerator refused in one line
        (:func:`~pmsn_mm.engine.optimizers.check_amp_device`).

        Args:
            optim_wrapper: The wrapper's config, or a built wrapper.

        Returns:
            The optimizer wrapper.
        """
        check_amp_device(optim_wrapper)
        return super().build_optim_wrapper(optim_wrapper)

    @classmethod
    def from_cfg(cls, cfg: Config) -> 'PMSNRunner':
        """Check the config, fit it to the machine, then build the runner
        (console output held until the run starts).

        Args:
            cfg: The merged config.

        Returns:
            The runner.
        """
        cfg = copy.deepcopy(cfg)
        check_config(cfg)
        written = copy.deepcopy(cfg)
        console = active_console()  # held by the tool (run_command)
        before = _WorkDirBefore(cfg)
        token = _WRITTEN.set(written)
        try:
            fitted = fit_loaders_to_machine(cfg)
            launcher = cfg.get('launcher', 'none')
            explain_distributed_thread_notes(launcher)
            setup_cpu_distributed(cfg, launcher)
            distributed_wrapper(cfg)
            runner = super().from_cfg(cfg)
        except BaseException as error:
            _refused(error, console, before)
            raise
        finally:
            _WRITTEN.reset(token)
        runner._console = console
        runner._before = before
        runner.logger.addFilter(MMEngineFileClientNotes())
        if fitted:
            runner.logger.info(fitted)
        return runner

    def _run(self, run: Callable[[], Any]) -> Any:
        """Run a loop: until its first iteration starts, an error is handled
        by :func:`_refused`; the held console output is printed when the
        first iteration starts (:class:`RunStartedHook`) or the loop ends.
        """
        started = RunStartedHook(getattr(self, '_console', None))
        self.register_hook(started)
        try:
            result = run()
        except BaseException as error:
            if not started.started:
                _refused(error, started.console,
                         getattr(self, '_before', None) or _WorkDirBefore({}))
            started.release()
            raise
        started.release()
        return result

    # ------------------------------------------------------------ training
    def _plan_work_dir(self) -> WorkDirOverwriteHook:
        """The work-dir guard: :func:`~pmsn_mm.engine.resume.plan_run`'s
        decision (``run_plan``, else made now), logged; the hook that
        carries out an overwrite."""
        plan, earlier = self._run_plan, None
        if plan is None:
            view = Config(dict(work_dir=self.work_dir, resume=self._resume,
                               load_from=self._load_from,
                               train_cfg=self.cfg.get('train_cfg')),
                          filename=self.cfg.filename)
            plan = plan_run(
                view, bool(self.cfg.get('overwrite_work_dir', False)))
            self._resume, self._load_from = view.resume, view.load_from
            # the dump plan_run read is this run's own: mmengine rewrote it
            before = getattr(self, '_before', None)
            earlier = before.earlier if before is not None else None
            if earlier is None:
                plan.config_dump = None
        for note in plan.notes:
            self.logger.info(note)
        return WorkDirOverwriteHook(self.work_dir, plan, dump=earlier)

    def train(self):
        """mmengine's ``train`` behind the work-dir guard; an earlier run's
        files that ``overwrite_work_dir`` moved aside come back if this run
        fails before it writes a checkpoint.

        Returns:
            The trained model.
        """
        overwrite: List[WorkDirOverwriteHook] = []

        def run() -> Any:
            overwrite.append(self._plan_work_dir())
            self.register_hook(overwrite[0])
            check_has_batches(self.train_dataloader)  # before the schedulers
            try:
                return super(PMSNRunner, self).train()
            except BaseException:
                overwrite[0].restore()
                raise

        return self._run(run)

    # ------------------------------------------------------------- testing
    def _check_test_loop(self) -> None:
        missing = [key for key in ('test_dataloader', 'test_cfg',
                                   'test_evaluator')
                   if self.cfg.get(key) is None]
        if not missing:
            return
        backbone = (self.cfg.get('model') or {}).get('backbone') or {}
        shape = config_vit_shape(backbone)
        fits = fitting_benchmarks(shape) if shape else []
        which = (f'with this config\'s encoder ({shape}): {", ".join(fits)}'
                 if fits else 'e.g. configs/pmsn/benchmarks/'
                 'vit-small-p16-lastcls_knn-k20_in1k.py (kNN), '
                 '*_logreg_in1k-1pct.py (low-shot logistic regression)')
        raise ValueError(
            f'{self.cfg.filename} has no test loop ({", ".join(missing)} not '
            'set): it is a training-only config. To evaluate a pretrained '
            f'encoder use a benchmark config {which}; or train a linear '
            'probe (*-linear-*.py) with tools/train.py and test that.')

    def _check_checkpoint(self, path: str) -> str:
        model = self.model.module if is_model_wrapper(self.model) \
            else self.model
        ckpt = CheckpointLoader.load_checkpoint(path, map_location='cpu')
        state: Dict[str, Any] = ckpt.get('state_dict', ckpt) if isinstance(
            ckpt, dict) else {}
        state = {k[len('module.'):] if k.startswith('module.') else k: v
                 for k, v in state.items()}
        return checkpoint_fit(model, state, path)

    def test(self) -> dict:
        """mmengine's ``test``, refusing a config without a test loop or a
        ``load_from`` that does not fit the model; unused keys in one line.

        Returns:
            The metrics.
        """
        def run() -> dict:
            self._check_test_loop()
            if self._load_from:
                self.logger.info(self._check_checkpoint(self._load_from))
            with unused_checkpoint_keys_unlisted():  # the line above says it
                return super(PMSNRunner, self).test()

        return self._run(run)
