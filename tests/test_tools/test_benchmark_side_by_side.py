"""tools/speed/benchmark_official_msn.py and benchmark_loop.py on CPU,
narrowed (no timing asserts).

CI has no network and no official MSN checkout: the step benchmark runs on
a stand-in checkout written into ``tmp_path`` with the official layout
(``src/msn_train.py``: ``init_model``, ``init_opt``; ``src/losses.py``:
``init_msn_loss``; ``src/utils.py``: ``AllReduceSum``, ``grad_logger``;
``src/deit.py``: ``VisionTransformer``) and the same signatures, built of
tiny torch modules that record what they are given.
"""
import os.path as osp
import re
import sys
import textwrap

import pytest

from tests._configs import CONFIGS
from tests._profiling import rule_failure
from tests._tools import load_tool

pytestmark = pytest.mark.slow  # pytest -m "not slow" skips it

INAT18 = osp.join(CONFIGS, 'pmsn',
                  'pmsn_vit-small-p16_32xb128-300e_inat18-power-law.py')

STAND_IN = {
    'deit.py': '''
        import torch
        from torch import nn

        CALLS = []


        class VisionTransformer(nn.Module):
            def __init__(self, img_size=[224], patch_size=16, in_chans=3,
                         num_classes=0, embed_dim=768, depth=12,
                         num_heads=12, mlp_ratio=4., qkv_bias=False,
                         qk_scale=None, drop_rate=0., attn_drop_rate=0.,
                         drop_path_rate=0., norm_layer=nn.LayerNorm,
                         **kwargs):
                super().__init__()
                CALLS.append(('init', dict(
                    img_size=list(img_size), patch_size=patch_size,
                    in_chans=in_chans, embed_dim=embed_dim, depth=depth,
                    num_heads=num_heads, mlp_ratio=mlp_ratio)))
                self.patch_embed = nn.Conv2d(in_chans, embed_dim,
                                             patch_size, patch_size)
                self.norm = norm_layer(embed_dim)
                self.fc = None
                self.pred = None

            def forward(self, x, return_before_head=False, patch_drop=0.):
                x = x if isinstance(x, list) else [x]
                CALLS.append(('forward', [tuple(v.shape) for v in x],
                              patch_drop))
                h = self.fc(torch.cat(
                    [self.norm(self.patch_embed(v).mean((2, 3)))
                     for v in x]))
                return (h, h) if return_before_head else h
    ''',
    'utils.py': '''
        import torch


        class AllReduceSum(torch.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                return x

            @staticmethod
            def backward(ctx, grads):
                return grads


        def grad_logger(named_params):
            return [float(torch.norm(p.grad)) for n, p in named_params
                    if p.grad is not None and not n.endswith('.bias')
                    and len(p.shape) != 1]
    ''',
    'losses.py': '''
        import math
        import torch
        from src.utils import AllReduceSum

        CALLS = []


        def init_msn_loss(num_views=1, tau=0.1, me_max=True,
                          return_preds=False):
            CALLS.append(dict(num_views=num_views, tau=tau))

            def loss(anchor_views, target_views, prototypes, proto_labels,
                     T=0.25, use_entropy=False, use_sinkhorn=False):
                assert anchor_views.shape[0] == \\
                    num_views * target_views.shape[0]
                norm = torch.nn.functional.normalize
                protos = norm(prototypes)
                probs = torch.softmax(norm(anchor_views) @ protos.T / tau,
                                      1) @ proto_labels
                with torch.no_grad():
                    targets = torch.softmax(
                        norm(target_views) @ protos.T / tau / T, 1)
                    targets = targets.repeat(num_views, 1)
                ce = -(targets * probs.log()).sum(1).mean()
                avg = probs.mean(0)
                rloss = (avg * avg.log()).sum() + math.log(len(avg))
                sloss = -(probs * probs.log()).sum(1).mean()
                return ce, rloss, sloss, {}, targets

            return loss
    ''',
    'msn_train.py': '''
        from collections import OrderedDict

        import torch
        import src.deit as deit
        from src.losses import init_msn_loss  # noqa: F401
        from src.utils import AllReduceSum, grad_logger  # noqa: F401

        CALLS = []
        WIDTHS = dict(tiny=192, small=384, base=768, large=1024)


        def init_model(device, model_name='resnet50', use_pred=False,
                       use_bn=False, two_layer=False, bottleneck=1,
                       hidden_dim=2048, output_dim=128, drop_path_rate=0.1):
            CALLS.append(dict(model_name=model_name, use_bn=use_bn,
                              hidden_dim=hidden_dim, output_dim=output_dim))
            encoder = deit.__dict__[model_name](
                drop_path_rate=drop_path_rate)
            emb = next((w for k, w in WIDTHS.items() if k in model_name),
                       1280)
            fc = OrderedDict(fc1=torch.nn.Linear(emb, hidden_dim))
            if use_bn:
                fc['bn1'] = torch.nn.BatchNorm1d(hidden_dim)
            fc['gelu1'] = torch.nn.GELU()
            fc['fc3'] = torch.nn.Linear(hidden_dim, output_dim)
            encoder.fc = torch.nn.Sequential(fc)
            return encoder.to(device)


        class _Schedule:
            def __init__(self, value):
                self.value = value

            def step(self):
                return self.value


        def init_opt(encoder, iterations_per_epoch, start_lr, ref_lr,
                     warmup, num_epochs, prototypes=None, wd=1e-6,
                     final_wd=1e-6, final_lr=0.0):
            groups = [{'params': [p for p in encoder.parameters()
                                  if p.ndim > 1]},
                      {'params': [p for p in encoder.parameters()
                                  if p.ndim <= 1], 'weight_decay': 0}]
            if prototypes is not None:
                groups.append({'params': [prototypes], 'weight_decay': 0})
            optimizer = torch.optim.AdamW(groups, lr=ref_lr)
            return encoder, optimizer, _Schedule(ref_lr), _Schedule(wd)
    ''',
}


