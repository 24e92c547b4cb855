"""Save the random states of every rank in checkpoints; restore on resume."""
from typing import Any, Dict, Iterator, List, Optional

from mmengine.dist import all_gather_object, get_dist_info
from mmengine.hooks import CheckpointHook, Hook
from mmpretrain.registry import HOOKS

from pmsn_mm.engine.resume import continues_checkpoint
from pmsn_mm.engine.rng_state import (get_rng_state, rng_state_from_checkpoint,
                                      rng_state_to_checkpoint, set_rng_state)

#: Checkpoint key holding one saved state per rank (index = rank).
CHECKPOINT_KEY = 'rng_states'


def _checkpoint_due(runner) -> bool:
    """Whether a ``CheckpointHook`` saves in this ``after_train_iter``
    (its own ``interval``/``save_begin``/``save_last`` rule).

    Args:
        runner: The runner, after the iteration's train step.
    """
    for hook in getattr(runner, 'hooks', ()):
        if not isinstance(hook, CheckpointHook) or hook.by_epoch:
            continue
        if hook.every_n_train_iters(runner, hook.interval, hook.save_begin) \
                or (hook.save_last and hook.is_last_train_iter(runner)):
            return True
    return False


def _trained_in_epoch(runner, loop) -> int:
    """Batches of the current epoch an epoch-based loop had trained when
    its checkpoint was saved (0: saved at an epoch's end)."""
    dataloader = getattr(loop, 'dataloader', None)
    try:
        size = len(dataloader)  # type: ignore[arg-type]
        trained = runner.iter - runner.epoch * size
    except (TypeError, AttributeError):
        return 0
    return trained if 0 < trained <= size else 0


class _SkipThenRestore:
    """Dataloader proxy for an epoch resumed from its middle: fetches and
    drops the ``skip`` trained batches, restores the random states, yields
    the rest (other attributes are the dataloader's).

    Args:
        dataloader: The loop's dataloader.
        skip: Batches of this epoch trained before the checkpoint.
        state: The state for :func:`set_rng_state`.
    """

    def __init__(self, dataloader: Any, skip: int,
                 state: Dict[str, Any]) -> None:
        self.dataloader = dataloader
        self.skip = skip
        self.state = state

    def __len__(self) -> int:
        return len(self.dataloader)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.__dict__['dataloader'], name)

    def __iter__(self) -> Iterator:
        iterator = iter(self.dataloader)
        for _ in range(self.skip):
            next(iterator)
        set_rng_state(self.state)
        return iterator


class _RestoreBeforeFetch:
    """Iterator proxy that restores RNG states right before fetch ``skip+1``
    (after ``IterBasedTrainLoop`` has advanced past the trained batches).

    Args:
        iterator: The loop's dataloader iterator.
        skip: Number of fetches to let through first.
        state: The state for :func:`set_rng_state`.
    """

    def __init__(self, iterator: Iterator, skip: int,
                 state: Dict[str, Any]) -> None:
        self.iterator = iterator
        self.skip = skip
        self.state: Optional[Dict[str, Any]] = state
        self.calls = 0

    def __iter__(self) -> '_RestoreBeforeFetch':
        return self

    def __next__(self) -> Any:
        if self.calls == self.skip and self.state is not None:
            set_rng_state(self.state)
            self.state = None
        self.calls += 1
        return next(self.iterator)


