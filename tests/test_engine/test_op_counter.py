"""OpCounter counts aten ops and tells host syncs from asynchronous ops."""
import torch

from pmsn_mm.engine.op_counter import OpCounter


def _count(fn):
    with OpCounter() as counter:
        fn()
    return counter


def test_async_ops_are_not_syncs():
    x = torch.randn(6, 4, requires_grad=True)
    mask = x.detach() > 0

    def step():
        y = torch.where(mask, x * 2, x.new_zeros(())).softmax(1).sum()
        y.backward()
        torch.repeat_interleave(x.detach(), 2, dim=0)  # int repeats
        torch.repeat_interleave(x.detach(), torch.tensor([1, 2, 1, 2, 1, 2]),
                                dim=0, output_size=9)

    counter = _count(step)
    assert counter.syncs == 0, counter.summary()
    assert counter.ops > 5
    assert counter.op_names['where'] >= 1  # forward (and backward)


def test_each_kind_of_host_sync_is_counted_once():
    x = torch.randn(6, 4)
    cases = {
        '_local_scalar_dense': lambda: float(x.sum()),
        'nonzero': lambda: x.nonzero(),
        'masked_select': lambda: x.masked_select(x > 0),
        '_unique2': lambda: torch.unique(x.round()),
        'equal': lambda: torch.equal(x, x),
        'index': lambda: x[x > 0],
        'index_put_': lambda: x.clone().index_put_((x > 0, ), x.new_zeros(())),
        'repeat_interleave': lambda: torch.repeat_interleave(
            torch.tensor([1, 2])),
    }
    for name, fn in cases.items():
        counter = _count(fn)
        assert counter.sync_ops[name] >= 1, (name, counter.summary())
    # branching on a device value is one scalar read
    counter = _count(lambda: bool(x.sum() > 0))
    assert counter.syncs == 1 and counter.sync_ops['_local_scalar_dense'] == 1
