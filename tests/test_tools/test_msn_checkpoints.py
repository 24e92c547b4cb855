"""Official MSN checkpoints <-> pmsn_mm
(tools/model_converters/msn_checkpoints.py), against what the official code
computes (tests/fixtures/msn_official/, written by
.dev_scripts/msn_official_fixture.py from facebookresearch/msn).

Two narrowed encoders built with the official ``init_model`` stand for
ViT-S/16 (patch 16, projector with BN, DDP's ``module.``, an old
``scaling_bias``) and ViT-B/4 (patch 4, no BN, bare keys) in the training
layout (``save_checkpoint``), a third for a released download
(``vits16_800ep.pth.tar``: the official target encoder's ``state_dict()``
under ``module.`` + ``prototypes``, nothing else). Their converted weights
must give the official CLS features, ``forward_blocks`` features (the
official evaluations' lastCLS / concat-n), projector outputs, prototype
logits and first training step's loss to float32 round-off (a released
file's two encoders: the official target encoder's); the round trip
official -> pmsn_mm -> official is the identity on every tensor, in the
file's layout; a converted released file continues in the shipped
power-law continuation config; other files are refused by name.
"""
import os.path as osp
from collections import OrderedDict
from typing import Dict, Tuple

import pytest
import torch
from mmengine.config import Config
from mmengine.hooks import Hook
from mmengine.registry import init_default_scope
from mmengine.runner import Runner, load_checkpoint
from mmpretrain.registry import MODELS
from PIL import Image

import pmsn_mm.models.utils.patch_drop as patch_drop
from tests._configs import CONFIGS, REPO
from tests._tools import import_beside_tools, load_tool

msn = import_beside_tools('tools/model_converters/msn_checkpoints.py')
MSNArch, load_msn_checkpoint, msn_to_pmsn = (msn.MSNArch,
                                             msn.load_msn_checkpoint,
                                             msn.msn_to_pmsn)
official_optimizer_state, pmsn_to_msn, read_msn_checkpoint = (
    msn.official_optimizer_state, msn.pmsn_to_msn, msn.read_msn_checkpoint)

FIXTURES = osp.join(REPO, 'tests', 'fixtures', 'msn_official')
#: The training-layout cases (encoder + target_encoder + prototypes + opt
#: + epoch ...).
TRAINING_CASES = ('vit-narrow-p16', 'vit-narrow-p4')
#: The released-layout case (target_encoder + prototypes only).
RELEASED = 'vit-narrow-p16-released'
CASES = TRAINING_CASES + (RELEASED, )
#: float32 round-off of these few-layer encoders (measured <= 4e-7).
ATOL = 2e-6
BENCH = osp.join(CONFIGS, 'pmsn', 'benchmarks')


def official(case: str) -> Dict:
    """The official checkpoint of a case, as loaded from disk."""
    return load_msn_checkpoint(osp.join(FIXTURES, f'{case}.pth.tar'))


def expected(case: str) -> Dict:
    """What the official code computed from it (trusted: our fixture)."""
    return torch.load(osp.join(FIXTURES, f'{case}_expected.pt'),
                      map_location='cpu', weights_only=False)


@pytest.fixture(scope='module', params=CASES)
def case(request):
    init_default_scope('mmpretrain')
    name = request.param
    want = expected(name)
    pmsn, backbone, arch = msn_to_pmsn(official(name), name,
                                       num_heads=want['case']['heads'])
    return dict(name=name, want=want, pmsn=pmsn, backbone=backbone,
                arch=arch, images=want['views'][0].float())


def _part(state: Dict, prefix: str) -> Dict:
    return OrderedDict((k[len(prefix):], v) for k, v in state.items()
                       if k.startswith(prefix))


PREFIXES = {'online': ('backbone.', 'neck.'),
            'target': ('target_net.module.0.', 'target_net.module.1.')}


def test_the_architecture_is_read_from_the_weights(case):
    spec, arch = case['want']['case'], case['arch']
    assert (arch.width, arch.depth, arch.patch, arch.img_size) == (
        spec['width'], spec['depth'], spec['patch'], spec['img'])
    assert (arch.proj_hidden, arch.proj_out, arch.proj_bn,
            arch.num_prototypes) == (spec['hidden'], spec['out'],
                                     spec['use_bn'], spec['prototypes'])
    assert arch.channels == 3 and arch.mlp_hidden == 4 * spec['width']
    # a narrowed width has no official head count: unknown unless given
    assert read_msn_checkpoint(official(case['name'])).arch.num_heads is None


