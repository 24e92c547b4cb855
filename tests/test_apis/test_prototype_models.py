"""pmsn_mm.apis helpers work on PMSN- and SwAV-style prototype models."""
import torch
import torch.nn.functional as F
from mmengine.registry import init_default_scope

from mmpretrain.registry import MODELS
from pmsn_mm.apis import (cluster_prior, neck_embeddings,
                          prior_probabilities, prototype_matrix,
                          prototype_probabilities)

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
             head=dict(type='SwAVHead',
                       loss=dict(type='PSwAVLoss', feat_dim=6,
                                 num_prototypes=5,
                                 prior=dict(type='PowerLawPrior',
                                            tau=1.0))))).eval()


def _pmsn():
    init_default_scope('mmpretrain')
    return MODELS.build(
        dict(type='PMSN', backbone=VIT, mask_ratio=0.0,
             neck=dict(type='MSNProjector', in_channels=16,
                       hidden_channels=8, out_channels=6),
             head=dict(type='PMSNHead', num_prototypes=5,
                       in_channels=6, temperature=0.2, label_smoothing=0.1,
                       prior=dict(type='PowerLawPrior', tau=1.0)))).eval()


def test_pswav_helpers_match_its_swav_forward():
    model = _pswav()
    w = model.head.loss_module.prototypes.weight
    assert prototype_matrix(model) is w
    x = torch.randn(3, 1, 8, 8)
    with torch.no_grad():
        # SwAV's own path: backbone -> SwAVNeck(list of outputs)
        emb = model.neck([model.backbone(x)])
        feats = F.adaptive_avg_pool2d(model.backbone(x)[-1], 1).flatten(1)
        torch.testing.assert_close(neck_embeddings(model, feats), emb)
    probs = prototype_probabilities(model, emb)
    expected = F.softmax(
        F.normalize(emb) @ F.normalize(w.detach()).T / 0.1, dim=1)
    torch.testing.assert_close(probs, expected)
    assert cluster_prior(model) is model.head.loss_module.prior
    harmonic = torch.tensor([1, 1 / 2, 1 / 3, 1 / 4, 1 / 5],
                            dtype=torch.float64)
    torch.testing.assert_close(prior_probabilities(model),
                               harmonic / harmonic.sum())


def test_pmsn_helpers_unchanged():
    model = _pmsn()
    assert prototype_matrix(model) is model.head.prototypes
    feats = torch.randn(3, 16)
    with torch.no_grad():
        emb = model.neck(feats)[0]
        torch.testing.assert_close(neck_embeddings(model, feats), emb)
    # the head's probabilities: temperature 0.2, label smoothing 0.1
    w = model.head.prototypes.detach()
    soft = F.softmax(F.normalize(emb) @ F.normalize(w).T / 0.2, dim=1)
    torch.testing.assert_close(
        prototype_probabilities(model, emb), 0.9 * soft + 0.1 / 5)
    assert cluster_prior(model) is model.head.prior
    harmonic = torch.tensor([1, 1 / 2, 1 / 3, 1 / 4, 1 / 5],
                            dtype=torch.float64)
    torch.testing.assert_close(prior_probabilities(model),
                               harmonic / harmonic.sum())
