"""Data pre-processor that draws the SSL views of a batch on the device."""
from typing import Any, Dict, List, Optional, Sequence, Tuple

import torch
from mmpretrain.models.utils import SelfSupDataPreprocessor
from mmpretrain.registry import MODELS
from torch import Tensor

from ...views import check_view_groups
from .batch_cast_preprocessor import cast_batch
from .views import AUGMENTS, ViewAugment, ViewDraws, draw_width
from .views.crop import replicate_edges


@MODELS.register_module()
class BatchAugmentPreprocessor(SelfSupDataPreprocessor):
    """``SelfSupDataPreprocessor`` that draws the views itself, batched.

    Replaces the per-sample ``MultiView`` pipeline: the dataset only decodes
    (``LoadImageForViews``, ``PackInputs``, ``padded_collate``); in training
    every view is drawn on the device, per group the augmentations of
    :attr:`augments` in order, each image with its own parameters, in
    float32, then normalised: one tensor (B, C, size, size) per view, group
    after group. In evaluation it only normalises.

    Config (MSN's views)::

        data_preprocessor = dict(
            type='BatchAugmentPreprocessor', views=[
                dict(num_views=2, size=224, scale=(0.3, 1.0), **colour),
                dict(num_views=10, size=96, scale=(0.05, 0.3), **colour)],
            mean=..., std=..., to_rgb=True)

    Args:
        views: View groups, each a dict of ``num_views`` and the settings
            of the augmentations (their units in ``pmsn_mm/views/``).
        seed: Optional seed of a private generator (None: torch's global
            RNG, which mmengine seeds from ``randomness.seed``).
        **kwargs: ``SelfSupDataPreprocessor`` arguments (``mean``, ...).
    """

    #: The augmentations, in order (a subclass may add its own).
    augments: Tuple[ViewAugment, ...] = AUGMENTS

    def __init__(self,
                 views: Sequence[dict],
                 seed: Optional[int] = None,
                 **kwargs) -> None:
        super().__init__(**kwargs)
        self.views: List[dict] = check_view_groups(views,
                                                   augments=self.augments)
        self._width = draw_width(self.augments)
        self.seed = seed
        self._generator: Optional[torch.Generator] = None

    @property
    def num_views(self) -> int:
        """Views per image, all groups together."""
        return sum(group['num_views'] for group in self.views)

    def _rng(self, device: torch.device) -> Optional[torch.Generator]:
        if self.seed is None:
            return None
        if self._generator is None or self._generator.device != device:
            self._generator = torch.Generator(device=device)
            self._generator.manual_seed(self.seed)
        return self._generator

    def augment_group(self, images: Tensor, heights: Tensor, widths: Tensor,
                      group: dict) -> List[Tensor]:
        """The views of one group for every image
        (:mod:`~pmsn_mm.models.data_preprocessors.views.base`).

        Args:
            images: Float tensor of shape (B, C, H, W) in [0, 255], image
                ``i`` in its top-left ``heights[i] x widths[i]`` corner.
            heights: Long tensor of shape (B,).
            widths: Long tensor of shape (B,).
            group: A checked view group.

        Returns:
            ``num_views`` tensors of shape (B, C, size, size) in [0, 255].
        """
        num = images.shape[0]
        draws = ViewDraws(num=num, views=group['num_views'],
                          device=images.device,
                          generator=self._rng(images.device),
                          heights=heights, widths=widths)
        for augment in self.augments:
            augment.draw(draws, group)
        draws.uniforms = torch.rand(num * draws.views, self._width,
                                    generator=draws.generator,
                                    device=images.device)
        draws.coin_probs = {augment.columns[0]: group[augment.coin_prob]
                            for augment in self.augments
                            if augment.coin_prob is not None}
        out = images
        for augment in self.augments:
            if augment.enabled(group):
                out = augment.apply(out, group, draws)
        return list(out.split(num))

    @staticmethod
    def image_sizes(inputs: Tensor,
                    data_samples,
                    img_shapes: Optional[Tensor] = None) -> Dict[str, Any]:
        """Each image's ``(h, w)`` in a padded batch.

        From ``img_shapes`` (``padded_collate``'s, moved with the batch), else
        the data samples' ``img_shape`` (one upload), else the batch's size.

        Args:
            inputs: The batch tensor of shape (B, C, H, W).
            data_samples: The batch's data samples, or None.
            img_shapes: Long tensor of shape (B, 2), each image's
                ``(h, w)``, on the device of ``inputs``, or None.

        Returns:
            ``heights`` and ``widths``, long tensors of shape (B,) on the
            device of ``inputs``, and ``padded``, a Python bool: whether
            some image is smaller than the batch tensor.
        """
        num, _, height, width = inputs.shape
        # ``(h, w)`` sequences (None: missing, replaced below)
        shapes: List[Any] = [
            getattr(s, 'img_shape', None) for s in data_samples or []
        ]
        if len(shapes) != num or any(s is None for s in shapes):
            shapes = [(height, width)] * num
        sizes = [(int(s[0]), int(s[1])) for s in shapes]
        if any(h > height or w > width for h, w in sizes):
            raise ValueError('an img_shape exceeds the batch tensor '
                             f'({height} x {width}); pack the images with '
                             'padded_collate.')
        if img_shapes is not None:
            if tuple(img_shapes.shape) != (num, 2):
                raise ValueError(f'img_shapes must have shape ({num}, 2) for '
                                 f'a batch of {num}, got '
                                 f'{tuple(img_shapes.shape)}.')
            table = img_shapes.long()
            return dict(heights=table[:, 0], widths=table[:, 1], padded=True)
        if not any(h < height or w < width for h, w in sizes):
            return dict(heights=torch.full((num, ), height, dtype=torch.long,
                                           device=inputs.device),
                        widths=torch.full((num, ), width, dtype=torch.long,
                                          device=inputs.device),
                        padded=False)
        table = torch.tensor(sizes, dtype=torch.long).to(inputs.device,
                                                         non_blocking=True)
        return dict(heights=table[:, 0], widths=table[:, 1], padded=True)

    # Eager under torch.compile: compiled, the views would draw from
    # inductor's own generator, outside the RNG state that resume restores.
    @torch.compiler.disable
    def forward(self, data: dict, training: bool = False) -> dict:
        """Views (training) or the normalised batch (evaluation).

        Args:
            data: A collated batch whose ``inputs`` is one tensor of shape
                (B, C, H, W) (or a one-element list of it), padded by
                ``padded_collate`` for mixed sizes; moved by
                :func:`cast_batch` in training.
            training: Whether to draw the augmented views.

        Returns:
            ``dict(inputs=..., data_samples=...)``; ``inputs`` is a list of
            :attr:`num_views` tensors in training and, as in the parent, a
            tensor otherwise.
        """
        if not training:
            return super().forward(
                dict(inputs=data['inputs'],
                     data_samples=data.get('data_samples')), training)
        inputs, data_samples, extras = cast_batch(data, self.device)
        if isinstance(inputs, (list, tuple)):
            if len(inputs) != 1:
                raise ValueError(
                    'BatchAugmentPreprocessor makes the views itself and '
                    f'expects one un-augmented image per sample, got '
                    f'{len(inputs)} views; use pipeline=[PackInputs] '
                    'instead of MultiView.')
            inputs = inputs[0]
        if self._channel_conversion:  # BGR <-> RGB: channels 2, 1, 0
            inputs = inputs[:, :3].flip(1)
        inputs = inputs.float()
        sizes = self.image_sizes(inputs, data_samples,
                                 extras.get('img_shapes'))
        if sizes['padded']:
            inputs = replicate_edges(inputs, sizes['heights'],
                                     sizes['widths'])
        # float32 even inside --amp's autocast (bfloat16 crops, colour
        # matrix and blur are off by up to ~10 grey levels)
        with torch.autocast(inputs.device.type, enabled=False):
            views = [
                view for group in self.views for view in self.augment_group(
                    inputs, sizes['heights'], sizes['widths'], group)
            ]
            if self._enable_normalize:
                views = [(v - self.mean) / self.std for v in views]
        return {'inputs': views, 'data_samples': data_samples}
