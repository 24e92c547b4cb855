"""Procedural shape images: the offline toy set's semantic background classes.

Each image shows one light object of one of :data:`SHAPE_CLASSES` at a
random position, size and rotation, with random grey levels and noise, then
standardised: the class is a property of the *shape* only, and brightness
and contrast carry no information that a clustering objective could cut to
meet *any* cluster prior.
"""
from typing import Optional, Sequence, Tuple

import numpy as np

from ..utils.validation import check_number, check_positive, check_range_pair

#: Background classes, in label order.
SHAPE_CLASSES: Tuple[str, ...] = ('disk', 'square', 'triangle', 'ring',
                                  'plus', 'bar', 'star', 'crescent',
                                  'striped_disk', 'checker_square')
#: Object radius as a fraction of the image side.
RADIUS_RANGE = (0.22, 0.38)
#: Range of the background grey level.
BACKGROUND_LEVEL = (40.0, 100.0)
#: Range of the object's grey-level excess over the background.
CONTRAST_RANGE = (70.0, 110.0)
#: Standard deviation of the additive pixel noise, grey levels.
NOISE_STD = 12.0
#: Mean and standard deviation every image is standardised to.
STANDARD_MEAN, STANDARD_STD = 110.0, 45.0
#: Rendering supersampling factor (anti-aliased edges).
SUPERSAMPLE = 3


def _class_mask(k: int, u: np.ndarray, v: np.ndarray) -> np.ndarray:
    """Inside-the-object mask of class ``k`` at object coordinates ``(u,
    v)`` (arrays of one shape; radius 1)."""
    name = SHAPE_CLASSES[k]
    if name == 'disk':
        return np.sqrt(u**2 + v**2) < 1.0
    if name == 'square':
        return np.maximum(np.abs(u), np.abs(v)) < 0.8
    if name == 'triangle':
        return (v > -0.5) & (v < 1.0 - np.sqrt(3.0) * np.abs(u))
    if name == 'ring':
        r = np.sqrt(u**2 + v**2)
        return (r < 1.0) & (r > 0.6)
    if name == 'plus':
        return (((np.abs(u) < 0.3) & (np.abs(v) < 1.0))
                | ((np.abs(v) < 0.3) & (np.abs(u) < 1.0)))
    if name == 'bar':
        return (np.abs(u) < 1.0) & (np.abs(v) < 0.28)
    if name == 'star':
        return np.sqrt(u**2 + v**2) < 0.55 + 0.45 * np.cos(5.0 * np.arctan2(
            v, u))
    if name == 'crescent':
        return (np.sqrt(u**2 + v**2) < 1.0) & ((u - 0.45)**2 + v**2 > 0.75**2)
    if name == 'striped_disk':
        return (np.sqrt(u**2 + v**2) < 1.0) & (np.sin(2.5 * np.pi * u) > 0)
    # checker_square
    return (np.maximum(np.abs(u), np.abs(v)) < 0.8) & (
        np.sin(np.pi * u / 0.4) * np.sin(np.pi * v / 0.4) > 0)


def _shape_masks(label: np.ndarray, u: np.ndarray,
                 v: np.ndarray) -> np.ndarray:
    """Bool (N, S, S) masks of each image's own class (``label`` (N, 1,
    1)) at object coordinates ``u``, ``v`` (N, S, S)."""
    label = label.reshape(-1)
    out = np.zeros(u.shape, dtype=bool)
    for k in np.unique(label):
        rows = np.flatnonzero(label == k)
        out[rows] = _class_mask(int(k), u[rows], v[rows])
    return out


#: Names of the within-class variations :func:`render_shapes` can narrow.
SHAPE_OPTIONS = ('radius_range', 'centre_range', 'max_angle',
                 'contrast_range', 'noise_std')


