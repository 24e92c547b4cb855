"""The PMSN step under CPU bfloat16 autocast: the encoder runs in bfloat16,
the prototype probabilities and the loss in float32; finite loss and
gradients."""
import math

import torch
from mmengine.config import Config
from mmpretrain.registry import MODELS

from tests._configs import TINY_PMSN, write_config


def _tiny_pmsn(tmp_path):
    cfg = Config.fromfile(write_config(tmp_path, TINY_PMSN, 'pmsn.py'))
    torch.manual_seed(0)
    model = MODELS.build(cfg.model)
    model.train()
    return model


def _views(batch=8, size=20):
    gen = torch.Generator().manual_seed(1)
    # target view + num_random_views=1 (grayscale, normalised)
    return [torch.randn(batch, 1, size, size, generator=gen)
            for _ in range(2)]


def _total(losses):
    return sum(v for k, v in losses.items() if k.startswith('loss'))


def test_pmsn_step_under_cpu_bf16_autocast(tmp_path):
    # the float32 reference: the same weights and views without autocast
    fp32 = _total(_tiny_pmsn(tmp_path).loss(_views(), data_samples=[]))
    model = _tiny_pmsn(tmp_path)
    seen = {}

    def neck_hook(module, args, out):
        seen['neck'] = out[0].dtype

    def loss_hook(module, args, out):
        seen['loss_inputs'] = [a.dtype for a in args]

    model.neck.register_forward_hook(neck_hook)
    model.head.loss_module.register_forward_hook(loss_hook)
    with torch.autocast('cpu', dtype=torch.bfloat16):
        losses = model.loss(_views(), data_samples=[])
        total = _total(losses)
    # autocast was on for the encoder ...
    assert seen['neck'] == torch.bfloat16
    # ... the anchor log-probabilities, target and prior probabilities
    # reach the loss in float32, and the loss is float32
    assert seen['loss_inputs'] == [torch.float32] * 3
    assert total.dtype == torch.float32
    assert math.isfinite(total.item())
    assert abs(total.item() - fp32.item()) < 0.05 * abs(fp32.item()) + 1e-3
    total.backward()
    online = [(n, p) for n, p in model.named_parameters()
              if p.requires_grad and not n.startswith('target_net')]
    assert any(n == 'head.prototypes' for n, _ in online)
    for name, param in online:
        assert param.dtype == torch.float32, name
        assert param.grad is not None, name
        assert param.grad.dtype == torch.float32, name
        assert torch.isfinite(param.grad).all(), name
    assert torch.count_nonzero(model.head.prototypes.grad) > 0
