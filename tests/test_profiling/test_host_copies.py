"""HostCopyCounter counts host-to-device copies on a CPU (where the host is
also the device): each kind of upload once, device-side work never."""
import numpy as np
import pytest
import torch
from mmpretrain.structures import DataSample

from tests._profiling.host_copies import HostCopyCounter


def _counter(*device) -> HostCopyCounter:
    counter = HostCopyCounter('cpu')
    counter.mark_device(*device)
    return counter


def _samples(num: int) -> list:
    """Data samples as PackInputs makes them: a label and a mask each (two
    tensor fields)."""
    samples = [DataSample().set_gt_label(i % 3) for i in range(num)]
    for sample in samples:
        sample.set_field(torch.zeros(2, 2, dtype=torch.bool), 'mask')
    return samples


@pytest.mark.parametrize('fn, blocking', [
    (lambda d: torch.tensor([1, 2], device='cpu'), 1),
    (lambda d: torch.tensor([1, 2]), 0),  # built on the host, not moved
    (lambda d: torch.tensor([1, 2]).to('cpu'), 1),
    (lambda d: torch.tensor([1, 2]).to('cpu').to('cpu'), 1),  # moved once
    (lambda d: torch.as_tensor(np.ones(3), device='cpu'), 1),
    (lambda d: torch.as_tensor([1.0], device='cpu'), 1),
    (lambda d: torch.as_tensor(d, device='cpu'), 0),  # a device tensor
    (lambda d: torch.as_tensor(torch.ones(2), device='cpu'), 1),
    (lambda d: torch.as_tensor(np.ones(3)).to('cpu'), 1),
    (lambda d: d.new_tensor([1.0, 2.0]), 1),
    (lambda d: torch.ones(2).new_tensor([1.0, 2.0]), 0),  # stays host
    (lambda d: torch.arange(3, device='cpu'), 0),
    (lambda d: torch.rand(3, device='cpu') + torch.zeros(3, device='cpu'),
     0),
    (lambda d: torch.zeros_like(torch.ones(4), device='cpu') + d, 0),
    (lambda d: d * 2 + d.exp().sum(), 0),
    (lambda d: d + torch.tensor(2.0), 0),  # a 0-dim host value: by value
    (lambda d: d + torch.ones(4), 1),  # implicit upload (or an error)
    (lambda d: d[torch.arange(2)], 1),  # a host index
    (lambda d: d[[0, 2]], 1),  # torch uploads the list index
    (lambda d: d[torch.arange(2, device='cpu')], 0),
    (lambda d: d.clone().copy_(torch.ones(4)), 1),
    (lambda d: torch.ones(4).copy_(d), 0),  # into the host
    (lambda d: d.to(torch.float64).to('cpu'), 0),
    (lambda d: torch.ones(4).cpu().double() + 1, 0),  # host work only
])
def test_each_upload_counts_once(fn, blocking):
    dev = torch.randn(4)
    counter = _counter(dev)
    with counter:
        fn(dev)
    assert counter.blocking() == blocking, counter.summary()
    assert counter.batch() == 0


def test_moved_tensor_is_a_device_tensor_and_the_source_stays_host():
    counter = _counter()
    with counter:
        host = torch.tensor([1.0, 2.0, 3.0])  # from Python data: host
        moved = host.to('cpu')
        moved * 2 + moved.sum()  # device work
        again = host.to('cpu')  # the host tensor again: a second upload
    assert again is not moved and again.data_ptr() == host.data_ptr()
    assert counter.blocking() == 2
    assert counter.kind(moved) == 'device' and counter.kind(host) == 'host'


def test_model_step_on_device_tensors_counts_nothing():
    model = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.ReLU(),
                                torch.nn.Linear(8, 2))
    optim = torch.optim.AdamW(model.parameters(), foreach=True)
    counter = _counter(model)
    with counter:
        for _ in range(2):  # the optimiser's state is made in the first
            x = torch.randn(5, 4, device='cpu')
            model(x).square().mean().backward()
            optim.step()
            optim.zero_grad()
    assert counter.blocking() == 0, counter.summary()


def test_data_samples_moved_one_by_one_count_per_tensor_field():
    samples = _samples(5)
    counter = _counter()
    counter.mark_batch(dict(inputs=torch.zeros(5, 3, 4, 4),
                            data_samples=samples))
    with counter:
        moved = [s.to('cpu', non_blocking=True) for s in samples]
    assert counter.blocking() == 5 * 2, counter.summary()
    assert counter.batch() == 0  # data samples are no batch tensor
    assert all(counter.kind(m.gt_label) == 'device' for m in moved)