@HOOKS.register_module()
class RNGStateHook(Hook):
    """Make ``--resume`` continue with the random numbers of the original
    run (docs/distributed.md, "Exact resume").

    Stores every rank's Python, numpy, torch CPU and CUDA generator states
    in ``checkpoint['rng_states']`` (indexed by rank; tensors and plain
    numbers, :mod:`pmsn_mm.engine.rng_state`); on resume each rank restores
    its own right before the first new batch is fetched. With several ranks
    the states are gathered in iterations where a ``CheckpointHook`` saves,
    after each epoch, before each validation and on :meth:`capture`; a
    checkpoint saved elsewhere holds none (with a warning). States are put
    back after each validation, so validating never changes training.
    """

    # After LOW hooks (ParamSchedulerHook, PrototypeUsageHook) and before the
    # VERY_LOW CheckpointHook, in after_train_iter/after_train_epoch.
    priority = 80

    def __init__(self) -> None:
        self._states: Optional[List[Dict[str, Any]]] = None
        self._states_iter = -1
        self._val_local: Optional[Dict[str, Any]] = None
        self._val_states: Optional[List[Dict[str, Any]]] = None
        self._loaded: Optional[Dict[str, Any]] = None
        self._restore: Optional[Dict[str, Any]] = None
        self._proxy: Optional[_RestoreBeforeFetch] = None
        self._skip: Optional[_SkipThenRestore] = None

    # ------------------------------------------------------------ saving
    def capture(self, runner) -> None:
        """Gather every rank's random states for a checkpoint saved in this
        ``after_train_iter`` outside ``CheckpointHook``'s interval (e.g. on
        preemption); a collective, a no-op in a single process.

        Args:
            runner: The runner, after the iteration's train step.
        """
        if get_dist_info()[1] > 1:
            self._capture(runner)

    def _capture(self, runner) -> None:
        self._states = all_gather_object(get_rng_state())
        self._states_iter = runner.iter

    def after_train_iter(self,
                         runner,
                         batch_idx: int,
                         data_batch: Optional[dict] = None,
                         outputs: Optional[dict] = None) -> None:
        if get_dist_info()[1] > 1 and _checkpoint_due(runner):
            self._capture(runner)

    def after_train_epoch(self, runner) -> None:
        if self._skip is not None:  # the resumed epoch is over
            runner.train_loop.dataloader = self._skip.dataloader
            self._skip = None
        if get_dist_info()[1] > 1:
            self._capture(runner)

    def before_val(self, runner) -> None:
        self._val_local = get_rng_state()
        self._val_states = all_gather_object(self._val_local)

    def after_val(self, runner) -> None:
        if self._val_local is not None:
            set_rng_state(self._val_local)
        self._val_local = None
        self._val_states = None

    def before_save_checkpoint(self, runner, checkpoint: dict) -> None:
        if self._val_states is not None:
            states = self._val_states
        elif get_dist_info()[1] == 1:
            states = [get_rng_state()]
        elif self._states is not None and self._states_iter == runner.iter:
            states = self._states
        else:
            runner.logger.warning(
                'RNGStateHook: this checkpoint was saved outside the '
                'training/validation steps, where the random states of the '
                'other ranks are not known; it holds none, and a resume from '
                'it will not replay the random numbers exactly.')
            return
        checkpoint[CHECKPOINT_KEY] = [
            rng_state_to_checkpoint(state) for state in states
        ]

    # ------------------------------------------------------------ resuming
    def after_load_checkpoint(self, runner, checkpoint: dict) -> None:
        self._loaded = dict(
            iter=checkpoint.get('meta', {}).get('iter'),
            states=checkpoint.get(CHECKPOINT_KEY))

    def before_train(self, runner) -> None:
        loaded, self._loaded = self._loaded, None
        # load_from (weights only) is no resume: nothing to restore
        if loaded is None or not continues_checkpoint(runner.iter,
                                                      loaded['iter']):
            return
        saved = loaded['states']
        rank, world_size = get_dist_info()
        if saved is None:
            runner.logger.warning(
                'RNGStateHook: the checkpoint holds no random states (saved '
                'without RNGStateHook); the resumed run draws different '
                'random numbers than the original run would have.')
            return
        if len(saved) != world_size:
            runner.logger.warning(
                f'RNGStateHook: the checkpoint holds the random states of '
                f'{len(saved)} process(es) but this run has {world_size}; '
                'they are not restored, so the resumed run draws different '
                'random numbers than the original run would have.')
            return
        state = rng_state_from_checkpoint(saved[rank])
        loop = runner.train_loop
        if hasattr(loop, 'dataloader_iterator'):
            self._proxy = _RestoreBeforeFetch(loop.dataloader_iterator,
                                              runner.iter, state)
            loop.dataloader_iterator = self._proxy
        elif _trained_in_epoch(runner, loop):  # saved in an epoch's middle
            self._skip = _SkipThenRestore(
                loop.dataloader, _trained_in_epoch(runner, loop), state)
        else:
            self._restore = state
        runner.logger.info(
            f'RNGStateHook: restoring the random states of {world_size} '
            f'process(es) saved at iteration {runner.iter}.')

    def before_train_epoch(self, runner) -> None:
        if self._restore is not None:
            set_rng_state(self._restore)
            self._restore = None
        if self._skip is not None:
            runner.train_loop.dataloader = self._skip
            runner.logger.info(
                f'RNGStateHook: epoch {runner.epoch + 1} was saved after '
                f'{self._skip.skip} of its {len(self._skip)} batches; '
                'skipping them.')

    def before_train_iter(self,
                          runner,
                          batch_idx: int,
                          data_batch: Optional[dict] = None) -> None:
        if self._proxy is not None:
            loop = runner.train_loop
            if loop.dataloader_iterator is self._proxy:
                loop.dataloader_iterator = self._proxy.iterator
            self._proxy = None