def render_shapes(labels: np.ndarray,
                  size: int,
                  rng: np.random.Generator,
                  radius_range: Sequence[float] = RADIUS_RANGE,
                  centre_range: Optional[Sequence[float]] = None,
                  max_angle: float = 2 * np.pi,
                  contrast_range: Sequence[float] = CONTRAST_RANGE,
                  noise_std: float = NOISE_STD) -> np.ndarray:
    """Render one random object of each given class.

    The keyword arguments set the within-class variation; what the views
    do not re-randomise is a continuous feature that can satisfy *any*
    cluster prior (docs/toy_prior_study.md).

    Args:
        labels: Int array of shape (N,), values in ``[0, len(SHAPE_CLASSES))``.
        size: Image side S in pixels.
        rng: Random generator (all randomness comes from it).
        radius_range: Object radius range, as a fraction of S, in (0, 0.5].
        centre_range: Range of both centre coordinates, as a fraction of S, in
            [0, 1]; None keeps the centre at least 0.6 radius inside the image.
        max_angle: Rotations are uniform in ``[0, max_angle]`` radians,
            ``0 <= max_angle <= 2 pi`` (0: every object upright).
        contrast_range: Object's grey-level excess over the background, >= 0.
        noise_std: Standard deviation of the pixel noise, >= 0.

    Returns:
        Uint8 array of shape (N, S, S).
    """
    labels = np.asarray(labels, dtype=np.int64)
    if labels.size and (labels.min() < 0
                        or labels.max() >= len(SHAPE_CLASSES)):
        raise ValueError(f'shape labels must be in [0, {len(SHAPE_CLASSES)}),'
                         f' got values in [{labels.min()}, {labels.max()}].')
    radius_range = check_range_pair('radius_range', radius_range, 0.0, 0.5,
                                    low_open=True)
    if centre_range is not None:
        centre_range = check_range_pair('centre_range', centre_range, 0.0,
                                        1.0)
    contrast_range = check_range_pair('contrast_range', contrast_range, 0.0,
                                      255.0)
    check_number('max_angle', max_angle, 0.0, 2 * np.pi)  # radians
    check_number('noise_std', noise_std, 0.0)
    if noise_std == 0 and contrast_range[0] == 0:
        raise ValueError('contrast_range starts at 0 and noise_std is 0: an '
                         'image could be constant and cannot be standardised;'
                         ' raise one of them.')
    num = len(labels)
    radius = rng.uniform(*radius_range, size=num) * size
    if centre_range is None:
        # keep the object's centre at least 0.6 radius inside the image
        centre = rng.uniform(0.6 * radius[:, None],
                             size - 0.6 * radius[:, None],
                             size=(num, 2))
    else:
        centre = rng.uniform(centre_range[0] * size, centre_range[1] * size,
                             size=(num, 2))
    angle = rng.uniform(0, max_angle, size=num)
    background = rng.uniform(*BACKGROUND_LEVEL, size=num)
    foreground = background + rng.uniform(*contrast_range, size=num)
    noise = rng.normal(0, noise_std, size=(num, size, size))

    out = np.empty((num, size, size), dtype=np.uint8)
    step = 1024  # bounded memory
    hi = size * SUPERSAMPLE
    coords = (np.arange(hi) + 0.5) / SUPERSAMPLE
    ys, xs = np.meshgrid(coords, coords, indexing='ij')
    for s in range(0, num, step):
        sl = slice(s, s + step)
        dx = xs[None] - centre[sl, 0, None, None]
        dy = ys[None] - centre[sl, 1, None, None]
        cos = np.cos(angle[sl])[:, None, None]
        sin = np.sin(angle[sl])[:, None, None]
        rad = radius[sl, None, None]
        u = (cos * dx + sin * dy) / rad
        v = (-sin * dx + cos * dy) / rad
        inside = _shape_masks(labels[sl, None, None], u, v).astype(np.float32)
        cover = inside.reshape(-1, size, SUPERSAMPLE, size,
                               SUPERSAMPLE).mean(axis=(2, 4))
        img = (background[sl, None, None] * (1 - cover) +
               foreground[sl, None, None] * cover + noise[sl])
        mean = img.mean(axis=(1, 2), keepdims=True)
        std = img.std(axis=(1, 2), keepdims=True)
        img = STANDARD_MEAN + STANDARD_STD * (img - mean) / std
        out[sl] = np.clip(np.rint(img), 0, 255).astype(np.uint8)
    return out


def render_noise(num: int, size: int, rng: np.random.Generator,
                 noise_std: float = NOISE_STD) -> np.ndarray:
    """Backgrounds without any object: grey level plus pixel noise,
    standardised like :func:`render_shapes` (the digit-only control).

    Args:
        num: Number of images N.
        size: Image side S in pixels.
        rng: Random generator.
        noise_std: Standard deviation of the pixel noise, > 0.

    Returns:
        Uint8 array of shape (N, S, S).
    """
    check_positive('noise_std', noise_std)
    img = rng.uniform(*BACKGROUND_LEVEL, size=(num, 1, 1)) + rng.normal(
        0, noise_std, size=(num, size, size))
    mean = img.mean(axis=(1, 2), keepdims=True)
    std = img.std(axis=(1, 2), keepdims=True)
    img = STANDARD_MEAN + STANDARD_STD * (img - mean) / std
    return np.clip(np.rint(img), 0, 255).astype(np.uint8)
