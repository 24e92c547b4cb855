"""Global RNG states survive capture -> checkpoint -> weights_only load."""
import random

import numpy as np
import pytest
import torch

from pmsn_mm.engine.rng_state import (get_rng_state, rng_state_from_checkpoint,
                                      rng_state_to_checkpoint, set_rng_state)


def _draw():
    return (random.random(), random.gauss(0, 1), np.random.rand(3).tolist(),
            np.random.randn(), torch.rand(3).tolist())


def _draws_equal(a, b):
    return all(x == y for x, y in zip(a, b))


def test_set_rng_state_replays_the_draws():
    random.seed(1), np.random.seed(2), torch.manual_seed(3)
    np.random.randn()  # leaves a cached gaussian in numpy's state
    random.gauss(0, 1)  # and in Python's
    state = get_rng_state()
    expected = _draw()
    assert not _draws_equal(_draw(), expected)
    set_rng_state(state)
    assert _draws_equal(_draw(), expected)


def test_checkpoint_form_loads_with_weights_only(tmp_path):
    random.seed(4), np.random.seed(5), torch.manual_seed(6)
    np.random.randn()
    random.gauss(0, 1)
    saved = rng_state_to_checkpoint(get_rng_state())
    expected = _draw()
    torch.save(dict(rng_states=[saved]), tmp_path / 'ckpt.pth')
    # a bare weights_only load: only tensors, ints, floats, None, dicts
    loaded = torch.load(tmp_path / 'ckpt.pth', weights_only=True)
    assert loaded['rng_states'][0]['numpy']['keys'].dtype == torch.int64
    assert loaded['rng_states'][0]['python']['state'].shape == (625, )
    _draw()
    set_rng_state(rng_state_from_checkpoint(loaded['rng_states'][0]))
    assert _draws_equal(_draw(), expected)


def test_malformed_saved_state_is_a_clear_error():
    saved = rng_state_to_checkpoint(get_rng_state())
    del saved['numpy']
    with pytest.raises(ValueError,
                       match=r"needs the keys \('python', 'numpy', 'torch', "
                       r"'cuda'\); missing \['numpy'\]"):
        rng_state_from_checkpoint(saved)
