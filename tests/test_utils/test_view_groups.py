"""One definition of a view group (pmsn_mm/utils/view_groups.py), read by
the device pre-processor, the loader's reduced decode and the recipe
checker alike."""
import math

import pytest
from mmpretrain.registry import MODELS, TRANSFORMS

from pmsn_mm.datasets.transforms import largest_safe_reduction
from pmsn_mm.recipes import VIEW_FIELDS
from pmsn_mm.utils.view_groups import (VIEW_DEFAULTS, check_view_group,
                                       check_view_groups, smallest_crops)

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
