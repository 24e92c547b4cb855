"""batch_features: pre-process, first view, last output, pooled maps."""
import torch
from mmengine.dataset import default_collate
from mmpretrain.registry import MODELS
from mmpretrain.structures import DataSample

from pmsn_mm.evaluation import batch_features


def _batch(n=3):
    return default_collate([
        dict(inputs=torch.randint(0, 255, (3, 32, 32), dtype=torch.uint8),
             data_samples=DataSample()) for _ in range(n)
    ])


def test_resnet_maps_are_pooled_and_match_the_backbone():
    model = MODELS.build(dict(
        type='ImageClassifier',
        backbone=dict(type='ResNet_CIFAR', depth=18),
        data_preprocessor=dict(mean=[0.0] * 3, std=[1.0] * 3)))
    model.eval()
    data = _batch()
    with torch.no_grad():
        feats = batch_features(model, data)
        x = data['inputs'].float()  # default_collate stacked them
        expected = model.backbone(x)[-1].mean(dim=(2, 3))
    assert feats.shape == (3, 512)
    assert torch.allclose(feats, expected, atol=1e-5)


def test_selfsup_list_inputs_and_neck_stage():
    model = MODELS.build(dict(
        type='PMSN',
        backbone=dict(type='VisionTransformer',
                      arch=dict(embed_dims=32, num_layers=1, num_heads=2,
                                feedforward_channels=64),
                      img_size=32, patch_size=8),
        neck=dict(type='MSNProjector', in_channels=32, hidden_channels=64,
                  out_channels=16),
        head=dict(type='PMSNHead', num_prototypes=5, in_channels=16),
        mask_ratio=0.0))
    model.eval()
    data = _batch(4)
    with torch.no_grad():
        assert batch_features(model, data).shape == (4, 32)
        neck = batch_features(model, data, stage='neck')
        x = data['inputs'].float()  # default_collate stacked them
        expected = model.neck(model.backbone(x))[0]
    assert neck.shape == (4, 16)
    assert torch.allclose(neck, expected, atol=1e-5)