@pytest.fixture
def stand_in(tmp_path):
    """A stand-in official checkout; its modules after the run."""
    (tmp_path / 'src').mkdir()
    for name, text in STAND_IN.items():
        (tmp_path / 'src' / name).write_text(textwrap.dedent(text))
    yield str(tmp_path)
    for name in [m for m in sys.modules if m.split('.')[0] == 'src']:
        del sys.modules[name]


def test_official_msn_step_beside_pmsn_step(stand_in, capsys):
    bench = load_tool('tools/speed/benchmark_official_msn.py')
    result = bench.main([INAT18, '--msn-root', stand_in, '--narrow',
                         '--batch-size', '2', '--repeats', '1'])
    official, ours = result['rows']['official MSN'], result['rows']['pmsn_mm']
    for row in (official, ours):
        assert row['ms'] > 0
        assert row['images_per_s'] == pytest.approx(2 / row['ms'] * 1e3)
        assert row['peak_mib'] is None  # CPU
    assert result['ratio'] == pytest.approx(
        ours['images_per_s'] / official['images_per_s'])
    # official: 3 grad norms (conv, fc1, fc3 weights of the stand-in; the
    # BN/LN weights are 1-D) + float() of its 4 losses; pmsn_mm: the guard's
    # read + mmengine's clipped-norm read
    assert official['syncs'] >= 7
    assert ours['syncs'] <= 2, rule_failure(f"pmsn_mm's step: {ours}")
    out = capsys.readouterr().out
    for side in ('official MSN', 'pmsn_mm'):
        assert re.search(rf'^  {side} +[\d.]+ +[\d.]+ +n/a +\d+$', out, re.M)
    assert f'ratio (pmsn_mm img/s / official img/s): ' \
           f'{result["ratio"]:.2f}x' in out
    # the official side got the config's geometry, narrowed: ViT 192 wide,
    # 2 blocks, 3 heads, patch 16; target at 64 px; 1 random view at 64 px
    # with patch drop 0.15 + 10 focal views at 32 px
    deit = sys.modules['src.deit']
    init = [c[1] for c in deit.CALLS if c[0] == 'init'][0]
    assert init == dict(img_size=[64], patch_size=16, in_chans=3,
                        embed_dim=192, depth=2, num_heads=3, mlp_ratio=4.0)
    forwards = [c[1:] for c in deit.CALLS if c[0] == 'forward']
    anchors = [(2, 3, 64, 64)] + [(2, 3, 32, 32)] * 10
    assert (anchors, 0.15) in forwards
    assert ([(2, 3, 64, 64)], 0.0) in forwards
    assert set(map(repr, forwards)) == {repr((anchors, 0.15)),
                                        repr(([(2, 3, 64, 64)], 0.0))}
    model = sys.modules['src.msn_train'].CALLS[0]
    assert (model['use_bn'], model['hidden_dim'], model['output_dim']) == (
        True, 256, 64)
    assert 'small' not in model['model_name'] and 'tiny' in \
        model['model_name']
    assert sys.modules['src.losses'].CALLS == [dict(num_views=11, tau=0.1)]


def test_official_msn_step_refuses_a_folder_without_its_code(tmp_path):
    bench = load_tool('tools/speed/benchmark_official_msn.py')
    with pytest.raises(FileNotFoundError, match='src/msn_train.py'):
        bench.main([INAT18, '--msn-root', str(tmp_path), '--narrow'])


def test_loop_beside_isolated_step(capsys):
    """6 batches of 8 > the 40 sample iNat18 training images (head
    classes): the sample set is repeated for the one-epoch loop."""
    bench = load_tool('tools/speed/benchmark_loop.py')
    result = bench.main([INAT18, '--narrow', '--batch-size', '8',
                         '--warmup', '1', '--iters', '5',
                         '--num-workers', '0'])
    loop, step = result['rows']['loop'], result['rows']['step']
    assert loop['iters'] == 6  # tools/train.py's loop ran warm-up + iters
    assert loop['ms'] > 0 and step['ms'] > 0
    assert 0 <= loop['data_ms'] < loop['ms']
    assert result['overhead'] == pytest.approx(loop['ms'] / step['ms'])
    out = capsys.readouterr().out
    assert re.search(r'^  loop \(tools/train\.py\) +[\d.]+ +[\d.]+', out,
                     re.M)
    assert re.search(r'^  isolated step +[\d.]+ +[\d.]+', out, re.M)
    assert f'loop overhead: {result["overhead"]:.2f}x' in out
