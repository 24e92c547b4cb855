"""ModuloHueColorJitter: hue shifts of both signs, against torchvision's
adjust_hue."""
import numpy as np
import pytest
from mmengine.registry import init_default_scope
from mmpretrain.registry import TRANSFORMS
from PIL import Image
from torchvision.transforms import functional as TF

from pmsn_mm.datasets.transforms import ModuloHueColorJitter, adjust_hue

FACTORS = [-0.5, -0.37, -0.1, -0.004, 0.0, 0.004, 0.1, 0.37, 0.5]


def _rgb(seed=0, shape=(40, 50, 3)):
    return np.random.default_rng(seed).integers(0, 256, shape, np.uint8)


def _reference(rgb, factor):
    """torchvision's adjust_hue on a PIL image (numpy-2 safe since 0.19)."""
    return np.asarray(TF.adjust_hue(Image.fromarray(rgb), factor))


@pytest.mark.parametrize('factor', FACTORS)
def test_pillow_hue_equals_torchvision_pixel_for_pixel(factor):
    rgb = _rgb()
    bgr = np.ascontiguousarray(rgb[..., ::-1])
    out = adjust_hue(bgr, factor, backend='pillow')
    assert out.dtype == np.uint8 and out.shape == bgr.shape
    np.testing.assert_array_equal(out[..., ::-1], _reference(rgb, factor))


@pytest.mark.parametrize('factor', [-0.37, -0.1, 0.1, 0.37])
def test_cv2_hue_turns_the_same_way_as_torchvision(factor):
    """OpenCV's HSV round trip differs from PIL's by ~1 level on average;
    the shift itself must match torchvision's and not its mirror."""
    rgb = _rgb(1)
    out = adjust_hue(np.ascontiguousarray(rgb[..., ::-1]), factor,
                     backend='cv2')[..., ::-1].astype(int)
    assert np.abs(out - _reference(rgb, factor)).mean() < 2.0
    assert np.abs(out - _reference(rgb, -factor)).mean() > 10.0


def test_grey_images_have_no_hue():
    grey = _rgb(shape=(8, 9))
    assert adjust_hue(grey, -0.3) is grey
    same = np.repeat(grey[..., None], 3, axis=2)
    np.testing.assert_array_equal(adjust_hue(same, -0.3), same)


@pytest.mark.parametrize('kwargs, error, message', [
    (dict(hue_factor=0.6), ValueError,
     r'hue_factor must be in \[-0.5, 0.5\] but is 0.6\.'),
    (dict(hue_factor=0.1, backend='skimage'), ValueError,
     r"ColorJitter backend must be one of \('pillow', 'cv2'\) but is "
     r"'skimage'\."),
])
def test_bad_hue_arguments(kwargs, error, message):
    with pytest.raises(error, match=message):
        adjust_hue(_rgb(), **kwargs)


def test_float_images_are_refused():
    with pytest.raises(TypeError, match='uint8 array of shape'):
        adjust_hue(_rgb().astype(np.float32), 0.1)


def test_registered_by_its_own_name_and_survives_negative_hues():
    from mmpretrain.datasets.transforms import ColorJitter
    init_default_scope('mmpretrain')
    jitter = TRANSFORMS.build(dict(type='ModuloHueColorJitter',
                                   brightness=0.4, contrast=0.4,
                                   saturation=0.2, hue=0.1))
    assert type(jitter) is ModuloHueColorJitter
    assert TRANSFORMS.get('ColorJitter') is ColorJitter  # upstream's
    np.random.seed(0)
    for _ in range(50):  # about half of the draws shift the hue negatively
        out = jitter(dict(img=_rgb()))['img']
        assert out.shape == (40, 50, 3) and out.dtype == np.uint8


@pytest.mark.parametrize('factor', [-0.2, 0.2])
def test_a_fixed_hue_range_gives_torchvision_output(factor):
    rgb = _rgb(2)
    jitter = ModuloHueColorJitter(hue=(factor, factor))
    out = jitter(dict(img=np.ascontiguousarray(rgb[..., ::-1])))['img']
    np.testing.assert_array_equal(out[..., ::-1], _reference(rgb, factor))


def test_unknown_backend_is_refused_at_build():
    with pytest.raises(ValueError,
                       match='ModuloHueColorJitter backend must be one'):
        ModuloHueColorJitter(hue=0.1, backend='skimage')