def _outputs(arch: MSNArch, state: Dict, which: str, images: torch.Tensor,
             temperature: float) -> Tuple[torch.Tensor, ...]:
    """CLS, projector output and prototype logits of one encoder of a
    converted PMSN state dict, through pmsn_mm's modules (eval mode)."""
    vit_prefix, neck_prefix = PREFIXES[which]
    vit = MODELS.build(arch.backbone_cfg())
    vit.load_state_dict(_part(state, vit_prefix), strict=True)
    neck = MODELS.build(arch.neck_cfg())
    neck.load_state_dict(_part(state, neck_prefix), strict=True)
    vit.eval()
    neck.eval()
    with torch.no_grad():
        cls = vit(images)[-1]
        z = neck((cls, ))[0]
        normed = torch.nn.functional.normalize
        logits = normed(z) @ normed(state['head.prototypes']).T / temperature
    return cls, z, logits


@pytest.mark.parametrize('which', ['online', 'target'])
def test_cls_projector_and_logits_equal_the_official(case, which):
    """Both encoders; a released file's online encoder is its target
    encoder, so both give the official target encoder's outputs."""
    official_encoder = 'target' if case['name'] == RELEASED else which
    want = case['want'][official_encoder]
    cls, z, logits = _outputs(case['arch'], case['pmsn']['state_dict'],
                              which, case['images'],
                              case['want']['temperature'])
    torch.testing.assert_close(cls, want['cls'], atol=ATOL, rtol=0)
    torch.testing.assert_close(z, want['projector'], atol=ATOL, rtol=0)
    torch.testing.assert_close(logits, want['logits'], atol=1e-5, rtol=0)
    # the probabilities over the prototypes (softmax of the logits)
    torch.testing.assert_close(logits.softmax(dim=1),
                               want['logits'].softmax(dim=1), atol=1e-6,
                               rtol=0)


def _probe_model(path: str, arch: MSNArch, **backbone) -> torch.nn.Module:
    """The frozen-feature model of a shipped config, narrowed to ``arch``."""
    cfg = Config.fromfile(path)
    model = cfg.model
    model.head = None
    model.backbone.update(
        arch=arch.backbone_cfg()['arch'], img_size=arch.img_size,
        patch_size=arch.patch, init_cfg=None, **backbone)
    if 'frozen_stages' in model.backbone:  # every block, as shipped
        model.backbone.frozen_stages = arch.depth
    if model.get('neck'):
        model.neck.update(in_channels=arch.width, init_cfg=None)
        layers = len(model.backbone.out_indices)
        model.neck.num_layers = layers
    built = MODELS.build(model)
    built.eval()
    return built


@pytest.mark.parametrize('definition', ['lastcls', 'msn-lastcls',
                                        'concat4cls', 'msn-concat4cls'])
def test_probe_configs_take_the_converted_backbone(case, definition,
                                                   tmp_path):
    """The converted backbone file (the target encoder) in the shipped
    probe models: VISSL's lastCLS / concat-n (through the final norm) equal
    the official CLS / ``forward_return_n_last_blocks``; official MSN's own
    evaluation features, ``forward_blocks(x, 1)`` / ``forward_blocks(x,
    n)`` (no final norm), are the ``*-msn-*`` base models."""
    arch, want = case['arch'], case['want']['target']
    n = min(4, arch.depth)
    file = str(tmp_path / 'backbone.pth')
    torch.save(case['backbone'], file)
    models = osp.join(CONFIGS, '_base_', 'models')
    if definition == 'lastcls':
        path = osp.join(BENCH, 'vit-small-p16-lastcls_knn-k20_image-folder.py')
        model, key = _probe_model(path, arch), 'cls'
    elif definition == 'msn-lastcls':
        path = osp.join(models, 'vit-small-p16-msn-lastcls_features.py')
        model, key = _probe_model(path, arch), 'blocks1'
    elif definition == 'concat4cls':
        path = osp.join(
            BENCH, 'vit-small-p16-concat4cls_8xb32-linear-steplr-28e_'
            'cifar100.py')
        model = _probe_model(path, arch, out_indices=list(range(-n, 0)))
        key = 'blocks_n_normed'
    else:
        path = osp.join(models, 'vit-small-p16-msn-concat4cls_features.py')
        model = _probe_model(path, arch, out_indices=list(range(-n, 0)))
        key = 'blocks_n'
    load_checkpoint(model, file, map_location='cpu', strict=False,
                    logger='silent')
    if definition == 'concat4cls':  # the neck's norm = the final norm
        norm = _part(case['backbone']['state_dict'], 'backbone.ln1.')
        model.neck.weight.data.copy_(norm['weight'])
        model.neck.bias.data.copy_(norm['bias'])
    with torch.no_grad():
        feats = model.extract_feat(case['images'])[-1]
    torch.testing.assert_close(feats, want[key], atol=ATOL, rtol=0)


