"""PrototypeEmbedMixin: every stage of PMSN and PSwAV, online and target,
equals the model's parts composed by hand."""
import pytest
import torch
import torch.nn.functional as F
from mmengine.registry import init_default_scope
from mmpretrain.registry import MODELS

VIT = dict(
    type='VisionTransformer',
    arch=dict(embed_dims=16, num_layers=1, num_heads=2,
              feedforward_channels=32),
    img_size=8, patch_size=4, in_channels=1)


def _pswav():
    init_default_scope('mmpretrain')
    return MODELS.build(
        dict(type='PSwAV',
             backbone=dict(VIT, out_type='featmap'),
             neck=dict(type='SwAVNeck', in_channels=16, hid_channels=8,
                       out_channels=6, norm_cfg=dict(type='BN1d')),
             head=dict(type='PSwAVHead', num_prototypes=5, in_channels=6,
                       prior=dict(type='PowerLawPrior', tau=1.0),
                       loss=dict(type='PSwAVLoss', temperature=0.1)))).eval()


def _pmsn():
    init_default_scope('mmpretrain')
    model = MODELS.build(
        dict(type='PMSN', backbone=VIT, mask_ratio=0.0,
             neck=dict(type='MSNProjector', in_channels=16,
                       hidden_channels=8, out_channels=6),
             head=dict(type='PMSNHead', num_prototypes=5,
                       in_channels=6, temperature=0.2, label_smoothing=0.1,
                       prior=dict(type='PowerLawPrior', tau=1.0))))
    model.init_weights()
    return model.eval()


HARMONIC = torch.tensor([1, 1 / 2, 1 / 3, 1 / 4, 1 / 5], dtype=torch.float64)


def test_pswav_stages_match_its_swav_forward():
    model = _pswav()
    x = torch.randn(3, 1, 8, 8)
    with torch.no_grad():
        out = model.embed(x)
        # SwAV's own path: backbone -> SwAVNeck(list of outputs)
        emb = model.neck([model.backbone(x)])
        feats = F.adaptive_avg_pool2d(model.backbone(x)[-1], 1).flatten(1)
    torch.testing.assert_close(out['backbone'], feats)
    torch.testing.assert_close(out['neck'], emb)
    w = model.head.prototypes.detach()
    expected = F.softmax(
        F.normalize(emb) @ F.normalize(w).T / 0.1, dim=1)
    torch.testing.assert_close(out['probs'], expected)
    torch.testing.assert_close(model.extract_feat(x, stage='probs'),
                               expected)
    torch.testing.assert_close(model.head.prior.probs,
                               HARMONIC / HARMONIC.sum())
    with pytest.raises(ValueError, match='PSwAV has no target encoder'):
        model.embed(x, target=True)


def test_pmsn_stages_online_and_target():
    model = _pmsn()
    x = torch.randn(3, 1, 8, 8)
    # make the target differ from the online encoder
    with torch.no_grad():
        for p in model.target_net.parameters():
            p.add_(0.1)
        out = model.embed(x)
        out_t = model.embed(x, target=True)
        feats = model.backbone(x)[-1]
        emb = model.neck(feats)[0]
        target_backbone, target_neck = model.target_net.module
        feats_t = target_backbone(x)[-1]
        emb_t = target_neck(feats_t)[0]
    torch.testing.assert_close(out['backbone'], feats)
    torch.testing.assert_close(out['neck'], emb)
    torch.testing.assert_close(out_t['backbone'], feats_t)
    torch.testing.assert_close(out_t['neck'], emb_t)
    assert not torch.allclose(out['neck'], out_t['neck'])
    # the head's probabilities: temperature 0.2, label smoothing 0.1
    w = model.head.prototypes.detach()
    soft = F.softmax(F.normalize(emb) @ F.normalize(w).T / 0.2, dim=1)
    torch.testing.assert_close(out['probs'], 0.9 * soft + 0.1 / 5)
    assert set(model.embed(x, stages=('neck', ))) == {'neck'}
    torch.testing.assert_close(model.extract_feat(x, stage='neck'), emb)
    torch.testing.assert_close(model.head.prior.probs,
                               HARMONIC / HARMONIC.sum())
    with pytest.raises(ValueError,
                       match=r"^stage must be one of \('backbone'"):
        model.extract_feat(x, stage='logits')
