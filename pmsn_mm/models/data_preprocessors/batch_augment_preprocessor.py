"""Data pre-processor that draws the SSL views of a batch on the device."""
from typing import Any, Dict, List, Optional, Sequence

import torch
from mmpretrain.models.utils import SelfSupDataPreprocessor
from mmpretrain.registry import MODELS
from torch import Tensor

from ...utils.view_groups import check_view_groups
from .batch_augment import (color_jitter, color_params, crop_corners,
                            crop_resize, device_constant, gaussian_blur,
                            random_grayscale, replicate_edges, solarize)
from .batch_cast_preprocessor import cast_batch


@MODELS.register_module()
class BatchAugmentPreprocessor(SelfSupDataPreprocessor):
    """``SelfSupDataPreprocessor`` that draws the views itself, batched.

    Replaces the per-sample ``MultiView`` pipeline: the dataset only
    decodes and packs one image per sample (``LoadImageForViews`` +
    ``PackInputs`` and the ``padded_collate`` of mixed sizes for real
    images; ``PackInputs`` alone for the in-memory toy set), and, in
    training, this pre-processor produces every view of the batch on the
    model's device with
    :mod:`~pmsn_mm.models.data_preprocessors.batch_augment`: per group,
    random resized crops in each image's own coordinates (the
    padding of a mixed-size batch never enters a crop), flip, colour
    jitter (brightness, contrast, saturation, hue in a random order per
    image), random grayscale, Gaussian blur, solarize, then normalisation.
    Each image gets its own random parameters, with the distributions of
    the per-sample transforms. In evaluation (``training=False``) it only
    normalises, like its parent.

    Output in training: a list of tensors, one per view, group after group
    in the order of ``views`` (for PMSN: target, random views, focal
    views), each of shape (B, C, size, size).

    Config (MSN's views)::

        data_preprocessor = dict(
            type='BatchAugmentPreprocessor', views=[
                dict(num_views=2, size=224, scale=(0.3, 1.0), **colour),
                dict(num_views=10, size=96, scale=(0.05, 0.3), **colour)],
            mean=..., std=..., to_rgb=True)

    Args:
        views: View groups, each a dict of the settings of
            :data:`pmsn_mm.utils.view_groups.VIEW_DEFAULTS`
            (``num_views``, ``size``, ``scale``, ``ratio``, ``flip_prob``,
            ``jitter_prob``, ``brightness``, ``contrast``, ``saturation``,
            ``hue``, ``grayscale_prob``, ``blur_prob``, ``blur_sigma``,
            ``solarize_prob``, ``solarize_threshold``). None: one group
            made of the arguments below (the toy configs).
        num_views: Views of the single group (when ``views`` is None).
        size: Output side (None: the input side).
        crop_scale: ``RandomResizedCrop`` area range.
        crop_ratio: ``RandomResizedCrop`` aspect-ratio range.
        flip_prob: Probability of a horizontal flip.
        jitter_prob: Probability of colour jitter (``RandomApply``).
        brightness: ``ColorJitter`` brightness strength.
        contrast: ``ColorJitter`` contrast strength.
        seed: Optional seed of a private generator (None: torch's global
            RNG, which mmengine seeds from ``randomness.seed``).
        **kwargs: ``SelfSupDataPreprocessor`` arguments (``mean``, ``std``,
            ``to_rgb``, ...).
    """

    def __init__(self,
                 views: Optional[Sequence[dict]] = None,
                 num_views: int = 2,
                 size: Optional[int] = None,
                 crop_scale: Sequence[float] = (0.5, 1.0),
                 crop_ratio: Sequence[float] = (3. / 4., 4. / 3.),
                 flip_prob: float = 0.5,
                 jitter_prob: float = 0.8,
                 brightness: float = 0.4,
                 contrast: float = 0.4,
                 seed: Optional[int] = None,
                 **kwargs) -> None:
        super().__init__(**kwargs)
        if views is None:
            views = [dict(num_views=num_views, size=size, scale=crop_scale,
                          ratio=crop_ratio, flip_prob=flip_prob,
                          jitter_prob=jitter_prob, brightness=brightness,
                          contrast=contrast)]
        self.views: List[dict] = check_view_groups(views)
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
        """The views of one group for every image.

        Args:
            images: Float tensor of shape (B, C, H, W) in [0, 255], image
                ``i`` in its top-left ``heights[i] x widths[i]`` corner.
            heights: Long tensor of shape (B,).
            widths: Long tensor of shape (B,).
            group: A checked view group.

        Returns:
            ``num_views`` tensors of shape (B, C, size, size) in [0, 255].
        """
        num, _, height, width = images.shape
        views, device = group['num_views'], images.device
        gen = self._rng(device)
        total = num * views  # view-major: view v of image i at v * num + i
        corner, extent = crop_corners(torch.stack([widths, heights], 1),
                                      views, group['scale'], group['ratio'],
                                      generator=gen)
        # per view, one draw: the jitter's 9 uniforms, the coins of flip,
        # grayscale, blur and solarize, the blur's sigma
        u = torch.rand(total, 14, generator=gen, device=device)
        probs = tuple(group[k] for k in ('flip_prob', 'grayscale_prob',
                                         'blur_prob', 'solarize_prob'))
        coins = u[:, 9:13] < device_constant(('view coins', probs), device,
                                             lambda: list(probs))
        size = (group['size'] or height, group['size'] or width)
        out = crop_resize(images, corner, extent, size, coins[:, 0])
        if group['jitter_prob'] > 0 and any(
                group[k] > 0
                for k in ('brightness', 'contrast', 'saturation', 'hue')):
            params = color_params(u[:, :9],
                                  group['brightness'], group['contrast'],
                                  group['saturation'], group['hue'],
                                  group['jitter_prob'])
            out = color_jitter(out, params)
        if group['grayscale_prob'] > 0:
            out = random_grayscale(out, coins[:, 1])
        if group['blur_prob'] > 0:
            low, high = group['blur_sigma']
            out = gaussian_blur(out, u[:, 13] * (high - low) + low,
                                coins[:, 2], high)
        if group['solarize_prob'] > 0:
            out = solarize(out, coins[:, 3], group['solarize_threshold'])
        return list(out.split(num))

    @staticmethod
    def image_sizes(inputs: Tensor,
                    data_samples,
                    img_shapes: Optional[Tensor] = None) -> Dict[str, Any]:
        """Each image's ``(h, w)`` in a padded batch.

        From ``img_shapes`` where the batch has it (``padded_collate`` puts
        the sizes of a padded batch there: one tensor that moves with the
        batch), else from the ``img_shape`` of the data samples
        (``PackInputs`` keeps it; checked on the host, from the metadata
        only, and uploaded from a Python list: one blocking copy), else the
        batch's size (made on the device: no copy).

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
        shapes = [getattr(s, 'img_shape', None) for s in data_samples or []]
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

    # Eager under torch.compile (mmengine's compile=True): compiled, the
    # views would draw from inductor's own random generator instead of
    # torch's (different views for a seed, outside the RNG state that
    # resume restores); eager, they also save ~10 s of the toy config's
    # first compile on the CPU.
    @torch.compiler.disable
    def forward(self, data: dict, training: bool = False) -> dict:
        """Views (training) or the normalised batch (evaluation).

        Args:
            data: A collated batch whose ``inputs`` is one tensor of shape
                (B, C, H, W) (or a one-element list of it); with
                ``padded_collate``, images of mixed sizes padded at the
                bottom and right, their sizes in ``img_shapes`` (and in the
                data samples' ``img_shape``). In training, each tensor of
                the batch moves once, ``non_blocking``, the data samples
                stay on the host (:func:`cast_batch`).
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
        # in float32 whatever the autocast state: mmengine's train_step runs
        # the pre-processor inside the optimizer wrapper's autocast (--amp),
        # where the crops, the colour matrix and the blur would run in
        # bfloat16 (pixels off by up to ~10 grey levels); the model still
        # runs under autocast
        with torch.autocast(inputs.device.type, enabled=False):
            views = [
                view for group in self.views for view in self.augment_group(
                    inputs, sizes['heights'], sizes['widths'], group)
            ]
            if self._enable_normalize:
                views = [(v - self.mean) / self.std for v in views]
        return {'inputs': views, 'data_samples': data_samples}
