"""Follow the argmax prototypes of fixed labelled images during training."""
import json
import os.path as osp
from typing import (TYPE_CHECKING, Any, Dict, List, Mapping, Optional,
                    Sequence, Sized, Tuple, Union, cast)

import numpy as np
import torch
from mmengine.dataset import default_collate
from mmengine.dist import is_main_process
from mmengine.hooks import Hook
from mmpretrain.registry import HOOKS
from mmpretrain.utils import get_ori_model
from torch import Tensor, nn
from torch.utils.data import DataLoader, Dataset, Subset

from pmsn_mm.evaluation.functional.prior_diagnostics import (
    assignment_stats, collapse_indicator)
from pmsn_mm.evaluation.metrics.frozen_features import sample_label
from pmsn_mm.utils.validation import check_int

if TYPE_CHECKING:
    from mmengine.model import BaseModel

    from pmsn_mm.models.heads import BasePrototypeHead
    from pmsn_mm.models.selfsup.prototype_embed import PrototypeEmbedMixin

PREFIX = 'prototype_assignment/'


@torch.no_grad()
def labelled_inputs(model: 'BaseModel',
                    dataset: Dataset,
                    labels: Optional[Mapping[str, str]] = None,
                    num_samples: Optional[int] = None,
                    batch_size: int = 256
                    ) -> Tuple[Tensor, Dict[str, np.ndarray]]:
    """Un-augmented pre-processed images of a dataset and their labels.

    Each batch goes through ``model.data_preprocessor(batch, False)``
    (normalised, no views), onto the model's device; no global RNG.

    Args:
        model: The model whose pre-processor normalises the images.
        dataset: A dataset whose pipeline packs ``inputs`` and the labels.
        labels: ``{name: data-sample field}`` to collect
            (:func:`~pmsn_mm.evaluation.sample_label`). Defaults to none.
        num_samples: Keep the first ``num_samples`` samples, at most
            ``len(dataset)``. Defaults to None (all).
        batch_size: Images per pre-processor call. Defaults to 256.

    Returns:
        Tensor of shape (N, C, H, W) and ``{name: int array of shape (N,)}``.
    """
    if num_samples is not None:
        check_int('num_samples', num_samples, 1, len(cast(Sized, dataset)))
        dataset = Subset(dataset, range(num_samples))
    # a generator of its own: the loader's seed draw leaves the global RNG
    # (and so the training run) untouched
    loader = DataLoader(dataset, batch_size=batch_size, shuffle=False,
                        collate_fn=default_collate,
                        generator=torch.Generator())
    labels = dict(labels or {})
    inputs: List[Tensor]
    values: Dict[str, List[int]]
    inputs, values = [], {name: [] for name in labels}
    for batch in loader:
        x = model.data_preprocessor(batch, False)['inputs']
        inputs.append(x[0] if isinstance(x, (list, tuple)) else x)
        for name, key in labels.items():
            values[name] += [sample_label(s, key)
                             for s in batch['data_samples']]
    return torch.cat(inputs), {
        k: np.asarray(v, dtype=np.int64) for k, v in values.items()
    }


@torch.no_grad()
def embed_inputs(model: nn.Module,
                 inputs: Tensor,
                 stages: Sequence[str] = ('backbone', 'neck', 'probs'),
                 target: bool = False,
                 batch_size: int = 500) -> Dict[str, Tensor]:
    """``model.embed`` of pre-processed images, batch by batch.

    Args:
        model: A prototype model (PMSN, PSwAV), in the mode wanted.
        inputs: Tensor of shape (N, C, H, W).
        stages: Stages of :meth:`PrototypeEmbedMixin.embed`.
        target: The EMA target encoder (else online). Defaults to False.
        batch_size: Images per forward. Defaults to 500.

    Returns:
        ``{stage: float32 CPU tensor of shape (N, D)}``.
    """
    target = target and hasattr(model, 'target_net')
    outs = [
        cast('PrototypeEmbedMixin', model).embed(
            inputs[s:s + batch_size], target=target, stages=stages)
        for s in range(0, len(inputs), batch_size)
    ]
    return {k: torch.cat([o[k] for o in outs]).float().cpu() for k in stages}


def brightness_deciles(inputs: Tensor) -> np.ndarray:
    """Decile (0-9) of each image's mean intensity: a nuisance label.

    Args:
        inputs: Tensor of shape (N, C, H, W).

    Returns:
        Int array of shape (N,).
    """
    mean = inputs.detach().double().flatten(1).mean(dim=1).cpu().numpy()
    return np.searchsorted(np.quantile(mean, np.linspace(0.1, 0.9, 9)), mean)


