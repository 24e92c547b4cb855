"""BatchAugmentPreprocessor draws the views of the shipped configs without a
host sync, with a fixed sequence of ops (independent of the batch size and
of the random draws), and its batched colour jitter is each image's own
chain of adjustments."""
import glob
import math
import os.path as osp
from typing import Dict, List, Sequence, Tuple

import numpy as np
import pytest
import torch
from mmengine.config import Config
from mmengine.dataset import default_collate
from mmpretrain.datasets.transforms import PackInputs
from mmpretrain.registry import MODELS
from mmpretrain.structures import DataSample

from pmsn_mm.datasets.padded_collate import padded_collate
from pmsn_mm.datasets.sample_data import class_image
from pmsn_mm.models.data_preprocessors import BatchAugmentPreprocessor
from pmsn_mm.models.data_preprocessors.views import color_jitter, rotate_hue
from tests._profiling.op_counter import OpCounter, assert_host_syncs
from tests._views import draw_color_params

pytestmark = pytest.mark.slow  # pytest -m "not slow" skips it

ROOT = osp.dirname(osp.dirname(osp.dirname(osp.dirname(
    osp.abspath(__file__)))))
INAT18 = 'configs/pmsn/pmsn_vit-small-p16_32xb128-300e_inat18-power-law.py'
CPU_TOY = ('configs/pmsn/'
           'pmsn_vit-mini-p4_1xb128-15e-cpu_shapes-digits-power-law.py')
#: (height, width) of decoded images of a mixed batch
SIZES = [(120, 160), (150, 100), (96, 96), (64, 80)]


def preprocessor_cfg(path: str) -> dict:
    """The ``data_preprocessor`` a runner would build for a config (the
    model's own, else the top-level one)."""
    cfg = Config.fromfile(osp.join(ROOT, path))
    model = cfg.get('model')
    model = model if isinstance(model, dict) else {}
    return dict(model.get('data_preprocessor') or
                cfg.get('data_preprocessor') or {})


def real_batch(num: int) -> dict:
    """``num`` decoded RGB images of different sizes (uint8, C x H x W,
    BGR as the loaders decode), packed by ``padded_collate``."""
    rng = np.random.default_rng(0)
    pack = PackInputs()
    items = []
    for i in range(num):
        h, w = SIZES[i % len(SIZES)]
        bgr = np.ascontiguousarray(class_image(i % 10, 10, h, w,
                                               rng)[..., ::-1])
        items.append(pack(dict(img=bgr, img_shape=(h, w),
                               ori_shape=(h, w))))
    return padded_collate(items)


def toy_batch(num: int, channels: int = 1, side: int = 20) -> dict:
    """The in-memory toy set's batch: equal-size uint8 images packed by
    ``default_collate``, the data samples without ``img_shape``."""
    gen = torch.Generator().manual_seed(0)
    items = [dict(inputs=torch.randint(0, 256, (channels, side, side),
                                       generator=gen, dtype=torch.uint8),
                  data_samples=DataSample()) for _ in range(num)]
    return default_collate(items)


def count(pre: BatchAugmentPreprocessor, data: dict) -> OpCounter:
    """Ops and host syncs of one training forward (after a warm-up one:
    kornia's lazy import)."""
    pre(data, True)
    with OpCounter() as counter:
        views = pre(data, True)['inputs']
    assert len(views) == pre.num_views
    return counter


def check_no_sync_and_fixed_ops(pre: BatchAugmentPreprocessor,
                                batches: Dict[int, dict]) -> int:
    """0 host syncs and the same op count at every batch size; returns
    the op count."""
    counters = {num: count(pre, data) for num, data in batches.items()}
    for num, counter in counters.items():
        assert_host_syncs(counter, what=f'the views at batch {num}')
    ops = {num: counter.ops for num, counter in counters.items()}
    assert len(set(ops.values())) == 1, f'op counts per batch size: {ops}'
    return next(iter(ops.values()))


#: Ops the views of MSN's 12 views may dispatch (973 before the
#: stacked, table-driven colour chain and the one-convolution blur passes).
MAX_INAT18_VIEW_OPS = 400


def test_pmsn_inat18_views_need_no_host_sync():
    """MSN's 12 views (colour jitter in a random order per image, grayscale,
    blur) of a mixed-size padded batch: 0 host syncs, and the same number
    of ops at batch 2 and 4, at most ``MAX_INAT18_VIEW_OPS``."""
    pre = MODELS.build(preprocessor_cfg(INAT18))
    assert pre.num_views == 12
    ops = check_no_sync_and_fixed_ops(pre, {2: real_batch(2),
                                            4: real_batch(4)})
    assert ops <= MAX_INAT18_VIEW_OPS, ops


def test_cpu_toy_views_need_no_host_sync():
    """The CPU toy recipe (grey 20 px images, brightness + contrast): 0 host
    syncs, the same number of ops at batch 2 and 4."""
    cfg = preprocessor_cfg(CPU_TOY)
    assert cfg['type'] == 'BatchAugmentPreprocessor'
    pre = MODELS.build(cfg)
    check_no_sync_and_fixed_ops(pre, {2: toy_batch(2), 4: toy_batch(4)})


