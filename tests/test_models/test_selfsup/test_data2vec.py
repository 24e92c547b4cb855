"""data2vec vision: targets, masking, loss, teacher gradients and EMA."""
import pytest
import torch
import torch.nn.functional as F
from mmpretrain.models.backbones import BEiTViT
from mmpretrain.registry import MODELS, TRANSFORMS
from mmpretrain.structures import DataSample

from pmsn_mm.models.utils.data2vec_targets import average_layer_targets

DIM, LAYERS, GRID = 48, 4, 4  # 32 px images, patch 8 -> 4 x 4 patches


def _arch():
    return dict(embed_dims=DIM, num_layers=LAYERS, num_heads=3,
                feedforward_channels=96)


def _model(**kwargs):
    cfg = dict(
        type='Data2VecVision',
        backbone=dict(
            type='Data2VecViT', arch=_arch(), img_size=32, patch_size=8,
            layer_scale_init_value=0.1, drop_path_rate=0.0),
        neck=dict(type='LinearNeck', in_channels=DIM, out_channels=DIM,
                  norm_cfg=None),
        target_layers=[1, 3])
    cfg.update(kwargs)
    return MODELS.build(cfg).train()


def _batch(batch=3, seed=0):
    gen = torch.Generator().manual_seed(seed)
    img = torch.randn(batch, 3, 32, 32, generator=gen)
    samples = []
    for _ in range(batch):
        sample = DataSample()
        sample.set_mask(torch.rand(GRID, GRID, generator=gen) < 0.5)
        samples.append(sample)
    return img, samples


def _masks(samples):
    return torch.stack([s.mask for s in samples]).flatten(1).bool()


def _plain_layer_norm(x):
    mean = x.mean(dim=-1, keepdim=True)
    var = ((x - mean)**2).mean(dim=-1, keepdim=True)
    return (x - mean) / torch.sqrt(var + 1e-5)


def _capture_teacher_blocks(model):
    seen = {}
    for i, layer in enumerate(model.target_net.module.layers):
        layer.register_forward_hook(
            lambda mod, args, out, i=i: seen.__setitem__(i, out.detach()))
    return seen


def _perturbed_student(model):
    """Initialised (the teacher copies the student), then a fake step."""
    model.init_weights()
    with torch.no_grad():
        for p in model.backbone.parameters():
            p.add_(0.05 * torch.randn_like(p))


def test_targets_are_mean_of_chosen_teacher_blocks_at_masked_positions():
    model = _model(target_momentum=0.5)
    _perturbed_student(model)
    seen = _capture_teacher_blocks(model)
    img, samples = _batch()
    losses = model.loss(img, samples)

    # expected targets from the teacher blocks 1 and 3, computed by hand:
    # LN(mean_l LN(block_l)) on patch tokens (class token dropped)
    assert sorted(seen) == list(range(LAYERS))
    avg = (_plain_layer_norm(seen[1][:, 1:]) +
           _plain_layer_norm(seen[3][:, 1:])) / 2
    targets = _plain_layer_norm(avg)
    mask = _masks(samples)
    # student: final tokens of the masked image at masked positions
    with torch.no_grad():
        tokens, _ = model.backbone.forward_layers(img, mask)
        pred = model.neck(tokens[:, 1:][mask])[0]
    expected = F.smooth_l1_loss(pred, targets[mask], beta=2.0)
    torch.testing.assert_close(losses['loss_regression'], expected)
    # other positions or other layers would give another loss
    unmasked = F.smooth_l1_loss(pred, targets[~mask][:pred.shape[0]],
                                beta=2.0)
    assert not torch.isclose(unmasked, expected)
    last = _plain_layer_norm(_plain_layer_norm(seen[3][:, 1:]))
    assert not torch.isclose(
        F.smooth_l1_loss(pred, last[mask], beta=2.0), expected)
    assert losses['num_masked'].item() == pytest.approx(
        mask.sum().item() / 3)


