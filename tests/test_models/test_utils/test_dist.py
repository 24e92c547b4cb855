import torch

from pmsn_mm.models.utils import (all_reduce_mean_with_grad, all_reduce_sum,
                                  concat_all_gather, get_world_size)


def test_single_process_helpers_are_identity():
    # Multi-process behaviour is tested in
    # tests/test_models/test_losses/test_pmsn_loss_distributed.py.
    assert get_world_size() == 1
    x = torch.randn(5, requires_grad=True)
    y = all_reduce_mean_with_grad(x)
    (2 * y).sum().backward()
    torch.testing.assert_close(y, x)
    torch.testing.assert_close(x.grad, torch.full((5, ), 2.0))

    summed = all_reduce_sum(x)
    torch.testing.assert_close(summed, x.detach())
    assert summed.data_ptr() != x.data_ptr() and not summed.requires_grad

    gathered = concat_all_gather(x)
    torch.testing.assert_close(gathered, x.detach())
    assert not gathered.requires_grad