@pytest.mark.parametrize('name', TRAINING_CASES)
def test_the_round_trip_is_the_identity_on_every_tensor(name):
    source = official(name)
    pmsn, _, _ = msn_to_pmsn(source, name, keep_opt=True)
    back = pmsn_to_msn(pmsn, name)
    assert list(back) == list(source)  # the official order of the fields
    for field in ('encoder', 'target_encoder'):
        assert list(back[field]) == list(source[field])  # names and order
        for key, value in source[field].items():
            assert back[field][key].dtype == value.dtype
            assert torch.equal(back[field][key], value), (field, key)
    assert torch.equal(back['prototypes'], source['prototypes'])
    assert back['opt'] == source['opt']
    for field in ('epoch', 'loss', 'batch_size', 'world_size', 'lr',
                  'temperature'):
        assert back[field] == source[field]
    # also through files, as the tools write them
    assert read_msn_checkpoint(back).arch == read_msn_checkpoint(
        source).arch


@pytest.mark.parametrize('name', TRAINING_CASES)
def test_without_the_optimizer_state_a_fresh_official_one_is_written(name):
    source = official(name)
    pmsn, _, _ = msn_to_pmsn(source, name)
    back = pmsn_to_msn(pmsn, name)
    opt = back['opt']
    assert [len(g['params']) for g in opt['param_groups']] == [
        len(g['params']) for g in source['opt']['param_groups']]
    assert opt['param_groups'][2]['WD_exclude'] is True
    # a fresh one, as official_optimizer_state writes it
    assert opt == official_optimizer_state(
        {k[len('module.'):] if k.startswith('module.') else k: v
         for k, v in source['encoder'].items()
         if k.split('.')[-1] != 'scaling_bias'})


def test_the_official_load_checkpoint_reads_the_export(case):
    """What official ``load_checkpoint`` / ``load_pretrained`` do with the
    exported dict, restated: strip ``module.``, load ``encoder`` and
    ``target_encoder`` strictly into the DeiT encoder + ``fc`` (after
    dropping the unused ``scaling_bias``), ``prototypes`` as a tensor."""
    source = official(case['name'])
    pmsn, _, _ = msn_to_pmsn(source, case['name'])
    back = pmsn_to_msn(pmsn, case['name'])
    assert [k for k in back if k.endswith('encoder')] == [
        k for k in source if k.endswith('encoder')]  # the file's layout
    for field in [k for k in source if k.endswith('encoder')]:
        loaded = {k.replace('module.', ''): v
                  for k, v in back[field].items()}
        loaded.pop('scaling_bias', None)
        want = {k.replace('module.', ''): v
                for k, v in source[field].items()
                if not k.endswith('scaling_bias')}
        assert loaded.keys() == want.keys()
    assert back['prototypes'].shape == source['prototypes'].shape


def test_a_pmsn_checkpoint_of_our_training_exports(case):
    """A checkpoint as pmsn_mm's training saves it (no ``msn_official``):
    the training config's batch size, lr and temperature, the epoch."""
    state = OrderedDict(case['pmsn']['state_dict'])
    state['head.prototypes'] = torch.nn.Parameter(state['head.prototypes'])
    cfg = ("model = dict(head=dict(temperature=0.1))\n"
           "train_dataloader = dict(batch_size=128)\n"
           "optim_wrapper = dict(optimizer=dict(type='AdamW', lr=0.001))\n")
    back = pmsn_to_msn(dict(state_dict=state,
                            meta=dict(epoch=300, cfg=cfg)), 'ours.pth')
    assert (back['epoch'], back['batch_size'], back['lr'],
            back['temperature']) == (300, 128, 0.001, 0.1)
    assert all(k.startswith('module.') for k in back['encoder'])
    assert not isinstance(back['prototypes'], torch.nn.Parameter)
    assert read_msn_checkpoint(back).arch.depth == case['arch'].depth


