"""A checkpoint that does not fit a benchmark: the error says how the ViT
encoders differ (width, depth, patch, channels) and names the shipped
benchmarks that fit; a fitting one is summarised in one line."""
import pytest
import torch
from mmengine.config import Config
from mmengine.registry import init_default_scope
from mmpretrain.registry import MODELS

from pmsn_mm.engine.checkpoint_fit import (ViTShape, checkpoint_fit,
                                           config_vit_shape,
                                           fitting_benchmarks, vit_shape)
from tests._configs import CONFIGS

TOY = ('configs/pmsn/benchmarks/'
       'vit-mini-p4-lastcls_knn-k20_shapes-digits.py')


def _model(path):
    init_default_scope('mmpretrain')
    return MODELS.build(Config.fromfile(path).model)


def _main_job_state():
    """The weights of a main-job checkpoint (PMSN: backbone, neck, head,
    EMA target), made by building its model."""
    model = _model(f'{CONFIGS}/pmsn/'
                   'pmsn_vit-mini-p4_1xb128-15e-cpu_shapes-digits-'
                   'power-law.py')
    return model.state_dict()


def test_the_architecture_is_read_from_the_weights():
    state = _main_job_state()
    assert vit_shape(state) == ViTShape(width=64, depth=4, patch=4,
                                        channels=1)
    assert str(vit_shape(state)) == ('ViT of width 64, depth 4, patch 4, 1 '
                                     'input channel')
    assert vit_shape({'backbone.conv1.weight': torch.zeros(8, 3, 7, 7)}) \
        is None
    assert config_vit_shape(dict(type='VisionTransformer',
                                 arch='deit-small', patch_size=16)) == \
        ViTShape(384, 12, 16, 3)
    assert config_vit_shape(dict(type='ResNet', depth=50)) is None


def test_benchmarks_that_fit_are_found():
    assert fitting_benchmarks(ViTShape(64, 4, 4, 1)) == [TOY]
    small = fitting_benchmarks(ViTShape(384, 12, 16, 3))
    assert 'configs/pmsn/benchmarks/vit-small-p16-lastcls_knn-k20_in1k.py' \
        in small and TOY not in small


def test_the_main_jobs_checkpoint_against_a_vit_s_benchmark():
    state = _main_job_state()
    model = _model(f'{CONFIGS}/pmsn/benchmarks/'
                   'vit-small-p16-lastcls_knn-k20_in1k.py')
    with pytest.raises(ValueError) as info:
        checkpoint_fit(model, state, 'main.pth')
    text = str(info.value)
    assert text.startswith("main.pth lacks 96 of the model's 150 weights")
    assert ("The architectures differ: the checkpoint's encoder is a ViT of "
            'width 64, depth 4, patch 4, 1 input channel, this config\'s a '
            'ViT of width 384, depth 12, patch 16, 3 input channels. '
            f"Benchmarks with the checkpoint's encoder: {TOY}.") in text


def test_the_main_jobs_checkpoint_fits_its_benchmark():
    line = checkpoint_fit(_model(f'{CONFIGS}/../{TOY}'), _main_job_state(),
                          'main.pth')
    assert line.startswith('main.pth: the model takes all 54 of its weights '
                           '(backbone.*: 54); left ')


def test_weights_of_other_shapes_are_refused():
    model = _model(f'{CONFIGS}/../{TOY}')
    state = dict(model.state_dict())
    state['backbone.pos_embed'] = torch.zeros(1, 5, 64)
    with pytest.raises(ValueError, match="holds 1 of the model's 54 weights "
                       r"in other shapes \(e\.g\. \['backbone\.pos_embed'\]"):
        checkpoint_fit(model, state, 'x.pth')
