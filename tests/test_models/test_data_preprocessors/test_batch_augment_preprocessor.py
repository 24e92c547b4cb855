"""BatchAugmentPreprocessor (pmsn_mm/models/data_preprocessors/
batch_augment_preprocessor.py): views per group, flip rate, evaluation,
seed, refused inputs and settings."""
import pytest
import torch
from mmpretrain.registry import MODELS

N = 4000


def _preprocessor(**kwargs):
    cfg = dict(type='BatchAugmentPreprocessor', mean=[100.0], std=[50.0])
    cfg.update(kwargs)
    return MODELS.build(cfg)


def test_preprocessor_flip_rate_and_views():
    pre = _preprocessor(
        num_views=3, crop_scale=(1.0, 1.0), crop_ratio=(1.0, 1.0),
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
    none = _preprocessor(crop_scale=(1.0, 1.0), crop_ratio=(1.0, 1.0),
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
    (dict(crop_scale=(0.9, 0.5)), 'scale'),
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
