import torch

from pmsn_mm.models.utils import (all_gather_with_grad,
                                  all_reduce_mean_with_grad)


def test_single_process_helpers_are_identity():
    # Multi-process behaviour is tested in
    # tests/test_models/test_losses/test_pmsn_loss_distributed.py and
    # test_vicreg_loss.py.
    x = torch.randn(5, requires_grad=True)
    y = all_reduce_mean_with_grad(x)
    (2 * y).sum().backward()
    torch.testing.assert_close(y, x)
    torch.testing.assert_close(x.grad, torch.full((5, ), 2.0))
    assert all_gather_with_grad(x) is x