def shipped_preprocessors() -> List[Tuple[str, dict]]:
    """One config per distinct BatchAugmentPreprocessor setting."""
    seen = {}
    for path in sorted(glob.glob(osp.join(ROOT, 'configs', '**', '*.py'),
                                 recursive=True)):
        rel = osp.relpath(path, ROOT)
        if '_base_' in rel:
            continue
        try:
            cfg = preprocessor_cfg(rel)
        except Exception:  # configs of other tools or missing extras
            continue
        if cfg.get('type') == 'BatchAugmentPreprocessor':
            seen.setdefault(repr(sorted(cfg.items())), (rel, cfg))
    return list(seen.values())


def test_every_shipped_view_setting_needs_no_host_sync():
    """All distinct view settings of the shipped configs (MSN, VICReg,
    SwAV multi-crop, the toy recipes): 0 host syncs, fixed op counts."""
    found = shipped_preprocessors()
    paths = [path for path, _ in found]
    assert len(found) >= 3, paths
    for path, cfg in found:
        pre = MODELS.build(cfg)
        # a 3-channel BGR batch where the config converts to RGB, else the
        # toy's grey batch
        make = real_batch if pre._channel_conversion else toy_batch
        counters = {num: count(pre, make(num)) for num in (2, 3)}
        for num, counter in counters.items():
            assert_host_syncs(counter, what=f'{path}, views at batch {num}')
        assert counters[2].ops == counters[3].ops, path


def test_oversized_img_shape_is_refused_from_metadata():
    """The size check reads the data samples, not the device tensor."""
    data = real_batch(2)
    data['data_samples'][0].set_metainfo(dict(img_shape=(1000, 10)))
    pre = MODELS.build(dict(type='BatchAugmentPreprocessor',
                            views=[dict(size=8)]))
    with pytest.raises(ValueError, match='exceeds the batch tensor'):
        pre(data, True)


# ------------------------------------------- batched colour jitter, exact
def pil_hue(x: torch.Tensor, factor: torch.Tensor) -> torch.Tensor:
    """torchvision's ``adjust_hue`` of a PIL image, in float: kornia's HSV
    with the hue stored as PIL does (``floor(255 h)``, h in turns), shifted
    by ``int(255 factor)`` in uint8 arithmetic (wrapping at 256) and read
    back as ``H / 255`` turns."""
    from kornia.color import hsv_to_rgb, rgb_to_hsv
    hue, sat, val = rgb_to_hsv(x).unbind(1)
    steps = torch.floor(hue / (2 * math.pi) * 255.0)
    steps = (steps + int(float(factor) * 255)) % 256
    return hsv_to_rgb(torch.stack([steps / 255.0 * 2 * math.pi, sat, val],
                                  1))


def per_image_chain(images: torch.Tensor, params: dict) -> torch.Tensor:
    """Reference: each image alone through kornia's functionals in its
    order (hue on PIL's 8-bit circle, :func:`pil_hue`), clipped after every
    step; images not jittered untouched."""
    from kornia.enhance import (adjust_brightness_accumulative,
                                adjust_contrast_with_mean_subtraction,
                                adjust_saturation_with_gray_subtraction)
    ops = (adjust_brightness_accumulative,
           adjust_contrast_with_mean_subtraction,
           adjust_saturation_with_gray_subtraction, pil_hue)
    enabled = params['enabled']
    out = []
    for i in range(len(images)):
        x = images[i:i + 1] / 255.0
        if bool(params['apply'][i]):
            for op in params['order'][i].tolist():
                if enabled[op]:
                    factor = params['factors'][i, op]
                    x = ops[op](x, factor[None]).clamp(0, 1)
        out.append(x * 255.0)
    return torch.cat(out)


@pytest.mark.parametrize('strengths', [
    (0.4, 0.4, 0.4, 0.1),
    (0.4, 0.4, 0.0, 0.0),
    (0.0, 0.0, 0.5, 0.3),
    (0.5, 0.0, 0.0, 0.2),
    (0.0, 0.0, 0.0, 0.5),
])
def test_batched_jitter_is_each_images_own_chain(strengths: Sequence[float]):
    """Every subset of adjustments, each image in its own random order:
    the batched schedule (blend slots before and after the hue step)
    equals the per-image chain to float rounding (< 0.01 grey levels),
    except where float rounding puts a hue on the other side of one of
    PIL's 255 hue steps (at most one step, 6 levels; rare); images not
    jittered come back bit for bit."""
    gen = torch.Generator().manual_seed(0)
    images = torch.rand(256, 3, 6, 6, generator=gen) * 255
    params = draw_color_params(256, *strengths, prob=0.8, generator=gen)
    out = color_jitter(images, params)
    diff = (out - per_image_chain(images, params)).abs()
    assert (diff > 1e-2).float().mean() < 1e-3, diff.max()
    assert diff.max() <= 6.0 + 1e-2
    kept = ~params['apply']
    assert torch.equal(out[kept], images[kept])


def test_rotate_hue_is_kornias_hsv_round_trip():
    """Closed-form hue rotation against kornia's rgb -> hsv -> rgb on
    colours, greys, saturated corners and ties of the maximum."""
    from kornia.enhance import adjust_hue
    gen = torch.Generator().manual_seed(0)
    x = torch.rand(64, 3, 8, 8, generator=gen)
    x[:8] = x[:8].round()  # corners of the RGB cube
    x[8:12] = x[8:12, :1]  # greys
    x[12:16, 1] = x[12:16, 0]  # red = green
    turns = torch.rand(64, generator=gen) - 0.5
    torch.testing.assert_close(rotate_hue(x, turns),
                               adjust_hue(x, turns * 2 * math.pi),
                               rtol=0, atol=1e-5)
