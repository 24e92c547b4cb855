"""A view group and its augmentations on the device, one unit each
(pmsn_mm/models/data_preprocessors/views/, subclasses of the settings units
of pmsn_mm/views/): settings, defaults and checks declared by the units,
read by the device pre-processor, the loader's reduced decode and the
recipe checker alike; a new augmentation is one unit."""
import math

import pytest
import torch
from mmpretrain.registry import MODELS, TRANSFORMS

from pmsn_mm.datasets.transforms import largest_safe_reduction
from pmsn_mm.models.data_preprocessors.views import (AUGMENTS, DRAW_WIDTH,
                                                     ViewAugment, draw_width)
from pmsn_mm.views import (SETTINGS, VIEW_DEFAULTS, VIEW_FIELDS,
                           check_view_group, check_view_groups, recipe_fields,
                           smallest_crops, view_defaults, view_fields)

MSN = [dict(num_views=2, size=224, scale=(0.3, 1.0)),
       dict(num_views=10, size=96, scale=(0.05, 0.3), ratio=(0.5, 1.5))]


def test_defaults_fill_and_settings_keep():
    group = check_view_group(dict(num_views=3, size=32, hue=0.1))
    assert sorted(group) == sorted(VIEW_DEFAULTS)
    assert (group['num_views'], group['size'], group['hue']) == (3, 32, 0.1)
    assert tuple(group['scale']) == (0.08, 1.0)
    assert group['flip_prob'] == 0.5 and group['solarize_prob'] == 0.0


@pytest.mark.parametrize('group,match', [
    (dict(sigma=1.0), r"views\[1\] has unknown keys \['sigma'\]"),
    (dict(hue=0.7), r'views\[1\] hue must be in \[0, 0.5\]'),
    (dict(num_views=0), r'views\[1\] num_views'),
    (dict(scale=(0.9, 0.5)), r'views\[1\] scale'),
    (dict(blur_prob=1.5), r'views\[1\] blur_prob'),
])
def test_every_reader_refuses_the_same_bad_group(group, match):
    views = [dict(size=8), group]
    with pytest.raises(ValueError, match=match):
        check_view_groups(views)
    with pytest.raises(ValueError, match=match):
        MODELS.build(dict(type='BatchAugmentPreprocessor', views=views))
    with pytest.raises(ValueError, match=match):
        TRANSFORMS.build(dict(type='LoadImageForViews', views=views))


def test_no_group_is_refused():
    with pytest.raises(ValueError, match='at least one view group'):
        check_view_groups([])


def test_smallest_crops_closed_form():
    crops = smallest_crops(check_view_groups(MSN))
    assert crops == [(0.3, pytest.approx(0.75), 224),
                     (0.05, pytest.approx(0.5), 96)]
    # a group without size (the input's side) forbids any reduction
    assert smallest_crops(check_view_groups([dict(), MSN[0]])) is None


def test_loader_reads_the_checked_groups():
    loader = TRANSFORMS.build(dict(type='LoadImageForViews', views=MSN))
    # ratio (0.5, 1.5): the most extreme is 0.5, not 1 / 1.5
    assert loader.crops == [(0.3, pytest.approx(3 / 4), 224),
                            (0.05, pytest.approx(0.5), 96)]
    # a 4500 px square: shortest 96 px-view crop sqrt(0.05 * 0.5) * 4500 =
    # 711 px, 7.4x its output: decoded at 1/4 (with ratio 1/1.5: 8.6x, 1/8)
    assert math.sqrt(0.05 * 0.5) * 4500 / 96 == pytest.approx(7.41, abs=0.01)
    assert largest_safe_reduction(4500, 4500, loader.crops) == 4


def test_recipe_fields_are_the_group_settings():
    """The recipe tables' views.<i>.<field> are the group's settings (but
    the solarize threshold) plus how crops are resized and jittered."""
    assert set(VIEW_FIELDS) == (set(VIEW_DEFAULTS) - {'solarize_threshold'}
                                | {'interpolation', 'jitter_order'})