def test_a_stacked_label_tensor_moved_once_counts_one():
    samples = _samples(6)
    counter = _counter()
    counter.mark_batch(dict(inputs=torch.zeros(6, 1), data_samples=samples))
    with counter:
        labels = torch.cat([s.gt_label for s in samples]).to('cpu')
    assert counter.blocking() == 1, counter.summary()
    assert counter.kind(labels) == 'device'


def test_the_batch_non_blocking_is_counted_apart():
    data = dict(inputs=[torch.zeros(2, 3), torch.ones(2, 3)],
                sizes=torch.ones(2, 2), data_samples=_samples(2))
    counter = _counter()
    counter.mark_batch(data, pinned=True)
    with counter:
        with counter.phase('views'):
            views = [x.to('cpu', non_blocking=True).float()
                     for x in data['inputs']]
            sizes = data['sizes'].long().to('cpu', non_blocking=True)
        with counter.phase('forward'):
            views[0] * sizes.sum()
            data['inputs'][0].to('cpu')  # blocking: not non_blocking
    # the cast copy of the sizes is batch data, but in pageable memory: on
    # CUDA its non_blocking copy is synchronous
    assert counter.batch('views') == 2
    assert counter.blocking('views') == 1
    assert counter.copies['views']['pageable'] == 1
    assert 'non_blocking from pageable memory' in counter.summary('views')
    assert counter.blocking('forward') == 1 and counter.batch('forward') == 0
    assert counter.blocking() == 2 and counter.batch() == 2
    assert 'test_host_copies.py' in counter.summary('forward')


@pytest.mark.parametrize('pinned, batch, blocking',
                         [(True, 2, 0), (False, 0, 2)])
def test_a_batch_from_pageable_memory_blocks(pinned, batch, blocking):
    """A loader without pin_memory hands over pageable tensors: their
    non_blocking upload is synchronous on CUDA, so it counts as blocking."""
    data = dict(inputs=torch.zeros(2, 3), img_shapes=torch.ones(2, 2),
                data_samples=_samples(2))
    counter = _counter()
    counter.mark_batch(data, pinned=pinned)
    with counter:
        data['inputs'].to('cpu', non_blocking=True)
        data['img_shapes'].to('cpu', non_blocking=True)
    assert (counter.batch(), counter.blocking()) == (batch, blocking)
    assert counter.copies['step']['pageable'] == blocking


def test_unpinned_host_tensors_ask_the_tensor():
    """pinned=None asks Tensor.is_pinned: a CPU tensor never is."""
    data = dict(inputs=torch.zeros(2, 3), data_samples=_samples(2))
    counter = _counter()
    counter.mark_batch(data)
    with counter:
        data['inputs'].to('cpu', non_blocking=True)
    assert counter.blocking() == 1 and counter.batch() == 0


def test_optimizer_state_is_marked_device():
    model = torch.nn.Linear(3, 3)
    optim = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    model(torch.randn(2, 3)).sum().backward()
    optim.step()  # momentum buffers made outside the counter
    counter = _counter(model, optim)
    with counter:
        model(torch.randn(2, 3, device='cpu')).sum().backward()
        optim.step()
    assert counter.blocking() == 0, counter.summary()


def test_tensors_made_before_counting_are_device_tensors_on_their_device():
    """A constant cached before the counter started lives on the device in
    a CPU run; a CPU tensor is a host tensor when the device is CUDA."""
    cached = torch.ones(4)
    counter = _counter()
    with counter:
        torch.rand(4, device='cpu') * cached
    assert counter.blocking() == 0 and counter.kind(cached) == 'device'
    assert HostCopyCounter('cuda').kind(cached) == 'host'


def test_a_custom_factory_op_with_a_device_argument_makes_device_tensors():
    """A ``torch.library`` op with no tensor input and a ``device`` argument
    (patch-drop's index draw) builds on the device, like ``torch.rand``."""
    from pmsn_mm.models.utils.patch_drop import random_keep_indices
    dev = torch.randn(2, 5, 3)
    counter = _counter(dev)
    with counter:
        keep = random_keep_indices(2, 5, 3, torch.device('cpu'))
        torch.gather(dev, 1, keep.unsqueeze(-1).expand(-1, -1, 3))
    assert counter.blocking() == 0, counter.summary()
