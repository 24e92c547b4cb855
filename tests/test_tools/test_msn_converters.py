"""tools/model_converters/msn_to_pmsn.py and pmsn_to_msn.py on the official
fixture (tests/fixtures/msn_official/; training layout and released
layout): one-line reports, the files they write, the round trip through
files, refusals without a traceback."""
import os.path as osp
import subprocess
import sys

import pytest
import torch

from tests._configs import REPO
from tests._tools import import_beside_tools, load_tool

load_msn_checkpoint = import_beside_tools(
    'tools/model_converters/msn_checkpoints.py').load_msn_checkpoint

FIXTURES = osp.join(REPO, 'tests', 'fixtures', 'msn_official')
TO_PMSN = 'tools/model_converters/msn_to_pmsn.py'
TO_MSN = 'tools/model_converters/pmsn_to_msn.py'


@pytest.mark.parametrize('case', ['vit-narrow-p16', 'vit-narrow-p4'])
def test_official_to_pmsn_to_official_through_files(case, tmp_path, capsys):
    src = osp.join(FIXTURES, f'{case}.pth.tar')
    dst = str(tmp_path / 'out' / 'msn_pmsn.pth')
    report = load_tool(TO_PMSN).main([src, dst, '--num-heads', '2'])
    printed = capsys.readouterr().out.strip().splitlines()
    assert printed == [report]  # one line
    assert 'ViT of width 8' in report and '12 prototypes' in report
    assert 'epoch 800' in report and 'target encoder' in report
    backbone = str(tmp_path / 'out' / 'msn_pmsn_backbone.pth')
    assert f'-> {dst}' in report and backbone in report
    pmsn = torch.load(dst, weights_only=True)
    assert 'head.prototypes' in pmsn['state_dict']
    assert "'MSNViT'" in pmsn['meta']['cfg']  # heads known: a config
    saved = torch.load(backbone, weights_only=True)['state_dict']
    assert all(k.startswith('backbone.') for k in saved)
    # the backbone file is the target encoder
    assert torch.equal(saved['backbone.cls_token'],
                       pmsn['state_dict']['target_net.module.0.cls_token'])

    back = str(tmp_path / 'back.pth.tar')
    line = load_tool(TO_MSN).main([dst, back])
    assert capsys.readouterr().out.strip() == line
    assert 'official MSN format' in line
    source, again = load_msn_checkpoint(src), load_msn_checkpoint(back)
    assert list(again) == list(source)
    for field in ('encoder', 'target_encoder'):
        assert list(again[field]) == list(source[field])
        assert all(torch.equal(again[field][k], v)
                   for k, v in source[field].items())
    assert torch.equal(again['prototypes'], source['prototypes'])
    assert again['opt'] == source['opt']


def test_online_backbone_and_module_prefix_options(tmp_path, capsys):
    src = osp.join(FIXTURES, 'vit-narrow-p4.pth.tar')  # bare keys
    dst, bb = str(tmp_path / 'p.pth'), str(tmp_path / 'online.pth')
    report = load_tool(TO_PMSN).main(
        [src, dst, '--backbone-out', bb, '--online', '--no-opt'])
    assert 'online encoder' in report and 'heads unknown' in report
    pmsn = torch.load(dst, weights_only=True)
    assert pmsn['msn_official']['opt'] is None
    assert torch.equal(
        torch.load(bb, weights_only=True)['state_dict']['backbone.cls_token'],
        pmsn['state_dict']['backbone.cls_token'])
    back = str(tmp_path / 'b.pth.tar')
    load_tool(TO_MSN).main([dst, back, '--module-prefix'])
    assert all(k.startswith('module.')
               for k in load_msn_checkpoint(back)['encoder'])
    capsys.readouterr()