# -- the released layout (target_encoder + prototypes) -------------------


def _released(name: str) -> Dict:
    """The released layout of a training-layout case: its target encoder
    and prototypes alone (what the README's downloads hold)."""
    source = official(name)
    return OrderedDict((k, source[k]) for k in ('target_encoder',
                                                'prototypes'))


def test_a_released_file_gives_both_encoders_the_released_encoder():
    source = official(RELEASED)
    assert list(source) == ['target_encoder', 'prototypes']
    msn = read_msn_checkpoint(source, RELEASED)
    assert msn.layout == 'released' and msn.arch.proj_bn
    pmsn, backbone, _ = msn_to_pmsn(source, RELEASED)
    state = pmsn['state_dict']
    for which in ('online', 'target'):
        vit_prefix, neck_prefix = PREFIXES[which]
        # the official weights, renamed (checked against the official
        # outputs in test_cls_projector_and_logits_equal_the_official)
        assert torch.equal(state[vit_prefix + 'cls_token'],
                           source['target_encoder']['module.cls_token'])
        assert torch.equal(state[neck_prefix + 'mlp.fc3.weight'],
                           source['target_encoder']['module.fc.fc3.weight'])
    online = {k: v for k, v in state.items()
              if k.startswith(('backbone.', 'neck.'))}
    target = _part(state, 'target_net.module.')
    assert len(online) == len(target) == len(source['target_encoder'])
    for key, value in online.items():
        twin = ('0.' if key.startswith('backbone.') else '1.') + \
            key.split('.', 1)[1]
        assert torch.equal(value, target[twin]), key
    assert torch.equal(state['head.prototypes'], source['prototypes'])
    # no optimizer state, no epoch
    assert pmsn['msn_official']['opt'] is None
    assert pmsn['msn_official']['fields'] == {}
    assert pmsn['meta']['msn']['epoch'] is None
    assert pmsn['meta']['msn']['layout'] == 'released'
    assert backbone['meta']['encoder'] == 'target'
    assert torch.equal(backbone['state_dict']['backbone.cls_token'],
                       source['target_encoder']['module.cls_token'])


@pytest.mark.parametrize('module_prefix', [None, False])
def test_the_released_round_trip_gives_the_released_layout(module_prefix):
    source = official(RELEASED)
    pmsn, _, _ = msn_to_pmsn(source, RELEASED, keep_opt=True)
    back = pmsn_to_msn(pmsn, RELEASED, module_prefix=module_prefix)
    assert list(back) == list(source)  # target_encoder + prototypes only
    strip = 'module.' if module_prefix is False else ''
    assert list(back['target_encoder']) == [
        k[len(strip):] for k in source['target_encoder']]
    for key, value in source['target_encoder'].items():
        got = back['target_encoder'][key[len(strip):]]
        assert got.dtype == value.dtype and torch.equal(got, value), key
    assert torch.equal(back['prototypes'], source['prototypes'])
    assert read_msn_checkpoint(back).layout == 'released'


def test_a_released_file_without_prefix_and_bn_converts():
    """Bare keys and a projector without BatchNorm (the ViT-B/4 case's
    target encoder + prototypes): both encoders give the official target
    encoder's outputs."""
    name = 'vit-narrow-p4'
    want = expected(name)
    source = _released(name)
    pmsn, _, arch = msn_to_pmsn(source, 'released-p4',
                                num_heads=want['case']['heads'])
    assert not arch.proj_bn and pmsn['msn_official']['layout'] == 'released'
    assert pmsn['msn_official']['module_prefix'] is False
    images = want['views'][0].float()
    for which in ('online', 'target'):
        cls, z, logits = _outputs(arch, pmsn['state_dict'], which, images,
                                  want['temperature'])
        torch.testing.assert_close(cls, want['target']['cls'], atol=ATOL,
                                   rtol=0)
        torch.testing.assert_close(z, want['target']['projector'],
                                   atol=ATOL, rtol=0)
        torch.testing.assert_close(logits, want['target']['logits'],
                                   atol=1e-5, rtol=0)
    back = pmsn_to_msn(pmsn, 'p.pth')
    assert list(back) == list(source)
    assert list(back['target_encoder']) == list(source['target_encoder'])
    assert all(torch.equal(back['target_encoder'][k], v)
               for k, v in source['target_encoder'].items())


