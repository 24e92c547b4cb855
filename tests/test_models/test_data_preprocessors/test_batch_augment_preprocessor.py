"""BatchAugmentPreprocessor (pmsn_mm/models/data_preprocessors/
batch_augment_preprocessor.py): views per group, flip rate, evaluation,
seed, refused inputs and settings."""
import pytest
import torch
from mmpretrain.registry import MODELS

N = 4000


def _preprocessor(seed=None, **group):
    """One view group of ``group``'s settings (two views by default)."""
    group.setdefault('num_views', 2)
    return MODELS.build(dict(type='BatchAugmentPreprocessor', views=[group],
                             mean=[100.0], std=[50.0], seed=seed))


def test_preprocessor_flip_rate_and_views():
    pre = _preprocessor(
        num_views=3, scale=(1.0, 1.0), ratio=(1.0, 1.0),
        flip_prob=0.5, jitter_prob=0.0)
    torch.manual_seed(0)
    imgs = torch.randint(0, 256, (N, 1, 6, 6), dtype=torch.uint8)
    views = pre(dict(inputs=imgs, data_samples=None), True)['inputs']
    assert len(views) == 3
    norm = (imgs.float() - 100.0) / 50.0
    for view in views:
        assert view.shape == (N, 1, 6, 6)
        same = torch.isclose(view, norm, atol=1e-4).flatten(1).all(1)
        mirrored = torch.isclose(view, norm.flip(-1), atol=1e-4).flatten(1)
        mirrored = mirrored.all(1)
        assert bool((same | mirrored).all())
        rate = mirrored.float().mean().item()
        assert abs(rate - 0.5) < 4 * (0.25 / N)**0.5
    none = _preprocessor(scale=(1.0, 1.0), ratio=(1.0, 1.0),
                         flip_prob=0.0, jitter_prob=0.0)
    for view in none(dict(inputs=imgs, data_samples=None), True)['inputs']:
        torch.testing.assert_close(view, norm)


def test_preprocessor_eval_normalises_only_and_output_size():
    pre = _preprocessor(size=4)
    imgs = torch.randint(0, 256, (3, 1, 6, 6), dtype=torch.uint8)
    out = pre(dict(inputs=imgs, data_samples=None), False)['inputs']
    torch.testing.assert_close(out, (imgs.float() - 100.0) / 50.0)
    views = pre(dict(inputs=[imgs], data_samples=None), True)['inputs']
    assert [v.shape for v in views] == [(3, 1, 4, 4)] * 2


def test_preprocessor_seed_is_reproducible():
    imgs = torch.randint(0, 256, (8, 1, 6, 6), dtype=torch.uint8)
    a = _preprocessor(seed=3)(dict(inputs=imgs, data_samples=None), True)
    b = _preprocessor(seed=3)(dict(inputs=imgs, data_samples=None), True)
    for x, y in zip(a['inputs'], b['inputs']):
        torch.testing.assert_close(x, y)
    assert not torch.equal(a['inputs'][0], a['inputs'][1])


def test_preprocessor_rejects_multiview_input():
    imgs = torch.zeros(2, 1, 6, 6, dtype=torch.uint8)
    with pytest.raises(ValueError, match='PackInputs'):
        _preprocessor()(dict(inputs=[imgs, imgs], data_samples=None), True)


@pytest.mark.parametrize('kwargs, match', [
    (dict(num_views=0), 'num_views'),
    (dict(size=0), 'size'),
    (dict(flip_prob=1.5), 'flip_prob'),
    (dict(jitter_prob=-0.1), 'jitter_prob'),
    (dict(brightness=-1.0), 'brightness'),
    (dict(scale=(0.9, 0.5)), 'scale'),
    (dict(blur_sigma=(0.0, 1.0)), 'blur_sigma'),
    (dict(grayscale_prob=2.0), 'grayscale_prob'),
    (dict(solarize_prob=-1.0), 'solarize_prob'),
])
def test_preprocessor_errors(kwargs, match):
    with pytest.raises(ValueError, match=match):
        _preprocessor(**kwargs)