def test_refusals_are_one_message_without_a_traceback(tmp_path):
    backbone = str(tmp_path / 'backbone.pth')
    torch.save(dict(state_dict={'backbone.cls_token': torch.zeros(1, 1, 8)},
                    meta={}), backbone)
    run = subprocess.run(
        [sys.executable, osp.join(REPO, TO_PMSN), backbone,
         str(tmp_path / 'x.pth')], capture_output=True, text=True, cwd=REPO)
    assert run.returncode == 1
    assert 'Traceback' not in run.stderr
    assert run.stderr.count('\n') == 1  # the message alone, one line
    assert 'is not an official MSN checkpoint' in run.stderr
    assert "'state_dict'" in run.stderr
    # the same handling in pmsn_to_msn.py (run in-process here)
    with pytest.raises(ValueError, match='has no head.prototypes'):
        load_tool(TO_MSN).main([backbone, str(tmp_path / 'x.pth.tar')])
    assert not osp.exists(str(tmp_path / 'x.pth.tar'))


# -- the released layout (target_encoder + prototypes only) ---------------

RELEASED = osp.join(FIXTURES, 'vit-narrow-p16-released.pth.tar')


def test_a_released_file_through_files(tmp_path, capsys):
    dst = str(tmp_path / 'msn_pmsn.pth')
    report = load_tool(TO_PMSN).main([RELEASED, dst, '--num-heads', '2'])
    assert capsys.readouterr().out.strip().splitlines() == [report]
    assert ('released layout (target_encoder + prototypes only): online '
            'and target encoders of DST = the released target encoder, no '
            'optimizer state, no epoch') in report
    assert 'epoch 800' not in report
    pmsn = torch.load(dst, weights_only=True)
    state, source = pmsn['state_dict'], load_msn_checkpoint(RELEASED)
    for key in ('backbone.cls_token', 'target_net.module.0.cls_token'):
        assert torch.equal(state[key],
                           source['target_encoder']['module.cls_token'])
    backbone = torch.load(str(tmp_path / 'msn_pmsn_backbone.pth'),
                          weights_only=True)['state_dict']
    assert torch.equal(backbone['backbone.ln1.weight'],
                       source['target_encoder']['module.norm.weight'])

    back = str(tmp_path / 'back.pth.tar')
    line = load_tool(TO_MSN).main([dst, back])
    assert capsys.readouterr().out.strip() == line
    assert 'released layout: target_encoder + prototypes only' in line
    again = load_msn_checkpoint(back)
    assert list(again) == list(source) == ['target_encoder', 'prototypes']
    assert list(again['target_encoder']) == list(source['target_encoder'])
    assert all(torch.equal(again['target_encoder'][k], v)
               for k, v in source['target_encoder'].items())
    assert torch.equal(again['prototypes'], source['prototypes'])


def test_online_is_refused_for_a_released_file(tmp_path):
    run = subprocess.run(
        [sys.executable, osp.join(REPO, TO_PMSN), RELEASED,
         str(tmp_path / 'x.pth'), '--online'], capture_output=True,
        text=True, cwd=REPO)
    assert run.returncode == 1 and 'Traceback' not in run.stderr
    assert run.stderr.count('\n') == 1  # the message alone, one line
    assert len(run.stderr.strip().splitlines()) == 1
    assert 'has no online encoder' in run.stderr
    assert not osp.exists(str(tmp_path / 'x.pth'))


@pytest.mark.parametrize('keep, missing', [
    ('prototypes', "['target_encoder']"),
    ('target_encoder', "['prototypes']"),
])
def test_half_a_released_file_is_refused_naming_the_layouts(
        tmp_path, keep, missing):
    """(In-process: the command line prints the message alone, as
    test_online_is_refused_for_a_released_file checks.)"""
    part = str(tmp_path / 'part.pth.tar')
    torch.save({keep: load_msn_checkpoint(RELEASED)[keep]}, part)
    with pytest.raises(ValueError) as info:
        load_tool(TO_PMSN).main([part, str(tmp_path / 'x.pth')])
    message = str(info.value)
    assert len(message.splitlines()) == 1
    assert f'it lacks {missing}' in message
    assert "holds ['target_encoder', 'prototypes']" in message
    assert "holds ['encoder', 'target_encoder', 'prototypes']" in message
    assert not osp.exists(str(tmp_path / 'x.pth'))