def test_online_is_refused_for_a_released_file():
    with pytest.raises(ValueError, match='has no online encoder') as info:
        msn_to_pmsn(official(RELEASED), RELEASED, online=True)
    assert len(str(info.value).splitlines()) == 1


def test_a_released_conversion_trained_since_exports_both_encoders():
    """Once the online encoder differs from the target (trained), the
    export is the training layout: both encoders, a fresh optimizer."""
    source = official(RELEASED)
    pmsn, _, _ = msn_to_pmsn(source, RELEASED)
    state = OrderedDict(pmsn['state_dict'])
    state['backbone.cls_token'] = state['backbone.cls_token'] + 1
    back = pmsn_to_msn(dict(pmsn, state_dict=state), RELEASED)
    assert list(back)[:4] == ['encoder', 'opt', 'prototypes',
                              'target_encoder']
    assert list(back['target_encoder']) == list(source['target_encoder'])
    assert all(torch.equal(back['target_encoder'][k], v)
               for k, v in source['target_encoder'].items())
    assert torch.equal(back['encoder']['module.cls_token'],
                       source['target_encoder']['module.cls_token'] + 1)
    assert read_msn_checkpoint(back).layout == 'training'


def _power_law_continuation(tmp_path, arch: MSNArch, ckpt: str) -> str:
    """The shipped power-law continuation config (image folder), its model
    narrowed to the fixture's encoder, loading ``ckpt``."""
    path = osp.join(CONFIGS, 'pmsn', 'pmsn_vit-small-p16_32xb128-from-msn-'
                    '100e_image-folder-power-law.py')
    derived = tmp_path / 'from-msn-power-law_narrow.py'
    derived.write_text(
        f'_base_ = {path!r}\n'
        f'model = dict(\n'
        f'    backbone=dict(_delete_=True, **{arch.backbone_cfg()!r}),\n'
        f'    neck=dict(_delete_=True, **{arch.neck_cfg()!r}),\n'
        f'    head=dict(num_prototypes={arch.num_prototypes}, '
        f'in_channels={arch.proj_out}))\n'
        'train_dataloader = dict(batch_size=2, num_workers=0, '
        'persistent_workers=False, pin_memory=False)\n'
        f'load_from = {ckpt!r}\n')
    return str(derived)


def test_a_converted_released_file_continues_with_the_power_law_config(
        tmp_path, monkeypatch):
    """The converted released file, ``load_from`` of the shipped power-law
    continuation config (its prior, views, optimizer and schedule; the
    model narrowed to the fixture's encoder, the checkpoint's own 12
    prototypes kept as the config keeps the 1024), trains 3 iterations
    with tools/train.py --max-iters 3, starting from the released
    weights."""
    init_default_scope('mmpretrain')
    pmsn, _, arch = msn_to_pmsn(official(RELEASED), RELEASED, num_heads=2)
    ckpt = str(tmp_path / 'msn_released_pmsn.pth')
    torch.save(pmsn, ckpt)
    images = tmp_path / 'images'
    images.mkdir()
    gen = torch.Generator().manual_seed(0)
    for i in range(4):
        pixels = torch.randint(0, 256, (48, 48, 3), generator=gen,
                               dtype=torch.uint8).numpy()
        Image.fromarray(pixels).save(images / f'{i}.jpg')
    monkeypatch.setenv('IMAGE_FOLDER', str(images))
    cfg = _power_law_continuation(tmp_path, arch, ckpt)
    runner = load_tool('tools/train.py').main(
        [cfg, '--work-dir', str(tmp_path / 'work'), '--max-iters', '3'])
    assert runner.iter == 3
    assert osp.isfile(tmp_path / 'work' / 'iter_3.pth')
    model = runner.model
    assert type(model.head.prior).__name__ == 'PowerLawPrior'
    # it started from the released weights: 3 AdamW steps move a weight
    # by at most ~3 lr (Adam's normalised step) plus the decay
    lr = max(g['lr'] for g in runner.optim_wrapper.optimizer.param_groups)
    params = dict(model.named_parameters())
    start = pmsn['state_dict']
    moved = {k: (params[k].detach() - start[k]).abs().max().item()
             for k in params if k in start}
    assert len(moved) == len(params)  # every parameter was converted
    bound = 3 * 2 * lr + 3 * lr * 0.4 * max(
        start[k].abs().max().item() for k in moved)
    assert max(moved.values()) <= bound, (max(moved.values()), bound)
    assert max(moved.values()) > 0  # and it trained