def test_the_settings_are_the_units_settings():
    """VIEW_DEFAULTS is num_views then each unit's settings, in the order
    the units run; every unit reads its own columns of one shared draw."""
    names = [type(a).__name__ for a in AUGMENTS]
    assert names == ['CropResizeFlip', 'ColorJitterView', 'Grayscale',
                     'GaussianBlurView', 'Solarize']
    expected = ['num_views']
    for augment in AUGMENTS:
        expected += list(augment.defaults)
    assert list(VIEW_DEFAULTS) == expected
    columns = sorted(c for a in AUGMENTS for c in a.columns)
    assert columns == list(range(14)) and DRAW_WIDTH == 14


def test_each_device_unit_is_its_settings_unit():
    """AUGMENTS[i] subclasses the class of SETTINGS[i] and declares no
    setting, check or recipe row of its own: those live in pmsn_mm/views/
    only."""
    assert len(AUGMENTS) == len(SETTINGS)
    for augment, settings in zip(AUGMENTS, SETTINGS):
        assert isinstance(augment, type(settings))
        own = vars(type(augment))
        assert not {'defaults', 'check', 'enabled', 'recipe', 'recipe_extra',
                    'unrecorded', 'absent', 'transform_recipe'} & set(own)
        assert 'apply' in own


class _Invert(ViewAugment):
    """A new augmentation: invert a view with probability invert_prob."""

    defaults = dict(invert_prob=0.0)
    columns = (14, )

    def check(self, group, where):
        prob = group['invert_prob']
        if not 0.0 <= prob <= 1.0:
            raise ValueError(f'{where} invert_prob must be in [0, 1]')
        return dict(invert_prob=prob)

    def enabled(self, group):
        return group['invert_prob'] > 0

    def apply(self, images, group, draws):
        coin = draws.coin(self.columns[0], group['invert_prob'], 'invert')
        return torch.where(coin.view(-1, 1, 1, 1), 255.0 - images, images)


def test_a_new_augmentation_is_one_unit():
    """Listing a unit is all it takes: its setting is a group setting with
    its default and check, a recipe field, a column of the draw, and the
    pre-processor applies it."""
    from mmengine.registry import init_default_scope

    from pmsn_mm.models.data_preprocessors import BatchAugmentPreprocessor
    augments = AUGMENTS + (_Invert(), )
    assert view_defaults(augments)['invert_prob'] == 0.0
    assert 'invert_prob' in view_fields(augments)
    assert draw_width(augments) == 15
    group = check_view_group(dict(invert_prob=1.0), augments=augments)
    assert recipe_fields(group, augments)['invert_prob'] == 1.0
    with pytest.raises(ValueError, match=r'views\[0\] invert_prob'):
        check_view_groups([dict(invert_prob=2.0)], augments=augments)
    with pytest.raises(ValueError, match='unknown keys'):
        check_view_group(dict(invert_prob=1.0))  # not listed: unknown

    class WithInvert(BatchAugmentPreprocessor):
        augments = AUGMENTS + (_Invert(), )

    init_default_scope('mmpretrain')
    images = torch.randint(0, 256, (3, 1, 6, 6), dtype=torch.uint8)
    kwargs = dict(mean=[0.0], std=[1.0])
    plain = BatchAugmentPreprocessor(
        views=[dict(num_views=1, scale=(1.0, 1.0), ratio=(1.0, 1.0),
                    flip_prob=0.0)], **kwargs)
    inverted = WithInvert(
        views=[dict(num_views=1, scale=(1.0, 1.0), ratio=(1.0, 1.0),
                    flip_prob=0.0, invert_prob=1.0)], **kwargs)
    data = dict(inputs=images, data_samples=None)
    torch.testing.assert_close(plain(data, True)['inputs'][0],
                               images.float())
    torch.testing.assert_close(inverted(data, True)['inputs'][0],
                               255.0 - images.float())


def test_overlapping_columns_are_refused():

    class Clash(_Invert):
        columns = (9, )  # the flip's

    with pytest.raises(ValueError, match='overlapping columns'):
        draw_width(AUGMENTS + (Clash(), ))
