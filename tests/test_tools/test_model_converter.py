"""pmsn_to_backbone: mmpretrain and timm weights of a PMSN encoder."""
import importlib.util
import os
import os.path as osp
import subprocess
import sys

import pytest
import torch
from mmengine.registry import init_default_scope
from mmengine.runner.checkpoint import _load_checkpoint_with_prefix
from mmpretrain.registry import MODELS

from tests._configs import REPO
from tests._linear_probe_toy import (TINY_VIT, save_pmsn_vit_checkpoint,
                                     save_resnet_checkpoint)

pytestmark = pytest.mark.slow  # pytest -m "not slow" skips it


def _converter():
    spec = importlib.util.spec_from_file_location(
        'pmsn_to_backbone',
        osp.join(REPO, 'tools', 'model_converters', 'pmsn_to_backbone.py'))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope='module')
def pmsn_ckpt(tmp_path_factory):
    path = str(tmp_path_factory.mktemp('pmsn') / 'pmsn.pth')
    return path, save_pmsn_vit_checkpoint(path)


def _vit(**kwargs):
    init_default_scope('mmpretrain')
    vit = MODELS.build(dict(type='VisionTransformer', **TINY_VIT, **kwargs))
    vit.eval()
    return vit


def _pmsn_backbones(state):
    """The online backbone and EMA target backbone of the saved PMSN."""
    online, target = _vit(), _vit()
    online.load_state_dict({k[9:]: v for k, v in state.items()
                            if k.startswith('backbone.')})
    target.load_state_dict({k[20:]: v for k, v in state.items()
                            if k.startswith('target_net.module.0.')})
    return online, target


@pytest.mark.parametrize('target', [False, True], ids=['online', 'target'])
def test_mmpretrain_format_loads_strictly_and_matches(pmsn_ckpt, tmp_path,
                                                      target):
    src, state = pmsn_ckpt
    dst = str(tmp_path / 'backbone.pth')
    argv = [src, dst] + (['--target'] if target else [])
    _converter().main(argv)
    saved = torch.load(dst, weights_only=True)
    assert all(k.startswith('backbone.') for k in saved['state_dict'])
    assert saved['meta']['encoder'] == ('target' if target else 'online')
    # what Pretrained(prefix='backbone.') reads, loaded strictly
    vit = _vit()
    vit.load_state_dict(_load_checkpoint_with_prefix('backbone.', dst),
                        strict=True)
    online, ema = _pmsn_backbones(state)
    reference = ema if target else online
    other = online if target else ema
    x = torch.randn(2, 3, 32, 32)
    with torch.no_grad():
        torch.testing.assert_close(vit(x)[0], reference(x)[0], rtol=0,
                                   atol=0)
        assert not torch.allclose(vit(x)[0], other(x)[0])
    # the same file through mmengine's init_cfg, as the probe configs do
    init = _vit(init_cfg=dict(
        type='Pretrained', checkpoint=dst, prefix='backbone.'))
    init.init_weights()
    init.eval()
    with torch.no_grad():
        torch.testing.assert_close(init(x)[0], reference(x)[0])


def test_strip_prefix_gives_bare_backbone_keys(pmsn_ckpt, tmp_path):
    src, state = pmsn_ckpt
    dst = str(tmp_path / 'bare.pth')
    _converter().main([src, dst, '--strip-prefix'])
    bare = torch.load(dst, weights_only=True)['state_dict']
    vit = _vit()
    vit.load_state_dict(bare, strict=True)
    torch.testing.assert_close(bare['ln1.weight'],
                               state['backbone.ln1.weight'])


def _exec_printed_code(out: str):
    """Run the lines the converter printed after 'load it with:'."""
    code = out.split('load it with:\n', 1)[1]
    scope: dict = {}
    exec(code, scope)  # noqa: S102  (the test's point)
    return scope['model'].eval()


def test_timm_export_prints_lines_that_build_and_load(pmsn_ckpt, tmp_path,
                                                      capsys):
    src, state = pmsn_ckpt
    dst = str(tmp_path / 'timm.pth')
    converter = _converter()
    converter.main([src, dst, '--timm', '--num-heads', '2'])
    timm_vit = _exec_printed_code(capsys.readouterr().out)
    assert converter.timm_kwargs(torch.load(dst, weights_only=True)) == dict(
        img_size=32, patch_size=8, in_chans=3, embed_dim=32, depth=4,
        mlp_ratio=2.0, qkv_bias=True, final_norm=True, pre_norm=False,
        num_classes=0)
    online, _ = _pmsn_backbones(state)
    x = torch.randn(3, 3, 32, 32)
    with torch.no_grad():
        torch.testing.assert_close(
            timm_vit(x), online(x)[0], rtol=1e-5, atol=1e-5)


@pytest.fixture(scope='module')
def trained(tmp_path_factory):
    """A checkpoint of a real 2-iteration PMSN run (tools/train.py's Runner,
    so it holds the training config in meta['cfg'] and mmengine's message
    hub with HistoryBuffer objects), and the trained model."""
    from mmengine.config import Config
    from mmengine.runner import Runner

    from tests._configs import TINY_PMSN, write_config
    tmp_path = tmp_path_factory.mktemp('trained')
    cfg = Config.fromfile(write_config(tmp_path, TINY_PMSN))
    cfg.work_dir = str(tmp_path / 'work')
    cfg.train_cfg.max_iters = 2
    cfg.val_dataloader = cfg.val_evaluator = cfg.val_cfg = None
    runner = Runner.from_cfg(cfg)
    runner.train()
    return osp.join(cfg.work_dir, 'iter_2.pth'), runner.model