def test_compute_targets_matches_average_of_teacher_blocks():
    model = _model(target_layers=[0, 2, 3], target_layer_norm='instance',
                   target_post_norm=None)
    _perturbed_student(model)
    seen = _capture_teacher_blocks(model)
    img, _ = _batch()
    targets = model.compute_targets(img)
    assert targets.shape == (3, GRID * GRID, DIM)

    def inorm(x):  # each feature over the tokens of its image
        mean = x.mean(dim=1, keepdim=True)
        var = ((x - mean)**2).mean(dim=1, keepdim=True)
        return (x - mean) / torch.sqrt(var + 1e-5)

    expected = sum(inorm(seen[i][:, 1:]) for i in (0, 2, 3)) / 3
    torch.testing.assert_close(targets, expected, rtol=1e-5, atol=1e-5)


def test_teacher_sees_the_unmasked_image():
    model = _model()
    seen = _capture_teacher_blocks(model)
    img, samples = _batch()
    model.loss(img, samples)
    first = {i: v.clone() for i, v in seen.items()}
    other = [DataSample() for _ in samples]
    for s in other:
        s.set_mask(torch.ones(GRID, GRID, dtype=torch.bool))
    model.update_target()  # (teacher == student: the average is unchanged)
    model.loss(img, other)
    for i in range(LAYERS):
        torch.testing.assert_close(seen[i], first[i])
    # and equals the (copied) student without a mask
    _, blocks = model.backbone.forward_layers(img, None)
    torch.testing.assert_close(seen[LAYERS - 1], blocks[-1].detach())


def test_forward_layers_matches_mmpretrain_backbones():
    model = _model()
    backbone = model.backbone
    backbone.eval()  # mmpretrain's train() returns None
    img, samples = _batch()
    mask = _masks(samples)
    final, blocks = backbone.forward_layers(img, mask)
    # mmpretrain's own masked BEiT forward (last output, final norm)
    torch.testing.assert_close(final, backbone(img, mask.view(3, 4, 4))[-1])
    # BEiTViT without final norm, every block as an output
    plain = BEiTViT(arch=_arch(), img_size=32, patch_size=8,
                    out_indices=list(range(LAYERS)), out_type='raw',
                    final_norm=False, use_rel_pos_bias=False,
                    use_shared_rel_pos_bias=True)
    missing, _ = plain.load_state_dict(backbone.state_dict(), strict=False)
    assert not missing
    plain.eval()
    for got, want in zip(backbone.forward_layers(img, None)[1], plain(img)):
        torch.testing.assert_close(got, want)
    assert len(blocks) == LAYERS


def test_teacher_gets_no_gradient_and_stays_in_eval_mode():
    model = _model(backbone=dict(
        type='Data2VecViT', arch=_arch(), img_size=32, patch_size=8,
        drop_path_rate=0.25, layer_cfgs=dict(attn_drop_rate=0.05)))
    model.train()
    assert model.backbone.training and not model.target_net.training
    assert not any(m.training for m in model.target_net.modules())
    losses = model.loss(*_batch())
    total = sum(v for k, v in losses.items() if 'loss' in k)
    assert torch.isfinite(total)
    total.backward()
    for name, param in model.target_net.named_parameters():
        assert not param.requires_grad and param.grad is None, name
    student = [(n, p) for n, p in model.named_parameters()
               if not n.startswith('target_net')]
    assert model.backbone.mask_token.grad is not None
    assert torch.count_nonzero(model.backbone.mask_token.grad) > 0
    for name, param in student:
        if param.requires_grad:
            assert param.grad is not None, name
            assert torch.isfinite(param.grad).all(), name