@HOOKS.register_module()
class PrototypeAssignmentHook(Hook):
    """Which labels the prototypes follow, on fixed images, during training.

    Before training and every ``interval`` iterations it embeds fixed
    labelled, un-augmented images (online and EMA target encoders, eval
    mode) and records NMI of the argmax prototype with each label, entropies,
    KL to the prior, usage, ``collapse_indicator`` and ``prior_tau``
    (:func:`~pmsn_mm.evaluation.functional.prior_diagnostics.assignment_stats`)
    into ``<work_dir>/<out_file>`` and the visualizer. The images stay on the
    device, so keep the set small.

    Args:
        dataset: A dataset (or config) packing ``inputs`` and the labels.
        labels: ``{name: data-sample field}`` (``dict(digit='digit_label')``).
        num_samples: Use the first ``num_samples`` images. Defaults to all.
        interval: Record every ``interval`` iterations. Defaults to 100.
        brightness: Also a ``brightness`` label, the decile of each image's
            mean intensity (a nuisance check). Defaults to False.
        out_file: JSON file, relative to ``runner.work_dir`` unless
            absolute. Defaults to ``'prototype_assignments.json'``.
    """

    priority = 'LOW'

    def __init__(self,
                 dataset: Union[dict, Dataset],
                 labels: Optional[Mapping[str, str]] = None,
                 num_samples: Optional[int] = None,
                 interval: int = 100,
                 brightness: bool = False,
                 out_file: str = 'prototype_assignments.json') -> None:
        self.dataset = dataset
        self.labels = dict(labels or {})
        self.num_samples = num_samples
        self.interval = check_int('interval', interval, 1)
        self.brightness = brightness
        self.out_file = out_file
        self.points: List[dict] = []
        self._inputs: Optional[Tensor] = None
        self._label_values: Dict[str, np.ndarray] = {}

    @staticmethod
    def _model(runner) -> nn.Module:
        model = get_ori_model(runner.model)
        if not (hasattr(model, 'embed') and hasattr(
                getattr(model, 'head', None), 'prior')):
            raise AttributeError(
                'PrototypeAssignmentHook needs a prototype model with embed '
                'and a head that owns a prior (PMSN, PSwAV); got '
                f'{type(model).__name__}.')
        return model

    def before_train(self, runner) -> None:
        model = self._model(runner)
        self.points = []
        if not is_main_process():
            return
        dataset = self.dataset
        if isinstance(dataset, dict):
            from mmpretrain.registry import DATASETS
            dataset = DATASETS.build(dataset)
        self._inputs, self._label_values = labelled_inputs(
            model, dataset, self.labels, self.num_samples)
        if self.brightness:
            self._label_values['brightness'] = brightness_deciles(
                self._inputs)
        self._record(runner, 0)

    def after_train_iter(self,
                         runner,
                         batch_idx: int,
                         data_batch: Optional[dict] = None,
                         outputs: Optional[dict] = None) -> None:
        if self.every_n_train_iters(runner, self.interval):
            self._record(runner, runner.iter + 1)

    def compute_point(self, model: nn.Module, iteration: int) -> dict:
        """The statistics of the fixed images under ``model`` now.

        Args:
            model: The prototype model (restored to its mode after).
            iteration: Stored as ``iter``.

        Returns:
            The point (see the class docstring).
        """
        was_training = model.training
        model.eval()
        inputs = cast(Tensor, self._inputs)  # set by before_train
        online = embed_inputs(model, inputs, ('neck', 'probs'))
        target = embed_inputs(model, inputs, ('probs', ),
                              target=True)['probs']
        model.train(was_training)
        prior = cast('BasePrototypeHead', model.head).prior
        on = assignment_stats(online['probs'], prior.probs,
                              self._label_values)
        tg = assignment_stats(target, prior.probs, self._label_values)
        point: Dict[str, object] = dict(iter=iteration)
        for name in self._label_values:
            point[f'nmi_{name}'] = on[f'nmi_{name}']
            point[f'target_nmi_{name}'] = tg[f'nmi_{name}']
        point.update({
            k: on[k]
            for k in ('mean_anchor_entropy', 'mean_probs_entropy',
                      'kl_mean_probs_prior')
        })
        point.update(
            anchor_usage_sorted=on['usage_sorted'],
            target_usage_sorted=tg['usage_sorted'],
            num_used_anchor=on['num_used'],
            num_used_target=tg['num_used'],
            collapse_indicator=collapse_indicator(online['neck']))
        if getattr(prior, 'tau', None) is not None:
            # power-law priors: a float or a Tensor buffer
            point['prior_tau'] = float(cast(Any, prior).tau)
        return point

    def _record(self, runner, iteration: int) -> None:
        if not is_main_process():
            return
        point = self.compute_point(self._model(runner), iteration)
        self.points.append(point)
        runner.visualizer.add_scalars(
            {
                PREFIX + k: float(v)
                for k, v in point.items()
                if k != 'iter' and isinstance(v, (int, float))
            },
            step=iteration)
        path = osp.join(runner.work_dir, self.out_file)
        with open(path, 'w') as f:
            json.dump(self.points, f, indent=1)
        nmi = ', '.join(f'{k[4:]} {v:.3f}' for k, v in point.items()
                        if k.startswith('nmi_'))
        runner.logger.info(
            f'prototype assignments at iter {iteration}: NMI {nmi}; '
            f'H(p_i) {point["mean_anchor_entropy"]:.3f}, H(p̄) '
            f'{point["mean_probs_entropy"]:.3f}, used '
            f'{point["num_used_anchor"]}/{point["num_used_target"]}')
