"""tools/cached_features.py: features as samples, probes on them."""
import pytest
import torch
from mmpretrain.structures import DataSample
from torch import nn

from tests._tools import import_beside_tools

_cached = import_beside_tools('tools/cached_features.py')
CachedFeatureProbe, CachedFeatures = (_cached.CachedFeatureProbe,
                                      _cached.CachedFeatures)


def test_cached_features_serve_one_sample_per_row():
    feats = torch.arange(12.).reshape(4, 3)
    labels = torch.tensor([2, 0, 1, 1])
    data = CachedFeatures(feats, labels, dict(classes=('a', 'b', 'c')))
    assert len(data) == 4 and data.metainfo == dict(classes=('a', 'b', 'c'))
    sample = data[2]
    torch.testing.assert_close(sample['inputs'], torch.tensor([6., 7., 8.]))
    assert sample['data_samples'].gt_label.tolist() == [1]
    assert CachedFeatures(feats, labels).metainfo == {}
    with pytest.raises(ValueError, match='4 features but 3 labels'):
        CachedFeatures(feats, labels[:3])


class _Head(nn.Module):
    """Records what the probe passes in each mode."""

    def forward(self, feats):
        return ('tensor', feats)

    def loss(self, feats, data_samples):
        return ('loss', feats, data_samples)

    def predict(self, feats, data_samples):
        return ('predict', feats, data_samples)


def test_probe_feeds_features_as_a_one_level_tuple():
    probe = CachedFeatureProbe(_Head())
    x = torch.ones(2, 3)
    samples = [DataSample(), DataSample()]
    kind, feats = probe(x)
    assert kind == 'tensor' and len(feats) == 1 and feats[0] is x
    assert probe(x, samples, mode='loss')[0] == 'loss'
    kind, feats, out = probe(x, samples, mode='predict')
    assert kind == 'predict' and feats[0] is x and out is samples
    with pytest.raises(ValueError, match="mode must be 'tensor'"):
        probe(x, samples, mode='feat')
