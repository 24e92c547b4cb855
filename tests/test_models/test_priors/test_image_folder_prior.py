"""ImageFolderPrior: a folder's class prior (one prototype per class folder)
or the given prior for a flat folder; heads with num_prototypes=None."""
import os
import os.path as osp

import pytest
import torch
from mmpretrain.registry import MODELS

from pmsn_mm.models.priors import ClassPrior, PowerLawPrior, UniformPrior
from tests._image_folders import write_class_tree, write_flat_folder

COUNTS = {'ant': 5, 'bee': 2, 'cat': 3}


def _tree(root, counts=COUNTS):
    return write_class_tree(root, counts)


def _flat(root, n=4):
    return write_flat_folder(root, n)


def _cfg(root, unlabelled=None, **head):
    prior = dict(type='ImageFolderPrior',
                 dataset=dict(type='ImageFolderDataset', data_root=root,
                              with_label='auto'),
                 unlabelled=unlabelled or dict(type='UniformPrior',
                                               num_prototypes=12))
    return dict(dict(type='PMSNHead', num_prototypes=None, in_channels=8,
                     prior=prior), **head)


def _walk_counts(root):
    """Images per class folder, counted with os.walk (sorted names)."""
    return [sum(len(files) for _, _, files in os.walk(osp.join(root, name)))
            for name in sorted(os.listdir(root))]


def test_class_folders_give_the_class_prior_one_prototype_each(tmp_path):
    root = _tree(tmp_path / 'tree')
    head = MODELS.build(_cfg(root))
    counts = _walk_counts(root)
    assert counts == [5, 2, 3]
    assert isinstance(head.prior, ClassPrior)
    assert head.num_prototypes == 3
    assert tuple(head.prototypes.shape) == (3, 8)
    torch.testing.assert_close(
        head.prior.probs, torch.tensor(counts, dtype=torch.float64) / 10)


def test_flat_folder_gives_the_unlabelled_prior(tmp_path):
    root = _flat(tmp_path / 'flat')
    head = MODELS.build(_cfg(root))
    assert type(head.prior) is UniformPrior
    assert head.num_prototypes == 12
    assert tuple(head.prototypes.shape) == (12, 8)
    power = MODELS.build(_cfg(root, dict(type='PowerLawPrior', tau=0.25),
                              num_prototypes=6))
    assert type(power.prior) is PowerLawPrior and power.num_prototypes == 6
    k = torch.arange(1, 7, dtype=torch.float64)
    torch.testing.assert_close(power.prior.probs,
                               k**-0.25 / (k**-0.25).sum())


def test_pswav_head_takes_k_from_the_prior(tmp_path):
    root = _tree(tmp_path / 'tree')
    head = MODELS.build(dict(_cfg(root), type='PSwAVHead', in_channels=8))
    assert head.num_prototypes == 3 and isinstance(head.prior, ClassPrior)


def test_class_prior_without_k_counts_the_classes():
    prior = ClassPrior(None, counts=[4, 1, 5])
    assert prior.num_prototypes == prior.num_classes == 3
    torch.testing.assert_close(
        prior.probs, torch.tensor([0.4, 0.1, 0.5], dtype=torch.float64))


@pytest.mark.parametrize('case, match', [
    ('no_k', 'has num_prototypes=None and .* has no class sub-folders; give '
     'the unlabelled prior its num_prototypes'),
    ('k_differs', "unlabelled num_prototypes=12 differs from the head's "
     'num_prototypes=5'),
    ('not_a_config', 'unlabelled must be a prior config'),
    ('head_none_fixed_prior', "num_prototypes=None takes K from a prior that "
     "counts it in the data .* but the prior is 'UniformPrior'"),
])
def test_bad_settings_raise(case, match, tmp_path):
    root = _flat(tmp_path / 'flat')
    cfg = {
        'no_k': _cfg(root, dict(type='UniformPrior')),
        'k_differs': _cfg(root, num_prototypes=5),
        'not_a_config': _cfg(root, 'UniformPrior'),
        'head_none_fixed_prior': dict(type='PMSNHead', num_prototypes=None,
                                      in_channels=8,
                                      prior=dict(type='UniformPrior')),
    }[case]
    with pytest.raises(ValueError, match=match):
        MODELS.build(cfg)


def test_class_folders_with_another_head_k_are_refused(tmp_path):
    root = _tree(tmp_path / 'tree')
    with pytest.raises(ValueError, match='length 3, but must have length '
                       'num_prototypes=4'):
        MODELS.build(_cfg(root, num_prototypes=4))
