"""The settings of a view group, one unit per augmentation (pmsn_mm/views/):
pure Python, each unit's recipe-table rows of a device group and of a
per-sample pipeline, and the colour jitter maths that the per-sample
transform and the device view share."""

import numpy as np
import pytest
import torch

from pmsn_mm.datasets.transforms import ModuloHueColorJitter
from pmsn_mm.views import (SETTINGS, VIEW_FIELDS, GrayscaleSettings,
                           check_view_group, jitter_range,
                           pipeline_recipe_fields, recipe_fields,
                           rotate_hue_8bit, view_defaults, view_fields)
from tests._configs import modules_after_bare_import

#: Rows of a per-sample pipeline without any view transform, by hand.
ABSENT = dict(num_views=1, size=None, scale=None, ratio=None, flip_prob=0.0,
              jitter_prob=0.0, brightness=0.0, contrast=0.0, saturation=0.0,
              hue=0.0, grayscale_prob=0.0, blur_prob=0.0, blur_sigma=None,
              solarize_prob=0.0, interpolation=None, jitter_order=None)


def test_the_settings_import_no_torch_and_no_models():
    """``pmsn_mm.views`` alone (``pmsn_mm/__init__`` skipped: it imports
    every subpackage) loads neither torch nor numpy nor pmsn_mm.models."""
    assert modules_after_bare_import(
        'views', ('torch.', 'numpy.', 'pmsn_mm.models')) == []


def test_a_pipeline_without_view_transforms():
    assert pipeline_recipe_fields([dict(type='LoadImageFromFile'),
                                   dict(type='PackInputs')]) == ABSENT
    assert list(pipeline_recipe_fields([])) == list(VIEW_FIELDS)


def test_each_unit_reads_its_per_sample_transforms():
    """MSN's 96 px focal view as per-sample transforms, the rows by hand."""
    jitter = dict(type='ModuloHueColorJitter', brightness=0.4,
                  contrast=0.4, saturation=0.2, hue=0.1)
    pipeline = [
        dict(type='LoadImageFromFile'),
        dict(type='RandomResizedCrop', scale=96, crop_ratio_range=(0.05, 0.3),
             backend='pillow'),
        dict(type='RandomFlip', prob=0.5),
        dict(type='RandomApply', transforms=[jitter], prob=0.8),
        dict(type='RandomGrayscale', prob=0.2, keep_channels=True),
        dict(type='GaussianBlur', magnitude_range=(0.1, 2.0), prob=0.5),
        dict(type='mmpretrain.Solarize', thr=128, prob=0.2),
    ]
    assert pipeline_recipe_fields(pipeline) == dict(
        ABSENT, size=96, scale=[0.05, 0.3], ratio=[0.75, 4 / 3],
        interpolation='bilinear-antialias', flip_prob=0.5, jitter_prob=0.8,
        brightness=0.4, contrast=0.4, saturation=0.2, hue=0.1,
        jitter_order='random', grayscale_prob=0.2, blur_prob=0.5,
        blur_sigma=[0.1, 2.0], solarize_prob=0.2)
    # a jitter without RandomApply always applies; cv2 does not antialias
    rows = pipeline_recipe_fields([dict(type='RandomResizedCrop', scale=32),
                                   dict(type='ColorJitter', hue=0.2)])
    assert (rows['interpolation'], rows['jitter_prob'], rows['hue'],
            rows['brightness']) == ('bilinear', 1.0, 0.2, 0.0)


def test_a_random_apply_no_unit_reads_is_refused():
    with pytest.raises(ValueError, match='RandomApply of .*GaussianBlur.*: '
                       'no view augmentation reads it'):
        pipeline_recipe_fields([dict(
            type='RandomApply', transforms=[dict(type='GaussianBlur')])])


def test_device_rows_of_a_group():
    group = check_view_group(dict(num_views=2, size=224, hue=0.1))
    assert recipe_fields(group) == dict(
        ABSENT, num_views=2, size=224, scale=(0.08, 1.0), ratio=(0.75, 4 / 3),
        flip_prob=0.5, hue=0.1, interpolation='bilinear-roi-average',
        jitter_order='random')


class _Toned(GrayscaleSettings):
    """Grayscale with one more setting: an edit of its unit alone."""

    defaults = dict(GrayscaleSettings.defaults, grayscale_tone='luma')

    def check(self, group, where):
        tone = group['grayscale_tone']
        if tone not in ('luma', 'mean'):
            raise ValueError(f'{where} grayscale_tone must be luma or mean')
        return dict(super().check(group, where), grayscale_tone=tone)

    def transform_recipe(self, transform):
        rows = super().transform_recipe(transform)
        if rows is not None:
            rows['grayscale_tone'] = transform.get('tone', 'luma')
        return rows


def test_a_new_setting_is_an_edit_of_its_unit():
    units = tuple(_Toned() if isinstance(u, GrayscaleSettings) else u
                  for u in SETTINGS)
    assert view_defaults(units)['grayscale_tone'] == 'luma'
    assert view_fields(units).index('grayscale_tone') == \
        view_fields(units).index('grayscale_prob') + 1
    group = check_view_group(dict(grayscale_tone='mean'), augments=units)
    assert recipe_fields(group, units)['grayscale_tone'] == 'mean'
    with pytest.raises(ValueError, match=r'views grayscale_tone'):
        check_view_group(dict(grayscale_tone='max'), augments=units)
    rows = pipeline_recipe_fields(
        [dict(type='RandomGrayscale', prob=0.3, tone='mean')], units)
    assert (rows['grayscale_prob'], rows['grayscale_tone']) == (0.3, 'mean')
    assert pipeline_recipe_fields([], units)['grayscale_tone'] == 'luma'


@pytest.mark.parametrize('name,strength,expected', [
    ('brightness', 0.4, (0.6, 1.4)),
    ('contrast', 1.5, (0.0, 2.5)),  # 1 - s < 0: clipped to 0
    ('saturation', 0.0, (1.0, 1.0)),
    ('hue', 0.1, (-0.1, 0.1)),
])
def test_jitter_range(name, strength, expected):
    assert jitter_range(name, strength) == pytest.approx(expected)


def test_the_per_sample_jitter_uses_the_shared_ranges():
    jitter = ModuloHueColorJitter(brightness=1.5, contrast=0.4, hue=0.1)
    assert jitter.brightness == jitter_range('brightness', 1.5) == (0.0, 2.5)
    assert jitter.contrast == jitter_range('contrast', 0.4)
    assert jitter.saturation is None  # strength 0: never drawn
    assert jitter.hue == (-0.1, 0.1)


def test_rotate_hue_8bit_on_numpy_and_torch_alike():
    """trunc(255 turns) steps modulo 256: 250 + trunc(25.5) = 275 -> 19;
    3 + trunc(-25.5) = -22 -> 234; 100 + trunc(127.5) = 227."""
    hue = np.array([250, 3, 100], dtype=np.int16)
    turns = [0.1, -0.1, 0.5]
    expected = [19, 234, 227]
    for h, t, e in zip(hue, turns, expected):
        assert rotate_hue_8bit(h, t) == e
    out = rotate_hue_8bit(torch.tensor(hue, dtype=torch.float32),
                          torch.tensor(turns), torch.trunc)
    assert out.tolist() == expected
