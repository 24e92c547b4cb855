"""tools/misc/generate_probe_configs.py: the committed probe configs are the
matrix's, and the tool is idempotent and strict in ``--check`` mode."""
import importlib.util
import os.path as osp

from tests._configs import REPO


def _tool():
    spec = importlib.util.spec_from_file_location(
        'generate_probe_configs',
        osp.join(REPO, 'tools', 'misc', 'generate_probe_configs.py'))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_committed_configs_are_the_matrix(capsys):
    assert _tool().main(['--check']) == 0, capsys.readouterr().out


def test_matrix_covers_every_cell():
    tool = _tool()
    configs = tool.matrix()
    cells = sum(len(e.representations) for e in tool.ENCODERS.values()) * \
        len(tool.DATASETS)
    assert len(configs) == cells == 90
    assert all(len(line) <= 79 for text in configs.values()
               for line in text.splitlines())


def test_write_is_idempotent_and_check_finds_every_difference(
        tmp_path, capsys):
    tool = _tool()
    out = ['--out-dir', str(tmp_path)]
    assert tool.main(['--check'] + out) == 1
    assert 'missing: ' in capsys.readouterr().out
    assert tool.main(out) == 0
    assert '90 probe configs, 90 written' in capsys.readouterr().out
    assert tool.main(out) == 0
    assert '90 probe configs, 0 written' in capsys.readouterr().out
    assert tool.main(['--check'] + out) == 0
    name = sorted(tool.matrix())[0]
    with open(tmp_path / name, 'a') as f:
        f.write('# edited\n')
    (tmp_path / 'vit-tiny-p16-lastcls_8xb32-linear-steplr-28e_in1k.py'
     ).write_text('')
    assert tool.main(['--check'] + out) == 1
    printed = capsys.readouterr().out
    assert f'differs: {name}' in printed
    assert 'not in the matrix: vit-tiny-p16-lastcls' in printed
