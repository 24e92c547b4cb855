"""MultiLinearProbeHead: two probes, summed losses, per-probe predictions."""
import pytest
import torch
import torch.nn.functional as F
from mmengine.registry import init_default_scope
from mmpretrain.registry import MODELS
from mmpretrain.structures import DataSample

from pmsn_mm.models.heads import MultiLinearProbeHead


def _head(**kwargs):
    init_default_scope('mmpretrain')
    torch.manual_seed(0)
    head = MODELS.build(
        dict(type='MultiLinearProbeHead', num_classes=5, in_channels=8,
             **kwargs))
    head.init_weights()
    return head


def _samples(labels):
    return [DataSample().set_gt_label(int(y)) for y in labels]


def test_probes_and_vissl_init():
    head = _head()
    assert head.probe_names == ('linear', 'bn_linear')
    linear, bn_linear = head.probes['linear'], head.probes['bn_linear']
    assert isinstance(linear, torch.nn.Linear)
    assert bn_linear.bn.affine is False and bn_linear.bn.eps == 1e-5
    for fc in (linear, bn_linear.fc):
        assert fc.weight.std().item() == pytest.approx(0.01, rel=0.5)
        assert torch.count_nonzero(fc.bias) == 0


def test_losses_are_each_probes_cross_entropy_and_gradients_separate():
    head = _head()
    head.train()
    x = torch.randn(6, 8)
    labels = torch.tensor([0, 1, 2, 3, 4, 0])
    losses = head.loss((x, ), _samples(labels))
    assert set(losses) == {'loss_linear', 'loss_bn_linear',
                           'linear/train_top1', 'bn_linear/train_top1'}
    # reference: the two probes written out by hand
    lin = head.probes['linear']
    ref_linear = F.cross_entropy(x @ lin.weight.T + lin.bias, labels)
    normed = (x - x.mean(0)) / torch.sqrt(x.var(0, unbiased=False) + 1e-5)
    fc = head.probes['bn_linear'].fc
    ref_bn = F.cross_entropy(normed @ fc.weight.T + fc.bias, labels)
    torch.testing.assert_close(losses['loss_linear'], ref_linear)
    torch.testing.assert_close(losses['loss_bn_linear'], ref_bn)
    # mmengine sums the loss_* keys; each probe only gets its own gradient
    losses['loss_linear'].backward()
    assert lin.weight.grad is not None and fc.weight.grad is None
    top1 = (x @ lin.weight.T + lin.bias).argmax(1).eq(labels).float().mean()
    assert losses['linear/train_top1'].item() == pytest.approx(
        100 * top1.item())


def test_every_parameter_gets_a_finite_gradient():
    head = _head(bn_affine=True)
    head.train()
    losses = head.loss((torch.randn(4, 8), ), _samples([0, 1, 2, 3]))
    sum(v for k, v in losses.items() if k.startswith('loss')).backward()
    for name, p in head.named_parameters():
        assert p.grad is not None, name
        assert torch.isfinite(p.grad).all(), name


def test_predict_reports_each_probe():
    head = _head()
    head.eval()
    x = torch.randn(3, 8)
    samples = head.predict((x, ), _samples([1, 2, 3]))
    lin = head.probes['linear']
    bn = head.probes['bn_linear']
    expected_lin = F.softmax(lin(x), dim=1)
    expected_bn = F.softmax(bn(x), dim=1)
    for i, s in enumerate(samples):
        torch.testing.assert_close(s.pred_score_linear, expected_lin[i])
        torch.testing.assert_close(s.pred_score_bn_linear, expected_bn[i])
        # pred_score / pred_label are the first probe's
        torch.testing.assert_close(s.pred_score, expected_lin[i])
        assert s.pred_label.item() == expected_lin[i].argmax().item()
        assert s.gt_label.item() == i + 1
    # without data samples, new ones are made
    assert len(head.predict((x, ))) == 3


def test_bn_per_channel_groups_like_vissl_batchnorm2d():
    """bn_channels=C on C*4 features == BatchNorm2d(C) on the 2x2 map."""
    head = _head(probes=('bn_linear', ), bn_channels=2)
    assert head.probe_names == ('bn_linear', )
    head.train()
    fmap = torch.randn(6, 2, 2, 2)
    probe = head.probes['bn_linear']
    logits = probe(fmap.flatten(1))
    bn2d = torch.nn.BatchNorm2d(2, affine=False)
    expected = probe.fc(bn2d(fmap).flatten(1))
    torch.testing.assert_close(logits, expected)
    torch.testing.assert_close(probe.bn.running_mean, bn2d.running_mean)


@pytest.mark.parametrize('kwargs, match', [
    (dict(num_classes=0), 'num_classes must be an int >= 1'),
    (dict(in_channels=True), 'in_channels must be an int >= 1'),
    (dict(probes=()), 'probes must be a non-empty sequence'),
    (dict(probes=('linear', 'mlp')), 'probes must be a non-empty sequence'),
    (dict(probes=('linear', 'linear')), 'probes must be a non-empty'),
    (dict(bn_channels=0), 'bn_channels must be an int >= 1'),
    (dict(bn_channels=3), 'bn_channels=3 must divide in_channels=8'),
])
def test_validation(kwargs, match):
    args = dict(num_classes=5, in_channels=8)
    args.update(kwargs)
    with pytest.raises(ValueError, match=match):
        MultiLinearProbeHead(**args)


def test_feature_shape_is_checked():
    head = _head()
    with pytest.raises(ValueError, match='pool feature maps with a neck'):
        head((torch.zeros(2, 8, 3, 3), ))
    with pytest.raises(ValueError,
                       match=r'expects features of shape \(B, 8\)'):
        head((torch.zeros(2, 7), ))
