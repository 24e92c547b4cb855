import importlib.util
import io
import json
import os.path as osp

import numpy as np
import pytest
import torch
from mmpretrain.registry import MODELS

from pmsn_mm.models.priors import FilePrior
from tests._configs import REPO, TINY_PMSN, write_config

EXPECTED = torch.tensor([0.1, 0.2, 0.3, 0.4], dtype=torch.float64)


def test_file_prior_npy(tmp_path):
    path = tmp_path / 'prior.npy'
    np.save(path, np.array([1.0, 2.0, 3.0, 4.0]))
    prior = MODELS.build(
        dict(type='FilePrior', path=str(path)),
        default_args=dict(num_prototypes=4))
    torch.testing.assert_close(prior.probs, EXPECTED)
    assert prior.path == str(path) and not prior.state_dict()


@pytest.mark.parametrize('content', [
    [1, 2, 3, 4],
    {
        'prior': [0.1, 0.2, 0.3, 0.4]
    },
    {
        'counts': [10, 20, 30, 40]
    },
])
def test_file_prior_json(tmp_path, content):
    path = tmp_path / 'prior.json'
    path.write_text(json.dumps(content))
    torch.testing.assert_close(FilePrior(4, path).probs, EXPECTED)


def test_file_prior_txt(tmp_path):
    path = tmp_path / 'prior.txt'
    path.write_text('1 2\n3\n\n  4\n')
    torch.testing.assert_close(FilePrior(4, path).probs, EXPECTED)


def test_file_prior_unknown_extension(tmp_path):
    path = tmp_path / 'prior.csv'
    path.write_text('1,2')
    with pytest.raises(
            ValueError,
            match=r"FilePrior path must end with one of "
            r"\('.npy', '.json', '.txt'\)"):
        FilePrior(2, path)


def test_file_prior_missing_file(tmp_path):
    with pytest.raises(FileNotFoundError, match='missing.npy'):
        FilePrior(4, tmp_path / 'missing.npy')


def test_file_prior_length_must_equal_num_prototypes(tmp_path):
    path = tmp_path / 'prior.txt'
    path.write_text('1 2 3')
    with pytest.raises(ValueError, match='length 3.*num_prototypes=5'):
        FilePrior(5, path)


def test_file_prior_zero_entry(tmp_path):
    path = tmp_path / 'prior.txt'
    path.write_text('1 0 3')
    with pytest.raises(ValueError, match=r'must be > 0.*\[1\].*infinite'):
        FilePrior(3, path)


def test_file_prior_non_numeric_txt(tmp_path):
    path = tmp_path / 'prior.txt'
    path.write_text('1 two 3')
    with pytest.raises(ValueError, match='must hold numbers separated by'):
        FilePrior(3, path)


def test_file_prior_json_without_key(tmp_path):
    path = tmp_path / 'prior.json'
    path.write_text(json.dumps({'weights': [1, 2]}))
    with pytest.raises(
            ValueError, match='exactly one of the keys "prior" '
            'and "counts"'):
        FilePrior(3, path)


def test_file_prior_json_not_a_list(tmp_path):
    path = tmp_path / 'prior.json'
    path.write_text(json.dumps('1 2 3'))
    with pytest.raises(ValueError, match='must hold a list of numbers'):
        FilePrior(3, path)


def _npy_bytes():
    buf = io.BytesIO()
    np.save(buf, np.arange(1.0, 11.0))
    return buf.getvalue()


@pytest.mark.parametrize('name, content, message', [
    ('trunc.npy', _npy_bytes()[:-20],
     r"FilePrior '.*trunc\.npy' is not a readable \.npy file \(expected a 1-D "
     r'numeric array written by numpy\.save, no pickled objects\): Failed to '
     r'read all data for array'),
    ('garbage.npy', b'not an array',
     r"FilePrior '.*garbage\.npy' is not a readable \.npy file \(expected "),
    ('bad.json', b'[1, 2,',
     r"FilePrior '.*bad\.json' is not valid JSON \(expected a list of "
     r'numbers, or an object with key "prior" or "counts" holding one\): '
     r'Expecting value: line 1 column 7'),
    ('binary.json', b'\xff\xfe\x00',
     r"FilePrior '.*binary\.json' is not a UTF-8 text file \(expected a list "
     r'of numbers, or an object'),
    ('binary.txt', b'\xff\xfe\x00',
     r"FilePrior '.*binary\.txt' is not a UTF-8 text file \(expected numbers "
     r'separated by whitespace\)'),
    ('strings.json', b'["a", 1]',
     r"FilePrior JSON '.*strings\.json' must hold a list of numbers: could "
     r"not convert string to float: 'a'"),
])
def test_corrupt_file_names_path_and_format(tmp_path, name, content, message):
    path = tmp_path / name
    path.write_bytes(content)
    with pytest.raises(ValueError, match=message):
        FilePrior(3, path)


def test_object_npy_is_refused_without_unpickling(tmp_path):
    path = tmp_path / 'objects.npy'
    np.save(path, np.array([{'a': 1}], dtype=object), allow_pickle=True)
    with pytest.raises(ValueError,
                       match=r'not a readable \.npy file .*Object arrays '
                       'cannot be loaded when allow_pickle=False'):
        FilePrior(3, path)


def test_corrupt_file_through_train_py(tmp_path):
    spec = importlib.util.spec_from_file_location(
        'tool_train_prior', osp.join(REPO, 'tools', 'train.py'))
    train = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(train)
    path = tmp_path / 'prior.npy'
    path.write_bytes(_npy_bytes()[:-20])
    with pytest.raises(ValueError,
                       match=rf"FilePrior '{path}' is not a readable \.npy "
                       'file'):
        train.main([
            write_config(tmp_path, TINY_PMSN), '--work-dir',
            str(tmp_path / 'work'), '--cfg-options',
            'model.head.prior.type=FilePrior',
            f'model.head.prior.path={path}',
            'experiment_name=corrupt-prior'
        ])
