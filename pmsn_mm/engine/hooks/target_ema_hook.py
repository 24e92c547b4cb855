"""Update EMA target encoders after every optimizer step."""
from typing import Optional

from mmengine.hooks import Hook
from mmpretrain.registry import HOOKS
from mmpretrain.utils import get_ori_model


@HOOKS.register_module()
class TargetEMAHook(Hook):
    """After every training iteration, average the online encoder into the
    model's EMA target (``model.update_target()``, see
    :class:`~pmsn_mm.models.utils.EMATargetMixin`): official MSN updates its
    target right after ``optimizer.step()``, with that step's momentum (no host
    sync: :meth:`~pmsn_mm.models.utils.LinearMomentumEMA.update_parameters`).
    Runs before ``CheckpointHook``; models without ``update_target`` are left
    alone, so the hook can sit in a shared runtime config.
    """

    priority = 'NORMAL'

    def __init__(self) -> None:  # no settings (unknown config keys refused)
        super().__init__()

    def after_train_iter(self,
                         runner,
                         batch_idx: int,
                         data_batch: Optional[dict] = None,
                         outputs: Optional[dict] = None) -> None:
        model = get_ori_model(runner.model)
        if hasattr(model, 'update_target'):
            model.update_target()