# -- refusals -----------------------------------------------------------


def _dino(state):
    return dict(student=state, teacher=state, epoch=100)


def _mae(state):
    return dict(model={**state, 'mask_token': torch.zeros(1, 1, 8),
                       'decoder_embed.weight': torch.zeros(8, 8)})


def _bare(state):
    return dict(state)


def _truncated(state):
    ckpt = official('vit-narrow-p4')
    ckpt['encoder'] = OrderedDict(
        (k, v) for k, v in ckpt['encoder'].items()
        if not k.startswith('blocks.1.mlp'))
    return ckpt


def _foreign_keys(state):
    ckpt = official('vit-narrow-p4')
    ckpt['encoder']['pred.weight'] = torch.zeros(2, 2)
    return ckpt


@pytest.mark.parametrize('make, words', [
    (_dino, ['lacks', "'student'", 'DINO']),
    (_mae, ['lacks', "'model'", 'MAE', 'decoder_']),
    (_bare, ['lacks', 'bare ViT state dict', 'blocks.0']),
    (_truncated, ['lacks', 'blocks.1.mlp.fc1.weight', 'truncated']),
    (_foreign_keys, ["'pred.weight'", 'neither']),
], ids=['dino', 'mae', 'bare', 'truncated-state-dict', 'foreign-keys'])
def test_other_files_are_refused_by_their_keys(make, words):
    state = OrderedDict((k[len('module.'):], v) for k, v in official(
        'vit-narrow-p16')['encoder'].items() if 'fc.' not in k)
    with pytest.raises(ValueError) as info:
        msn_to_pmsn(make(state), 'the file')
    for word in words:
        assert word in str(info.value), (word, str(info.value))


@pytest.mark.parametrize('make, missing', [
    (lambda: dict(prototypes=official(RELEASED)['prototypes']),
     "['target_encoder']"),
    (lambda: dict(target_encoder=official(RELEASED)['target_encoder']),
     "['prototypes']"),
    (lambda: dict(encoder=official(RELEASED)['target_encoder'],
                  prototypes=official(RELEASED)['prototypes']),
     "['target_encoder']"),
    (lambda: dict(target_encoder=official(RELEASED)['target_encoder'],
                  classifier={}, opt={}, epoch=100),
     "['prototypes']"),
], ids=['prototypes-only', 'no-prototypes', 'encoder-no-target',
        'linear-eval'])
def test_a_file_of_neither_layout_names_both(make, missing):
    with pytest.raises(ValueError) as info:
        msn_to_pmsn(make(), 'the file')
    message = str(info.value)
    assert len(message.splitlines()) == 1
    assert f'it lacks {missing}' in message
    assert "released file (the README downloads, e.g. vits16_800ep.pth." \
        "tar) holds ['target_encoder', 'prototypes']" in message
    assert "training checkpoint (src/msn_train.py save_checkpoint) holds " \
        "['encoder', 'target_encoder', 'prototypes']" in message


def test_a_truncated_download_is_refused(tmp_path):
    path = tmp_path / 'vits16_800ep.pth.tar'
    with open(osp.join(FIXTURES, 'vit-narrow-p4.pth.tar'), 'rb') as f:
        path.write_bytes(f.read()[:4000])
    with pytest.raises(ValueError, match='truncated download'):
        load_msn_checkpoint(str(path))


def test_a_file_with_python_objects_is_not_unpickled(tmp_path):
    import argparse
    path = str(tmp_path / 'dino.pth')
    torch.save(dict(student={}, args=argparse.Namespace(arch='vit')), path)
    with pytest.raises(ValueError, match='argparse.Namespace object'):
        load_msn_checkpoint(path)


def test_num_heads_is_checked(case):
    with pytest.raises(ValueError, match='does not divide'):
        msn_to_pmsn(official(case['name']), num_heads=3)
    with pytest.raises(ValueError, match='int >= 1'):
        msn_to_pmsn(official(case['name']), num_heads=0)


