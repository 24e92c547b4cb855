"""``PMSNRunner``: mmengine's ``Runner`` carrying what a pmsn_mm run needs
beyond the command line, so that every launcher runs a config the same.

pmsn_mm's configs set ``runner_type='PMSNRunner'``
(``configs/_base_/default_runtime.py``); mmengine builds it through
``RUNNERS`` whoever starts the run — ``python tools/train.py CONFIG``,
mmpretrain's own ``tools/train.py`` (the config's ``custom_imports``
imports pmsn_mm) or ``mim train pmsn_mm CONFIG`` — and it adds, in order:

- before anything is built (:meth:`from_cfg`): the config checks
  (:func:`pmsn_mm.config.check_config`: unknown types and keys, numbers
  stated twice); mixed precision as pmsn_mm chooses it (``AmpOptimWrapper``,
  what ``--amp`` of either tool sets, runs as
  ``DeviceAwareAmpOptimWrapper``: bfloat16 without a scaler where the device
  has it, mmengine's float16 + scaler elsewhere, and it also runs on a CPU);
  the dataloaders fitted to the machine (workers, ``pin_memory``); a
  distributed launch without CUDA on gloo, a DDP wrapper that takes frozen
  models too, one line instead of mmengine's per-rank thread warnings;
- once built: the upstream notes nobody can act on filtered from the log;
- :meth:`train`: the work-dir guard (a run that neither resumes nor
  overwrites, into a work dir holding checkpoints, is refused and leaves
  the work dir as it was; ``resume=True`` without ``load_from`` resumes
  from the work dir's last complete checkpoint, a copied work dir from its
  own files; ``overwrite_work_dir=True`` replaces the earlier checkpoints
  only once this run has written one), and a training loader that holds no
  batch is refused with the numbers;
- :meth:`test`: a config without a test loop is refused naming the
  benchmarks of its encoder, and a checkpoint that does not fit the model
  (missing or mis-shaped weights) is refused naming how the architectures
  differ; one line says what the model takes from it.
"""
import copy
import logging
import os
import os.path as osp
import shutil
from typing import Any, Dict, Optional, Union

from mmengine.config import Config
from mmengine.dist import is_main_process
from mmengine.model import is_model_wrapper
# mmengine's root registry (a new name there): mmpretrain's tools/train.py
# builds runners with it, before any default scope is set
from mmengine.registry import RUNNERS
from mmengine.runner import Runner
from mmengine.runner.checkpoint import CheckpointLoader

from ...config import check_config
from ...datasets.non_empty import check_has_batches
from ...utils.upstream_notes import (MMEngineFileClientNotes,
                                     unused_checkpoint_keys_unlisted)
from ..atomic_file_backend import atomic_write_bytes
from ..checkpoint_fit import (checkpoint_fit, config_vit_shape,
                              fitting_benchmarks)
from ..hooks.work_dir_overwrite_hook import WorkDirOverwriteHook
from ..launcher import explain_distributed_thread_notes, setup_cpu_distributed
from ..loaders import fit_loaders_to_machine
from ..optimizers import amp_device_available
from ..work_dir import prepare_work_dir

#: mmengine's AMP wrapper; pmsn_mm runs it as ``DeviceAwareAmpOptimWrapper``.
AMP_WRAPPER = 'AmpOptimWrapper'


def device_aware_amp(cfg: Any) -> Optional[str]:
    """``optim_wrapper.type='AmpOptimWrapper'`` (``--amp`` of any tool) runs
    as ``DeviceAwareAmpOptimWrapper``, in place.

    Args:
        cfg: The config.

    Returns:
        The line to log, or None if nothing changed.
    """
    wrapper = cfg.get('optim_wrapper') or {}
    if str(wrapper.get('type', '')).split('.')[-1] != AMP_WRAPPER:
        return None
    wrapper['type'] = 'DeviceAwareAmpOptimWrapper'
    wrapper.setdefault('loss_scale', 'dynamic')
    where = ('bfloat16 without loss scaling where the GPU computes it '
             'natively, else float16 with dynamic loss scaling'
             if amp_device_available() else
             'no CUDA device: bfloat16 autocast on the CPU')
    return (f'optim_wrapper {AMP_WRAPPER} runs as DeviceAwareAmpOptimWrapper '
            f'({where}).')


