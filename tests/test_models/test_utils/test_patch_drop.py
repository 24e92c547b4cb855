"""Patch-drop pure functions (MSNViT's token choice)."""
import torch

from pmsn_mm.models.utils import (drop_patch_tokens, num_kept_tokens,
                                  random_keep_indices)


def test_keep_indices_independent_per_sample():
    gen = torch.Generator().manual_seed(0)
    keep = random_keep_indices(64, 16, 8, torch.device('cpu'), gen)
    assert keep.shape == (64, 8)
    assert torch.all(keep[:, 1:] > keep[:, :-1])  # sorted, distinct
    assert len({tuple(row.tolist()) for row in keep}) > 1


def test_drop_patch_tokens_keeps_extra_tokens():
    tokens = torch.arange(2 * 5 * 1, dtype=torch.float32).reshape(2, 5, 1)
    out = drop_patch_tokens(tokens, 2, num_extra_tokens=1)
    assert out.shape == (2, 3, 1)
    assert torch.equal(out[:, 0], tokens[:, 0])
    # the kept patches are distinct patches of the same sample, in order
    for b in range(2):
        kept = out[b, 1:, 0]
        assert set(kept.tolist()) <= set(tokens[b, 1:, 0].tolist())
        assert torch.all(kept[1:] > kept[:-1])


def test_num_kept_tokens_floors():
    assert num_kept_tokens(16, 0.15) == 13
    assert num_kept_tokens(196, 0.15) == 166
    assert num_kept_tokens(16, 0.0) == 16