def test_timm_heads_come_from_the_training_config(trained, tmp_path, capsys):
    """A checkpoint of tools/train.py holds its config (meta['cfg']): the
    printed constructor gets num_heads (here 2 of a 1-channel toy ViT)
    from it, and the target encoder's features match too."""
    src, model = trained
    dst = str(tmp_path / 'timm.pth')
    _converter().main([src, dst, '--timm', '--target'])
    timm_vit = _exec_printed_code(capsys.readouterr().out)
    assert timm_vit.patch_embed.proj.in_channels == 1
    assert timm_vit.blocks[0].attn.num_heads == 2
    target = model.target_net.module[0]
    target.eval()  # mmpretrain's train() returns None
    x = torch.randn(2, 1, 20, 20)
    with torch.no_grad():
        torch.testing.assert_close(timm_vit(x), target(x)[0], rtol=1e-5,
                                   atol=1e-5)


def test_timm_export_without_num_heads_as_a_command(trained, tmp_path):
    """The documented command, in a fresh interpreter: reading the head
    count loads the checkpoint (HistoryBuffer and numpy objects in its
    message hub) with weights_only=True, so the allow-list must be in place
    before that first load, not only when the weights are read."""
    src, model = trained
    dst = str(tmp_path / 'vit_timm.pth')
    out = subprocess.run(
        [sys.executable, 'tools/model_converters/pmsn_to_backbone.py', src,
         dst, '--timm'],
        cwd=REPO, capture_output=True, text=True,
        env=dict(os.environ, OMP_NUM_THREADS='1'))
    assert out.returncode == 0, out.stderr[-3000:]
    assert osp.isfile(dst)
    timm_vit = _exec_printed_code(out.stdout)
    assert timm_vit.blocks[0].attn.num_heads == 2
    online = model.backbone
    online.eval()
    x = torch.randn(2, 1, 20, 20)
    with torch.no_grad():
        torch.testing.assert_close(timm_vit(x), online(x)[0], rtol=1e-5,
                                   atol=1e-5)


def test_timm_export_without_heads_asks_for_them(pmsn_ckpt, tmp_path):
    src, _ = pmsn_ckpt  # saved without a training config
    with pytest.raises(ValueError, match='pass --num-heads N'):
        _converter().main([src, str(tmp_path / 'x.pth'), '--timm'])
    with pytest.raises(ValueError, match='num_heads=3 does not divide'):
        _converter().main([src, str(tmp_path / 'x.pth'), '--timm',
                           '--num-heads', '3'])


def test_timm_format_with_layer_scale():
    from timm.models.vision_transformer import VisionTransformer
    converter = _converter()
    vit = _vit(layer_scale_init_value=0.1)
    with torch.no_grad():
        for p in vit.parameters():
            p.add_(0.05 * torch.randn_like(p))
    renamed = converter.mmpretrain_vit_to_timm(vit.state_dict())
    torch.testing.assert_close(renamed['blocks.3.ls1.gamma'],
                               vit.layers[3].attn.gamma1.weight)
    kwargs = converter.timm_kwargs(renamed)
    timm_vit = VisionTransformer(num_heads=2, **kwargs)
    timm_vit.load_state_dict(renamed, strict=True)
    timm_vit.eval()
    x = torch.randn(2, 3, 32, 32)
    with torch.no_grad():
        torch.testing.assert_close(timm_vit(x), vit(x)[0], rtol=1e-5,
                                   atol=1e-5)


def test_errors(pmsn_ckpt, tmp_path):
    converter = _converter()
    src, _ = pmsn_ckpt
    resnet = str(tmp_path / 'resnet.pth')
    save_resnet_checkpoint(resnet)
    with pytest.raises(ValueError, match="No key starts with "
                       "'target_net.module.0.'"):
        converter.main([resnet, str(tmp_path / 'x.pth'), '--target'])
    with pytest.raises(ValueError, match='timm export supports mmpretrain '
                       'VisionTransformer'):
        converter.main([resnet, str(tmp_path / 'x.pth'), '--timm',
                        '--num-heads', '2'])
    with pytest.raises(ValueError, match='--strip-prefix applies to the '
                       'mmpretrain format only'):
        converter.main([src, str(tmp_path / 'x.pth'), '--timm',
                        '--num-heads', '2', '--strip-prefix'])
    # a ResNet backbone converts fine to the mmpretrain format
    state = converter.main([resnet, str(tmp_path / 'r.pth')])
    assert 'conv1.weight' in state


def test_the_source_checkpoint_is_never_overwritten(pmsn_ckpt, tmp_path):
    """dst naming the checkpoint being converted (directly or through a
    link) is refused and leaves it intact."""
    converter = _converter()
    src = str(tmp_path / 'pmsn.pth')
    with open(pmsn_ckpt[0], 'rb') as f:
        data = f.read()
    with open(src, 'wb') as f:
        f.write(data)
    os.symlink(src, str(tmp_path / 'link.pth'))
    for dst in (src, str(tmp_path / 'link.pth'), str(tmp_path / '.' /
                                                     'pmsn.pth')):
        with pytest.raises(ValueError, match=f'dst {dst} is the checkpoint '
                           'being converted'):
            converter.main([src, dst, '--target'])
    with open(src, 'rb') as f:
        assert f.read() == data
    # another output file is written whole, with no temporary left
    converter.main([src, str(tmp_path / 'out.pth'), '--target'])
    assert sorted(os.listdir(tmp_path)) == ['link.pth', 'out.pth',
                                            'pmsn.pth']


def test_help_exits_cleanly():
    with pytest.raises(SystemExit) as exc:
        _converter().main(['--help'])
    assert exc.value.code == 0