def distributed_wrapper(cfg: Any) -> None:
    """A distributed run without its own ``model_wrapper_cfg`` wraps the
    model in ``DeviceAwareDistributedDataParallel`` (mmengine's DDP on CUDA,
    gloo DDP on CPU), which also takes a model without trainable parameters
    (torch's DDP refuses the frozen encoder of the kNN and
    logistic-regression benchmarks), with mmengine's defaults otherwise.

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


@RUNNERS.register_module()
class PMSNRunner(Runner):
    """mmengine's ``Runner`` with the checks and safeguards of pmsn_mm's
    runs carried by the config (``runner_type='PMSNRunner'``): see the
    module docstring for what it adds. Every argument is mmengine's
    ``Runner``'s; the config may also set ``overwrite_work_dir=True`` (what
    ``tools/train.py --overwrite`` sets).
    """

    # set by mmengine's Runner (its ``resume`` and ``load_from``)
    _resume: Union[bool, str]
    _load_from: Optional[str]

    @classmethod
    def from_cfg(cls, cfg: Config) -> 'PMSNRunner':
        """Check and complete the config, then build the runner.

        Args:
            cfg: The merged config.

        Returns:
            The runner.
        """
        cfg = copy.deepcopy(cfg)
        check_config(cfg)
        notes = [note for note in (device_aware_amp(cfg),
                                   fit_loaders_to_machine(cfg)) if note]
        launcher = cfg.get('launcher', 'none')
        explain_distributed_thread_notes(launcher)
        setup_cpu_distributed(cfg, launcher)
        distributed_wrapper(cfg)
        dump = _config_dump(cfg)
        earlier = None
        if dump is not None and osp.isfile(dump):
            with open(dump, 'rb') as f:
                earlier = f.read()
        runner = super().from_cfg(cfg)
        runner._earlier_dump = (dump, earlier)
        runner.logger.addFilter(MMEngineFileClientNotes())
        for note in notes:
            runner.logger.info(note)
        return runner

    # ------------------------------------------------------------ training
    def _undo_init_files(self) -> None:
        """Leave the work dir as the refused run found it: its log folder
        removed, the earlier config dump back (or the new one removed)."""
        if not is_main_process():
            return
        for handler in list(self.logger.handlers):
            if isinstance(handler, logging.FileHandler):
                handler.close()
                self.logger.removeHandler(handler)
        shutil.rmtree(self.log_dir, ignore_errors=True)
        dump, earlier = getattr(self, '_earlier_dump', (None, None))
        if dump is None:
            return
        if earlier is not None:
            atomic_write_bytes(earlier, dump)
        elif osp.isfile(dump):
            os.remove(dump)

    def _plan_work_dir(self) -> WorkDirOverwriteHook:
        """Apply the work-dir guard (see the module docstring); the hook
        that carries out an overwrite."""
        view = Config(dict(work_dir=self.work_dir, resume=self._resume,
                           load_from=self._load_from),
                      filename=self.cfg.filename)
        try:
            plan = prepare_work_dir(
                view, bool(self.cfg.get('overwrite_work_dir', False)))
        except (FileExistsError, ValueError):
            self._undo_init_files()
            raise
        self._resume, self._load_from = view.resume, view.load_from
        for note in plan.notes:
            self.logger.info(note)
        _, earlier = getattr(self, '_earlier_dump', (None, None))
        if earlier is None:  # the dump in the work dir is this run's own
            plan.config_dump = None
        return WorkDirOverwriteHook(self.work_dir, plan, dump=earlier)

    def train(self):
        """mmengine's ``train`` behind the work-dir guard; an earlier run's
        files that ``overwrite_work_dir`` moved aside come back if this run
        fails before it writes a checkpoint.

        Returns:
            The trained model.
        """
        overwrite = self._plan_work_dir()
        self.register_hook(overwrite)
        try:
            check_has_batches(self.train_dataloader)  # before the schedulers
            return super().train()
        except BaseException:
            overwrite.restore()
            raise

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
        """mmengine's ``test``, refusing a config without a test loop and a
        checkpoint (``load_from``) that does not fit the model; the
        checkpoint's unused keys are summarised in one line instead of
        mmengine's list of every key.

        Returns:
            The metrics.
        """
        self._check_test_loop()
        if self._load_from:
            self.logger.info(self._check_checkpoint(self._load_from))
        with unused_checkpoint_keys_unlisted():  # the line above says it
            return super().test()
