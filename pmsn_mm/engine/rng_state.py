"""Capture and restore the global random states of a process: Python's
``random``, numpy's legacy global generator (mmcv/mmpretrain transforms),
torch's CPU generator and, when CUDA is in use, the current device's.
:func:`rng_state_to_checkpoint` turns a state into tensors and plain
scalars, so a checkpoint holding it loads with ``weights_only=True``.
"""
import random
from typing import Any, Dict

import numpy as np
import torch

#: Keys of a checkpoint RNG state (one per process).
RNG_STATE_KEYS = ('python', 'numpy', 'torch', 'cuda')


def get_rng_state() -> Dict[str, Any]:
    """The global random states of this process, as the libraries give them.

    Returns:
        ``dict(python=random.getstate(), numpy=np.random.get_state(),
        torch=torch.get_rng_state(), cuda=<ByteTensor or None>)``; ``cuda``
        is None unless CUDA has been initialised in this process.
    """
    cuda = None
    if torch.cuda.is_available() and torch.cuda.is_initialized():
        cuda = torch.cuda.get_rng_state()
    return dict(
        python=random.getstate(),
        numpy=np.random.get_state(),
        torch=torch.get_rng_state(),
        cuda=cuda)


def set_rng_state(state: Dict[str, Any]) -> None:
    """Restore states from :func:`get_rng_state`.

    Args:
        state: A dict from :func:`get_rng_state` (``cuda`` needs CUDA).
    """
    random.setstate(state['python'])
    np.random.set_state(state['numpy'])
    torch.set_rng_state(state['torch'])
    if state.get('cuda') is not None and torch.cuda.is_available():
        torch.cuda.set_rng_state(state['cuda'])


def rng_state_to_checkpoint(state: Dict[str, Any]) -> Dict[str, Any]:
    """Convert a :func:`get_rng_state` dict to tensors and plain scalars.

    Args:
        state: A dict from :func:`get_rng_state`.

    Returns:
        ``dict(python=dict(version, state, gauss_next), numpy=dict(keys,
        pos, has_gauss, cached_gaussian), torch=ByteTensor, cuda=ByteTensor
        or None)``; ``state`` and ``keys`` are int64 tensors.
    """
    version, internal, gauss_next = state['python']
    name, keys, pos, has_gauss, cached_gaussian = state['numpy'][:5]
    if name != 'MT19937':
        raise ValueError(f"numpy's global generator is {name!r}; only "
                         "'MT19937' states can be saved.")
    return dict(
        python=dict(
            version=int(version),
            state=torch.tensor(internal, dtype=torch.int64),
            gauss_next=None if gauss_next is None else float(gauss_next)),
        numpy=dict(
            keys=torch.from_numpy(np.asarray(keys, dtype=np.int64)),
            pos=int(pos),
            has_gauss=int(has_gauss),
            cached_gaussian=float(cached_gaussian)),
        torch=state['torch'].clone(),
        cuda=None if state.get('cuda') is None else state['cuda'].clone())


def rng_state_from_checkpoint(saved: Dict[str, Any]) -> Dict[str, Any]:
    """Inverse of :func:`rng_state_to_checkpoint`.

    Args:
        saved: A dict written by :func:`rng_state_to_checkpoint`.

    Returns:
        A dict for :func:`set_rng_state`.

    Raises:
        ValueError: If ``saved`` is not such a dict.
    """
    missing = [key for key in RNG_STATE_KEYS
               if not isinstance(saved, dict) or key not in saved]
    if missing:
        raise ValueError(f'a saved RNG state needs the keys {RNG_STATE_KEYS}; '
                         f'missing {missing}.')
    python, numpy = saved['python'], saved['numpy']
    return dict(
        python=(python['version'], tuple(python['state'].tolist()),
                python['gauss_next']),
        numpy=('MT19937', numpy['keys'].numpy().astype(np.uint32),
               numpy['pos'], numpy['has_gauss'], numpy['cached_gaussian']),
        torch=saved['torch'],
        cuda=saved['cuda'])
