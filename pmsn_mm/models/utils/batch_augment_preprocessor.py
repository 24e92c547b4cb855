"""Data pre-processor that makes the SSL views of a batch on the device."""
from typing import Optional, Sequence, Union

import torch
from mmpretrain.models.utils import SelfSupDataPreprocessor
from mmpretrain.registry import MODELS

from .batch_augment import color_jitter, resized_crop_flip, sample_crop_boxes


@MODELS.register_module()
class BatchAugmentPreprocessor(SelfSupDataPreprocessor):
    """``SelfSupDataPreprocessor`` that draws the views itself, batched.

    Replaces the per-sample ``MultiView([RandomResizedCrop, RandomFlip,
    RandomApply(ColorJitter)])`` pipeline for data that fits in memory (the
    toy set): the dataset yields one un-augmented image per sample (pipeline
    ``[PackInputs]``) and, in training, this pre-processor produces
    ``num_views`` independently augmented views of the batch with
    :mod:`~pmsn_mm.models.utils.batch_augment` (same distributions as the
    mmpretrain transforms), on whatever device the model is on. In
    evaluation (``training=False``) it only normalises, like its parent.

    Output in training: a list of ``num_views`` tensors of shape
    (B, C, size, size), ordered as ``MultiView`` would order them (for PMSN:
    target first, then the anchor views).

    Args:
        num_views: Number of views V, >= 1.
        size: Output side of every view; defaults to the input side.
        crop_scale: ``RandomResizedCrop`` area range (paper toy: (0.5, 1)).
        crop_ratio: ``RandomResizedCrop`` aspect-ratio range.
        flip_prob: Probability of a horizontal flip, in [0, 1].
        jitter_prob: Probability of colour jitter (``RandomApply``).
        brightness: ``ColorJitter`` brightness strength.
        contrast: ``ColorJitter`` contrast strength.
        seed: Optional seed of a private generator (None: torch's global
            RNG, which mmengine seeds from ``randomness.seed``).
        **kwargs: ``SelfSupDataPreprocessor`` arguments (``mean``, ``std``,
            ``to_rgb``, ...).
    """

    def __init__(self,
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
        if isinstance(num_views, bool) or not isinstance(num_views, int) \
                or num_views < 1:
            raise ValueError(f'num_views must be an int >= 1, got '
                             f'{num_views!r}.')
        if size is not None and int(size) < 1:
            raise ValueError(f'size must be >= 1 or None, got {size}.')
        for name, value in (('flip_prob', flip_prob), ('jitter_prob',
                                                       jitter_prob)):
            if not 0 <= value <= 1:
                raise ValueError(f'{name} must be in [0, 1], got {value}.')
        if brightness < 0 or contrast < 0:
            raise ValueError('brightness and contrast must be >= 0, got '
                             f'{brightness} and {contrast}.')
        # validates the ranges once, with the setting names in the message
        sample_crop_boxes(1, 8, 8, crop_scale, crop_ratio)
        self.num_views = num_views
        self.size = None if size is None else int(size)
        self.crop_scale = tuple(float(s) for s in crop_scale)
        self.crop_ratio = tuple(float(r) for r in crop_ratio)
        self.flip_prob = float(flip_prob)
        self.jitter_prob = float(jitter_prob)
        self.brightness = float(brightness)
        self.contrast = float(contrast)
        self.seed = seed
        self._generator: Optional[torch.Generator] = None

    def _rng(self, device: torch.device) -> Optional[torch.Generator]:
        if self.seed is None:
            return None
        if self._generator is None or self._generator.device != device:
            self._generator = torch.Generator(device=device)
            self._generator.manual_seed(self.seed)
        return self._generator

    def augment(self, images: torch.Tensor) -> torch.Tensor:
        """One random view of every image.

        Args:
            images: Float tensor of shape (B, C, H, W) in [0, 255].

        Returns:
            Tensor of shape (B, C, size, size), still in [0, 255].
        """
        num, _, height, width = images.shape
        gen = self._rng(images.device)
        boxes = sample_crop_boxes(num, height, width, self.crop_scale,
                                  self.crop_ratio, generator=gen,
                                  device=images.device)
        flip = torch.rand(num, generator=gen,
                          device=images.device) < self.flip_prob
        size = (self.size or height, self.size or width)
        views = resized_crop_flip(images, boxes, size, flip)
        if self.jitter_prob > 0:
            views = color_jitter(views, self.brightness, self.contrast,
                                 self.jitter_prob, generator=gen)
        return views

    def forward(self, data: dict, training: bool = False) -> dict:
        """Views (training) or the normalised batch (evaluation).

        Args:
            data: A ``default_collate`` batch whose ``inputs`` is one tensor
                of shape (B, C, H, W) (or a one-element list of it).
            training: Whether to draw the augmented views.

        Returns:
            ``dict(inputs=..., data_samples=...)``; ``inputs`` is a list of
            ``num_views`` tensors in training and, as in the parent, a
            tensor otherwise.
        """
        if not training:
            return super().forward(data, training)
        inputs, data_samples = self.cast_data(
            [data['inputs'], data.get('data_samples')])
        if isinstance(inputs, (list, tuple)):
            if len(inputs) != 1:
                raise ValueError(
                    'BatchAugmentPreprocessor makes the views itself and '
                    f'expects one un-augmented image per sample, got '
                    f'{len(inputs)} views; use pipeline=[PackInputs] '
                    'instead of MultiView.')
            inputs = inputs[0]
        if self._channel_conversion:
            inputs = inputs[:, [2, 1, 0], ...]
        inputs = inputs.float()
        views = [self.augment(inputs) for _ in range(self.num_views)]
        if self._enable_normalize:
            views = [(v - self.mean) / self.std for v in views]
        return {'inputs': views, 'data_samples': data_samples}