def test_group_settings_are_checked():
    with pytest.raises(ValueError, match=r"views\[1\] has unknown keys "
                       r"\['sigma'\]"):
        MODELS.build(dict(type='BatchAugmentPreprocessor',
                          views=[dict(), dict(sigma=1.0)]))
    with pytest.raises(ValueError, match=r'views\[0\] hue must be in '
                       r'\[0, 0.5\]'):
        MODELS.build(dict(type='BatchAugmentPreprocessor',
                          views=[dict(hue=0.7)]))
    with pytest.raises(ValueError, match='at least one view group'):
        MODELS.build(dict(type='BatchAugmentPreprocessor', views=[]))


# ------------------------------------------- float32 views under --amp
def _amp_model():
    """A tiny PMSN whose views crop, jitter (the 3 x 3 colour matrix) and
    blur (a grouped convolution): the ops autocast would run in bfloat16.
    mean 0 / std 1, so the views are in grey levels."""
    from mmengine.registry import init_default_scope
    init_default_scope('mmpretrain')
    view = dict(num_views=2, size=16, scale=(0.3, 1.0), jitter_prob=1.0,
                brightness=0.4, contrast=0.4, saturation=0.2, hue=0.1,
                blur_prob=1.0, blur_sigma=(0.5, 2.0))
    return MODELS.build(dict(
        type='PMSN',
        data_preprocessor=dict(type='BatchAugmentPreprocessor', views=[view],
                               mean=[0.0] * 3, std=[1.0] * 3),
        backbone=dict(type='MSNViT', arch=dict(embed_dims=16, num_layers=1,
                                               num_heads=2,
                                               feedforward_channels=32),
                      img_size=16, patch_size=4),
        neck=dict(type='MSNProjector', in_channels=16, hidden_channels=32,
                  out_channels=16),
        head=dict(type='PMSNHead', num_prototypes=6, in_channels=16,
                  prior=dict(type='UniformPrior'),
                  loss=dict(type='PMSNLoss', prior_weight=1.0)),
        num_random_views=1, target_momentum=0.9))


def test_views_are_float32_through_the_amp_train_step():
    """mmengine's ``train_step`` runs the pre-processor inside the
    optimizer wrapper's autocast: the views it draws there (bf16 autocast
    on the CPU, ``DeviceAwareAmpOptimWrapper``) equal the views drawn in
    float32 with the same seed, while drawing them under autocast would
    move pixels by more than one grey level."""
    from mmengine.optim import build_optim_wrapper
    from mmpretrain.structures import DataSample
    model = _amp_model().train()
    wrapper = build_optim_wrapper(model, dict(
        type='DeviceAwareAmpOptimWrapper', dtype='bfloat16',
        optimizer=dict(type='AdamW', lr=1e-3)))
    gen = torch.Generator().manual_seed(0)
    data = dict(inputs=torch.randint(0, 256, (8, 3, 24, 24),
                                     dtype=torch.uint8, generator=gen),
                data_samples=[DataSample() for _ in range(8)])
    seen = []
    handle = model.data_preprocessor.register_forward_hook(
        lambda module, args, out: seen.append(out['inputs']))
    torch.manual_seed(5)
    model.train_step(data, wrapper)  # the whole step, autocast included
    handle.remove()
    assert torch.get_autocast_dtype('cpu') == torch.bfloat16
    torch.manual_seed(5)
    reference = model.data_preprocessor(data, True)['inputs']  # no autocast
    assert len(seen[0]) == len(reference) == 2
    for got, want in zip(seen[0], reference):
        assert got.dtype == torch.float32
        assert torch.equal(got, want)
    # what the fix prevents: the same draws inside bf16 autocast
    pre = model.data_preprocessor
    images = data['inputs'].float()
    sizes = pre.image_sizes(images, data['data_samples'])
    torch.manual_seed(5)
    plain = pre.augment_group(images, sizes['heights'], sizes['widths'],
                              pre.views[0])
    torch.manual_seed(5)
    with torch.autocast('cpu', dtype=torch.bfloat16):
        cast = pre.augment_group(images, sizes['heights'], sizes['widths'],
                                 pre.views[0])
    assert max((a.float() - b.float()).abs().max().item()
               for a, b in zip(plain, cast)) > 1.0
