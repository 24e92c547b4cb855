"""Checkpoints load with weights_only=True; anything else is still refused."""
import collections
import fractions
import os
import pickle

import numpy as np
import pytest
import torch
from mmengine.logging import HistoryBuffer, MessageHub

from pmsn_mm.engine.checkpoint import (checkpoint_safe_globals,
                                       restricted_getattr)


def _mmengine_like_checkpoint() -> dict:
    """What mmengine's runner saves besides tensors (message hub + meta)."""
    hub = MessageHub('ckpt-test')
    for i in range(3):
        hub.update_scalar('train/loss', 1.0 / (i + 1))
        hub.update_scalar('train/lr', np.float64(0.1))
    hub.update_info('eta', np.float64(12.5))
    hub.update_info('iter', 3)
    return dict(
        meta=dict(epoch=0, iter=3, seed=0, cfg='model = dict()'),
        state_dict=collections.OrderedDict(w=torch.arange(4.0)),
        message_hub=hub.state_dict(),
        optimizer=dict(state={0: dict(step=torch.tensor(3.0))}))


def test_message_hub_checkpoint_loads_with_weights_only(tmp_path):
    path = tmp_path / 'ckpt.pth'
    torch.save(_mmengine_like_checkpoint(), path)
    # torch's default is weights_only=True; be explicit anyway
    ckpt = torch.load(path, weights_only=True)
    buf = ckpt['message_hub']['log_scalars']['train/loss']
    assert isinstance(buf, HistoryBuffer)
    assert buf.mean() == pytest.approx((1 + 1 / 2 + 1 / 3) / 3)
    assert buf.statistics('max') == pytest.approx(1.0)
    assert ckpt['message_hub']['runtime_info']['eta'] == 12.5
    assert torch.equal(ckpt['state_dict']['w'], torch.arange(4.0))


class _Evil:

    def __reduce__(self):
        return (os.getcwd, ())


class _GetattrEscape:
    """Pickles as getattr(HistoryBuffer, '__init__') — not allow-listed."""

    def __reduce__(self):
        return (getattr, (HistoryBuffer, '__init__'))


@pytest.mark.parametrize('payload', [
    _Evil(),
    fractions.Fraction(1, 3),
    np.zeros(2, dtype=np.complex128),
    _GetattrEscape(),
])
def test_other_globals_are_still_refused(tmp_path, payload):
    path = tmp_path / 'untrusted.pth'
    ckpt = _mmengine_like_checkpoint()
    ckpt['meta']['extra'] = payload
    torch.save(ckpt, path)
    with pytest.raises(pickle.UnpicklingError):
        torch.load(path, weights_only=True)


def test_restricted_getattr_allows_only_statistic_methods():
    assert restricted_getattr(HistoryBuffer, 'mean') is HistoryBuffer.mean
    for obj, name in [(HistoryBuffer, '__init__'), (os, 'system'),
                      (HistoryBuffer, 'update')]:
        with pytest.raises(pickle.UnpicklingError, match='Refusing getattr'):
            restricted_getattr(obj, name)


def test_allow_list_is_exact():
    names = set()
    for entry in checkpoint_safe_globals():
        if isinstance(entry, tuple):
            names.add(entry[1])
        else:
            names.add(f'{entry.__module__}.{entry.__qualname__}')
    assert 'builtins.getattr' in names
    assert not any(n.startswith(('os.', 'subprocess', 'builtins.eval',
                                 'builtins.exec')) for n in names)
    # the real getattr is never on the list, only the restricted one
    assert all(e is not getattr for e in checkpoint_safe_globals())
    assert all(e[0] is not getattr for e in checkpoint_safe_globals()
               if isinstance(e, tuple))
