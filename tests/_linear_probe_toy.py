"""Tiny versions of the linear-probe configs (toy data, tiny encoders)."""
import os.path as osp
from typing import Dict, Optional

import torch
from mmengine.config import Config
from mmengine.registry import init_default_scope
from mmpretrain.registry import MODELS

from tests._configs import CONFIGS

BENCHMARKS = osp.join(CONFIGS, 'pmsn', 'benchmarks')
PMSN_TOY = osp.join(CONFIGS, 'pmsn',
                    'pmsn_vit-mini-p4_1xb64-cpu-toy_power-law-overlay.py')

#: A 4-block ViT (enough for the concatenation of the last 4 CLS tokens).
TINY_VIT = dict(
    arch=dict(
        embed_dims=32, num_layers=4, num_heads=2, feedforward_channels=64),
    img_size=32,
    patch_size=8)
#: A narrow ResNet-18: the last stage has 64 channels, 2x2 on 64x64 images.
TINY_RESNET = dict(depth=18, stem_channels=8, base_channels=8)

#: representation -> (real config, in_channels, image size, head extras)
REPRESENTATIONS = {
    'vit-lastcls': (
        'vit-small-p16-lastcls_8xb32-linear-steplr-28e_cifar100.py', 32, 32,
        {}),
    'vit-concat4cls': (
        'vit-small-p16-concat4cls_8xb32-linear-steplr-28e_cifar100.py', 128,
        32, {}),
    'resnet-pool2048': (
        'resnet50-pool2048_8xb32-linear-coslr-50e_clevr-count.py', 64, 64,
        {}),
    'resnet-pool8192': (
        'resnet50-pool8192_8xb32-linear-coslr-50e_clevr-count.py', 256, 64,
        dict(bn_channels=64)),
}


def _perturb(module: torch.nn.Module, seed: int) -> None:
    """Random values everywhere (LayerNorm/BN too), so loading is visible."""
    gen = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for p in module.parameters():
            p.add_(0.1 * torch.randn(p.shape, generator=gen))
        for name, b in module.named_buffers():
            if 'running_var' in name:
                b.uniform_(0.5, 2.0, generator=gen)
            elif 'running_mean' in name:
                b.normal_(0, 0.1, generator=gen)


def save_pmsn_vit_checkpoint(path: str) -> Dict[str, torch.Tensor]:
    """A PMSN model with the tiny ViT, online != target, saved as mmengine.

    Returns:
        The saved state dict.
    """
    init_default_scope('mmpretrain')
    cfg = Config.fromfile(PMSN_TOY).model
    cfg.backbone.update(TINY_VIT)
    cfg.neck.update(in_channels=32, hidden_channels=64, out_channels=16)
    cfg.head.update(in_channels=16)
    torch.manual_seed(0)
    model = MODELS.build(cfg)
    _perturb(model.backbone, 1)
    _perturb(model.target_net, 2)
    state = model.state_dict()
    torch.save({'state_dict': state, 'meta': {}}, path)
    return state


def save_resnet_checkpoint(path: str) -> Dict[str, torch.Tensor]:
    """A tiny ResNet saved under ``backbone.`` (an mmpretrain checkpoint)."""
    init_default_scope('mmpretrain')
    torch.manual_seed(0)
    resnet = MODELS.build(dict(type='ResNet', **TINY_RESNET))
    _perturb(resnet, 3)
    state = {f'backbone.{k}': v for k, v in resnet.state_dict().items()}
    torch.save({'state_dict': state, 'meta': {}}, path)
    return state


def write_toy_probe_config(tmp_path,
                           representation: str,
                           checkpoint: str,
                           max_epochs: int = 1,
                           num_train: int = 32,
                           num_val: int = 16,
                           batch_size: int = 16,
                           head_init: Optional[dict] = None,
                           train_pipeline: Optional[list] = None) -> str:
    """A real linear-probe config with toy data and a tiny encoder.

    Only sizes, data and the checkpoint are overridden; the freezing,
    representation, probes, optimiser, schedule and evaluator are the real
    config's.

    Returns:
        Path of the written config.
    """
    base, in_channels, size, head_extra = REPRESENTATIONS[representation]
    vit = representation.startswith('vit')
    backbone = dict(TINY_VIT, frozen_stages=4) if vit else dict(TINY_RESNET)
    if vit:  # a dict arch replaces the base's string arch
        backbone['arch'] = dict(_delete_=True, **TINY_VIT['arch'])
    backbone['init_cfg'] = dict(checkpoint=checkpoint)
    neck = dict(in_channels=32, init_cfg=dict(checkpoint=checkpoint)) \
        if representation == 'vit-concat4cls' else None
    head = dict(num_classes=10, in_channels=in_channels, **head_extra)
    if head_init is not None:  # replaces the configs' [] (PyTorch init)
        head['init_cfg'] = dict(_delete_=True, **head_init)
    pipeline = train_pipeline or [dict(type='PackInputs')]
    model = dict(backbone=backbone, head=head)
    if neck:
        model['neck'] = neck
    text = f"""
_base_ = '{osp.join(BENCHMARKS, base)}'
toy = dict(type='PowerLawOverlayDataset', label='digit', image_size={size},
           digit_size=12, background_source='skimage',
           digit_source='sklearn', seed=0)
data_preprocessor = dict(
    num_classes=10, mean=[118.0] * 3, std=[62.0] * 3, to_rgb=False)
model = {model!r}
train_dataloader = dict(
    batch_size={batch_size}, num_workers=0, persistent_workers=False,
    dataset=dict(_delete_=True, **toy, split='train',
                 num_samples={num_train}, pipeline={pipeline!r}))
val_dataloader = dict(
    batch_size={batch_size}, num_workers=0, persistent_workers=False,
    dataset=dict(_delete_=True, **toy, split='test', num_samples={num_val},
                 pipeline=[dict(type='PackInputs')]))
test_dataloader = val_dataloader
train_cfg = dict(max_epochs={max_epochs})
default_hooks = dict(logger=dict(interval=1), checkpoint=dict(interval=100))
"""
    path = osp.join(str(tmp_path), f'toy_{representation}.py')
    with open(path, 'w') as f:
        f.write(text)
    return path