def test_pmsn_to_msn_refuses_a_backbone_only_file(case):
    with pytest.raises(ValueError, match='no head.prototypes'):
        pmsn_to_msn(case['backbone'], 'backbone.pth')


# -- the first training step ----------------------------------------------


class FixtureViews(torch.nn.Module):
    """A data pre-processor that hands the model the fixture's views."""

    def __init__(self, views) -> None:
        super().__init__()
        self.views = [v.float() for v in views]

    def forward(self, data, training=False):
        return dict(inputs=self.views, data_samples=None)


def _official_kept_tokens(monkeypatch, kept: torch.Tensor) -> None:
    """Patch-drop keeps the tokens the official step kept (one set for the
    whole batch there, drawn by ``torch.randperm``)."""
    def keep(batch_size, num_tokens, num_keep, device, generator=None):
        assert num_keep == len(kept)
        return kept.to(device).expand(batch_size, -1)

    monkeypatch.setattr(patch_drop, 'random_keep_indices', keep)


def test_the_first_step_loss_is_the_official_loss(case, tmp_path,
                                                  monkeypatch):
    """A few iterations of a Runner from the converted checkpoint
    (``load_from``) on the official step's batch and views: the first
    step's cross-entropy and me-max terms (uniform prior: KL(p || U) is
    official me-max) and the statistics are the official ones."""
    want = case['want']
    arch = case['arch']
    ckpt = str(tmp_path / 'msn_pmsn.pth')
    torch.save(case['pmsn'], ckpt)
    base = Config.fromfile(
        osp.join(CONFIGS, '_base_', 'models', 'pmsn_vit-small-p16.py'))
    model = base.model
    model.backbone = arch.backbone_cfg()
    model.neck = arch.neck_cfg()
    model.head.update(num_prototypes=arch.num_prototypes,
                      in_channels=arch.proj_out)
    assert model.head.temperature == want['temperature']
    assert model.head.loss.sharpen_temperature == want['sharpen_temperature']
    assert model.mask_ratio == want['mask_ratio']
    cfg = Config(dict(
        default_scope='mmpretrain',
        custom_imports=dict(imports=['pmsn_mm'], allow_failed_imports=False),
        model=model,
        work_dir=str(tmp_path / 'work'),
        load_from=ckpt,
        train_dataloader=dict(
            batch_size=3, num_workers=0,
            sampler=dict(type='DefaultSampler', shuffle=False),
            dataset=dict(type='PowerLawOverlayDataset', image_size=20,
                         digit_size=10, tau=0.5, background_source='shapes',
                         digit_source='sklearn', channels=1, seed=0,
                         split='train', num_samples=9,
                         pipeline=[dict(type='PackInputs')])),
        train_cfg=dict(type='IterBasedTrainLoop', max_iters=3),
        optim_wrapper=dict(optimizer=dict(type='AdamW', lr=1e-3)),
        default_hooks=dict(
            logger=dict(type='LoggerHook', interval=1),
            checkpoint=dict(type='CheckpointHook', interval=100)),
        custom_hooks=[dict(type='TargetEMAHook')],
        log_level='WARNING'))
    runner = Runner.from_cfg(cfg)
    runner.model.data_preprocessor = FixtureViews(want['views'])
    _official_kept_tokens(monkeypatch, want['step']['kept_patches'])
    steps = []

    class Record(Hook):

        def after_train_iter(self, runner, batch_idx, data_batch=None,
                             outputs=None):
            steps.append({k: float(v.detach()) for k, v in outputs.items()})

    runner.register_hook(Record())
    runner.train()
    assert len(steps) == 3
    first, step = steps[0], want['step']
    # loaded strictly: every weight is the converted one before step 1
    assert first['loss_ce'] == pytest.approx(float(step['ploss']),
                                             abs=1e-5)
    assert first['loss_prior'] == pytest.approx(float(step['me_max']),
                                                abs=1e-5)
    assert first['loss'] == pytest.approx(
        float(step['ploss'] + step['me_max']), abs=2e-5)
    assert first['num_prototypes_used'] == float(
        step['num_prototypes_used'])
    # (float32 round-off through the 1/0.25 sharpening and Sinkhorn:
    # measured up to 1.04e-6 on the released case)
    assert first['max_target_prob'] == pytest.approx(
        float(step['max_target_prob']), abs=5e-6)
    # the later steps train (the weights move)
    assert steps[1]['loss'] != first['loss']
