"""The recipe checker's ``views.<i>.<field>`` rows are derived from the view
augmentation units (pmsn_mm/views/): tests/_recipes/pretraining.py names
no view field, and a setting added to one unit reaches the rows of device
and per-sample configs with no other edit."""
import ast
import os.path as osp
from types import SimpleNamespace

import pytest
from mmengine.config import Config
from mmengine.registry import init_default_scope
from mmpretrain.registry import MODELS, TRANSFORMS

from pmsn_mm.views import VIEW_FIELDS, GrayscaleSettings
from tests._configs import REPO
from tests._recipes import view_rows

PER_SAMPLE = Config(dict(train_dataloader=dict(dataset=dict(pipeline=[
    dict(type='LoadImageFromFile'),
    dict(type='MultiView', num_views=[2, 1], transforms=[
        [dict(type='RandomResizedCrop', scale=32),
         dict(type='RandomGrayscale', prob=0.2, tone='mean')],
        [dict(type='RandomResizedCrop', scale=16)]]),
    dict(type='PackInputs')]))))


def _device_model(views):
    init_default_scope('mmpretrain')
    return SimpleNamespace(data_preprocessor=MODELS.build(dict(
        type='BatchAugmentPreprocessor', views=views, mean=[0.0] * 3,
        std=[1.0] * 3)))


def test_the_checker_names_no_view_field():
    """No string constant of pretraining.py is a view field (but
    ``num_views``, the MultiView key that sets a group's count)."""
    path = osp.join(REPO, 'tests', '_recipes', 'pretraining.py')
    with open(path) as f:
        tree = ast.parse(f.read())
    strings = {node.value for node in ast.walk(tree)
               if isinstance(node, ast.Constant)
               and isinstance(node.value, str)}
    assert strings & set(VIEW_FIELDS) == {'num_views'}


def test_rows_of_device_and_per_sample_views():
    rows = view_rows(_device_model([dict(num_views=2, size=8, hue=0.1)]),
                     Config())
    assert rows['views.0.num_views'] == 2 and rows['views.0.hue'] == 0.1
    assert rows['views.0.interpolation'] == 'bilinear-roi-average'
    assert sorted(rows) == sorted(f'views.0.{f}' for f in VIEW_FIELDS)
    rows = view_rows(SimpleNamespace(), PER_SAMPLE)
    assert (rows['views.0.num_views'], rows['views.0.size'],
            rows['views.0.grayscale_prob']) == (2, 32, 0.2)
    assert (rows['views.1.num_views'], rows['views.1.size'],
            rows['views.1.grayscale_prob'],
            rows['views.1.interpolation']) == (1, 16, 0.0, 'bilinear')


@pytest.fixture
def toned_grayscale(monkeypatch):
    """Grayscale with one more setting, ``grayscale_tone``: an edit of its
    settings unit (pmsn_mm/views/grayscale.py) alone, patched in place, so
    the device unit that subclasses it has it too."""
    plain_check = GrayscaleSettings.check
    plain_read = GrayscaleSettings.transform_recipe

    def check(self, group, where):
        return dict(plain_check(self, group, where),
                    grayscale_tone=group['grayscale_tone'])

    def transform_recipe(self, transform):
        rows = plain_read(self, transform)
        if rows is not None:
            rows['grayscale_tone'] = transform.get('tone', 'luma')
        return rows

    monkeypatch.setattr(GrayscaleSettings, 'defaults',
                        dict(grayscale_prob=0.0, grayscale_tone='luma'))
    monkeypatch.setattr(GrayscaleSettings, 'check', check)
    monkeypatch.setattr(GrayscaleSettings, 'transform_recipe',
                        transform_recipe)


def test_a_new_setting_reaches_the_rows(toned_grayscale):
    """... and the loader's reduced decode takes it as a group setting."""
    TRANSFORMS.build(dict(type='LoadImageForViews',
                          views=[dict(size=8, grayscale_tone='mean')]))
    rows = view_rows(_device_model([dict(size=8, grayscale_tone='mean'),
                                    dict(size=4)]), Config())
    assert (rows['views.0.grayscale_tone'],
            rows['views.1.grayscale_tone']) == ('mean', 'luma')
    rows = view_rows(SimpleNamespace(), PER_SAMPLE)
    assert (rows['views.0.grayscale_tone'],
            rows['views.1.grayscale_tone']) == ('mean', 'luma')
