import json

import numpy as np
import pytest
import torch
from mmpretrain.registry import MODELS

from pmsn_mm.models.priors import FilePrior

EXPECTED = torch.tensor([0.1, 0.2, 0.3, 0.4], dtype=torch.float64)


def test_file_prior_npy(tmp_path):
    path = tmp_path / 'prior.npy'
    np.save(path, np.array([1.0, 2.0, 3.0, 4.0]))
    prior = MODELS.build(dict(type='FilePrior', path=str(path)))
    torch.testing.assert_close(prior(4, torch.float64), EXPECTED)


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
    torch.testing.assert_close(FilePrior(path)(4, torch.float64), EXPECTED)


def test_file_prior_txt(tmp_path):
    path = tmp_path / 'prior.txt'
    path.write_text('1 2\n3\n\n  4\n')
    torch.testing.assert_close(FilePrior(path)(4, torch.float64), EXPECTED)


def test_file_prior_unknown_extension(tmp_path):
    path = tmp_path / 'prior.csv'
    path.write_text('1,2')
    with pytest.raises(
            ValueError,
            match=r"FilePrior path must end with one of "
            r"\('.npy', '.json', '.txt'\)"):
        FilePrior(path)


def test_file_prior_missing_file(tmp_path):
    with pytest.raises(FileNotFoundError, match='missing.npy'):
        FilePrior(tmp_path / 'missing.npy')


def test_file_prior_length_must_equal_num_prototypes(tmp_path):
    path = tmp_path / 'prior.txt'
    path.write_text('1 2 3')
    with pytest.raises(ValueError, match='length 3.*num_prototypes=5'):
        FilePrior(path)(5)


def test_file_prior_zero_entry(tmp_path):
    path = tmp_path / 'prior.txt'
    path.write_text('1 0 3')
    with pytest.raises(ValueError, match=r'must be > 0.*\[1\].*infinite'):
        FilePrior(path)


def test_file_prior_non_numeric_txt(tmp_path):
    path = tmp_path / 'prior.txt'
    path.write_text('1 two 3')
    with pytest.raises(ValueError, match='must hold numbers separated by'):
        FilePrior(path)


def test_file_prior_json_without_key(tmp_path):
    path = tmp_path / 'prior.json'
    path.write_text(json.dumps({'weights': [1, 2]}))
    with pytest.raises(
            ValueError, match='exactly one of the keys "prior" '
            'and "counts"'):
        FilePrior(path)


def test_file_prior_json_not_a_list(tmp_path):
    path = tmp_path / 'prior.json'
    path.write_text(json.dumps('1 2 3'))
    with pytest.raises(ValueError, match='must hold a list of numbers'):
        FilePrior(path)
