"""Helpers for tests that run real gloo process groups on CPU."""
import contextlib
import socket
from typing import Iterator

import torch
import torch.distributed as dist


def free_port() -> int:
    """A free TCP port on the loopback interface for MASTER_PORT."""
    with socket.socket() as sock:
        sock.bind(('127.0.0.1', 0))
        return sock.getsockname()[1]


@contextlib.contextmanager
def gloo_group(rank: int, world_size: int, port: int) -> Iterator[None]:
    """Run the body as ``rank`` of a gloo group on 127.0.0.1:``port`` (one
    thread per process); the group is destroyed even if the body raises."""
    torch.set_num_threads(1)
    dist.init_process_group(
        'gloo',
        init_method=f'tcp://127.0.0.1:{port}',
        rank=rank,
        world_size=world_size)
    try:
        yield
    finally:
        dist.destroy_process_group()


def view_major_rows(rank: int, world_size: int, local_batch: int,
                    num_views: int) -> torch.Tensor:
    """Indices of ``rank``'s rows in a view-major global batch (all views of
    sample 0..B-1 for view 0, then view 1, ...; B = world_size *
    local_batch)."""
    batch = world_size * local_batch
    return torch.cat([
        torch.arange(v * batch + rank * local_batch,
                     v * batch + (rank + 1) * local_batch)
        for v in range(num_views)
    ])