def test_ema_update_moves_the_teacher():
    """The teacher starts as the initialised student and, after an
    optimizer step, moves to 0.9 * teacher + 0.1 * student."""
    model = _model(target_momentum=0.9)
    img, samples = _batch()
    optim = torch.optim.SGD(
        [p for n, p in model.named_parameters()
         if not n.startswith('target_net')], lr=0.5)
    model.init_weights()
    for name, param in model.target_net.module.named_parameters():
        torch.testing.assert_close(
            param, dict(model.backbone.named_parameters())[name])
    old = {n: p.clone() for n, p in model.target_net.module.named_parameters()}
    losses = model.loss(img, samples)
    losses['loss_regression'].backward()
    optim.step()
    with pytest.raises(RuntimeError, match='EMA target was not updated'):
        model.loss(img, samples)  # the step needs its target update first
    model.update_target()
    assert 1 - model.target_net.current_momentum == pytest.approx(0.9)
    student = dict(model.backbone.named_parameters())
    moved = 0
    for name, param in model.target_net.module.named_parameters():
        expected = 0.9 * old[name] + 0.1 * student[name].detach()
        torch.testing.assert_close(param, expected, rtol=0, atol=1e-6)
        moved += int(not torch.equal(param, old[name]))
    assert moved > 0


def test_l2_loss():
    model = _model(loss_type='l2')
    _perturbed_student(model)
    seen = _capture_teacher_blocks(model)
    img, samples = _batch()
    loss = model.loss(img, samples)['loss_regression']
    mask = _masks(samples)
    targets = average_layer_targets([seen[1][:, 1:], seen[3][:, 1:]])
    with torch.no_grad():
        tokens, _ = model.backbone.forward_layers(img, mask)
        pred = model.neck(tokens[:, 1:][mask])[0]
    torch.testing.assert_close(loss, F.mse_loss(pred, targets[mask]))


@pytest.mark.parametrize('kwargs, match', [
    (dict(target_layers=[]), 'target_layers must be a non-empty list'),
    (dict(target_layers=[1, 4]), r'indices in \[0, 4\)'),
    (dict(target_layers=[-1]), r'indices in \[0, 4\)'),
    (dict(target_layers=[2, 2]), 'distinct'),
    (dict(target_layer_norm='batch'), 'target_layer_norm must be one of'),
    (dict(target_post_norm='rms'), 'target_post_norm must be one of'),
    (dict(loss_type='l1'), 'loss_type must be one of'),
    (dict(loss_beta=0.0), r'loss_beta must be in \(0, inf\)'),
    (dict(target_momentum=1.0), r'target_momentum must be in \(0, 1\)'),
    (dict(target_momentum_end=1.5),
     r'target_momentum_end must be None or in \(0, 1\]'),
    (dict(backbone=dict(type='VisionTransformer', arch=_arch(),
                        img_size=32, patch_size=8)),
     'needs a backbone with forward_layers'),
])
def test_bad_settings_raise(kwargs, match):
    with pytest.raises(ValueError, match=match):
        _model(**kwargs)


def test_bad_inputs_raise():
    model = _model()
    img, _ = _batch()
    with pytest.raises(ValueError, match='BEiTMaskGenerator'):
        model.loss(img, [DataSample() for _ in range(3)])
    bad = [DataSample() for _ in range(3)]
    for s in bad:
        s.set_mask(torch.zeros(3, 3, dtype=torch.bool))
    with pytest.raises(ValueError, match='mask has 9 entries'):
        model.loss(img, bad)
    with pytest.raises(ValueError, match="norm must be one of"):
        average_layer_targets([torch.zeros(1, 2, 3)], layer_norm='batch')


def test_random_patch_masking_from_simmim_generator():
    gen = TRANSFORMS.build(
        dict(type='SimMIMMaskGenerator', input_size=32, mask_patch_size=8,
             model_patch_size=8, mask_ratio=0.5))
    img, samples = _batch()
    for sample in samples:
        sample.set_mask(gen({})['mask'])
    losses = _model().loss(img, samples)
    assert losses['num_masked'].item() == 8  # half of the 16 patches
    assert torch.isfinite(losses['loss_regression'])
